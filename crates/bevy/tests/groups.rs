//! Headless app tests of groups through the plugin (MinimalPlugins, one planner step per
//! update): forming from components, orders, status and messages, bad input.

mod common;

use bevy::prelude::*;
use bevy_crowdfield::groups::{GroupError, LostReason};
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::steer::Steering;
use common::*;

/// Group messages seen so far.
#[derive(Resource, Default, Debug)]
struct GroupSeen {
    arrived: Vec<(Entity, u64)>,
    reached: Vec<Entity>,
    broken: Vec<Entity>,
    lost: Vec<(Entity, Entity, LostReason)>,
    rejected: Vec<(Entity, GroupError)>,
}

fn collect_groups(
    mut seen: ResMut<GroupSeen>,
    mut arrived: MessageReader<GroupArrived>,
    mut reached: MessageReader<GroupFormationReached>,
    mut broken: MessageReader<GroupFormationBroken>,
    mut lost: MessageReader<GroupMemberLost>,
    mut rejected: MessageReader<GroupRejected>,
) {
    seen.arrived
        .extend(arrived.read().map(|m| (m.group, m.spread)));
    seen.reached.extend(reached.read().map(|m| m.group));
    seen.broken.extend(broken.read().map(|m| m.group));
    seen.lost
        .extend(lost.read().map(|m| (m.group, m.member, m.reason)));
    seen.rejected
        .extend(rejected.read().map(|m| (m.group, m.error.clone())));
}

fn group_app(w: f32, h: f32) -> App {
    let mut app = app(w, h);
    app.init_resource::<GroupSeen>()
        .add_systems(FixedUpdate, collect_groups.after(CrowdfieldSystems::Events));
    app
}

fn group_seen(app: &App) -> &GroupSeen {
    app.world().resource::<GroupSeen>()
}

/// A group entity with `members` agents in a block at `at`, 1.5 m apart.
fn spawn_group(
    app: &mut App,
    at: Vec2,
    members: usize,
    group: CrowdGroup,
    order: GroupOrder,
) -> (Entity, Vec<Entity>) {
    let g = app.world_mut().spawn((group, order)).id();
    let ids = (0..members)
        .map(|i| {
            let p = at + Vec2::new((i % 3) as f32 * 1.5, (i / 3) as f32 * 1.5);
            app.world_mut()
                .spawn((
                    CrowdAgent,
                    Transform::from_translation(p.extend(0.0)),
                    MemberOf(g),
                ))
                .id()
        })
        .collect();
    (g, ids)
}

#[test]
fn a_group_formed_from_components_walks_its_order_in_formation_and_says_it_arrived() {
    let mut app = group_app(40.0, 20.0);
    let target = Vec2::new(32.0, 10.0);
    let (group, members) = spawn_group(
        &mut app,
        Vec2::new(4.0, 8.0),
        6,
        CrowdGroup::in_formation(Formation::template(FormationTemplate::Box)),
        GroupOrder::MoveTo(target),
    );
    let steps = run_until(&mut app, 600, |app| !group_seen(app).arrived.is_empty());
    assert!(steps < 600, "the group arrives");
    assert_eq!(group_seen(&app).arrived[0].0, group);
    assert!(group_seen(&app).reached.contains(&group));
    let status = app.world().get::<GroupStatus>(group).unwrap().clone();
    assert!(status.formed && status.arrived && status.formation_reached);
    assert!(
        (status.anchor - target).length() <= 1.0,
        "{}",
        status.anchor
    );
    assert_eq!(status.slots.len(), 6);
    for (member, slot) in &status.slots {
        assert!(members.contains(member));
        assert!((planned(&app, *member) - *slot).length() < 0.3);
    }
    // Members are crowd agents steered by the group.
    let world = app.world().resource::<CrowdWorld>();
    for m in &members {
        let id = world.agent_id(*m).unwrap();
        assert_eq!(
            world.crowd().unwrap().agent(id).unwrap().params().steering,
            Steering::External
        );
    }
}

