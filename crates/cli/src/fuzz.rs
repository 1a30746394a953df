//! The fuzz targets' bodies: each takes raw bytes, feeds them to one public API and checks what
//! must hold whatever the input. The `cargo fuzz` targets in `fuzz/fuzz_targets/` call them,
//! and so does the test that replays the kept inputs (`crates/cli/tests/fuzz_corpus.rs`), so a
//! finding stays a regression test on the stable toolchain without the fuzzer.
//!
//! A panic, an abort or a failed check is a finding. Every `Err` a public function returns is
//! fine: bad input is meant to come back as a typed error (docs/errors.md lists them all).
//!
//! | target | what the bytes become | checked |
//! |---|---|---|
//! | [`scenario`] | scenario text, read as RON and as JSON; a file that reads and whose world can be built is written back and run for two planner steps through the plugin when it is small | reads back what it wrote; no panic |
//! | [`steersuite`] | a SteerSuite test case | what converts has a buildable world and reads back |
//! | [`menge`] | a Menge scene and behaviour, split at the first NUL byte | as SteerSuite |
//! | [`field`] | a grid, obstacles, goals, fixed cells, a bias and a solver | potentials finite; within the fixed and starting values' range after Gauss–Seidel sweeps (ω ≤ 1) and after a solve converged to a residual of 10⁻⁹; descent finite |
//! | [`crowd`] | a world and up to 48 operations: spawns, goals, obstacles, removals, moves, groups and their orders, planner steps | every agent's position finite after every step |
//! | [`sketch`] | a drawn stroke (any points and times) followed by walkers or a group (Mode B, either joining), walked as waypoints (Mode A), made a formation, or edited in a sketch; planner steps | as the crowd |
//! | [`markers`] | a marker set generated, sprayed and erased; marker orders of every kind for the walkers; the back end driving them | as the crowd |
//!
//! How to run them, and for how long they ran clean: README, *Fuzzing*.

use arbitrary::Unstructured;
use bevy_crowdfield::Scenario;
use bevy_crowdfield::field::{
    Bias, Coverage, Field, GridGeometry, MultigridSolver, Relaxation, Shape, SweepOrder, Tolerance,
    rasterise_goal, rasterise_obstacle, relax, relax_until,
};
use bevy_crowdfield::groups::{Formation, GroupSettings, Groups, Resampling, Template};
use bevy_crowdfield::markers::{Generation, MarkerCrowd, MarkerSet, MarkerSettings, Order};
use bevy_crowdfield::sketch::Stroke;
use bevy_crowdfield::sketch::{
    Joining, Routes, Sketch, StrokeFieldSettings, StrokeKind, WaypointSettings,
    formation_from_stroke,
};
use bevy_crowdfield::steer::{
    AgentId, AgentParams, Behaviour, BehaviourSlots, Crowd, CrowdSettings, Frame, GoalId,
    LocalMapSettings, ObstacleId, Preset, Steering,
};
use glam::DVec2;

use crate::{RunOptions, Stop, run_scenario};

/// Most agents (placed and in regions together) a fuzzed scenario may have to be run; larger
/// ones are only read and checked, so each input stays fast.
const RUN_AGENTS: usize = 48;

/// Most global cells a fuzzed scenario's world may have to be run.
const RUN_CELLS: f64 = 40_000.0;

/// Scenario text: read as RON and as JSON; what reads is checked, written back and read again,
/// and run for two planner steps when it is small.
pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for read in [Scenario::from_ron(text), Scenario::from_json(text)] {
        let Ok(scenario) = read else {
            continue;
        };
        check_scenario(&scenario);
    }
}

