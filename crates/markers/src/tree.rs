//! Tree paths (digest 002 §2.2–§2.5, §2.9, §3 A2–A4): a tree of path nodes grown from an
//! agent towards its goal by space colonisation, over a [`MarkerSet`].
//!
//! One growth iteration ([`TreePath::grow`], A2): every live node n that may still grow draws
//! ξ ~ U[0, 1] against P(n) = ‖n_g − g‖ / ‖n − g‖ (Eqs. 2–3; escape: P_e(n) = ‖n − c‖ /
//! ‖n_e − c‖, Eq. 13). When the test passes, the node's marker set S(n) (Eq. 1: the markers
//! within the action region A_r of n nearer n than any other node of the tree, owned by no
//! other node of the tree, in sight) gives the direction d(n) of Eqs. 5–7, and a child is
//! placed at n + α d(n)/‖d(n)‖ (Eq. 4). The child retrieves the free markers within the
//! restriction distance r_s of it, and n tests again with its reduced set: several children
//! (a bifurcation, a key position) or none. Segments are α long, except the last one to the
//! goal and those cut by a pursued target.
//!
//! Where the digest leaves a gap, the choices (each a setting):
//!
//! - r_s = α (G2): α ≤ r_s < α + A_r is needed for S(n) to run dry and for bifurcations at all.
//! - A node stops bifurcating when a new child would retrieve none of S(n), and gets at most
//!   [`TreeSettings::max_children`] children per iteration (G3); a tree holds at most
//!   [`TreeSettings::max_nodes`].
//! - Every live node with markers may grow, not only the frontier (G4). ξ is drawn before
//!   S(n) is gathered: the same test, and nodes far from the goal cost nothing when they fail.
//! - Nodes the agent has walked past stop growing (their new children could never be walked).
//! - A branch reaches the goal when a new node lies within [`TreeSettings::reach`] (α) of it
//!   in sight; the goal itself then becomes a node (G7). An escape tree is done when a node
//!   lies α beyond the followers' circle (G16).
//! - Lines of sight: S(n) keeps the markers n sees, and a segment through an obstacle is not
//!   grown; the markers of S(n) within 30° of its direction are then barred to this tree (G19).
//! - A moving goal prunes the branches that end farther than R_d from it (G5, default 2α).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use glam::DVec2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use smallvec::SmallVec;

use crate::personal::goal_direction;
use crate::{MarkerError, MarkerId, MarkerSet};

/// The seed's segment length α, metres (digest 002 §2.13).
pub const SEGMENT: f64 = 2.0;

/// The seed's action region A_r, metres (digest 002 §2.13).
pub const ACTION_RADIUS: f64 = 1.2;

/// A multiplicative hash for marker ids and cell keys (dense integers), cheaper than the
/// standard library's for the maps of trees and claims.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_i32(&mut self, n: i32) {
        self.write_u64(n as u32 as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A hash map keyed by small integers.
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Identifies a node of one [`TreePath`] (its index; nodes are never moved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// Where the tree started (the agent's position).
    Root,
    /// Grown by Eq. 4, α from its parent.
    Grown,
    /// The goal, joined to the node that reached it.
    Goal,
    /// Where a pursued target crossed the path (A4 step 4); growth goes on from it.
    Cut,
}

/// One node of a tree path.
#[derive(Debug, Clone)]
pub struct PathNode {
    /// Where it lies.
    pub position: DVec2,
    /// The node it grew from (`None` for the root).
    pub parent: Option<NodeId>,
    /// The nodes grown from it, alive or not.
    pub children: SmallVec<[NodeId; 4]>,
    /// What it is.
    pub kind: NodeKind,
    /// Cleared when its branch died (unchosen at a key position, pruned for a moving goal,
    /// erased under it).
    pub alive: bool,
    /// The growth iteration that made it.
    pub born: u32,
    /// The tree's age (in [`TreePath::grow`] calls) when its branch died, if it did.
    pub died: Option<u32>,
    /// For marker reservation (crowd mode): every marker within A_r of the node when it was
    /// made, by id (digest 002 G9); empty unless [`TreeSettings::store_reservations`].
    pub reservation: Vec<MarkerId>,
    /// The agent walked past it: it grows no more.
    spent: bool,
    /// Its marker set was empty at the last look (cleared when markers come free).
    exhausted: bool,
}

impl PathNode {
    /// Whether the agent walked past it (it died as its way went on, not as a branch).
    pub fn is_retired(&self) -> bool {
        self.spent && !self.alive
    }

    /// Whether it is a key position: two or more live children (digest 002 §2.1).
    pub fn is_key(&self, tree: &TreePath) -> bool {
        self.children
            .iter()
            .filter(|c| tree.node(**c).is_some_and(|n| n.alive))
            .count()
            >= 2
    }
}

/// What a tree grows towards.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Aim {
    /// A goal point (Eq. 2).
    Towards(DVec2),
    /// Away from a threat `centre` (the followers' centroid, Eq. 13), until a node lies `α`
    /// beyond the circle of `radius` round it.
    AwayFrom {
        /// c.
        centre: DVec2,
        /// The followers' circle.
        radius: f64,
    },
}

