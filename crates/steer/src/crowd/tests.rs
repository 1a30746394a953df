use std::sync::Arc;

use std::sync::atomic::Ordering;

use crowdfield_field::{BATCH_LANES_F32, CellKind, Field, FieldBatch, FieldBatchF32, floor_i64};

use super::guard::{GuardScratch, Obstacles, SHAPE_GRID_MIN, guard_step};
use super::*;
use crate::local_map::{LocalPrecision, NeighbourStamping, lattice_cell};
use crate::static_raster::boxes_overlap;

/// A rayon pool of `threads` threads.
fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool")
}

/// Sharing a small crowd's step between threads or keeping it on the stepping thread changes
/// no bit: two copies of a crowd of 30, one made to share (two jobs, 16 + 14, swept by the
/// time-skewed kernel) and one to stay alone (one job of 30, swept by the lanes), stepped on
/// two threads, stand at the same bits after every step while they walk.
#[test]
fn sharing_a_small_crowd_or_not_changes_nothing() {
    let pool = pool(2);
    let mut crowd = busy_plaza(Vec::new(), LocalPrecision::F32Complement);
    for id in 30..120 {
        crowd.remove(AgentId(id)).unwrap();
    }
    assert_eq!(
        (job_sizes(30, 2), job_sizes(30, 1)),
        (vec![16, 14], vec![30])
    );
    let mut shared = crowd.clone();
    shared.sharing.forced = Some(true);
    let mut alone = crowd;
    alone.sharing.forced = Some(false);
    let bits = |c: &Crowd| -> Vec<[u64; 2]> {
        c.agents()
            .map(|(_, a)| a.position().to_array().map(f64::to_bits))
            .collect()
    };
    let start = bits(&alone);
    pool.install(|| {
        for step in 0..60 {
            shared.step();
            alone.step();
            assert_eq!(bits(&shared), bits(&alone), "step {step}");
        }
    });
    let moved = start
        .iter()
        .zip(bits(&alone))
        .filter(|(a, b)| *a != b)
        .count();
    assert!(moved >= 25, "{moved} of 30 agents moved");
}

/// Waits up to `limit` for `done`; whether it came.
fn eventually(limit: Duration, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

/// Steps `crowd` until the pool's other thread is kept waiting after a step (the spawning
/// thread may take the wait back itself, which then returns at once); whether it came.
fn step_until_kept(crowd: &mut Crowd) -> bool {
    let waiting = Arc::clone(&crowd.warm.waiting);
    (0..50).any(|_| {
        crowd.step();
        eventually(Duration::from_secs(1), || {
            waiting.load(Ordering::Acquire) > 0
        })
    })
}

/// A thread kept awake after a step (for far longer than the test) still runs other work
/// queued in the pool, and the next step's jobs end its wait, as does dropping the crowd
/// (even with an endless spin); with no spin none waits.
#[test]
fn threads_kept_awake_run_other_work_and_stop_at_the_next_step() {
    let pool = pool(2);
    let eventually = |done: &dyn Fn() -> bool| eventually(Duration::from_secs(20), done);
    pool.install(|| {
        let mut crowd = busy_plaza(Vec::new(), LocalPrecision::F32Complement);
        crowd.set_worker_spin(Duration::from_secs(600));
        let waiting = Arc::clone(&crowd.warm.waiting);
        assert!(step_until_kept(&mut crowd), "no thread was kept awake");
        // Work that needs the other thread while this one waits for it.
        let ran = std::sync::atomic::AtomicBool::new(false);
        rayon::join(
            || {
                assert!(
                    eventually(&|| ran.load(Ordering::Acquire)),
                    "queued work never ran"
                )
            },
            || ran.store(true, Ordering::Release),
        );
        crowd.set_worker_spin(Duration::ZERO);
        crowd.step();
        assert!(
            eventually(&|| waiting.load(Ordering::Acquire) == 0),
            "the next step did not end the wait"
        );
        crowd.step();
        assert_eq!(waiting.load(Ordering::Acquire), 0);
        // Dropped while a thread waits without end.
        crowd.set_worker_spin(Duration::MAX);
        assert!(step_until_kept(&mut crowd), "no thread was kept awake");
        drop(crowd);
        assert!(
            eventually(&|| waiting.load(Ordering::Acquire) == 0),
            "dropping the crowd did not end the wait"
        );
    });
}

/// A window larger than any before widens the static rasters: a shape just beyond the
/// old rasters' edge is still stamped.
#[test]
fn a_larger_window_rebuilds_the_static_rasters_wider() {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(20.0),
        ..CrowdSettings::seeds()
    };
    // Outside the world, 8 m east of its edge.
    let far = Shape::Disc {
        centre: DVec2::new(28.0, 10.0),
        radius: 1.0,
    };
    let mut crowd = Crowd::new(settings, vec![far]).unwrap();
    let goal = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(2.0, 10.0),
            radius: 0.5,
        })
        .unwrap();
    crowd
        .spawn(AgentParams {
            position: DVec2::new(5.0, 5.0),
            goals: vec![goal],
            ..Default::default()
        })
        .unwrap();
    crowd.step();
    let narrow = crowd.raster_reach;
    assert!(narrow < 8.0, "{narrow}");
    let big = crowd
        .spawn(AgentParams {
            position: DVec2::new(19.0, 10.0),
            goals: vec![goal],
            local_map: LocalMapSettings {
                side: 41,
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap();
    crowd.step();
    assert!(crowd.raster_reach > narrow);
    let map = crowd.agent(big).unwrap().local_map().field();
    let cell = map.geometry().world_to_cell(DVec2::new(28.0, 10.0));
    assert_eq!(
        map.kind(cell.x as usize, cell.y as usize),
        Some(CellKind::Obstacle)
    );
}

/// Agents that differ only in obstacle coverage get a static raster each: before a 1.6 m
/// door (0.5 m radius, 0.5 m cells) the door's cells are free in the `Centre` agent's map
/// and closed in the `Touch` agent's, each as its own coverage stamps them.
#[test]
fn each_obstacle_coverage_reads_its_own_static_raster() {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::new(30.0, 20.0),
        ..CrowdSettings::seeds()
    };
    // A wall along x = 10 with doors between y = 4.7 and 6.3 and between 14.7 and 16.3.
    let wall = |y0: f64, y1: f64| Shape::Aabb {
        min: DVec2::new(9.8, y0),
        max: DVec2::new(10.0, y1),
    };
    let statics = vec![wall(0.0, 4.7), wall(6.3, 14.7), wall(16.3, 20.0)];
    let mut crowd = Crowd::new(settings, statics).unwrap();
    let goal = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(25.0, 10.0),
            radius: 0.5,
        })
        .unwrap();
    let spawn = |crowd: &mut Crowd, y: f64, coverage: Coverage| {
        crowd
            .spawn(AgentParams {
                position: DVec2::new(8.25, y),
                radius: 0.5,
                goals: vec![goal],
                local_map: LocalMapSettings {
                    obstacle_coverage: Some(coverage),
                    ..Default::default()
                },
                ..Default::default()
            })
            .unwrap()
    };
    let centre = spawn(&mut crowd, 5.25, Coverage::Centre);
    let touch = spawn(&mut crowd, 15.25, Coverage::Touch);
    crowd.step();
    assert_eq!(crowd.rasters.len(), 2);
    let door_cell = |id, y: f64| {
        let map = crowd.agent(id).unwrap().local_map().field();
        let c = map.geometry().world_to_cell(DVec2::new(9.75, y));
        map.kind(c.x as usize, c.y as usize)
    };
    assert_eq!(door_cell(centre, 5.25), Some(CellKind::Free));
    assert_eq!(door_cell(touch, 15.25), Some(CellKind::Obstacle));
}