#[test]
fn a_new_order_and_a_new_formation_are_taken_at_run_time() {
    let mut app = group_app(40.0, 30.0);
    let (group, _) = spawn_group(
        &mut app,
        Vec2::new(4.0, 8.0),
        5,
        CrowdGroup::in_formation(Formation::template(FormationTemplate::Line)),
        GroupOrder::MoveTo(Vec2::new(30.0, 8.0)),
    );
    for _ in 0..40 {
        app.update();
    }
    let before = app.world().get::<GroupStatus>(group).unwrap().anchor;
    *app.world_mut().get_mut::<GroupOrder>(group).unwrap() =
        GroupOrder::MoveTo(Vec2::new(15.0, 25.0));
    app.world_mut()
        .get_mut::<CrowdGroup>(group)
        .unwrap()
        .formation = Some(Formation::template(FormationTemplate::Column));
    let steps = run_until(&mut app, 600, |app| !group_seen(app).arrived.is_empty());
    assert!(steps < 600);
    let status = app.world().get::<GroupStatus>(group).unwrap();
    assert!((status.anchor - Vec2::new(15.0, 25.0)).length() <= 1.0);
    assert!(before.y < 12.0);
    assert!(group_seen(&app).rejected.is_empty());
}

#[test]
fn bad_groups_are_rejected_with_a_message_and_nothing_panics() {
    let mut app = group_app(30.0, 20.0);
    // A formation of one point for three members.
    let (one_point, _) = spawn_group(
        &mut app,
        Vec2::new(3.0, 3.0),
        3,
        CrowdGroup::in_formation(Formation::points(vec![DVec2::ZERO])),
        GroupOrder::Hold,
    );
    // A map too small for its formation.
    let (too_small, _) = spawn_group(
        &mut app,
        Vec2::new(3.0, 12.0),
        6,
        CrowdGroup::in_formation(Formation::template(FormationTemplate::Line)).with_settings(
            GroupSettings {
                map_side: 6,
                ..GroupSettings::default()
            },
        ),
        GroupOrder::Hold,
    );
    // A group with no member, and an order to a point that is not finite.
    let empty = app
        .world_mut()
        .spawn((CrowdGroup::default(), GroupOrder::Hold))
        .id();
    let (nan_order, nan_members) = spawn_group(
        &mut app,
        Vec2::new(18.0, 3.0),
        3,
        CrowdGroup::default(),
        GroupOrder::MoveTo(Vec2::new(f32::NAN, 1.0)),
    );
    // A bystander walking on its own.
    let walker = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(20.0, 15.0, 0.0),
            AgentGoals::point(Vec2::new(27.0, 15.0)),
        ))
        .id();
    run_until(&mut app, 80, |_| false);
    let rejected = &group_seen(&app).rejected;
    assert!(
        rejected.iter().any(|(g, e)| *g == one_point
            && matches!(e, GroupError::FormationTooShort { points: 1, .. }))
    );
    assert!(
        rejected
            .iter()
            .any(|(g, e)| *g == too_small && matches!(e, GroupError::MapTooSmall { side: 6, .. }))
    );
    assert!(rejected.iter().any(|(g, _)| *g == nan_order));
    assert!(!rejected.iter().any(|(g, _)| *g == empty));
    assert!(!app.world().get::<GroupStatus>(one_point).unwrap().formed);
    // The group with the bad order formed and holds; its members stand.
    assert!(app.world().get::<GroupStatus>(nan_order).unwrap().formed);
    for m in nan_members {
        assert_eq!(state(&app, m), AgentState::Waiting);
    }
    // Nothing else in the crowd was disturbed.
    assert_eq!(state(&app, walker), AgentState::Arrived);
}

#[test]
fn a_member_despawned_mid_order_is_lost_and_the_rest_arrive() {
    let mut app = group_app(40.0, 20.0);
    let (group, members) = spawn_group(
        &mut app,
        Vec2::new(4.0, 8.0),
        6,
        CrowdGroup::in_formation(Formation::template(FormationTemplate::Box)),
        GroupOrder::MoveTo(Vec2::new(30.0, 10.0)),
    );
    for _ in 0..20 {
        app.update();
    }
    app.world_mut().despawn(members[4]);
    let steps = run_until(&mut app, 600, |app| !group_seen(app).arrived.is_empty());
    assert!(steps < 600);
    assert_eq!(
        group_seen(&app).lost,
        vec![(group, members[4], LostReason::Removed)]
    );
    assert_eq!(
        app.world()
            .get::<GroupMembers>(group)
            .unwrap()
            .entities()
            .len(),
        5
    );
}

