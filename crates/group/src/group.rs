//! One group: its members, formation, guidance, map, and one planner step of it (seed 004
//! §5.3, Algorithm 3; digest 004 §5.4–§5.7).
//!
//! # Layer 2: the map moves as one agent
//!
//! The group's **anchor** (its map's centre and its formation's centre) is a point that walks
//! along the group's guidance, [`Goal::guidance_at`](crowdfield_steer::Goal::guidance_at) of a
//! crowd goal (a harmonic global map, a map from outside, a leader's position), `speed` metres
//! a step, and stops in the goal's region. It is held within `leash` of the members' centroid
//! (ours: the seed warns that members faster than their map leave it; a map faster than its
//! members would leave them). The formation turns to the guidance's direction each step about
//! the anchor (seed §5.3.2, step 6) and its slots are placed again.
//!
//! # Layer 1: each member blends the map and its slot (Eq 5.1)
//!
//! ```text
//! Δr = υ_max [ μ_i Ψ(|ζ^t − φ^{t−1}|) (cos φ^t, sin φ^t)
//!            + (1 − μ_i) Ψ(|ω^t − ω^{t−1}|) min(‖z‖, 1) (cos ω^t, sin ω^t) ]
//! φ^t = η φ^{t−1} + (1 − η) ζ^t            Ψ(x) = cos x for x ≤ π/2, else 0
//! ```
//!
//! - ζ: the direction of the group map's descent at the member's cell (its own cell freed);
//! - φ: its heading with inertia η (blended as unit vectors, digest 004 §10 on angles);
//! - z: from the member to its slot, ‖z‖ in cells, ω its direction;
//! - μ_i: the weight of the band B_i the member stands in: i is the ring distance from its cell
//!   to the nearest obstacle, the border, or another member;
//! - υ_max: the member's `max_step`.
//!
//! A group without a formation moves as a free group: μ = 1 everywhere (digest 004 §5.4, ours
//! where the seed is silent). A member outside its map's interior walks straight for its slot
//! (for a free group, the anchor) at full weight. Members decide one after the other in member
//! order, each seeing where those before it will stand (Algorithm 3, lines 26–31).

use glam::DVec2;

use crowdfield_field::{Bias, Coverage, Shape, SubgoalStack};
use crowdfield_steer::{AgentId, GoalId, HandedStep, HeadingRule, SpeedLaw, decide};

use crate::formation::to_world;
use crate::map::{GroupMap, band_weight, chebyshev};
use crate::{Formation, GroupError, GroupSettings, SlotAssignment};

/// The share of the members' radius that obstacles and other agents are grown by in the group
/// map. Grown by the whole radius, a corridor two members wide leaves a free strip one cell (a
/// diameter) wide, which may fall between two rows of cell centres and close the corridor
/// (seven members stood for good before a 1 m gap in the narrow-passage test). Grown by half,
/// the strip is one and a half cells wide and always holds a row of centres; the collision
/// guard keeps the rest of the clearance.
pub const OBSTACLE_GROWTH: f64 = 0.5;

/// Below this descent (potential per cell) a group map is flat where a member stands and the
/// member follows the group's guidance instead. Around a one-metre gap in a wall the map falls
/// by 1e-5 to 1e-4 a cell near the gap and by under 1e-9 two metres from it, where
/// the direction was leftovers of the last relaxations and sent members backwards.
pub const FLAT_DESCENT: f64 = 1e-6;

/// What a group follows.
#[derive(Debug, Clone, PartialEq)]
pub enum Guide {
    /// Nothing: the map stays where it is and members hold their slots.
    Hold,
    /// A crowd goal's guidance, until the anchor reaches its region. `owned`: the group added
    /// the goal for an order and removes it when the order ends.
    Goal {
        /// The goal.
        goal: GoalId,
        /// Whether the group added it (and removes it).
        owned: bool,
    },
    /// Crowd goals one after another (a stroke's sub-goals, waypoints): the anchor follows
    /// `goals[next]`'s guidance and moves on to the next goal when it reaches that goal's
    /// region; the group arrives at the last. `owned`: the group added them and removes them
    /// when the order ends.
    Route {
        /// The goals, in order.
        goals: Vec<GoalId>,
        /// Index of the goal followed now.
        next: usize,
        /// Whether the group added them (and removes them).
        owned: bool,
    },
    /// A leader: the anchor heads for the point `distance` metres behind the leader, through a
    /// goal guided towards it ([`Guidance::Towards`](crowdfield_steer::Guidance::Towards),
    /// owned by the group).
    Leader {
        /// The agent followed.
        leader: AgentId,
        /// The group's goal guided towards the leader.
        goal: GoalId,
        /// How far behind the leader the anchor keeps, in metres.
        distance: f64,
    },
}