/// What holds of any scenario that reads: it is written back to RON that reads again, and one
/// whose world can be built runs for two planner steps when it is small.
fn check_scenario(scenario: &Scenario) {
    let again = Scenario::from_ron(&scenario.to_ron());
    assert!(
        again.is_ok(),
        "a scenario that read does not read back from its own RON: {again:?}"
    );
    if scenario.check_world().is_err() {
        return;
    }
    let agents = scenario.agents.len()
        + scenario
            .regions
            .iter()
            .fold(0usize, |n, r| n.saturating_add(r.count))
        + scenario
            .groups
            .iter()
            .fold(0usize, |n, g| n.saturating_add(g.members.len()));
    let size = scenario.bounds.max - scenario.bounds.min;
    // The global cells the plugin would use: the file's, or the settings' default.
    let mut settings = bevy_crowdfield::CrowdfieldSettings::default();
    scenario.apply_settings(&mut settings);
    let cell = settings.global_cell_size;
    let cells = f64::from(size.x) * f64::from(size.y) / (cell * cell);
    let markers = scenario.markers.is_some() || scenario.terrain.is_some();
    if agents <= RUN_AGENTS && cells <= RUN_CELLS && !markers {
        run_scenario(
            scenario,
            RunOptions {
                stop: Stop::Steps(2),
                field_plots: 0,
                ..Default::default()
            },
        );
    }
}

/// A SteerSuite test case.
pub fn steersuite(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(converted) = crate::steersuite::from_steersuite(text, 7, Coverage::Centre) {
        check_converted(&converted.scenario);
    }
}

/// A Menge scene and its behaviour, the bytes split at the first NUL.
pub fn menge(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (scene, behaviour) = text.split_once('\0').unwrap_or((text, ""));
    let scene = crate::menge::Source {
        name: "scene.xml",
        text: scene,
    };
    let behaviour = crate::menge::Source {
        name: "behavior.xml",
        text: behaviour,
    };
    if let Ok(converted) = crate::menge::from_menge(&scene, &behaviour, 7, Coverage::Centre) {
        check_converted(&converted.scenario);
    }
}

/// What a converter writes reads back; it is not run (converted worlds are large).
fn check_converted(scenario: &Scenario) {
    let again = Scenario::from_ron(&scenario.to_ron());
    assert!(
        again.is_ok(),
        "a converted scenario does not read back: {again:?}"
    );
    let _ = scenario.check_world();
}

/// A number for a parameter: mostly in `[lo, hi]`, sometimes one a caller gets wrong (NaN, an
/// infinity, zero, negative, huge).
fn number(u: &mut Unstructured, lo: f64, hi: f64) -> f64 {
    match u.int_in_range(0u8..=39).unwrap_or(8) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => 0.0,
        4 => -1.0,
        5 => 1e12,
        _ => lo + (hi - lo) * f64::from(u.int_in_range(0u16..=u16::MAX).unwrap_or(0)) / 65535.0,
    }
}

/// A point in `[0, extent]²`, sometimes outside it or not finite.
fn point(u: &mut Unstructured, extent: f64) -> DVec2 {
    DVec2::new(number(u, -1.0, extent + 1.0), number(u, -1.0, extent + 1.0))
}

/// A shape of any kind in `[0, extent]²`.
fn shape(u: &mut Unstructured, extent: f64) -> Shape {
    match u.int_in_range(0u8..=5).unwrap_or(0) {
        0 => Shape::Disc {
            centre: point(u, extent),
            radius: number(u, 0.0, 4.0),
        },
        1 => {
            let a = point(u, extent);
            Shape::Aabb {
                min: a,
                max: a + DVec2::new(number(u, -0.5, 6.0), number(u, -0.5, 6.0)),
            }
        }
        2 => Shape::RotatedBox {
            centre: point(u, extent),
            half_extents: DVec2::new(number(u, 0.0, 3.0), number(u, 0.0, 3.0)),
            angle: number(u, -4.0, 4.0),
        },
        3 => {
            let n = u.int_in_range(0usize..=6).unwrap_or(3);
            Shape::Polygon((0..n).map(|_| point(u, extent)).collect())
        }
        4 => Shape::Segment {
            a: point(u, extent),
            b: point(u, extent),
            thickness: number(u, 0.0, 1.0),
        },
        _ => {
            let n = u.int_in_range(0usize..=5).unwrap_or(2);
            Shape::Polyline {
                points: (0..n).map(|_| point(u, extent)).collect(),
                thickness: number(u, 0.0, 1.0),
            }
        }
    }
}