/// A crowd over `[0, max]` with `statics`, and a goal disc of 0.5 m at `goal`.
fn world_with_goal(max: DVec2, statics: Vec<Shape>, goal: DVec2) -> (Crowd, GoalId) {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max,
        ..CrowdSettings::seeds()
    };
    let mut crowd = Crowd::new(settings, statics).unwrap();
    let id = crowd
        .add_goal(Shape::Disc {
            centre: goal,
            radius: 0.5,
        })
        .unwrap();
    (crowd, id)
}

/// The overlap check reads the goal's map where a `Centre` static raster leaves the agent's
/// cell free. A walker 0.2 m east of its lattice cell's centre, with a wall added 0.15 m
/// further east, overlaps the wall by 0.1 m, but the cell's centre lies 0.35 m from the wall,
/// beyond the 0.25 m the raster grows it by. The goal's map (cells touched by the wall grown
/// by 0.25 m are obstacles) marks the walker's cell, so preparing its step gives the way out:
/// one full step, clear of the wall. With only the raster asked, the step was planned as
/// usual (which happens to lead out too, so a whole step could not tell the two apart).
#[test]
fn a_centre_raster_asks_the_goals_map_whether_the_agent_overlaps() {
    let (mut crowd, goal) =
        world_with_goal(DVec2::new(20.0, 10.0), Vec::new(), DVec2::new(18.0, 5.25));
    let at = DVec2::new(4.45, 5.25);
    let id = crowd
        .spawn(AgentParams {
            position: at,
            goals: vec![goal],
            local_map: LocalMapSettings {
                obstacle_coverage: Some(Coverage::Centre),
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap();
    let wall = Shape::Aabb {
        min: DVec2::new(4.6, 3.0),
        max: DVec2::new(5.6, 7.5),
    };
    crowd.add_obstacle(wall.clone()).unwrap();
    // The goal's map solved with the wall, as a step starts.
    crowd.advance_to(StepPhase::Guidance);
    let agent = crowd.agent(id).unwrap();
    let (radius, step) = (agent.params.radius, agent.params.max_step);
    assert!(
        radius - wall.distance(at).unwrap() > 0.09,
        "the wall reaches in"
    );
    let lattice = lattice_cell(at, agent.params.local_map.cell_size);
    let mut probe = crowd.clone();
    let (snapshot, hash) = probe.snapshot();
    probe.note_ways();
    probe.update_rasters();
    let key = raster_key(&agent.params.local_map, radius);
    let raster = &probe.rasters.iter().find(|(k, _)| *k == key).unwrap().1;
    assert!(!raster.marks_every_overlap(lattice) && !raster.blocked(lattice));
    let discs = probe.disc_rasters(&snapshot, Vec::new());
    let world = world_of!(probe, &discs);
    let index = id.0 as usize;
    let agent = probe.agents[index].as_mut().unwrap();
    let mut scratch = Neighbours::default();
    let Prepared::Done(plan) = world.prepare(index, agent, &hash, &mut scratch) else {
        panic!("no way out prepared");
    };
    assert!((plan.displacement.length() - step).abs() < 1e-9);
    let end = at + plan.displacement;
    assert!(wall.distance(end).unwrap() >= radius, "out at {end}");
}

/// Rasters go to the keys most agents share: with 40 walkers of 40 radii spawned before 200 of
/// one radius, the 200 get a static raster and a step's disc raster, the 40 static rasters as
/// far as the 32 go (the first 31 in id order) and no disc raster.
#[test]
fn rasters_go_to_the_keys_most_agents_share() {
    let (mut crowd, goal) =
        world_with_goal(DVec2::splat(60.0), four_pillars(), DVec2::new(58.0, 30.0));
    let spawn = |crowd: &mut Crowd, k: usize, radius: f64| {
        let at = DVec2::new(30.0 + 1.2 * (k % 20) as f64, 30.0 + 1.2 * (k / 20) as f64);
        crowd
            .spawn(AgentParams {
                position: at,
                radius,
                goals: vec![goal],
                ..Default::default()
            })
            .unwrap();
    };
    for k in 0..40 {
        spawn(&mut crowd, k, 0.3 + 0.002 * k as f64);
    }
    for k in 40..240 {
        spawn(&mut crowd, k, 0.25);
    }
    let common = raster_key(&LocalMapSettings::default(), 0.25);
    let (snapshot, _) = crowd.snapshot();
    crowd.update_rasters();
    assert_eq!(crowd.rasters.len(), MAX_STATIC_RASTERS);
    assert_eq!(crowd.rasters[0].0, common);
    let rare = |k: usize| raster_key(&LocalMapSettings::default(), 0.3 + 0.002 * k as f64);
    for k in 0..MAX_STATIC_RASTERS - 1 {
        assert_eq!(crowd.rasters[k + 1].0, rare(k), "raster {}", k + 1);
    }
    let discs = crowd.disc_rasters(&snapshot, Vec::new());
    let keys: Vec<RasterKey> = discs.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, vec![common]);
    assert!(discs[0].1.has_statics());
}

/// Removed agents' slots are dropped between steps once they outnumber the live agents: the
/// walkers keep their ids and walk exactly as in a crowd that never held the removed ones,
/// removed ids stay unknown, and the next agent spawned gets a new id, never a dropped one.
#[test]
fn removed_agents_slots_are_dropped_and_ids_kept() {
    let build = |dummies: usize| {
        let mut crowd = busy_plaza(Vec::new(), LocalPrecision::F32Complement);
        let walkers: Vec<AgentId> = crowd.agents().map(|(id, _)| id).collect();
        // Spawned and removed one after another, on a spot the walkers do not reach.
        let removed: Vec<AgentId> = (0..dummies)
            .map(|_| {
                let id = crowd
                    .spawn(AgentParams {
                        position: DVec2::new(12.0, 23.5),
                        goals: vec![],
                        ..Default::default()
                    })
                    .unwrap();
                crowd.remove(id).unwrap();
                id
            })
            .collect();
        (crowd, walkers, removed)
    };
    let (mut plain, walkers, _) = build(0);
    let (mut thinned, same, removed) = build(DEAD_SLOTS + walkers.len() + 10);
    assert_eq!(walkers, same);
    assert!(thinned.agents.len() > DEAD_SLOTS);
    let at = |c: &Crowd| -> Vec<(AgentId, [u64; 2])> {
        c.agents()
            .map(|(id, a)| (id, a.position().to_array().map(f64::to_bits)))
            .collect()
    };
    for step in 0..20 {
        plain.step();
        thinned.step();
        assert_eq!(at(&plain), at(&thinned), "step {step}");
    }
    assert_eq!(
        thinned.agents.len(),
        thinned.agents().count(),
        "slots dropped"
    );
    assert!(thinned.agent(removed[0]).is_none());
    assert!(matches!(
        thinned.remove(removed[5]),
        Err(SteerError::UnknownAgent(_))
    ));
    let next = thinned
        .spawn(AgentParams {
            position: DVec2::new(12.0, 23.5),
            goals: vec![],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(next.0, removed.last().unwrap().0 + 1);
    assert!(thinned.agent(next).is_some());
}

/// Both ways of answering a query (walking cells, walking buckets) find the same points,
/// in increasing index order.
#[test]
fn spatial_hash_queries_agree_whichever_way_they_walk() {
    let points: Vec<Option<(DVec2, f64)>> = (0..300)
        .map(|i| {
            let t = i as f64 * 0.7;
            (i % 7 != 3).then_some((
                DVec2::new(50.0 + 40.0 * t.sin(), 50.0 + 30.0 * (1.3 * t).cos()),
                0.3,
            ))
        })
        .collect();
    let hash = SpatialHash::build(&points, 2.0);
    for (centre, radius) in [
        (DVec2::new(50.0, 50.0), 3.0),
        (DVec2::new(20.0, 70.0), 9.0),
        (DVec2::new(50.0, 50.0), 1e4),
    ] {
        let mut found = Vec::new();
        hash.for_each_near(centre, radius, |i| found.push(i));
        let expected: Vec<usize> = points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let (q, _) = (*p)?;
                let (lo, hi) = (
                    SpatialHash::key(centre - DVec2::splat(radius), 2.0),
                    SpatialHash::key(centre + DVec2::splat(radius), 2.0),
                );
                let k = SpatialHash::key(q, 2.0);
                ((lo.0..=hi.0).contains(&k.0) && (lo.1..=hi.1).contains(&k.1)).then_some(i)
            })
            .collect();
        assert_eq!(found, expected, "query {centre} radius {radius}");
        assert!(!found.is_empty());
    }
}
/// The step grid reports every point within the query radius (and each at most once),
/// whatever the query, including ones reaching past the occupied area and a lone far point
/// that forces coarser cells.
#[test]
fn agent_grid_finds_every_point_within_the_radius() {
    let mut points: Vec<Option<(DVec2, f64)>> = (0..500)
        .map(|i| {
            let t = i as f64 * 0.37;
            (i % 9 != 4).then_some((
                DVec2::new(50.0 + 40.0 * t.sin(), 50.0 + 30.0 * (1.3 * t).cos()),
                0.3,
            ))
        })
        .collect();
    for far in [None, Some(DVec2::new(5_000.0, -3_000.0))] {
        if let Some(p) = far {
            points.push(Some((p, 0.3)));
        }
        let grid = AgentGrid::build(&points, 2.0);
        for (centre, radius) in [
            (DVec2::new(50.0, 50.0), 3.0),
            (DVec2::new(20.0, 70.0), 9.0),
            (DVec2::new(-40.0, 50.0), 95.0),
            (DVec2::new(50.0, 50.0), 1e4),
            (DVec2::new(1e5, 1e5), 1.0),
        ] {
            let mut found = Vec::new();
            grid.for_each_near(centre, radius, |i| found.push(i));
            let mut sorted = found.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), found.len(), "a point reported twice");
            for (i, p) in points.iter().enumerate() {
                if let Some((q, _)) = p
                    && (*q - centre).length() <= radius
                {
                    assert!(found.contains(&i), "missed {i} for {centre} r {radius}");
                }
            }
        }
    }
    assert_eq!(floor_i64(-0.5), -1);
    assert_eq!(floor_i64(-1e300), i64::MIN);
    assert_eq!(floor_i64(f64::NAN), 0);
    assert_eq!(floor_i64(-1.0), -1);
    assert_eq!(floor_i64(2.7), 2);
}

