//! The BioCrowds back end (seed 003): agents of a `crowdfield_steer::Crowd` moved by their
//! typed markers (Eqs. 4.1–4.4, [`crate::biocrowds`]) towards their goals, straight or along
//! an A* route over the terrain graph, or living an indoor routine.
//!
//! - [`Way::Direct`]: the seed's A* off: the goal itself pulls (Eq. 4.2's g is the goal).
//! - [`Way::AStar`]: the seed's A* on (digest 003 §2.10 step 4): a route from the agent's
//!   position to its goal over [`TerrainGraph`], planned when the goal changes; its nodes are
//!   sub-goals, each given up for the next within r_sub of it (§8: r_sub ≈ R), then the goal.
//!   Agents of one group ([`BioOrder::group`]) heading for one goal share the route the
//!   first of them planned (the seed's group: one origin, one destination, one route); others
//!   whose routes start and end at the same nodes share theirs too.
//! - [`Way::Routine`]: the indoor loop of digest 003 §2.11 over the back end's [`House`]: an
//!   action drawn at random (from the agent's own seeded stream), the doors to its room by
//!   [`House::doors_to`] from where the agent stands, each door two sub-goals (the points
//!   `door_radius` before and beyond its middle, the second given up once the agent is in the
//!   room beyond; an agent pushed into another room plans its doors again from there), then a
//!   marker of the room (l_k = the room, at
//!   least `room_margin` from its walls) as the goal; there it waits the action's duration,
//!   then draws again.
//!
//! Every agent of the crowd takes part in the marker split (an agent of another back end takes
//! its markers and is not moved): one personal space for all. [`BioCrowd::drive`] hands the
//! steps to the crowd (`Steering::External`), shortened to each agent's `max_step` and turned
//! along walls as the marker back end does; the crowd's collision guard, states and messages
//! are the crowd's.

use std::collections::BTreeMap;

use glam::{DVec2, DVec3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crowdfield_steer::{AgentId, Crowd};

use crate::biocrowds::{BioAgent, BioSettings, FtTable, step_many};
use crate::crowd::{Sensed, gone, hand_over, sense, slide};
use crate::{GraphSettings, House, MarkerError, MarkerSet, TerrainGraph};

/// How a BioCrowds agent finds its way.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Way {
    /// Straight for its goals (the seed's A* off).
    Direct,
    /// Along A* routes over the terrain graph (the seed's A* on).
    #[default]
    AStar,
    /// The indoor routine in the back end's house; the seed of its random stream.
    Routine {
        /// Seeds the agent's choice of actions and places.
        seed: u64,
    },
}

/// A BioCrowds agent's order: its terrain factors and its way.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BioOrder {
    /// Its `ft` table (Eq. 4.3): [`FtTable::inverted`] for fish.
    pub ft: FtTable,
    /// How it finds its way.
    pub way: Way,
    /// Its group, if any: members heading for one goal walk one A* route.
    pub group: Option<u32>,
}

impl Default for BioOrder {
    fn default() -> Self {
        Self {
            ft: FtTable::default(),
            way: Way::AStar,
            group: None,
        }
    }
}

/// The back end's parameters (digest 003 §8's suggestions where the seed gives none).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BioCrowdSettings {
    /// The perception radius R, metres (1.2).
    pub radius: f64,
    /// s_max, metres a step, for [`BioCrowd::step`] (1.3 m/s at 24 steps a second);
    /// [`BioCrowd::drive`] uses each agent's own `max_step`.
    pub max_step: f64,
    /// Seconds a step (1/24 s): the routine's waits are counted in steps.
    pub dt: f64,
    /// τ: d is walked in this many seconds before s_max caps it (0.25 s; see
    /// [`crate::biocrowds`]).
    pub reach_time: f64,
    /// r_sub: a route node is given up for the next within this distance, metres (R).
    pub sub_goal_radius: f64,
    /// A door is passed by walking for the point this far beyond its middle, in the room it
    /// leads to, until inside that room, metres (0.4).
    pub door_radius: f64,
    /// The routine's place in a room is reached within this distance, metres (0.3).
    pub arrival_radius: f64,
    /// The routine's place keeps this far from the room's walls, metres (0.5).
    pub room_margin: f64,
    /// How the terrain graph is built.
    pub graph: GraphSettings,
}