/// One of `items`, or `None` when there are none.
fn pick<T: Copy>(u: &mut Unstructured, items: &[T]) -> Option<T> {
    if items.is_empty() {
        return None;
    }
    Some(items[u.choose_index(items.len()).unwrap_or(0)])
}

/// A grid, its obstacles, goals and fixed cells, a bias and one of the solvers. Checked: every
/// potential finite; within the range of the fixed and starting values (the discrete maximum
/// principle) after Gauss–Seidel sweeps with ω ≤ 1 and after a solve that converged to a
/// residual of 10⁻⁹; the descent finite everywhere.
pub fn field(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let width = u.int_in_range(0usize..=48).unwrap_or(8);
    let height = u.int_in_range(0usize..=48).unwrap_or(8);
    let cell = number(&mut u, 0.05, 2.0);
    let origin = DVec2::new(number(&mut u, -10.0, 10.0), number(&mut u, -10.0, 10.0));
    let Ok(geometry) = GridGeometry::new(origin, cell, width, height) else {
        return;
    };
    let extent = width.max(height) as f64 * cell;
    let mut field = Field::new(geometry, 1.0);
    let mut lowest = 0.0f64;
    let mut highest = 1.0f64;
    for _ in 0..u.int_in_range(0usize..=24).unwrap_or(0) {
        let x = u.int_in_range(0usize..=width + 2).unwrap_or(0);
        let y = u.int_in_range(0usize..=height + 2).unwrap_or(0);
        match u.int_in_range(0u8..=5).unwrap_or(0) {
            0 => drop(field.set_obstacle(x, y)),
            1 => drop(field.set_goal(x, y)),
            2 => {
                let value = number(&mut u, 0.0, 1.0);
                if field.set_fixed(x, y, value).is_ok() {
                    lowest = lowest.min(value);
                    highest = highest.max(value);
                }
            }
            3 => {
                let s = shape(&mut u, extent);
                let inflation = number(&mut u, 0.0, 1.0);
                let _ = rasterise_obstacle(&mut field, &s, inflation, Coverage::Touch);
            }
            4 => {
                let s = shape(&mut u, extent);
                let _ = rasterise_goal(&mut field, &s, Coverage::Centre);
            }
            _ => {
                let value = number(&mut u, 0.0, 1.0);
                if field.set_free(x, y, value).is_ok() {
                    lowest = lowest.min(value);
                    highest = highest.max(value);
                }
            }
        }
    }
    let angle = number(&mut u, -4.0, 4.0);
    let direction = if u.ratio(1u8, 8).unwrap_or(false) {
        DVec2::ZERO
    } else {
        DVec2::from_angle(angle)
    };
    let Ok(bias) = Bias::new(number(&mut u, -1.2, 1.2), direction) else {
        return;
    };
    let relaxation = Relaxation {
        order: match u.int_in_range(0u8..=2).unwrap_or(0) {
            0 => SweepOrder::Lexicographic,
            1 => SweepOrder::RedBlack,
            _ => SweepOrder::Alternating,
        },
        omega: number(&mut u, 0.5, 1.99),
    };
    // What bounds the potentials: every Gauss–Seidel iterate with ω ≤ 1 is a mean of values
    // already within the fixed and starting values (the discrete maximum principle, sweep by
    // sweep); over-relaxed sweeps and Krylov iterates overshoot on the way, so for them only
    // the converged map is bounded, within what its residual allows.
    let under = relaxation.omega.is_finite() && relaxation.omega <= 1.0;
    let (solver, slack) = match u.int_in_range(0u8..=2).unwrap_or(0) {
        0 => {
            let sweeps = u.int_in_range(0usize..=200).unwrap_or(1);
            relax(&mut field, &bias, &relaxation, sweeps);
            ("relax", under.then_some(1e-12))
        }
        1 => {
            let tolerance = Tolerance::new(number(&mut u, 1e-9, 1e-2), 500);
            let report = relax_until(&mut field, &bias, &relaxation, &tolerance);
            let converged = report.is_ok_and(|r| r.converged && r.residual <= 1e-9);
            ("relax_until", (under || converged).then_some(1e-4))
        }
        _ => {
            let report =
                MultigridSolver::new().solve(&mut field, &bias, number(&mut u, 1e-9, 1e-2));
            let converged = report.is_ok_and(|r| r.converged && r.residual <= 1e-9);
            ("multigrid", converged.then_some(1e-4))
        }
    };
    for (i, p) in field.potentials().iter().enumerate() {
        assert!(p.is_finite(), "{solver}: cell {i}: potential {p}");
        if let Some(slack) = slack {
            assert!(
                *p >= lowest - slack && *p <= highest + slack,
                "{solver} ({relaxation:?}): cell {i}: potential {p} outside [{lowest}, {highest}]"
            );
        }
    }
    for _ in 0..4 {
        let at = point(&mut u, extent) + origin;
        let d = field.descent_at(at);
        assert!(d.is_finite(), "descent {d} at {at}");
    }
}

