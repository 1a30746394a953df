//! Menge scenes (a Menge project names a scene file, `…S.xml`, and a behaviour file,
//! `…B.xml`) converted into scenarios, so that Menge's examples run through `crowdfield run`
//! and `bench`.
//!
//! Menge's ground is the x–y plane as seen from above, like ours: coordinates carry over as they
//! are. Menge has no world bounds; the world is the box around the agents, their goals and the
//! obstacles, with [`WORLD_MARGIN`] to spare.
//!
//! | Menge (scene) | scenario |
//! |---|---|
//! | `AgentProfile` (`inherits`), `Common` `r`, `pref_speed` | `style.radius`, `style.max_speed` (lowered to one local cell per planner step where faster; a speed of 0 makes a standing agent, with no goals) |
//! | `Property` of `r` or `pref_speed` (`dist` `c`, `u`, `n`) | drawn per agent from the conversion's seeded stream |
//! | `AgentGroup` with a `const` profile and state selector | its agents, one by one |
//! | `Generator` `explicit`, `rect_grid`, `hex_lattice` | the positions Menge's generators give (displacement noise dropped) |
//! | `ObstacleSet type="explicit"`: a closed obstacle listed counter-clockwise | a solid `Polygon`; a concave one is cut into convex pieces |
//! | a closed obstacle listed clockwise | an enclosure: the ground outside it, within the world, cut into convex pieces |
//! | an open obstacle, or a closed one whose outline touches or crosses itself, encloses no area, or goes round agents' starts or goals (Menge's agents meet an obstacle's edges from outside only) | a `Polyline` along its edges, [`OPEN_WALL_THICKNESS`] wide (noted for a closed one) |
//!
//! | Menge (behaviour) | scenario |
//! |---|---|
//! | `Goal` `point`, `circle`, `AABB`, `OBB` (pivot corner, width, height, angle in degrees) | `Point`, `Region(Disc)`, `Region(Aabb)`, `Region(RotatedBox)` |
//! | a `State` whose velocity component walks to its goal (`goal`, `road_map`, `nav_mesh`, `vel_field`) | a target: our global map takes the place of Menge's route |
//! | a `State` with velocity `zero`, or none | the walker stops there; where a `timer` or `auto` transition leads on, it goes on at once (a dropped wait is noted) |
//! | `GoalSelector` `identity` (a goal where the agent stands), or none | the walker stops there |
//! | `GoalSelector` `explicit`, `nearest`, `farthest` (by centroid), `random` (each goal as likely), `weighted` (by goal weight), `mirror` | the goal it picks, decided at conversion: the agent stands at its start for the first state and at the previous goal's centroid after that; draws come from the seeded stream |
//! | `Transition` with `goal_reached` (`distance`) | the next target; the first such distance becomes `goals.arrival_radius` |
//! | `Transition` with `timer` | `goals.time_limits` for that target |
//! | `Transition` with `AABB` (`inside="1"`) | the target becomes the condition's box, where Menge's agent changes state |
//! | `Transition` with `auto` | the next state at once |
//! | a `Target type="prob"` | the next state drawn by weight |
//!
//! Each agent's walk through the state machine is followed from its first state, one transition
//! per state (the first listed; others are noted), until a final state, a state that stands or a
//! state already visited (Menge's loops run once: a scenario's goal list is finite). Every
//! walker settles into its last goal (`on_arrival: Settle`, noted): Menge's agents stay in the
//! world, and one that stops at a goal's edge is pushed aside by those arriving after it
//! (Menge's pedestrian models give way both ways); ours would stand firm in the goal's doorway,
//! so it walks on towards the goal's middle instead.
//! Pedestrian-model parameters, time steps, actions, events, elevations and views have no
//! counterpart and are listed in [`Converted::notes`]; navigation meshes, goal paths and the
//! conditions not above are errors with their position.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use bevy::math::{DVec2, Vec2};
use bevy_crowdfield::field::{Coverage, Shape};
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::scenario::{Bounds, ScenarioAgent, ScenarioObstacle};
use bevy_crowdfield::steer::ArrivalAction;
use rand::distr::weighted::WeightedIndex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use roxmltree::{Document, Node};

use crate::steersuite::{ConvertError, Converted, WORLD_MARGIN, fastest, readable};

/// Full width given to Menge's open obstacles, which are lines without width (metres).
pub const OPEN_WALL_THICKNESS: f64 = 0.1;

/// How many lattice steps fit in `span` steps' length: at least one, and at most
/// [`MAX_GENERATED_AGENTS`] (more than any lattice may hold, and far from overflowing).
fn lattice_count(span: f64) -> usize {
    // `as` saturates, and NaN goes to 0.
    (span as usize).clamp(1, MAX_GENERATED_AGENTS + 1)
}

/// Menge's pedestrian models, whose parameter sections a scene may carry at its top level and in
/// its profiles.
const PEDESTRIAN_MODELS: [&str; 9] = [
    "ORCA",
    "PedVO",
    "GCF",
    "Helbing",
    "Johansson",
    "Karamouzas",
    "Zanlungo",
    "Dummy",
    "OpenSteer",
];

/// Most agents a scene may make, in one generator or in all (a hexagonal lattice's count follows
/// from its density and width).
pub const MAX_GENERATED_AGENTS: usize = 1_000_000;

/// Why a Menge scene could not be converted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MengeError {
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file was read but cannot be converted.
    #[error("{file}:{error}")]
    In {
        /// The file, as given.
        file: String,
        /// Where and why.
        error: ConvertError,
    },
}

/// Converts the Menge project at `path` (a `<Project scene=… behavior=…>` file, whose paths are
/// relative to it) or, with `behaviour`, the scene file at `path` and that behaviour file.
pub fn from_menge_files(
    path: &Path,
    behaviour: Option<&Path>,
    seed: u64,
    coverage: Coverage,
) -> Result<Converted, MengeError> {
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|source| MengeError::Io {
            path: p.to_owned(),
            source,
        })
    };
    let text = read(path)?;
    let (scene_path, behaviour_path) = match behaviour {
        Some(b) => (path.to_owned(), b.to_owned()),
        None => {
            let (scene, behaviour) = project_files(&text).map_err(|error| MengeError::In {
                file: path.display().to_string(),
                error,
            })?;
            let dir = path.parent().unwrap_or(Path::new(""));
            (dir.join(scene), dir.join(behaviour))
        }
    };
    let scene_text = if behaviour.is_some() {
        text
    } else {
        read(&scene_path)?
    };
    let behaviour_text = read(&behaviour_path)?;
    from_menge(
        &Source {
            name: &scene_path.display().to_string(),
            text: &scene_text,
        },
        &Source {
            name: &behaviour_path.display().to_string(),
            text: &behaviour_text,
        },
        seed,
        coverage,
    )
}

/// The scene and behaviour paths a `<Project>` file names, as written.
pub fn project_files(text: &str) -> Result<(String, String), ConvertError> {
    let doc = parse(text)?;
    let root = doc.root_element();
    let at = |node: Node, message: String| {
        let pos = doc.text_pos_at(node.range().start);
        ConvertError::At {
            line: pos.row,
            column: pos.col,
            message,
        }
    };
    if root.tag_name().name() != "Project" {
        return Err(at(
            root,
            format!(
                "expected a Menge <Project>, found <{}> (give a scene file its behaviour file with --behaviour)",
                root.tag_name().name()
            ),
        ));
    }
    let get = |name: &str| {
        root.attribute(name)
            .map(str::to_owned)
            .ok_or_else(|| at(root, format!("<Project> has no {name}=")))
    };
    Ok((get("scene")?, get("behavior")?))
}

/// A document to convert and the name its positions are given under.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The file's name in notes and errors.
    pub name: &'a str,
    /// Its text.
    pub text: &'a str,
}

