//! Drawing on the crowd's ground, whichever plane of the game's world it lies in
//! ([`CrowdfieldSettings::plane`]).
//!
//! On [`GroundPlane::XY`] (2D games) overlays draw as they always did: 2D gizmos at z = 0 and
//! pictures at their depth. On [`GroundPlane::XZ`] (3D games, y up):
//!
//! - lines, rings and marks follow the surface ([`GroundHeight`]), [`LIFT`] above it, long
//!   lines cut into pieces of at most [`PIECE`] so they do not pass through hills;
//! - pictures (heat maps, markers, stroke fields) and the retained lines drawn with them
//!   (isolines, descent arrows) lie flat, a little above the highest ground under them
//!   ([`Ground::picture`]): a map is one flat image, a hill under it does not hide it;
//! - the cursor picks the point of the surface under it ([`Ground::ray_to_ground`]).
//!
//! Overlays of other crates draw through [`GroundGizmos`] to get the same behaviour.

use std::f32::consts::FRAC_PI_2;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_crowdfield::prelude::*;

/// How far above the surface lines and rings are drawn on [`GroundPlane::XZ`], metres.
pub const LIFT: f32 = 0.05;
/// The longest straight piece of a line drawn over uneven ground, metres.
pub const PIECE: f32 = 1.0;
/// Pictures lie this far above the highest ground under them, plus 0.02 m per rank.
const PICTURE_LIFT: f32 = 0.03;
/// Points sampled along each side of a picture to find the highest ground under it.
const PICTURE_SAMPLES: usize = 33;

/// The crowd's ground as the game's world holds it: the plane and the surface's height.
#[derive(Clone, Debug, Default)]
pub struct Ground {
    plane: GroundPlane,
    height: Option<GroundHeight>,
}

impl Ground {
    /// The ground of `plane`, with `height` (flat at 0 when `None`).
    pub fn new(plane: GroundPlane, height: Option<GroundHeight>) -> Self {
        Self { plane, height }
    }

    /// The plane.
    pub fn plane(&self) -> GroundPlane {
        self.plane
    }

    /// The surface's height under `p` (0 on [`GroundPlane::XY`]).
    pub fn height(&self, p: Vec2) -> f32 {
        match (self.plane, &self.height) {
            (GroundPlane::XZ, Some(h)) => h.height(p),
            _ => 0.0,
        }
    }

    /// `p` drawn on the ground: (p, 0) on XY, [`LIFT`] above the surface on XZ.
    pub fn point(&self, p: Vec2) -> Vec3 {
        match self.plane {
            GroundPlane::XY => p.extend(0.0),
            GroundPlane::XZ => self.plane.to_world(p, self.height(p) + LIFT),
        }
    }

    /// A translation in the game's world, back in the crowd's plane.
    pub fn to_ground(&self, t: Vec3) -> Vec2 {
        self.plane.to_ground(t)
    }

    /// The rotation that lays the x–y plane of a sprite or gizmo on the ground: none on XY,
    /// −90° about x on XZ (local +y becomes the crowd's +y, the world's −z).
    pub fn flat(&self) -> Quat {
        match self.plane {
            GroundPlane::XY => Quat::IDENTITY,
            GroundPlane::XZ => Quat::from_rotation_x(-FRAC_PI_2),
        }
    }

    /// Where a picture covering `lo`–`hi` of the crowd's plane lies: centred on it at depth `z`
    /// on XY; on XZ flat, above the highest ground under it, `rank` lifting later pictures
    /// (0.02 m each) above earlier ones.
    pub fn picture(&self, lo: Vec2, hi: Vec2, z: f32, rank: f32) -> Transform {
        let centre = (lo + hi) * 0.5;
        match self.plane {
            GroundPlane::XY => Transform::from_translation(centre.extend(z)),
            GroundPlane::XZ => {
                let n = PICTURE_SAMPLES - 1;
                let mut top = f32::NEG_INFINITY;
                for j in 0..=n {
                    for i in 0..=n {
                        let t = Vec2::new(i as f32, j as f32) / n as f32;
                        top = top.max(self.height(lo + (hi - lo) * t));
                    }
                }
                let y = top + PICTURE_LIFT + 0.02 * rank.max(0.0);
                Transform::from_translation(self.plane.to_world(centre, y))
                    .with_rotation(self.flat())
            }
        }
    }