/// A world and up to 48 operations on the crowd and on groups: spawns with any parameters,
/// goals and obstacles added and removed, agents removed and moved, groups formed, reshaped,
/// ordered and dissolved, and planner steps. Checked: every agent's position is finite after
/// every step.
pub fn crowd(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let size = DVec2::new(number(&mut u, 2.0, 30.0), number(&mut u, 2.0, 30.0));
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: size,
        global_cell_size: [0.25, 0.5, 1.0][u.choose_index(3).unwrap_or(1)],
        preset: if u.ratio(1u8, 3).unwrap_or(false) {
            Preset::Flow
        } else {
            Preset::Seeds
        },
        ..CrowdSettings::default()
    };
    let extent = size.x.max(size.y).min(40.0);
    let statics = (0..u.int_in_range(0usize..=3).unwrap_or(0))
        .map(|_| shape(&mut u, extent))
        .collect();
    let Ok(mut crowd) = Crowd::new(settings, statics) else {
        return;
    };
    let mut groups = Groups::new();
    let mut agents: Vec<AgentId> = Vec::new();
    let mut goals: Vec<GoalId> = Vec::new();
    let mut obstacles: Vec<ObstacleId> = Vec::new();
    let mut formed = Vec::new();
    for _ in 0..u.int_in_range(0usize..=48).unwrap_or(0) {
        match u.int_in_range(0u8..=11).unwrap_or(0) {
            0 | 1 => {
                let params = agent(&mut u, extent, &goals);
                if let Ok(id) = crowd.spawn(params) {
                    agents.push(id);
                }
            }
            2 => {
                if let Ok(id) = crowd.add_goal(shape(&mut u, extent)) {
                    goals.push(id);
                }
            }
            3 => {
                if let Some(goal) = pick(&mut u, &goals) {
                    let _ = crowd.remove_goal(goal);
                }
            }
            4 => {
                if let Ok(id) = crowd.add_obstacle(shape(&mut u, extent)) {
                    obstacles.push(id);
                }
            }
            5 => {
                if let Some(id) = pick(&mut u, &obstacles) {
                    let _ = crowd.remove_obstacle(id);
                }
            }
            6 => {
                if let Some(id) = pick(&mut u, &agents) {
                    if u.ratio(1u8, 2).unwrap_or(true) {
                        let _ = crowd.remove(id);
                    } else {
                        let _ = crowd.set_position(id, point(&mut u, extent));
                    }
                }
            }
            7 => {
                let n = u.int_in_range(0usize..=6).unwrap_or(0);
                let members: Vec<AgentId> = (0..n).filter_map(|_| pick(&mut u, &agents)).collect();
                let formation = match u.int_in_range(0u8..=3).unwrap_or(0) {
                    0 => None,
                    1 => Some(Formation::points(
                        (0..u.int_in_range(0usize..=6).unwrap_or(0))
                            .map(|_| point(&mut u, 4.0))
                            .collect(),
                    )),
                    _ => Some(Formation::template(
                        [
                            Template::Line,
                            Template::Column,
                            Template::Wedge,
                            Template::Echelon,
                            Template::Circle,
                            Template::Box,
                            Template::Diamond,
                        ][u.choose_index(7).unwrap_or(0)],
                    )),
                };
                let settings = GroupSettings {
                    epsilon: number(&mut u, -1.0, 1.0),
                    ..GroupSettings::default()
                };
                if let Ok(id) = groups.create(&mut crowd, &members, settings, formation) {
                    formed.push(id);
                }
            }
            8 => {
                if let Some(id) = pick(&mut u, &formed) {
                    let _ = match u.int_in_range(0u8..=4).unwrap_or(0) {
                        0 => groups.move_to(&mut crowd, id, shape(&mut u, extent)),
                        1 => groups.hold(&mut crowd, id),
                        2 => match pick(&mut u, &goals) {
                            Some(goal) => groups.follow_goal(&mut crowd, id, goal),
                            None => Ok(()),
                        },
                        3 => match pick(&mut u, &agents) {
                            Some(agent) => groups.remove_member(&mut crowd, id, agent),
                            None => Ok(()),
                        },
                        _ => groups.remove(&mut crowd, id),
                    };
                }
            }
            9 => {
                let moving = (0..u.int_in_range(0usize..=2).unwrap_or(0))
                    .map(|_| shape(&mut u, extent))
                    .collect();
                let _ = crowd.set_moving_obstacles(moving);
            }
            _ => {
                for _ in 0..u.int_in_range(1usize..=4).unwrap_or(1) {
                    groups.step(&mut crowd);
                    for (id, a) in crowd.agents() {
                        assert!(
                            a.position().is_finite(),
                            "agent {id:?} at {} after step {}",
                            a.position(),
                            crowd.step_count()
                        );
                    }
                }
            }
        }
    }
}

