//! Terrain reasoning in 3D (seed 003): BioCrowds agents on the x–z plane of a 3D world, standing
//! on a height map, reading the meaning of the ground.
//!
//! - A hill in the north-east, a river with banks to keep off running north from the south
//!   edge, a lawn to avoid in the north-west, a hole, and a lake.
//! - Orange: eight walkers on one A* route from the west to the east (round the hill: its 3D
//!   length costs, and round the lawn). Violet: eight walking straight for the same place (over
//!   the lawn and the hill's shoulder). Cyan: eight from the south-west on an A* route round
//!   the river's head and the hole. Lines: each A* group's route ahead.
//! - Blue: fish swimming rounds of the lake with the inverted terrain table, at home where
//!   people may not walk.
//!
//! The overlays draw on the surface: `-- spaces` starts with overlay R on (each walker's
//! personal space, the markers it takes this step, and the A* route ahead); F1 lists the
//! others.
//!
//! ```text
//! cargo run --release --example terrain
//! cargo run --release --example terrain -- spaces
//! ```

#[path = "support/mod.rs"]
mod support;

use bevy::asset::RenderAssetUsages;
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use bevy_crowdfield::markers::{FtTable, HeightMap, Terrain, TerrainRegion, Way};
use bevy_crowdfield::prelude::*;
use crowdfield_debug::prelude::*;

/// World size, metres.
const WORLD: Vec2 = Vec2::new(60.0, 40.0);
const LAKE: Vec2 = Vec2::new(48.0, 10.0);
const HOLE: Vec2 = Vec2::new(16.0, 12.0);

fn main() {
    let help = vec![
        "Terrain (seed 003) in 3D: BioCrowds agents on the x-z plane, standing on the height map.".into(),
        "Orange: an A* group round the hill and the lawn; violet: the same trip straight, over them.".into(),
        "Cyan: an A* group round the river's head and the hole; lines: each A* group's route ahead.".into(),
        "Blue: fish with the inverted terrain table, living in the lake people may not enter.".into(),
    ];
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: terrain")),
            CrowdfieldPlugins,
            CrowdDebugPlugin,
            support::ExampleHelp { help },
        ))
        .insert_resource(ClearColor(Color::srgb(0.55, 0.7, 0.85)))
        .insert_resource(CrowdfieldSettings {
            world_min: Vec2::ZERO,
            world_max: WORLD,
            planner_hz: 24.0,
            plane: GroundPlane::XZ,
            ..default()
        })
        .insert_resource(ground())
        .add_systems(Startup, (spawn_view, spawn_agents, overlays_on))
        .add_systems(Update, draw_routes)
        .run();
}

/// Overlay R from the start with the argument `spaces` (F1 shows the overlays' panel); the stats off
/// (the help shows them).
fn overlays_on(mut overlays: ResMut<DebugOverlays>, mut settings: ResMut<CrowdDebugSettings>) {
    let spaces = std::env::args().any(|a| a == "spaces");
    overlays.set(OverlayId::BIO_CROWDS, spaces);
    overlays.set(OverlayId::STATS, false);
    settings.show_help = false;
}

fn heights() -> HeightMap {
    HeightMap::from_fn(DVec2::ZERO, WORLD.as_dvec2(), 0.5, |p| {
        let hill = 5.0 * (-(p - DVec2::new(38.0, 30.0)).length_squared() / 40.0).exp();
        hill + 0.4 * (p.x / 6.0).sin() * (p.y / 5.0).cos()
    })
    .expect("a valid height map")
}