    /// The point of the ground a ray meets (XY: the plane z = 0; XZ: the surface, found by
    /// meeting the level plane at the height reached so far, a few times over), or `None`
    /// where it runs away from the ground.
    pub fn ray_to_ground(&self, ray: Ray3d) -> Option<Vec2> {
        match self.plane {
            GroundPlane::XY => {
                let t = ray.intersect_plane(Vec3::ZERO, InfinitePlane3d::new(Vec3::Z))?;
                Some(ray.get_point(t).truncate())
            }
            GroundPlane::XZ => {
                let mut level = 0.0;
                let mut at = None;
                for _ in 0..6 {
                    let t = ray.intersect_plane(
                        Vec3::new(0.0, level, 0.0),
                        InfinitePlane3d::new(Vec3::Y),
                    )?;
                    let p = self.plane.to_ground(ray.get_point(t));
                    level = self.height(p);
                    at = Some(p);
                }
                at
            }
        }
    }

    /// The point of the ground under the window's cursor, through the first active camera
    /// that sees it (2D cameras only on XY).
    pub fn cursor(
        &self,
        windows: &Query<&Window>,
        cameras: &Query<(&Camera, &GlobalTransform, Has<Camera2d>)>,
    ) -> Option<Vec2> {
        let cursor = windows.iter().find_map(|w| w.cursor_position())?;
        cameras
            .iter()
            .filter(|(c, _, _)| c.is_active)
            .find_map(|(camera, at, is_2d)| match self.plane {
                GroundPlane::XY if is_2d => camera.viewport_to_world_2d(at, cursor).ok(),
                GroundPlane::XY => None,
                GroundPlane::XZ => camera
                    .viewport_to_world(at, cursor)
                    .ok()
                    .and_then(|ray| self.ray_to_ground(ray)),
            })
    }

    /// The points of the segment a–b to draw: its ends on XY or on flat ground; on uneven XZ
    /// ground, pieces of at most [`PIECE`].
    fn pieces(&self, a: Vec2, b: Vec2) -> impl Iterator<Item = Vec3> + '_ {
        let n = match (self.plane, &self.height) {
            (GroundPlane::XZ, Some(_)) => ((a.distance(b) / PIECE).ceil() as usize).clamp(1, 512),
            _ => 1,
        };
        (0..=n).map(move |k| self.point(a.lerp(b, k as f32 / n as f32)))
    }
}

/// The ground of the app: [`CrowdfieldSettings::plane`] and [`GroundHeight`].
pub fn ground_of(settings: Option<&CrowdfieldSettings>, height: Option<&GroundHeight>) -> Ground {
    Ground::new(
        settings.map(|s| s.plane).unwrap_or_default(),
        height.cloned(),
    )
}

/// The app's [`Ground`] as a system parameter.
#[derive(SystemParam)]
pub struct GroundRes<'w> {
    settings: Option<Res<'w, CrowdfieldSettings>>,
    height: Option<Res<'w, GroundHeight>>,
}

impl GroundRes<'_> {
    /// The ground.
    pub fn get(&self) -> Ground {
        ground_of(self.settings.as_deref(), self.height.as_deref())
    }
}

/// [`Gizmos`] that draw on the crowd's ground (see the module doc): 2D gizmos on
/// [`GroundPlane::XY`], 3D gizmos on the surface on [`GroundPlane::XZ`]. Points and sizes are
/// in the crowd's plane.
#[derive(SystemParam)]
pub struct GroundGizmos<'w, 's> {
    /// The gizmos drawn with.
    pub gizmos: Gizmos<'w, 's>,
    settings: Option<Res<'w, CrowdfieldSettings>>,
    height: Option<Res<'w, GroundHeight>>,
}

impl GroundGizmos<'_, '_> {
    /// The ground drawn on.
    pub fn ground(&self) -> Ground {
        ground_of(self.settings.as_deref(), self.height.as_deref())
    }

    fn is_xy(&self) -> bool {
        self.settings
            .as_deref()
            .is_none_or(|s| s.plane == GroundPlane::XY)
    }

    /// A segment.
    pub fn line(&mut self, a: Vec2, b: Vec2, colour: Color) {
        if self.is_xy() {
            self.gizmos.line_2d(a, b, colour);
        } else {
            let ground = self.ground();
            self.gizmos.linestrip(ground.pieces(a, b), colour);
        }
    }

    /// A polyline through `points`.
    pub fn linestrip(&mut self, points: impl IntoIterator<Item = Vec2>, colour: Color) {
        if self.is_xy() {
            self.gizmos.linestrip_2d(points, colour);
        } else {
            let ground = self.ground();
            let points: Vec<Vec2> = points.into_iter().collect();
            let mut drawn: Vec<Vec3> = Vec::with_capacity(points.len());
            for pair in points.windows(2) {
                let skip = usize::from(!drawn.is_empty());
                drawn.extend(ground.pieces(pair[0], pair[1]).skip(skip));
            }
            if let [p] = points.as_slice() {
                drawn.push(ground.point(*p));
            }
            self.gizmos.linestrip(drawn, colour);
        }
    }

