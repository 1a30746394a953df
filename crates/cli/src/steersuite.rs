//! SteerSuite test cases (SteerBench XML, the `testcases/*.xml` of SteerSuite; docs/references.md)
//! converted into scenarios, so that its suite runs through `crowdfield run` and `bench`.
//!
//! SteerSuite's ground is the x–z plane with y up. Seen from above, x points right and z
//! towards the viewer, so a point `(x, z)` becomes `(x, −z)`: turns keep their sense (a walker
//! that keeps right in SteerSuite keeps right here) and a box `[xmin, xmax] × [zmin, zmax]`
//! becomes `[xmin, xmax] × [−zmax, −zmin]`. Heights (y) are dropped.
//!
//! | SteerSuite | scenario |
//! |---|---|
//! | `header/name`, `description`, `worldBounds` | `name`, `description`, `bounds` |
//! | `obstacle` (box) | `Aabb` |
//! | `circleObstacle` (`radius`, `position`) | `Disc` |
//! | `orientedBoxObstacle` (`size` = full lengths along its x and z, `thetaY` in degrees) | `RotatedBox` with half the lengths, turned `thetaY` counter-clockwise |
//! | `obstacleRegion` (`numObstacles` squares of `obstacleSize`) | that many `Aabb` squares inside the region, placed by a seeded draw of ours (not SteerSuite's draw) |
//! | `agent` | an agent; a `random` position becomes a region of one over the world |
//! | `agentRegion` (`numAgents`, `regionBounds`) | a region; regions and obstacle regions draw from one ChaCha8 stream seeded by `--seed`, in file order |
//! | `initialConditions/radius`, `direction` | `style.radius`, `style.initial_heading` (`random`: the first descent) |
//! | `seekStaticTarget/targetLocation` | a `Point` target |
//! | `seekAxisAlignedBoxRegion/goalRegionBounds` | a `Region(Aabb)` target |
//! | `desiredSpeed` | `style.max_speed`: the first goal's (one speed per walker here) |
//! | `timeDuration` | `goals.time_limits` (none from 10⁶ s on) |
//!
//! Every walker leaves at its last goal (`on_arrival: Despawn`), as SteerSuite disables it.
//! World bounds that enclose nothing, or leave agents or goals outside (SteerSuite does not
//! hold walkers to them, and some of its files rely on that), grow to hold them with
//! [`WORLD_MARGIN`] to spare.
//! A desired speed above what one planner step can cover (a local cell per step: 1.75 m/s at
//! the default 3.5 steps/s and 0.5 m cells) is lowered to it. Targets that move or flee, flows,
//! idling and random targets have no counterpart yet: they are errors with their position, as
//! are values no scenario holds (a radius that is not positive, a negative time limit or
//! extent, a count above [`MAX_REGION_AGENTS`]); the result is read back as a scenario file
//! before it is returned.
//! What is dropped or approximated (initial speeds, emitters, the per-goal steering choices
//! some cases carry in `<Behaviour>` and `<state>`, later goals' other speeds) is listed in
//! [`Converted::notes`]; suggested camera views are dropped without a note.

use bevy::math::{DVec2, Vec2};
use bevy_crowdfield::field::{Coverage, Shape};
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::scenario::{
    Bounds, MAX_REGION_AGENTS, ScenarioAgent, ScenarioObstacle, ScenarioRegion,
};
use bevy_crowdfield::steer::{ArrivalAction, LocalMapSettings};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roxmltree::{Document, Node};

/// Time limits from this many seconds on are read as "none" (SteerSuite files use 1000 s for
/// "long enough" and values near 10³³ for "never").
pub const NO_TIME_LIMIT_FROM_S: f64 = 1e6;

/// A converted test case and what the conversion could not carry over exactly.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The scenario.
    pub scenario: Scenario,
    /// One line for each thing dropped or approximated.
    pub notes: Vec<String>,
}

/// Why a test case could not be converted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// Not well-formed XML.
    #[error("{line}:{column}: {message}")]
    Xml {
        /// Line, from 1.
        line: u32,
        /// Column, from 1.
        column: u32,
        /// What is wrong.
        message: String,
    },
    /// Well-formed, but a value is missing or malformed, or an element has no counterpart.
    #[error("{line}:{column}: {message}")]
    At {
        /// Line of the element, from 1.
        line: u32,
        /// Column, from 1.
        column: u32,
        /// What is wrong.
        message: String,
    },
}