impl Default for BioCrowdSettings {
    fn default() -> Self {
        Self {
            radius: 1.2,
            max_step: 1.3 / 24.0,
            dt: 1.0 / 24.0,
            reach_time: 0.25,
            sub_goal_radius: 1.2,
            door_radius: 0.4,
            arrival_radius: 0.3,
            room_margin: 0.5,
            graph: GraphSettings::default(),
        }
    }
}

impl BioCrowdSettings {
    /// Refuses radii, steps and periods that are not positive and finite.
    pub fn validate(&self) -> Result<(), MarkerError> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !(positive(self.radius)
            && positive(self.max_step)
            && positive(self.dt)
            && positive(self.reach_time)
            && positive(self.sub_goal_radius)
            && positive(self.door_radius)
            && positive(self.arrival_radius)
            && self.room_margin.is_finite()
            && self.room_margin >= 0.0)
        {
            return Err(MarkerError::BadSetting(
                "BioCrowds radii, step and period must be positive and finite",
            ));
        }
        Ok(())
    }
}

/// Where a routine stands.
#[derive(Debug, Clone, PartialEq)]
pub enum RoutinePhase {
    /// On its way: through `doors` (from `next` on), then to `place`.
    Walking {
        /// The room of the action.
        room: usize,
        /// The action's index in the room's [`crate::RoomKind::actions`].
        action: usize,
        /// The doors to pass, in order.
        doors: Vec<usize>,
        /// The next door to pass (`doors.len()`: all passed).
        next: usize,
        /// Whether the agent stands before the next door, lined up to walk through it.
        lined_up: bool,
        /// The chosen place in the room.
        place: DVec2,
    },
    /// Doing it until step `until`.
    Acting {
        /// The room.
        room: usize,
        /// The action's index in the room's actions.
        action: usize,
        /// The step it ends at.
        until: u64,
    },
}

/// What happened to a BioCrowds agent, in step order.
#[derive(Debug, Clone, PartialEq)]
pub enum BioEvent {
    /// No route to the goal (off walkable ground, or not joined by the graph, or a routine
    /// outside the house): the agent stands until its goal changes.
    RouteRefused {
        /// Which.
        agent: AgentId,
        /// Why.
        error: MarkerError,
    },
    /// A route planned: the nodes to pass.
    Routed {
        /// Which.
        agent: AgentId,
        /// The route's nodes on the surface.
        nodes: Vec<DVec3>,
    },
    /// A routine chose its next action.
    ActionChosen {
        /// Which.
        agent: AgentId,
        /// The room.
        room: usize,
        /// The action's name.
        action: &'static str,
        /// The doors it will pass.
        doors: Vec<usize>,
    },
    /// A routine found itself in a room its doors do not pass through (pushed there) and
    /// planned its doors again from there.
    DoorsReplanned {
        /// Which.
        agent: AgentId,
        /// The doors it will pass now.
        doors: Vec<usize>,
    },
    /// A routine passed a door.
    DoorPassed {
        /// Which.
        agent: AgentId,
        /// The door.
        door: usize,
    },
    /// A routine reached its place and starts the action.
    ActionStarted {
        /// Which.
        agent: AgentId,
        /// The room.
        room: usize,
        /// Where it stands.
        place: DVec2,
        /// The step it started at.
        step: u64,
    },
    /// A routine's action is over.
    ActionDone {
        /// Which.
        agent: AgentId,
        /// The step it ended at.
        step: u64,
    },
}