impl Guide {
    /// The crowd goal the group follows, if any.
    pub fn goal(&self) -> Option<GoalId> {
        match self {
            Guide::Hold => None,
            Guide::Goal { goal, .. } | Guide::Leader { goal, .. } => Some(*goal),
            Guide::Route { goals, next, .. } => goals.get(*next).copied(),
        }
    }

    /// The goals the group added and must remove when the guide changes.
    pub(crate) fn owned_goals(&self) -> Vec<GoalId> {
        match self {
            Guide::Goal { goal, owned: true } | Guide::Leader { goal, .. } => vec![*goal],
            Guide::Route {
                goals, owned: true, ..
            } => goals.clone(),
            _ => Vec::new(),
        }
    }
}

/// A member's state in its group.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The crowd agent.
    pub(crate) id: AgentId,
    /// Index of its slot.
    pub(crate) slot: usize,
    /// φ: its environment heading with inertia (zero before its first step).
    pub(crate) heading: DVec2,
    /// ω of its last step: the direction to its slot (zero before).
    pub(crate) slot_direction: DVec2,
    /// Position and radius as the step started.
    pub(crate) position: DVec2,
    pub(crate) radius: f64,
    pub(crate) max_step: f64,
    /// Steps spent outside the map's interior in a row.
    pub(crate) outside: u32,
    /// The step at which it settled on its slot after the group arrived.
    pub(crate) settled_at: Option<u64>,
    /// The step handed over last, and where the member stood when it was decided.
    pub(crate) last_step: DVec2,
    pub(crate) last_position: DVec2,
    /// Steps in a row the collision guard held the member (it moved under a fifth of the step
    /// handed over).
    pub(crate) blocked: u32,
}

impl Member {
    pub(crate) fn new(id: AgentId) -> Self {
        Self {
            id,
            slot: 0,
            heading: DVec2::ZERO,
            slot_direction: DVec2::ZERO,
            position: DVec2::ZERO,
            radius: 0.25,
            max_step: 0.35,
            outside: 0,
            settled_at: None,
            last_step: DVec2::ZERO,
            last_position: DVec2::ZERO,
            blocked: 0,
        }
    }

    /// The crowd agent.
    pub fn id(&self) -> AgentId {
        self.id
    }

    /// Index of its slot in [`Group::slots`].
    pub fn slot(&self) -> usize {
        self.slot
    }
}

/// Measures of a group after its last step (see [`crate::measure`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GroupMeasures {
    /// RMS member-to-slot distance, metres (0 for a free group).
    pub slot_distance: f64,
    /// [`crate::measure::formation_error`]: RMS member-to-slot distance over the formation's
    /// radius (0 for a free group).
    pub formation_error: f64,
    /// [`crate::measure::cohesion`]: the farthest member from the centroid over the map's half
    /// size.
    pub cohesion: f64,
    /// [`crate::measure::splits`]: connected parts of the group.
    pub parts: usize,
}

/// One group (see the module doc).
#[derive(Debug, Clone)]
pub struct Group {
    pub(crate) settings: GroupSettings,
    pub(crate) bias: Bias,
    pub(crate) members: Vec<Member>,
    pub(crate) formation: Option<Formation>,
    /// Slots in the formation frame, centred (one per member; empty for a free group).
    pub(crate) frame_slots: Vec<DVec2>,
    /// Slots in the world for the current step.
    pub(crate) slots: Vec<DVec2>,
    pub(crate) guide: Guide,
    pub(crate) anchor: DVec2,
    pub(crate) heading: DVec2,
    /// The heading at the last slot assignment.
    pub(crate) assigned_heading: DVec2,
    pub(crate) reassign: bool,
    pub(crate) map: GroupMap,
    pub(crate) subgoals: SubgoalStack,
    /// Side used this step (the map side, or the keep-together side).
    pub(crate) side: usize,
    pub(crate) arrived: bool,
    /// True while the group's guidance gives no direction this step (arrived, holding, or
    /// close behind its leader).
    pub(crate) standing: bool,
    pub(crate) reported_arrival: bool,
    pub(crate) formation_reached: bool,
    pub(crate) arrived_at: Option<u64>,
    pub(crate) measures: GroupMeasures,
}