/// Converts the text of a SteerSuite test case. `seed` seeds the agent regions and the
/// obstacle regions; every walker's local maps stamp obstacles with `coverage`
/// ([`LocalMapSettings::obstacle_coverage`]: SteerSuite's gaps are sized for its 0.5 m agents,
/// and `Coverage::Centre` keeps them open).
pub fn from_steersuite(
    text: &str,
    seed: u64,
    coverage: Coverage,
) -> Result<Converted, ConvertError> {
    // Several of SteerSuite's own files put their licence comment before the XML declaration,
    // which XML forbids and SteerSuite's reader lets pass: blank such a late declaration out
    // (spaces, so positions stay where they were).
    let mut text = std::borrow::Cow::Borrowed(text);
    if let Some(at) = text
        .find("<?xml")
        .filter(|at| !text[..*at].trim().is_empty())
        && let Some(len) = text[at..].find("?>")
    {
        let mut owned = text.into_owned();
        owned.replace_range(at..at + len + 2, &" ".repeat(len + 2));
        text = std::borrow::Cow::Owned(owned);
    }
    let doc = Document::parse(&text).map_err(|e| {
        let pos = e.pos();
        ConvertError::Xml {
            line: pos.row,
            column: pos.col,
            message: e.to_string(),
        }
    })?;
    Reader {
        doc: &doc,
        seed,
        coverage,
        notes: Vec::new(),
    }
    .read()
}

/// The conversion of one document.
struct Reader<'a, 'input> {
    doc: &'a Document<'input>,
    seed: u64,
    coverage: Coverage,
    notes: Vec<String>,
}

