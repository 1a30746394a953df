//! # crowdfield_debug
//!
//! Overlays that show what crowdfield's planner computes, switched at run time: each goal's
//! global map as a heat map with isolines and descent arrows, the selected agent's local map and
//! decision, agent states, sub-goal stacks, planner statistics, and groups' maps, bands and
//! slots.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_crowdfield::prelude::*;
//! use crowdfield_debug::prelude::*;
//!
//! fn main() {
//!     App::new()
//!         .add_plugins((DefaultPlugins, CrowdfieldPlugins, CrowdDebugPlugin))
//!         .add_systems(Startup, |mut overlays: ResMut<DebugOverlays>| {
//!             overlays.set(OverlayId::HEAT_MAP, true);
//!         })
//!         .run();
//! }
//! ```
//!
//! ## Keys (defaults, see [`CrowdDebugSettings`])
//!
//! | key | does |
//! |---|---|
//! | 1 | global map heat map ([`OverlayId::HEAT_MAP`]) |
//! | 2 | isolines of the global map ([`OverlayId::ISOLINES`]) |
//! | 3 | descent arrows of the global map ([`OverlayId::DESCENT`]) |
//! | 4 | the selected agent's local map and decision ([`OverlayId::LOCAL_MAP`]) |
//! | 5 | agent states as coloured rings ([`OverlayId::AGENT_STATES`]) |
//! | 6 | sub-goal stacks ([`OverlayId::SUBGOALS`]) |
//! | 7 | counts and planner time ([`OverlayId::STATS`], on at start) |
//! | 8 | group maps as heat maps: the selected agent's group, or the first few ([`OverlayId::GROUP_MAP`]) |
//! | 9 | group bands μ, brighter where the map's descent outweighs the slot ([`OverlayId::GROUP_BANDS`]) |
//! | 0 | every group's slots, member-to-slot lines, map bounds and heading ([`OverlayId::GROUP_SLOTS`]) |
//! | P | drawn paths: strokes, tubes, sub-goals, bridges, waypoints ([`OverlayId::DRAWN_PATHS`]) |
//! | K | the drawn paths' stroke fields as heat maps ([`OverlayId::STROKE_FIELDS`]) |
//! | M | markers, a pixel each, and painted terrain ([`OverlayId::MARKERS`]) |
//! | T | marker agents' trees, key positions, personal spaces or held markers ([`OverlayId::MARKER_TREES`]) |
//! | R | terrain (BioCrowds) walkers' personal spaces, A* routes ahead, routine places ([`OverlayId::BIO_CROWDS`]) |
//! | G | which goal's global map: the selected agent's, then each goal in turn |
//! | Tab / Shift+Tab | select the next / previous agent |
//! | left click | select the agent under the cursor (elsewhere: clear) |
//! | F1 | hide or show the help panel |
//!
//! ## What the colours mean
//!
//! Heat maps show `log10(1 − p)` (see [`paint`]): dark purple far from the goal, yellow at it,
//! white goal cells, grey obstacles, magenta where p rounded to 1 (flat, seed 000 §4.2). Agent
//! states: blue moving, yellow waiting, green arrived, orange stuck, red unreachable, grey
//! pending, purple rejected ([`state_colour`]).
//!
//! ## 2D and 3D games
//!
//! Overlays draw on the crowd's ground: the x–y plane of a 2D game, or the surface of a 3D
//! game's x–z ground ([`CrowdfieldSettings::plane`](bevy_crowdfield::prelude::CrowdfieldSettings),
//! heights from `GroundHeight`), and the mouse picks points of that surface; see [`ground`].
//!
//! ## Extending
//!
//! Other crates register their own overlays ([`overlay`]) and draw them in
//! [`CrowdDebugSystems::Draw`] (through [`GroundGizmos`](ground::GroundGizmos) to draw on
//! either ground), reading [`SelectedAgent`] if they show per-agent data.
//!
//! ## Cost
//!
//! Every overlay's systems are gated by [`overlay_enabled`]; while an overlay is off only a
//! check of its switch runs. Cached pictures (heat map texture, isolines, arrows) are rebuilt
//! only when the shown map's [`revision`](bevy_crowdfield::steer::Goal::revision) changes.

mod agents;
pub mod bio;
mod global;
pub mod ground;
mod groups;
mod markers;
pub mod overlay;
pub mod paint;
mod panel;
pub mod tool;
mod trees;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;

