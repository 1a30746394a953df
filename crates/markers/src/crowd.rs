//! The marker back end's step (digest 002 §2.6–§2.12, §3 A3 and A5–A9): agents of a crowd
//! steered by tree paths and markers instead of local maps.
//!
//! A [`MarkerCrowd`] keeps, for each agent given to it (by [`AgentId`]; the agents themselves
//! are the crowd's), an [`Order`] and the state that decides its steps: a [`TreePath`] and the
//! node it walks to, or its direct motion. Each step ([`MarkerCrowd::step`]) reads every
//! agent's position (marker agents and any other: they see each other) and returns the marker
//! agents' displacements:
//!
//! 1. Edits of the marker set since the last step reach the trees (G18): erased ground kills
//!    the nodes on it, sprayed markers can be grown over.
//! 2. Aims: a goal point ([`Order::Seek`], the crowd goal for [`Order::Goals`]), a target that
//!    moves ([`Order::Pursue`], [`Order::Surround`]: the tree is cut where the target crosses it
//!    and pruned beyond R_d, A4), a threat to leave ([`Order::Escape`], Eq. 13), a formation
//!    shape (an automatic goal inside its convex hull, then direct motion, A6).
//! 3. One growth iteration per tree (G6), in parallel; surrounding pursuers of one target
//!    grow one after the other in id order over shared claims, so their trees hold disjoint
//!    markers (G17).
//! 4. Motion: β = speed · dt along the tree towards the next node (Eq. 9), choosing at key
//!    positions (A3), or towards the weighted markers of the personal space (Eqs. 10–12) with
//!    the formation (Eq. 14) and alignment (§2.11) weights.
//! 5. In [`Mode::Groups`], d_enf (Eq. 8, [`Enforcement`]); in [`Mode::Crowd`], marker
//!    reservation instead (A9): an agent moves to its next node only holding all of that node's
//!    markers, taken atomically in id order, and waits otherwise; a wait past
//!    [`MarkerCrowdSettings::wait_limit`] regrows its way round the markers others hold (G11).
//!
//! [`MarkerCrowd::drive`] runs a step over a [`Crowd`]: it reads the positions and goals there
//! and hands the steps over to agents with [`Steering::External`], whose collision guard,
//! states and events are every agent's.

use std::collections::{BTreeMap, HashMap};

use crowdfield_steer::{AgentGrid, AgentId, Crowd, HandedStep, Steering};
use glam::DVec2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::personal::{Candidate, MIN_DISTANCE, Owners, PERSONAL_RADIUS, Split};
use crate::tree::{Aim, Claims, IdMap, NodeId, Sector, TreePath, TreeSettings};
use crate::{Edit, MarkerError, MarkerId, MarkerSet, Terrain};

/// What a marker agent does (digest 002 §3 A3, A5–A7).
#[derive(Debug, Clone, PartialEq)]
pub enum Order {
    /// Walk a tree path to a point (goal-based motion, Eq. 9).
    Seek(DVec2),
    /// Walk a tree path to the agent's current goal in the crowd (its region's centre); the
    /// crowd judges arrival and hands out the next goal.
    Goals,
    /// Follow another agent, regrowing where it crosses the path (§5.1).
    Pursue(AgentId),
    /// Pursue a target together with every other agent surrounding it: their trees hold
    /// disjoint markers, so they come from different sides (§5.1).
    Surround(AgentId),
    /// Leave the circle of these followers (Eq. 13).
    Escape(Vec<AgentId>),
    /// Fill the formation shape sprayed with marker tag `shape` (§5.2, Eq. 14); with a mask,
    /// align inside it too (§7, Fig. 10).
    Formation {
        /// The tag of the shape's markers.
        shape: u32,
        /// An alignment mask, by index in [`MarkerCrowd::masks`].
        mask: Option<usize>,
    },
    /// Direct motion over an alignment mask (§5.3).
    Align(usize),
}

/// An alignment mask (digest 002 §2.11, G14): the markers within half its width of its lines
/// weigh their distance from the agent.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub enum Mask {
    /// Horizontal and vertical lines `spacing` apart through `origin`.
    Grid {
        /// A crossing of two lines.
        origin: DVec2,
        /// Metres between lines (the digest's default: 1.0).
        spacing: f64,
        /// Line width, metres (0.2).
        width: f64,
    },
    /// Segments.
    Lines {
        /// Each segment's ends.
        segments: Vec<(DVec2, DVec2)>,
        /// Line width, metres.
        width: f64,
    },
}

impl Mask {
    /// Whether `p` lies on the mask.
    #[inline]
    pub fn contains(&self, p: DVec2) -> bool {
        match self {
            Mask::Grid {
                origin,
                spacing,
                width,
            } => {
                // In units of the spacing: one division, then products. The distance to the
                // nearest whole number takes its floor by a cast (a call to the library's
                // floor per marker was a tenth of the direct step's time).
                let unit = 1.0 / *spacing;
                let q = (p - *origin) * unit;
                let near = |v: f64| (v - fast_floor(v + 0.5)).abs();
                near(q.x).min(near(q.y)) <= width * 0.5 * unit
            }
            Mask::Lines { segments, width } => segments.iter().any(|(a, b)| {
                let ab = *b - *a;
                let t = ((p - *a).dot(ab) / ab.length_squared().max(1e-12)).clamp(0.0, 1.0);
                (*a + ab * t - p).length() <= width * 0.5
            }),
        }
    }

    fn validate(&self) -> Result<(), MarkerError> {
        let ok = match self {
            Mask::Grid {
                origin,
                spacing,
                width,
            } => origin.is_finite() && spacing.is_finite() && *spacing > 0.0 && width.is_finite(),
            Mask::Lines { segments, width } => {
                width.is_finite() && segments.iter().all(|(a, b)| a.is_finite() && b.is_finite())
            }
        };
        if ok
            && !matches!(self, Mask::Grid { width, .. } | Mask::Lines { width, .. } if *width <= 0.0)
        {
            Ok(())
        } else {
            Err(MarkerError::BadSetting(
                "a mask needs finite lines, a positive spacing and a positive width",
            ))
        }
    }
}

/// How close agents are kept apart in group modes (digest 002 §2.6, G8).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Enforcement {
    /// Each agent of a pair closer than t_min moves (t_min − d)/2 away from the other (a
    /// random way when they coincide): the pair ends t_min apart (Treuille's projection).
    #[default]
    Projection,
    /// Eq. 8 as printed: half the separation, averaged over the close agents.
    Literal,
    /// None (the crowd's collision guard alone keeps bodies apart).
    Off,
}

/// Which markers of its personal space an agent in direct motion uses.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PersonalSpace {
    /// Those within R nearer it than any other agent (a Voronoi split: no marker has two
    /// users, so agents spread over a shape).
    #[default]
    Exclusive,
    /// Every marker within R, as the seed has it, with its competition rule for alignment
    /// weights (the nearest agent weighs a marker with the sum of everyone's weights).
    Shared,
}

/// How surrounding pursuers keep to their own ground (seed 002 §5.1; digest 002 G17).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SurroundRule {
    /// Disjoint trees, and near the target (within
    /// [`MarkerCrowdSettings::surround_radius`]) each pursuer keeps to its own slice of N equal
    /// slices round it, the slices handed out in the order the pursuers stand round it: they
    /// come from every side.
    #[default]
    Sectors,
    /// Disjoint trees only, first come first served (the seed's rule): the pursuers come from
    /// different sides, often not opposite ones.
    FirstCome,
}

/// Collision handling: the seed's group mode or its crowd mode (digest 002 §2.6, §2.12).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// d_enf keeps agents t_min apart.
    #[default]
    Groups,
    /// Marker reservation along the path nodes, no d_enf (needs A_r ≥ α/2).
    Crowd,
}

/// Settings of the marker back end (defaults: the seed's, digest 002 §2.13).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MarkerCrowdSettings {
    /// How trees grow.
    pub tree: TreeSettings,
    /// Walking speed, m/s (1.2: the seed's β = 0.05 m a frame at 24 frames a second).
    pub speed: f64,
    /// Seconds per step (1/24).
    pub dt: f64,
    /// Personal space R, metres (1.2).
    pub personal_radius: f64,
    /// Which markers of it direct motion uses.
    pub personal_space: PersonalSpace,
    /// t_min, metres (0.5).
    pub min_distance: f64,
    /// d_enf's form.
    pub enforcement: Enforcement,
    /// Groups (d_enf) or crowd (reservation).
    pub mode: Mode,
    /// Formation weight w_max (10, at least 1).
    pub w_max: f64,
    /// Steps a crowd agent waits for its next node's markers before it regrows round them
    /// (48: 2 s at 24 steps a second, G11).
    pub wait_limit: u32,
    /// Direct motion slows where its markers pull evenly (G12: the step scaled by
    /// min(1, ‖m_d‖ / (Σ w · 0.1 m))); off, a full step every frame as printed.
    pub settle: bool,
    /// How near its target a surrounding pursuer's tree must grow before the pursuer walks
    /// straight at it, metres (A_r, 1.2: the last nodes of the pursuers' disjoint trees then
    /// lie round the target rather than all on the side they came from).
    pub surround_reach: f64,
    /// A mask marker's weight per metre of its distance from the agent (digest 002 §2.11:
    /// w = dist(I, k); G14 leaves the unit open). 100: distance in centimetres. In metres a
    /// mask marker inside R (at most 1.2 m away) would weigh less than a ground marker's 1 and
    /// the lines would push agents off them.
    pub align_scale: f64,
    /// How surrounding pursuers share the ground.
    pub surround: SurroundRule,
    /// How far round the target the slices of [`SurroundRule::Sectors`] reach, metres (2α).
    pub surround_radius: f64,
    /// Seed of every agent's random stream (with its id).
    pub seed: u64,
}