/// A number for a message: plain, or in exponent form when it is huge (`f64`'s `Display` would
/// write 1e308 out in 309 digits).
pub(crate) fn readable(v: f64) -> String {
    if v.abs() < 1e9 {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// The highest speed one planner step covers with the default planner rate and local cells.
pub(crate) fn fastest() -> f64 {
    LocalMapSettings::default().cell_size * CrowdfieldSettings::default().planner_hz
}

impl<'a, 'input> Reader<'a, 'input> {
    fn error(&self, node: Node, message: impl Into<String>) -> ConvertError {
        let pos = self.doc.text_pos_at(node.range().start);
        ConvertError::At {
            line: pos.row,
            column: pos.col,
            message: message.into(),
        }
    }

    fn note(&mut self, node: Node, message: impl std::fmt::Display) {
        let pos = self.doc.text_pos_at(node.range().start);
        self.notes
            .push(format!("{}:{}: {message}", pos.row, pos.col));
    }

    /// `shape`, if it is a valid one; an error at `node` if not.
    fn checked(&self, node: Node, shape: Shape) -> Result<Shape, ConvertError> {
        shape
            .validate()
            .map_err(|e| self.error(node, e.to_string()))?;
        Ok(shape)
    }

    /// The element child of `node` named `name`.
    fn child(&self, node: Node<'a, 'input>, name: &str) -> Option<Node<'a, 'input>> {
        node.children()
            .find(|c| c.is_element() && c.tag_name().name() == name)
    }

    fn required(
        &self,
        node: Node<'a, 'input>,
        name: &str,
    ) -> Result<Node<'a, 'input>, ConvertError> {
        self.child(node, name).ok_or_else(|| {
            self.error(
                node,
                format!("<{}> has no <{name}>", node.tag_name().name()),
            )
        })
    }

    /// The number in child `name`.
    fn number(&self, node: Node<'a, 'input>, name: &str) -> Result<f64, ConvertError> {
        let child = self.required(node, name)?;
        let text = child.text().unwrap_or("").trim();
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.error(
                child,
                format!("<{name}> must be a finite number, got {text:?}"),
            )),
        }
    }

    /// The whole number in child `name`, at most `max`.
    fn count(&self, node: Node<'a, 'input>, name: &str, max: usize) -> Result<usize, ConvertError> {
        let child = self.required(node, name)?;
        let text = child.text().unwrap_or("").trim();
        match text.parse::<usize>() {
            Ok(n) if n <= max => Ok(n),
            _ => Err(self.error(
                child,
                format!("<{name}> must be a whole number up to {max}, got {text:?}"),
            )),
        }
    }

    /// A tuple as a ground point `(x, −z)`, or `None` when it is `<random>true</random>`.
    fn ground(&self, node: Node<'a, 'input>) -> Result<Option<DVec2>, ConvertError> {
        if let Some(random) = self.child(node, "random")
            && random.text().is_some_and(|t| t.trim() == "true")
        {
            return Ok(None);
        }
        Ok(Some(DVec2::new(
            self.number(node, "x")?,
            -self.number(node, "z")?,
        )))
    }

    /// A bounding box's ground footprint, lower-left and upper-right corners.
    fn footprint(&self, node: Node<'a, 'input>) -> Result<(DVec2, DVec2), ConvertError> {
        let (xmin, xmax) = (self.number(node, "xmin")?, self.number(node, "xmax")?);
        let (zmin, zmax) = (self.number(node, "zmin")?, self.number(node, "zmax")?);
        Ok((DVec2::new(xmin, -zmax), DVec2::new(xmax, -zmin)))
    }

    fn read(mut self) -> Result<Converted, ConvertError> {
        let root = self.doc.root_element();
        if root.tag_name().name() != "SteerBenchTestCase" {
            return Err(self.error(
                root,
                format!(
                    "expected a <SteerBenchTestCase>, found <{}>",
                    root.tag_name().name()
                ),
            ));
        }
        let header = self.required(root, "header")?;
        let name = self
            .child(header, "name")
            .and_then(|n| n.text())
            .unwrap_or("")
            .trim()
            .to_owned();
        let description = self
            .child(header, "description")
            .and_then(|n| n.text())
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        let world = self.required(header, "worldBounds")?;
        let (min, max) = self.footprint(world)?;
        let bounded = min.x < max.x && min.y < max.y;
        let mut scenario = Scenario {
            name,
            description,
            bounds: Bounds {
                min: min.as_vec2(),
                max: max.as_vec2(),
            },
            settings: Default::default(),
            obstacles: Vec::new(),
            agents: Vec::new(),
            regions: Vec::new(),
            measurements: Vec::new(),
            groups: Vec::new(),
            markers: None,
            terrain: None,
        };
        // One portable stream (ChaCha8) for the obstacle regions' squares and the regions'
        // seeds, in the order they are met.
        let mut draw = ChaCha8Rng::seed_from_u64(self.seed);
        // Regions of one walker that may start anywhere: they get the final world bounds.
        let mut anywhere: Vec<usize> = Vec::new();
        for node in root.children().filter(|n| n.is_element()) {
            match node.tag_name().name() {
                "header" => {}
                "suggestedCameraView" => {}
                "obstacle" => {
                    let (lo, hi) = self.footprint(node)?;
                    if lo.x < hi.x && lo.y < hi.y {
                        scenario
                            .obstacles
                            .push(fixed(Shape::Aabb { min: lo, max: hi }));
                    } else {
                        self.note(node, "an obstacle with no ground area: left out");
                    }
                }
                "circleObstacle" => {
                    let radius = self.number(node, "radius")?;
                    let centre = self.point(node, "position")?;
                    let disc = self.checked(node, Shape::Disc { centre, radius })?;
                    scenario.obstacles.push(fixed(disc));
                }
                "orientedBoxObstacle" => {
                    let size = self.required(node, "size")?;
                    let half = DVec2::new(self.number(size, "x")?, self.number(size, "z")?) * 0.5;
                    let centre = self.point(node, "position")?;
                    let angle = self.number(node, "thetaY")?.to_radians();
                    let rotated = Shape::RotatedBox {
                        centre,
                        half_extents: half,
                        angle,
                    };
                    scenario.obstacles.push(fixed(self.checked(node, rotated)?));
                }
                "obstacleRegion" => {
                    let count = self.count(node, "numObstacles", MAX_REGION_AGENTS)?;
                    let side = self.number(node, "obstacleSize")?;
                    if side <= 0.0 {
                        return Err(self.error(node, "<obstacleSize> must be positive"));
                    }
                    let (lo, hi) = self.footprint(self.required(node, "regionBounds")?)?;
                    let room = (hi - lo - DVec2::splat(side)).max(DVec2::ZERO);
                    for _ in 0..count {
                        let corner =
                            lo + room * DVec2::new(draw.random::<f64>(), draw.random::<f64>());
                        scenario.obstacles.push(fixed(Shape::Aabb {
                            min: corner,
                            max: corner + DVec2::splat(side),
                        }));
                    }
                    self.note(
                        node,
                        format!(
                            "{count} obstacles of an obstacle region placed by crowdfield's seeded draw, not SteerSuite's"
                        ),
                    );
                }
                "agent" => {
                    let conditions = self.required(node, "initialConditions")?;
                    let (goals, style) = self.walker(node, conditions)?;
                    match self.ground(self.required(conditions, "position")?)? {
                        Some(position) => scenario.agents.push(ScenarioAgent {
                            position: position.as_vec2(),
                            goals,
                            style,
                            path: None,
                            markers: None,
                            bio: None,
                        }),
                        None => {
                            anywhere.push(scenario.regions.len());
                            scenario.regions.push(ScenarioRegion {
                                min: scenario.bounds.min,
                                max: scenario.bounds.max,
                                count: 1,
                                seed: draw.random(),
                                goals,
                                style,
                                path: None,
                                markers: None,
                                bio: None,
                            });
                        }
                    }
                }
                "agentRegion" => {
                    let conditions = self.required(node, "initialConditions")?;
                    let (goals, style) = self.walker(node, conditions)?;
                    let (lo, hi) = self.footprint(self.required(node, "regionBounds")?)?;
                    scenario.regions.push(ScenarioRegion {
                        min: lo.as_vec2(),
                        max: hi.as_vec2(),
                        count: self.count(node, "numAgents", MAX_REGION_AGENTS)?,
                        seed: draw.random(),
                        goals,
                        style,
                        path: None,
                        markers: None,
                        bio: None,
                    });
                }
                other => self.note(node, format!("<{other}> has no counterpart: left out")),
            }
        }
        // Some of SteerSuite's files have bounds that enclose nothing or leave agents and goals
        // outside (SteerSuite does not hold walkers to them): grow the world to hold those.
        let inside =
            |(lo, hi): (DVec2, DVec2)| bounded && lo.cmpge(min).all() && hi.cmple(max).all();
        match extent(&scenario, &anywhere) {
            Some(contents) if !inside(contents) => {
                let (lo, hi) = (contents.0 - WORLD_MARGIN, contents.1 + WORLD_MARGIN);
                let (lo, hi) = if bounded {
                    (lo.min(min), hi.max(max))
                } else {
                    (lo, hi)
                };
                scenario.bounds = Bounds {
                    min: lo.as_vec2(),
                    max: hi.as_vec2(),
                };
                self.note(
                    world,
                    format!(
                        "the world bounds do not hold every agent and goal: grown to hold them with {WORLD_MARGIN} m to spare"
                    ),
                );
            }
            None if !bounded => {
                return Err(self.error(
                    world,
                    "the world bounds enclose no area, and nothing else does",
                ));
            }
            _ => {}
        }
        for k in anywhere {
            scenario.regions[k].min = scenario.bounds.min;
            scenario.regions[k].max = scenario.bounds.max;
        }
        // Whatever slipped past the checks above: the file written must read back.
        if let Err(e) = Scenario::from_ron(&scenario.to_ron()) {
            return Err(self.error(root, format!("the converted scenario is invalid: {e}")));
        }
        Ok(Converted {
            scenario,
            notes: self.notes,
        })
    }

    /// The ground point in child `name`, which must not be random.
    fn point(&self, node: Node<'a, 'input>, name: &str) -> Result<DVec2, ConvertError> {
        let child = self.required(node, name)?;
        self.ground(child)?
            .ok_or_else(|| self.error(child, format!("a random <{name}> is not converted")))
    }

    /// Goals and style of an `<agent>` or `<agentRegion>`.
    fn walker(
        &mut self,
        node: Node<'a, 'input>,
        conditions: Node<'a, 'input>,
    ) -> Result<(AgentGoals, AgentStyle), ConvertError> {
        let radius = self.number(conditions, "radius")?;
        if radius <= 0.0 {
            return Err(self.error(
                self.required(conditions, "radius")?,
                format!("a radius must be positive, got {radius}"),
            ));
        }
        let mut style = AgentStyle {
            radius,
            ..Default::default()
        };
        style.local_map.obstacle_coverage = Some(self.coverage);
        if let Some(direction) = self.child(conditions, "direction") {
            style.initial_heading = self
                .ground(direction)?
                .and_then(|d| d.try_normalize())
                .map_or(Vec2::ZERO, |d| d.as_vec2());
        }
        if let Some(speed) = self.child(conditions, "speed")
            && speed
                .text()
                .is_some_and(|t| t.trim().parse::<f64>() != Ok(0.0))
        {
            self.note(speed, "an initial speed: every walker starts standing");
        }
        for other in node.children().filter(|c| {
            c.is_element()
                && !matches!(
                    c.tag_name().name(),
                    "name" | "initialConditions" | "goalSequence" | "numAgents" | "regionBounds"
                )
        }) {
            self.note(
                other,
                format!("<{}> has no counterpart: left out", other.tag_name().name()),
            );
        }
        let mut goals = AgentGoals {
            on_arrival: ArrivalAction::Despawn,
            ..Default::default()
        };
        let mut speeds = Vec::new();
        for goal in self
            .required(node, "goalSequence")?
            .children()
            .filter(|c| c.is_element())
        {
            let target = match goal.tag_name().name() {
                "seekStaticTarget" => {
                    GoalTarget::Point(self.point(goal, "targetLocation")?.as_vec2())
                }
                "seekAxisAlignedBoxRegion" => {
                    let bounds = self.required(goal, "goalRegionBounds")?;
                    let (lo, hi) = self.footprint(bounds)?;
                    GoalTarget::Region(self.checked(bounds, Shape::Aabb { min: lo, max: hi })?)
                }
                other => {
                    return Err(self.error(
                        goal,
                        format!("the goal <{other}> has no counterpart (only static targets and box regions do)"),
                    ));
                }
            };
            for other in goal.children().filter(|c| {
                c.is_element()
                    && !matches!(
                        c.tag_name().name(),
                        "targetLocation"
                            | "goalRegionBounds"
                            | "desiredSpeed"
                            | "timeDuration"
                            | "random"
                            | "targetDirection"
                            | "flowType"
                    )
            }) {
                self.note(
                    other,
                    format!(
                        "<{}> in a goal has no counterpart: left out",
                        other.tag_name().name()
                    ),
                );
            }
            goals.targets.push(target);
            speeds.push((goal, self.number(goal, "desiredSpeed")?));
            let limit = self.number(goal, "timeDuration")?;
            if limit < 0.0 {
                return Err(self.error(
                    self.required(goal, "timeDuration")?,
                    format!("a time limit must not be negative, got {limit}"),
                ));
            }
            goals.time_limits.push(
                (0.0..NO_TIME_LIMIT_FROM_S)
                    .contains(&limit)
                    .then_some(limit),
            );
        }
        if goals.time_limits.iter().all(Option::is_none) {
            goals.time_limits.clear();
        }
        if let Some(&(first, speed)) = speeds.first() {
            if speeds.iter().any(|(_, s)| *s != speed) {
                self.note(first, "goals at different speeds: the first goal's is kept");
            }
            if speed > fastest() {
                self.note(
                    first,
                    format!(
                        "desired speed {} m/s lowered to {} m/s (one local cell per planner step)",
                        readable(speed),
                        fastest()
                    ),
                );
            }
            if speed <= 0.0 {
                return Err(self.error(first, "a desired speed must be positive"));
            }
            style.max_speed = speed.min(fastest());
        }
        Ok((goals, style))
    }
}