impl Aim {
    /// How good a node is for this aim (higher is better): nearness to the goal, or distance
    /// from the threat.
    pub fn score(&self, p: DVec2) -> f64 {
        match *self {
            Aim::Towards(g) => -(p - g).length(),
            Aim::AwayFrom { centre, .. } => (p - centre).length(),
        }
    }

    fn is_finite(&self) -> bool {
        match *self {
            Aim::Towards(g) => g.is_finite(),
            Aim::AwayFrom { centre, radius } => centre.is_finite() && radius.is_finite(),
        }
    }
}

/// How trees grow (digest 002 §2.13 and §6; see the module doc for the choices).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeSettings {
    /// Segment length α, metres (2.0).
    pub segment: f64,
    /// Action region A_r, metres (1.2).
    pub action_radius: f64,
    /// Restriction distance r_s, metres (α); at least α and below α + A_r.
    pub restriction: f64,
    /// Distance to the goal at which a branch has reached it (α).
    pub reach: f64,
    /// Children a node may get in one iteration (4).
    pub max_children: u32,
    /// Nodes a tree may hold (4,000); growth stops there.
    pub max_nodes: u32,
    /// Recomputing distance R_d for moving goals, metres (2α).
    pub recompute: f64,
    /// Store each node's reservation set (crowd mode).
    pub store_reservations: bool,
    /// How far a segment keeps from obstacles, metres (the seed's body radius, 0.25 m, G21: an
    /// agent walking it does not brush a wall's corner).
    pub clearance: f64,
    /// Only nodes without live children (and n_g) grow (digest 002 G4's option: about a third
    /// of the nodes); off, every node with markers may grow, as the seed has it.
    pub frontier: bool,
}

impl Default for TreeSettings {
    fn default() -> Self {
        Self {
            segment: SEGMENT,
            action_radius: ACTION_RADIUS,
            restriction: SEGMENT,
            reach: SEGMENT,
            max_children: 4,
            max_nodes: 4_000,
            recompute: 2.0 * SEGMENT,
            store_reservations: false,
            clearance: 0.25,
            frontier: false,
        }
    }
}

impl TreeSettings {
    /// Checks the ranges: positive finite lengths, α ≤ r_s < α + A_r, at least one child and
    /// two nodes.
    pub fn validate(&self) -> Result<(), MarkerError> {
        let lengths = [
            self.segment,
            self.action_radius,
            self.restriction,
            self.reach,
            self.recompute,
        ];
        if lengths.iter().any(|l| !(l.is_finite() && *l > 0.0)) {
            return Err(MarkerError::BadSetting(
                "tree lengths (α, A_r, r_s, reach, R_d) must be positive and finite",
            ));
        }
        if !(self.restriction >= self.segment
            && self.restriction < self.segment + self.action_radius)
        {
            return Err(MarkerError::BadSetting(
                "the restriction distance must lie in [α, α + A_r)",
            ));
        }
        if !(self.clearance.is_finite() && self.clearance >= 0.0) {
            return Err(MarkerError::BadSetting(
                "a tree's clearance must be finite and not negative",
            ));
        }
        if self.max_children == 0 || self.max_nodes < 2 {
            return Err(MarkerError::BadSetting(
                "a tree needs at least one child per node and two nodes",
            ));
        }
        Ok(())
    }
}

/// Who else's markers a tree may not use (surround: the markers the other pursuers' trees
/// hold, digest 002 §3 A5). Keys are markers, values the owning tree's tag.
pub type Claims = HashMap<MarkerId, u32, BuildHasherDefault<IdHasher>>;

/// A slice of the ground round a point that a tree keeps to near it (surround's sectors,
/// digest 002 G17): markers within `radius` of `centre` are usable only within `half_width`
/// radians of `bearing` as seen from the centre; farther ones always.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sector {
    /// The surrounded point.
    pub centre: DVec2,
    /// How far round it the slices reach.
    pub radius: f64,
    /// The slice's middle, radians from +x.
    pub bearing: f64,
    /// Half its width, radians.
    pub half_width: f64,
}

