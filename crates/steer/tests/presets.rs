//! What the `Flow` preset changes in a step, each beside the seeds' steering
//! (docs/steering.md, *Presets*).

use crowdfield_field::Shape;
use crowdfield_steer::{AgentParams, Crowd, CrowdSettings, NeighbourStamping, Preset};
use glam::DVec2;

fn crowd(preset: Preset) -> Crowd {
    Crowd::new(
        CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::new(30.0, 10.0),
            preset,
            ..CrowdSettings::default()
        },
        Vec::new(),
    )
    .unwrap()
}

/// A file of three walkers 0.45 m apart (centre to centre, radius 0.2: 5 cm between them),
/// the one at the back spawned first (committed first), all walking east. On `Flow` the one at
/// the back walks 1.49 m in five steps of at most 0.35 m, the file kept (queueing behind
/// neighbours it reads as walking its way, its shortened steps tried again once the one in
/// front has moved); on the seeds' steering every neighbour closes its window, it walks
/// backwards (0.29 m in five steps) and the file falls apart.
#[test]
fn a_walker_behind_one_that_moves_on_is_not_held_by_where_it_stood() {
    let walk = |preset: Preset| {
        let mut crowd = crowd(preset);
        let goal = crowd
            .add_goal(Shape::Aabb {
                min: DVec2::new(28.0, 0.5),
                max: DVec2::new(29.5, 9.5),
            })
            .unwrap();
        let ids: Vec<_> = (0..3)
            .map(|k| {
                crowd
                    .spawn(AgentParams {
                        position: DVec2::new(5.0 + 0.45 * k as f64, 5.0),
                        radius: 0.2,
                        goals: vec![goal],
                        ..AgentParams::default()
                    })
                    .unwrap()
            })
            .collect();
        for _ in 0..5 {
            crowd.step();
        }
        let back = crowd.agent(ids[0]).unwrap().position().x - 5.0;
        let gaps: Vec<f64> = ids
            .windows(2)
            .map(|w| {
                let (a, b) = (crowd.agent(w[0]).unwrap(), crowd.agent(w[1]).unwrap());
                (a.position() - b.position()).length() - 0.4
            })
            .collect();
        (back, gaps)
    };
    let (seeds, seeds_gaps) = walk(Preset::Seeds);
    let (flow, flow_gaps) = walk(Preset::Flow);
    println!(
        "five steps of the walker at the back: seeds {seeds:.3} m, flow {flow:.3} m; gaps {seeds_gaps:?} {flow_gaps:?}"
    );
    assert!(seeds_gaps.iter().chain(&flow_gaps).all(|g| *g > -1e-9));
    assert!(seeds < 0.5, "seeds: {seeds}");
    assert!(flow > 1.4, "flow: {flow}");
}

/// Agents spawned with the preset's choices left open get them filled in: every neighbour
/// stamped on the seeds' steering, those walking one's way left out on `Flow`; a choice made
/// in the agent's settings stays.
#[test]
fn agents_take_the_presets_stamping_unless_they_chose_one() {
    for (preset, want) in [
        (Preset::Seeds, NeighbourStamping::All),
        (Preset::Flow, NeighbourStamping::ExceptSameWay),
    ] {
        let mut crowd = crowd(preset);
        let open = crowd
            .spawn(AgentParams {
                position: DVec2::new(5.0, 5.0),
                ..AgentParams::default()
            })
            .unwrap();
        let mut chosen = AgentParams {
            position: DVec2::new(8.0, 5.0),
            ..AgentParams::default()
        };
        chosen.local_map.neighbours = Some(NeighbourStamping::All);
        let chosen = crowd.spawn(chosen).unwrap();
        let stamping = |id| crowd.agent(id).unwrap().params().local_map.neighbours;
        assert_eq!(stamping(open), Some(want));
        assert_eq!(stamping(chosen), Some(NeighbourStamping::All));
    }
}