/// A neighbour far wider than the window's sensing box still lands in the local map
/// wherever its disc reaches into the update zone: the neighbour query grows with the
/// largest radius in the crowd.
#[test]
fn a_wide_neighbour_beyond_the_sensing_box_is_still_stamped() {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(60.0),
        ..CrowdSettings::seeds()
    };
    let mut crowd = Crowd::new(settings, Vec::new()).unwrap();
    let goal = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(5.0, 50.0),
            radius: 1.0,
        })
        .unwrap();
    let walker = crowd
        .spawn(AgentParams {
            position: DVec2::new(10.1, 10.1),
            goals: vec![goal],
            ..Default::default()
        })
        .unwrap();
    // 12.8 m east: beyond the 7.3 m sensing box (and the index cells it touches), but its
    // 10 m disc grown by the walker's 0.25 m covers the update zone's east column (cell
    // centres at x = 12.75, 10.15 m from it).
    crowd
        .spawn(AgentParams {
            position: DVec2::new(22.9, 10.1),
            radius: 10.0,
            goals: vec![goal],
            ..Default::default()
        })
        .unwrap();
    // Enough agents elsewhere that the index has cells of the sensing size.
    for k in 0..100 {
        let _ = crowd.spawn(AgentParams {
            position: DVec2::new(1.0 + 0.58 * k as f64, 40.0 + (k % 2) as f64),
            goals: vec![goal],
            ..Default::default()
        });
    }
    crowd.advance_to(StepPhase::Sensing);
    let map = crowd.agent(walker).unwrap().local_map().field();
    let east = (2..map.height() - 2)
        .filter(|&y| map.kind(map.width() - 3, y) == Some(CellKind::Obstacle))
        .count();
    assert!(east > 0, "the wide neighbour was not stamped");
}

use crate::behaviour::Behaviour;
use crowdfield_field::{Relaxation, Tolerance, relax, relax_until};

