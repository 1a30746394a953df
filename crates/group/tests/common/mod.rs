//! Worlds and checks shared by the group scenario tests.
// Each test crate uses some of them.
#![allow(dead_code)]

use crowdfield_field::Shape;
use crowdfield_group::{Formation, GroupId, GroupSettings, Groups, Template};
use crowdfield_steer::{AgentId, AgentParams, CONTACT_TOLERANCE, Crowd, CrowdSettings};
use glam::DVec2;

/// A world of `size` metres with `statics`.
pub fn world(size: DVec2, statics: Vec<Shape>) -> Crowd {
    Crowd::new(
        CrowdSettings {
            min: DVec2::ZERO,
            max: size,
            global_cell_size: 0.25,
            global_inflation: 0.2,
            ..CrowdSettings::default()
        },
        statics,
    )
    .unwrap()
}

/// Spawns walkers of radius 0.25 at `points` (no goals: they stand until a group takes them).
pub fn spawn_at(crowd: &mut Crowd, points: &[DVec2]) -> Vec<AgentId> {
    points
        .iter()
        .map(|p| {
            crowd
                .spawn(AgentParams {
                    position: *p,
                    ..AgentParams::default()
                })
                .unwrap()
        })
        .collect()
}

/// `n` points in a block of rows of `per_row`, `spacing` apart, the block's centre at `centre`.
pub fn block(centre: DVec2, n: usize, per_row: usize, spacing: f64) -> Vec<DVec2> {
    let rows = n.div_ceil(per_row);
    (0..n)
        .map(|i| {
            let (r, c) = (i / per_row, i % per_row);
            centre
                + DVec2::new(
                    (c as f64 - (per_row as f64 - 1.0) * 0.5) * spacing,
                    (r as f64 - (rows as f64 - 1.0) * 0.5) * spacing,
                )
        })
        .collect()
}

/// The deepest overlap (metres) between any two agents, or between an agent and a static
/// shape, beyond the crowd's contact tolerance; 0 when none overlap.
pub fn deepest_overlap(crowd: &Crowd) -> f64 {
    let agents: Vec<(DVec2, f64)> = crowd
        .agents()
        .map(|(_, a)| (a.position(), a.params().radius))
        .collect();
    let mut worst: f64 = 0.0;
    for (i, (p, r)) in agents.iter().enumerate() {
        for (q, s) in &agents[..i] {
            worst = worst.max(r + s - (*p - *q).length() - CONTACT_TOLERANCE);
        }
        for shape in crowd.statics() {
            let d = shape.distance(*p).unwrap();
            worst = worst.max(r - d - CONTACT_TOLERANCE);
        }
    }
    worst.max(0.0)
}

/// Positions of `ids`.
pub fn positions(crowd: &Crowd, ids: &[AgentId]) -> Vec<DVec2> {
    ids.iter()
        .map(|id| crowd.agent(*id).unwrap().position())
        .collect()
}

/// Each member's position with its slot, in member order.
pub fn members_and_slots(crowd: &Crowd, groups: &Groups, id: GroupId) -> (Vec<DVec2>, Vec<DVec2>) {
    let group = groups.group(id).unwrap();
    group
        .member_slots()
        .filter_map(|(a, s)| Some((crowd.agent(a)?.position(), s?)))
        .unzip()
}

/// A disc goal or obstacle.
pub fn disc(centre: DVec2, radius: f64) -> Shape {
    Shape::Disc { centre, radius }
}

/// A new table holding one group of `ids` in a box, with the default settings.
pub fn box_group(crowd: &mut Crowd, ids: &[AgentId]) -> (Groups, GroupId) {
    let mut groups = Groups::new();
    let group = groups
        .create(
            crowd,
            ids,
            GroupSettings::default(),
            Some(Formation::template(Template::Box)),
        )
        .unwrap();
    (groups, group)
}