/// Converts a Menge scene and its behaviour. `seed` seeds every draw (profile properties,
/// random goal selectors, timers, probabilistic transitions); every walker's local maps stamp
/// obstacles with `coverage`.
pub fn from_menge(
    scene: &Source,
    behaviour: &Source,
    seed: u64,
    coverage: Coverage,
) -> Result<Converted, MengeError> {
    let in_file = |file: &str| {
        let file = file.to_owned();
        move |error| MengeError::In { file, error }
    };
    let scene_doc = parse(scene.text).map_err(in_file(scene.name))?;
    let behaviour_doc = parse(behaviour.text).map_err(in_file(behaviour.name))?;
    let mut notes = Notes::default();
    let mut draw = ChaCha8Rng::seed_from_u64(seed);
    let machine = {
        let r = Reader {
            doc: &behaviour_doc,
            name: behaviour.name,
        };
        r.machine(&mut notes, &mut draw)
            .map_err(in_file(behaviour.name))?
    };
    let r = Reader {
        doc: &scene_doc,
        name: scene.name,
    };
    let scene_parts = r
        .scene(&mut notes, &mut draw, coverage)
        .map_err(in_file(scene.name))?;
    let mut agents = Vec::with_capacity(scene_parts.agents.len());
    for SceneAgent {
        position,
        style,
        state,
        still,
    } in scene_parts.agents
    {
        let Some(&first) = machine.by_name.get(&state.0) else {
            return Err(in_file(scene.name)(r.error_pos(
                state.1,
                format!("the behaviour has no state {:?}", state.0),
            )));
        };
        let goals = if still {
            AgentGoals::default()
        } else {
            machine.walk(position, first, &mut draw, &mut notes)
        };
        agents.push(ScenarioAgent {
            position: position.as_vec2(),
            goals,
            style,
            path: None,
            markers: None,
            bio: None,
        });
    }
    let mut scenario = Scenario {
        name: Path::new(scene.name)
            .file_stem()
            .map(|s| s.to_string_lossy().trim_end_matches('S').to_owned())
            .unwrap_or_default(),
        description: format!(
            "Converted from Menge's {} and {}",
            file_name(scene.name),
            file_name(behaviour.name)
        ),
        bounds: Bounds {
            min: Vec2::ZERO,
            max: Vec2::ONE,
        },
        settings: Default::default(),
        obstacles: Vec::new(),
        agents,
        regions: Vec::new(),
        measurements: Vec::new(),
        groups: Vec::new(),
        markers: None,
        terrain: None,
    };
    // The world: everything the run touches, with a margin.
    let mut points: Vec<DVec2> = scene_parts
        .obstacles
        .iter()
        .flat_map(|o| o.points.iter().copied())
        .collect();
    let point_radius = CrowdfieldSettings::default().point_goal_radius;
    for a in &scenario.agents {
        points.push(a.position.as_dvec2());
        for t in &a.goals.targets {
            points.extend(
                crate::plot::outlines(&t.shape(point_radius))
                    .into_iter()
                    .flatten(),
            );
        }
    }
    let Some(&first) = points.first() else {
        return Err(in_file(scene.name)(r.error_at(
            scene_doc.root_element(),
            "the scene has neither agents nor obstacles".to_owned(),
        )));
    };
    let (lo, hi) = points
        .iter()
        .fold((first, first), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
    let (lo, hi) = (lo - WORLD_MARGIN, hi + WORLD_MARGIN);
    scenario.bounds = Bounds {
        min: lo.as_vec2(),
        max: hi.as_vec2(),
    };
    let occupied: Vec<DVec2> = scenario
        .agents
        .iter()
        .flat_map(|a| {
            let goals = a.goals.targets.iter().filter_map(|t| match t {
                GoalTarget::Point(p) => Some(p.as_dvec2()),
                GoalTarget::Region(shape) => shape.bounds().ok().map(|(lo, hi)| (lo + hi) * 0.5),
            });
            std::iter::once(a.position.as_dvec2()).chain(goals)
        })
        .collect();
    // Corners as the scenario holds them (f32), so that an enclosure reaches the world's edge.
    let (lo, hi) = (lo.as_vec2().as_dvec2(), hi.as_vec2().as_dvec2());
    for obstacle in &scene_parts.obstacles {
        let (shapes, carried) = obstacle_shapes(obstacle, lo, hi, &occupied);
        let why = match carried {
            Carried::Solid => None,
            Carried::Outline => Some(
                "its outline bounds no clean area (it touches or crosses itself, or has no area)",
            ),
            Carried::Occupied => Some(
                "agents start or have goals inside it, where Menge's agents do not meet its edges",
            ),
        };
        if let Some(why) = why {
            let (line, column) = r.pos(obstacle.node_pos);
            notes.add(format!(
                "{}:{line}:{column}: a closed obstacle made walls {OPEN_WALL_THICKNESS} m wide along its edges, its inside left free: {why}",
                scene.name
            ));
        }
        scenario
            .obstacles
            .extend(shapes.into_iter().map(|shape| ScenarioObstacle {
                shape,
                kind: ObstacleKind::Static,
                keep_together: false,
            }));
    }
    if let Err(e) = Scenario::from_ron(&scenario.to_ron()) {
        return Err(in_file(scene.name)(r.error_at(
            scene_doc.root_element(),
            format!("the converted scenario is invalid: {e}"),
        )));
    }
    Ok(Converted {
        scenario,
        notes: notes.lines,
    })
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned())
}

fn parse(text: &str) -> Result<Document<'_>, ConvertError> {
    Document::parse(text).map_err(|e| {
        let pos = e.pos();
        ConvertError::Xml {
            line: pos.row,
            column: pos.col,
            message: e.to_string(),
        }
    })
}

/// Notes, each said once (a thousand agents through one state make one note).
#[derive(Default)]
struct Notes {
    lines: Vec<String>,
    said: BTreeSet<String>,
}

impl Notes {
    fn add(&mut self, line: String) {
        if self.said.insert(line.clone()) {
            self.lines.push(line);
        }
    }
}

/// A value Menge draws from a distribution (`dist="c" value=`, `"u" min= max=`,
/// `"n" mean= stddev=`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Draw {
    Const(f64),
    Uniform(f64, f64),
    Normal(f64, f64),
}

impl Draw {
    fn sample(self, rng: &mut ChaCha8Rng) -> f64 {
        match self {
            Draw::Const(v) => v,
            Draw::Uniform(lo, hi) if lo < hi => rng.random_range(lo..hi),
            Draw::Uniform(lo, _) => lo,
            Draw::Normal(mean, sd) => Normal::new(mean, sd).map_or(mean, |n| n.sample(rng)),
        }
    }
}

/// A closed (three vertices or more) or open (two or more) obstacle as Menge lists it.
struct RawObstacle {
    points: Vec<DVec2>,
    closed: bool,
    node_pos: usize,
}

/// An agent as the scene gives it.
struct SceneAgent {
    position: DVec2,
    style: AgentStyle,
    /// Its first state, and where the scene names it.
    state: (String, usize),
    /// Its profile's preferred speed is zero: it never walks.
    still: bool,
}

/// What the scene gives: agents and obstacles.
struct SceneParts {
    agents: Vec<SceneAgent>,
    obstacles: Vec<RawObstacle>,
}

/// A profile: the values an agent's style takes, drawn per agent where they are distributions.
#[derive(Debug, Clone, Copy)]
struct Profile {
    radius: Draw,
    speed: Draw,
}

struct Reader<'a, 'input> {
    doc: &'a Document<'input>,
    name: &'a str,
}

impl<'a, 'input> Reader<'a, 'input> {
    fn pos(&self, at: usize) -> (u32, u32) {
        let p = self.doc.text_pos_at(at);
        (p.row, p.col)
    }

    /// The document's root element, which must be `<tag>` (`what` names the file's kind in the
    /// error).
    fn root(&self, tag: &str, what: &str) -> Result<Node<'a, 'input>, ConvertError> {
        let root = self.doc.root_element();
        let found = root.tag_name().name();
        if found == tag {
            Ok(root)
        } else {
            Err(self.error_at(root, format!("expected {what} (<{tag}>), found <{found}>")))
        }
    }

    fn error_at(&self, node: Node, message: impl Into<String>) -> ConvertError {
        self.error_pos(node.range().start, message)
    }

    fn error_pos(&self, at: usize, message: impl Into<String>) -> ConvertError {
        let message = message.into();
        let (line, column) = self.pos(at);
        ConvertError::At {
            line,
            column,
            message,
        }
    }

    fn note(&self, notes: &mut Notes, node: Node, message: impl std::fmt::Display) {
        let (line, column) = self.pos(node.range().start);
        notes.add(format!("{}:{line}:{column}: {message}", self.name));
    }

    fn elements(node: Node<'a, 'input>) -> impl Iterator<Item = Node<'a, 'input>> {
        node.children().filter(|c| c.is_element())
    }