/// Four 1 m pillars 8 m apart, for [`busy_plaza`].
fn four_pillars() -> Vec<Shape> {
    (0..4)
        .map(|k| Shape::Disc {
            centre: DVec2::new(8.0 + 8.0 * (k % 2) as f64, 8.0 + 8.0 * (k / 2) as f64),
            radius: 1.0,
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// The guard shortens a step by the same bits whether it finds the static and moving
    /// shapes near the step on their grids or by scanning them all: shapes inside the world,
    /// across its edge and beyond it (every other one moving), steps from anywhere near them.
    #[test]
    fn the_guard_step_is_the_same_on_the_shape_grid(
        shapes in proptest::collection::vec(
            (-5.0f64..35.0, -5.0f64..35.0, 0.1f64..3.0, proptest::bool::ANY),
            SHAPE_GRID_MIN..60,
        ),
        steps in proptest::collection::vec(
            (0usize..1000, 0.0f64..std::f64::consts::TAU, 0.0f64..1.0, 0.05f64..1.5),
            40,
        ),
    ) {
        let all: Vec<Shape> = shapes
            .iter()
            .map(|&(x, y, r, disc)| {
                let c = DVec2::new(x, y);
                if disc {
                    Shape::Disc { centre: c, radius: r }
                } else {
                    Shape::Aabb { min: c - DVec2::new(r, 0.2), max: c + DVec2::new(0.2, r) }
                }
            })
            .collect();
        let statics: Vec<Shape> = all.iter().step_by(2).cloned().collect();
        let moving: Vec<(Shape, (DVec2, DVec2))> = all
            .iter()
            .skip(1)
            .step_by(2)
            .map(|s| (s.clone(), s.bounds().unwrap()))
            .collect();
        let bounds: Vec<(DVec2, DVec2)> = statics.iter().map(|s| s.bounds().unwrap()).collect();
        let moving_bounds: Vec<(DVec2, DVec2)> = moving.iter().map(|(_, b)| *b).collect();
        let grid = ShapeGrid::new(&bounds, DVec2::ZERO, DVec2::splat(30.0));
        let moving_grid = ShapeGrid::new(&moving_bounds, DVec2::ZERO, DVec2::splat(30.0));
        let hash = AgentGrid::build(&[], 1.0);
        let mut shortened = 0;
        for &(pick, angle, gap, len) in &steps {
            // From just outside a shape (beyond its size plus the radius), towards it.
            let (x, y, r, _) = shapes[pick % shapes.len()];
            let out = DVec2::from_angle(angle);
            let start = DVec2::new(x, y) + out * (r + 0.3 + gap);
            let step = -out * len;
            let mut scratch = GuardScratch::default();
            let mut guarded = |grid: Option<&ShapeGrid>, moving_grid: Option<&ShapeGrid>| {
                let obstacles = Obstacles {
                    statics: &statics,
                    static_bounds: &bounds,
                    moving: &moving,
                    grid,
                    moving_grid,
                };
                guard_step(start, step, 0.3, 0, &[], &hash, 0.0, &[], obstacles, false, &mut scratch)
            };
            let (on_grid, scanned) = (guarded(Some(&grid), Some(&moving_grid)), guarded(None, None));
            proptest::prop_assert_eq!(on_grid, scanned, "from {} by {}", start, step);
            shortened += usize::from(scanned != step);
        }
        // Some steps must have met a shape, or nothing was compared.
        proptest::prop_assert!(shortened > 0);
    }

    /// The grid's candidates for a box (what sensing's look ahead and sight ask it for) hold
    /// every shape whose box meets it: boxes inside the world, across its edge and beyond it,
    /// queried anywhere near them.
    #[test]
    fn the_shape_grid_offers_every_box_meeting_a_query(
        boxes in proptest::collection::vec(
            (-8.0f64..38.0, -8.0f64..38.0, 0.0f64..6.0, 0.0f64..6.0),
            SHAPE_GRID_MIN..80,
        ),
        queries in proptest::collection::vec(
            (-10.0f64..40.0, -10.0f64..40.0, 0.0f64..9.0, 0.0f64..9.0),
            60,
        ),
    ) {
        let bounds: Vec<(DVec2, DVec2)> = boxes
            .iter()
            .map(|&(x, y, w, h)| (DVec2::new(x, y), DVec2::new(x + w, y + h)))
            .collect();
        let grid = ShapeGrid::new(&bounds, DVec2::ZERO, DVec2::splat(30.0));
        let mut met = 0;
        for &(x, y, w, h) in &queries {
            let (lo, hi) = (DVec2::new(x, y), DVec2::new(x + w, y + h));
            let mut offered: Vec<usize> = grid.candidates(lo, hi).collect();
            offered.sort_unstable();
            offered.dedup();
            for (k, (blo, bhi)) in bounds.iter().enumerate() {
                if boxes_overlap(*blo, *bhi, lo, hi) {
                    met += 1;
                    proptest::prop_assert!(
                        offered.binary_search(&k).is_ok(),
                        "box {} ({}..{}) meets {}..{} but is not offered", k, blo, bhi, lo, hi
                    );
                }
            }
        }
        proptest::prop_assert!(met > 0);
    }
}

/// The guard's shape grid is built at the first commit, dropped when a static obstacle is
/// added or removed (its indices shift), and rebuilt holding every static box.
#[test]
fn the_shape_grid_follows_the_static_obstacles() {
    let pillars: Vec<Shape> = (0..30)
        .map(|k| Shape::Disc {
            centre: DVec2::new(3.0 + 3.0 * (k % 6) as f64, 3.0 + 3.0 * (k / 6) as f64),
            radius: 0.4,
        })
        .collect();
    let mut crowd = busy_plaza(pillars, LocalPrecision::F32Complement);
    let every = |crowd: &Crowd| {
        let grid = crowd.shape_grid.as_ref().expect("built at the commit");
        let mut all = Vec::new();
        grid.near(DVec2::splat(-1e9), DVec2::splat(1e9), &mut all);
        all
    };
    crowd.step();
    let n = crowd.static_bounds.len();
    assert_eq!(every(&crowd), (0..n as u32).collect::<Vec<_>>());
    let id = crowd
        .add_obstacle(Shape::Disc {
            centre: DVec2::new(12.0, 22.0),
            radius: 0.5,
        })
        .unwrap();
    assert!(crowd.shape_grid.is_none());
    crowd.step();
    assert_eq!(every(&crowd), (0..n as u32 + 1).collect::<Vec<_>>());
    crowd.remove_obstacle(id).unwrap();
    assert!(crowd.shape_grid.is_none());
    crowd.step();
    assert_eq!(every(&crowd), (0..n as u32).collect::<Vec<_>>());
}

/// One step, a phase at a time (as the plugin's systems run it with `split_phases`); its
/// report.
fn step_by_phases(crowd: &mut Crowd) -> StepReport {
    let mut report = None;
    for phase in [
        StepPhase::Guidance,
        StepPhase::Sensing,
        StepPhase::Relaxation,
        StepPhase::Decision,
        StepPhase::Motion,
    ] {
        report = crowd.advance_to(phase);
    }
    report.expect("the motion phase ends the step")
}

/// Every agent's id, position and heading bits and state: what two crowds that walked alike
/// share.
fn walked(crowd: &Crowd) -> Vec<(u32, [u64; 2], [u64; 2], AgentState)> {
    crowd
        .agents()
        .map(|(id, a)| {
            (
                id.0,
                a.position().to_array().map(f64::to_bits),
                a.heading().to_array().map(f64::to_bits),
                a.state(),
            )
        })
        .collect()
}

/// A 24 m square with `statics`, 120 random-held walkers in two files crossing it east and
/// west (places that fall on an obstacle are skipped), local maps of `precision`.
fn busy_plaza(statics: Vec<Shape>, precision: LocalPrecision) -> Crowd {
    let side = 24.0;
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(side),
        ..CrowdSettings::seeds()
    };
    let mut crowd = Crowd::new(settings, statics).unwrap();
    let east = crowd
        .add_goal(Shape::Aabb {
            min: DVec2::new(side - 1.5, 1.0),
            max: DVec2::new(side - 0.5, side - 1.0),
        })
        .unwrap();
    let west = crowd
        .add_goal(Shape::Aabb {
            min: DVec2::new(0.5, 1.0),
            max: DVec2::new(1.5, side - 1.0),
        })
        .unwrap();
    for k in 0..120 {
        let (row, col) = (k / 10, k % 10);
        let x = if col < 5 {
            2.0 + 1.2 * col as f64
        } else {
            side - 2.0 - 1.2 * (col - 5) as f64
        };
        let params = AgentParams {
            position: DVec2::new(x, 1.5 + 1.8 * row as f64),
            goals: vec![if col < 5 { east } else { west }],
            behaviour: BehaviourSlots::single(Behaviour::RandomHeld {
                epsilon: 0.5,
                min_hold: 5,
                max_hold: 15,
            }),
            local_map: LocalMapSettings {
                precision,
                ..Default::default()
            },
            seed: k as u64,
            ..Default::default()
        };
        let _ = crowd.spawn(params);
    }
    crowd
}

/// Chunk buffers kept from step to step change nothing: a crowd that keeps them and a clone
/// that starts every step without any (a clone's pool is empty) move every agent to the same
/// bits, stepping fused and phase by phase in turn, in f32 and in f64, with agents of two
/// window sizes (a kept batch of the other size must be replaced) and some reading their
/// nearest neighbour (kept neighbour lists); the buffers are kept.
#[test]
fn kept_chunk_buffers_change_nothing() {
    let bits = |c: &Crowd| -> Vec<[u64; 2]> {
        c.agents()
            .map(|(_, a)| a.position().to_array().map(f64::to_bits))
            .collect()
    };
    for precision in [LocalPrecision::F32Complement, LocalPrecision::F64] {
        let mut kept = busy_plaza(four_pillars(), precision);
        let goal = kept.agents().next().unwrap().1.params().goals[0];
        for k in 0..40 {
            let params = AgentParams {
                position: DVec2::new(6.0 + 0.9 * (k % 10) as f64, 20.0 + 0.9 * (k / 10) as f64),
                goals: vec![goal],
                behaviour: BehaviourSlots::single(Behaviour::AroundNearest {
                    epsilon: 0.6,
                    right: k % 2 == 0,
                }),
                local_map: LocalMapSettings {
                    side: 11,
                    precision,
                    ..Default::default()
                },
                seed: 1000 + k,
                ..Default::default()
            };
            let _ = kept.spawn(params);
        }
        let sides = |c: &Crowd| -> Vec<usize> {
            c.agents().map(|(_, a)| a.params().local_map.side).collect()
        };
        assert!(sides(&kept).iter().filter(|&&s| s == 11).count() > BATCH_LANES_F32);
        assert!(kept.agents().count() > 3 * BATCH_LANES_F32);
        let mut fresh = kept.clone();
        for step in 0..12 {
            fresh = fresh.clone();
            assert_eq!(fresh.scratch.len(), 0);
            if step % 2 == 0 {
                kept.step();
                step_by_phases(&mut fresh);
            } else {
                step_by_phases(&mut kept);
                fresh.step();
            }
            assert!(kept.scratch.len() > 0, "buffers kept after step {step}");
            assert_eq!(bits(&kept), bits(&fresh), "step {step}, {precision:?}");
        }
    }
}

/// Sensing programs that look near first (the look ahead's reach, then the whole box only
/// when no agent is that near) move every agent as searching the whole sensing box does,
/// bit for bit: with the nearest agent read every step, and with a look-ahead slot.
#[test]
fn the_near_first_search_finds_what_the_whole_box_finds() {
    for slots in [
        BehaviourSlots::single(Behaviour::AroundNearest {
            epsilon: 0.6,
            right: true,
        }),
        BehaviourSlots::switching(Behaviour::Harmonic, Behaviour::SWERVE_RIGHT, 2.0),
        BehaviourSlots::single(Behaviour::TowardsNearest { epsilon: 0.4 }),
    ] {
        let mut near_first = busy_plaza(four_pillars(), LocalPrecision::F32Complement);
        let ids: Vec<AgentId> = near_first.agents().map(|(id, _)| id).collect();
        for id in ids {
            near_first.set_behaviour(id, slots.clone()).unwrap();
        }
        let mut whole = near_first.clone();
        whole.sense_whole_box = true;
        let mut moved = 0.0;
        for step in 0..30 {
            let before: Vec<DVec2> = near_first.agents().map(|(_, a)| a.position()).collect();
            assert_eq!(near_first.step(), whole.step(), "step {step}");
            for ((id, a), (_, b)) in near_first.agents().zip(whole.agents()) {
                assert_eq!(a.position(), b.position(), "{slots:?}, step {step}, {id:?}");
            }
            moved += near_first
                .agents()
                .zip(&before)
                .map(|((_, a), p)| (a.position() - *p).length())
                .sum::<f64>();
        }
        assert!(moved > 100.0, "the crowd moved {moved} m");
    }
}

/// An agent the host moves during a step, after sensing, next to another's path: the
/// other's step is guarded against where it now stands, though the snapshot's index has it
/// fifteen metres away.
#[test]
fn an_agent_moved_during_a_step_is_guarded_against_where_it_stands() {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::new(30.0, 10.0),
        ..CrowdSettings::seeds()
    };
    let mut crowd = Crowd::new(settings, Vec::new()).unwrap();
    let east = crowd
        .add_goal(Shape::Aabb {
            min: DVec2::new(28.0, 1.0),
            max: DVec2::new(29.0, 9.0),
        })
        .unwrap();
    let west = crowd
        .add_goal(Shape::Aabb {
            min: DVec2::new(1.0, 1.0),
            max: DVec2::new(2.0, 9.0),
        })
        .unwrap();
    let spawn = |crowd: &mut Crowd, x: f64, goal| {
        crowd
            .spawn(AgentParams {
                position: DVec2::new(x, 5.0),
                goals: vec![goal],
                ..Default::default()
            })
            .unwrap()
    };
    let a = spawn(&mut crowd, 5.0, east);
    let b = spawn(&mut crowd, 20.0, west);
    crowd.advance_to(StepPhase::Decision);
    crowd.set_position(b, DVec2::new(5.7, 5.0)).unwrap();
    crowd.advance_to(StepPhase::Motion).unwrap();
    let at = |id| crowd.agent(id).unwrap().position();
    assert!(at(a).x > 5.0, "A still steps east, up to B");
    assert!(
        (at(a) - at(b)).length() >= 0.5 - 1e-9,
        "A at {}, B at {}",
        at(a),
        at(b)
    );
}