impl Default for MarkerCrowdSettings {
    fn default() -> Self {
        Self {
            tree: TreeSettings::default(),
            speed: 1.2,
            dt: 1.0 / 24.0,
            personal_radius: PERSONAL_RADIUS,
            personal_space: PersonalSpace::Exclusive,
            min_distance: MIN_DISTANCE,
            enforcement: Enforcement::Projection,
            mode: Mode::Groups,
            w_max: 10.0,
            wait_limit: 48,
            settle: true,
            surround_reach: crate::tree::ACTION_RADIUS,
            align_scale: 100.0,
            surround: SurroundRule::Sectors,
            surround_radius: 2.0 * crate::tree::SEGMENT,
            seed: 0,
        }
    }
}

impl MarkerCrowdSettings {
    /// The seed's crowd mode with its experiments' A_r = α/2 (digest 002 G1: "crowd-literal").
    pub fn crowd_literal() -> Self {
        let mut s = Self {
            mode: Mode::Crowd,
            ..Self::default()
        };
        s.tree.action_radius = s.tree.segment / 2.0;
        s.tree.restriction = s.tree.segment;
        s
    }

    /// β, the step length: speed × dt.
    pub fn step_length(&self) -> f64 {
        self.speed * self.dt
    }

    /// Checks the ranges (and, in crowd mode, A_r ≥ α/2).
    pub fn validate(&self) -> Result<(), MarkerError> {
        self.tree.validate()?;
        let positive = [
            self.speed,
            self.dt,
            self.personal_radius,
            self.min_distance,
            self.surround_reach,
            self.surround_radius,
            self.align_scale,
        ];
        if positive.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(MarkerError::BadSetting(
                "speed, dt, personal radius and t_min must be positive and finite",
            ));
        }
        if !(self.w_max.is_finite() && self.w_max >= 1.0) {
            return Err(MarkerError::BadSetting("w_max must be at least 1"));
        }
        if self.mode == Mode::Crowd && self.tree.action_radius < self.tree.segment / 2.0 {
            return Err(MarkerError::BadSetting(
                "crowd mode needs A_r ≥ α/2 (crossing paths must share markers)",
            ));
        }
        Ok(())
    }
}

/// Where a marker agent stands in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Walking a tree path (goal-based motion).
    Tree,
    /// Direct motion in a formation shape.
    Formation,
    /// Direct motion with alignment markers in reach.
    Aligning,
    /// At its goal (or with none).
    Arrived,
}

/// Something a step did that a host or a test may want to know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MarkerEvent {
    /// An agent changed phase.
    Phase {
        /// Who.
        agent: AgentId,
        /// Its new phase.
        phase: Phase,
    },
    /// A pursued target crossed an agent's path, which was cut there and regrows from it.
    Crossed {
        /// The pursuer.
        agent: AgentId,
        /// Where.
        at: DVec2,
    },
    /// An agent's tree reached its aim.
    Reached {
        /// Whose.
        agent: AgentId,
        /// Growth iterations it took.
        iterations: u32,
    },
    /// A group-mode agent made no way towards its next node for the wait limit and regrew
    /// its tree from where it stands.
    Stalled {
        /// Who.
        agent: AgentId,
    },
    /// A crowd-mode agent waited past the limit and regrew its way.
    Deadlock {
        /// Who.
        agent: AgentId,
    },
}

/// The marker back end's decision state of one crowd agent.
#[derive(Debug, Clone)]
pub struct MarkerState {
    order: Order,
    tree: Option<TreePath>,
    at: NodeId,
    next: Option<NodeId>,
    phase: Phase,
    /// The formation's automatic goal.
    target: Option<DVec2>,
    direct: bool,
    waited: u32,
    held: Vec<MarkerId>,
    holds_next: bool,
    rng: ChaCha8Rng,
    seed: u64,
    /// This step's plan: the displacement before d_enf and reservation.
    plan: DVec2,
    /// This step's aim (a moving goal's latest position; the tree's aim lags it by up to
    /// a body radius).
    aim: Option<Aim>,
    /// A pursuer within reach of its target and in sight of it, walking straight at it
    /// without a tree.
    chasing: bool,
    /// The node it walks to and its least distance from it so far.
    mark: Option<(NodeId, f64)>,
    /// Steps without coming nearer it.
    stall: u32,
    /// Whether its last direct step saw its formation's shape.
    saw_shape: bool,
}

impl MarkerState {
    /// Its order.
    pub fn order(&self) -> &Order {
        &self.order
    }
    /// Its tree path, when it walks one.
    pub fn tree(&self) -> Option<&TreePath> {
        self.tree.as_ref()
    }
    /// The node it walks to.
    pub fn next(&self) -> Option<NodeId> {
        self.next
    }
    /// The node it last reached.
    pub fn at(&self) -> NodeId {
        self.at
    }
    /// Its phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// The markers it holds (crowd mode).
    pub fn held(&self) -> &[MarkerId] {
        &self.held
    }
    /// Whether it waits for markers others hold (crowd mode).
    pub fn is_waiting(&self) -> bool {
        self.waited > 0
    }
    /// The formation's automatic goal, once chosen.
    pub fn formation_goal(&self) -> Option<DVec2> {
        self.target
    }
}

/// The marker back end (see the module doc).
#[derive(Debug, Clone)]
pub struct MarkerCrowd {
    settings: MarkerCrowdSettings,
    states: BTreeMap<AgentId, MarkerState>,
    masks: Vec<Mask>,
    /// Which markers lie on each mask (by index in `masks`).
    mask_marks: Vec<MaskMarks>,
    /// Shared claims of each surrounded target's pursuers.
    claims: BTreeMap<AgentId, Claims>,
    /// Each surrounded target's pursuers and the middles of their slices.
    sectors: BTreeMap<AgentId, (Vec<AgentId>, Vec<f64>)>,
    /// Crowd mode: who holds each marker.
    holders: IdMap<MarkerId, AgentId>,
    events: Vec<MarkerEvent>,
    edits_seen: usize,
    /// The [`MarkerSet::build_id`] of the set of the last step.
    set_seen: Option<u64>,
    steps: u64,
    max_iterations: u32,
}

/// One agent as a step reads it: every agent of the crowd, marker or not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sensed {
    /// Which.
    pub id: AgentId,
    /// Where.
    pub position: DVec2,
    /// Its current goal point (for [`Order::Goals`]).
    pub goal: Option<DVec2>,
}

