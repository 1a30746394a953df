//! Flatness recovery (digest 000 §2.9 and §8.2 test 6): a room reached only through a long
//! one-cell passage is flat in the converged f64 field; an agent there reaches the goal by
//! stacking sub-goals, and the stack is empty on arrival.

use crowdfield_field::{
    Bias, CellKind, Field, GridGeometry, MAX_SUBGOAL_DEPTH, MultigridSolver, SubgoalCache,
    SubgoalStack,
};
use glam::DVec2;

/// 90×21 cells of 1 m: a goal room (x < 20), a one-cell passage along row 10 (x in 20..70),
/// and a far room (x ≥ 70).
fn passage_map() -> Field<f64> {
    let (w, h) = (90, 21);
    let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, w, h).unwrap(), 1.0);
    for x in 20..70 {
        for y in 1..h - 1 {
            if y != 10 {
                f.set_obstacle(x, y).unwrap();
            }
        }
    }
    f.set_goal(4, 10).unwrap();
    f
}

#[test]
fn far_room_behind_a_long_passage_is_flat() {
    let mut f = passage_map();
    let r = MultigridSolver::new()
        .solve(&mut f, &Bias::HARMONIC, 1e-14)
        .unwrap();
    assert!(r.residual < 1e-13, "{r:?}");
    assert!(f.is_flat_at_cell(80, 10));
    assert!(f.descent_at(f.geometry().cell_centre(80, 10)).length() < 1e-8);
    // Near the goal it is not.
    assert!(!f.is_flat_at_cell(10, 10));
}

#[test]
fn agent_in_the_flat_room_reaches_the_goal_with_sub_goals() {
    let mut f = passage_map();
    MultigridSolver::new()
        .solve(&mut f, &Bias::HARMONIC, 1e-14)
        .unwrap();
    let g = *f.geometry();
    let mut stack = SubgoalStack::new();
    let mut pos = g.cell_centre(80, 12);
    let mut deepest = 0;
    let mut arrived = false;
    for _ in 0..2_000 {
        let cell = g.world_to_cell(pos);
        if f.kind(cell.x as usize, cell.y as usize) == Some(CellKind::Goal) {
            arrived = true;
            break;
        }
        let d = stack.descent(&f, pos).unwrap();
        deepest = deepest.max(stack.len());
        assert!(d.length() > 0.0, "no usable gradient at {pos}");
        pos += d.normalize() * 0.5;
        let c = g.world_to_cell(pos);
        assert_ne!(
            f.kind(c.x as usize, c.y as usize),
            Some(CellKind::Obstacle),
            "walked into a wall at {pos}"
        );
    }
    println!("deepest sub-goal stack: {deepest}");
    assert!(arrived, "stuck at {pos} with {} sub-goals", stack.len());
    assert!(
        deepest >= 2,
        "recovery should have needed several sub-goals, used {deepest}"
    );
    assert!(
        stack.is_empty(),
        "stack not empty on arrival: {:?}",
        stack.goal_counts()
    );
}

#[test]
fn a_region_with_no_route_gets_no_direction() {
    let mut f = passage_map();
    f.set_obstacle(45, 10).unwrap(); // close the passage
    MultigridSolver::new()
        .solve(&mut f, &Bias::HARMONIC, 1e-14)
        .unwrap();
    let mut stack = SubgoalStack::new();
    let d = stack.descent(&f, f.geometry().cell_centre(80, 10)).unwrap();
    assert_eq!(d, DVec2::ZERO);
}

/// A walker may stand in a cell the grid counts as obstacle (an obstacle grown by the walker's
/// radius covers part of a cell the real shape leaves clear). Where the field is flat there, the
/// sub-goal is built for the region of the nearest free cell, so the walker still gets a way;
/// deep inside an obstacle, with no free cell within two cells, it gets none.
#[test]
fn a_walker_on_an_obstacle_cell_beside_a_flat_room_gets_a_sub_goal() {
    let mut f = passage_map();
    MultigridSolver::new()
        .solve(&mut f, &Bias::HARMONIC, 1e-14)
        .unwrap();
    let g = *f.geometry();
    // In the wall cell (69, 12), 0.1 m from the far room's first column.
    let start = g.cell_centre(69, 12) + DVec2::new(0.4, 0.0);
    assert_eq!(f.kind(69, 12), Some(CellKind::Obstacle));
    assert!(f.descent_at(start).length() < 1e-8, "flat there");
    let mut stack = SubgoalStack::new();
    let d = stack.descent(&f, start).unwrap();
    assert!(d.length() >= 1e-8, "no direction from the wall's margin");
    assert!(!stack.is_empty());
    let mut walker = SubgoalStack::new();
    assert!(
        walk_to_goal(&f, &mut walker, start).is_some(),
        "did not reach the goal"
    );
    // Five cells deep in the wall: nothing free within two cells.
    let mut deep = SubgoalStack::new();
    assert_eq!(
        deep.descent(&f, g.cell_centre(45, 15)).unwrap(),
        DVec2::ZERO
    );
    assert!(deep.is_empty());
}