/// A group following a leader who is despawned mid-order holds where it is (the order stays
/// until the game gives another) and nothing panics; a new order sets it walking again.
#[test]
fn a_group_whose_leader_is_despawned_holds_until_given_another_order() {
    let mut app = group_app(40.0, 20.0);
    let leader = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(10.0, 10.0, 0.0),
            AgentGoals::point(Vec2::new(36.0, 10.0)),
        ))
        .id();
    let (group, _) = spawn_group(
        &mut app,
        Vec2::new(3.0, 8.0),
        4,
        CrowdGroup::default(),
        GroupOrder::Follow {
            leader,
            distance: 2.0,
        },
    );
    run_until(&mut app, 20, |_| false);
    let anchor = |app: &App| app.world().get::<GroupStatus>(group).unwrap().anchor;
    assert!(anchor(&app).x > 4.5, "it followed: {}", anchor(&app));
    app.world_mut().despawn(leader);
    run_until(&mut app, 15, |_| false);
    let held = anchor(&app);
    run_until(&mut app, 10, |_| false);
    assert!(
        anchor(&app).distance(held) < 1e-3,
        "{held} then {}",
        anchor(&app)
    );
    assert!(group_seen(&app).rejected.is_empty());
    *app.world_mut().get_mut::<GroupOrder>(group).unwrap() =
        GroupOrder::MoveTo(Vec2::new(4.0, 4.0));
    let steps = run_until(&mut app, 600, |app| !group_seen(app).arrived.is_empty());
    assert!(steps < 600, "walked again and arrived");
}

#[test]
fn a_despawned_group_hands_its_members_back_to_their_own_maps() {
    let mut app = group_app(40.0, 20.0);
    let (group, members) = spawn_group(
        &mut app,
        Vec2::new(4.0, 8.0),
        3,
        CrowdGroup::default(),
        GroupOrder::Hold,
    );
    for _ in 0..5 {
        app.update();
    }
    app.world_mut().despawn(group);
    app.world_mut()
        .entity_mut(members[0])
        .insert(AgentGoals::point(Vec2::new(30.0, 10.0)));
    let steps = run_until(&mut app, 400, |app| !seen(app).arrived.is_empty());
    assert!(steps < 400, "the former member walks on its own");
    let world = app.world().resource::<CrowdWorld>();
    for m in &members {
        let id = world.agent_id(*m).unwrap();
        assert_eq!(
            world.crowd().unwrap().agent(id).unwrap().params().steering,
            Steering::LocalMap
        );
    }
}

#[test]
fn obstacles_tagged_keep_together_are_handed_to_the_groups_as_placed_and_untagged_again() {
    let mut app = group_app(40.0, 20.0);
    let rock = app
        .world_mut()
        .spawn((
            CrowdObstacle::fixed(Shape::Disc {
                centre: DVec2::ZERO,
                radius: 2.0,
            }),
            Transform::from_xyz(20.0, 10.0, 0.0),
            KeepTogether,
        ))
        .id();
    // An untagged obstacle is not a region.
    app.world_mut().spawn((
        CrowdObstacle::fixed(Shape::Disc {
            centre: DVec2::ZERO,
            radius: 1.0,
        }),
        Transform::from_xyz(5.0, 5.0, 0.0),
    ));
    let regions = |app: &App| -> Vec<Shape> {
        app.world()
            .resource::<GroupWorld>()
            .groups()
            .keep_together()
            .cloned()
            .collect()
    };
    run_until(&mut app, 5, |app| !regions(app).is_empty());
    let centre = |shapes: &[Shape]| match shapes {
        [Shape::Disc { centre, radius }] => {
            assert!((radius - 2.0).abs() < 1e-6);
            *centre
        }
        other => panic!("one disc expected: {other:?}"),
    };
    assert!((centre(&regions(&app)) - DVec2::new(20.0, 10.0)).length() < 1e-6);
    // Moved: the region follows.
    app.world_mut()
        .get_mut::<Transform>(rock)
        .unwrap()
        .translation = Vec3::new(25.0, 10.0, 0.0);
    run_until(
        &mut app,
        5,
        |app| matches!(regions(app).as_slice(), [Shape::Disc { centre, .. }] if centre.x > 24.0),
    );
    assert!((centre(&regions(&app)) - DVec2::new(25.0, 10.0)).length() < 1e-6);
    // Untagged: no region is left.
    app.world_mut().entity_mut(rock).remove::<KeepTogether>();
    run_until(&mut app, 5, |app| regions(app).is_empty());
    assert!(regions(&app).is_empty());
}