/// Prepares every planning agent of a copy of `crowd` for its next step (sensing and
/// stamping, as a step would) and hands each one with its bias to `f`.
fn for_each_prepared(crowd: &Crowd, mut f: impl FnMut(&mut Agent, Bias)) {
    let mut probe = crowd.clone();
    let (snapshot, hash) = probe.snapshot();
    probe.note_ways();
    let discs = probe.disc_rasters(&snapshot, Vec::new());
    probe.update_rasters();
    let world = world_of!(probe, &discs);
    let mut scratch = Neighbours::default();
    for (i, slot) in probe.agents.iter_mut().enumerate() {
        let Some(agent) = slot else { continue };
        if !agent.plans() {
            continue;
        }
        if let Prepared::Relax { bias, .. } = world.prepare(i, agent, &hash, &mut scratch) {
            f(agent, bias);
        }
    }
}

/// Leaving the neighbours that walk an agent's way out of its map
/// ([`NeighbourStamping::ExceptSameWay`]) stamps the same cells whether the discs are read
/// from the step's rasters or stamped one by one (the way of agents without a raster), and in
/// a plaza of two opposite streams it leaves some out: their maps differ from those with
/// every neighbour stamped, and hold fewer obstacle cells.
#[test]
fn same_way_neighbours_are_left_out_alike_from_rasters_and_one_by_one() {
    let mut crowd = busy_plaza(four_pillars(), LocalPrecision::F32Complement);
    for agent in crowd.agents.iter_mut().flatten() {
        agent.params.local_map.neighbours = Some(NeighbourStamping::ExceptSameWay);
    }
    for _ in 0..6 {
        crowd.step();
    }
    let mut probe = crowd.clone();
    let (snapshot, hash) = probe.snapshot();
    probe.note_ways();
    probe.update_rasters();
    let discs = probe.disc_rasters(&snapshot, Vec::new());
    assert!(!discs.is_empty());
    let no_discs = Vec::new();
    let rasters = world_of!(probe, &discs);
    let one_by_one = world_of!(probe, &no_discs);
    let mut scratch = Neighbours::default();
    let obstacles = |a: &Agent| {
        a.local
            .field()
            .kinds()
            .iter()
            .filter(|k| **k == CellKind::Obstacle)
            .count()
    };
    let (mut planned, mut fewer) = (0, 0);
    for (i, slot) in probe.agents.iter().enumerate() {
        let Some(agent) = slot else { continue };
        if !agent.plans() {
            continue;
        }
        assert_eq!(
            agent.params.local_map.neighbours,
            Some(NeighbourStamping::ExceptSameWay)
        );
        let mut a = agent.clone();
        let mut b = agent.clone();
        let mut all = agent.clone();
        all.params.local_map.neighbours = Some(NeighbourStamping::All);
        rasters.prepare(i, &mut a, &hash, &mut scratch);
        one_by_one.prepare(i, &mut b, &hash, &mut scratch);
        rasters.prepare(i, &mut all, &hash, &mut scratch);
        assert_eq!(
            a.local.field().kinds(),
            b.local.field().kinds(),
            "agent {i}"
        );
        assert!(obstacles(&a) <= obstacles(&all), "agent {i}");
        planned += 1;
        fewer += usize::from(obstacles(&a) < obstacles(&all));
    }
    println!("{fewer} of {planned} maps leave neighbours out");
    assert!(fewer * 4 > planned, "{fewer} of {planned}");
}