#[test]
fn agents_sharing_a_sub_goal_cache_get_the_same_directions_from_fewer_solves() {
    let mut f = passage_map();
    MultigridSolver::new()
        .solve(&mut f, &Bias::HARMONIC, 1e-14)
        .unwrap();
    let g = *f.geometry();
    let cache = SubgoalCache::new();
    let starts = [(80, 12), (85, 6), (76, 15), (90, 10)];
    let mut walkers: Vec<(DVec2, SubgoalStack, SubgoalStack)> = starts
        .iter()
        .map(|&(x, y)| {
            (
                g.cell_centre(x, y),
                SubgoalStack::new(),
                SubgoalStack::new(),
            )
        })
        .collect();
    let mut pushes = 0;
    for _ in 0..300 {
        for (pos, alone, shared) in &mut walkers {
            let before = alone.len();
            let a = alone.descent(&f, *pos).unwrap();
            pushes += alone.len().saturating_sub(before);
            let b = shared.descent_shared(&f, *pos, &cache).unwrap();
            assert_eq!(a, b, "at {pos}");
            assert_eq!(alone.goal_counts(), shared.goal_counts());
            if let Some(d) = a.try_normalize() {
                *pos += d * 0.5;
            }
        }
    }
    println!("{pushes} sub-goals pushed, {} fields built", cache.len());
    assert!(pushes >= 8, "{pushes}");
    // One field per depth of the chain the four walkers share.
    assert!(
        cache.len() * 2 <= pushes,
        "{} fields for {pushes} pushes",
        cache.len()
    );
}

#[test]
fn a_shared_cache_gives_no_direction_and_builds_nothing_for_points_off_the_grid() {
    let mut f = passage_map();
    MultigridSolver::new()
        .solve(&mut f, &Bias::HARMONIC, 1e-14)
        .unwrap();
    let cache = SubgoalCache::new();
    let mut stack = SubgoalStack::new();
    for p in [
        DVec2::new(f64::NAN, 3.0),
        DVec2::new(-50.0, -50.0),
        DVec2::splat(f64::INFINITY),
    ] {
        assert_eq!(
            stack.descent_shared(&f, p, &cache).unwrap(),
            DVec2::ZERO,
            "{p}"
        );
        assert!(stack.is_empty());
    }
    assert!(cache.is_empty());
}

/// 840×5 cells of 1 m: a goal at the west end of a one-cell passage 830 cells long (row 2).
fn long_passage_map() -> Field<f64> {
    let (w, h) = (840, 5);
    let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, w, h).unwrap(), 1.0);
    for x in 1..w - 1 {
        for y in [1, 3] {
            f.set_obstacle(x, y).unwrap();
        }
    }
    f.set_goal(2, 2).unwrap();
    f
}

/// Walks from `start` along `stack`'s descent in half-cell steps; the deepest stack on the
/// way, or `None` where the descent gave out (or 4,000 steps ran out) before the goal.
fn walk_to_goal(f: &Field<f64>, stack: &mut SubgoalStack, start: DVec2) -> Option<usize> {
    let g = *f.geometry();
    let mut pos = start;
    let mut deepest = 0;
    for _ in 0..4_000 {
        let cell = g.world_to_cell(pos);
        if f.kind(cell.x as usize, cell.y as usize) == Some(CellKind::Goal) {
            return Some(deepest);
        }
        let d = stack.descent(f, pos).unwrap();
        deepest = deepest.max(stack.len());
        pos += d.try_normalize()? * 0.5;
    }
    None
}

#[test]
fn a_passage_longer_than_64_sub_goals_is_walked_to_its_end() {
    // Each sub-goal carries about eight cells along a one-cell passage: 830 cells need more
    // than the 64 the stack held before (and fewer than MAX_SUBGOAL_DEPTH).
    let mut f = long_passage_map();
    MultigridSolver::new()
        .solve(&mut f, &Bias::HARMONIC, 1e-14)
        .unwrap();
    let start = f.geometry().cell_centre(835, 2);
    assert!(f.is_flat_at_cell(835, 2));
    let mut stack = SubgoalStack::new();
    let deepest = walk_to_goal(&f, &mut stack, start).expect("the walker stopped short");
    println!("deepest sub-goal stack: {deepest}");
    assert!(
        (65..=MAX_SUBGOAL_DEPTH).contains(&deepest),
        "needed {deepest} sub-goals"
    );
    assert!(stack.is_empty());
    // A stack capped below what the passage needs gives no direction at the far end.
    let mut short = SubgoalStack::with_max_depth(64);
    assert_eq!(short.descent(&f, start).unwrap(), DVec2::ZERO);
    assert_eq!(short.len(), 64);
}