    fn text(&self, node: Node<'a, 'input>, name: &str) -> Result<&'a str, ConvertError> {
        node.attribute(name).ok_or_else(|| {
            self.error_at(node, format!("<{}> has no {name}=", node.tag_name().name()))
        })
    }

    fn number(&self, node: Node<'a, 'input>, name: &str) -> Result<f64, ConvertError> {
        let text = self.text(node, name)?;
        match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.error_at(
                node,
                format!("{name}= must be a finite number, got {text:?}"),
            )),
        }
    }

    fn optional(&self, node: Node<'a, 'input>, name: &str) -> Result<Option<f64>, ConvertError> {
        match node.attribute(name) {
            None => Ok(None),
            Some(_) => self.number(node, name).map(Some),
        }
    }

    fn whole(&self, node: Node<'a, 'input>, name: &str) -> Result<usize, ConvertError> {
        let text = self.text(node, name)?;
        match text.trim().parse::<usize>() {
            Ok(n) if n <= MAX_GENERATED_AGENTS => Ok(n),
            _ => Err(self.error_at(
                node,
                format!(
                    "{name}= must be a whole number up to {MAX_GENERATED_AGENTS}, got {text:?}"
                ),
            )),
        }
    }

    fn flag(&self, node: Node<'a, 'input>, name: &str) -> bool {
        node.attribute(name)
            .is_some_and(|v| matches!(v.trim(), "1" | "true" | "True"))
    }

    /// A distribution given by `dist=` and its parameters, or a plain `value=`.
    fn draw(&self, node: Node<'a, 'input>) -> Result<Draw, ConvertError> {
        match node.attribute("dist").map(str::trim) {
            None | Some("c") => Ok(Draw::Const(self.number(node, "value")?)),
            Some("u") => {
                let (lo, hi) = (self.number(node, "min")?, self.number(node, "max")?);
                if lo > hi {
                    return Err(self.error_at(
                        node,
                        format!("min= {} is above max= {}", readable(lo), readable(hi)),
                    ));
                }
                if !(hi - lo).is_finite() {
                    return Err(self.error_at(
                        node,
                        format!("the range {} to {} is too wide", readable(lo), readable(hi)),
                    ));
                }
                Ok(Draw::Uniform(lo, hi))
            }
            Some("n") => {
                let sd = self.number(node, "stddev")?;
                if sd < 0.0 {
                    return Err(
                        self.error_at(node, format!("stddev= {} is negative", readable(sd)))
                    );
                }
                Ok(Draw::Normal(self.number(node, "mean")?, sd))
            }
            Some(other) => Err(self.error_at(
                node,
                format!("the distribution {other:?} has no counterpart (c, u and n do)"),
            )),
        }
    }

    // ------------------------------------------------------------------ the scene

    fn scene(
        &self,
        notes: &mut Notes,
        draw: &mut ChaCha8Rng,
        coverage: Coverage,
    ) -> Result<SceneParts, ConvertError> {
        let root = self.root("Experiment", "a Menge scene")?;
        let mut profiles: HashMap<&str, Profile> = HashMap::new();
        let mut parts = SceneParts {
            agents: Vec::new(),
            obstacles: Vec::new(),
        };
        let mut classes = BTreeSet::new();
        let mut models: BTreeSet<&str> = BTreeSet::new();
        for node in Self::elements(root) {
            match node.tag_name().name() {
                "SpatialQuery" => {}
                "Common" => {
                    if let Some(step) = node.attribute("time_step") {
                        self.note(
                            notes,
                            node,
                            format!(
                                "time step {step} s: crowdfield plans {} times a second",
                                CrowdfieldSettings::default().planner_hz
                            ),
                        );
                    }
                }
                "AgentProfile" => {
                    let name = self.text(node, "name")?;
                    let mut profile = match node.attribute("inherits") {
                        Some(parent) => *profiles.get(parent).ok_or_else(|| {
                            self.error_at(
                                node,
                                format!("it inherits {parent:?}, which is not defined above it"),
                            )
                        })?,
                        None => Profile {
                            radius: Draw::Const(AgentStyle::default().radius),
                            speed: Draw::Const(AgentStyle::default().max_speed),
                        },
                    };
                    for part in Self::elements(node) {
                        let kind = part.tag_name().name();
                        if PEDESTRIAN_MODELS.contains(&kind) {
                            models.insert(kind);
                            continue;
                        } else if kind != "Common" {
                            self.note(
                                notes,
                                part,
                                format!("<{kind}> in a profile has no counterpart: left out"),
                            );
                            continue;
                        }
                        if let Some(r) = self.optional(part, "r")? {
                            profile.radius = Draw::Const(r);
                        }
                        if let Some(v) = self.optional(part, "pref_speed")? {
                            profile.speed = Draw::Const(v);
                        }
                        for property in Self::elements(part) {
                            match property.attribute("name") {
                                Some("r") => profile.radius = self.draw(property)?,
                                Some("pref_speed") => profile.speed = self.draw(property)?,
                                other => self.note(
                                    notes,
                                    property,
                                    format!(
                                        "the property {:?} has no counterpart: left out",
                                        other.unwrap_or("")
                                    ),
                                ),
                            }
                        }
                    }
                    profiles.insert(name, profile);
                }
                "AgentGroup" => {
                    let selector = |kind: &str| {
                        Self::elements(node)
                            .find(|c| c.tag_name().name() == kind)
                            .ok_or_else(|| {
                                self.error_at(node, format!("<AgentGroup> has no <{kind}>"))
                            })
                    };
                    let state_node = selector("StateSelector")?;
                    if state_node.attribute("type") != Some("const") {
                        return Err(self.error_at(
                            state_node,
                            format!(
                                "a {:?} state selector has no counterpart (const does)",
                                state_node.attribute("type").unwrap_or("")
                            ),
                        ));
                    }
                    let state = self.text(state_node, "name")?;
                    // (profile, its name, weight)
                    let profile_node = selector("ProfileSelector")?;
                    let named = |n: Node<'a, 'input>| {
                        let name = self.text(n, "name")?;
                        let profile = *profiles.get(name).ok_or_else(|| {
                            self.error_at(n, format!("no profile {name:?} is defined above"))
                        })?;
                        Ok::<_, ConvertError>((profile, name))
                    };
                    let choices: Vec<(Profile, &str, f64)> = match profile_node
                        .attribute("type")
                        .unwrap_or("")
                    {
                        "const" => {
                            let (p, name) = named(profile_node)?;
                            vec![(p, name, 1.0)]
                        }
                        kind @ ("random" | "weighted") => Self::elements(profile_node)
                            .map(|c| {
                                let (p, name) = named(c)?;
                                let weight = if kind == "weighted" {
                                    self.number(c, "weight")?
                                } else {
                                    1.0
                                };
                                if weight < 0.0 {
                                    return Err(self.error_at(
                                        c,
                                        format!("a negative weight {}", readable(weight)),
                                    ));
                                }
                                Ok((p, name, weight))
                            })
                            .collect::<Result<_, _>>()?,
                        other => {
                            return Err(self.error_at(
                                    profile_node,
                                    format!(
                                        "a {other:?} profile selector has no counterpart (const, random and weighted do)"
                                    ),
                                ));
                        }
                    };
                    let pick = WeightedIndex::new(choices.iter().map(|c| c.2)).map_err(|_| {
                        self.error_at(
                            profile_node,
                            "the profile selector offers no profile of any weight",
                        )
                    })?;
                    for generator in
                        Self::elements(node).filter(|c| c.tag_name().name() == "Generator")
                    {
                        let positions = self.generate(generator, notes)?;
                        if parts.agents.len() + positions.len() > MAX_GENERATED_AGENTS {
                            return Err(self.error_at(
                                generator,
                                format!(
                                    "the scene's generators make more than {MAX_GENERATED_AGENTS} agents"
                                ),
                            ));
                        }
                        for position in positions {
                            let k = if choices.len() == 1 {
                                0
                            } else {
                                pick.sample(draw)
                            };
                            let (profile, profile_name, _) = choices[k];
                            let mut style = AgentStyle {
                                radius: profile.radius.sample(draw),
                                max_speed: profile.speed.sample(draw),
                                ..Default::default()
                            };
                            style.local_map.obstacle_coverage = Some(coverage);
                            if style.radius <= 0.0 {
                                return Err(self.error_at(
                                    profile_node,
                                    format!(
                                        "profile {profile_name:?} gives a radius of {}, which is not positive",
                                        readable(style.radius)
                                    ),
                                ));
                            }
                            // Menge lets an agent prefer to stand (events may set it off
                            // later): ours stands with no goals, at the default speed.
                            let still = style.max_speed == 0.0;
                            if still {
                                self.note(
                                    notes,
                                    profile_node,
                                    format!(
                                        "profile {profile_name:?} gives a preferred speed of 0: its agents stand all run long"
                                    ),
                                );
                                style.max_speed = AgentStyle::default().max_speed;
                            }
                            if style.max_speed < 0.0 {
                                return Err(self.error_at(
                                    profile_node,
                                    format!(
                                        "profile {profile_name:?} gives a negative speed, {}",
                                        readable(style.max_speed)
                                    ),
                                ));
                            }
                            if style.max_speed > fastest() {
                                self.note(
                                    notes,
                                    profile_node,
                                    format!(
                                        "preferred speeds above {} m/s lowered to it (one local cell per planner step)",
                                        fastest()
                                    ),
                                );
                                style.max_speed = fastest();
                            }
                            parts.agents.push(SceneAgent {
                                position,
                                style,
                                state: (state.to_owned(), state_node.range().start),
                                still,
                            });
                        }
                    }
                }
                "ObstacleSet" => {
                    if node.attribute("type") != Some("explicit") {
                        return Err(self.error_at(
                            node,
                            format!(
                                "a {:?} obstacle set has no counterpart (explicit does)",
                                node.attribute("type").unwrap_or("")
                            ),
                        ));
                    }
                    classes.insert(node.attribute("class").unwrap_or("").to_owned());
                    for obstacle in Self::elements(node) {
                        let points = Self::elements(obstacle)
                            .filter(|v| v.tag_name().name() == "Vertex")
                            .map(|v| Ok(DVec2::new(self.number(v, "p_x")?, self.number(v, "p_y")?)))
                            .collect::<Result<Vec<_>, ConvertError>>()?;
                        if points.len() < 2 {
                            self.note(
                                notes,
                                obstacle,
                                "an obstacle of fewer than two vertices: left out",
                            );
                            continue;
                        }
                        parts.obstacles.push(RawObstacle {
                            closed: self.flag(obstacle, "closed") && points.len() >= 3,
                            points,
                            node_pos: obstacle.range().start,
                        });
                    }
                }
                model if PEDESTRIAN_MODELS.contains(&model) => {
                    models.insert(model);
                }
                other => self.note(
                    notes,
                    node,
                    format!("<{other}> has no counterpart: left out"),
                ),
            }
        }
        if !models.is_empty() {
            let list: Vec<String> = models.iter().map(|m| format!("<{m}>")).collect();
            self.note(
                notes,
                root,
                format!(
                    "pedestrian-model parameters ({}) have no counterpart: left out",
                    list.join(", ")
                ),
            );
        }
        if classes.len() > 1 {
            self.note(
                notes,
                root,
                "obstacle sets of several classes: every agent avoids every obstacle",
            );
        }
        Ok(parts)
    }

    /// The start positions a `<Generator>` gives.
    fn generate(
        &self,
        node: Node<'a, 'input>,
        notes: &mut Notes,
    ) -> Result<Vec<DVec2>, ConvertError> {
        if node.attribute("displace_dist").is_some() {
            self.note(notes, node, "the generator's displacement noise is dropped");
        }
        let turn = |deg: f64| DVec2::from_angle(deg.to_radians());
        match node.attribute("type") {
            Some("explicit") => Self::elements(node)
                .filter(|a| a.tag_name().name() == "Agent")
                .map(|a| Ok(DVec2::new(self.number(a, "p_x")?, self.number(a, "p_y")?)))
                .collect(),
            Some("rect_grid") => {
                let anchor = DVec2::new(
                    self.number(node, "anchor_x")?,
                    self.number(node, "anchor_y")?,
                );
                let offset = DVec2::new(
                    self.number(node, "offset_x")?,
                    self.number(node, "offset_y")?,
                );
                let (nx, ny) = (self.whole(node, "count_x")?, self.whole(node, "count_y")?);
                if nx.saturating_mul(ny) > MAX_GENERATED_AGENTS {
                    return Err(self.error_at(node, format!("{nx} × {ny} agents are too many")));
                }
                let rotation = turn(self.optional(node, "rotation")?.unwrap_or(0.0));
                Ok((0..nx * ny)
                    .map(|i| {
                        let local = DVec2::new((i % nx) as f64, (i / nx) as f64) * offset;
                        anchor + rotation.rotate(local)
                    })
                    .collect())
            }
            Some("hex_lattice") => self.hex_lattice(node, turn),
            other => Err(self.error_at(
                node,
                format!(
                    "a {:?} generator has no counterpart (explicit, rect_grid and hex_lattice do)",
                    other.unwrap_or("")
                ),
            )),
        }
    }

    /// Menge's hexagonal lattice: agents in rows `2r` apart within a row and `r√3` between rows
    /// (r = 1 / √(2√3 · density)), the odd rows shifted by r, filled row by row (`row_direction
    /// = "x"`) or column by column (`"y"`) up to a whole number of row pairs or columns, placed
    /// from the anchor (`alignment`: its left corner, centre or right corner) and turned by
    /// `rotation` degrees.
    fn hex_lattice(
        &self,
        node: Node<'a, 'input>,
        turn: impl Fn(f64) -> DVec2,
    ) -> Result<Vec<DVec2>, ConvertError> {
        let anchor = DVec2::new(
            self.number(node, "anchor_x")?,
            self.number(node, "anchor_y")?,
        );
        let density = self.number(node, "density")?;
        let width = self.number(node, "width")?;
        let target = self.whole(node, "population")?;
        if density <= 0.0 || width < 0.0 {
            return Err(self.error_at(
                node,
                "a lattice needs a positive density and a width that is not negative".to_owned(),
            ));
        }
        let rotation = turn(self.optional(node, "rotation")?.unwrap_or(0.0));
        let r = 1.0 / (2.0 * density * 3f64.sqrt()).sqrt();
        let (row_gap, neighbour_gap) = (r * 3f64.sqrt(), 2.0 * r);
        let by_rows = match node.attribute("row_direction").unwrap_or("x") {
            "x" => true,
            "y" => false,
            other => {
                return Err(self.error_at(
                    node,
                    format!("row_direction= must be x or y, got {other:?}"),
                ));
            }
        };
        // (agents in a full row, how many there are, how wide the lattice is)
        let (row_pop, total, span) = if by_rows {
            let row_pop = lattice_count(width / neighbour_gap);
            let band = 2 * row_pop - 1;
            // Whole pairs of rows, less the last short row where the target allows.
            let mut total = band * (target / band + 1);
            if total - (row_pop - 1) > target {
                total -= row_pop - 1;
            }
            (row_pop, total, (row_pop - 1) as f64 * neighbour_gap)
        } else {
            let columns = lattice_count(width / row_gap);
            let row_pop = target / columns + 1;
            (row_pop, columns * row_pop, (columns - 1) as f64 * row_gap)
        };
        if total > MAX_GENERATED_AGENTS {
            return Err(self.error_at(node, format!("the lattice would hold {total} agents")));
        }
        let shift = match node.attribute("alignment").unwrap_or("center") {
            "center" => 0.5,
            "left_corner" => 0.0,
            "right_corner" => 1.0,
            other => {
                return Err(self.error_at(
                    node,
                    format!(
                        "alignment= must be center, left_corner or right_corner, got {other:?}"
                    ),
                ));
            }
        };
        let origin = anchor - rotation * span * shift;
        Ok((0..total)
            .map(|mut i| {
                let local = if by_rows {
                    let band_pop = 2 * row_pop - 1;
                    let band = i / band_pop;
                    i -= band * band_pop;
                    if i >= row_pop {
                        DVec2::new(
                            r + (i - row_pop) as f64 * neighbour_gap,
                            (2 * band + 1) as f64 * row_gap,
                        )
                    } else {
                        DVec2::new(i as f64 * neighbour_gap, (2 * band) as f64 * row_gap)
                    }
                } else {
                    let column = i / row_pop;
                    let y = (i % row_pop) as f64 * neighbour_gap
                        + if column % 2 == 1 { r } else { 0.0 };
                    DVec2::new(column as f64 * row_gap, y)
                };
                origin + rotation.rotate(local)
            })
            .collect())
    }

    // ------------------------------------------------------------------ the behaviour

    fn machine(&self, notes: &mut Notes, draw: &mut ChaCha8Rng) -> Result<Machine, ConvertError> {
        let root = self.root("BFSM", "a Menge behaviour")?;
        let mut sets: HashMap<&str, Vec<(&str, Goal)>> = HashMap::new();
        for set in Self::elements(root).filter(|n| n.tag_name().name() == "GoalSet") {
            let id = self.text(set, "id")?.trim();
            let mut goals = Vec::new();
            for goal in Self::elements(set) {
                goals.push((self.text(goal, "id")?.trim(), self.goal(goal)?));
            }
            sets.insert(id, goals);
        }
        let set_of = |node: Node<'a, 'input>| -> Result<Vec<Goal>, ConvertError> {
            let id = self.text(node, "goal_set")?.trim();
            let set = sets
                .get(id)
                .ok_or_else(|| self.error_at(node, format!("there is no goal set {id:?}")))?;
            if set.is_empty() {
                return Err(self.error_at(node, format!("goal set {id:?} is empty")));
            }
            Ok(set.iter().map(|(_, g)| g.clone()).collect())
        };
        let mut machine = Machine::default();
        for state in Self::elements(root).filter(|n| n.tag_name().name() == "State") {
            let name = self.text(state, "name")?;
            let mut selector = None;
            let mut walks = None;
            for part in Self::elements(state) {
                match part.tag_name().name() {
                    "GoalSelector" => {
                        let kind = part.attribute("type").unwrap_or("");
                        selector = Some(match kind {
                            "explicit" => {
                                let id = self.text(part, "goal")?.trim();
                                let set_id = self.text(part, "goal_set")?.trim();
                                let goal = sets
                                    .get(set_id)
                                    .and_then(|s| s.iter().find(|(g, _)| *g == id))
                                    .ok_or_else(|| {
                                        self.error_at(
                                            part,
                                            format!("goal set {set_id:?} has no goal {id:?}"),
                                        )
                                    })?;
                                Selector::Fixed(goal.1.clone())
                            }
                            "identity" => Selector::Identity,
                            "nearest" => Selector::Nearest(set_of(part)?),
                            "farthest" => Selector::Farthest(set_of(part)?),
                            "random" => Selector::Random(set_of(part)?),
                            "weighted" => {
                                let set = set_of(part)?;
                                let pick = WeightedIndex::new(set.iter().map(|g| g.weight))
                                    .map_err(|_| {
                                        self.error_at(
                                            part,
                                            "the goal set has no goal of any weight",
                                        )
                                    })?;
                                Selector::Weighted(set, pick)
                            }
                            "mirror" => Selector::Mirror(
                                self.flag(part, "mirror_x"),
                                self.flag(part, "mirror_y"),
                            ),
                            other => {
                                return Err(self.error_at(
                                    part,
                                    format!("a {other:?} goal selector has no counterpart"),
                                ));
                            }
                        });
                    }
                    "VelComponent" => {
                        let kind = part.attribute("type").unwrap_or("");
                        walks = Some(match kind {
                            "goal" | "road_map" | "nav_mesh" | "vel_field" => {
                                if kind != "goal" {
                                    self.note(
                                        notes,
                                        part,
                                        format!("a {kind} velocity: walkers follow crowdfield's global map to the goal instead"),
                                    );
                                }
                                true
                            }
                            "zero" => false,
                            other => {
                                return Err(self.error_at(
                                    part,
                                    format!("a {other:?} velocity component has no counterpart (goal, road_map, nav_mesh, vel_field and zero do)"),
                                ));
                            }
                        });
                    }
                    other => self.note(
                        notes,
                        part,
                        format!("<{other}> in a state has no counterpart: left out"),
                    ),
                }
            }
            let index = machine.states.len();
            if machine.by_name.insert(name.to_owned(), index).is_some() {
                return Err(self.error_at(state, format!("a second state named {name:?}")));
            }
            machine.states.push(State {
                name: name.to_owned(),
                terminal: self.flag(state, "final"),
                // Menge's defaults: the identity selector, zero velocity.
                selector: selector.unwrap_or(Selector::Identity),
                walks: walks.unwrap_or(false),
                exits: Vec::new(),
                place: self.place(state),
            });
        }
        for transition in Self::elements(root).filter(|n| n.tag_name().name() == "Transition") {
            let condition = Self::elements(transition)
                .find(|c| c.tag_name().name() == "Condition")
                .ok_or_else(|| {
                    self.error_at(transition, "<Transition> has no <Condition>".to_owned())
                })?;
            let when = match condition.attribute("type").unwrap_or("") {
                "goal_reached" => {
                    let d = self.optional(condition, "distance")?.unwrap_or(0.0);
                    if d < 0.0 {
                        return Err(self.error_at(
                            condition,
                            format!("distance= must not be negative, got {}", readable(d)),
                        ));
                    }
                    When::Reached(d)
                }
                "timer" => {
                    let d = self.draw(condition)?;
                    if self.flag(condition, "per_agent") {
                        When::Timer(d)
                    } else {
                        When::Timer(Draw::Const(d.sample(draw)))
                    }
                }
                "auto" => When::Now,
                "AABB" if self.flag(condition, "inside") => {
                    let shape = Shape::Aabb {
                        min: DVec2::new(
                            self.number(condition, "min_x")?,
                            self.number(condition, "min_y")?,
                        ),
                        max: DVec2::new(
                            self.number(condition, "max_x")?,
                            self.number(condition, "max_y")?,
                        ),
                    };
                    When::Inside(self.valid(condition, shape)?)
                }
                other => {
                    return Err(self.error_at(
                        condition,
                        format!("a {other:?} condition has no counterpart (goal_reached, timer, auto and AABB inside do)"),
                    ));
                }
            };
            let next = match transition.attribute("to") {
                Some(to) => Next::One(self.state_index(&machine, transition, to)?),
                None => {
                    let target = Self::elements(transition)
                        .find(|c| c.tag_name().name() == "Target")
                        .ok_or_else(|| {
                            self.error_at(
                                transition,
                                "<Transition> has neither to= nor <Target>".to_owned(),
                            )
                        })?;
                    if target.attribute("type") != Some("prob") {
                        return Err(self.error_at(
                            target,
                            format!(
                                "a {:?} transition target has no counterpart (prob does)",
                                target.attribute("type").unwrap_or("")
                            ),
                        ));
                    }
                    let mut choices = Vec::new();
                    for s in Self::elements(target) {
                        let weight = self.optional(s, "weight")?.unwrap_or(1.0);
                        if weight < 0.0 {
                            return Err(
                                self.error_at(s, format!("a negative weight {}", readable(weight)))
                            );
                        }
                        choices.push((
                            self.state_index(&machine, s, self.text(s, "name")?)?,
                            weight,
                        ));
                    }
                    let pick = WeightedIndex::new(choices.iter().map(|c| c.1)).map_err(|_| {
                        self.error_at(target, "the weights add up to nothing".to_owned())
                    })?;
                    Next::Drawn(choices.into_iter().map(|c| c.0).collect(), pick)
                }
            };
            for from in self.text(transition, "from")?.split(',') {
                let from = self.state_index(&machine, transition, from.trim())?;
                machine.states[from].exits.push(Exit {
                    when: when.clone(),
                    next: next.clone(),
                    place: self.place(transition),
                });
            }
        }
        for other in Self::elements(root)
            .filter(|n| !matches!(n.tag_name().name(), "GoalSet" | "State" | "Transition"))
        {
            self.note(
                notes,
                other,
                format!("<{}> has no counterpart: left out", other.tag_name().name()),
            );
        }
        Ok(machine)
    }

    fn state_index(
        &self,
        machine: &Machine,
        node: Node<'a, 'input>,
        name: &str,
    ) -> Result<usize, ConvertError> {
        machine
            .by_name
            .get(name)
            .copied()
            .ok_or_else(|| self.error_at(node, format!("there is no state {name:?}")))
    }

    fn place(&self, node: Node) -> String {
        let (line, column) = self.pos(node.range().start);
        format!("{}:{line}:{column}", self.name)
    }

    fn goal(&self, node: Node<'a, 'input>) -> Result<Goal, ConvertError> {
        let at = |k: &str| self.number(node, k);
        let (target, centroid) = match node.attribute("type").unwrap_or("") {
            "point" => {
                let p = DVec2::new(at("x")?, at("y")?);
                (GoalTarget::Point(p.as_vec2()), p)
            }
            "circle" => {
                let centre = DVec2::new(at("x")?, at("y")?);
                let shape = Shape::Disc {
                    centre,
                    radius: at("radius")?,
                };
                (GoalTarget::Region(self.valid(node, shape)?), centre)
            }
            "AABB" => {
                let (min, max) = (
                    DVec2::new(at("min_x")?, at("min_y")?),
                    DVec2::new(at("max_x")?, at("max_y")?),
                );
                (
                    GoalTarget::Region(self.valid(node, Shape::Aabb { min, max })?),
                    (min + max) * 0.5,
                )
            }
            "OBB" => {
                let pivot = DVec2::new(at("x")?, at("y")?);
                let size = DVec2::new(at("width")?, at("height")?);
                let turn = DVec2::from_angle(at("angle")?.to_radians());
                let centre = pivot + turn.rotate(size * 0.5);
                let shape = Shape::RotatedBox {
                    centre,
                    half_extents: size * 0.5,
                    angle: turn.to_angle(),
                };
                (GoalTarget::Region(self.valid(node, shape)?), centre)
            }
            other => {
                return Err(self.error_at(
                    node,
                    format!("a {other:?} goal has no counterpart (point, circle, AABB and OBB do)"),
                ));
            }
        };
        let weight = self.optional(node, "weight")?.unwrap_or(1.0);
        if weight < 0.0 {
            return Err(self.error_at(node, format!("a negative weight {}", readable(weight))));
        }
        Ok(Goal {
            target,
            centroid,
            weight,
        })
    }

    fn valid(&self, node: Node<'a, 'input>, shape: Shape) -> Result<Shape, ConvertError> {
        shape
            .validate()
            .map_err(|e| self.error_at(node, e.to_string()))?;
        if let Shape::Aabb { min, max } = shape
            && !(min.x <= max.x && min.y <= max.y)
        {
            return Err(self.error_at(node, "min_x/min_y must not be above max_x/max_y".to_owned()));
        }
        Ok(shape)
    }
}

