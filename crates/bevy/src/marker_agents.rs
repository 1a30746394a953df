//! The marker back end for crowd agents ([`crowdfield_markers::MarkerCrowd`], seed 002): an
//! agent with [`MarkerSteering`] walks tree paths grown over [`MarkerWorld`]'s markers (or
//! moves by its markers directly, in formation or alignment) instead of relaxing a local map.
//! Behind the `markers` feature.
//!
//! A marker agent stays a crowd agent: it is registered, sensed by every other agent, kept
//! apart by the collision guard, takes its [`AgentGoals`](crate::AgentGoals) in order and gets the same
//! [`AgentState`](crate::AgentState) and messages ([`AgentArrived`](crate::AgentArrived) and the others); only its decision comes from
//! the marker back end, handed to the crowd each planner step (`Steering::External`). BVP
//! agents and marker agents see each other: BVP agents stamp marker agents into their maps,
//! marker agents count BVP agents in their personal spaces and in d_enf.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_crowdfield::prelude::*;
//!
//! fn setup(mut commands: Commands) {
//!     commands.insert_resource(MarkerGround::default());
//!     // A walker on a tree path to its goal…
//!     let walker = commands
//!         .spawn((
//!             CrowdAgent,
//!             AgentGoals::point(Vec2::new(25.0, 5.0)),
//!             MarkerSteering::Goals,
//!             Transform::from_xyz(2.0, 5.0, 0.0),
//!         ))
//!         .id();
//!     // …and one that pursues it.
//!     commands.spawn((
//!         CrowdAgent,
//!         MarkerSteering::Pursue(walker),
//!         Transform::from_xyz(2.0, 15.0, 0.0),
//!     ));
//! }
//! ```
//!
//! ## When things run
//!
//! In each planner step, after agents are registered, marker agents join, change order or
//! leave the back end (an agent that loses [`MarkerSteering`] walks its own local map again);
//! after guidance, the back end steps over every agent's position and hands the marker agents
//! their steps. Until [`MarkerWorld`] holds markers they stand; inserting [`MarkerGround`] is
//! the game's (a ground of the seed's 60 markers per m² is inserted when a marker agent
//! appears and none is there).
//!
//! ## Bad input
//!
//! An order the back end refuses (a target entity that is no crowd agent, the agent itself, an
//! unknown alignment mask) gets a [`MarkerOrderRejected`] message and the agent stands until
//! given another; [`MarkerSteeringSettings`] out of range get one too, and the previous settings
//! stay.

use bevy::prelude::*;

use crowdfield_markers::{MarkerCrowd, MarkerCrowdSettings, MarkerError, Order};
use crowdfield_steer::{AgentId, Steering};

use crate::marker::{MarkerGround, MarkerWorld};
use crate::settings::CrowdfieldSettings;
use crate::world::CrowdWorld;

/// Puts a crowd agent under the marker back end, with what it does (digest 002 §3 A3, A5–A7).
#[derive(Component, Debug, Clone, PartialEq)]
pub enum MarkerSteering {
    /// Walk its [`AgentGoals`](crate::AgentGoals) in order on tree paths.
    Goals,
    /// Follow another agent, regrowing the tree where it crosses it.
    Pursue(Entity),
    /// Pursue a target with every other agent surrounding it, from every side.
    Surround(Entity),
    /// Leave the circle of these followers.
    Escape(Vec<Entity>),
    /// Fill the formation shape sprayed with marker tag `shape`; with a mask (an index in
    /// [`MarkerSteeringSettings::masks`]), align inside it too.
    Formation {
        /// The tag of the shape's markers (a spray's tag).
        shape: u32,
        /// An alignment mask.
        mask: Option<usize>,
    },
    /// Direct motion on an alignment mask (an index in [`MarkerSteeringSettings::masks`]).
    Align(usize),
}

/// How the marker back end steers (the seed's parameters) and its alignment masks. The step
/// length follows [`CrowdfieldSettings::planner_hz`] (the seed's β = speed / 24 Hz).
#[derive(Resource, Debug, Clone, PartialEq, Default)]
pub struct MarkerSteeringSettings {
    /// Tree growth, speed, personal space, d_enf, formation weight, crowd mode…
    pub settings: MarkerCrowdSettings,
    /// Alignment masks, by index.
    pub masks: Vec<crowdfield_markers::Mask>,
}

/// An order or settings the marker back end refused.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct MarkerOrderRejected {
    /// The agent (`None`: the settings).
    pub entity: Option<Entity>,
    /// Why.
    pub error: MarkerError,
}

/// The marker back end and its agents (see the module doc).
#[derive(Resource, Debug)]
pub struct MarkerAgents {
    crowd: MarkerCrowd,
    /// Each marker agent's entity, crowd id and the order it was given.
    agents: Vec<(Entity, AgentId, MarkerSteering)>,
    settings: Option<MarkerSteeringSettings>,
}

impl Default for MarkerAgents {
    fn default() -> Self {
        Self {
            crowd: MarkerCrowd::new(MarkerCrowdSettings::default()).expect("the seed's settings"),
            agents: Vec::new(),
            settings: None,
        }
    }
}

impl MarkerAgents {
    /// The back end (trees, phases, held markers) for overlays and tests.
    pub fn crowd(&self) -> &MarkerCrowd {
        &self.crowd
    }

    /// The crowd id of a marker agent.
    pub fn agent(&self, entity: Entity) -> Option<AgentId> {
        self.agents
            .iter()
            .find(|(e, _, _)| *e == entity)
            .map(|(_, id, _)| *id)
    }
}

type SteeredItem<'a> = (Entity, Ref<'a, MarkerSteering>);

