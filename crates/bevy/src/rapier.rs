//! Scene geometry from bevy_rapier2d: colliders become obstacle shapes.
//!
//! - Colliders without a rigid body, or on a [`RigidBody::Fixed`] body (their own or their
//!   nearest ancestor's, as rapier attaches them), are **static**: written
//!   into the global maps, and re-written around the collider when it is added, changed, moved
//!   or removed (the crowd re-solves the affected maps a few per planner step).
//! - Colliders on dynamic or kinematic bodies are **moving**: stamped into local maps at their
//!   pose of each planner step.
//! - Sensors and colliders on agents themselves are ignored.
//!
//! Shapes are read from the collider's unscaled shape and placed with the entity's transform
//! (its own Transform for top-level entities, the propagated GlobalTransform for children), so
//! the physics plugin need not run. Supported: balls, cuboids, capsules, segments, triangles,
//! convex polygons, polylines, triangle meshes, height fields, round cuboids / triangles /
//! convex polygons, and compounds of these. Half-spaces and voxels are reported with
//! [`ObstacleRejected`].

use bevy::prelude::*;
use bevy_rapier2d::geometry::ColliderView;
use bevy_rapier2d::prelude::{Collider, RigidBody, Sensor};

use crowdfield_field::Shape;
use crowdfield_steer::SteerError;

use crate::components::CrowdAgent;
use crate::messages::ObstacleRejected;
use crate::planner_due;
use crate::plugin::{SceneInputStage, pose};
use crate::settings::CrowdfieldSettings;
use crate::world::{CrowdWorld, ObstacleSource};

/// Reads bevy_rapier2d colliders as obstacles. Part of
/// [`CrowdfieldPlugins`](crate::CrowdfieldPlugins) when the `rapier` feature is on.
#[derive(Debug, Default, Clone, Copy)]
pub struct CrowdfieldRapierPlugin;

impl Plugin for CrowdfieldRapierPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            FixedUpdate,
            sync_colliders
                .in_set(SceneInputStage::Gather)
                .run_if(planner_due),
        );
    }
}

type ColliderItem<'a> = (
    Entity,
    Ref<'a, Collider>,
    Ref<'a, Transform>,
    Option<Ref<'a, GlobalTransform>>,
    Has<ChildOf>,
);

/// The rigid body a collider belongs to: its own, or its nearest ancestor's (rapier attaches
/// a collider to the closest body up the hierarchy).
fn body_of(
    entity: Entity,
    bodies: &Query<&RigidBody>,
    parents: &Query<&ChildOf>,
) -> Option<RigidBody> {
    let mut at = entity;
    loop {
        if let Ok(body) = bodies.get(at) {
            return Some(*body);
        }
        at = parents.get(at).ok()?.parent();
    }
}

fn sync_colliders(
    settings: Res<CrowdfieldSettings>,
    mut world: ResMut<CrowdWorld>,
    colliders: Query<ColliderItem, (Without<CrowdAgent>, Without<Sensor>)>,
    bodies: Query<&RigidBody>,
    parents: Query<&ChildOf>,
    mut removed: RemovedComponents<Collider>,
    mut rejected: MessageWriter<ObstacleRejected>,
) {
    let world = &mut *world;
    if world.crowd().is_none() {
        return;
    }
    for entity in removed.read() {
        world.remove_obstacle(entity, ObstacleSource::Collider);
    }
    let rebuilt = world.rebuilt;
    for (entity, collider, transform, global, child) in &colliders {
        let moving = matches!(
            body_of(entity, &bodies, &parents),
            Some(
                RigidBody::Dynamic
                    | RigidBody::KinematicPositionBased
                    | RigidBody::KinematicVelocityBased
            )
        );
        let moved = if child {
            global.as_ref().is_some_and(|g| g.is_changed())
        } else {
            transform.is_changed()
        };
        let changed = collider.is_changed() || moved;
        if moving {
            // A body that turned dynamic leaves the static set.
            world.remove_obstacle(entity, ObstacleSource::Collider);
            let (offset, angle, scale) = pose(&transform, global.as_deref(), child, settings.plane);
            match collider_shapes(&collider, offset, angle, scale) {
                Ok(shapes) => world.moving.extend(shapes),
                Err(error) if changed => {
                    rejected.write(ObstacleRejected { entity, error });
                }
                Err(_) => {}
            }
            continue;
        }
        if !(rebuilt || changed || !world.has_obstacle(entity, ObstacleSource::Collider)) {
            continue;
        }
        world.remove_obstacle(entity, ObstacleSource::Collider);
        let (offset, angle, scale) = pose(&transform, global.as_deref(), child, settings.plane);
        let added = collider_shapes(&collider, offset, angle, scale)
            .and_then(|shapes| world.add_obstacle(entity, ObstacleSource::Collider, shapes));
        if let Err(error) = added {
            rejected.write(ObstacleRejected { entity, error });
        }
    }
}