impl MarkerCrowd {
    /// An empty back end with `settings` (checked).
    pub fn new(settings: MarkerCrowdSettings) -> Result<Self, MarkerError> {
        settings.validate()?;
        let mut tree = settings.tree;
        tree.store_reservations = settings.mode == Mode::Crowd;
        Ok(Self {
            settings: MarkerCrowdSettings { tree, ..settings },
            states: BTreeMap::new(),
            masks: Vec::new(),
            mask_marks: Vec::new(),
            claims: BTreeMap::new(),
            sectors: BTreeMap::new(),
            holders: IdMap::default(),
            events: Vec::new(),
            edits_seen: 0,
            set_seen: None,
            steps: 0,
            max_iterations: 0,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &MarkerCrowdSettings {
        &self.settings
    }

    /// Adds an alignment mask; returns its index for [`Order::Align`] and
    /// [`Order::Formation`].
    pub fn add_mask(&mut self, mask: Mask) -> Result<usize, MarkerError> {
        mask.validate()?;
        self.masks.push(mask);
        self.mask_marks.push(MaskMarks::default());
        Ok(self.masks.len() - 1)
    }

    /// The masks, by index.
    pub fn masks(&self) -> &[Mask] {
        &self.masks
    }

    /// Gives agent `id` an order (replacing any earlier one, its tree dropped). Refuses a
    /// seek goal off the walkable ground, a mask it does not know, a target that is the agent
    /// itself, and a set with markers on forbidden ground (seed 003's, for BioCrowds: trees
    /// would grow over it).
    pub fn insert(
        &mut self,
        set: &MarkerSet,
        id: AgentId,
        order: Order,
    ) -> Result<(), MarkerError> {
        check_set(set)?;
        match &order {
            Order::Seek(g) => {
                if !g.is_finite() {
                    return Err(MarkerError::NonFinite("a seek goal"));
                }
                if !set.is_walkable(*g) {
                    return Err(MarkerError::GoalNotWalkable { x: g.x, y: g.y });
                }
            }
            Order::Pursue(t) | Order::Surround(t) if *t == id => {
                return Err(MarkerError::BadOrder("an agent cannot pursue itself"));
            }
            Order::Escape(from) if from.is_empty() || from.contains(&id) => {
                return Err(MarkerError::BadOrder(
                    "an escape needs followers other than the agent",
                ));
            }
            Order::Align(m) | Order::Formation { mask: Some(m), .. } if *m >= self.masks.len() => {
                return Err(MarkerError::BadOrder("unknown alignment mask"));
            }
            _ => {}
        }
        self.release(id);
        let seed = self.settings.seed ^ (u64::from(id.0) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.states.insert(
            id,
            MarkerState {
                order,
                tree: None,
                at: NodeId(0),
                next: None,
                phase: Phase::Tree,
                target: None,
                direct: false,
                waited: 0,
                held: Vec::new(),
                holds_next: false,
                rng: ChaCha8Rng::seed_from_u64(seed),
                seed,
                plan: DVec2::ZERO,
                aim: None,
                chasing: false,
                mark: None,
                stall: 0,
                saw_shape: true,
            },
        );
        Ok(())
    }

    /// Takes agent `id` out of the back end (its markers and claims given back).
    pub fn remove(&mut self, id: AgentId) -> Option<MarkerState> {
        self.release(id);
        self.states.remove(&id)
    }

    fn release(&mut self, id: AgentId) {
        if let Some(s) = self.states.get_mut(&id) {
            for m in s.held.drain(..) {
                if self.holders.get(&m) == Some(&id) {
                    self.holders.remove(&m);
                }
            }
            if let Order::Surround(t) = &s.order
                && let Some(claims) = self.claims.get_mut(t)
            {
                claims.retain(|_, tag| *tag != id.0);
            }
        }
    }

    /// One agent's state.
    pub fn state(&self, id: AgentId) -> Option<&MarkerState> {
        self.states.get(&id)
    }

    /// Every agent's state, by id.
    pub fn states(&self) -> impl Iterator<Item = (AgentId, &MarkerState)> {
        self.states.iter().map(|(id, s)| (*id, s))
    }

    /// How many agents it steers.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether it steers none.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Who holds `marker` (crowd mode).
    pub fn holder(&self, marker: MarkerId) -> Option<AgentId> {
        self.holders.get(&marker).copied()
    }

    /// Every held marker with its holder (crowd mode).
    pub fn holders(&self) -> impl Iterator<Item = (MarkerId, AgentId)> + '_ {
        self.holders.iter().map(|(m, a)| (*m, *a))
    }

    /// The events since the last call.
    pub fn take_events(&mut self) -> Vec<MarkerEvent> {
        std::mem::take(&mut self.events)
    }

    /// The most growth iterations a tree has taken to reach its aim (the seed saw at most 49).
    pub fn max_iterations(&self) -> u32 {
        self.max_iterations
    }

    /// Steps run.
    pub fn step_count(&self) -> u64 {
        self.steps
    }

    /// Runs one step over `agents` (every agent of the crowd, marker agents among them) and
    /// returns the marker agents' displacements, by id. An agent of the back end absent from
    /// `agents`, or at a position that is not finite, gets none.
    pub fn step(&mut self, set: &MarkerSet, agents: &[Sensed]) -> Vec<(AgentId, DVec2)> {
        self.steps += 1;
        self.catch_up(set);
        let index: IdMap<AgentId, usize> =
            agents.iter().enumerate().map(|(i, a)| (a.id, i)).collect();
        let points: Vec<Option<(DVec2, f64)>> = agents
            .iter()
            .map(|a| a.position.is_finite().then_some((a.position, 0.0)))
            .collect();
        let cell = self
            .settings
            .personal_radius
            .max(self.settings.min_distance);
        let grid = AgentGrid::build(&points, cell);
        let beta = self.settings.step_length();
        let settings = self.settings;
        let mut shapes: BTreeMap<u32, (Vec<DVec2>, Vec<DVec2>)> = BTreeMap::new();

        // Aims (sequential: the formation goal reads the shape's markers once a step).
        let mut aims: Vec<(AgentId, Option<Aim>, bool)> = Vec::with_capacity(self.states.len());
        let ids: Vec<AgentId> = self.states.keys().copied().collect();
        for id in ids {
            let s = self.states.get_mut(&id).expect("listed");
            let Some(&i) = index.get(&id) else {
                aims.push((id, None, false));
                continue;
            };
            let p = agents[i].position;
            if !p.is_finite() {
                aims.push((id, None, false));
                continue;
            }
            let at = |t: &AgentId| {
                index
                    .get(t)
                    .map(|&j| agents[j].position)
                    .filter(|q| q.is_finite())
            };
            let (aim, moving) = match &s.order {
                Order::Seek(g) => (Some(Aim::Towards(*g)), false),
                Order::Goals => {
                    let goal = agents[i].goal.filter(|g| g.is_finite());
                    if goal.is_none() {
                        // Past its last goal: it stands.
                        s.tree = None;
                        s.next = None;
                    }
                    (goal.map(Aim::Towards), false)
                }
                Order::Pursue(t) | Order::Surround(t) => (at(t).map(Aim::Towards), true),
                Order::Escape(from) => {
                    let qs: Vec<DVec2> = from.iter().filter_map(at).collect();
                    if qs.is_empty() {
                        (None, true)
                    } else {
                        let c = qs.iter().sum::<DVec2>() / qs.len() as f64;
                        let radius = qs.iter().map(|q| (*q - c).length()).fold(0.0, f64::max);
                        (Some(Aim::AwayFrom { centre: c, radius }), true)
                    }
                }
                Order::Formation { shape, .. } => {
                    let tag = *shape;
                    // In direct motion the last step's look round tells.
                    let mut sees = s.direct && s.saw_shape;
                    if !s.direct {
                        set.for_each_within(p, settings.personal_radius, |_, m| {
                            sees |= m.tag == Some(tag);
                        });
                    }
                    if sees && !s.direct {
                        s.direct = true;
                        s.tree = None;
                        s.phase = Phase::Formation;
                        self.events.push(MarkerEvent::Phase {
                            agent: id,
                            phase: Phase::Formation,
                        });
                    } else if !sees && s.direct {
                        // Pushed out of sight of the shape (ours): walk back to a new goal in
                        // it.
                        s.direct = false;
                        s.target = None;
                        s.phase = Phase::Tree;
                        self.events.push(MarkerEvent::Phase {
                            agent: id,
                            phase: Phase::Tree,
                        });
                    }
                    if !s.direct && s.target.is_none() {
                        let (markers, hull) = shapes.entry(tag).or_insert_with(|| {
                            let markers: Vec<DVec2> = set
                                .markers()
                                .filter(|(_, m)| m.tag == Some(tag))
                                .map(|(_, m)| m.position)
                                .collect();
                            let hull = convex_hull(&markers);
                            (markers, hull)
                        });
                        s.target = formation_goal(
                            markers,
                            hull,
                            set,
                            tag,
                            settings.personal_radius,
                            &mut s.rng,
                        );
                    }
                    (
                        if s.direct {
                            None
                        } else {
                            s.target.map(Aim::Towards)
                        },
                        false,
                    )
                }
                Order::Align(_) => {
                    s.direct = true;
                    (None, false)
                }
            };
            // A moving goal in sight and within reach: straight at it, the tree dropped (and a
            // surrounding pursuer's claims given back: it stands at the target now).
            let reach = match s.order {
                Order::Surround(_) => settings.surround_reach,
                _ => settings.tree.reach,
            };
            s.chasing = matches!((&s.order, aim), (Order::Pursue(_) | Order::Surround(_), Some(Aim::Towards(g)))
                if (g - p).length() <= reach && set.sees(p, g));
            if s.chasing {
                if s.tree.take().is_some()
                    && let Order::Surround(t) = s.order
                    && let Some(claims) = self.claims.get_mut(&t)
                {
                    claims.retain(|_, tag| *tag != id.0);
                }
                s.next = None;
                s.aim = aim;
                aims.push((id, None, false));
                continue;
            }
            // A new tree where there is none, where the agent lost its way (the node ahead
            // died and the one behind is retired), or a fixed aim changed; a moving aim
            // retargets.
            if let Some(aim) = aim {
                // Group mode: an agent that has not come nearer the node it walks to for
                // `wait_limit` steps (two agents each standing on the other's way, held apart
                // by d_enf) regrows its tree from where it stands (ours; crowd mode has its
                // own rule).
                let mut stalled = false;
                if settings.mode == Mode::Groups
                    && let (Some(t), Some(next)) = (&s.tree, s.next)
                    && let Some(node) = t.node(next)
                {
                    let d = (node.position - p).length();
                    if s.mark.is_none_or(|(n, m)| n != next || d < m - beta * 0.25) {
                        s.mark = Some((next, d));
                        s.stall = 0;
                    } else {
                        s.stall += 1;
                        stalled = s.stall > settings.wait_limit;
                    }
                }
                if stalled {
                    s.stall = 0;
                    s.mark = None;
                    self.events.push(MarkerEvent::Stalled { agent: id });
                }
                let rebuild = stalled
                    || match &s.tree {
                        None => true,
                        Some(t) => {
                            (!moving && t.aim() != aim)
                                || (s.next.is_none() && t.node(s.at).is_none_or(|n| !n.alive))
                        }
                    };
                if rebuild {
                    for m in s.held.drain(..) {
                        if self.holders.get(&m) == Some(&id) {
                            self.holders.remove(&m);
                        }
                    }
                    let mut tree = settings.tree;
                    // A fresh stream for every tree the agent grows.
                    s.seed = s.seed.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(1);
                    if matches!(s.order, Order::Surround(_)) {
                        tree.reach = settings.surround_reach;
                    }
                    s.tree = TreePath::new(tree, set, p, aim, s.seed, id.0).ok();
                    s.at = NodeId(0);
                    s.next = None;
                    s.holds_next = false;
                    if s.phase == Phase::Arrived {
                        s.phase = Phase::Tree;
                    }
                }
            }
            // Reaching the next node.
            let reached = match (s.next, s.tree.as_ref()) {
                (Some(next), Some(tree)) => tree
                    .node(next)
                    .filter(|n| (n.position - p).length() <= beta + 1e-9)
                    .map(|n| (next, n.reservation.clone())),
                _ => None,
            };
            if let Some((next, keep)) = reached {
                if settings.mode == Mode::Crowd
                    && let Some(tree) = s.tree.as_mut()
                {
                    tree.commit(s.at, next);
                }
                s.at = next;
                s.next = None;
                if settings.mode == Mode::Crowd {
                    let mut held = std::mem::take(&mut s.held);
                    held.retain(|m| {
                        let stay = keep.binary_search(m).is_ok();
                        if !stay && self.holders.get(m) == Some(&id) {
                            self.holders.remove(m);
                        }
                        stay
                    });
                    s.held = held;
                    s.holds_next = false;
                }
            }
            s.aim = aim;
            aims.push((id, aim, moving));
        }

        // Moving aims: cut where the target crossed, retarget beyond R_d.
        for &(id, aim, moving) in &aims {
            let (Some(aim), true) = (aim, moving) else {
                continue;
            };
            let s = self.states.get_mut(&id).expect("listed");
            let p = agents[index[&id]].position;
            let Some(tree) = s.tree.as_mut() else {
                continue;
            };
            if let (Aim::Towards(g), Aim::Towards(old)) = (aim, tree.aim()) {
                if (g - old).length() <= 0.25 {
                    continue;
                }
                // The target crossed the way ahead: the first segment within a body radius.
                let way = way_ahead(tree, p, s.at, s.next);
                if let Some((from, point)) = way.iter().find_map(|&(from, a, b)| {
                    let q = closest_on(a, b, g);
                    ((q - g).length() <= 0.25).then_some((from, q))
                }) && let Some(cut) = tree.cut(set, from, point)
                {
                    let _ = tree.retarget(set, aim, cut);
                    if from == s.at || Some(from) == s.next {
                        s.next = if from == s.at { Some(cut) } else { s.next };
                    }
                    self.events.push(MarkerEvent::Crossed {
                        agent: id,
                        at: point,
                    });
                    continue;
                }
            } else if let (Aim::AwayFrom { centre, .. }, Aim::AwayFrom { centre: old, .. }) =
                (aim, tree.aim())
                && (centre - old).length() <= settings.tree.recompute
            {
                continue;
            }
            let walk = s.next.unwrap_or(s.at);
            let _ = tree.retarget(set, aim, walk);
            if s.next
                .is_some_and(|n| tree.node(n).is_none_or(|n| !n.alive))
            {
                s.next = None;
            }
        }

        self.assign_sectors(&index, agents);

        // Growth: one iteration per tree, surrounding pursuers one after the other.
        let mut states: Vec<(&AgentId, &mut MarkerState)> = self.states.iter_mut().collect();
        // Few agents are not worth the threads' handshakes (results are the same either way).
        let parallel = states.len() >= 64;
        let grow = |(_, s): &mut (&AgentId, &mut MarkerState)| {
            if matches!(s.order, Order::Surround(_)) {
                return;
            }
            if let Some(tree) = s.tree.as_mut() {
                tree.grow(set, None);
            }
        };
        if parallel {
            states.par_iter_mut().for_each(grow);
        } else {
            states.iter_mut().for_each(grow);
        }
        for (_, s) in states.iter_mut() {
            if let (Order::Surround(t), Some(tree)) = (&s.order, s.tree.as_mut()) {
                let claims = self.claims.entry(*t).or_default();
                tree.release_claims(claims);
                tree.grow(set, Some(claims));
            }
        }

        // Personal space for the agents in direct motion (Exclusive): one walk over the
        // marker index, band by band, summing each agent's Eqs. 10–11 as the markers come.
        // The masks in use learn which of the set's markers lie on them (once; new markers as
        // they come).
        for (_, s) in &states {
            if s.direct
                && let Order::Align(m) | Order::Formation { mask: Some(m), .. } = s.order
            {
                self.mask_marks[m].update(&self.masks[m], set, self.edits_seen);
            }
        }
        let marks = &self.mask_marks;
        let sums = if settings.personal_space == PersonalSpace::Exclusive {
            let mut kinds: Vec<Option<Kind>> = vec![None; agents.len()];
            for (id, s) in &states {
                if let Some(&i) = index.get(*id)
                    && s.direct
                    && agents[i].position.is_finite()
                {
                    kinds[i] = Some(Kind::of(&s.order, marks));
                }
            }
            direct_sums(set, agents, &kinds, &settings, parallel)
        } else {
            Vec::new()
        };

        // Motion plans.
        let plan = |(id, s): &mut (&AgentId, &mut MarkerState)| {
            s.plan = DVec2::ZERO;
            let Some(&i) = index.get(id) else {
                return;
            };
            let p = agents[i].position;
            if !p.is_finite() {
                return;
            }
            if s.direct {
                (s.plan, s.saw_shape) = match sums.get(i) {
                    Some(sum) => sum.step(&s.order, &settings),
                    None => shared_step(s, p, i, set, &grid, marks, &settings),
                };
                return;
            }
            if let (true, Some(Aim::Towards(g))) = (s.chasing, s.aim) {
                // Up to t_min from the target: a pursuer that caught it does not push it on.
                let d = g - p;
                let room = (d.length() - settings.min_distance).max(0.0);
                s.plan = d.normalize_or_zero() * room.min(beta);
                return;
            }
            let Some(tree) = s.tree.as_mut() else {
                return;
            };
            if s.next.is_none() {
                // In crowd mode the branches stay until the agent leaves its node: while it
                // waits for one branch's markers it may take another.
                s.next = if settings.mode == Mode::Crowd {
                    tree.rank(s.at).first().copied()
                } else {
                    tree.choose(s.at)
                };
            }
            let target = match s.next.and_then(|n| tree.node(n)) {
                Some(node) => node.position,
                None => {
                    // At the goal node: chase a moving goal, else stay.
                    if tree.goal() == Some(s.at) {
                        match (&s.order, tree.aim()) {
                            (Order::Pursue(_) | Order::Surround(_), Aim::Towards(g)) => g,
                            _ => p,
                        }
                    } else {
                        p
                    }
                }
            };
            let d = target - p;
            let step = if d.length() > beta {
                d * (beta / d.length())
            } else {
                d
            };
            s.plan = step;
        };
        if parallel {
            states.par_iter_mut().for_each(plan);
        } else {
            states.iter_mut().for_each(plan);
        }
        drop(states);

        // Phases and reached aims.
        for (&id, s) in &mut self.states {
            let Some(&i) = index.get(&id) else {
                continue;
            };
            let p = agents[i].position;
            if let Some(tree) = &s.tree
                && let Some(goal) = tree.goal()
            {
                if tree.node(goal).is_some_and(|n| n.born == tree.iterations())
                    && s.phase == Phase::Tree
                {
                    self.max_iterations = self.max_iterations.max(tree.iterations());
                }
                let fixed = matches!(
                    s.order,
                    Order::Seek(_) | Order::Goals | Order::Formation { .. }
                );
                if fixed
                    && s.at == goal
                    && tree
                        .node(goal)
                        .is_some_and(|n| (n.position - p).length() <= beta + 1e-9)
                    && s.phase == Phase::Tree
                {
                    s.phase = Phase::Arrived;
                    self.events.push(MarkerEvent::Phase {
                        agent: id,
                        phase: Phase::Arrived,
                    });
                }
            }
            if let (Order::Formation { mask: Some(_), .. }, Phase::Formation) = (&s.order, s.phase)
                && s.direct
                && s.plan != DVec2::ZERO
            {
                let mask = match &s.order {
                    Order::Formation { mask: Some(m), .. } => &self.masks[*m],
                    _ => unreachable!(),
                };
                let mut near = false;
                set.for_each_within(p, settings.personal_radius, |_, m| {
                    near |= mask.contains(m.position);
                });
                if near {
                    s.phase = Phase::Aligning;
                    self.events.push(MarkerEvent::Phase {
                        agent: id,
                        phase: Phase::Aligning,
                    });
                }
            }
        }
        self.note_reached();

        // Collision handling.
        let mut out: Vec<(AgentId, DVec2)> = Vec::with_capacity(self.states.len());
        match settings.mode {
            Mode::Groups if settings.enforcement == Enforcement::Projection => {
                // Projected from where the plans lead, pair by pair in order, until no pair of
                // marker agents is closer than t_min (or a bounded number of passes).
                let mut q: Vec<DVec2> = agents.iter().map(|a| a.position).collect();
                let mut movable = vec![false; agents.len()];
                for (&id, s) in &self.states {
                    if let Some(&i) = index.get(&id)
                        && q[i].is_finite()
                    {
                        q[i] += s.plan;
                        movable[i] = true;
                    }
                }
                project(&mut q, &movable, agents, &settings);
                for &id in self.states.keys() {
                    if let Some(&i) = index.get(&id)
                        && movable[i]
                    {
                        out.push((id, q[i] - agents[i].position));
                    }
                }
            }
            Mode::Groups => {
                // Eq. 8 as printed (or nothing with `Off`), from where the agents stand.
                let pushes = if settings.enforcement == Enforcement::Literal {
                    let positions: Vec<DVec2> = agents.iter().map(|a| a.position).collect();
                    crate::personal::enforce_distance(&positions, settings.min_distance)
                } else {
                    vec![DVec2::ZERO; agents.len()]
                };
                for (&id, s) in &self.states {
                    let Some(&i) = index.get(&id) else {
                        continue;
                    };
                    if !agents[i].position.is_finite() {
                        continue;
                    }
                    out.push((id, s.plan + pushes[i]));
                }
            }
            Mode::Crowd => self.reserve(set, agents, &index, &mut out),
        }
        out
    }

    /// Hands each surrounded target's pursuers their slices round it ([`SurroundRule`]):
    /// kept while the same pursuers surround it, handed out again when they change.
    fn assign_sectors(&mut self, index: &IdMap<AgentId, usize>, agents: &[Sensed]) {
        let mut groups: BTreeMap<AgentId, Vec<AgentId>> = BTreeMap::new();
        for (&id, s) in &self.states {
            if let (Order::Surround(t), Some(_)) = (&s.order, &s.tree)
                && index.contains_key(&id)
                && index.contains_key(t)
            {
                groups.entry(*t).or_default().push(id);
            }
        }
        self.sectors.retain(|t, _| groups.contains_key(t));
        for (target, members) in groups {
            let centre = agents[index[&target]].position;
            if self.settings.surround == SurroundRule::FirstCome || members.len() < 2 {
                for id in &members {
                    if let Some(tree) = self.states.get_mut(id).and_then(|s| s.tree.as_mut()) {
                        tree.set_sector(None);
                    }
                }
                continue;
            }
            let n = members.len();
            let fresh = self.sectors.get(&target).is_none_or(|(m, _)| *m != members);
            if fresh {
                // The side they come from, then their order round the target from it.
                let at: Vec<DVec2> = members
                    .iter()
                    .map(|id| agents[index[id]].position)
                    .collect();
                let base = (at.iter().sum::<DVec2>() / n as f64 - centre).to_angle();
                let rel = |p: DVec2| {
                    ((p - centre).to_angle() - base + std::f64::consts::PI)
                        .rem_euclid(std::f64::consts::TAU)
                        - std::f64::consts::PI
                };
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|a, b| rel(at[*a]).total_cmp(&rel(at[*b])).then(a.cmp(b)));
                let width = std::f64::consts::TAU / n as f64;
                let mut bearings = vec![0.0; n];
                for (slot, &k) in order.iter().enumerate() {
                    bearings[k] = base - std::f64::consts::PI + width * (slot as f64 + 0.5);
                }
                self.sectors.insert(target, (members.clone(), bearings));
            }
            let (_, bearings) = &self.sectors[&target];
            for (k, id) in members.iter().enumerate() {
                if let Some(tree) = self.states.get_mut(id).and_then(|s| s.tree.as_mut()) {
                    tree.set_sector(Some(Sector {
                        centre,
                        radius: self.settings.surround_radius,
                        bearing: bearings[k],
                        half_width: std::f64::consts::PI / n as f64,
                    }));
                }
            }
        }
    }

    fn note_reached(&mut self) {
        for (&id, s) in &self.states {
            if let Some(tree) = &s.tree
                && let Some(goal) = tree.goal()
                && tree.node(goal).is_some_and(|n| n.born == tree.iterations())
                && tree.iterations() > 0
                && s.phase == Phase::Tree
            {
                self.events.push(MarkerEvent::Reached {
                    agent: id,
                    iterations: tree.iterations(),
                });
            }
        }
    }

    /// Crowd mode (A9): in id order, an agent heading for a node takes all of its markers or
    /// waits; a wait past the limit regrows round the markers others hold (G11).
    fn reserve(
        &mut self,
        set: &MarkerSet,
        agents: &[Sensed],
        index: &IdMap<AgentId, usize>,
        out: &mut Vec<(AgentId, DVec2)>,
    ) {
        let limit = self.settings.wait_limit;
        let ids: Vec<AgentId> = self.states.keys().copied().collect();
        for id in ids {
            let Some(&i) = index.get(&id) else {
                continue;
            };
            if !agents[i].position.is_finite() {
                continue;
            }
            let s = self.states.get_mut(&id).expect("listed");
            if s.phase == Phase::Arrived {
                for m in s.held.drain(..) {
                    if self.holders.get(&m) == Some(&id) {
                        self.holders.remove(&m);
                    }
                }
                out.push((id, DVec2::ZERO));
                continue;
            }
            let Some(tree) = s.tree.as_mut() else {
                out.push((id, DVec2::ZERO));
                continue;
            };
            // The root's markers first (a spawn), then the next node's.
            let wanted: Vec<NodeId> = if s.held.is_empty() {
                std::iter::once(s.at).chain(s.next).collect()
            } else if !s.holds_next {
                s.next.into_iter().collect()
            } else {
                Vec::new()
            };
            let mut need: Vec<MarkerId> = wanted
                .iter()
                .filter_map(|n| tree.node(*n))
                .flat_map(|n| n.reservation.iter().copied())
                .collect();
            need.sort_unstable();
            need.dedup();
            let blocked: Vec<MarkerId> = need
                .iter()
                .copied()
                .filter(|m| self.holders.get(m).is_some_and(|h| *h != id))
                .collect();
            if blocked.is_empty() {
                for m in need {
                    if self.holders.insert(m, id).is_none() {
                        s.held.push(m);
                    }
                }
                s.held.sort_unstable();
                s.held.dedup();
                if s.next.is_some() {
                    s.holds_next = true;
                }
                // Standing with no way ahead (its tree does not grow past where it stands)
                // counts as waiting too.
                let walking = s.holds_next || tree.goal() == Some(s.at);
                s.waited = if walking { 0 } else { s.waited + 1 };
                out.push((id, if s.holds_next { s.plan } else { DVec2::ZERO }));
                if s.waited <= limit {
                    continue;
                }
            } else {
                // Another branch from where it stands whose markers are free: take it.
                if !s.held.is_empty() && !s.holds_next {
                    let free = tree.rank(s.at).into_iter().find(|c| {
                        Some(*c) != s.next
                            && tree.node(*c).is_some_and(|n| {
                                n.reservation
                                    .iter()
                                    .all(|m| self.holders.get(m).is_none_or(|h| *h == id))
                            })
                    });
                    if let Some(c) = free {
                        let node = tree.node(c).expect("ranked");
                        for &m in &node.reservation {
                            if self.holders.insert(m, id).is_none() {
                                s.held.push(m);
                            }
                        }
                        s.held.sort_unstable();
                        s.held.dedup();
                        s.next = Some(c);
                        s.holds_next = true;
                        s.waited = 0;
                        let d = node.position - agents[i].position;
                        let beta = self.settings.step_length();
                        let step = if d.length() > beta {
                            d * (beta / d.length())
                        } else {
                            d
                        };
                        out.push((id, step));
                        continue;
                    }
                }
                // Markers held by agents walking on are given back as they go: only a wait
                // on a standing agent can be a deadlock, so only that counts towards T_wait.
                let on_standing = blocked.iter().any(|m| {
                    self.holders.get(m).is_some_and(|h| {
                        self.states
                            .get(h)
                            .is_none_or(|o| !o.holds_next || o.waited > 0)
                    })
                });
                let s = self.states.get_mut(&id).expect("listed");
                if on_standing {
                    s.waited += 1;
                }
                out.push((id, DVec2::ZERO));
                // Of agents waiting for each other, the one with the highest id gives way (a
                // lower one that regrew too would step into the other's new way as often as
                // not).
                let waits_for_higher = blocked.iter().any(|m| {
                    self.holders.get(m).is_some_and(|h| {
                        *h > id && self.states.get(h).is_some_and(|o| o.waited > 0)
                    })
                });
                let s = self.states.get_mut(&id).expect("listed");
                if waits_for_higher {
                    s.waited = s.waited.min(limit);
                }
            }
            let s = self.states.get_mut(&id).expect("listed");
            let Some(tree) = s.tree.as_mut() else {
                continue;
            };
            if s.waited > limit {
                // G11: the blocked branch dies and the node it stands at grows again, round
                // the markers others hold near it (barred for a few iterations); a new branch
                // is picked when one grows. It keeps the node's markers meanwhile.
                let reach = 2.0 * (self.settings.tree.segment + self.settings.tree.action_radius);
                let mut held = blocked;
                set.for_each_within(agents[i].position, reach, |m, _| {
                    if self.holders.get(&m).is_some_and(|h| *h != id) {
                        held.push(m);
                    }
                });
                if let Some(next) = s.next.take()
                    && tree
                        .node(next)
                        .is_some_and(|n| n.kind != crate::NodeKind::Root)
                {
                    tree.kill(next);
                }
                tree.bar(held);
                tree.revive(s.at);
                tree.reopen(s.at);
                s.holds_next = false;
                s.waited = 0;
                self.events.push(MarkerEvent::Deadlock { agent: id });
            }
        }
    }

    /// Brings the trees up to the marker set's edits since the last step (G18). A set that is
    /// not the one seen before (another [`MarkerSet::build_id`], or fewer edits) restarts
    /// every tree and forgets which markers lie on the masks.
    fn catch_up(&mut self, set: &MarkerSet) {
        let edits = set.edits();
        let other = self.set_seen.is_some_and(|b| b != set.build_id());
        if other || edits.len() < self.edits_seen {
            for s in self.states.values_mut() {
                s.tree = None;
                s.next = None;
                s.held.clear();
                s.holds_next = false;
            }
            self.holders.clear();
            self.claims.clear();
            for marks in &mut self.mask_marks {
                *marks = MaskMarks::default();
            }
        } else {
            for edit in &edits[self.edits_seen..] {
                let erased = match edit {
                    Edit::Erase { shape } => Some(shape),
                    Edit::Paint {
                        shape,
                        terrain: Terrain::Forbidden,
                    } => Some(shape),
                    _ => None,
                };
                for s in self.states.values_mut() {
                    let Some(tree) = s.tree.as_mut() else {
                        continue;
                    };
                    match erased {
                        Some(shape) => {
                            if tree.erase(shape)
                                && s.next
                                    .is_some_and(|n| tree.node(n).is_none_or(|n| !n.alive))
                            {
                                s.next = None;
                                tree.revive(s.at);
                            }
                        }
                        None => tree.refresh(),
                    }
                }
            }
        }
        self.edits_seen = edits.len();
        self.set_seen = Some(set.build_id());
    }

    /// Runs a step over `crowd`: every agent's position and current goal centre are read
    /// there, and each marker agent with [`Steering::External`] is handed its displacement
    /// (shortened to its `max_step`). Agents the crowd no longer has leave the back end.
    /// Returns how many steps were handed over.
    pub fn drive(&mut self, crowd: &mut Crowd, set: &MarkerSet) -> Result<usize, MarkerError> {
        check_set(set)?;
        let agents = sense(crowd);
        for id in gone(self.states.keys(), crowd) {
            self.remove(id);
        }
        let steps = self.step(set, &agents);
        hand_over(crowd, set, steps, |d, max| {
            if d.length() > max {
                d * (max / d.length())
            } else {
                d
            }
        })
    }
}

/// The agents among `ids` that `crowd` no longer has (removed, or despawned on arrival): a
/// back end forgets them before it steps.
pub(crate) fn gone<'a>(ids: impl Iterator<Item = &'a AgentId>, crowd: &Crowd) -> Vec<AgentId> {
    ids.filter(|id| crowd.agent(**id).is_none())
        .copied()
        .collect()
}

/// Every agent of `crowd` as a back end senses it: its position and its current goal's
/// centre.
pub(crate) fn sense(crowd: &Crowd) -> Vec<Sensed> {
    crowd
        .agents()
        .map(|(id, a)| Sensed {
            id,
            position: a.position(),
            goal: a
                .params()
                .goals
                .get(a.goal_index())
                .and_then(|g| crowd.goal(*g))
                .map(|g| g.centre()),
        })
        .collect()
}

/// Hands each agent steered from outside its step: `shape` makes it from the back end's
/// displacement and the agent's `max_step` (no longer than that), then it is turned along
/// walls ([`slide`]): the crowd's collision guard only shortens a step that would touch an
/// obstacle, and turned round a corner instead the agent does not stand against it. One
/// refused step (never expected: shortened to `max_step`, finite) does not keep the others
/// from theirs; the first error is returned after. Returns how many steps were handed over.
pub(crate) fn hand_over<T>(
    crowd: &mut Crowd,
    set: &MarkerSet,
    steps: Vec<(AgentId, T)>,
    shape: impl Fn(T, f64) -> DVec2,
) -> Result<usize, MarkerError> {
    let mut handed = 0;
    let mut first_error = None;
    for (id, d) in steps {
        let Some(agent) = crowd.agent(id) else {
            continue;
        };
        if agent.params().steering != Steering::External {
            continue;
        }
        let max = agent.params().max_step;
        let d = slide(set, agent.position(), shape(d, max), agent.params().radius);
        match crowd.hand_over_step(
            id,
            HandedStep {
                displacement: d,
                heading: d.normalize_or_zero(),
                speed_factor: (d.length() / max).clamp(0.0, 1.0),
            },
        ) {
            Ok(()) => handed += 1,
            Err(e) => {
                first_error.get_or_insert(MarkerError::from(e));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(handed),
    }
}

/// Refuses a set whose forbidden ground holds markers ([`MarkerSettings::forbidden_markers`]).
///
/// [`MarkerSettings::forbidden_markers`]: crate::MarkerSettings::forbidden_markers
fn check_set(set: &MarkerSet) -> Result<(), MarkerError> {
    if set.settings().forbidden_markers {
        return Err(MarkerError::BadSetting(
            "the marker back end needs a set without markers on forbidden ground",
        ));
    }
    Ok(())
}

/// The segments an agent at `p` will walk: to its next node, then down the tree towards the
/// best node (each with its near end's node).
fn way_ahead(
    tree: &TreePath,
    p: DVec2,
    at: NodeId,
    next: Option<NodeId>,
) -> Vec<(NodeId, DVec2, DVec2)> {
    let mut out = Vec::new();
    let Some(mut n) = next else {
        return out;
    };
    out.push((at, p, tree.node(n).map_or(p, |x| x.position)));
    loop {
        let node = tree.node(n).expect("live node");
        let best = node
            .children
            .iter()
            .filter(|c| tree.node(**c).is_some_and(|c| c.alive))
            .max_by(|a, b| {
                let sa = tree.aim().score(tree.node(**a).expect("child").position);
                let sb = tree.aim().score(tree.node(**b).expect("child").position);
                sa.total_cmp(&sb)
            });
        let Some(&c) = best else {
            break;
        };
        out.push((n, node.position, tree.node(c).expect("child").position));
        n = c;
        if out.len() > 64 {
            break;
        }
    }
    out
}

/// A step handed to the crowd, turned by up to 90° either way (in 15° steps, the nearer turn
/// first) when the straight one would bring a body of radius `clearance` nearer an obstacle
/// than the clearance (or than it already is): an agent pushed off its node by others meets a
/// corner its segment clears, and the crowd's collision guard would only shorten the step.
/// Zero when every turn is blocked.
pub(crate) fn slide(set: &MarkerSet, p: DVec2, step: DVec2, clearance: f64) -> DVec2 {
    let reach = step.length() + clearance;
    if step == DVec2::ZERO || !set.obstacle_near(p, reach) {
        return step;
    }
    // One already nearer than the clearance (pushed there) may keep its distance.
    let keep = clearance.min(set.obstacle_distance(p, reach)) * (1.0 - 1e-6);
    if set.clears(p, p + step, keep) {
        return step;
    }
    for k in 1..=6 {
        for sign in [1.0, -1.0] {
            let turned = DVec2::from_angle(sign * k as f64 * 15f64.to_radians()).rotate(step);
            if set.clears(p, p + turned, keep) {
                return turned;
            }
        }
    }
    DVec2::ZERO
}

fn closest_on(a: DVec2, b: DVec2, p: DVec2) -> DVec2 {
    let ab = b - a;
    let t = ((p - a).dot(ab) / ab.length_squared().max(1e-18)).clamp(0.0, 1.0);
    a + ab * t
}

/// The formation's automatic goal (A6, G13): a random point of the shape markers' convex
/// hull within R of one of them (a random shape marker after 100 misses).
fn formation_goal(
    markers: &[DVec2],
    hull: &[DVec2],
    set: &MarkerSet,
    tag: u32,
    reach: f64,
    rng: &mut ChaCha8Rng,
) -> Option<DVec2> {
    if markers.is_empty() {
        return None;
    }
    let (lo, hi) = markers.iter().fold(
        (DVec2::splat(f64::INFINITY), DVec2::splat(f64::NEG_INFINITY)),
        |(lo, hi), m| (lo.min(*m), hi.max(*m)),
    );
    for _ in 0..100 {
        let q = lo + (hi - lo) * DVec2::new(rng.random(), rng.random());
        if !inside_hull(hull, q) {
            continue;
        }
        let mut near = false;
        set.for_each_within(q, reach, |_, m| near |= m.tag == Some(tag));
        if near {
            return Some(q);
        }
    }
    Some(markers[rng.random_range(0..markers.len())])
}

/// The convex hull of `points`, counter-clockwise (Andrew's monotone chain).
pub fn convex_hull(points: &[DVec2]) -> Vec<DVec2> {
    let mut p: Vec<DVec2> = points.to_vec();
    p.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
    p.dedup();
    if p.len() < 3 {
        return p;
    }
    let cross = |o: DVec2, a: DVec2, b: DVec2| (a - o).perp_dot(b - o);
    let mut hull: Vec<DVec2> = Vec::with_capacity(2 * p.len());
    for pass in 0..2 {
        let start = hull.len();
        let iter: Box<dyn Iterator<Item = &DVec2>> = if pass == 0 {
            Box::new(p.iter())
        } else {
            Box::new(p.iter().rev())
        };
        for &q in iter {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], q) <= 0.0
            {
                hull.pop();
            }
            hull.push(q);
        }
        hull.pop();
    }
    hull
}

fn inside_hull(hull: &[DVec2], q: DVec2) -> bool {
    if hull.len() < 3 {
        return false;
    }
    (0..hull.len()).all(|k| {
        let (a, b) = (hull[k], hull[(k + 1) % hull.len()]);
        (b - a).perp_dot(q - a) >= 0.0
    })
}

/// A direct-motion step (Eqs. 10–12) with the order's weights.
#[allow(clippy::too_many_arguments)]
/// Which of a set's markers lie on one mask, by marker id. Marker ids are never reused and a
/// marker never moves, so the bits stay right while the set grows; they are worked out again
/// if the set's edit log goes back (a set made anew).
#[derive(Debug, Clone, Default)]
struct MaskMarks {
    /// Marker ids below this have been looked at.
    bound: usize,
    /// The set's edits when they were.
    edits: usize,
    bits: Vec<u64>,
}

impl MaskMarks {
    fn update(&mut self, mask: &Mask, set: &MarkerSet, edits: usize) {
        if edits < self.edits || set.id_bound() < self.bound {
            *self = MaskMarks::default();
        }
        self.edits = edits;
        let bound = set.id_bound();
        if bound <= self.bound {
            return;
        }
        self.bits.resize(bound.div_ceil(64), 0);
        for id in self.bound..bound {
            if set
                .marker(MarkerId(id as u32))
                .is_some_and(|m| mask.contains(m.position))
            {
                self.bits[id / 64] |= 1 << (id % 64);
            }
        }
        self.bound = bound;
    }