impl Group {
    /// Members, in order.
    pub fn members(&self) -> impl ExactSizeIterator<Item = &Member> {
        self.members.iter()
    }

    /// The member agents' ids, in order.
    pub fn member_ids(&self) -> Vec<AgentId> {
        self.members.iter().map(|m| m.id).collect()
    }

    /// The settings.
    pub fn settings(&self) -> &GroupSettings {
        &self.settings
    }

    /// The formation, `None` for a free group.
    pub fn formation(&self) -> Option<&Formation> {
        self.formation.as_ref()
    }

    /// The slots in the world as of the last step (empty for a free group).
    pub fn slots(&self) -> &[DVec2] {
        &self.slots
    }

    /// Each member's slot in the world as of the last step, in member order (`None` for a free
    /// group).
    pub fn member_slots(&self) -> impl Iterator<Item = (AgentId, Option<DVec2>)> + '_ {
        self.members
            .iter()
            .map(|m| (m.id, self.slots.get(m.slot).copied()))
    }

    /// What the group follows.
    pub fn guide(&self) -> &Guide {
        &self.guide
    }

    /// The anchor: the map's and the formation's centre.
    pub fn anchor(&self) -> DVec2 {
        self.anchor
    }

    /// The formation's heading (unit; +y of the formation frame).
    pub fn heading(&self) -> DVec2 {
        self.heading
    }

    /// The group map as of the last step.
    pub fn map(&self) -> &GroupMap {
        &self.map
    }

    /// Whether the anchor has reached the goal's region.
    pub fn has_arrived(&self) -> bool {
        self.arrived
    }

    /// Whether the formation is reached (see [`GroupSettings::formation_tolerance`]).
    pub fn formation_reached(&self) -> bool {
        self.formation_reached
    }

    /// Measures after the last step.
    pub fn measures(&self) -> GroupMeasures {
        self.measures
    }

    /// Every cell's band weight μ (for overlays; see [`GroupMap::band_weights`]).
    pub fn band_weights(&self) -> Vec<f64> {
        let cells: Vec<(usize, usize)> = self
            .members
            .iter()
            .filter_map(|m| self.map.interior_cell(m.position))
            .collect();
        if self.formation.is_none() {
            return vec![1.0; self.map.side() * self.map.side()];
        }
        self.map.band_weights(&cells, &self.settings.bands)
    }

    /// The members' largest radius.
    pub(crate) fn radius(&self) -> f64 {
        self.members.iter().map(|m| m.radius).fold(0.0, f64::max)
    }

    /// The cell size this group's map uses.
    pub(crate) fn cell(&self) -> f64 {
        self.map.cell_size()
    }

    /// Lays out the slots for the current members (formation frame) and checks they fit the
    /// map.
    pub(crate) fn layout(&mut self) -> Result<(), GroupError> {
        self.frame_slots = match &self.formation {
            Some(f) => f.slots(self.members.len(), self.radius())?,
            None => Vec::new(),
        };
        check_fit(
            &self.frame_slots,
            self.members.len(),
            self.settings.map_side,
            self.map.cell_size(),
        )?;
        for (k, m) in self.members.iter_mut().enumerate() {
            m.slot = k;
        }
        self.reassign = true;
        Ok(())
    }

    /// RMS member-to-slot distance (metres) beyond which a reached formation is broken.
    pub(crate) fn break_tolerance(&self) -> f64 {
        if self.settings.break_tolerance > 0.0 {
            self.settings.break_tolerance
        } else {
            2.0 * self.cell()
        }
    }

    /// RMS member-to-slot distance (metres) within which the formation is reached.
    pub(crate) fn formation_tolerance(&self) -> f64 {
        if self.settings.formation_tolerance > 0.0 {
            self.settings.formation_tolerance
        } else {
            0.5 * self.cell()
        }
    }

    /// The members' centroid as the step started.
    pub(crate) fn centroid(&self) -> DVec2 {
        if self.members.is_empty() {
            return self.anchor;
        }
        self.members.iter().map(|m| m.position).sum::<DVec2>() / self.members.len() as f64
    }

    /// Layer 2: the anchor walks `guidance` (a direction, zero to stand), held within the
    /// leash of the centroid; the heading turns to the guidance; slots are placed (and
    /// reassigned where the policy asks).
    /// `side` is the map side this step.
    pub(crate) fn advance_anchor(&mut self, guidance: DVec2, side: usize) {
        let centroid = self.centroid();
        let slowest = self
            .members
            .iter()
            .map(|m| m.max_step)
            .fold(f64::INFINITY, f64::min);
        let speed = if self.settings.speed > 0.0 {
            self.settings.speed
        } else if slowest.is_finite() {
            0.8 * slowest
        } else {
            0.0
        };
        let leash = if self.settings.leash > 0.0 {
            self.settings.leash
        } else {
            2.0 * self.cell()
        };
        if let Some(dir) = guidance.try_normalize() {
            self.heading = dir;
            // The map moves as one agent along the guidance (seed 004 §5.3.2), except where an
            // obstacle larger than the map slid its intermediate goal along the border (last
            // step's map): then towards that goal, round the obstacle (ours).
            let slid = self.map.goal_direction();
            // Members the map cuts off from its goal (the border closes the way round an
            // obstacle beside them): the map moves over the middle of the group, where it holds
            // the most of every member's surroundings (ours).
            let cut_off = self.map.holds_walls()
                && !self.map.goal_cells().is_empty()
                && self.members.iter().any(|m| {
                    self.map.interior_cell(m.position).is_some()
                        && self.map.way_length(m.position).is_none()
                        && !self.map.obstacle_at(m.position)
                });
            // The map's own shortest way to its goal from the anchor, where last step's map
            // holds obstacles.
            let own_way = if self.map.holds_walls() {
                self.map
                    .way_at(self.anchor)
                    .zip(self.map.way_length(self.anchor))
            } else {
                None
            };
            if cut_off {
                let (lo, hi) = self
                    .members
                    .iter()
                    .fold((DVec2::INFINITY, DVec2::NEG_INFINITY), |(lo, hi), m| {
                        (lo.min(m.position), hi.max(m.position))
                    });
                let middle = (lo + hi) * 0.5;
                self.anchor += (middle - self.anchor).clamp_length_max(speed);
            } else {
                // The map moves as one agent along the guidance (seed 004 §5.3.2), held within
                // the leash of the centroid: straight over obstacles it holds (members find
                // their ways round them inside the map, and may split), but never onto one; there,
                // and where an obstacle larger than the map slid its goal along the border, it
                // walks its own shortest way round (ours).
                let straight = {
                    let dir = if self.map.goal_slid() && slid != DVec2::ZERO {
                        slid
                    } else {
                        dir
                    };
                    let ahead = self.anchor + dir * speed;
                    centroid + (ahead - centroid).clamp_length_max(leash)
                };
                let walls = self.map.holds_walls();
                let walk = own_way.map(|(way, _)| self.anchor + way * speed);
                let next = match walk {
                    Some(walk) if self.map.goal_slid() || self.map.obstacle_at(straight) => walk,
                    _ => straight,
                };
                if !(walls && self.map.obstacle_at(next)) {
                    self.anchor = next;
                }
            }
        }
        // Every member stays inside the map where the map can hold them all: the anchor is kept
        // within `hold_reach` of every member on each axis. A group spread wider than that (as
        // it formed) keeps the anchor found; members then come back within reach, and their
        // steps keep them there (`decide_members`), so the map never moves off one of them.
        let reach = hold_reach(side, self.cell());
        if !self.members.is_empty() && reach > 0.0 {
            let (lo, hi) = self
                .members
                .iter()
                .fold((DVec2::NEG_INFINITY, DVec2::INFINITY), |(lo, hi), m| {
                    (lo.max(m.position - reach), hi.min(m.position + reach))
                });
            if lo.cmple(hi).all() {
                self.anchor = self.anchor.clamp(lo, hi);
            }
        }
        if self.heading == DVec2::ZERO {
            self.heading = DVec2::Y;
        }
        self.place_slots();
    }

    /// For member `k`, held by the guard: the position of another held member touching it
    /// (within a fifth of a radius of contact) that lies ahead of it along `way`, if any (ties
    /// go to the later member, so exactly one of two yields).
    fn blocker(&self, k: usize, way: DVec2) -> Option<DVec2> {
        let me = &self.members[k];
        self.members
            .iter()
            .enumerate()
            .filter(|(j, o)| {
                *j != k
                    && o.blocked >= 1
                    && (o.position - me.position).length() <= (o.radius + me.radius) * 1.2
            })
            .find(|(j, o)| {
                let ahead = (o.position - me.position).dot(way);
                ahead > 1e-9 || (ahead.abs() <= 1e-9 && *j > k)
            })
            .map(|(_, o)| o.position)
    }

    /// Places the formation's slots in the world at the anchor and heading, reassigning them
    /// first where the policy asks (an order, or a turn of more than a right angle since the
    /// last assignment).
    pub(crate) fn place_slots(&mut self) {
        self.slots = self
            .frame_slots
            .iter()
            .map(|p| to_world(*p, self.heading, self.anchor))
            .collect();
        if self.slots.len() != self.members.len() {
            return;
        }
        let turned = self.assigned_heading.dot(self.heading) < 0.0;
        let broken =
            !self.formation_reached && self.measures.slot_distance > self.break_tolerance();
        if self.settings.assignment == SlotAssignment::NonCrossing
            && (self.reassign || turned || broken)
        {
            let from: Vec<DVec2> = self.members.iter().map(|m| m.position).collect();
            let slots = crate::assign::least_total_distance(&from, &self.slots);
            for (m, k) in self.members.iter_mut().zip(slots) {
                m.slot = k;
            }
        }
        if self.reassign || turned {
            self.assigned_heading = self.heading;
            self.reassign = false;
        }
    }

    /// Stamps the map for this step up to the members (steps 1–5 of the map's module doc).
    /// `obstacles` are the static and moving shapes near the map, `others` the discs of agents
    /// that are not members.
    pub(crate) fn stamp_map(
        &mut self,
        side: usize,
        obstacles: &[&Shape],
        others: &[(DVec2, f64)],
        guidance: DVec2,
    ) -> Result<(), GroupError> {
        self.side = side;
        self.map.recentre(self.anchor, side)?;
        let radius = self.radius() * OBSTACLE_GROWTH;
        let coverage = self.settings.obstacle_coverage;
        for shape in obstacles {
            self.map.stamp_obstacle(shape, radius, coverage);
        }
        self.map.note_walls();
        for (centre, r) in others {
            // (Cells whose centre the grown disc covers, as `Coverage::Centre` would give.)
            if coverage == Coverage::Centre {
                self.map.stamp_disc(*centre, r + radius);
            } else {
                let disc = Shape::Disc {
                    centre: *centre,
                    radius: *r,
                };
                self.map.stamp_obstacle(&disc, radius, coverage);
            }
        }
        let direction = if self.arrived { DVec2::ZERO } else { guidance };
        let from: Vec<(usize, usize)> = self
            .members
            .iter()
            .filter_map(|m| self.map.interior_cell(m.position))
            .collect();
        self.map
            .project_goal(direction, self.settings.goal_cells, &from);
        self.map.measure_clearance();
        Ok(())
    }

    /// Stamps every member on its cell; returns each member's stamped cell (`None` for members
    /// outside the interior or on a cell that was not free).
    pub(crate) fn stamp_members(&mut self) -> Vec<Option<(usize, usize)>> {
        self.members
            .iter()
            .map(|m| {
                let cell = self.map.interior_cell(m.position)?;
                self.map.stamp_member(cell).then_some(cell)
            })
            .collect()
    }

    /// Layer 1: every member's step (Eq 5.1), in member order, each restamped where it will
    /// stand before the next decides. `stamped` is what [`Self::stamp_members`] returned.
    /// `guidance_at` gives the group's guidance at a point (for members outside the map).
    pub(crate) fn decide_members(
        &mut self,
        mut stamped: Vec<Option<(usize, usize)>>,
        guidance_at: impl Fn(DVec2) -> DVec2,
    ) -> Vec<(AgentId, HandedStep)> {
        let formation = self.formation.is_some() && self.slots.len() == self.members.len();
        let cell = self.cell();
        let bias = self.bias;
        let eta = self.settings.heading_inertia;
        let sweeps = self.settings.restamp_sweeps;
        // Where each member will stand, as cells (those before the current one have decided).
        let mut cells: Vec<Option<(usize, usize)>> = self
            .members
            .iter()
            .map(|m| self.map.interior_cell(m.position))
            .collect();
        // Members the collision guard held last step.
        for m in &mut self.members {
            let wanted = m.last_step.length();
            let moved = (m.position - m.last_position).length();
            if wanted > 0.05 * m.max_step && moved < 0.2 * wanted {
                m.blocked = m.blocked.saturating_add(1);
            } else {
                m.blocked = 0;
            }
        }
        let way = self.heading;
        let mut steps = Vec::with_capacity(self.members.len());

        for k in 0..self.members.len() {
            let m = &self.members[k];
            let slot = if formation {
                Some(self.slots[m.slot])
            } else {
                None
            };
            let interior = cells[k];
            let (displacement, env_heading, slot_direction) = match interior {
                None => {
                    // Outside the map: back along the group's guidance, which leads where the
                    // map went (round walls a straight line would run into), or straight for
                    // the slot (the anchor for a free group) without one.
                    let target = slot.unwrap_or(self.anchor);
                    let z = target - m.position;
                    let way = guidance_at(m.position).try_normalize();
                    let d = match way {
                        Some(way) => way * m.max_step,
                        None => z.normalize_or_zero() * (z.length() / cell).min(1.0) * m.max_step,
                    };
                    (d, m.heading, z.normalize_or_zero())
                }
                Some(c) => {
                    // Free its own cell (Algorithm 3, line 27) and read the map there.
                    if stamped[k] == Some(c) {
                        self.map.free_member(c, &bias);
                    }
                    let ring = cells
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| *j != k)
                        .filter_map(|(_, o)| o.map(|o| chebyshev(o, c)))
                        .fold(self.map.clearance(c.0, c.1), usize::min);
                    // A slot the member cannot stand on (in an obstacle, on the border, off
                    // the map) pulls it nowhere: it follows the map (ours; the seed's walls
                    // do the same through B_1, but a slot beyond a wall also pulls members
                    // two rings from it against the wall, where they stood).
                    let reachable = slot
                        .and_then(|s| self.map.interior_cell(s))
                        .is_some_and(|(x, y)| self.map.clearance(x, y) > 0);
                    let mu = if formation && reachable {
                        band_weight(ring, &self.settings.bands)
                    } else {
                        1.0
                    };
                    let descent = self.map.field().free_descent_at(m.position);

                    // Where the map is flat (behind a wall, far from a narrow way through, the
                    // seed's "achatamento"), its descent is rounding and relaxation leftovers
                    // that may point anywhere: the member reads the group's guidance there
                    // instead, as an individual walker's local map takes its goal from its
                    // global map (ours; the seed's remedy is sub-goals).
                    let flat = descent.length() < FLAT_DESCENT;
                    let descent = if flat {
                        self.map
                            .way_at(m.position)
                            .unwrap_or_else(|| guidance_at(m.position))
                    } else {
                        descent
                    };
                    let (phi, psi_env) = decide(
                        m.heading,
                        descent,
                        HeadingRule::Inertia(eta),
                        SpeedLaw::Cosine,
                    );
                    let environment = phi * (mu * psi_env);
                    let (form, omega) = match slot {
                        Some(s) => {
                            let z = s - m.position;
                            let omega = z.normalize_or_zero();
                            let psi = if m.slot_direction == DVec2::ZERO {
                                1.0
                            } else {
                                omega.dot(m.slot_direction).max(0.0)
                            };
                            let reach = (z.length() / cell).min(1.0);
                            (omega * ((1.0 - mu) * psi * reach), omega)
                        }
                        None => (DVec2::ZERO, DVec2::ZERO),
                    };
                    let d = (environment + form).clamp_length_max(1.0) * m.max_step;
                    (
                        d,
                        if descent == DVec2::ZERO {
                            m.heading
                        } else {
                            phi
                        },
                        omega,
                    )
                }
            };
            // Two members held against each other in a narrow way (each pushing into the
            // other's path, the guard holding both) would stand for good: the one further back
            // along the group's heading steps back off the other, and lets it through (ours;
            // the seed's members move one after the other on a shared map and have no guard).
            // A member the guard held against a wall steps to the centre of its cell first:
            // the map's cells are a member wide and its obstacles grown by half a radius
            // (`OBSTACLE_GROWTH`), so a free row of a corridor two members wide may be too
            // tight for a member off its centre line, which would push into the corner for good.
            let displacement = match (m.blocked >= YIELD_AFTER)
                .then(|| self.blocker(k, way))
                .flatten()
            {
                Some(ahead) => {
                    let off = (m.position - ahead).normalize_or_zero() - way * 0.5;
                    off.normalize_or_zero() * 0.5 * m.max_step
                }
                None if m.blocked >= 1 => {
                    match interior.map(|c| self.map.field().geometry().cell_centre(c.0, c.1)) {
                        Some(centre) if (centre - m.position).length() > 0.02 * cell => {
                            (centre - m.position).clamp_length_max(m.max_step)
                        }
                        _ => displacement,
                    }
                }
                None => displacement,
            };
            // A member inside the map stays inside it (the seed warns that members faster than
            // their map leave it): its step ends at the interior's edge, where the map's next
            // move takes it on.
            let reach = DVec2::splat(hold_reach(self.side, cell));
            let (lo, hi) = (self.anchor - reach, self.anchor + reach);
            let within = m.position.cmpge(lo).all() && m.position.cmple(hi).all();
            let displacement = if within {
                (m.position + displacement).clamp(lo, hi) - m.position
            } else {
                displacement
            };
            // Stamp it where it will stand, restore where it leaves, smooth around both.
            let to = self.map.interior_cell(m.position + displacement);
            if let Some(from) = interior {
                stamped[k] = match to {
                    Some(to) => self.map.move_member(from, to, &bias, sweeps).then_some(to),
                    None => None,
                };
            }
            cells[k] = to;
            let m = &mut self.members[k];
            m.last_step = displacement;
            m.last_position = m.position;
            m.heading = env_heading;
            if displacement != DVec2::ZERO || slot_direction != DVec2::ZERO {
                m.slot_direction = slot_direction;
            }
            let factor = if m.max_step > 0.0 {
                (displacement.length() / m.max_step).min(1.0)
            } else {
                0.0
            };
            steps.push((
                m.id,
                HandedStep {
                    displacement,
                    heading: displacement.normalize_or_zero(),
                    speed_factor: factor,
                },
            ));
        }
        steps
    }
}