    /// A ring of `radius` round `centre`, drawn with `resolution` segments.
    pub fn circle(&mut self, centre: Vec2, radius: f32, colour: Color, resolution: u32) {
        if self.is_xy() {
            self.gizmos
                .circle_2d(centre, radius, colour)
                .resolution(resolution);
        } else {
            let ground = self.ground();
            let at = Isometry3d::new(ground.point(centre), ground.flat());
            self.gizmos
                .circle(at, radius, colour)
                .resolution(resolution);
        }
    }

    /// An axis-aligned rectangle of `size` centred on `centre`.
    pub fn rect(&mut self, centre: Vec2, size: Vec2, colour: Color) {
        if self.is_xy() {
            self.gizmos.rect_2d(centre, size, colour);
        } else {
            let ground = self.ground();
            let at = Isometry3d::new(ground.point(centre), ground.flat());
            self.gizmos.rect(at, size, colour);
        }
    }

    /// A cross of two segments of `half` on each side of `centre`, along the axes.
    pub fn cross(&mut self, centre: Vec2, half: f32, colour: Color) {
        if self.is_xy() {
            self.gizmos.cross_2d(centre, half, colour);
        } else {
            self.line(centre - Vec2::X * half, centre + Vec2::X * half, colour);
            self.line(centre - Vec2::Y * half, centre + Vec2::Y * half, colour);
        }
    }

    /// An arrow from `from` to `to`.
    pub fn arrow(&mut self, from: Vec2, to: Vec2, colour: Color) {
        if self.is_xy() {
            self.gizmos.arrow_2d(from, to, colour);
        } else {
            let ground = self.ground();
            self.gizmos
                .arrow(ground.point(from), ground.point(to), colour);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hill() -> Ground {
        Ground::new(
            GroundPlane::XZ,
            Some(GroundHeight::new(|p: Vec2| 0.1 * p.x + 0.05 * p.y)),
        )
    }

    #[test]
    fn points_stand_on_the_surface_in_xz_and_at_zero_in_xy() {
        let p = Vec2::new(4.0, 2.0);
        assert_eq!(Ground::default().point(p), Vec3::new(4.0, 2.0, 0.0));
        let q = hill().point(p);
        assert!(
            (q - Vec3::new(4.0, 0.5 + LIFT, -2.0)).length() < 1e-6,
            "{q}"
        );
        assert_eq!(hill().to_ground(q), p);
    }

    #[test]
    fn pictures_lie_flat_above_the_highest_ground_under_them() {
        let t = hill().picture(Vec2::ZERO, Vec2::new(10.0, 10.0), -10.0, 1.0);
        // The highest ground under it: 0.1·10 + 0.05·10 = 1.5.
        assert!((t.translation.y - (1.5 + PICTURE_LIFT + 0.02)).abs() < 1e-5);
        assert!((t.translation.x - 5.0).abs() < 1e-6 && (t.translation.z + 5.0).abs() < 1e-6);
        // The picture's +x stays +x; its +y (the crowd's +y) is the world's −z.
        assert!((t.rotation * Vec3::X - Vec3::X).length() < 1e-6);
        assert!((t.rotation * Vec3::Y - Vec3::NEG_Z).length() < 1e-6);
        let flat = Ground::default().picture(Vec2::ZERO, Vec2::new(10.0, 4.0), -10.0, 1.0);
        assert_eq!(flat, Transform::from_xyz(5.0, 2.0, -10.0));
    }

    #[test]
    fn rays_meet_the_surface_under_them() {
        let target = Vec2::new(6.0, 3.0);
        let ground = hill();
        let on = ground.plane().to_world(target, ground.height(target));
        let from = on + Vec3::new(-4.0, 12.0, 5.0);
        let ray = Ray3d::new(from, Dir3::new(on - from).unwrap());
        let hit = ground.ray_to_ground(ray).unwrap();
        assert!(hit.distance(target) < 1e-3, "{hit}");
        // Looking up, the ray never meets the ground.
        let up = Ray3d::new(from, Dir3::Y);
        assert_eq!(ground.ray_to_ground(up), None);
        let xy = Ray3d::new(Vec3::new(1.0, 2.0, 5.0), Dir3::NEG_Z);
        assert_eq!(
            Ground::default().ray_to_ground(xy),
            Some(Vec2::new(1.0, 2.0))
        );
    }

    #[test]
    fn long_lines_on_uneven_ground_are_cut_into_pieces() {
        let points: Vec<Vec3> = hill().pieces(Vec2::ZERO, Vec2::new(10.0, 0.0)).collect();
        assert_eq!(points.len(), 11);
        assert!(
            points
                .iter()
                .all(|p| (p.y - (0.1 * p.x + LIFT)).abs() < 1e-5)
        );
        assert_eq!(
            Ground::default().pieces(Vec2::ZERO, Vec2::X * 10.0).count(),
            2
        );
    }
}