/// Marker agents join, change order or leave the back end; settings changes rebuild it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sync_marker_agents(
    mut commands: Commands,
    settings: Res<CrowdfieldSettings>,
    wanted: Res<MarkerSteeringSettings>,
    ground: Option<Res<MarkerGround>>,
    markers: Res<MarkerWorld>,
    mut world: ResMut<CrowdWorld>,
    mut agents: ResMut<MarkerAgents>,
    steered: Query<SteeredItem>,
    mut rejected: MessageWriter<MarkerOrderRejected>,
) {
    if ground.is_none() && !steered.is_empty() {
        commands.insert_resource(MarkerGround::default());
    }
    let agents = &mut *agents;
    // Settings (and the planner's period) changed: a new back end, the orders given again.
    let mut fresh = wanted.settings;
    fresh.dt = settings.planner_period();
    let asked = MarkerSteeringSettings {
        settings: fresh,
        masks: wanted.masks.clone(),
    };
    if agents.settings.as_ref() != Some(&asked) {
        match MarkerCrowd::new(fresh).and_then(|mut c| {
            for m in &wanted.masks {
                c.add_mask(m.clone())?;
            }
            Ok(c)
        }) {
            Ok(crowd) => {
                agents.crowd = crowd;
                agents.agents.clear();
            }
            Err(error) => {
                rejected.write(MarkerOrderRejected {
                    entity: None,
                    error,
                });
            }
        }
        agents.settings = Some(asked);
    }
    // Those gone: unsteered, despawned or out of the crowd.
    {
        let Some(crowd) = world.crowd_mut() else {
            return;
        };
        let back = &mut agents.crowd;
        keep_steered(
            crowd,
            &mut agents.agents,
            |e| steered.contains(e),
            |id| {
                back.remove(id);
            },
        );
    }
    let empty;
    let set = match markers.markers() {
        Some(set) => set,
        None => {
            empty = crowdfield_markers::MarkerSet::new(Default::default(), vec![])
                .expect("default settings");
            &empty
        }
    };
    for (entity, steering) in &steered {
        let Some(id) = world.agent_id(entity) else {
            continue;
        };
        let known = agents.agents.iter().position(|(e, _, _)| *e == entity);
        if let Some(k) = known
            && agents.agents[k].1 == id
            && agents.agents[k].2 == *steering
        {
            continue;
        }
        let inserted = translate(&steering, entity, &world)
            .and_then(|order| agents.crowd.insert(set, id, order));
        match inserted {
            Ok(()) => {
                if let Some(crowd) = world.crowd_mut() {
                    let _ = crowd.set_steering(id, Steering::External);
                }
                match known {
                    Some(k) => agents.agents[k] = (entity, id, (*steering).clone()),
                    None => agents.agents.push((entity, id, (*steering).clone())),
                }
            }
            Err(error) => {
                // Remembered as given, so the message comes once; the agent stands.
                agents.crowd.remove(id);
                if let Some(crowd) = world.crowd_mut() {
                    let _ = crowd.set_steering(id, Steering::External);
                }
                match known {
                    Some(k) => agents.agents[k] = (entity, id, (*steering).clone()),
                    None => agents.agents.push((entity, id, (*steering).clone())),
                }
                rejected.write(MarkerOrderRejected {
                    entity: Some(entity),
                    error,
                });
            }
        }
    }
}

/// Keeps the back end's agents that are still steered by it and in the crowd; the others
/// leave it (`leave`) and walk their own local maps again.
pub(crate) fn keep_steered<T>(
    crowd: &mut crowdfield_steer::Crowd,
    agents: &mut Vec<(Entity, AgentId, T)>,
    steered: impl Fn(Entity) -> bool,
    mut leave: impl FnMut(AgentId),
) {
    agents.retain(|(entity, id, _)| {
        if steered(*entity) && crowd.agent(*id).is_some() {
            return true;
        }
        leave(*id);
        if crowd.agent(*id).is_some() {
            let _ = crowd.set_steering(*id, Steering::LocalMap);
        }
        false
    });
}

/// A component's order in crowd ids.
fn translate(
    steering: &MarkerSteering,
    me: Entity,
    world: &CrowdWorld,
) -> Result<Order, MarkerError> {
    let id = |e: Entity| {
        if e == me {
            return Err(MarkerError::BadOrder(
                "an agent cannot pursue or flee itself",
            ));
        }
        world
            .agent_id(e)
            .ok_or(MarkerError::BadOrder("the target entity is no crowd agent"))
    };
    Ok(match steering {
        MarkerSteering::Goals => Order::Goals,
        MarkerSteering::Pursue(t) => Order::Pursue(id(*t)?),
        MarkerSteering::Surround(t) => Order::Surround(id(*t)?),
        MarkerSteering::Escape(from) => {
            Order::Escape(from.iter().map(|e| id(*e)).collect::<Result<_, _>>()?)
        }
        MarkerSteering::Formation { shape, mask } => Order::Formation {
            shape: *shape,
            mask: *mask,
        },
        MarkerSteering::Align(mask) => Order::Align(*mask),
    })
}

/// The back end steps over every agent and hands the marker agents their steps.
pub(crate) fn drive_marker_agents(
    markers: Res<MarkerWorld>,
    mut world: ResMut<CrowdWorld>,
    mut agents: ResMut<MarkerAgents>,
    mut rejected: MessageWriter<MarkerOrderRejected>,
) {
    let (Some(set), Some(crowd)) = (markers.markers(), world.crowd_mut()) else {
        return;
    };
    if agents.agents.is_empty() {
        return;
    }
    if let Err(error) = agents.crowd.drive(crowd, set) {
        rejected.write(MarkerOrderRejected {
            entity: None,
            error,
        });
    }
}