    #[inline]
    fn contains(&self, id: u32) -> bool {
        let id = id as usize;
        self.bits
            .get(id / 64)
            .is_some_and(|w| w >> (id % 64) & 1 != 0)
    }
}

/// What an agent in direct motion weighs markers by: its formation shape's tag and which
/// markers lie on its alignment mask.
#[derive(Debug, Clone, Copy)]
struct Kind<'a> {
    shape: Option<u32>,
    mask: Option<&'a MaskMarks>,
}

impl<'a> Kind<'a> {
    fn of(order: &Order, marks: &'a [MaskMarks]) -> Self {
        match order {
            Order::Formation { shape, mask } => Kind {
                shape: Some(*shape),
                mask: mask.map(|m| &marks[m]),
            },
            Order::Align(m) => Kind {
                shape: None,
                mask: Some(&marks[*m]),
            },
            _ => Kind {
                shape: None,
                mask: None,
            },
        }
    }

    /// The weight of marker `id` (tag `tag`) at squared distance `d2` from the agent (Eq. 14's
    /// w_max on the shape, G14's distance on the mask, 1 elsewhere).
    #[inline]
    fn weight(&self, id: u32, tag: Option<u32>, d2: f64, settings: &MarkerCrowdSettings) -> f64 {
        let form = if self.shape.is_some() && tag == self.shape {
            settings.w_max
        } else {
            1.0
        };
        let align = match self.mask {
            Some(mask) if mask.contains(id) => d2.sqrt() * settings.align_scale,
            _ => 1.0,
        };
        form * align
    }
}