/// One agent's state in the back end.
#[derive(Debug, Clone)]
pub struct BioState {
    order: BioOrder,
    /// The route's sub-goals in the plane, and the next one's index.
    route: Vec<DVec2>,
    next: usize,
    /// The goal the route was planned for.
    planned: Option<DVec2>,
    /// No route to `planned`: stand.
    refused: bool,
    routine: Option<RoutinePhase>,
    rng: ChaCha8Rng,
}

impl BioState {
    /// Its order.
    pub fn order(&self) -> &BioOrder {
        &self.order
    }

    /// Its route's sub-goals still to reach (empty without A*).
    pub fn route_ahead(&self) -> &[DVec2] {
        self.route.get(self.next..).unwrap_or(&[])
    }

    /// Its routine's phase.
    pub fn routine(&self) -> Option<&RoutinePhase> {
        self.routine.as_ref()
    }
}

/// The BioCrowds back end (see the module doc).
#[derive(Debug, Clone)]
pub struct BioCrowd {
    settings: BioCrowdSettings,
    states: BTreeMap<AgentId, BioState>,
    /// The graph, for the set (build id, edits) it was built over.
    graph: Option<(u64, usize, TerrainGraph)>,
    /// Routes by (start node, goal node), shared by agents that start and end alike.
    routes: BTreeMap<(u32, u32), Vec<DVec3>>,
    /// Routes by group and goal (its coordinates' bits).
    group_routes: BTreeMap<(u32, [u64; 2]), Vec<DVec3>>,
    house: Option<House>,
    events: Vec<BioEvent>,
    steps: u64,
}