#[derive(Debug, Clone)]
struct Goal {
    target: GoalTarget,
    centroid: DVec2,
    weight: f64,
}

#[derive(Debug, Clone)]
enum Selector {
    Fixed(Goal),
    Identity,
    Nearest(Vec<Goal>),
    Farthest(Vec<Goal>),
    /// Any goal of the set, each as likely (Menge's `random`).
    Random(Vec<Goal>),
    /// A goal of the set drawn by the goals' weights (Menge's `weighted`).
    Weighted(Vec<Goal>, WeightedIndex<f64>),
    Mirror(bool, bool),
}

#[derive(Debug, Clone)]
enum When {
    Reached(f64),
    Timer(Draw),
    Now,
    Inside(Shape),
}

#[derive(Debug, Clone)]
enum Next {
    One(usize),
    /// States, and their weights' distribution.
    Drawn(Vec<usize>, WeightedIndex<f64>),
}

#[derive(Debug, Clone)]
struct Exit {
    when: When,
    next: Next,
    place: String,
}

#[derive(Debug, Clone)]
struct State {
    name: String,
    terminal: bool,
    selector: Selector,
    walks: bool,
    exits: Vec<Exit>,
    place: String,
}

#[derive(Debug, Default)]
struct Machine {
    states: Vec<State>,
    by_name: HashMap<String, usize>,
}