pub use agents::state_colour;
pub use overlay::{
    DebugOverlayAppExt, DebugOverlays, OverlayId, OverlayInfo, overlay_enabled,
    overlay_enabled_or_switched,
};

/// Everything a game needs in one import.
pub mod prelude {
    pub use crate::ground::{Ground, GroundGizmos};
    pub use crate::overlay::{
        DebugOverlayAppExt, DebugOverlays, OverlayId, OverlayInfo, overlay_enabled,
        overlay_enabled_or_switched,
    };
    pub use crate::{
        CrowdDebugPlugin, CrowdDebugSettings, CrowdDebugSystems, SelectedAgent, ShownMap,
    };
}

impl OverlayId {
    /// The shown goal's global map as a heat map.
    pub const HEAT_MAP: Self = Self("crowdfield.heat_map");
    /// Isolines of the shown global map.
    pub const ISOLINES: Self = Self("crowdfield.isolines");
    /// Descent arrows of the shown global map.
    pub const DESCENT: Self = Self("crowdfield.descent");
    /// The selected agent's local map: zones, stamped neighbours, intermediate goal, descent,
    /// heading, (v, ε) and speed factor.
    pub const LOCAL_MAP: Self = Self("crowdfield.local_map");
    /// Every agent's state as a coloured ring.
    pub const AGENT_STATES: Self = Self("crowdfield.agent_states");
    /// Sub-goal stacks: each layer's goal cells, and rings on agents that follow sub-goals.
    pub const SUBGOALS: Self = Self("crowdfield.subgoals");
    /// Agent counts by state and planner time per step.
    pub const STATS: Self = Self("crowdfield.stats");
}

/// Which goal's global map the map overlays show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
pub enum ShownMap {
    /// The selected agent's current goal, or the first goal when none is selected.
    #[default]
    FollowSelection,
    /// The goal with this index among the goals the crowd has (wraps around them).
    Goal(u32),
}

/// Settings of the debug overlays. Which overlays are on lives in [`DebugOverlays`].
#[derive(Resource, Debug, Clone, PartialEq, Reflect)]
#[reflect(Resource)]
pub struct CrowdDebugSettings {
    /// Whether the default keys and the mouse act (overlay keys included).
    pub input: bool,
    /// Whether the help panel is shown.
    pub show_help: bool,
    /// Shows and hides the help panel.
    pub help_key: Option<KeyCode>,
    /// Selects the next agent (previous with Shift).
    pub next_agent_key: Option<KeyCode>,
    /// Steps [`CrowdDebugSettings::shown_map`] through the goals.
    pub next_map_key: Option<KeyCode>,
    /// Selects the agent under the cursor.
    pub select_button: Option<MouseButton>,
    /// Which goal's global map is shown.
    pub shown_map: ShownMap,
    /// Isolines drawn, evenly spaced in `log10(1 − p)`.
    pub isolines: usize,
    /// Cells between descent arrows.
    pub arrow_spacing: usize,
    /// Opacity of the global heat map, 0–1.
    pub heat_map_alpha: f32,
    /// Depth of the global heat map sprite; below the game's sprites by default.
    pub heat_map_z: f32,
}

impl Default for CrowdDebugSettings {
    fn default() -> Self {
        Self {
            input: true,
            show_help: true,
            help_key: Some(KeyCode::F1),
            next_agent_key: Some(KeyCode::Tab),
            next_map_key: Some(KeyCode::KeyG),
            select_button: Some(MouseButton::Left),
            shown_map: ShownMap::FollowSelection,
            isolines: 12,
            arrow_spacing: 4,
            heat_map_alpha: 1.0,
            heat_map_z: -10.0,
        }
    }
}

/// The agent the per-agent overlays show; set by clicks and keys or from code.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq, Eq, Reflect)]
#[reflect(Resource)]
pub struct SelectedAgent(pub Option<Entity>);

/// The debug plugin's systems, in `Update` after the crowd's interpolation.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrowdDebugSystems {
    /// Keys and clicks: overlay switches, selection, shown map.
    Input,
    /// Everything drawn; other crates' overlays go here too.
    Draw,
}