/// How far a world made up from its contents reaches beyond them (metres).
pub const WORLD_MARGIN: f64 = 5.0;

/// The box around the agents' starts and regions (but the regions `anywhere`, which take the
/// world's bounds) and their goals; obstacles reaching further are cut by the world's edge.
fn extent(scenario: &Scenario, anywhere: &[usize]) -> Option<(DVec2, DVec2)> {
    let mut points: Vec<DVec2> = Vec::new();
    let goals = |g: &AgentGoals, points: &mut Vec<DVec2>| {
        for t in &g.targets {
            points.extend(crate::plot::outlines(&t.shape(0.5)).into_iter().flatten());
        }
    };
    for a in &scenario.agents {
        points.push(a.position.as_dvec2());
        goals(&a.goals, &mut points);
    }
    for (k, r) in scenario.regions.iter().enumerate() {
        if !anywhere.contains(&k) {
            points.extend([r.min.as_dvec2(), r.max.as_dvec2()]);
        }
        goals(&r.goals, &mut points);
    }
    let first = *points.first()?;
    Some(
        points
            .iter()
            .fold((first, first), |(lo, hi), p| (lo.min(*p), hi.max(*p))),
    )
}

fn fixed(shape: Shape) -> ScenarioObstacle {
    ScenarioObstacle {
        shape,
        kind: ObstacleKind::Static,
        keep_together: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small test case in SteerSuite's format, written for these tests: a wall, a pillar, a
    /// turned box, a walker with two goals, a region heading for a box, a random start.
    const CASE: &str = r#"<SteerBenchTestCase xmlns="http://www.magix.ucla.edu/steerbench">
  <header>
    <version>1.0</version>
    <name>two-ways</name>
    <description>  A wall,
      a pillar and a crowd. </description>
    <worldBounds><xmin>-20</xmin><xmax>30</xmax><ymin>0</ymin><ymax>0</ymax><zmin>-10</zmin><zmax>5</zmax></worldBounds>
  </header>
  <suggestedCameraView><position><x>0</x><y>9</y><z>0</z></position><lookat><x>0</x><y>0</y><z>0</z></lookat><up><x>0</x><y>1</y><z>0</z></up></suggestedCameraView>
  <obstacle><xmin>1</xmin><xmax>2</xmax><ymin>0</ymin><ymax>1</ymax><zmin>3</zmin><zmax>4</zmax></obstacle>
  <circleObstacle><radius>0.75</radius><height>1</height><position><x>5</x><y>0</y><z>2</z></position></circleObstacle>
  <orientedBoxObstacle><thetaY>90</thetaY><size><x>4</x><y>1</y><z>1</z></size><position><x>-5</x><y>0</y><z>-1</z></position></orientedBoxObstacle>
  <agent>
    <name>A</name>
    <initialConditions>
      <radius>0.5</radius>
      <position><x>-10</x><y>0</y><z>2</z></position>
      <direction><x>0</x><y>0</y><z>1</z></direction>
      <speed>0</speed>
    </initialConditions>
    <goalSequence>
      <seekStaticTarget><targetLocation><x>10</x><y>0</y><z>2</z></targetLocation><desiredSpeed>1.3</desiredSpeed><timeDuration>30</timeDuration></seekStaticTarget>
      <seekStaticTarget><targetLocation><x>10</x><y>0</y><z>-2</z></targetLocation><desiredSpeed>1.3</desiredSpeed><timeDuration>1000000</timeDuration></seekStaticTarget>
    </goalSequence>
  </agent>
  <agentRegion>
    <numAgents>12</numAgents>
    <regionBounds><xmin>-18</xmin><xmax>-12</xmax><ymin>0</ymin><ymax>0</ymax><zmin>-8</zmin><zmax>-4</zmax></regionBounds>
    <initialConditions><direction><random>true</random></direction><radius>0.3</radius><speed>0</speed></initialConditions>
    <goalSequence>
      <seekAxisAlignedBoxRegion>
        <targetLocation><x>25</x><y>0</y><z>-6</z></targetLocation>
        <desiredSpeed>2.4</desiredSpeed>
        <timeDuration>1000.0</timeDuration>
        <goalRegionBounds><xmin>24</xmin><xmax>28</xmax><ymin>0</ymin><ymax>0</ymax><zmin>-9</zmin><zmax>-3</zmax></goalRegionBounds>
      </seekAxisAlignedBoxRegion>
    </goalSequence>
  </agentRegion>
  <agent>
    <initialConditions><radius>0.5</radius><position><random>true</random></position><direction><x>1</x><y>0</y><z>0</z></direction><speed>1.3</speed></initialConditions>
    <goalSequence>
      <seekStaticTarget><targetLocation><x>0</x><y>0</y><z>0</z></targetLocation><desiredSpeed>1.0</desiredSpeed><timeDuration>1000</timeDuration></seekStaticTarget>
    </goalSequence>
  </agent>
</SteerBenchTestCase>
"#;

    #[test]
    fn a_test_case_maps_onto_the_ground_plane() {
        let c = from_steersuite(CASE, 7, Coverage::Touch).unwrap();
        let s = &c.scenario;
        assert_eq!(s.name, "two-ways");
        assert_eq!(s.description, "A wall, a pillar and a crowd.");
        // z flips: [−10, 5] becomes [−5, 10].
        assert_eq!(s.bounds.min, Vec2::new(-20.0, -5.0));
        assert_eq!(s.bounds.max, Vec2::new(30.0, 10.0));
        assert_eq!(
            s.obstacles[0].shape,
            Shape::Aabb {
                min: DVec2::new(1.0, -4.0),
                max: DVec2::new(2.0, -3.0)
            }
        );
        assert_eq!(
            s.obstacles[1].shape,
            Shape::Disc {
                centre: DVec2::new(5.0, -2.0),
                radius: 0.75
            }
        );
        // A 4 × 1 box turned a quarter: long along y here, as it is long along z there.
        let Shape::RotatedBox {
            centre,
            half_extents,
            angle,
        } = s.obstacles[2].shape
        else {
            panic!("{:?}", s.obstacles[2]);
        };
        assert_eq!(
            (centre, half_extents),
            (DVec2::new(-5.0, 1.0), DVec2::new(2.0, 0.5))
        );
        assert!((angle - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
        let a = &s.agents[0];
        assert_eq!(a.position, Vec2::new(-10.0, -2.0));
        // Heading +z there is heading −y here.
        assert_eq!(a.style.initial_heading, Vec2::new(0.0, -1.0));
        assert_eq!((a.style.radius, a.style.max_speed), (0.5, 1.3));
        assert_eq!(
            a.goals.targets,
            [
                GoalTarget::Point(Vec2::new(10.0, -2.0)),
                GoalTarget::Point(Vec2::new(10.0, 2.0))
            ]
        );
        assert_eq!(a.goals.time_limits, [Some(30.0), None]);
        assert_eq!(a.goals.on_arrival, ArrivalAction::Despawn);
        let r = &s.regions[0];
        assert_eq!(
            (r.min, r.max, r.count),
            (Vec2::new(-18.0, 4.0), Vec2::new(-12.0, 8.0), 12)
        );
        assert_eq!(r.style.initial_heading, Vec2::ZERO);
        assert_eq!(
            r.goals.targets,
            [GoalTarget::Region(Shape::Aabb {
                min: DVec2::new(24.0, 3.0),
                max: DVec2::new(28.0, 9.0)
            })]
        );
        // 2.4 m/s is more than a 0.5 m cell per step at 3.5 steps/s.
        assert_eq!(r.style.max_speed, 1.75);
        // A random start: a region of one over the world.
        let lone = &s.regions[1];
        assert_eq!(
            (lone.min, lone.max, lone.count),
            (s.bounds.min, s.bounds.max, 1)
        );
        assert_ne!(r.seed, lone.seed);
        // What was approximated is said, with where.
        let notes = c.notes.join("\n");
        assert!(notes.contains("lowered to 1.75"), "{notes}");
        assert!(notes.contains("initial speed"), "{notes}");
        assert_eq!(c.notes.len(), 2, "{notes}");
        // And the result is a valid scenario file.
        let again = Scenario::from_ron(&s.to_ron()).unwrap();
        assert_eq!(&again, s);
    }

    #[test]
    fn goals_without_a_counterpart_and_bad_values_name_their_place() {
        let flee = CASE.replace(
            "<seekStaticTarget><targetLocation><x>0</x>",
            "<fleeStaticTarget><targetLocation><x>0</x>",
        );
        let flee = flee.replace(
            "<timeDuration>1000</timeDuration></seekStaticTarget>",
            "<timeDuration>1000</timeDuration></fleeStaticTarget>",
        );
        let Err(ConvertError::At { line, message, .. }) =
            from_steersuite(&flee, 1, Coverage::Touch)
        else {
            panic!("a flee goal converted");
        };
        assert_eq!(line, 42, "{message}");
        assert!(message.contains("fleeStaticTarget"), "{message}");
        let bad = CASE.replace("<radius>0.75</radius>", "<radius>wide</radius>");
        let Err(ConvertError::At { line, message, .. }) = from_steersuite(&bad, 1, Coverage::Touch)
        else {
            panic!("a bad radius converted");
        };
        assert_eq!(line, 11, "{message}");
        // Values no scenario can hold, each refused where it stands.
        for (from, to, line, what) in [
            (
                "<radius>0.75</radius>",
                "<radius>-0.75</radius>",
                11,
                "extent",
            ),
            ("<radius>0.3</radius>", "<radius>0</radius>", 29, "radius"),
            (
                "<timeDuration>30</timeDuration>",
                "<timeDuration>-1</timeDuration>",
                22,
                "time limit",
            ),
            (
                "<x>4</x><y>1</y><z>1</z>",
                "<x>-4</x><y>1</y><z>1</z>",
                12,
                "extent",
            ),
        ] {
            assert!(CASE.contains(from), "{from}");
            let Err(ConvertError::At {
                line: at, message, ..
            }) = from_steersuite(&CASE.replace(from, to), 1, Coverage::Touch)
            else {
                panic!("{to} converted");
            };
            assert_eq!(at, line, "{to}: {message} at {at}");
            assert!(message.contains(what), "{to}: {message}");
        }
        let Err(ConvertError::Xml { line, .. }) =
            from_steersuite("<SteerBenchTestCase>\n<header></head>", 1, Coverage::Touch)
        else {
            panic!("broken XML converted");
        };
        assert_eq!(line, 2);
        assert!(from_steersuite("<scene/>", 1, Coverage::Touch).is_err());
    }

    #[test]
    fn bounds_that_leave_walkers_out_grow_to_hold_them() {
        // The region reaches x = −18 and the walker's first goal x = 10: bounds of [−5, 5] in
        // x hold neither; bounds that enclose nothing are grown alike.
        for world in [
            "<xmin>-5</xmin><xmax>5</xmax><ymin>0</ymin><ymax>0</ymax><zmin>-10</zmin><zmax>5</zmax>",
            "<xmin>-5</xmin><xmax>-50</xmax><ymin>0</ymin><ymax>0</ymax><zmin>-10</zmin><zmax>5</zmax>",
        ] {
            let case = CASE.replace(
                "<xmin>-20</xmin><xmax>30</xmax><ymin>0</ymin><ymax>0</ymax><zmin>-10</zmin><zmax>5</zmax>",
                world,
            );
            let c = from_steersuite(&case, 7, Coverage::Touch).unwrap();
            let b = c.scenario.bounds;
            // Goals reach x = 28 and y = 9 (the region's box) and the starts x = −18.
            assert_eq!(b.min.x, -18.0 - WORLD_MARGIN as f32, "{b:?}");
            assert_eq!(b.max.x, 28.0 + WORLD_MARGIN as f32, "{b:?}");
            assert!(b.max.y >= 9.0 + WORLD_MARGIN as f32, "{b:?}");
            assert!(c.notes.iter().any(|n| n.contains("grown")), "{:?}", c.notes);
        }
        // Bounds that hold everything stay as they are.
        let c = from_steersuite(CASE, 7, Coverage::Touch).unwrap();
        assert!(c.notes.iter().all(|n| !n.contains("grown")));
    }

    #[test]
    fn obstacle_regions_are_placed_inside_and_seeded() {
        let case = CASE.replace(
            "<suggestedCameraView>",
            "<obstacleRegion><numObstacles>5</numObstacles><regionBounds><xmin>0</xmin><xmax>10</xmax><ymin>0</ymin><ymax>1</ymax><zmin>0</zmin><zmax>4</zmax></regionBounds><obstacleSize>1.5</obstacleSize><obstacleHeight>1</obstacleHeight></obstacleRegion><suggestedCameraView>",
        );
        let squares = |seed| {
            from_steersuite(&case, seed, Coverage::Touch)
                .unwrap()
                .scenario
                .obstacles[..5]
                .iter()
                .map(|o| o.shape.clone())
                .collect::<Vec<_>>()
        };
        let first = squares(3);
        for s in &first {
            let Shape::Aabb { min, max } = s else {
                panic!("{s:?}")
            };
            assert!((*max - *min - DVec2::splat(1.5)).length() < 1e-12);
            assert!(
                min.x >= 0.0 && max.x <= 10.0 && min.y >= -4.0 && max.y <= 0.0,
                "{s:?}"
            );
        }
        assert_eq!(first, squares(3));
        assert_ne!(first, squares(4));
    }

    #[test]
    fn huge_numbers_read_in_exponent_form() {
        assert_eq!(readable(2.4), "2.4");
        assert_eq!(readable(-1e300), "-1e300");
        assert!(readable(f64::MAX).len() < 30, "{}", readable(f64::MAX));
    }
}