fn ground() -> TerrainGround {
    let aabb = |x0: f64, y0: f64, x1: f64, y1: f64| Shape::Aabb {
        min: DVec2::new(x0, y0),
        max: DVec2::new(x1, y1),
    };
    let region = |shape, terrain| TerrainRegion { shape, terrain };
    TerrainGround {
        heights: Some(heights()),
        regions: vec![
            region(
                aabb(8.0, 26.0, 16.0, 36.0),
                Terrain::Avoid { intensity: 0.5 },
            ),
            region(
                aabb(26.5, 0.0, 32.0, 23.5),
                Terrain::Avoid { intensity: 0.6 },
            ),
            region(aabb(28.0, 0.0, 30.5, 22.0), Terrain::Forbidden),
            region(
                Shape::Disc {
                    centre: HOLE.as_dvec2(),
                    radius: 2.5,
                },
                Terrain::Forbidden,
            ),
            region(
                Shape::Disc {
                    centre: LAKE.as_dvec2(),
                    radius: 6.0,
                },
                Terrain::Forbidden,
            ),
        ],
        // The fish live inside forbidden ground: it cannot be an obstacle of the crowd.
        forbidden_obstacles: false,
        ..default()
    }
}

/// The colour of the ground at `p`.
fn ground_colour(ground: &TerrainGround, p: DVec2) -> [f32; 4] {
    let mut terrain = Terrain::Walkable;
    for r in &ground.regions {
        if r.shape.distance(p).is_ok_and(|d| d <= 0.0) {
            terrain = r.terrain;
        }
    }
    let colour = match terrain {
        Terrain::Walkable => Color::srgb(0.36, 0.56, 0.3),
        Terrain::Avoid { .. } => Color::srgb(0.78, 0.7, 0.36),
        Terrain::Forbidden if p.distance(HOLE.as_dvec2()) < 2.6 => Color::srgb(0.08, 0.07, 0.06),
        Terrain::Forbidden => Color::srgb(0.2, 0.42, 0.8),
    };
    // Vertex colours are linear.
    colour.to_linear().to_f32_array()
}