/// One agent's direct-motion sums over a step's markers (Eqs. 10–11).
#[derive(Debug, Clone, Copy, Default)]
struct DirectSum {
    /// Σ w (m − p) and Σ w over the markers it owns.
    md: DVec2,
    total: f64,
    /// The same over its shape's markers within R, whoever owns them.
    shape_md: DVec2,
    shape_total: f64,
    /// A shape marker within R; one within a body radius (0.25 m).
    saw_shape: bool,
    inside_shape: bool,
}

impl DirectSum {
    fn add(&mut self, other: &DirectSum) {
        self.md += other.md;
        self.total += other.total;
        self.shape_md += other.shape_md;
        self.shape_total += other.shape_total;
        self.saw_shape |= other.saw_shape;
        self.inside_shape |= other.inside_shape;
    }

    /// The step these sums give (and whether the agent saw its shape). A formation agent
    /// outside the shape (no shape marker within a body radius) heads for the shape's markers
    /// it sees, whoever's they are (ours: else the agents inside hold the shape's markers and
    /// one at the edge sees only its own sliver of them). With w_max = 1 the shape's markers
    /// weigh as any.
    fn step(&self, order: &Order, settings: &MarkerCrowdSettings) -> (DVec2, bool) {
        let (mut md, mut total) = (self.md, self.total);
        if matches!(order, Order::Formation { .. })
            && settings.w_max > 1.0
            && !self.inside_shape
            && self.shape_total > 0.0
        {
            md = self.shape_md;
            total = self.shape_total;
        }
        (scaled_step(md, total, settings), self.saw_shape)
    }
}