/// The obstacle shapes of a collider placed at a pose (world coordinates).
pub fn collider_shapes(
    collider: &Collider,
    offset: bevy::math::DVec2,
    angle: f64,
    scale: bevy::math::DVec2,
) -> Result<Vec<Shape>, SteerError> {
    let mut local = Vec::new();
    view_shapes(
        collider.as_unscaled_typed_shape(),
        Vec2::ZERO,
        0.0,
        &mut local,
    )?;
    let shapes: Vec<Shape> = local
        .iter()
        .map(|s| s.transformed(offset, angle, scale))
        .collect();
    for s in &shapes {
        s.validate()?;
    }
    Ok(shapes)
}

/// Appends the shapes of `view`, moved by a sub-shape pose inside a compound.
fn view_shapes(
    view: ColliderView<'_>,
    at: Vec2,
    rot: f32,
    out: &mut Vec<Shape>,
) -> Result<(), SteerError> {
    let place = |s: Shape| s.transformed(at.as_dvec2(), rot as f64, bevy::math::DVec2::ONE);
    let p = |v: Vec2| v.as_dvec2();
    match view {
        ColliderView::Ball(b) => out.push(place(Shape::Disc {
            centre: bevy::math::DVec2::ZERO,
            radius: b.radius() as f64,
        })),
        ColliderView::Cuboid(c) => {
            let h = p(c.half_extents());
            out.push(place(Shape::Aabb { min: -h, max: h }));
        }
        ColliderView::RoundCuboid(r) => {
            let h = p(r.inner_shape().half_extents());
            let border = r.border_radius() as f64;
            let corners = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
                .map(|(x, y)| bevy::math::DVec2::new(x, y) * h);
            out.push(place(Shape::Aabb { min: -h, max: h }));
            out.push(place(outline(&corners, border)));
        }
        ColliderView::Capsule(c) => {
            let s = c.segment();
            out.push(place(Shape::Segment {
                a: p(s.a()),
                b: p(s.b()),
                thickness: 2.0 * c.radius() as f64,
            }));
        }
        ColliderView::Segment(s) => out.push(place(Shape::Segment {
            a: p(s.a()),
            b: p(s.b()),
            thickness: 0.0,
        })),
        ColliderView::Triangle(t) => {
            out.push(place(Shape::Polygon(t.vertices().map(p).to_vec())));
        }
        ColliderView::RoundTriangle(r) => {
            let corners = r.inner_shape().vertices().map(p);
            out.push(place(Shape::Polygon(corners.to_vec())));
            out.push(place(outline(&corners, r.border_radius() as f64)));
        }
        ColliderView::ConvexPolygon(c) => {
            out.push(place(Shape::Polygon(c.points().map(p).collect())));
        }
        ColliderView::RoundConvexPolygon(r) => {
            let corners: Vec<_> = r.inner_shape().points().map(p).collect();
            out.push(place(Shape::Polygon(corners.clone())));
            out.push(place(outline(&corners, r.border_radius() as f64)));
        }
        ColliderView::TriMesh(m) => {
            for (a, b, c) in m.triangles() {
                out.push(place(Shape::Polygon(vec![p(a), p(b), p(c)])));
            }
        }
        ColliderView::Polyline(l) => {
            for (a, b) in l.segments() {
                out.push(place(Shape::Segment {
                    a: p(a),
                    b: p(b),
                    thickness: 0.0,
                }));
            }
        }
        ColliderView::HeightField(h) => {
            for (a, b) in h.segments() {
                out.push(place(Shape::Segment {
                    a: p(a),
                    b: p(b),
                    thickness: 0.0,
                }));
            }
        }
        ColliderView::Compound(c) => {
            for (t, r, sub) in c.shapes() {
                // Sub-shape pose inside the compound, then the compound's own pose.
                let t = at + Vec2::from_angle(rot).rotate(t);
                view_shapes(sub, t, rot + r, out)?;
            }
        }
        ColliderView::HalfSpace(_) | ColliderView::Voxels(_) => {
            return Err(SteerError::UnsupportedShape(
                "half-space and voxel colliders",
            ));
        }
    }
    Ok(())
}

/// The closed outline of a polygon as a thick polyline: the rounded rim of a round shape. An
/// empty corner list gives an empty polyline, which validation rejects.
fn outline(corners: &[bevy::math::DVec2], border: f64) -> Shape {
    let mut points = corners.to_vec();
    points.extend(corners.first().copied());
    Shape::Polyline {
        points,
        thickness: 2.0 * border,
    }
}
