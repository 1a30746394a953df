//! The marker agents' overlay (key T, seed 002): every marker agent's tree path, its live
//! segments faint, the way it will walk bright, key positions (nodes with two or more live
//! children) as rings, branches that died in the last 2 seconds (48 steps: unchosen at a key
//! position, pruned for a moving goal, erased) in red; each agent's markers in its own colour
//! (group mode: its personal space, the markers within R nearer it than any other agent;
//! crowd mode: the markers it holds); formation goals as crosses.

use bevy::math::DVec2;
use bevy::prelude::*;
use bevy_crowdfield::markers::{Mode, NodeId, TreePath, personal};
use bevy_crowdfield::prelude::*;

use crate::CrowdDebugSystems;
use crate::ground::GroundGizmos;
use crate::overlay::{OverlayId, overlay_enabled};

impl OverlayId {
    /// Marker agents' tree paths, key positions, dead branches and held markers.
    pub const MARKER_TREES: Self = Self("crowdfield.marker_trees");
}

/// Colour of live segments.
const LIVE: Color = Color::srgba(0.3, 0.9, 1.0, 0.35);
/// Colour of the way ahead.
const AHEAD: Color = Color::srgb(0.3, 0.95, 1.0);
/// Colour of key positions.
const KEY: Color = Color::srgb(1.0, 0.95, 0.3);
/// Colour of branches that died lately.
const DEAD: Color = Color::srgba(1.0, 0.3, 0.25, 0.6);
/// Steps a dead branch stays drawn after it died.
const DEAD_FOR: u32 = 48;
/// Held markers and personal spaces are drawn for at most this many agents.
const HELD_AGENTS: usize = 64;

pub(crate) fn build(app: &mut App) {
    app.add_systems(
        Update,
        draw_trees
            .run_if(overlay_enabled(OverlayId::MARKER_TREES))
            .in_set(CrowdDebugSystems::Draw),
    );
}

/// An agent's colour, from its id.
pub(crate) fn colour(id: u32) -> Color {
    let hue = (id.wrapping_mul(137) % 360) as f32;
    Color::hsl(hue, 0.8, 0.6)
}

fn draw_trees(
    mut gizmos: GroundGizmos,
    agents: Option<Res<MarkerAgents>>,
    world: Res<CrowdWorld>,
    markers: Option<Res<MarkerWorld>>,
) {
    let (Some(agents), Some(crowd)) = (agents, world.crowd()) else {
        return;
    };
    let set = markers.as_deref().and_then(|m| m.markers());
    let settings = agents.crowd().settings();
    if let (Some(set), Mode::Groups) = (set, settings.mode) {
        // Personal spaces: the split among the drawn agents and every agent that could take
        // a marker from them (those within 2R).
        let r = settings.personal_radius;
        let drawn: Vec<(u32, DVec2)> = agents
            .crowd()
            .states()
            .take(HELD_AGENTS)
            .filter_map(|(id, _)| crowd.agent(id).map(|a| (id.0, a.position())))
            .collect();
        let mut who: Vec<Option<u32>> = Vec::new();
        let mut at: Vec<DVec2> = Vec::new();
        for (id, agent) in crowd.agents() {
            let p = agent.position();
            if let Some(&(mine, _)) = drawn.iter().find(|(i, _)| *i == id.0) {
                who.push(Some(mine));
                at.push(p);
            } else if drawn.iter().any(|(_, q)| q.distance(p) <= 2.0 * r) {
                who.push(None);
                at.push(p);
            }
        }
        for (owner, ids) in who.iter().zip(personal::split(set, &at, r)) {
            let Some(owner) = owner else {
                continue;
            };
            for m in ids {
                if let Some(marker) = set.marker(m) {
                    gizmos.rect(
                        marker.position.as_vec2(),
                        Vec2::splat(0.04),
                        colour(*owner).with_alpha(0.7),
                    );
                }
            }
        }
    }
    for (n, (id, state)) in agents.crowd().states().enumerate() {
        if let Some(goal) = state.formation_goal() {
            gizmos.cross(goal.as_vec2(), 0.3, KEY);
        }
        if let (Some(set), true) = (set, n < HELD_AGENTS) {
            for m in state.held() {
                if let Some(marker) = set.marker(*m) {
                    gizmos.rect(marker.position.as_vec2(), Vec2::splat(0.06), colour(id.0));
                }
            }
        }
        let Some(tree) = state.tree() else {
            continue;
        };
        let age = tree.age();
        for (_, node) in tree.nodes() {
            let Some(parent) = node.parent.and_then(|p| tree.node(p)) else {
                continue;
            };
            let (a, b) = (parent.position.as_vec2(), node.position.as_vec2());
            if node.alive {
                gizmos.line(a, b, LIVE);
            } else if node.died.is_some_and(|d| age.saturating_sub(d) < DEAD_FOR) {
                gizmos.line(a, b, DEAD);
            }
            if node.alive && node.is_key(tree) {
                gizmos.circle(b, 0.18, KEY, 32);
            }
        }
        if let Some(agent) = crowd.agent(id) {
            let way = way_ahead(tree, state.next());
            let mut from = agent.position().as_vec2();
            for p in way {
                gizmos.line(from, p, AHEAD);
                from = p;
            }
        }
    }
}

/// The nodes from `next` down the tree, each time to the child whose subtree holds the node
/// best for the aim (what the agent will choose at each key position, as the tree stands).
fn way_ahead(tree: &TreePath, next: Option<NodeId>) -> Vec<Vec2> {
    let mut out = Vec::new();
    let mut at = next;
    while let Some(n) = at {
        let Some(node) = tree.node(n) else {
            break;
        };
        out.push(node.position.as_vec2());
        at = tree.rank(n).first().copied();
        if out.len() > 256 {
            break;
        }
    }
    out
}