impl BioCrowd {
    /// An empty back end; refuses bad settings.
    pub fn new(settings: BioCrowdSettings) -> Result<Self, MarkerError> {
        settings.validate()?;
        Ok(Self {
            settings,
            states: BTreeMap::new(),
            graph: None,
            routes: BTreeMap::new(),
            group_routes: BTreeMap::new(),
            house: None,
            events: Vec::new(),
            steps: 0,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &BioCrowdSettings {
        &self.settings
    }

    /// Gives the house routines live in (`None`: none; routines stand).
    pub fn set_house(&mut self, house: Option<House>) {
        self.house = house;
        for s in self.states.values_mut() {
            s.routine = None;
        }
    }

    /// The house.
    pub fn house(&self) -> Option<&House> {
        self.house.as_ref()
    }

    /// Gives agent `id` an order (a new route or routine from its next step). Refuses an `ft`
    /// table outside [0, 1].
    pub fn insert(&mut self, id: AgentId, order: BioOrder) -> Result<(), MarkerError> {
        order.ft.validate()?;
        let seed = match order.way {
            Way::Routine { seed } => seed,
            _ => 0,
        };
        self.states.insert(
            id,
            BioState {
                order,
                route: Vec::new(),
                next: 0,
                planned: None,
                refused: false,
                routine: None,
                rng: ChaCha8Rng::seed_from_u64(seed ^ (u64::from(id.0) << 32)),
            },
        );
        Ok(())
    }

    /// Takes agent `id` out; returns its state.
    pub fn remove(&mut self, id: AgentId) -> Option<BioState> {
        self.states.remove(&id)
    }

    /// An agent's state.
    pub fn state(&self, id: AgentId) -> Option<&BioState> {
        self.states.get(&id)
    }

    /// Every agent's state, by id.
    pub fn states(&self) -> impl Iterator<Item = (AgentId, &BioState)> {
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

    /// Steps taken so far.
    pub fn step_count(&self) -> u64 {
        self.steps
    }

    /// What happened since the last call.
    pub fn take_events(&mut self) -> Vec<BioEvent> {
        std::mem::take(&mut self.events)
    }

    /// The terrain graph over `set` (built when the set or its edits changed).
    pub fn graph(&mut self, set: &MarkerSet) -> Result<&TerrainGraph, MarkerError> {
        let key = (set.build_id(), set.edits().len());
        if self.graph.as_ref().is_none_or(|(b, e, _)| (*b, *e) != key) {
            let graph = TerrainGraph::build(set, self.settings.graph)?;
            self.graph = Some((key.0, key.1, graph));
            self.routes.clear();
            self.group_routes.clear();
        }
        Ok(&self.graph.as_ref().expect("built").2)
    }

    /// One step over `agents` (every agent of the crowd: all take markers): each BioCrowds
    /// agent's displacement, min(c·‖d‖, s_max) along its 3D d (c = Δt/τ) and back in the
    /// plane, turned along obstacles it would cross. An agent with no goal, or whose route was
    /// refused, stands (zero).
    pub fn step(
        &mut self,
        set: &MarkerSet,
        agents: &[Sensed],
    ) -> Result<Vec<(AgentId, DVec2)>, MarkerError> {
        let max = self.settings.max_step;
        Ok(self
            .plan(set, agents)?
            .into_iter()
            .map(|(k, d)| {
                let d = self.walked(d, max);
                (agents[k].id, slide(set, agents[k].position, d, 0.0))
            })
            .collect())
    }

    /// The step a d gives with the longest step `max`.
    fn walked(&self, d: DVec3, max: f64) -> DVec2 {
        let pace = self.settings.dt / self.settings.reach_time;
        crate::biocrowds::step(d * pace, max).truncate()
    }

    /// Each BioCrowds agent's d (Eq. 4.4, 3D) after its way is settled, by its index in
    /// `agents`.
    fn plan(
        &mut self,
        set: &MarkerSet,
        agents: &[Sensed],
    ) -> Result<Vec<(usize, DVec3)>, MarkerError> {
        let mut bio: Vec<BioAgent> = Vec::with_capacity(agents.len());
        let mut mine: Vec<usize> = Vec::new();
        for (k, a) in agents.iter().enumerate() {
            let goal = if self.states.contains_key(&a.id) {
                mine.push(k);
                self.goal_of(set, a)?
            } else {
                None
            };
            let ft = self
                .states
                .get(&a.id)
                .map_or(FtTable::default(), |s| s.order.ft);
            bio.push(BioAgent {
                position: a.position,
                goal,
                ft,
            });
        }
        let settings = BioSettings {
            radius: self.settings.radius,
            max_step: f64::MAX,
            pace: 1.0,
        };
        let d = step_many(set, &bio, &settings)?;
        self.steps += 1;
        Ok(mine.into_iter().map(|k| (k, d[k])).collect())
    }

    /// Where agent `a` heads this step (its way settled): a route node, a door, a place, its
    /// goal, or nowhere.
    fn goal_of(&mut self, set: &MarkerSet, a: &Sensed) -> Result<Option<DVec2>, MarkerError> {
        let way = self.states[&a.id].order.way;
        match way {
            Way::Direct => Ok(a.goal),
            Way::AStar => {
                let Some(goal) = a.goal else {
                    return Ok(None);
                };
                let planned = self.states[&a.id].planned;
                if planned != Some(goal) {
                    self.route_for(set, a.id, a.position, goal)?;
                }
                let r_sub = self.settings.sub_goal_radius;
                let s = self.states.get_mut(&a.id).expect("known");
                if s.refused {
                    return Ok(None);
                }
                while s.next < s.route.len() && s.route[s.next].distance(a.position) <= r_sub {
                    s.next += 1;
                }
                Ok(Some(s.route.get(s.next).copied().unwrap_or(goal)))
            }
            Way::Routine { .. } => Ok(self.routine_goal(set, a)),
        }
    }

    /// Plans agent `id`'s route from `from` to `goal`; a refusal is reported once.
    fn route_for(
        &mut self,
        set: &MarkerSet,
        id: AgentId,
        from: DVec2,
        goal: DVec2,
    ) -> Result<(), MarkerError> {
        self.graph(set)?;
        let graph = &self.graph.as_ref().expect("built").2;
        let group = self.states[&id]
            .order
            .group
            .map(|g| (g, [goal.x.to_bits(), goal.y.to_bits()]));
        let ends = (graph.nearest(set, from), graph.nearest(set, goal));
        let found = if let Some(nodes) = group.and_then(|k| self.group_routes.get(&k)) {
            Ok(nodes.clone())
        } else {
            match ends {
                (Some(a), Some(b)) if self.routes.contains_key(&(a, b)) => {
                    Ok(self.routes[&(a, b)].clone())
                }
                _ => graph.route(set, from, goal),
            }
        };
        if let Ok(nodes) = &found {
            if let (Some(a), Some(b)) = ends {
                self.routes.entry((a, b)).or_insert_with(|| nodes.clone());
            }
            if let Some(k) = group {
                self.group_routes.entry(k).or_insert_with(|| nodes.clone());
            }
        }
        let s = self.states.get_mut(&id).expect("known");
        s.planned = Some(goal);
        s.next = 0;
        match found {
            Ok(nodes) => {
                s.route = nodes.iter().map(|n| n.truncate()).collect();
                s.refused = false;
                self.events.push(BioEvent::Routed { agent: id, nodes });
            }
            Err(error) => {
                s.route.clear();
                s.refused = true;
                self.events
                    .push(BioEvent::RouteRefused { agent: id, error });
            }
        }
        Ok(())
    }

    /// The routine's goal this step, moving it on (doors passed, place reached, action over,
    /// a new action drawn).
    fn routine_goal(&mut self, set: &MarkerSet, a: &Sensed) -> Option<DVec2> {
        let house = self.house.as_ref()?;
        let settings = self.settings;
        let step = self.steps;
        let s = self.states.get_mut(&a.id).expect("known");
        loop {
            match &mut s.routine {
                None => {
                    if s.refused && s.planned == Some(a.position) {
                        return None;
                    }
                    match choose_action(house, set, a.position, &settings, &mut s.rng) {
                        Ok(phase) => {
                            if let RoutinePhase::Walking {
                                room,
                                action,
                                doors,
                                ..
                            } = &phase
                            {
                                self.events.push(BioEvent::ActionChosen {
                                    agent: a.id,
                                    room: *room,
                                    action: house.rooms()[*room].kind.actions()[*action].name,
                                    doors: doors.clone(),
                                });
                            }
                            s.refused = false;
                            s.routine = Some(phase);
                        }
                        Err(error) => {
                            // Reported once for this place; tried again once the agent moves.
                            s.refused = true;
                            s.planned = Some(a.position);
                            self.events
                                .push(BioEvent::RouteRefused { agent: a.id, error });
                            return None;
                        }
                    }
                }
                Some(RoutinePhase::Walking {
                    room,
                    action,
                    doors,
                    next,
                    lined_up,
                    place,
                }) => {
                    if let Some(&door) = doors.get(*next) {
                        let d = &house.doors()[door];
                        // The room beyond the door: the next door's (the room both doors
                        // open on) or the action's; the one before it, the door's other.
                        let beyond = doors.get(*next + 1).map_or(*room, |&n| {
                            let m = house.doors()[n].rooms;
                            if d.rooms.contains(&m[0]) { m[0] } else { m[1] }
                        });
                        let before = if d.rooms[0] == beyond {
                            d.rooms[1]
                        } else {
                            d.rooms[0]
                        };
                        let here = house.room_at(a.position);
                        if here == Some(beyond) {
                            *next += 1;
                            *lined_up = false;
                            self.events.push(BioEvent::DoorPassed { agent: a.id, door });
                            continue;
                        }
                        if here != Some(before) {
                            // Pushed into another room: the doors from here.
                            match house.doors_to(a.position, *room) {
                                Ok(again) => {
                                    self.events.push(BioEvent::DoorsReplanned {
                                        agent: a.id,
                                        doors: again.clone(),
                                    });
                                    *doors = again;
                                    *next = 0;
                                    *lined_up = false;
                                    continue;
                                }
                                Err(_) => return Some(d.position),
                            }
                        }
                        // Before the door's middle first, then through it to a point inside
                        // the room beyond (a straight line could cut through another door).
                        let approach = house
                            .through(door, before, settings.door_radius)
                            .unwrap_or(d.position);
                        if !*lined_up && approach.distance(a.position) <= settings.door_radius {
                            *lined_up = true;
                        }
                        if !*lined_up {
                            return Some(approach);
                        }
                        return Some(
                            house
                                .through(door, beyond, settings.door_radius)
                                .unwrap_or(d.position),
                        );
                    }
                    if place.distance(a.position) <= settings.arrival_radius {
                        let duration = house.rooms()[*room].kind.actions()[*action].duration;
                        let steps = (duration / settings.dt).round() as u64;
                        self.events.push(BioEvent::ActionStarted {
                            agent: a.id,
                            room: *room,
                            place: a.position,
                            step,
                        });
                        s.routine = Some(RoutinePhase::Acting {
                            room: *room,
                            action: *action,
                            until: step + steps,
                        });
                        return None;
                    }
                    return Some(*place);
                }
                Some(RoutinePhase::Acting { until, .. }) => {
                    if step < *until {
                        return None;
                    }
                    self.events.push(BioEvent::ActionDone { agent: a.id, step });
                    s.routine = None;
                }
            }
        }
    }

    /// A step over `crowd`: positions and current goals read there, each BioCrowds agent with
    /// [`Steering::External`](crowdfield_steer::Steering::External) handed its displacement (min(‖d‖, its `max_step`) along d, turned
    /// along walls). Agents the crowd no longer has leave the back end. Returns how many steps
    /// were handed over.
    pub fn drive(&mut self, crowd: &mut Crowd, set: &MarkerSet) -> Result<usize, MarkerError> {
        let agents = sense(crowd);
        for id in gone(self.states.keys(), crowd) {
            self.remove(id);
        }
        let planned: Vec<(AgentId, DVec3)> = self
            .plan(set, &agents)?
            .into_iter()
            .map(|(k, d)| (agents[k].id, d))
            .collect();
        hand_over(crowd, set, planned, |d, max| self.walked(d, max))
    }
}

/// Draws a routine's next action (uniformly over every action of the house) and walks it
/// out: the doors from `from` and a place among the room's markers.
fn choose_action(
    house: &House,
    set: &MarkerSet,
    from: DVec2,
    settings: &BioCrowdSettings,
    rng: &mut ChaCha8Rng,
) -> Result<RoutinePhase, MarkerError> {
    let all: Vec<(usize, usize)> = house
        .rooms()
        .iter()
        .enumerate()
        .flat_map(|(r, room)| (0..room.kind.actions().len()).map(move |a| (r, a)))
        .collect();
    if all.is_empty() {
        return Err(MarkerError::BadHouse("no room of the house has actions"));
    }
    let (room, action) = all[rng.random_range(0..all.len())];
    let doors = house.doors_to(from, room)?;
    let r = &house.rooms()[room];
    let margin = DVec2::splat(settings.room_margin);
    let mut places: Vec<DVec2> = Vec::new();
    set.for_each_in_box(r.min + margin, r.max - margin, |_, m| {
        if house.room_at(m.position) == Some(room) {
            places.push(m.position);
        }
    });
    if places.is_empty() {
        return Err(MarkerError::BadHouse("a room with no marker to stand on"));
    }
    let place = places[rng.random_range(0..places.len())];
    Ok(RoutinePhase::Walking {
        room,
        action,
        doors,
        next: 0,
        lined_up: false,
        place,
    })
}