/// The debug overlays with their keys, help panel and selection. Add after
/// `CrowdfieldPlugins` and a renderer (`DefaultPlugins`).
#[derive(Debug, Default, Clone, Copy)]
pub struct CrowdDebugPlugin;

impl Plugin for CrowdDebugPlugin {
    fn build(&self, app: &mut App) {
        let builtin = [
            (OverlayId::HEAT_MAP, "global map heat map", KeyCode::Digit1),
            (OverlayId::ISOLINES, "global map isolines", KeyCode::Digit2),
            (OverlayId::DESCENT, "global descent arrows", KeyCode::Digit3),
            (
                OverlayId::LOCAL_MAP,
                "selected agent's local map",
                KeyCode::Digit4,
            ),
            (OverlayId::AGENT_STATES, "agent states", KeyCode::Digit5),
            (OverlayId::SUBGOALS, "sub-goal stacks", KeyCode::Digit6),
            (OverlayId::STATS, "counts and planner time", KeyCode::Digit7),
            (OverlayId::GROUP_MAP, "group maps", KeyCode::Digit8),
            (OverlayId::GROUP_BANDS, "group bands (mu)", KeyCode::Digit9),
            (
                OverlayId::GROUP_SLOTS,
                "group slots and map bounds",
                KeyCode::Digit0,
            ),
            (
                OverlayId::DRAWN_PATHS,
                "drawn paths: strokes, tubes, sub-goals",
                KeyCode::KeyP,
            ),
            (
                OverlayId::STROKE_FIELDS,
                "drawn paths' stroke fields",
                KeyCode::KeyK,
            ),
            (
                OverlayId::MARKERS,
                "markers and painted terrain",
                KeyCode::KeyM,
            ),
            (
                OverlayId::MARKER_TREES,
                "marker agents' trees, key positions, held markers",
                KeyCode::KeyT,
            ),
            (
                OverlayId::BIO_CROWDS,
                "terrain walkers: personal spaces, routes, routine places",
                KeyCode::KeyR,
            ),
        ];
        for (id, label, key) in builtin {
            let mut info = OverlayInfo::new(id, label).with_key(key);
            info.enabled = id == OverlayId::STATS;
            app.register_debug_overlay(info);
        }
        app.init_resource::<CrowdDebugSettings>()
            .init_resource::<SelectedAgent>()
            .register_type::<CrowdDebugSettings>()
            .register_type::<SelectedAgent>()
            .register_type::<DebugOverlays>()
            .configure_sets(
                Update,
                (CrowdDebugSystems::Input, CrowdDebugSystems::Draw).chain(),
            )
            .add_systems(Startup, panel::spawn_panels)
            .add_systems(
                Update,
                (
                    overlay::toggle_from_keys.run_if(input_enabled),
                    agents::select.run_if(input_enabled),
                    panel::help_key.run_if(input_enabled),
                    global::next_map.run_if(input_enabled),
                    agents::forget_missing.run_if(|s: Res<SelectedAgent>| s.0.is_some()),
                )
                    .chain()
                    .in_set(CrowdDebugSystems::Input),
            );
        global::build(app);
        groups::build(app);
        markers::build(app);
        trees::build(app);
        bio::build(app);
        agents::build(app);
        panel::build(app);
    }
}

fn input_enabled(settings: Res<CrowdDebugSettings>) -> bool {
    settings.input
}

/// The crowd goal whose map the map overlays show, if the crowd has goals.
pub(crate) fn shown_goal(
    world: &CrowdWorld,
    settings: &CrowdDebugSettings,
    selected: SelectedAgent,
) -> Option<bevy_crowdfield::steer::GoalId> {
    let crowd = world.crowd()?;
    let count = goal_count(crowd);
    if count == 0 {
        return None;
    }
    match settings.shown_map {
        ShownMap::Goal(i) => crowd.goal_ids().nth((i % count) as usize),
        ShownMap::FollowSelection => {
            let followed = selected
                .0
                .and_then(|e| world.agent_id(e))
                .and_then(|id| crowd.agent(id))
                .and_then(|a| a.params().goals.get(a.goal_index()).copied());
            followed.or_else(|| crowd.goal_ids().next())
        }
    }
}

/// Goals the crowd has (removed goals left out).
pub(crate) fn goal_count(crowd: &bevy_crowdfield::steer::Crowd) -> u32 {
    crowd.goal_count() as u32
}