/// Eq. 9's step of length β along m_d (shortened near rest with `settle`); zero when m_d is.
fn scaled_step(md: DVec2, total: f64, settings: &MarkerCrowdSettings) -> DVec2 {
    if !(md.length_squared() > 0.0 && md.is_finite()) {
        return DVec2::ZERO;
    }
    let scale = if settings.settle {
        (md.length() / (total * 0.1)).min(1.0)
    } else {
        1.0
    };
    md.normalize() * settings.step_length() * scale
}

/// The direct-motion sums of every agent with a [`Kind`] (indexed as `agents`), from one
/// personal-space split of the markers near them (Exclusive: each marker within R to its
/// nearest agent, marker agent or not). Bands of the index are summed on their own (in
/// parallel when `parallel`) and added in band order, so the sums do not depend on the thread
/// count.
fn direct_sums(
    set: &MarkerSet,
    agents: &[Sensed],
    kinds: &[Option<Kind>],
    settings: &MarkerCrowdSettings,
    parallel: bool,
) -> Vec<DirectSum> {
    let mut out = vec![DirectSum::default(); agents.len()];
    if kinds.iter().all(Option::is_none) {
        return out;
    }
    let r = settings.personal_radius;
    // The index cells within reach of an agent in direct motion.
    let points: Vec<Option<DVec2>> = agents
        .iter()
        .map(|a| a.position.is_finite().then_some(a.position))
        .collect();
    let split = Split::new(set, &points, r);
    // The index cells within reach of an agent in direct motion.
    let reach = split.reach(|i| kinds[i].is_some());
    let band = |b: usize| {
        let mut visit = Sums {
            set,
            kinds,
            settings,
            slots: HashMap::default(),
            sums: Vec::new(),
            cell: Vec::new(),
            shapes: false,
            r2: r * r,
        };
        split.walk_band(b, &reach, &mut visit);
        visit.sums
    };
    let bands: Vec<Vec<(usize, DirectSum)>> = if parallel {
        (0..split.bands()).into_par_iter().map(band).collect()
    } else {
        (0..split.bands()).map(band).collect()
    };
    for list in bands {
        for (i, sum) in list {
            out[i].add(&sum);
        }
    }
    out
}

