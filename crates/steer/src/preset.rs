//! Presets: the seeds' steering, and crowdfield's steering for crowds that flow.
//!
//! A crowd steps every agent by the method of seeds 000 and 001 (the parent crate's steps 1–5)
//! either way; the presets differ in what the seeds leave open or get wrong for dense crowds
//! (docs/steering.md, *Presets*):
//!
//! | | [`Preset::Seeds`] (the default for now) | [`Preset::Flow`] |
//! |---|---|---|
//! | neighbours stamped ([`NeighbourStamping`]) | every one | all but those walking one's way |
//! | a never-moved neighbour's way | unknown (stamped) | its global map's descent |
//! | a local descent that turns back from the global map's, or none | followed | replaced by the global way where only walkers that plan lie within 1 m ahead: the agent presses on and queues, until 15 planner steps pass without progress (then it follows its local map until it progresses) |
//! | collision guard | halves the step until it fits, in id order | the longest step that fits, then a slide along the agent it meets; steps it shortened try again once everyone has moved |
//!
//! `Seeds` walks exactly as crowdfield walked before presets existed (the shipped scenarios'
//! trajectories hash to the same values, `crates/cli/tests/presets.rs`); every seed experiment
//! test runs on it.

use crate::local_map::NeighbourStamping;
use crowdfield_field::Coverage;

/// [`Preset::impatience`] on [`Preset::Flow`]: 15 planner steps. Measured against 10, 20, 30
/// and 60 on the flow benchmark and six of SteerSuite's dense cases (docs/steering.md,
/// *Presets*): shorter lets dense crossings clear sooner and slows counterflow.
const FLOW_IMPATIENCE: u32 = 15;

/// Which steering a crowd uses where the seeds leave a choice ([`CrowdSettings::preset`]).
///
/// [`CrowdSettings::preset`]: crate::CrowdSettings::preset
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Preset {
    /// The seeds' steering, as written: every neighbour stamped, the local descent followed
    /// wherever it points, the collision guard halving a step until it fits. The default
    /// until [`Preset::Flow`] meets the flow benchmark's goals (docs/steering.md, *Presets*).
    #[default]
    Seeds,
    /// Crowds that flow: neighbours walking one's way left out of one's map, a
    /// local descent that turns back from the way replaced by the way (the collision guard
    /// then holds the agent behind whoever is in front, as people queue), and a collision
    /// guard that takes the longest step that fits and slides along the agent it meets.
    Flow,
}

impl Preset {
    /// Which neighbours an agent stamps where its [`LocalMapSettings::neighbours`] is `None`.
    ///
    /// [`LocalMapSettings::neighbours`]: crate::LocalMapSettings::neighbours
    pub fn neighbours(self) -> NeighbourStamping {
        match self {
            Preset::Seeds => NeighbourStamping::All,
            Preset::Flow => NeighbourStamping::ExceptSameWay,
        }
    }

    /// Which cells obstacles close where an agent's
    /// [`LocalMapSettings::obstacle_coverage`](crate::LocalMapSettings::obstacle_coverage) is
    /// `None`.
    pub fn obstacle_coverage(self) -> Coverage {
        match self {
            // `Centre` on `Flow` was tried (docs/steering.md, *Presets*): wider doors passed
            // more, narrow ones and counterflow jammed.
            Preset::Seeds | Preset::Flow => Coverage::Touch,
        }
    }

    /// Whether a neighbour that has not stepped yet is read as walking its global map's way
    /// (otherwise its way is unknown, and [`NeighbourStamping::ExceptSameWay`] stamps it).
    pub fn reads_first_ways(self) -> bool {
        self == Preset::Flow
    }

    /// Whether an agent whose local descent turns back from its global way (more than 90°),
    /// or is zero (a window closed all round, as in a doorway whose jambs close its cells),
    /// walks its global way instead, held by the collision guard, where nothing but walkers
    /// that plan lies within 1 m ahead along that way (no shape, and no agent that stands,
    /// arrived or is steered from outside: those it walks round as the seeds do), and it has
    /// not run out of patience ([`Preset::impatience`]). Settling agents never queue.
    pub fn queues(self) -> bool {
        self == Preset::Flow
    }

    /// Planner steps without progress towards its goal (see
    /// [`CrowdSettings::stuck_after`](crate::CrowdSettings::stuck_after) for what progress
    /// is) after which a queueing agent stops pressing on and follows its local map again, as
    /// the seeds do, until it progresses: it looks for another way round. Where two dense
    /// crowds press into each other head-on or across, nobody progresses and pressing on
    /// alone would hold them there for good. Only read where [`Preset::queues`] is on.
    pub fn impatience(self) -> u32 {
        FLOW_IMPATIENCE
    }

    /// Whether the collision guard takes the longest step that fits and then slides along the
    /// agent it met, and the steps it shortened try again, from where they stopped, once every
    /// agent has moved (otherwise it halves the step until it fits, at most eight times, in id
    /// order, so that a walker committed before the one in front of it is held by where that
    /// one stood). Crowds with it do not commit while they plan (the second try needs every
    /// plan).
    pub fn slides(self) -> bool {
        self == Preset::Flow
    }
}
