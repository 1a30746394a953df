//! Worlds and checks shared by the group scenario tests.
// Each test crate uses some of them.
#![allow(dead_code)]

use crowdfield_field::Shape;
use crowdfield_group::{Formation, GroupId, GroupSettings, Groups, Template};
use crowdfield_steer::{AgentId, Crowd};
use glam::DVec2;

#[allow(unused_imports)]
pub use crowdfield_fixtures::{block, deepest_overlap, spawn_at, world};

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