/// The visitor of [`direct_sums`] for one band.
struct Sums<'a> {
    set: &'a MarkerSet,
    kinds: &'a [Option<Kind<'a>>],
    settings: &'a MarkerCrowdSettings,
    /// Agent index → place in `sums`.
    slots: HashMap<usize, usize>,
    sums: Vec<(usize, DirectSum)>,
    /// The cell's candidates: their place in `sums` (`None`: not in direct motion), kind and
    /// position.
    cell: Vec<(Option<usize>, Option<Kind<'a>>, DVec2)>,
    /// Some candidate of the cell has a shape.
    shapes: bool,
    r2: f64,
}

impl Owners for Sums<'_> {
    fn cell(&mut self, _: DVec2, _: DVec2, candidates: &[Candidate]) {
        self.cell.clear();
        self.shapes = false;
        for c in candidates {
            let kind = self.kinds[c.index];
            let slot = kind.map(|_| {
                *self.slots.entry(c.index).or_insert_with(|| {
                    self.sums.push((c.index, DirectSum::default()));
                    self.sums.len() - 1
                })
            });
            self.shapes |= kind.is_some_and(|k| k.shape.is_some());
            self.cell.push((slot, kind, c.position));
        }
    }

    #[inline]
    fn marker(&mut self, owner: usize, id: u32, m: DVec2, d2: f64) {
        let tag = if self.shapes {
            self.set.marker(MarkerId(id)).and_then(|m| m.tag)
        } else {
            None
        };
        if self.shapes {
            // Every formation agent within R sees its shape's markers, whoever owns them.
            for &(slot, kind, q) in &self.cell {
                if let (Some(slot), Some(kind)) = (slot, kind)
                    && kind.shape.is_some()
                    && tag == kind.shape
                {
                    let e = (m - q).length_squared();
                    if e <= self.r2 {
                        let w = kind.weight(id, tag, e, self.settings);
                        let sum = &mut self.sums[slot].1;
                        sum.saw_shape = true;
                        sum.inside_shape |= e <= 0.25 * 0.25;
                        sum.shape_md += w * (m - q);
                        sum.shape_total += w;
                    }
                }
            }
        }
        let (slot, kind, q) = self.cell[owner];
        if let (Some(slot), Some(kind)) = (slot, kind) {
            let w = kind.weight(id, tag, d2, self.settings);
            let sum = &mut self.sums[slot].1;
            sum.md += w * (m - q);
            sum.total += w;
        }
    }

    fn run(&mut self, owner: usize, q: DVec2, entries: &[(u32, DVec2)], all_within: bool, r2: f64) {
        if self.shapes {
            for &(id, m) in entries {
                let e = (m - q).length_squared();
                if all_within || e <= r2 {
                    self.marker(owner, id, m, e);
                }
            }
            return;
        }
        // No shape in the cell: the owner's sums in a tight loop.
        let (Some(slot), Some(kind)) = (self.cell[owner].0, self.cell[owner].1) else {
            return;
        };
        let (mut md, mut total) = (DVec2::ZERO, 0.0);
        for &(id, m) in entries {
            let e = (m - q).length_squared();
            if all_within || e <= r2 {
                let w = kind.weight(id, None, e, self.settings);
                md += w * (m - q);
                total += w;
            }
        }
        let sum = &mut self.sums[slot].1;
        sum.md += md;
        sum.total += total;
    }
}

/// Direct motion in [`PersonalSpace::Shared`]: every marker within R counts for the agent;
/// on an alignment mask the nearest agent weighs a marker with the weights of all the agents
/// within R of it (the seed's competition rule, G14).
fn shared_step(
    s: &MarkerState,
    p: DVec2,
    me: usize,
    set: &MarkerSet,
    grid: &AgentGrid,
    marks: &[MaskMarks],
    settings: &MarkerCrowdSettings,
) -> (DVec2, bool) {
    let r = settings.personal_radius;
    let r2 = r * r;
    let kind = Kind::of(&s.order, marks);
    let mut rivals: smallvec::SmallVec<[(usize, DVec2); 16]> = smallvec::SmallVec::new();
    grid.for_each_point_near(p, 2.0 * r, |j, q, _| {
        if j != me && (q - p).length_squared() <= 4.0 * r2 {
            rivals.push((j, q));
        }
    });
    let (mut md, mut total) = (DVec2::ZERO, 0.0);
    let mut saw_shape = false;
    set.for_each_within(p, r, |id, m| {
        saw_shape |= kind.shape.is_some() && m.tag == kind.shape;
        let d = (m.position - p).length_squared();
        let mut w = kind.weight(id.0, m.tag, d, settings);
        if kind.mask.is_some() {
            let mut nearest = true;
            let mut sum = 0.0;
            for &(j, q) in &rivals {
                let e = (m.position - q).length_squared();
                if e <= r2 {
                    sum += kind.weight(id.0, m.tag, e, settings);
                    nearest &= !(e < d || (e == d && j < me));
                }
            }
            if nearest {
                w += sum;
            }
        }
        total += w;
        md += w * (m.position - p);
    });
    (scaled_step(md, total, settings), saw_shape)
}