/// A crowd world of fine cells (0.25 or 0.5 m) of up to 30 m, with a few obstacles, and up to
/// six standing walkers; `None` where the crowd refuses the world.
fn small_world(u: &mut Unstructured) -> Option<(Crowd, Vec<AgentId>, f64)> {
    let size = DVec2::new(number(u, 6.0, 30.0), number(u, 6.0, 30.0));
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: size,
        global_cell_size: [0.25, 0.5][u.choose_index(2).unwrap_or(1)],
        ..CrowdSettings::default()
    };
    let extent = size.x.max(size.y).min(40.0);
    let statics = (0..u.int_in_range(0usize..=2).unwrap_or(0))
        .map(|_| shape(u, extent))
        .collect();
    let mut crowd = Crowd::new(settings, statics).ok()?;
    let agents = (0..u.int_in_range(0usize..=6).unwrap_or(2))
        .filter_map(|_| {
            crowd
                .spawn(AgentParams {
                    position: point(u, extent),
                    ..AgentParams::default()
                })
                .ok()
        })
        .collect();
    Some((crowd, agents, extent))
}

/// Steps `crowd` (and `groups`, and `routes` building their fields a slice at a time) `n`
/// times; every position must stay finite.
fn step_checked(crowd: &mut Crowd, groups: &mut Groups, routes: &mut Routes, n: usize) {
    for _ in 0..n {
        let _ = routes.advance_with_groups(crowd, groups, std::time::Duration::from_millis(2));
        groups.step(crowd);
        routes.release(crowd);
        for (id, a) in crowd.agents() {
            assert!(
                a.position().is_finite(),
                "agent {id:?} at {} after step {}",
                a.position(),
                crowd.step_count()
            );
        }
    }
}