/// f32 local maps are allowed where a test shows they give the decisions f64 makes: at every
/// other step of two busy plazas (pillars; long walls with gaps, whose lee goes flat), each
/// planning agent's stamped map is relaxed by `FieldBatch` (f64) and by `FieldBatchF32`
/// (f32 on the complement), and the heading and speed decided from each are compared.
/// `cargo test -p crowdfield_steer --release --lib f32_complement -- --nocapture` prints
/// the counts.
#[test]
fn f32_complement_sweeps_make_the_f64_decisions() {
    let walls: Vec<Shape> = [(7.0, 2.0, 10.0), (12.0, 12.0, 21.0), (17.0, 4.0, 13.0)]
        .into_iter()
        .map(|(x, y0, y1)| Shape::Aabb {
            min: DVec2::new(x, y0),
            max: DVec2::new(x + 0.4, y1),
        })
        .collect();
    let (mut total, mut same, mut within_half_degree, mut worst) = (0, 0, 0, 0f64);
    let (mut at_floor, mut speed_differs) = (0, 0);
    for statics in [four_pillars(), walls] {
        let mut crowd = busy_plaza(statics, LocalPrecision::F32Complement);
        for step in 0..60 {
            if step >= 4 && step % 2 == 0 {
                for_each_prepared(&crowd, |agent, bias| {
                    let side = agent.params.local_map.side;
                    let sweeps = agent.params.local_map.sweeps;
                    let mut wide = FieldBatch::new(side, side);
                    wide.load(0, agent.local.field(), &bias);
                    wide.relax(sweeps);
                    let mut narrow = FieldBatchF32::new(side, side);
                    narrow.load(0, agent.local.field(), &bias);
                    narrow.relax(sweeps);
                    let start = agent.clone();
                    wide.store(0, agent.local.field_mut());
                    let a = agent.decide(bias, false, super::plan::Queue::No);
                    let flat = agent.local.descent_at(agent.position).length() < 1e-14;
                    *agent = start.clone();
                    narrow.store(0, agent.local.field_mut());
                    let b = agent.decide(bias, false, super::plan::Queue::No);
                    total += 1;
                    same += usize::from(a.heading == b.heading);
                    let turn = if a.heading == b.heading {
                        0.0
                    } else {
                        a.heading.angle_to(b.heading).abs().to_degrees()
                    };
                    if flat {
                        // f64 is at its own floor near p = 1: its direction is rounding
                        // noise, no reference.
                        at_floor += 1;
                        return;
                    }
                    within_half_degree += usize::from(turn <= 0.1);
                    worst = worst.max(turn);
                    speed_differs += usize::from(a.speed_factor != b.speed_factor);
                });
            }
            crowd.step();
        }
    }
    println!(
        "{total} decisions: {at_floor} with the f64 descent below 1e-14 (its floor); of the \
         rest {same} identical headings, {within_half_degree} within 0.1°, worst {worst:.4}°; \
         {speed_differs} different speed factors"
    );
    assert!(total > 3000, "{total} decisions compared");
    assert!(at_floor * 100 <= total, "{at_floor} flat maps");
    assert_eq!(within_half_degree + at_floor, total, "worst {worst}°");
    assert!(
        speed_differs * 1000 <= total,
        "{speed_differs} speed factors differ"
    );
}

/// How many warm-started sweeps give the decisions of 30 sweeps from a cold start (docs/performance.md, *Fewer sweeps*):
/// at several steps of a busy plaza, every planning agent's stamped local map is relaxed
/// (a) cold: free cells reset to the initial value, 30 sweeps, and (b) warm: as carried
/// from the previous step, k sweeps; the headings chosen from both are compared.
/// `cargo test -p crowdfield_steer --release --lib warm_started -- --nocapture` prints the
/// table.
#[test]
fn warm_started_sweeps_against_thirty_cold_ones() {
    let mut crowd = busy_plaza(four_pillars(), LocalPrecision::F64);
    let ks = [1usize, 2, 3, 5, 8, 12, 20, 30];
    let mut agree = [0usize; 8];
    let mut agree_converged = [0usize; 8];
    let mut cold_converged = 0usize;
    let mut total = 0usize;
    let tolerance = 5f64.to_radians();
    for step in 0..45 {
        if step >= 10 && step % 5 == 0 {
            for_each_prepared(&crowd, |agent, bias| {
                let choose = |field: &Field<f64>| {
                    decide(
                        agent.heading,
                        field.free_descent_at(agent.position),
                        agent.params.heading,
                        agent.params.speed,
                    )
                    .0
                };
                let mut cold = agent.local.field().clone();
                cold.reset_free(agent.params.local_map.initial_value);
                relax(&mut cold, &bias, &Relaxation::GAUSS_SEIDEL, 30);
                let reference = choose(&cold);
                let mut exact = agent.local.field().clone();
                let _ = relax_until(
                    &mut exact,
                    &bias,
                    &Relaxation::GAUSS_SEIDEL,
                    &Tolerance::new(1e-12, 200_000),
                );
                let converged = choose(&exact);
                let close = |a: DVec2, b: DVec2| a == b || a.angle_to(b).abs() <= tolerance;
                cold_converged += usize::from(close(reference, converged));
                for (j, k) in ks.iter().enumerate() {
                    let mut warm = agent.local.field().clone();
                    relax(&mut warm, &bias, &Relaxation::GAUSS_SEIDEL, *k);
                    let heading = choose(&warm);
                    agree[j] += usize::from(close(reference, heading));
                    agree_converged[j] += usize::from(close(converged, heading));
                }
                total += 1;
            });
        }
        crowd.step();
    }
    let pct = |a: usize| 100.0 * a as f64 / total as f64;
    println!(
        "{} agents, {total} decisions; headings within 5°:",
        crowd.agents.iter().flatten().count()
    );
    println!("warm sweeps | of 30 cold sweeps | of the converged map");
    for ((k, a), c) in ks.iter().zip(agree).zip(agree_converged) {
        println!("{k:>11} | {:>16.1} % | {:>18.1} %", pct(a), pct(c));
    }
    println!(
        " 30 cold    |                   | {:>18.1} %",
        pct(cold_converged)
    );
    assert!(total > 500, "{total} decisions compared");
    // More warm sweeps move every decision towards the converged map's (within 1 %), and
    // 30 warm-started sweeps reach it more often than 30 from a cold start.
    assert!(
        agree_converged
            .windows(2)
            .all(|w| w[1] + total / 100 >= w[0]),
        "{agree_converged:?}"
    );
    assert!(
        agree_converged[7] > cold_converged,
        "{agree_converged:?} {cold_converged}"
    );
}