/// The terrain's surface as a mesh (the height map's triangles, coloured by the ground's
/// meaning), a light, and a camera looking north over it.
fn spawn_view(
    mut commands: Commands,
    ground: Res<TerrainGround>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let Some(h) = &ground.heights else {
        return;
    };
    let (cols, rows) = h.size();
    let mut positions = Vec::with_capacity(cols * rows);
    let mut colours = Vec::with_capacity(cols * rows);
    for r in 0..rows {
        for c in 0..cols {
            let p = h.point(c, r);
            positions.push([p.x as f32, p.z as f32, -p.y as f32]);
            colours.push(ground_colour(&ground, p.truncate()));
        }
    }
    let mut indices = Vec::with_capacity(6 * (cols - 1) * (rows - 1));
    let at = |c: usize, r: usize| (r * cols + c) as u32;
    for r in 0..rows - 1 {
        for c in 0..cols - 1 {
            // The height map's own triangles (cut along the rising diagonal), wound to face up.
            indices.extend([at(c, r), at(c + 1, r), at(c + 1, r + 1)]);
            indices.extend([at(c, r), at(c + 1, r + 1), at(c, r + 1)]);
        }
    }
    let mesh = Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::RENDER_WORLD,
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
    .with_inserted_attribute(Mesh::ATTRIBUTE_COLOR, colours)
    .with_inserted_indices(Indices::U32(indices))
    .with_computed_smooth_normals();
    commands.spawn((
        Mesh3d(meshes.add(mesh)),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::WHITE,
            perceptual_roughness: 0.95,
            ..default()
        })),
    ));
    commands.spawn((
        DirectionalLight {
            illuminance: 2_500.0,
            shadow_maps_enabled: false,
            ..default()
        },
        // Low from the south-west, so slopes facing away from it shade.
        Transform::from_xyz(-20.0, 14.0, 12.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    commands.insert_resource(GlobalAmbientLight {
        brightness: 250.0,
        ..default()
    });
    commands.spawn((
        Camera3d::default(),
        Tonemapping::None,
        Transform::from_xyz(30.0, 34.0, 16.0).looking_at(Vec3::new(30.0, 0.0, -20.0), Vec3::Y),
    ));
}

/// Which group an agent belongs to, for its colour and its route line.
#[derive(Component, Clone, Copy)]
struct Group(usize);

const COLOURS: [Color; 4] = [
    Color::srgb(0.95, 0.55, 0.15),
    Color::srgb(0.6, 0.35, 0.9),
    Color::srgb(0.2, 0.8, 0.85),
    Color::srgb(0.15, 0.3, 0.95),
];

fn spawn_agents(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let body = meshes.add(Capsule3d::new(0.25, 1.2));
    let fish_body = meshes.add(Sphere::new(0.3));
    let paint: Vec<Handle<StandardMaterial>> = COLOURS
        .iter()
        .map(|c| materials.add(StandardMaterial::from_color(*c)))
        .collect();
    let h = heights();
    let mut spawn = |at: Vec2, goals: AgentGoals, steering: BioSteering, group: usize| {
        let y = h.height(at.as_dvec2()) as f32;
        let (mesh, lift) = if group == 3 {
            (fish_body.clone(), 0.1)
        } else {
            (body.clone(), 0.85)
        };
        commands
            .spawn((
                CrowdAgent,
                goals,
                steering,
                Group(group),
                Transform::from_xyz(at.x, y, -at.y),
                Visibility::default(),
            ))
            .with_child((
                Mesh3d(mesh),
                MeshMaterial3d(paint[group].clone()),
                Transform::from_xyz(0.0, lift, 0.0),
            ));
    };
    for k in 0..8 {
        let (i, j) = ((k % 2) as f32, (k / 2) as f32);
        let routed = |group| BioSteering {
            way: Way::AStar,
            group: Some(group),
            ..default()
        };
        spawn(
            Vec2::new(2.0 + i * 1.1, 27.0 + j * 1.1),
            AgentGoals::point(Vec2::new(57.0, 33.0)),
            routed(0),
            0,
        );
        spawn(
            Vec2::new(2.0 + i * 1.1, 33.0 + j * 1.1),
            AgentGoals::point(Vec2::new(57.0, 34.0)),
            BioSteering {
                way: Way::Direct,
                ..default()
            },
            1,
        );
        spawn(
            Vec2::new(2.0 + i * 1.1, 4.0 + j * 1.1),
            AgentGoals::point(Vec2::new(57.0, 24.0)),
            routed(1),
            2,
        );
    }
    // Fish: rounds of the lake, again and again.
    for k in 0..5 {
        let a = k as f32 * std::f32::consts::TAU / 5.0;
        let round: Vec<Vec2> = (0..24)
            .map(|n| {
                let b = a + n as f32 * std::f32::consts::TAU / 6.0;
                LAKE + Vec2::new(b.cos(), b.sin()) * 3.8
            })
            .collect();
        spawn(
            LAKE + Vec2::new(a.cos(), a.sin()) * 2.0,
            AgentGoals::points(round),
            BioSteering {
                ft: FtTable::inverted(),
                way: Way::Direct,
                group: None,
            },
            3,
        );
    }
}

/// Each A* group's route ahead, as its first walker has it, just above the ground.
fn draw_routes(
    mut gizmos: Gizmos,
    agents: Res<BioAgents>,
    walkers: Query<(Entity, &Group, &Transform)>,
    ground: Res<GroundHeight>,
) {
    let mut drawn = [false; 3];
    for (entity, group, transform) in &walkers {
        if group.0 == 1 || group.0 > 2 || drawn[group.0] {
            continue;
        }
        let Some(state) = agents.state(entity) else {
            continue;
        };
        let ahead = state.route_ahead();
        if ahead.is_empty() {
            continue;
        }
        drawn[group.0] = true;
        let lift = |p: Vec2| Vec3::new(p.x, ground.height(p) + 0.15, -p.y);
        let here = Vec2::new(transform.translation.x, -transform.translation.z);
        let points = std::iter::once(here).chain(ahead.iter().map(|p| p.as_vec2()));
        gizmos.linestrip(points.map(lift), COLOURS[group.0]);
    }
}