/// Drawn strokes and what is done with them (the sketch planner): a stroke pushed point by
/// point (any positions and times), then followed by walkers or a group (Mode B stroke field,
/// either joining), walked through as waypoints (Mode A), turned into a formation, or edited
/// in a sketch (replace, append, erase, undo, redo); then planner steps. Checked: every
/// agent's position finite after every step.
pub fn sketch(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Some((mut crowd, agents, extent)) = small_world(&mut u) else {
        return;
    };
    let mut stroke = Stroke::new();
    let mut time = 0.0;
    for _ in 0..u.int_in_range(0usize..=24).unwrap_or(4) {
        time += number(&mut u, -0.05, 0.3);
        let _ = stroke.push(point(&mut u, extent), time);
    }
    let mut groups = Groups::new();
    let mut routes = Routes::new();
    let settings = StrokeFieldSettings {
        tube_half_width: number(&mut u, 0.2, 2.0),
        epsilon: number(&mut u, -1.0, 1.0),
        ..StrokeFieldSettings::default()
    };
    let joining = if u.ratio(1u8, 2).unwrap_or(true) {
        Joining::NearestPoint
    } else {
        Joining::WholeCurve
    };
    let waypoints = WaypointSettings {
        spacing: number(&mut u, 0.5, 4.0),
        radius: number(&mut u, 0.2, 1.5),
    };
    let grouped = if u.ratio(1u8, 2).unwrap_or(false) {
        groups
            .create(&mut crowd, &agents, GroupSettings::default(), None)
            .ok()
    } else {
        None
    };
    match u.int_in_range(0u8..=4).unwrap_or(0) {
        0 => {
            let _ = match grouped {
                Some(g) => {
                    routes.follow_with_group(&mut crowd, &mut groups, g, &stroke, joining, settings)
                }
                None => routes.follow(&mut crowd, &agents, &stroke, joining, settings),
            };
        }
        1 => {
            let _ = match grouped {
                Some(g) => {
                    routes.waypoints_with_group(&mut crowd, &mut groups, g, &stroke, waypoints)
                }
                None => routes.waypoints(&mut crowd, &agents, &stroke, waypoints),
            };
        }
        2 => {
            let members = u.int_in_range(0usize..=12).unwrap_or(3);
            let resampling = if u.ratio(1u8, 2).unwrap_or(true) {
                Resampling::Stride
            } else {
                Resampling::CatmullRom
            };
            if let Ok(f) = formation_from_stroke(&stroke, None, members, 0.25, resampling) {
                let _ = f.slots(members, 0.25);
            }
        }
        _ => {
            let mut sketch = Sketch::new();
            if let Ok(id) = sketch.add(stroke.clone(), StrokeKind::Path) {
                for _ in 0..u.int_in_range(0usize..=6).unwrap_or(2) {
                    let _ = match u.int_in_range(0u8..=4).unwrap_or(0) {
                        0 => sketch.replace(id, stroke.clone()),
                        1 => sketch.append(id, &stroke),
                        2 => {
                            sketch.erase(point(&mut u, extent), number(&mut u, 0.1, 5.0));
                            Ok(())
                        }
                        3 => sketch.undo(),
                        _ => sketch.redo(),
                    };
                }
                for (_, path) in sketch.paths() {
                    let _ = routes.follow(&mut crowd, &agents, &path, joining, settings.clone());
                }
            }
        }
    }
    step_checked(
        &mut crowd,
        &mut groups,
        &mut routes,
        u.int_in_range(0usize..=12).unwrap_or(3),
    );
}