/// The projection (G8): every pair closer than t_min is pushed apart along its separation,
/// each of two marker agents by half the overlap (a marker agent from any other agent by all
/// of it), pairs taken in order, passes repeated until none overlaps by more than 1e-9 m or
/// [`PROJECTION_PASSES`] passes. Coincident agents part along a direction drawn from their ids.
fn project(q: &mut [DVec2], movable: &[bool], agents: &[Sensed], settings: &MarkerCrowdSettings) {
    let t = settings.min_distance;
    // Pairs within t plus a margin, found once a round; a round ends when no pair overlaps or
    // after 50 passes, and another starts only if someone moved farther than half the margin
    // (a pair that was not listed could then overlap).
    let margin = 0.5 * t;
    for _ in 0..8 {
        let start: Vec<DVec2> = q.to_vec();
        let points: Vec<Option<(DVec2, f64)>> = q
            .iter()
            .map(|p| p.is_finite().then_some((*p, 0.0)))
            .collect();
        let grid = AgentGrid::build(&points, t + margin);
        let reach2 = (t + margin) * (t + margin);
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        let mut near: Vec<usize> = Vec::new();
        for i in 0..q.len() {
            if !movable[i] || !q[i].is_finite() {
                continue;
            }
            near.clear();
            grid.for_each_near(q[i], t + margin, |j| near.push(j));
            near.sort_unstable();
            for &j in &near {
                if j != i && !(movable[j] && j < i) && (q[i] - q[j]).length_squared() <= reach2 {
                    pairs.push((i as u32, j as u32));
                }
            }
        }
        for _ in 0..PROJECTION_PASSES {
            let mut worst: f64 = 0.0;
            for &(i, j) in &pairs {
                let (i, j) = (i as usize, j as usize);
                let d = (q[i] - q[j]).length();
                if d.is_nan() || d >= t {
                    continue;
                }
                worst = worst.max(t - d);
                let away = if d > 0.0 {
                    (q[i] - q[j]) / d
                } else {
                    coincident(agents[i].id, agents[j].id, settings.seed)
                };
                if movable[j] {
                    q[i] += away * (t - d) * 0.5;
                    q[j] -= away * (t - d) * 0.5;
                } else {
                    q[i] += away * (t - d);
                }
            }
            if worst <= 1e-9 {
                break;
            }
        }
        let moved = q
            .iter()
            .zip(&start)
            .map(|(a, b)| (*a - *b).length())
            .filter(|d| d.is_finite())
            .fold(0.0, f64::max);
        if moved < 0.5 * margin {
            break;
        }
    }
}

/// ⌊v⌋ without a library call where |v| < 2⁵²; the library's floor beyond.
fn fast_floor(v: f64) -> f64 {
    if v.abs() < 4.5e15 {
        let t = v as i64 as f64;
        if t > v { t - 1.0 } else { t }
    } else {
        v.floor()
    }
}

/// Passes of the projection over its pairs before it gives up on a round (a jammed cluster
/// converges slowly, pair by pair).
const PROJECTION_PASSES: usize = 200;

/// The way agent `a` leaves agent `b` when they coincide (the opposite of `b`'s way).
fn coincident(a: AgentId, b: AgentId, seed: u64) -> DVec2 {
    let (lo, hi) = (a.0.min(b.0), a.0.max(b.0));
    let mut pair = ChaCha8Rng::seed_from_u64(seed ^ (u64::from(lo) << 32 | u64::from(hi)));
    let angle: f64 = pair.random::<f64>() * std::f64::consts::TAU;
    let u = DVec2::new(angle.cos(), angle.sin());
    if a.0 < b.0 { u } else { -u }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Generation, MarkerSettings};
    use proptest::prelude::*;

    fn ground(side: f64) -> MarkerSet {
        let mut set = MarkerSet::new(
            MarkerSettings {
                min: DVec2::ZERO,
                max: DVec2::splat(side),
                ..Default::default()
            },
            vec![],
        )
        .unwrap();
        set.generate(Generation::default(), 60.0, 5).unwrap();
        set.spray(DVec2::splat(6.0), 2.0, 60.0, 9, Some(7)).unwrap();
        set
    }

    /// A set made anew (a replay over other obstacles: other markers under the same ids)
    /// restarts the trees and the masks' marker lists.
    #[test]
    fn another_set_restarts_trees_and_mask_lists() {
        let first = ground(14.0);
        let second = MarkerSet::replay(
            *first.settings(),
            vec![crowdfield_field::Shape::Aabb {
                min: DVec2::new(3.0, 3.0),
                max: DVec2::new(5.0, 11.0),
            }],
            first.edits(),
        )
        .unwrap();
        assert_ne!(first.build_id(), second.build_id());
        assert_eq!(first.build_id(), first.clone().build_id());
        let mut crowd = MarkerCrowd::new(MarkerCrowdSettings::default()).unwrap();
        let mask = Mask::Lines {
            segments: vec![(DVec2::new(1.0, 1.0), DVec2::new(13.0, 13.0))],
            width: 0.4,
        };
        let m = crowd.add_mask(mask.clone()).unwrap();
        crowd.insert(&first, AgentId(0), Order::Align(m)).unwrap();
        crowd
            .insert(&first, AgentId(1), Order::Seek(DVec2::new(12.0, 7.0)))
            .unwrap();
        let agents = [
            Sensed {
                id: AgentId(0),
                position: DVec2::new(7.0, 7.2),
                goal: None,
            },
            Sensed {
                id: AgentId(1),
                position: DVec2::new(1.5, 7.0),
                goal: None,
            },
        ];
        for _ in 0..10 {
            crowd.step(&first, &agents);
        }
        let grown = crowd
            .state(AgentId(1))
            .unwrap()
            .tree()
            .unwrap()
            .iterations();
        assert!(grown >= 3, "{grown}");
        crowd.step(&second, &agents);
        let tree = crowd.state(AgentId(1)).unwrap().tree().unwrap();
        assert!(tree.iterations() < grown, "the tree did not start again");
        let marks = &crowd.mask_marks[m];
        for (id, marker) in second.markers() {
            assert_eq!(marks.contains(id.0), mask.contains(marker.position));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// The banded split's sums are those of the plain rule: for each agent in direct
        /// motion, every marker within R nearer it than any other agent (the lower index on a
        /// tie), weighted by its order, and its shape's markers within R whoever's.
        #[test]
        fn banded_sums_match_the_plain_rule(
            raw in proptest::collection::vec((0.0f64..14.0, 0.0f64..14.0, 0u8..4), 1..40),
        ) {
            let set = ground(14.0);
            let masks = [Mask::Grid { origin: DVec2::ZERO, spacing: 1.5, width: 0.3 }];
            let mut marks = vec![MaskMarks::default()];
            marks[0].update(&masks[0], &set, set.edits().len());
            let settings = MarkerCrowdSettings::default();
            let agents: Vec<Sensed> = raw
                .iter()
                .enumerate()
                .map(|(k, &(x, y, _))| Sensed { id: AgentId(k as u32), position: DVec2::new(x, y), goal: None })
                .collect();
            let orders: Vec<Option<Order>> = raw
                .iter()
                .map(|&(_, _, o)| match o {
                    0 => None,
                    1 => Some(Order::Align(0)),
                    2 => Some(Order::Formation { shape: 7, mask: None }),
                    _ => Some(Order::Formation { shape: 7, mask: Some(0) }),
                })
                .collect();
            let kinds: Vec<Option<Kind>> = orders.iter().map(|o| o.as_ref().map(|o| Kind::of(o, &marks))).collect();
            let sums = direct_sums(&set, &agents, &kinds, &settings, false);
            let parallel = direct_sums(&set, &agents, &kinds, &settings, true);
            let r2 = settings.personal_radius * settings.personal_radius;
            for (i, kind) in kinds.iter().enumerate() {
                let Some(kind) = kind else { continue };
                let p = agents[i].position;
                let mut want = DirectSum::default();
                for (id, m) in set.markers() {
                    let d = (m.position - p).length_squared();
                    if d > r2 {
                        continue;
                    }
                    let w = kind.weight(id.0, m.tag, d, &settings);
                    if kind.shape.is_some() && m.tag == kind.shape {
                        want.saw_shape = true;
                        want.inside_shape |= d <= 0.0625;
                        want.shape_md += w * (m.position - p);
                        want.shape_total += w;
                    }
                    let mine = agents.iter().enumerate().all(|(j, a)| {
                        let e = (m.position - a.position).length_squared();
                        j == i || e > d || (e == d && j > i)
                    });
                    if mine {
                        want.md += w * (m.position - p);
                        want.total += w;
                    }
                }
                let got = sums[i];
                prop_assert!((got.md - want.md).length() <= 1e-9 * (1.0 + want.total), "agent {i}: {got:?} vs {want:?}");
                prop_assert!((got.total - want.total).abs() <= 1e-9 * (1.0 + want.total));
                prop_assert!((got.shape_md - want.shape_md).length() <= 1e-9 * (1.0 + want.shape_total));
                prop_assert_eq!(got.saw_shape, want.saw_shape);
                prop_assert_eq!(got.inside_shape, want.inside_shape);
                prop_assert_eq!(got.md, parallel[i].md, "threads changed the sums");
            }
        }
    }
}
