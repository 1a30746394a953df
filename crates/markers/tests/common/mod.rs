//! Scenes and a plain runner shared by the marker back end's tests: agents are points moved by
//! the back end's displacements alone (the seed's model, no collision guard).

#![allow(dead_code)]

use crowdfield_field::Shape;
use crowdfield_markers::{Generation, MarkerCrowd, MarkerEvent, MarkerSet, MarkerSettings, Sensed};
use crowdfield_steer::AgentId;
use glam::DVec2;

/// The digest's test room (§2.5, S1): 30 × 12 m, a 2 m thick wall from the floor to 8 m
/// high at x = 14–16, leaving a 4 m gap above it; markers at 60 per m².
pub fn wall_room(seed: u64) -> MarkerSet {
    let settings = MarkerSettings {
        min: DVec2::ZERO,
        max: DVec2::new(30.0, 12.0),
        ..Default::default()
    };
    let wall = Shape::Aabb {
        min: DVec2::new(14.0, 0.0),
        max: DVec2::new(16.0, 8.0),
    };
    let mut set = MarkerSet::new(settings, vec![wall]).unwrap();
    set.generate(Generation::default(), 60.0, seed).unwrap();
    set
}

/// An open square of `side` metres at 60 markers per m².
pub fn open_square(side: f64, seed: u64) -> MarkerSet {
    open_box(DVec2::splat(side), vec![], seed)
}

/// An open box with obstacles at 60 markers per m² (jittered grid: fast to build).
pub fn open_box(size: DVec2, obstacles: Vec<Shape>, seed: u64) -> MarkerSet {
    let settings = MarkerSettings {
        min: DVec2::ZERO,
        max: size,
        ..Default::default()
    };
    let mut set = MarkerSet::new(settings, obstacles).unwrap();
    set.generate(Generation::JitteredGrid, 60.0, seed).unwrap();
    set
}

/// Point agents moved by a marker crowd.
pub struct Run {
    pub crowd: MarkerCrowd,
    pub agents: Vec<(AgentId, DVec2)>,
    pub events: Vec<MarkerEvent>,
    pub frames: u64,
}

impl Run {
    pub fn new(crowd: MarkerCrowd) -> Self {
        Self {
            crowd,
            agents: Vec::new(),
            events: Vec::new(),
            frames: 0,
        }
    }

    pub fn add(&mut self, p: DVec2) -> AgentId {
        let id = AgentId(self.agents.len() as u32);
        self.agents.push((id, p));
        id
    }

    pub fn position(&self, id: AgentId) -> DVec2 {
        self.agents[id.0 as usize].1
    }

    /// One step; agents outside the back end (targets) move by `others`.
    pub fn step(&mut self, set: &MarkerSet, others: &dyn Fn(AgentId, DVec2, u64) -> DVec2) {
        let sensed: Vec<Sensed> = self
            .agents
            .iter()
            .map(|&(id, position)| Sensed {
                id,
                position,
                goal: None,
            })
            .collect();
        let steps = self.crowd.step(set, &sensed);
        let mut moved = vec![false; self.agents.len()];
        for (id, d) in steps {
            self.agents[id.0 as usize].1 += d;
            moved[id.0 as usize] = true;
        }
        for (k, (id, p)) in self.agents.iter_mut().enumerate() {
            if !moved[k] {
                *p = others(*id, *p, self.frames);
            }
        }
        self.events.extend(self.crowd.take_events());
        self.frames += 1;
    }
}

/// Agents outside the back end stand still.
pub fn still(_: AgentId, p: DVec2, _: u64) -> DVec2 {
    p
}

/// The lane order parameter of digest 002's C4: for each agent with neighbours (|Δy| < 0.4 m,
/// |Δx| < 5 m) among `agents` (position, walking east), the square of (same − opposite) /
/// (same + opposite), averaged; `None` when nobody has a neighbour.
pub fn lane_order(agents: &[(DVec2, bool)]) -> Option<f64> {
    let mut sum = 0.0;
    let mut counted = 0usize;
    for (i, (p, east)) in agents.iter().enumerate() {
        let (mut same, mut opposite) = (0.0, 0.0);
        for (j, (q, other)) in agents.iter().enumerate() {
            if i != j && (p.y - q.y).abs() < 0.4 && (p.x - q.x).abs() < 5.0 {
                if east == other {
                    same += 1.0;
                } else {
                    opposite += 1.0;
                }
            }
        }
        if same + opposite > 0.0 {
            let r: f64 = (same - opposite) / (same + opposite);
            sum += r * r;
            counted += 1;
        }
    }
    (counted > 0).then(|| sum / counted as f64)
}