/// Marker sets and the marker back end: a set generated (either way, any density), sprayed
/// and erased, then orders for the crowd's walkers (seek, goals, pursue, surround, escape,
/// formation, align) and steps of the back end driving them. Checked: every position finite.
pub fn markers(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Some((mut crowd, agents, extent)) = small_world(&mut u) else {
        return;
    };
    let settings = MarkerSettings {
        min: DVec2::ZERO,
        max: crowd.settings().max,
        index_cell: number(&mut u, 0.5, 3.0),
        ..MarkerSettings::default()
    };
    let Ok(mut set) = MarkerSet::new(settings, crowd.statics().to_vec()) else {
        return;
    };
    let generation = if u.ratio(1u8, 2).unwrap_or(true) {
        Generation::JitteredGrid
    } else {
        Generation::DartThrowing {
            min_distance: number(&mut u, 0.0, 0.3),
        }
    };
    let _ = set.generate(
        generation,
        number(&mut u, 1.0, 80.0),
        u.arbitrary().unwrap_or(0),
    );
    for _ in 0..u.int_in_range(0usize..=4).unwrap_or(1) {
        let at = point(&mut u, extent);
        let radius = number(&mut u, 0.1, 4.0);
        let _ = if u.ratio(1u8, 2).unwrap_or(true) {
            set.spray(at, radius, number(&mut u, 1.0, 80.0), 3, u.arbitrary().ok())
                .map(drop)
        } else {
            set.erase(at, radius).map(drop)
        };
    }
    let Ok(mut back) = MarkerCrowd::new(Default::default()) else {
        return;
    };
    for &id in &agents {
        let other = pick(&mut u, &agents).unwrap_or(id);
        let order = match u.int_in_range(0u8..=6).unwrap_or(0) {
            0 => Order::Seek(point(&mut u, extent)),
            1 => Order::Goals,
            2 => Order::Pursue(other),
            3 => Order::Surround(other),
            4 => Order::Escape(agents.iter().copied().filter(|a| *a != id).collect()),
            5 => Order::Formation {
                shape: u.int_in_range(0u32..=3).unwrap_or(0),
                mask: None,
            },
            _ => Order::Align(u.int_in_range(0usize..=2).unwrap_or(0)),
        };
        if back.insert(&set, id, order).is_ok() {
            let _ = crowd.set_steering(id, Steering::External);
        }
    }
    for _ in 0..u.int_in_range(0usize..=12).unwrap_or(3) {
        let _ = back.drive(&mut crowd, &set);
        crowd.step();
        for (id, a) in crowd.agents() {
            assert!(a.position().is_finite(), "agent {id:?} at {}", a.position());
        }
    }
}

/// An agent's parameters, each drawn over its range and beyond it.
fn agent(u: &mut Unstructured, extent: f64, goals: &[GoalId]) -> AgentParams {
    let epsilon = number(u, -1.2, 1.2);
    let behaviour = match u.int_in_range(0u8..=4).unwrap_or(0) {
        0 => Behaviour::Harmonic,
        1 => Behaviour::Constant {
            epsilon,
            v: point(u, 1.0),
            frame: if u.ratio(1u8, 2).unwrap_or(true) {
                Frame::World
            } else {
                Frame::GlobalFlow
            },
        },
        2 => Behaviour::Drunk {
            epsilon,
            omega: number(u, 0.0, 1.0),
        },
        3 => Behaviour::RandomHeld {
            epsilon,
            min_hold: u.int_in_range(0u32..=10).unwrap_or(1),
            max_hold: u.int_in_range(0u32..=10).unwrap_or(1),
        },
        _ => Behaviour::AroundNearest {
            epsilon,
            right: u.ratio(1u8, 2).unwrap_or(true),
        },
    };
    let goal_count = u.int_in_range(0usize..=2).unwrap_or(1);
    AgentParams {
        position: point(u, extent),
        radius: number(u, 0.05, 0.6),
        max_step: number(u, 0.05, 0.6),
        goals: (0..goal_count).filter_map(|_| pick(u, goals)).collect(),
        arrival_radius: number(u, 0.0, 1.0),
        behaviour: BehaviourSlots::single(behaviour),
        local_map: LocalMapSettings {
            side: [0, 1, 3, 11, 15, 16, 31, 64, 400][u.choose_index(9).unwrap_or(4)],
            sweeps: [0, 1, 20, 30, 5_000][u.choose_index(5).unwrap_or(3)],
            cell_size: number(u, 0.1, 1.0),
            view_angle: number(u, 0.0, 7.0),
            ..LocalMapSettings::default()
        },
        seed: u.arbitrary().unwrap_or(0),
        ..AgentParams::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Empty and all-zero inputs take the shortest paths through every target.
    #[test]
    fn every_target_takes_trivial_input() {
        for data in [&[][..], &[0u8; 64][..], &[0xff; 256][..]] {
            scenario(data);
            steersuite(data);
            menge(data);
            field(data);
            crowd(data);
            sketch(data);
            markers(data);
        }
    }
}