impl Sector {
    /// Whether a marker at `p` may be used.
    pub fn allows(&self, p: DVec2) -> bool {
        let d = p - self.centre;
        if d.length_squared() > self.radius * self.radius {
            return true;
        }
        let off = (d.to_angle() - self.bearing + std::f64::consts::PI)
            .rem_euclid(std::f64::consts::TAU)
            - std::f64::consts::PI;
        off.abs() <= self.half_width
    }
}

/// Marker ownership of a tree that no node holds: markers barred behind an obstacle.
const BARRED: u32 = u32::MAX;

/// Markers of nodes the agent walked past: free for this tree, still claimed from others (a
/// surrounding pursuer's way stays its own).
const WALKED: u32 = u32::MAX - 1;

/// One agent's tree path (see the module doc).
#[derive(Debug, Clone)]
pub struct TreePath {
    settings: TreeSettings,
    nodes: Vec<PathNode>,
    /// Marker → the node that retrieved it (or [`BARRED`]).
    owner: IdMap<MarkerId, u32>,
    /// Live nodes by cell of side A_r.
    grid: IdMap<(i32, i32), SmallVec<[u32; 6]>>,
    aim: Aim,
    goal: Option<NodeId>,
    iterations: u32,
    rng: ChaCha8Rng,
    /// This tree's tag in shared [`Claims`].
    tag: u32,
    /// Live nodes.
    live: usize,
    /// Calls of [`Self::grow`], growing or not (a clock for overlays).
    age: u32,
    /// The slice it keeps to, if any.
    sector: Option<Sector>,
    /// Markers barred by [`Self::bar`].
    barred: usize,
    /// Those markers, lifted after [`BAR_ITERATIONS`].
    temporary: Vec<MarkerId>,
    /// Iterations left before they are lifted.
    bar_left: u32,
}

/// How far a point of a segment may be from a marker, metres: farther, the ground is no
/// walkable space and the segment is not grown (at 60 markers/m² a point of marked ground
/// lacks one with a chance of e⁻³⁰).
const MARKED_REACH: f64 = 0.4;

/// Growth iterations a crowd agent's bars round others' reservations last.
const BAR_ITERATIONS: u32 = 8;

impl TreePath {
    /// A tree of one node (the root) at `root`, aiming at `aim`, with its own random stream
    /// from `seed`. `tag` names it in shared [`Claims`].
    pub fn new(
        settings: TreeSettings,
        set: &MarkerSet,
        root: DVec2,
        aim: Aim,
        seed: u64,
        tag: u32,
    ) -> Result<Self, MarkerError> {
        settings.validate()?;
        if !root.is_finite() {
            return Err(MarkerError::NonFinite("a tree's root"));
        }
        if !aim.is_finite() {
            return Err(MarkerError::NonFinite("a tree's aim"));
        }
        let mut tree = Self {
            settings,
            nodes: Vec::new(),
            owner: IdMap::default(),
            grid: IdMap::default(),
            aim,
            goal: None,
            iterations: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            tag,
            live: 0,
            age: 0,
            sector: None,
            barred: 0,
            temporary: Vec::new(),
            bar_left: 0,
        };
        tree.push(set, root, None, NodeKind::Root);
        tree.check_goal(set, NodeId(0));
        Ok(tree)
    }

    /// The settings.
    pub fn settings(&self) -> &TreeSettings {
        &self.settings
    }

    /// A node, by id.
    pub fn node(&self, id: NodeId) -> Option<&PathNode> {
        self.nodes.get(id.0 as usize)
    }

