//! The BioCrowds overlay (key R, seed 003): for terrain walkers ([`BioAgents`]), each one's
//! personal space this step (the markers of the terrain within R that are nearer it than any
//! other agent: the split Eqs. 4.1–4.4 are summed over, `crowdfield_markers::personal::split`
//! over the terrain's markers) in its own colour; its A* route still ahead as a line with a
//! cross at each sub-goal; and, for indoor routines, the place it walks to (a ring) or acts at
//! (a filled square).
//!
//! Personal spaces are drawn for the first [`DRAWN`] walkers; routes and routine places for
//! every walker. On a 3D game's x–z ground everything lies on the surface
//! ([`crate::ground`]).

use bevy::math::DVec2;
use bevy::prelude::*;
use bevy_crowdfield::markers::{RoutinePhase, personal};
use bevy_crowdfield::prelude::*;

use crate::CrowdDebugSystems;
use crate::ground::GroundGizmos;
use crate::overlay::{OverlayId, overlay_enabled};
// A walker's colour, from its id, as in the marker agents' overlay.
use crate::trees::colour;

impl OverlayId {
    /// BioCrowds walkers' personal spaces, routes ahead and routine places.
    pub const BIO_CROWDS: Self = Self("crowdfield.bio_crowds");
}

/// Personal spaces are drawn for at most this many walkers.
pub const DRAWN: usize = 64;
/// Colour of routes ahead.
const ROUTE: Color = Color::srgb(1.0, 0.85, 0.3);
/// Side of a marker's square, metres.
const MARKER: f32 = 0.05;

pub(crate) fn build(app: &mut App) {
    app.add_systems(
        Update,
        draw_bio_crowds
            .run_if(overlay_enabled(OverlayId::BIO_CROWDS))
            .in_set(CrowdDebugSystems::Draw),
    );
}

/// Which of `crowd`'s agents take part in the split drawn for `drawn` (their own index among
/// the returned positions, or `None` for a neighbour within 2R that only takes markers from
/// them), and where they stand.
pub(crate) fn split_among(
    agents: impl Iterator<Item = (u32, DVec2)>,
    drawn: &[(u32, DVec2)],
    radius: f64,
) -> (Vec<Option<u32>>, Vec<DVec2>) {
    let mut who = Vec::new();
    let mut at = Vec::new();
    for (id, p) in agents {
        if drawn.iter().any(|(i, _)| *i == id) {
            who.push(Some(id));
            at.push(p);
        } else if drawn.iter().any(|(_, q)| q.distance(p) <= 2.0 * radius) {
            who.push(None);
            at.push(p);
        }
    }
    (who, at)
}

fn draw_bio_crowds(
    mut gizmos: GroundGizmos,
    agents: Option<Res<BioAgents>>,
    world: Res<CrowdWorld>,
    terrain: Option<Res<TerrainWorld>>,
) {
    let (Some(agents), Some(crowd)) = (agents, world.crowd()) else {
        return;
    };
    let bio = agents.crowd();
    if let Some(set) = terrain.as_deref().and_then(|t| t.markers()) {
        // Every crowd agent takes part in the split (seed 003: anyone standing there takes
        // the markers), so the neighbours are the crowd's, not only BioCrowds walkers.
        let drawn: Vec<(u32, DVec2)> = bio
            .states()
            .take(DRAWN)
            .filter_map(|(id, _)| crowd.agent(id).map(|a| (id.0, a.position())))
            .collect();
        let (who, at) = split_among(
            crowd.agents().map(|(id, a)| (id.0, a.position())),
            &drawn,
            bio.settings().radius,
        );
        for (owner, ids) in who
            .iter()
            .zip(personal::split(set, &at, bio.settings().radius))
        {
            let Some(owner) = owner else {
                continue;
            };
            let c = colour(*owner).with_alpha(0.7);
            for m in ids {
                if let Some(marker) = set.marker(m) {
                    gizmos.rect(marker.position.as_vec2(), Vec2::splat(MARKER), c);
                }
            }
        }
    }
    for (id, state) in bio.states() {
        let Some(agent) = crowd.agent(id) else {
            continue;
        };
        let here = agent.position().as_vec2();
        let ahead = state.route_ahead();
        if !ahead.is_empty() {
            let points = std::iter::once(here).chain(ahead.iter().map(|p| p.as_vec2()));
            gizmos.linestrip(points, ROUTE);
            for p in ahead {
                gizmos.cross(p.as_vec2(), 0.25, ROUTE);
            }
        }
        match state.routine() {
            Some(RoutinePhase::Walking { place, .. }) => {
                gizmos.circle(place.as_vec2(), 0.3, colour(id.0), 16);
            }
            Some(RoutinePhase::Acting { .. }) => {
                gizmos.rect(here, Vec2::splat(0.5), colour(id.0));
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_takes_the_drawn_walkers_and_their_neighbours_only() {
        let drawn = [(3, DVec2::new(0.0, 0.0))];
        let crowd = [
            (1, DVec2::new(2.0, 0.0)),  // within 2R = 2.4: a neighbour
            (3, DVec2::new(0.0, 0.0)),  // drawn
            (7, DVec2::new(10.0, 0.0)), // far: left out
        ];
        let (who, at) = split_among(crowd.into_iter(), &drawn, 1.2);
        assert_eq!(who, vec![None, Some(3)]);
        assert_eq!(at, vec![DVec2::new(2.0, 0.0), DVec2::ZERO]);
    }
}