impl Machine {
    /// The goals of an agent that starts at `start` in state `first`.
    fn walk(
        &self,
        start: DVec2,
        first: usize,
        rng: &mut ChaCha8Rng,
        notes: &mut Notes,
    ) -> AgentGoals {
        let mut goals = AgentGoals {
            on_arrival: ArrivalAction::Settle,
            ..Default::default()
        };
        let mut radius: Option<f64> = None;
        let mut at = start;
        let mut seen = vec![false; self.states.len()];
        // The state the walk ends in (set on entering each).
        let mut last;
        let mut state = first;
        loop {
            let s = &self.states[state];
            last = state;
            if std::mem::replace(&mut seen[state], true) {
                notes.add(format!(
                    "{}: the state machine comes back to {:?}: its goals are listed once",
                    s.place, s.name
                ));
                break;
            }
            // Menge's identity selector makes a goal of where the agent stands: it stays, as
            // it does in a state that does not walk.
            let goal = match &s.selector {
                _ if !s.walks => None,
                Selector::Identity => None,
                Selector::Fixed(g) => Some(g.clone()),
                Selector::Nearest(set) | Selector::Farthest(set) => {
                    let d = |g: &&Goal| g.centroid.distance_squared(at);
                    if matches!(s.selector, Selector::Farthest(_)) {
                        set.iter().max_by(|a, b| d(a).total_cmp(&d(b))).cloned()
                    } else {
                        set.iter().min_by(|a, b| d(a).total_cmp(&d(b))).cloned()
                    }
                }
                Selector::Random(set) => Some(set[rng.random_range(0..set.len())].clone()),
                Selector::Weighted(set, pick) => Some(set[pick.sample(rng)].clone()),
                Selector::Mirror(x, y) => {
                    let p =
                        DVec2::new(if *x { -at.x } else { at.x }, if *y { -at.y } else { at.y });
                    Some(Goal {
                        target: GoalTarget::Point(p.as_vec2()),
                        centroid: p,
                        weight: 1.0,
                    })
                }
            };
            let exit = s.exits.first().filter(|_| !s.terminal);
            if s.exits.len() > 1 && !s.terminal {
                notes.add(format!(
                    "{}: state {:?} has {} ways out: the first listed is followed",
                    s.place,
                    s.name,
                    s.exits.len()
                ));
            }
            let Some(goal) = goal else {
                // Standing: Menge's agent waits here. Ours goes on at once where a timer or
                // `auto` leads on, and stays for good otherwise.
                match exit {
                    Some(e) if matches!(e.when, When::Timer(_) | When::Now) => {
                        if matches!(e.when, When::Timer(_)) {
                            notes.add(format!(
                                "{}: a wait in state {:?} is dropped: the walker goes on at once",
                                e.place, s.name
                            ));
                        }
                        state = self.next(&e.next, rng);
                        continue;
                    }
                    _ => {
                        if s.walks && !s.terminal {
                            notes.add(format!(
                                "{}: state {:?} moves with no goal of its own (an identity goal): the walker stands there",
                                s.place, s.name
                            ));
                        }
                        break;
                    }
                }
            };
            let mut target = goal.target.clone();
            let mut limit = None;
            let mut at_next = goal.centroid;
            if let Some(e) = exit {
                match &e.when {
                    When::Reached(d) => match radius {
                        None => radius = Some(*d),
                        Some(r) if r != *d => notes.add(format!(
                            "{}: goal distances differ along the way: {r} m is kept for every goal",
                            e.place
                        )),
                        _ => {}
                    },
                    When::Timer(d) => limit = Some(d.sample(rng).max(0.0)),
                    When::Now => {
                        state = self.next(&e.next, rng);
                        continue;
                    }
                    When::Inside(shape) => {
                        notes.add(format!(
                            "{}: the walker heads for the condition's box, where Menge's agent changes state, rather than for its goal",
                            e.place
                        ));
                        target = GoalTarget::Region(shape.clone());
                        if let Shape::Aabb { min, max } = shape {
                            at_next = (*min + *max) * 0.5;
                        }
                    }
                }
            }
            let repeat = goals.targets.last() == Some(&target) && limit.is_none();
            if !repeat {
                goals.targets.push(target);
                goals.time_limits.push(limit);
            }
            at = at_next;
            match exit {
                Some(e) => state = self.next(&e.next, rng),
                None => break,
            }
        }
        if !goals.targets.is_empty() {
            let s = &self.states[last];
            notes.add(format!(
                "{}: the walk ends in state {:?}: the walker walks on into its last goal and stops there (`on_arrival: Settle`), where Menge's agent stops at the goal's edge and is pushed aside by those arriving after it",
                s.place, s.name
            ));
        }
        if goals.time_limits.iter().all(Option::is_none) {
            goals.time_limits.clear();
        }
        if let Some(r) = radius {
            goals.arrival_radius = r;
        }
        goals
    }