    /// Every node ever grown, alive or dead, by id.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &PathNode)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (NodeId(i as u32), n))
    }

    /// How many nodes are alive.
    pub fn live_count(&self) -> usize {
        self.live
    }

    /// What it grows towards.
    pub fn aim(&self) -> Aim {
        self.aim
    }

    /// The goal node, once a branch reached the goal (or, escaping, the node beyond the
    /// circle).
    pub fn goal(&self) -> Option<NodeId> {
        self.goal
    }

    /// Growth iterations run so far.
    pub fn iterations(&self) -> u32 {
        self.iterations
    }

    /// Calls of [`Self::grow`] so far, whether it grew or not (the marker back end calls it
    /// once a step).
    pub fn age(&self) -> u32 {
        self.age
    }

    /// The node of this tree that retrieved `marker`, if any.
    pub fn owner_of(&self, marker: MarkerId) -> Option<NodeId> {
        self.owner
            .get(&marker)
            .filter(|o| **o < WALKED)
            .map(|o| NodeId(*o))
    }

    /// The markers this tree's nodes hold.
    pub fn owned(&self) -> impl Iterator<Item = (MarkerId, NodeId)> + '_ {
        self.owner
            .iter()
            .filter(|(_, o)| **o < WALKED)
            .map(|(m, o)| (*m, NodeId(*o)))
    }

    fn cell(&self, p: DVec2) -> (i32, i32) {
        let k = (p / self.settings.action_radius).floor();
        (k.x as i32, k.y as i32)
    }

    fn push(
        &mut self,
        set: &MarkerSet,
        p: DVec2,
        parent: Option<NodeId>,
        kind: NodeKind,
    ) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        let reservation = if self.settings.store_reservations {
            set.within(p, self.settings.action_radius)
        } else {
            Vec::new()
        };
        self.nodes.push(PathNode {
            position: p,
            parent,
            children: SmallVec::new(),
            kind,
            alive: true,
            born: self.iterations,
            died: None,
            reservation,
            spent: false,
            exhausted: false,
        });
        if let Some(parent) = parent {
            self.nodes[parent.0 as usize].children.push(id);
        }
        let cell = self.cell(p);
        self.grid.entry(cell).or_default().push(id.0);
        self.live += 1;
        id
    }

    /// Whether node `n` may still grow.
    fn growable(&self, i: usize) -> bool {
        let n = &self.nodes[i];
        n.alive && !n.spent && !n.exhausted && n.kind != NodeKind::Goal
    }

    /// P(n) (Eq. 2) or P_e(n) (Eq. 13) against the best node's score; 1 where undefined.
    fn probability(&self, p: DVec2, best: DVec2) -> f64 {
        growth_probability(self.aim, p, best)
    }
}

/// The chance that a node at `p` grows a child (digest 002 Eq. 2; escaping, Eq. 13) when the
/// tree's best node for `aim` (n_g nearest the goal, n_e farthest from the threat) is at
/// `best`: ‖n_g − g‖ / ‖n − g‖ or ‖n − c‖ / ‖n_e − c‖, capped at 1, and 1 where undefined
/// (the node on the goal).
pub fn growth_probability(aim: Aim, p: DVec2, best: DVec2) -> f64 {
    {
        let ratio = match aim {
            Aim::Towards(g) => (best - g).length() / (p - g).length(),
            Aim::AwayFrom { centre, .. } => (p - centre).length() / (best - centre).length(),
        };
        if ratio.is_finite() {
            ratio.min(1.0)
        } else {
            1.0
        }
    }
}

impl TreePath {
    /// The marker set S(n) of node `i` (Eq. 1), as (id, position): within A_r, nearer this
    /// node than any other live node of the tree (the lower id on a tie), owned by no other
    /// node of this tree and claimed by no other tree, in sight.
    pub fn marker_set(
        &self,
        set: &MarkerSet,
        id: NodeId,
        claims: Option<&Claims>,
    ) -> Vec<(MarkerId, DVec2)> {
        let mut out = Vec::new();
        self.gather(set, id.0 as usize, claims, &mut out);
        out
    }

    fn gather(
        &self,
        set: &MarkerSet,
        i: usize,
        claims: Option<&Claims>,
        out: &mut Vec<(MarkerId, DVec2)>,
    ) {
        out.clear();
        let n = &self.nodes[i];
        let p = n.position;
        let ar = self.settings.action_radius;
        // Rivals: live nodes within 2 A_r (only they can be nearer a marker within A_r).
        let mut rivals: SmallVec<[(u32, DVec2); 16]> = SmallVec::new();
        let (cx, cy) = self.cell(p);
        for dy in -2..=2 {
            for dx in -2..=2 {
                if let Some(list) = self.grid.get(&(cx + dx, cy + dy)) {
                    for &j in list {
                        let q = self.nodes[j as usize].position;
                        if j as usize != i
                            && self.nodes[j as usize].alive
                            && (q - p).length_squared() <= 4.0 * ar * ar
                        {
                            rivals.push((j, q));
                        }
                    }
                }
            }
        }
        let check_sight = set.obstacle_near(p, ar);
        let me = i as u32;
        set.for_each_within(p, ar, |id, m| {
            if self
                .owner
                .get(&id)
                .is_some_and(|o| *o != me && *o != WALKED)
            {
                return;
            }
            if let Some(claims) = claims
                && claims.get(&id).is_some_and(|t| *t != self.tag)
            {
                return;
            }
            if self.sector.is_some_and(|s| !s.allows(m.position)) {
                return;
            }
            let d = (m.position - p).length_squared();
            if rivals.iter().any(|&(j, q)| {
                let e = (m.position - q).length_squared();
                e < d || (e == d && j < me)
            }) {
                return;
            }
            if check_sight && !set.sees(p, m.position) {
                return;
            }
            out.push((id, m.position));
        });
    }

