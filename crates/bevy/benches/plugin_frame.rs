//! Frame time of the plugin's systems, headless (MinimalPlugins), with 10,000 agents crossing a
//! 200 m × 120 m plaza in two streams: a frame that runs a planner step (scene input, guidance,
//! sensing, relaxation, decision, motion, messages, interpolation) and a frame that only
//! interpolates Transforms.
//!
//! ```text
//! cargo bench -p bevy_crowdfield --bench plugin_frame
//! ```

use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::scenario::ScenarioRegion;
use criterion::{Criterion, criterion_group, criterion_main};

const PLANNER_HZ: f64 = 3.5;

fn plaza(agents: usize, frames_per_step: u32) -> App {
    let scenario = Scenario {
        name: "bench plaza".into(),
        description: String::new(),
        bounds: bevy_crowdfield::scenario::Bounds {
            min: Vec2::ZERO,
            max: Vec2::new(200.0, 120.0),
        },
        settings: Default::default(),
        obstacles: (0..6)
            .map(|i| bevy_crowdfield::scenario::ScenarioObstacle {
                shape: Shape::Disc {
                    centre: DVec2::new(100.0, 15.0 + 18.0 * i as f64),
                    radius: 2.0,
                },
                kind: ObstacleKind::Static,
                keep_together: false,
            })
            .collect(),
        agents: Vec::new(),
        measurements: Vec::new(),
        groups: Vec::new(),
        markers: None,
        terrain: None,
        regions: [(0.5, 199.5, 1), (130.5, 0.5, 2)]
            .into_iter()
            .map(|(x, goal_x, seed)| ScenarioRegion {
                min: Vec2::new(x, 0.5),
                max: Vec2::new(x + 69.0, 119.5),
                count: agents / 2,
                seed,
                goals: AgentGoals {
                    targets: vec![GoalTarget::Region(Shape::Aabb {
                        min: DVec2::new(goal_x - 0.5, 0.5),
                        max: DVec2::new(goal_x + 0.5, 119.5),
                    })],
                    ..default()
                },
                style: AgentStyle::default(),
                path: None,
                markers: None,
                bio: None,
            })
            .collect(),
    };
    let mut app = App::new();
    let frame = 1.0 / (PLANNER_HZ * frames_per_step as f64);
    app.add_plugins((MinimalPlugins, CrowdfieldPlugins))
        .insert_resource(Time::<Fixed>::from_seconds(frame))
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            frame,
        )))
        .insert_resource(CrowdfieldSettings {
            planner_hz: PLANNER_HZ,
            ..default()
        });
    scenario.apply_settings(&mut app.world_mut().resource_mut::<CrowdfieldSettings>());
    let mut commands = app.world_mut().commands();
    let missing = scenario.spawn(&mut commands, None);
    assert_eq!(missing, vec![0, 0]);
    app.world_mut().flush();
    // Register, solve the global maps, and walk a few steps.
    for _ in 0..6 * frames_per_step {
        app.update();
    }
    app
}

fn frames(c: &mut Criterion) {
    let agents = 10_000;
    let mut group = c.benchmark_group("plugin_frame");
    group.sample_size(10);
    let mut app = plaza(agents, 1);
    group.bench_function(format!("{agents}/planner_step"), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                app.update();
            }
            start.elapsed()
        })
    });
    // Eight frames per planner step: time only the seven frames between steps.
    let mut app = plaza(agents, 8);
    group.bench_function(format!("{agents}/interpolation_only"), |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let start = Instant::now();
                app.update();
                let took = start.elapsed();
                if !app
                    .world()
                    .resource::<bevy_crowdfield::PlannerClock>()
                    .is_due()
                {
                    spent += took;
                    done += 1;
                }
            }
            spent
        })
    });
    group.finish();
}

criterion_group!(benches, frames);
criterion_main!(benches);