#[test]
fn a_group_ordered_along_a_drawn_path_walks_it_and_arrives_at_its_end() {
    let mut app = group_app(40.0, 30.0);
    // An L: east, then north. A group going straight to the end would cut the corner.
    let path = vec![
        Vec2::new(6.0, 5.0),
        Vec2::new(32.0, 5.0),
        Vec2::new(32.0, 25.0),
    ];
    let (group, _) = spawn_group(
        &mut app,
        Vec2::new(3.0, 4.0),
        4,
        CrowdGroup::in_formation(Formation::template(FormationTemplate::Box)),
        GroupOrder::FollowPath {
            points: path,
            joining: Joining::NearestPoint,
        },
    );
    let mut corner = false;
    let steps = run_until(&mut app, 900, |app| {
        let status = app.world().get::<GroupStatus>(group).unwrap();
        corner |= status.anchor.distance(Vec2::new(32.0, 5.0)) < 2.5;
        !group_seen(app).arrived.is_empty()
    });
    assert!(steps < 900, "the group did not arrive");
    assert!(corner, "the group cut the corner");
    let status = app.world().get::<GroupStatus>(group).unwrap();
    assert!(
        status.anchor.distance(Vec2::new(32.0, 25.0)) < 1.5,
        "{}",
        status.anchor
    );
    assert!(group_seen(&app).rejected.is_empty());
    let routes = app.world().resource::<GroupWorld>().routes();
    assert_eq!(routes.routes().count(), 1);
    // A new order drops the route.
    *app.world_mut().get_mut::<GroupOrder>(group).unwrap() = GroupOrder::Hold;
    app.update();
    app.update();
    assert_eq!(
        app.world()
            .resource::<GroupWorld>()
            .routes()
            .routes()
            .count(),
        0
    );
    // An empty path is rejected with a message, the group keeps holding.
    *app.world_mut().get_mut::<GroupOrder>(group).unwrap() = GroupOrder::FollowPath {
        points: Vec::new(),
        joining: Joining::WholeCurve,
    };
    run_until(&mut app, 5, |app| !group_seen(app).rejected.is_empty());
    assert!(matches!(
        group_seen(&app).rejected[0].1,
        GroupError::BadOrder(_)
    ));
}

#[test]
fn a_group_path_built_a_slice_per_step_is_followed_all_the_same() {
    let mut app = group_app(40.0, 30.0);
    app.insert_resource(PathSettings {
        build_budget: Some(std::time::Duration::from_micros(1)),
    });
    let (group, _) = spawn_group(
        &mut app,
        Vec2::new(3.0, 4.0),
        4,
        CrowdGroup::default(),
        GroupOrder::FollowPath {
            points: vec![
                Vec2::new(6.0, 5.0),
                Vec2::new(32.0, 5.0),
                Vec2::new(32.0, 25.0),
            ],
            joining: Joining::NearestPoint,
        },
    );
    let mut building_seen = false;
    let mut corner = false;
    let steps = run_until(&mut app, 900, |app| {
        building_seen |= app
            .world()
            .resource::<GroupWorld>()
            .routes()
            .routes()
            .any(|(_, r)| r.is_building());
        let status = app.world().get::<GroupStatus>(group).unwrap();
        corner |= status.anchor.distance(Vec2::new(32.0, 5.0)) < 2.5;
        !group_seen(app).arrived.is_empty()
    });
    assert!(steps < 900, "the group did not arrive");
    assert!(building_seen, "the field was built whole");
    assert!(corner, "the group cut the corner");
    assert!(group_seen(&app).rejected.is_empty());
}
