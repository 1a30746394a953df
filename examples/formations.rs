//! Groups in formation, RTS-style: four groups cross a town of blocks, streets and narrow
//! alleys while townsfolk walk their own ways. Click a member or drag a box to select groups,
//! pick a formation with a key, right click to send them, right drag to draw the path they
//! follow, Ctrl + right drag to draw their formation, Ctrl+Z to undo (help at the top left).
//! The debug overlays show the groups' maps (8), bands (9), slots (0) and drawn paths (P).
//!
//! ```text
//! cargo run --release --example formations
//! ```

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use crowdfield_debug::prelude::*;
use crowdfield_debug::tool::{self, SketchTool};

/// World size, metres.
const WORLD: Vec2 = Vec2::new(64.0, 40.0);

fn main() {
    let mut help = vec![
        "Four groups cross a town: streets 4 m wide, alleys of 1.5 m; townsfolk walk their own ways."
            .into(),
    ];
    help.extend(tool::help());
    help.push(
        "Overlays: 8 group maps, 9 bands, 0 slots and map bounds, P drawn paths (panel on the right).".into(),
    );
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: formations")),
            CrowdfieldPlugins,
            CrowdDebugPlugin,
            support::ExampleView { help },
            SketchTool,
        ))
        .insert_resource(CrowdfieldSettings {
            world_min: Vec2::ZERO,
            world_max: WORLD,
            global_cell_size: 0.25,
            global_inflation: 0.2,
            ..default()
        })
        .insert_resource(CrowdDebugSettings {
            // The tool owns the left button.
            select_button: None,
            ..default()
        })
        .add_systems(Startup, (spawn_town, overlays_on))
        .run();
}

fn overlays_on(mut overlays: ResMut<DebugOverlays>) {
    overlays.set(OverlayId::GROUP_MAP, true);
    overlays.set(OverlayId::GROUP_SLOTS, true);
    overlays.set(OverlayId::DRAWN_PATHS, true);
    overlays.set(OverlayId::STATS, false);
}

/// Blocks of houses with streets between them, and two alleys through the middle row.
fn town() -> Vec<Shape> {
    let mut blocks = Vec::new();
    let columns = [(8.0, 20.0), (24.0, 36.0), (40.0, 52.0)];
    let rows = [(4.0, 12.0), (16.0, 24.0), (28.0, 36.0)];
    for (r, &(y0, y1)) in rows.iter().enumerate() {
        for &(x0, x1) in &columns {
            if r == 1 {
                // The middle row is cut by an alley 1.5 m wide.
                let mid = (x0 + x1) * 0.5;
                blocks.push((DVec2::new(x0, y0), DVec2::new(mid - 0.75, y1)));
                blocks.push((DVec2::new(mid + 0.75, y0), DVec2::new(x1, y1)));
            } else {
                blocks.push((DVec2::new(x0, y0), DVec2::new(x1, y1)));
            }
        }
    }
    blocks
        .into_iter()
        .map(|(min, max)| Shape::Aabb { min, max })
        .collect()
}

fn spawn_town(mut commands: Commands) {
    for shape in town() {
        commands.spawn((CrowdObstacle::fixed(shape), Transform::IDENTITY));
    }
    // Four groups on the west side, each sent east along a street.
    let groups = [
        (
            Vec2::new(3.0, 14.0),
            7,
            FormationTemplate::Wedge,
            Vec2::new(60.0, 14.0),
        ),
        (
            Vec2::new(3.0, 26.0),
            9,
            FormationTemplate::Box,
            Vec2::new(60.0, 26.0),
        ),
        (
            Vec2::new(3.0, 38.0),
            6,
            FormationTemplate::Line,
            Vec2::new(60.0, 38.0),
        ),
        (
            Vec2::new(3.0, 2.0),
            5,
            FormationTemplate::Column,
            Vec2::new(46.0, 20.0),
        ),
    ];
    for (k, (at, n, template, to)) in groups.into_iter().enumerate() {
        // The column is sent along a drawn path instead: east along the bottom street, then
        // north up the eastern one (the magenta stroke and tube of the drawn-paths overlay).
        let order = if k == 3 {
            GroupOrder::FollowPath {
                points: vec![
                    Vec2::new(5.0, 2.0),
                    Vec2::new(38.0, 2.0),
                    Vec2::new(38.0, 20.0),
                    to,
                ],
                joining: Joining::NearestPoint,
            }
        } else {
            GroupOrder::MoveTo(to)
        };
        let group = commands
            .spawn((
                CrowdGroup::in_formation(Formation::template(template)),
                order,
            ))
            .id();
        for i in 0..n {
            let p = at + Vec2::new((i / 3) as f32 * -1.2, ((i % 3) as f32 - 1.0) * 1.2);
            commands.spawn((
                CrowdAgent,
                Transform::from_translation(p.extend(0.0)),
                MemberOf(group),
            ));
        }
    }
    // Townsfolk crossing north and south along the streets.
    for i in 0..16 {
        let x = [22.0, 38.0][i % 2] + (i / 2) as f32 * 0.2;
        let (from, to) = if i % 4 < 2 {
            (Vec2::new(x, 1.0 + (i / 4) as f32), Vec2::new(x, 39.0))
        } else {
            (Vec2::new(x, 39.0 - (i / 4) as f32), Vec2::new(x, 1.0))
        };
        commands.spawn((
            CrowdAgent,
            Transform::from_translation(from.extend(0.0)),
            AgentGoals::point(to),
        ));
    }
}