    fn next(&self, next: &Next, rng: &mut ChaCha8Rng) -> usize {
        match next {
            Next::One(s) => *s,
            Next::Drawn(states, pick) => states[pick.sample(rng)],
        }
    }
}

// ---------------------------------------------------------------------- obstacles

/// Signed area, positive counter-clockwise.
fn signed_area(points: &[DVec2]) -> f64 {
    let n = points.len();
    (0..n)
        .map(|i| points[i].perp_dot(points[(i + 1) % n]))
        .sum::<f64>()
        * 0.5
}

fn is_convex(points: &[DVec2]) -> bool {
    let n = points.len();
    let area = signed_area(points);
    (0..n).all(|i| {
        let (a, b, c) = (points[i], points[(i + 1) % n], points[(i + 2) % n]);
        (b - a).perp_dot(c - b) * area.signum() >= -1e-12
    })
}

/// How an obstacle was carried over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carried {
    /// As the solid it describes.
    Solid,
    /// As walls along its edges: its outline touches or crosses itself, or encloses no area,
    /// so it has no clean inside to fill.
    Outline,
    /// As walls along its edges: agents start or have goals inside it.
    Occupied,
}

/// The shapes one Menge obstacle becomes inside the world `[lo, hi]`.
///
/// `occupied` are the agents' starts and their goals' centres: a counter-clockwise obstacle
/// around any of them is a room, not a solid (Menge's agents meet an obstacle's edges from
/// outside only, so inside it they walk freely); it becomes walls along its edges.
fn obstacle_shapes(
    obstacle: &RawObstacle,
    lo: DVec2,
    hi: DVec2,
    occupied: &[DVec2],
) -> (Vec<Shape>, Carried) {
    let points = &obstacle.points;
    if !obstacle.closed {
        return (
            vec![Shape::Polyline {
                points: points.clone(),
                thickness: OPEN_WALL_THICKNESS,
            }],
            Carried::Solid,
        );
    }
    let area = signed_area(points);
    let (box_lo, box_hi) = points
        .iter()
        .fold((points[0], points[0]), |(l, h), p| (l.min(*p), h.max(*p)));
    if area.abs() <= 1e-9 * (box_hi - box_lo).length_squared() {
        // No area (its vertices on one line, or its loops cancelling): neither a solid nor an
        // enclosure, whose fill would cover the whole world.
        return (outline(points), Carried::Outline);
    }
    if area > 0.0 && occupied.iter().any(|p| encloses(points, *p)) {
        return (outline(points), Carried::Occupied);
    }
    if area > 0.0 && is_convex(points) {
        return (vec![Shape::Polygon(points.clone())], Carried::Solid);
    }
    // Counter-clockwise and concave: the polygon in pieces. Clockwise: the world's rectangle
    // with the polygon as a hole.
    let mut ring: Vec<DVec2> = if area > 0.0 {
        points.clone()
    } else {
        vec![lo, DVec2::new(hi.x, lo.y), hi, DVec2::new(lo.x, hi.y)]
    };
    let expected = if area > 0.0 {
        area
    } else {
        (hi - lo).x * (hi - lo).y + area
    };
    let holes = if area > 0.0 {
        vec![]
    } else {
        let start = ring.len();
        ring.extend(points.iter().rev());
        vec![start]
    };
    let flat: Vec<f64> = ring.iter().flat_map(|p| [p.x, p.y]).collect();
    let triangles = earcutr::earcut(&flat, &holes, 2).unwrap_or_default();
    let covered: f64 = triangles
        .chunks_exact(3)
        .map(|t| signed_area(&[ring[t[0]], ring[t[1]], ring[t[2]]]).abs())
        .sum();
    // An outline that touches or crosses itself cuts into pieces that miss or overlap: their
    // areas do not add up to the polygon's. Walls along its edges are what Menge's agents
    // meet there.
    if triangles.is_empty() || (covered - expected).abs() > 1e-6 * expected.abs().max(1.0) {
        return (outline(points), Carried::Outline);
    }
    let pieces = merge_convex(&ring, triangles);
    (
        pieces
            .into_iter()
            .map(|piece| Shape::Polygon(piece.into_iter().map(|i| ring[i]).collect()))
            .filter(|s| s.validate().is_ok())
            .collect(),
        Carried::Solid,
    )
}

/// Whether the closed outline `ring` goes round `p` (an odd number of its edges cross the ray
/// from `p` towards +x).
fn encloses(ring: &[DVec2], p: DVec2) -> bool {
    let n = ring.len();
    (0..n)
        .filter(|&i| {
            let (a, b) = (ring[i], ring[(i + 1) % n]);
            (a.y > p.y) != (b.y > p.y) && p.x < a.x + (p.y - a.y) * (b.x - a.x) / (b.y - a.y)
        })
        .count()
        % 2
        == 1
}

/// Walls along a closed outline's edges.
fn outline(points: &[DVec2]) -> Vec<Shape> {
    let mut ring = points.to_vec();
    ring.push(points[0]);
    vec![Shape::Polyline {
        points: ring,
        thickness: OPEN_WALL_THICKNESS,
    }]
}

/// Joins triangles (indices into `points`, three at a time) that share an edge into larger
/// convex pieces while the union stays convex (a greedy Hertel–Mehlhorn pass): fewer shapes to
/// stamp into the maps.
fn merge_convex(points: &[DVec2], triangles: Vec<usize>) -> Vec<Vec<usize>> {
    let mut pieces: Vec<Vec<usize>> = triangles
        .chunks_exact(3)
        .map(|t| {
            let mut t = t.to_vec();
            if signed_area(&[points[t[0]], points[t[1]], points[t[2]]]) < 0.0 {
                t.reverse();
            }
            t
        })
        .filter(|t| signed_area(&[points[t[0]], points[t[1]], points[t[2]]]).abs() > 1e-12)
        .collect();
    loop {
        let mut merged = false;
        'search: for i in 0..pieces.len() {
            for j in i + 1..pieces.len() {
                if let Some(union) = join(&pieces[i], &pieces[j], points) {
                    pieces[i] = union;
                    pieces.swap_remove(j);
                    merged = true;
                    break 'search;
                }
            }
        }
        if !merged {
            return pieces;
        }
    }
}