    /// Runs one growth iteration (A2) unless the tree has reached its aim. `claims`: markers
    /// other trees hold (surround), updated with what this one retrieves. Returns how many
    /// nodes it added.
    pub fn grow(&mut self, set: &MarkerSet, mut claims: Option<&mut Claims>) -> usize {
        self.age += 1;
        if self.goal.is_some() || self.live >= self.settings.max_nodes as usize {
            return 0;
        }
        self.lift_bars();
        self.iterations += 1;
        // n_g (or n_e): the live node best for the aim, among those that may grow.
        let Some(best) = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].alive && !self.nodes[i].spent)
            .max_by(|&a, &b| {
                let (sa, sb) = (
                    self.aim.score(self.nodes[a].position),
                    self.aim.score(self.nodes[b].position),
                );
                sa.total_cmp(&sb).then(b.cmp(&a))
            })
        else {
            return 0;
        };
        let best_p = self.nodes[best].position;
        let before = self.nodes.len();
        if claims.is_some() {
            // Other trees give claimed markers back between iterations.
            self.refresh();
        }
        let mut s = Vec::new();
        for i in 0..before {
            if !self.growable(i) {
                continue;
            }
            if self.settings.frontier
                && i != best
                && self.nodes[i]
                    .children
                    .iter()
                    .any(|c| self.nodes[c.0 as usize].alive)
            {
                continue;
            }
            let p = self.nodes[i].position;
            let chance = if i == best {
                1.0
            } else {
                self.probability(p, best_p)
            };
            let mut children = 0;
            let mut tries = 0;
            // Markers left out for this node in this iteration only (ways others' reservations
            // block: tried again next iteration).
            let mut skip: Vec<MarkerId> = Vec::new();
            loop {
                if children >= self.settings.max_children
                    || self.live >= self.settings.max_nodes as usize
                    || tries > 8
                {
                    break;
                }
                let xi: f64 = self.rng.random();
                if chance < xi {
                    break;
                }
                self.gather(set, i, claims.as_deref(), &mut s);
                if s.is_empty() {
                    self.nodes[i].exhausted = true;
                    break;
                }
                if !skip.is_empty() {
                    s.retain(|(id, _)| !skip.contains(id));
                    if s.is_empty() {
                        break;
                    }
                }
                let toward = match self.aim {
                    Aim::Towards(g) => g,
                    // Standing on the threat: away along a drawn direction.
                    Aim::AwayFrom { centre, .. } if p == centre => {
                        let a = self.rng.random::<f64>() * std::f64::consts::TAU;
                        p + DVec2::new(a.cos(), a.sin())
                    }
                    Aim::AwayFrom { centre, .. } => p + (p - centre),
                };
                let points: SmallVec<[DVec2; 256]> = s.iter().map(|(_, m)| *m).collect();
                let Some(d) = goal_direction(p, toward, &points) else {
                    break;
                };
                let dir = d.normalize();
                let child = p + dir * self.settings.segment;
                // In crowd mode a node is only worth growing where the markers it would
                // reserve are not barred (held by others when the tree was regrown, G11).
                let reserved_barred = self.settings.store_reservations && self.barred > 0 && {
                    let mut hit = false;
                    set.for_each_within(child, self.settings.action_radius, |id, _| {
                        hit |= self.owner.get(&id) == Some(&BARRED);
                    });
                    hit
                };
                // Ground without markers is no walkable space (erased, never sprayed): every
                // 0.4 m of the segment needs a marker within 0.4 m.
                let marked = |q: DVec2| {
                    let mut any = false;
                    set.for_each_within(q, MARKED_REACH, |_, _| any = true);
                    any
                };
                let samples = (self.settings.segment / MARKED_REACH).ceil() as usize;
                let on_markers =
                    (1..=samples).all(|k| marked(p.lerp(child, k as f64 / samples as f64)));
                if reserved_barred || !set.is_walkable(child) || !set.sees(p, child) || !on_markers
                {
                    // Bar the markers of S(n) within 30° of the blocked direction; a way
                    // blocked by others' reservations also bars one side (drawn), or the
                    // weighted direction of what is left, symmetric round the blocked one,
                    // would point the same way again.
                    // The cone is barred for good where the ground blocks it (an obstacle,
                    // no markers), for this iteration where others' reservations do; one side
                    // (drawn) is left out for this iteration either way.
                    tries += 1;
                    let cos30 = 30f64.to_radians().cos();
                    let side = if self.rng.random::<bool>() { 1.0 } else { -1.0 };
                    for (id, m) in &s {
                        let u = (*m - p).normalize_or_zero();
                        if u.dot(dir) >= cos30 {
                            if reserved_barred {
                                skip.push(*id);
                            } else {
                                self.owner.insert(*id, BARRED);
                            }
                        } else if side * dir.perp_dot(u) > 0.0 {
                            skip.push(*id);
                        }
                    }
                    continue;
                }
                // The guard (G3): a child that retrieves none of S(n) ends the bifurcation.
                let rs2 = self.settings.restriction * self.settings.restriction;
                if !s.iter().any(|(_, m)| (*m - child).length_squared() <= rs2) {
                    break;
                }
                let parent = NodeId(i as u32);
                let new = self.push(set, child, Some(parent), NodeKind::Grown);
                children += 1;
                let mut taken = Vec::new();
                // Free markers and the parent's own (those of S(n)) go to the child.
                set.for_each_within(child, self.settings.restriction, |id, m| {
                    if self
                        .owner
                        .get(&id)
                        .is_some_and(|o| *o != i as u32 && *o != WALKED)
                    {
                        return;
                    }
                    if let Some(claims) = claims.as_deref()
                        && claims.get(&id).is_some_and(|t| *t != self.tag)
                    {
                        return;
                    }
                    if self.sector.is_some_and(|s| !s.allows(m.position)) {
                        return;
                    }
                    taken.push(id);
                });
                for id in taken {
                    self.owner.insert(id, new.0);
                    if let Some(claims) = claims.as_deref_mut() {
                        claims.insert(id, self.tag);
                    }
                }
                if self.check_goal(set, new) {
                    return self.nodes.len() - before;
                }
            }
        }
        self.nodes.len() - before
    }

    /// Marks the tree done when node `id` reached the aim: a goal node joined to it (towards a
    /// goal in sight within reach), or the node itself (escaping, α beyond the circle).
    fn check_goal(&mut self, set: &MarkerSet, id: NodeId) -> bool {
        let p = self.nodes[id.0 as usize].position;
        match self.aim {
            Aim::Towards(g) => {
                if (p - g).length() <= self.settings.reach && (p == g || set.sees(p, g)) {
                    self.goal = Some(if p == g {
                        id
                    } else {
                        self.push(set, g, Some(id), NodeKind::Goal)
                    });
                    return true;
                }
            }
            Aim::AwayFrom { centre, radius } => {
                if id.0 != 0 && (p - centre).length() >= radius + self.settings.segment {
                    self.goal = Some(id);
                    return true;
                }
            }
        }
        false
    }

    /// The best node (by the aim) of the live subtree under `id`, with its score.
    fn best_below(&self, id: NodeId) -> (f64, NodeId) {
        let mut best = (self.aim.score(self.nodes[id.0 as usize].position), id);
        let mut stack = vec![id];
        while let Some(n) = stack.pop() {
            let node = &self.nodes[n.0 as usize];
            let s = if Some(n) == self.goal {
                f64::INFINITY
            } else {
                self.aim.score(node.position)
            };
            if s > best.0 {
                best = (s, n);
            }
            stack.extend(
                node.children
                    .iter()
                    .filter(|c| self.nodes[c.0 as usize].alive),
            );
        }
        best
    }

    /// The agent's decision at node `at` (digest 002 §3 A3.2, G24): the live child whose
    /// subtree holds the node best for the aim (ties: the child itself best). The other
    /// children's subtrees die (branch death (i)) and give their markers back; `at` grows no
    /// more. `None` while `at` has no live child.
    pub fn choose(&mut self, at: NodeId) -> Option<NodeId> {
        let chosen = *self.rank(at).first()?;
        self.commit(at, chosen);
        Some(chosen)
    }

    /// The live children of `at`, best first by the rule of [`Self::choose`].
    pub fn rank(&self, at: NodeId) -> SmallVec<[NodeId; 4]> {
        let Some(node) = self.nodes.get(at.0 as usize) else {
            return SmallVec::new();
        };
        let mut ranked: SmallVec<[(f64, f64, NodeId); 4]> = node
            .children
            .iter()
            .filter(|c| self.nodes[c.0 as usize].alive)
            .map(|&c| {
                let (s, _) = self.best_below(c);
                (s, self.aim.score(self.nodes[c.0 as usize].position), c)
            })
            .collect();
        ranked.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then(b.1.total_cmp(&a.1))
                .then(a.2.cmp(&b.2))
        });
        ranked.into_iter().map(|(_, _, c)| c).collect()
    }

    /// The agent left `at` for its child `chosen`: the other children die with their
    /// subtrees and `at` retires.
    pub fn commit(&mut self, at: NodeId, chosen: NodeId) {
        let Some(node) = self.nodes.get(at.0 as usize) else {
            return;
        };
        let children: SmallVec<[NodeId; 4]> = node.children.clone();
        for c in children {
            if c != chosen {
                self.kill(c);
            }
        }
        self.retire(at);
    }

    /// Retires node `id`, which the agent walked past: it dies, gives its markers back and
    /// rivals no node for them any more, but stays the parent of its children (so a pursuer
    /// may cross its own walked path).
    pub(crate) fn retire(&mut self, id: NodeId) {
        let Some(node) = self.nodes.get_mut(id.0 as usize) else {
            return;
        };
        if !node.alive {
            return;
        }
        node.alive = false;
        node.spent = true;
        self.live -= 1;
        let p = node.position;
        for o in self.owner.values_mut() {
            if *o == id.0 {
                *o = WALKED;
            }
        }
        let cell = self.cell(p);
        if let Some(list) = self.grid.get_mut(&cell) {
            list.retain(|x| *x != id.0);
        }
        self.refresh();
    }

    /// Kills node `id` and its subtree, giving their markers back.
    pub(crate) fn kill(&mut self, id: NodeId) {
        let mut dead = Vec::new();
        let mut stack = vec![id];
        while let Some(n) = stack.pop() {
            let node = &mut self.nodes[n.0 as usize];
            // A retired node (walked past) is already dead; its children may not be.
            stack.extend(node.children.iter().copied());
            if !node.alive {
                continue;
            }
            node.alive = false;
            node.died = Some(self.age);
            self.live -= 1;
            dead.push(n.0);
            if self.goal == Some(n) {
                self.goal = None;
            }
        }
        if dead.is_empty() {
            return;
        }
        dead.sort_unstable();
        self.owner
            .retain(|_, o| *o >= WALKED || dead.binary_search(o).is_err());
        for d in &dead {
            let cell = self.cell(self.nodes[*d as usize].position);
            if let Some(list) = self.grid.get_mut(&cell) {
                list.retain(|x| x != d);
            }
        }
        self.refresh();
    }

    /// Keeps the tree to a slice round a point from now on (or to none).
    pub fn set_sector(&mut self, sector: Option<Sector>) {
        if self.sector != sector {
            self.sector = sector;
            self.refresh();
        }
    }

    /// The slice it keeps to.
    pub fn sector(&self) -> Option<Sector> {
        self.sector
    }

    /// Lets every node look at its markers again (markers came free or were sprayed).
    pub fn refresh(&mut self) {
        for n in &mut self.nodes {
            n.exhausted = false;
        }
    }

    /// Gives back to shared claims every marker tagged with this tree that neither a live
    /// node nor the walked way holds now.
    pub fn release_claims(&self, claims: &mut Claims) {
        claims.retain(|m, t| *t != self.tag || self.owner.get(m).is_some_and(|o| *o < WALKED));
    }

    /// The markers of the way walked so far (given back to this tree, still claimed from
    /// others).
    pub fn walked(&self) -> impl Iterator<Item = MarkerId> + '_ {
        self.owner
            .iter()
            .filter(|(_, o)| **o == WALKED)
            .map(|(m, _)| *m)
    }

    /// A new aim (a moving goal, a threat that moved; A4, G5): subtrees below `next` (the
    /// node the agent walks to) whose best node lies farther than R_d from the new goal die;
    /// where no live node lies within R_d of it, everything below `next` dies. Growth goes on
    /// from what is left; `next` may grow again.
    pub fn retarget(&mut self, set: &MarkerSet, aim: Aim, next: NodeId) -> Result<(), MarkerError> {
        if !aim.is_finite() {
            return Err(MarkerError::NonFinite("a tree's aim"));
        }
        self.aim = aim;
        let Some(node) = self.nodes.get(next.0 as usize) else {
            return Ok(());
        };
        let recompute = self.settings.recompute;
        let near = move |p: DVec2| match aim {
            Aim::Towards(g) => (p - g).length() <= recompute,
            // A threat: keep what still leads away from it.
            Aim::AwayFrom { centre, radius } => (p - centre).length() >= radius,
        };
        let children: SmallVec<[NodeId; 4]> = node.children.clone();
        let any_near = self
            .nodes
            .iter()
            .any(|n| n.alive && n.kind != NodeKind::Goal && near(n.position));
        // The old goal node no longer is one.
        if let Some(goal) = self.goal.take()
            && self.nodes[goal.0 as usize].kind == NodeKind::Goal
        {
            self.kill(goal);
        }
        for c in children {
            if !self.nodes[c.0 as usize].alive {
                continue;
            }
            let keep = any_near && {
                let mut stack = vec![c];
                let mut found = false;
                while let Some(n) = stack.pop() {
                    let node = &self.nodes[n.0 as usize];
                    if node.alive && node.kind != NodeKind::Goal && near(node.position) {
                        found = true;
                        break;
                    }
                    stack.extend(node.children.iter().copied());
                }
                found
            };
            if !keep {
                self.kill(c);
            }
        }
        self.nodes[next.0 as usize].spent = false;
        self.refresh();
        // A node already there may reach the new aim: the best one is tried.
        let best = (0..self.nodes.len())
            .filter(|&i| {
                let n = &self.nodes[i];
                n.alive && (!n.spent || i == next.0 as usize)
            })
            .max_by(|&a, &b| {
                let (sa, sb) = (
                    self.aim.score(self.nodes[a].position),
                    self.aim.score(self.nodes[b].position),
                );
                sa.total_cmp(&sb).then(b.cmp(&a))
            });
        if let Some(best) = best {
            self.check_goal(set, NodeId(best as u32));
        }
        Ok(())
    }

    /// Cuts the path where a pursued target crossed it (A4 step 4, G23): the subtree of the
    /// segment's far end dies, and a node at `point` grows from `from` (the segment's near
    /// end); growth goes on from it.
    pub fn cut(&mut self, set: &MarkerSet, from: NodeId, point: DVec2) -> Option<NodeId> {
        if !point.is_finite() || self.nodes.get(from.0 as usize).is_none() {
            return None;
        }
        let children: SmallVec<[NodeId; 4]> = self.nodes[from.0 as usize].children.clone();
        for c in children {
            self.kill(c);
        }
        self.goal = None;
        self.retire(from);
        let id = self.push(set, point, Some(from), NodeKind::Cut);
        self.check_goal(set, id);
        Some(id)
    }

    /// After markers were erased inside `shape` (G18): every node inside it or whose segment
    /// crosses it dies with its subtree (the root stays). Returns whether any died.
    pub fn erase(&mut self, shape: &crowdfield_field::Shape) -> bool {
        let mut hit = Vec::new();
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if !n.alive {
                continue;
            }
            let a = n.position;
            let b = n.parent.map_or(a, |p| self.nodes[p.0 as usize].position);
            if shape.segment_distance(a, b).is_ok_and(|d| d <= 0.0) {
                hit.push(NodeId(i as u32));
            }
        }
        for id in &hit {
            self.kill(*id);
        }
        !hit.is_empty()
    }

    /// Undoes [`Self::choose`]'s "grows no more" for `id` (the agent's way ahead was erased).
    pub(crate) fn revive(&mut self, id: NodeId) {
        if let Some(n) = self.nodes.get_mut(id.0 as usize) {
            n.spent = false;
            n.exhausted = false;
        }
    }

    /// Lets the tree grow again from `at` when its goal is no longer below `at` (the way
    /// there died).
    pub(crate) fn reopen(&mut self, at: NodeId) {
        if let Some(goal) = self.goal {
            let mut n = Some(goal);
            let mut below = false;
            while let Some(k) = n {
                let node = &self.nodes[k.0 as usize];
                if k == at {
                    below = true;
                    break;
                }
                if !node.alive && node.kind != NodeKind::Root && k != goal {
                    // A retired ancestor: keep climbing.
                }
                n = node.parent;
            }
            if !below || !self.nodes[goal.0 as usize].alive {
                self.goal = None;
            }
        }
        self.refresh();
    }

    /// Bars `markers` to this tree (a crowd agent's deadlock: markers others hold, G11).
    pub(crate) fn bar(&mut self, markers: impl IntoIterator<Item = MarkerId>) {
        for m in markers {
            if let std::collections::hash_map::Entry::Vacant(e) = self.owner.entry(m) {
                e.insert(BARRED);
                self.barred += 1;
                self.temporary.push(m);
            }
        }
        self.bar_left = BAR_ITERATIONS;
        self.refresh();
    }

    /// Lifts the bars of [`Self::bar`] once they have lasted their iterations (the markers
    /// others held then are likely free by now).
    fn lift_bars(&mut self) {
        if self.bar_left == 0 || self.temporary.is_empty() {
            return;
        }
        self.bar_left -= 1;
        if self.bar_left == 0 {
            for m in std::mem::take(&mut self.temporary) {
                if self.owner.get(&m) == Some(&BARRED) {
                    self.owner.remove(&m);
                }
            }
            self.barred = 0;
            self.refresh();
        }
    }
}