/// Adding goals together gives what adding them one by one in order gives: the same ids, the
/// same errors, the same map bits, on one thread or several (the maps are solved in parallel).
#[test]
fn goals_added_together_match_goals_added_one_by_one() {
    let pillars = four_pillars();
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(24.0),
        ..CrowdSettings::seeds()
    };
    let shapes = vec![
        Shape::Aabb {
            min: DVec2::new(21.0, 1.0),
            max: DVec2::new(22.5, 23.0),
        },
        // Inside a pillar: blocked, takes no id.
        pillars[0].clone(),
        Shape::Disc {
            centre: DVec2::new(3.0, 20.0),
            radius: 0.6,
        },
        // Not a shape at all.
        Shape::Disc {
            centre: DVec2::new(f64::NAN, 2.0),
            radius: 1.0,
        },
        Shape::Disc {
            centre: DVec2::new(12.0, 12.0),
            radius: 0.2,
        },
    ];
    let mut one_by_one = Crowd::new(settings, pillars.clone()).unwrap();
    let want: Vec<_> = shapes
        .iter()
        .map(|s| one_by_one.add_goal(s.clone()))
        .collect();
    assert_eq!(want.iter().filter(|r| r.is_err()).count(), 2, "{want:?}");
    for threads in [1, 3] {
        let pool = pool(threads);
        let mut together = Crowd::new(settings, pillars.clone()).unwrap();
        let got = pool.install(|| together.add_goals(shapes.clone()));
        // Compared as text: the NaN in an error is not equal to itself.
        assert_eq!(format!("{got:?}"), format!("{want:?}"), "{threads} threads");
        for id in want.iter().flatten() {
            let (a, b) = (one_by_one.goal(*id).unwrap(), together.goal(*id).unwrap());
            assert_eq!(a.map().kinds(), b.map().kinds());
            let bits = |m: &Field<f64>| {
                m.potentials()
                    .iter()
                    .map(|p| p.to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                bits(a.map()),
                bits(b.map()),
                "goal {id:?}, {threads} threads"
            );
        }
        assert!(together.goal(GoalId(3)).is_none());
        // Nothing to add adds nothing.
        assert!(together.add_goals(Vec::new()).is_empty());
        assert!(together.goal(GoalId(3)).is_none());
    }
}

/// The disc rasters a commit counts ahead (on a pool of two threads) are the ones the next
/// step would count, and the next step takes them only when nothing changed in between: a
/// crowd stepped on two threads, whole or phase by phase, and its copy stepped on one (which
/// counts nothing ahead) stand at the same bits after every step, while between steps the
/// host moves, removes and spawns agents and adds an obstacle (which patches the static
/// rasters). After every step the rasters counted ahead equal a fresh count for the snapshot
/// then; they are taken on every step the host left alone and on no other.
#[test]
fn discs_counted_during_the_commit_are_the_next_steps_discs() {
    let two = pool(2);
    let one = pool(1);
    let mut ahead = busy_plaza(four_pillars(), LocalPrecision::F32Complement);
    let mut plain = ahead.clone();
    let bits = |c: &Crowd| -> Vec<[u64; 2]> {
        c.agents()
            .map(|(_, a)| a.position().to_array().map(f64::to_bits))
            .collect()
    };
    let goal = ahead.agents().next().unwrap().1.params().goals[0];
    let (mut taken, mut left) = (0, 0);
    for step in 0..60u32 {
        // The host's work between steps, the same on both crowds.
        let host = step % 6;
        let mut acted = false;
        for crowd in [&mut ahead, &mut plain] {
            acted = match host {
                1 => {
                    let (id, at) = crowd
                        .agents()
                        .nth(step as usize % 50)
                        .map(|(id, a)| (id, a.position()))
                        .unwrap();
                    crowd.set_position(id, at + DVec2::new(0.05, 0.0)).unwrap();
                    true
                }
                2 => {
                    let id = crowd.agents().nth(3).unwrap().0;
                    crowd.remove(id).unwrap();
                    true
                }
                // A spawn may be refused (the place taken): then nothing changed.
                3 => crowd
                    .spawn(AgentParams {
                        position: DVec2::new(12.0, 1.0 + f64::from(step % 20)),
                        goals: vec![goal],
                        seed: u64::from(step),
                        ..Default::default()
                    })
                    .is_ok(),
                4 if step == 22 => {
                    crowd
                        .add_obstacle(Shape::Disc {
                            centre: DVec2::new(12.0, 12.0),
                            radius: 0.8,
                        })
                        .unwrap();
                    true
                }
                _ => false,
            };
        }
        // Whether the next step can take what the last commit counted.
        let usable = ahead.ahead.as_ref().is_some_and(|a| {
            a.generation == ahead.raster_generation && a.counted(&ahead.snapshot().0)
        });
        if step > 0 {
            assert_eq!(usable, !acted, "step {step}: host {host}");
            if usable {
                taken += 1;
            } else {
                left += 1;
            }
        }
        two.install(|| {
            if step % 2 == 0 {
                ahead.step();
            } else {
                step_by_phases(&mut ahead);
            }
        });
        one.install(|| plain.step());
        assert!(plain.ahead.is_none(), "one thread counts nothing ahead");
        assert_eq!(bits(&ahead), bits(&plain), "step {step}");
        // What was counted ahead is what the next step would count now.
        let counted = ahead.ahead.clone().expect("counted during the commit");
        assert!(!counted.rasters.is_empty());
        let mut probe = ahead.clone();
        let (snapshot, _) = probe.snapshot();
        assert!(counted.counted(&snapshot));
        probe.update_rasters();
        let fresh = probe.disc_rasters(&snapshot, Vec::new());
        for (key, raster) in &counted.rasters {
            let (_, want) = fresh.iter().find(|(k, _)| k == key).expect("the key");
            assert!(raster == want, "step {step}: key {key:?}");
        }
    }
    assert!(taken >= 20 && left >= 25, "taken {taken}, left {left}");
}

/// Two crowds stepped at once on a pool of two threads, each commit counting ahead while the
/// other crowd's step keeps the pool busy (either thread may take the other crowd's count while
/// it waits), finish every step and stand where copies stepped one after the other on one
/// thread stand.
#[test]
fn crowds_stepped_side_by_side_count_ahead_without_waiting_on_each_other() {
    let two = pool(2);
    let one = pool(1);
    let mut a = busy_plaza(four_pillars(), LocalPrecision::F32Complement);
    let mut b = busy_plaza(Vec::new(), LocalPrecision::F32Complement);
    let (mut a1, mut b1) = (a.clone(), b.clone());
    let bits = |c: &Crowd| -> Vec<[u64; 2]> {
        c.agents()
            .map(|(_, a)| a.position().to_array().map(f64::to_bits))
            .collect()
    };
    let mut counted = 0;
    for step in 0..30 {
        two.install(|| rayon::join(|| a.step(), || b.step()));
        one.install(|| {
            a1.step();
            b1.step();
        });
        counted += usize::from(a.ahead.is_some()) + usize::from(b.ahead.is_some());
        assert_eq!(bits(&a), bits(&a1), "step {step}");
        assert_eq!(bits(&b), bits(&b1), "step {step}");
    }
    assert!(counted > 30, "counted ahead {counted} times");
}