/// The union of two counter-clockwise convex pieces sharing an edge, if it is convex.
fn join(a: &[usize], b: &[usize], points: &[DVec2]) -> Option<Vec<usize>> {
    let (na, nb) = (a.len(), b.len());
    for i in 0..na {
        let (u, v) = (a[i], a[(i + 1) % na]);
        let Some(j) = (0..nb).find(|&j| b[j] == v && b[(j + 1) % nb] == u) else {
            continue;
        };
        // a from v round to u, then b's vertices between u and v.
        let mut union: Vec<usize> = (0..na).map(|k| a[(i + 1 + k) % na]).collect();
        union.extend((2..nb).map(|k| b[(j + k) % nb]));
        let ring: Vec<DVec2> = union.iter().map(|&k| points[k]).collect();
        return (signed_area(&ring) > 0.0 && is_convex(&ring)).then_some(union);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small scene and behaviour in Menge's format, written for these tests: a wall with a
    /// 2 m gap, a profile and one inheriting from it, a 3 × 2 grid and two explicit agents;
    /// the grid walks to a box past the wall and stops, the pair walks to the nearest of two
    /// points, waits, then goes on to a circle.
    const SCENE: &str = r#"<?xml version="1.0"?>
<Experiment version="2.0">
  <SpatialQuery type="kd-tree" />
  <Common time_step="0.1" />
  <AgentProfile name="base">
    <Common r="0.2" pref_speed="1.1" max_speed="2" />
    <ORCA tau="3.0" tauObst="0.15" />
  </AgentProfile>
  <AgentProfile name="quick" inherits="base">
    <Common pref_speed="1.4" />
  </AgentProfile>
  <AgentGroup>
    <ProfileSelector type="const" name="base" />
    <StateSelector type="const" name="Cross" />
    <Generator type="rect_grid" anchor_x="-4" anchor_y="-6" offset_x="1" offset_y="-0.5" count_x="3" count_y="2" />
  </AgentGroup>
  <AgentGroup>
    <ProfileSelector type="const" name="quick" />
    <StateSelector type="const" name="Pick" />
    <Generator type="explicit">
      <Agent p_x="6" p_y="-4" />
      <Agent p_x="-6" p_y="-4" />
    </Generator>
  </AgentGroup>
  <ObstacleSet type="explicit" class="1">
    <Obstacle closed="1">
      <Vertex p_x="-10" p_y="-1" /><Vertex p_x="-1" p_y="-1" />
      <Vertex p_x="-1" p_y="1" /><Vertex p_x="-10" p_y="1" />
    </Obstacle>
    <Obstacle closed="1">
      <Vertex p_x="1" p_y="-1" /><Vertex p_x="10" p_y="-1" />
      <Vertex p_x="10" p_y="1" /><Vertex p_x="1" p_y="1" />
    </Obstacle>
  </ObstacleSet>
</Experiment>
"#;

    const BEHAVIOUR: &str = r#"<?xml version="1.0"?>
<BFSM>
  <GoalSet id="0">
    <Goal type="AABB" id="0" min_x="-3" min_y="5" max_x="3" max_y="7" />
    <Goal type="point" id="1" x="5" y="4" />
    <Goal type="point" id="2" x="-5" y="4" />
    <Goal type="circle" id="3" x="0" y="9" radius="1" />
  </GoalSet>
  <State name="Cross" final="0">
    <GoalSelector type="explicit" goal_set="0" goal="0" />
    <VelComponent type="road_map" file_name="map.txt" />
  </State>
  <State name="Pick" final="0">
    <GoalSelector type="nearest" goal_set="0" />
    <VelComponent type="goal" />
  </State>
  <State name="Wait" final="0">
    <GoalSelector type="identity" />
    <VelComponent type="zero" />
  </State>
  <State name="Last" final="0">
    <GoalSelector type="explicit" goal_set="0" goal="3" />
    <VelComponent type="goal" />
  </State>
  <State name="Done" final="1">
    <GoalSelector type="identity" />
    <VelComponent type="zero" />
  </State>
  <Transition from="Cross,Last" to="Done">
    <Condition type="goal_reached" distance="0.25" />
  </Transition>
  <Transition from="Pick" to="Wait">
    <Condition type="goal_reached" distance="0.25" />
  </Transition>
  <Transition from="Wait" to="Last">
    <Condition type="timer" dist="c" value="3" per_agent="0" />
  </Transition>
</BFSM>
"#;

    fn convert(scene: &str, behaviour: &str) -> Result<Converted, MengeError> {
        from_menge(
            &Source {
                name: "testS.xml",
                text: scene,
            },
            &Source {
                name: "testB.xml",
                text: behaviour,
            },
            3,
            Coverage::Touch,
        )
    }

    #[test]
    fn a_scene_and_its_behaviour_become_a_scenario() {
        let c = convert(SCENE, BEHAVIOUR).unwrap();
        let s = &c.scenario;
        assert_eq!(s.name, "test");
        assert_eq!(s.agents.len(), 8);
        // The grid: row by row from the anchor, rows 0.5 m apart downwards.
        let starts: Vec<Vec2> = s.agents[..6].iter().map(|a| a.position).collect();
        assert_eq!(
            starts,
            [
                Vec2::new(-4.0, -6.0),
                Vec2::new(-3.0, -6.0),
                Vec2::new(-2.0, -6.0),
                Vec2::new(-4.0, -6.5),
                Vec2::new(-3.0, -6.5),
                Vec2::new(-2.0, -6.5)
            ]
        );
        let grid = &s.agents[0];
        assert_eq!((grid.style.radius, grid.style.max_speed), (0.2, 1.1));
        assert_eq!(
            grid.goals.targets,
            [GoalTarget::Region(Shape::Aabb {
                min: DVec2::new(-3.0, 5.0),
                max: DVec2::new(3.0, 7.0)
            })]
        );
        assert_eq!(grid.goals.arrival_radius, 0.25);
        assert_eq!(grid.goals.on_arrival, ArrivalAction::Settle);
        assert!(grid.goals.time_limits.is_empty());
        // The pair inherits the radius and overrides the speed; each picks the nearer point,
        // the wait is dropped, then the circle.
        let (east, west) = (&s.agents[6], &s.agents[7]);
        assert_eq!((east.style.radius, east.style.max_speed), (0.2, 1.4));
        let circle = GoalTarget::Region(Shape::Disc {
            centre: DVec2::new(0.0, 9.0),
            radius: 1.0,
        });
        assert_eq!(
            east.goals.targets,
            [GoalTarget::Point(Vec2::new(5.0, 4.0)), circle.clone()]
        );
        assert_eq!(
            west.goals.targets,
            [GoalTarget::Point(Vec2::new(-5.0, 4.0)), circle]
        );
        // The two walls, as they were listed (counter-clockwise, convex).
        assert_eq!(s.obstacles.len(), 2);
        assert!(matches!(&s.obstacles[0].shape, Shape::Polygon(p) if p.len() == 4));
        // The world holds everything with the margin to spare.
        assert_eq!(s.bounds.min, Vec2::new(-15.0, -11.5));
        assert_eq!(s.bounds.max, Vec2::new(15.0, 15.0));
        let said = c.notes.join("\n");
        for expected in [
            "testS.xml:4:3: time step 0.1 s",
            "testS.xml:2:1: pedestrian-model parameters (<ORCA>) have no counterpart: left out",
            "a road_map velocity: walkers follow crowdfield's global map",
            "a wait in state \"Wait\" is dropped",
        ] {
            assert!(said.contains(expected), "{expected:?} not in\n{said}");
        }
        // Once each, however many agents pass.
        assert_eq!(said.matches("a wait in state").count(), 1);
    }

    #[test]
    fn a_hexagonal_lattice_fills_whole_rows() {
        // density 1/(2√3) gives r = 1: neighbours 2 m apart, rows √3 apart.
        let scene = SCENE.replace(
            r#"<Generator type="rect_grid" anchor_x="-4" anchor_y="-6" offset_x="1" offset_y="-0.5" count_x="3" count_y="2" />"#,
            r#"<Generator type="hex_lattice" anchor_x="0" anchor_y="-8" alignment="left_corner" row_direction="x" density="0.28867513459481287" width="5" population="4" />"#,
        );
        let c = convert(&scene, BEHAVIOUR).unwrap();
        // Two in a full row (5 m holds two gaps of 2 m... at most ⌊5/2⌋ = 2 agents), one in the
        // shifted row, then the next full row: 5 agents for a population of 4.
        let lattice: Vec<DVec2> = c.scenario.agents[..5]
            .iter()
            .map(|a| a.position.as_dvec2())
            .collect();
        let r3 = 3f64.sqrt();
        let expected = [
            DVec2::new(0.0, -8.0),
            DVec2::new(2.0, -8.0),
            DVec2::new(1.0, -8.0 + r3),
            DVec2::new(0.0, -8.0 + 2.0 * r3),
            DVec2::new(2.0, -8.0 + 2.0 * r3),
        ];
        for (got, want) in lattice.iter().zip(expected) {
            assert!(got.distance(want) < 1e-5, "{got} != {want}");
        }
        assert_eq!(c.scenario.agents.len(), 5 + 2);
    }

    #[test]
    fn clockwise_obstacles_enclose_and_concave_ones_are_cut() {
        // An L-shaped block (concave, counter-clockwise) and a clockwise square room around the
        // agents.
        let scene = SCENE
            .replace(
                r#"<Vertex p_x="1" p_y="-1" /><Vertex p_x="10" p_y="-1" />
      <Vertex p_x="10" p_y="1" /><Vertex p_x="1" p_y="1" />"#,
                r#"<Vertex p_x="2" p_y="-2" /><Vertex p_x="6" p_y="-2" /><Vertex p_x="6" p_y="-1" />
      <Vertex p_x="3" p_y="-1" /><Vertex p_x="3" p_y="2" /><Vertex p_x="2" p_y="2" />"#,
            )
            .replace(
                "</ObstacleSet>",
                r#"<Obstacle closed="1">
      <Vertex p_x="-12" p_y="-12" /><Vertex p_x="-12" p_y="12" />
      <Vertex p_x="12" p_y="12" /><Vertex p_x="12" p_y="-12" />
    </Obstacle>
  </ObstacleSet>"#,
            );
        let c = convert(&scene, BEHAVIOUR).unwrap();
        let s = &c.scenario;
        let covered = |p: DVec2| {
            s.obstacles.iter().any(|o| match &o.shape {
                Shape::Polygon(ring) => {
                    let n = ring.len();
                    let sign = signed_area(ring).signum();
                    (0..n).all(|i| (ring[(i + 1) % n] - ring[i]).perp_dot(p - ring[i]) * sign > 0.0)
                }
                _ => false,
            })
        };
        // The L: its arms are solid, its inner corner is free.
        assert!(covered(DVec2::new(2.5, 1.5)));
        assert!(covered(DVec2::new(5.5, -1.5)));
        assert!(!covered(DVec2::new(4.0, 0.0)));
        // The room: outside is solid, inside free, everywhere in the world.
        assert!(covered(DVec2::new(-13.0, 0.0)));
        assert!(covered(DVec2::new(0.0, 13.5)));
        assert!(!covered(DVec2::new(0.0, -6.0)));
        // Every piece is convex, and pieces were merged: an L needs two, a square frame four.
        assert!(s.obstacles.iter().all(|o| o.shape.validate().is_ok()));
        assert!(s.obstacles.len() <= 1 + 2 + 4, "{}", s.obstacles.len());
    }

    #[test]
    fn outlines_that_cross_themselves_or_hold_agents_become_walls() {
        // A bow tie whose right loop is larger: positive area, but no clean inside.
        let bow = RawObstacle {
            points: [(0.0, 0.0), (6.0, 4.0), (6.0, -4.0), (0.0, 1.0)]
                .map(|(x, y)| DVec2::new(x, y))
                .to_vec(),
            closed: true,
            node_pos: 0,
        };
        assert!(signed_area(&bow.points) != 0.0);
        let (shapes, carried) = obstacle_shapes(&bow, DVec2::splat(-10.0), DVec2::splat(10.0), &[]);
        assert_eq!(carried, Carried::Outline);
        let [Shape::Polyline { points, thickness }] = shapes.as_slice() else {
            panic!("{shapes:?}");
        };
        assert_eq!(
            (points.len(), points[0], *thickness),
            (5, points[4], OPEN_WALL_THICKNESS)
        );
        // A clean concave polygon is still filled.
        let l = RawObstacle {
            points: [
                (0.0, 0.0),
                (2.0, 0.0),
                (2.0, 1.0),
                (1.0, 1.0),
                (1.0, 2.0),
                (0.0, 2.0),
            ]
            .map(|(x, y)| DVec2::new(x, y))
            .to_vec(),
            closed: true,
            node_pos: 0,
        };
        let world = (DVec2::splat(-10.0), DVec2::splat(10.0));
        let beside = [DVec2::new(1.5, 1.5), DVec2::new(5.0, 0.5)];
        let (shapes, carried) = obstacle_shapes(&l, world.0, world.1, &beside);
        assert_eq!((carried, shapes.len()), (Carried::Solid, 2));
        // With an agent or goal inside (in the L's foot), a room: walls, inside left free.
        let (shapes, carried) = obstacle_shapes(&l, world.0, world.1, &[DVec2::new(1.5, 0.5)]);
        assert_eq!(carried, Carried::Occupied);
        assert!(
            matches!(shapes.as_slice(), [Shape::Polyline { .. }]),
            "{shapes:?}"
        );
    }

    #[test]
    fn mirrors_draws_and_loops() {
        let behaviour = r#"<BFSM>
  <GoalSet id="g">
    <Goal type="point" id="a" x="0" y="20" weight="1" />
    <Goal type="point" id="b" x="0" y="-20" weight="0" />
  </GoalSet>
  <State name="Cross" final="0"><GoalSelector type="mirror" mirror_x="1" mirror_y="1" /><VelComponent type="goal" /></State>
  <State name="Pick" final="0"><GoalSelector type="weighted" goal_set="g" /><VelComponent type="goal" /></State>
  <State name="Back" final="0"><GoalSelector type="explicit" goal_set="g" goal="b" /><VelComponent type="goal" /></State>
  <Transition from="Cross" to="Pick"><Condition type="timer" dist="u" min="10" max="20" per_agent="1" /></Transition>
  <Transition from="Pick" to="Back"><Condition type="goal_reached" distance="0.5" /></Transition>
  <Transition from="Back" to="Pick"><Condition type="goal_reached" distance="0.5" /></Transition>
</BFSM>"#;
        let scene = SCENE.replace(r#"name="Pick""#, r#"name="Cross""#);
        let c = convert(&scene, behaviour).unwrap();
        let east = &c.scenario.agents[6];
        // Mirrored through the origin, then the only goal of any weight, then back, then the
        // loop is cut.
        assert_eq!(
            east.goals.targets,
            [
                GoalTarget::Point(Vec2::new(-6.0, 4.0)),
                GoalTarget::Point(Vec2::new(0.0, 20.0)),
                GoalTarget::Point(Vec2::new(0.0, -20.0)),
            ]
        );
        let limit = east.goals.time_limits[0].unwrap();
        assert!((10.0..20.0).contains(&limit));
        assert_eq!(east.goals.time_limits[1..], [None, None]);
        // Per agent: the other walker draws its own limit; the same seed draws the same.
        assert_ne!(c.scenario.agents[7].goals.time_limits[0], Some(limit));
        let again = convert(&scene, behaviour).unwrap();
        assert_eq!(again.scenario.agents, c.scenario.agents);
        assert!(c.notes.iter().any(|n| n.contains("comes back to \"Pick\"")));
        // `random` ignores the weights: across the eight walkers both goals are drawn.
        let uniform = convert(
            &scene,
            &behaviour.replace("type=\"weighted\"", "type=\"random\""),
        )
        .unwrap();
        let second: BTreeSet<String> = uniform
            .scenario
            .agents
            .iter()
            .map(|a| format!("{:?}", a.goals.targets[1]))
            .collect();
        assert_eq!(second.len(), 2, "{second:?}");
    }

    #[test]
    fn what_has_no_counterpart_is_an_error_with_its_place() {
        let cases = [
            (
                SCENE.replace(
                    r#"type="explicit" class="1""#,
                    r#"type="nav_mesh" file_name="x.nav""#,
                ),
                BEHAVIOUR.to_owned(),
                "testS.xml:",
                "a \"nav_mesh\" obstacle set has no counterpart",
            ),
            (
                SCENE.to_owned(),
                BEHAVIOUR.replace(r#"type="timer""#, r#"type="not""#),
                "testB.xml:36:5:",
                "a \"not\" condition has no counterpart",
            ),
            (
                SCENE.replace(r#"name="Cross" />"#, r#"name="Nowhere" />"#),
                BEHAVIOUR.to_owned(),
                "testS.xml:",
                "the behaviour has no state \"Nowhere\"",
            ),
            (
                SCENE.replace("r=\"0.2\"", "r=\"-1\""),
                BEHAVIOUR.to_owned(),
                "testS.xml:",
                "which is not positive",
            ),
            (
                SCENE.to_owned(),
                BEHAVIOUR.replace("<BFSM>", "<BFSM><GoalSet id=\"9\">"),
                "testB.xml:",
                "",
            ),
        ];
        for (scene, behaviour, file, message) in cases {
            let e = convert(&scene, &behaviour).unwrap_err().to_string();
            assert!(e.starts_with(file) && e.contains(message), "{e}");
        }
    }

    #[test]
    fn bad_values_are_errors_with_their_place() {
        let grid = r#"<Generator type="rect_grid" anchor_x="-4" anchor_y="-6" offset_x="1" offset_y="-0.5" count_x="3" count_y="2" />"#;
        let cases = [
            // A lattice row wider than any lattice may hold: an error, not an overflow.
            (
                SCENE.replace(grid, r#"<Generator type="hex_lattice" anchor_x="0" anchor_y="0" density="1" width="1e300" population="4" />"#),
                BEHAVIOUR.to_owned(),
                "testS.xml:15:5:",
                "the lattice would hold",
            ),
            // Generators that together make too many agents.
            (
                SCENE.replace(grid, &[r#"<Generator type="rect_grid" anchor_x="0" anchor_y="0" offset_x="1" offset_y="1" count_x="1000" count_y="1000" />"#; 2].concat()),
                BEHAVIOUR.to_owned(),
                "testS.xml:15:",
                "make more than 1000000 agents",
            ),
            // A uniform range whose width overflows.
            (
                SCENE.replace(r#"<Common pref_speed="1.4" />"#, r#"<Common><Property name="pref_speed" dist="u" min="-1e308" max="1e308" /></Common>"#),
                BEHAVIOUR.to_owned(),
                "testS.xml:10:13:",
                "the range -1e308 to 1e308 is too wide",
            ),
            (
                SCENE.to_owned(),
                BEHAVIOUR.replacen(r#"distance="0.25""#, r#"distance="-1""#, 1),
                "testB.xml:30:5:",
                "distance= must not be negative",
            ),
            (
                SCENE.to_owned(),
                BEHAVIOUR.replace(r#"<Condition type="timer" dist="c" value="3" per_agent="0" />"#, r#"<Condition type="AABB" inside="1" min_x="1" max_x="0" min_y="0" max_y="1" />"#),
                "testB.xml:36:5:",
                "must not be above",
            ),
            // The two files swapped.
            (
                BEHAVIOUR.to_owned(),
                BEHAVIOUR.to_owned(),
                "testS.xml:2:1:",
                "expected a Menge scene (<Experiment>), found <BFSM>",
            ),
            (
                SCENE.to_owned(),
                SCENE.to_owned(),
                "testB.xml:2:1:",
                "expected a Menge behaviour (<BFSM>), found <Experiment>",
            ),
        ];
        for (scene, behaviour, place, message) in cases {
            let e = convert(&scene, &behaviour).unwrap_err().to_string();
            assert!(e.starts_with(place) && e.contains(message), "{e}");
        }
        // A closed obstacle with no area (its vertices on one line) is a wall, not an
        // enclosure that would fill the world.
        let flat = SCENE.replace(
            "</ObstacleSet>",
            r#"<Obstacle closed="1"><Vertex p_x="0" p_y="3" /><Vertex p_x="4" p_y="3" /><Vertex p_x="2" p_y="3" /></Obstacle></ObstacleSet>"#,
        );
        let c = convert(&flat, BEHAVIOUR).unwrap();
        assert!(
            matches!(
                c.scenario.obstacles.last().unwrap().shape,
                Shape::Polyline { .. }
            ),
            "{:?}",
            c.scenario.obstacles
        );
        assert_eq!(c.scenario.obstacles.len(), 3);
        assert!(c.notes.iter().any(|n| n.contains("bounds no clean area")));
        // A preferred speed of 0 stands (Menge allows it); a negative one is an error.
        let still = SCENE.replace(
            r#"<Common pref_speed="1.4" />"#,
            r#"<Common pref_speed="0" />"#,
        );
        let c = convert(&still, BEHAVIOUR).unwrap();
        let pair = &c.scenario.agents[6..];
        assert!(pair.iter().all(|a| a.goals.targets.is_empty()), "{pair:?}");
        assert!(c.scenario.agents[0].goals.targets.len() == 1);
        assert!(c.notes.iter().any(|n| n.contains("preferred speed of 0")));
        let backwards = SCENE.replace(
            r#"<Common pref_speed="1.4" />"#,
            r#"<Common pref_speed="-1" />"#,
        );
        let e = convert(&backwards, BEHAVIOUR).unwrap_err().to_string();
        assert!(e.contains("gives a negative speed, -1"), "{e}");
    }

    #[test]
    fn a_project_names_its_files() {
        let (scene, behaviour) = project_files(
            r#"<?xml version="1.0"?><Project scene="a/aS.xml" behavior="a/aB.xml" view="a/aV.xml" model="orca" />"#,
        )
        .unwrap();
        assert_eq!(
            (scene.as_str(), behaviour.as_str()),
            ("a/aS.xml", "a/aB.xml")
        );
        let e = project_files("<Experiment/>").unwrap_err().to_string();
        assert!(e.contains("--behaviour"), "{e}");
    }
}