/// Steps a member is held by the guard before it yields to a held member ahead of it.
const YIELD_AFTER: u32 = 2;

/// How far from the anchor, on each axis, a point is surely on an interior cell of a map of
/// `side` cells of `cell` metres centred on it: the map snaps to the lattice cell holding the
/// anchor, so its interior reaches `(side/2 − 1)` cells below the anchor and more than
/// `(side/2 − 2)` above.
fn hold_reach(side: usize, cell: f64) -> f64 {
    (side as f64 * 0.5 - 2.0) * cell - 1e-6
}

/// Checks that `slots` (formation frame, metres) or, for a free group, `members` fit a map of
/// `side` cells of `cell` metres: the formation's extent, plus a free ring and the border on
/// each side, for a formation; one member per four interior cells for a free group.
pub(crate) fn check_fit(
    slots: &[DVec2],
    members: usize,
    side: usize,
    cell: f64,
) -> Result<(), GroupError> {
    let needed = if slots.is_empty() {
        // Each member with its B_1 ring takes about four cells of a packed group.
        let interior = (4 * members) as f64;
        interior.sqrt().ceil() as usize + 2
    } else {
        // Turned to any heading, the slots stay within their farthest from the centre.
        let reach = slots.iter().map(|p| p.length()).fold(0.0, f64::max);
        (2.0 * reach / cell).ceil() as usize + 1 + 4
    };
    if needed > side {
        return Err(GroupError::MapTooSmall { side, needed });
    }
    Ok(())
}