/// A whole step on two threads commits while it plans (`pipeline`), and changes nothing: a
/// crowd stepped whole, its copy stepped phase by phase on the same pool (the commit after all
/// plans) and a copy stepped whole on one thread stand at the same bits, headings and states
/// after every step and report the same events in the same order, while agents arrive, move
/// on to their next goal, time out and leave the crowd; the first went through the pipelined
/// step every time, the others never.
/// A whole step asked for from outside any rayon pool (a game's systems run on Bevy's threads)
/// moves onto a thread of the global pool and commits while it plans there, whether asked at
/// once (`Crowd::step`) or after its guidance phase (the plugin's `Guidance` set, then `Sensing`
/// with `fuse_motion`); a step run phase by phase stays on the caller's thread. All walk as one
/// thread does. Where the global pool has one thread, nothing moves.
#[test]
fn whole_steps_from_outside_the_pool_move_onto_it() {
    let one = pool(1);
    let mut whole = busy_plaza(four_pillars(), LocalPrecision::F32Complement);
    let mut guided = whole.clone();
    let mut phased = whole.clone();
    let mut alone = whole.clone();
    let steps = 30;
    // The test's own thread is outside every pool; its work goes to the global one.
    assert!(rayon::current_thread_index().is_none());
    for step in 0..steps {
        let a = whole.step();
        assert!(guided.advance_to(StepPhase::Guidance).is_none());
        let b = guided.advance_to(StepPhase::Motion).unwrap();
        let mut c = None;
        for phase in [StepPhase::Sensing, StepPhase::Decision, StepPhase::Motion] {
            c = phased.advance_to(phase);
        }
        let d = one.install(|| alone.step());
        for other in [&b, c.as_ref().unwrap(), &d] {
            assert_eq!(format!("{a:?}"), format!("{other:?}"), "step {step}");
        }
        assert_eq!(walked(&whole), walked(&alone), "step {step}");
        assert_eq!(walked(&guided), walked(&alone), "step {step}");
        assert_eq!(walked(&phased), walked(&alone), "step {step}");
    }
    let moved = if rayon::current_num_threads() > 1 {
        steps
    } else {
        0
    };
    assert_eq!(whole.pipelined_steps, moved);
    assert_eq!(guided.pipelined_steps, moved);
    assert_eq!(phased.pipelined_steps + alone.pipelined_steps, 0);
}

#[test]
fn committing_while_planning_changes_nothing() {
    let two = pool(2);
    let one = pool(1);
    let mut whole = busy_plaza(four_pillars(), LocalPrecision::F32Complement);
    // A goal near the bottom edge: a third of the walkers go there first (half of those then
    // on to their own goal), so that agents arrive and move on to their next goal.
    let goal = whole
        .add_goal(Shape::Disc {
            centre: DVec2::new(12.0, 3.0),
            radius: 1.5,
        })
        .unwrap();
    let ids: Vec<AgentId> = whole.agents().map(|(id, _)| id).collect();
    for (k, id) in ids.iter().enumerate().filter(|(k, _)| k % 3 == 0) {
        let mut goals = vec![goal];
        goals.extend(whole.agent(*id).unwrap().params().goals.clone());
        if k % 2 == 0 {
            goals.truncate(1);
        }
        whole.set_goals(*id, goals).unwrap();
    }
    // Walkers along the top edge: some leave the crowd as they reach a goal beside them, the
    // others give up the far goal after three steps.
    let beside = whole
        .add_goal(Shape::Disc {
            centre: DVec2::new(12.0, 22.8),
            radius: 1.0,
        })
        .unwrap();
    for k in 0u32..7 {
        let leaves = k % 2 == 0;
        whole
            .spawn(AgentParams {
                position: DVec2::new(9.0 + f64::from(k), 23.2),
                goals: vec![if leaves { beside } else { goal }],
                on_arrival: ArrivalAction::Despawn,
                time_limits: vec![(!leaves).then_some(3)],
                seed: 500 + u64::from(k),
                ..Default::default()
            })
            .unwrap();
    }
    let mut phased = whole.clone();
    let mut alone = whole.clone();
    let (mut arrived, mut advanced, mut removed, mut timed_out) = (0, 0, 0, 0);
    for step in 0..80 {
        let (a, b) = two.install(|| (whole.step(), step_by_phases(&mut phased)));
        let c = one.install(|| alone.step());
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "step {step}");
        assert_eq!(format!("{a:?}"), format!("{c:?}"), "step {step}");
        assert_eq!(walked(&whole), walked(&phased), "step {step}");
        assert_eq!(walked(&whole), walked(&alone), "step {step}");
        arrived += a.arrived.len();
        advanced += a.advanced.len();
        removed += a.removed.len();
        timed_out += a.timed_out.len();
    }
    assert_eq!(whole.pipelined_steps, 80);
    assert_eq!(phased.pipelined_steps + alone.pipelined_steps, 0);
    assert!(
        arrived >= 5 && advanced >= 3 && removed >= 2 && timed_out >= 3,
        "arrived {arrived}, advanced {advanced}, removed {removed}, timed out {timed_out}"
    );
}

/// A walker's progress starts afresh on each goal: the mark set on the last goal (its level on
/// that goal's map, its distance from that region) measures nothing on the next, which is read
/// from the first step there.
#[test]
fn a_new_goal_starts_progress_afresh() {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(20.0),
        ..CrowdSettings::seeds()
    };
    let mut crowd = Crowd::new(settings, Vec::new()).unwrap();
    let disc = |x: f64, y: f64| Shape::Disc {
        centre: DVec2::new(x, y),
        radius: 0.5,
    };
    let first = crowd.add_goal(disc(8.0, 10.0)).unwrap();
    let second = crowd.add_goal(disc(8.0, 2.0)).unwrap();
    let id = crowd
        .spawn(AgentParams {
            position: DVec2::new(2.0, 10.0),
            goals: vec![first, second],
            ..Default::default()
        })
        .unwrap();
    let advanced = (0..200).any(|_| crowd.step().advanced.contains(&id));
    assert!(advanced);
    let agent = crowd.agent(id).unwrap();
    assert!(agent.level_mark.is_none());
    assert_eq!((agent.stalled, agent.progress_mark), (0, agent.position));
    crowd.step();
    let agent = crowd.agent(id).unwrap();
    let mark = agent.level_mark.expect("marked on the second goal's map");
    let second_map = crowd.goal(second).expect("added").revision;
    assert_eq!(mark.revision, second_map);
    assert_eq!(agent.stalled, 0);
}

/// Agent ids are never given twice: once the last has been given, a spawn is refused with
/// [`SteerError::TooManyAgents`] and nothing is added (docs/errors.md). Reaching it for real
/// takes 2³² spawns; the counter is set just short of it.
#[test]
fn spawning_past_the_last_agent_id_is_refused() {
    let mut crowd = Crowd::new(CrowdSettings::default(), Vec::new()).unwrap();
    crowd.next_id = u32::MAX - 1;
    let params = |x: f64| AgentParams {
        position: DVec2::new(x, 5.0),
        ..AgentParams::default()
    };
    assert_eq!(crowd.spawn(params(5.0)).unwrap(), AgentId(u32::MAX - 1));
    let e = crowd.spawn(params(10.0)).unwrap_err();
    assert!(matches!(e, SteerError::TooManyAgents), "{e:?}");
    assert_eq!(e.to_string(), "no agent id left to give");
    assert_eq!(crowd.agents().count(), 1);
}
