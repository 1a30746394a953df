//! Behaviour programs: where each agent's (v, ε) comes from, step by step (seed 000 §5.2–5.3,
//! seed 001 §3 A2.1).
//!
//! A [`Behaviour`] yields a bias for the agent's local map every planner step. v is expressed
//! either in world axes or in the *global-flow frame* ([`Frame::GlobalFlow`]), whose x axis is the
//! global descent direction at the agent and whose y axis is that rotated 90° counter-clockwise
//! (so +y is the walker's left). The sinusoid and drunk programs are defined in the flow frame
//! (seed 000 §5.2: "collinear with the global-map flow"). Signs follow the field crate: ε > 0
//! draws the path towards +v.
//!
//! [`BehaviourSlots`] holds the seeds' two slots: `clear` while nothing is within `dvis` ahead,
//! `ahead` while an obstacle or agent is (tipoComp1 / tipoComp2, seed 000 §5.1).

use glam::DVec2;

use crowdfield_field::{Bias, FieldError};

/// The axes v is expressed in.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Frame {
    /// World x and y.
    #[default]
    World,
    /// x along the global descent at the agent, y to its left.
    GlobalFlow,
}

/// ω = π/18 per planner step: a 36-step period (seed 000 §5.2).
pub const SEED_OMEGA: f64 = std::f64::consts::PI / 18.0;

/// A program for (v, ε).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, PartialEq)]
pub enum Behaviour {
    /// ε = 0: the harmonic field, maximal clearance.
    Harmonic,
    /// Fixed (v, ε) in a frame.
    Constant {
        /// ε.
        epsilon: f64,
        /// v.
        v: DVec2,
        /// Axes of v.
        frame: Frame,
    },
    /// v = (1, sin(ω t)) in the flow frame, t the planner step.
    Sinusoid {
        /// ε.
        epsilon: f64,
        /// ω per planner step ([`SEED_OMEGA`] in the seed).
        omega: f64,
    },
    /// v = (1, sin(ω t) + sin(ω t / 2)) in the flow frame, scaled so no component exceeds 1.
    Drunk {
        /// ε.
        epsilon: f64,
        /// ω per planner step.
        omega: f64,
    },
    /// A random unit v, held for a random number of steps in `[min_hold, max_hold]`, drawn from
    /// the agent's own seeded generator.
    RandomHeld {
        /// ε.
        epsilon: f64,
        /// Shortest hold in planner steps (≥ 1).
        min_hold: u32,
        /// Longest hold in planner steps.
        max_hold: u32,
    },
    /// v towards the agent's current goal: the shortest path.
    TowardsGoal {
        /// ε.
        epsilon: f64,
    },
    /// v towards the nearest other agent within the local map (approach).
    TowardsNearest {
        /// ε.
        epsilon: f64,
    },
    /// v orthogonal to the line to the nearest other agent, on the walker's right (`right`) or
    /// left: the seed's "swerve right" preset is `right: true`, ε = 0.6.
    AroundNearest {
        /// ε.
        epsilon: f64,
        /// Swerve to the right of the line to the other agent.
        right: bool,
    },
}

impl Behaviour {
    /// The seed's "swerve right" preset: v orthogonal to the collision direction, to the right,
    /// ε = 0.6 (seed 000 §5.3).
    pub const SWERVE_RIGHT: Self = Self::AroundNearest {
        epsilon: 0.6,
        right: true,
    };

    /// Whether the program reads [`BehaviourInput::nearest`] (the crowd skips finding the
    /// nearest agent for the others).
    pub fn uses_nearest(&self) -> bool {
        matches!(
            self,
            Behaviour::TowardsNearest { .. } | Behaviour::AroundNearest { .. }
        )
    }

    /// Checks the parameters once, at the boundary: finite numbers, and ε small enough that
    /// every v the program can produce stays within |ε|·max|v_i| ≤ 2.
    pub fn validate(&self) -> Result<(), FieldError> {
        let eps = match self {
            Behaviour::Harmonic => return Ok(()),
            Behaviour::Constant { epsilon, v, frame } => {
                Bias::new(*epsilon, *v)?;
                if *frame == Frame::GlobalFlow {
                    // Rotated into the flow frame, a component can reach |v|.
                    Bias::new(*epsilon, DVec2::splat(v.length()))?;
                }
                return Ok(());
            }
            Behaviour::Sinusoid { epsilon, omega } | Behaviour::Drunk { epsilon, omega } => {
                if !omega.is_finite() {
                    return Err(FieldError::NonFinite {
                        what: "ω",
                        value: *omega,
                    });
                }
                *epsilon
            }
            Behaviour::RandomHeld { epsilon, .. }
            | Behaviour::TowardsGoal { epsilon }
            | Behaviour::TowardsNearest { epsilon }
            | Behaviour::AroundNearest { epsilon, .. } => *epsilon,
        };
        // Programs produce |v| ≤ √2 in any frame; require the worst case to pass.
        Bias::new(eps, DVec2::splat(std::f64::consts::SQRT_2)).map(|_| ())
    }
}

/// Everything a behaviour may look at in one step.
#[derive(Debug, Clone, Copy)]
pub struct BehaviourInput {
    /// Planner step count t.
    pub step: u64,
    /// Unit global descent at the agent (zero if unknown).
    pub flow: DVec2,
    /// Agent position.
    pub position: DVec2,
    /// Current goal position.
    pub goal: DVec2,
    /// Position of the nearest other agent in the local map, if any.
    pub nearest: Option<DVec2>,
}

/// Per-agent state a program carries between steps.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BehaviourState {
    /// RandomHeld: the v in force.
    pub held: DVec2,
    /// RandomHeld: the step at which to draw again.
    pub until: u64,
    /// The agent's generator state (splitmix64).
    pub rng: u64,
}

impl BehaviourState {
    /// A state seeded per agent.
    pub fn seeded(seed: u64) -> Self {
        Self {
            held: DVec2::X,
            until: 0,
            rng: seed,
        }
    }

    fn next_f64(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl Behaviour {
    /// The bias for this step. Never fails for a validated behaviour; ε is clamped as a last
    /// resort so that a frame rotation can never break the stencil bound.
    pub fn bias(&self, input: &BehaviourInput, state: &mut BehaviourState) -> Bias {
        let flow = if input.flow.length_squared() > 0.0 {
            input.flow.normalize()
        } else {
            DVec2::X
        };
        let to_flow = |v: DVec2| flow * v.x + flow.perp() * v.y;
        let (epsilon, v) = match self {
            Behaviour::Harmonic => return Bias::HARMONIC,
            Behaviour::Constant { epsilon, v, frame } => (
                *epsilon,
                match frame {
                    Frame::World => *v,
                    Frame::GlobalFlow => to_flow(*v),
                },
            ),
            Behaviour::Sinusoid { epsilon, omega } => (
                *epsilon,
                to_flow(DVec2::new(1.0, (omega * input.step as f64).sin())),
            ),
            Behaviour::Drunk { epsilon, omega } => {
                let t = input.step as f64;
                let lateral = (omega * t).sin() + (omega * t * 0.5).sin();
                (
                    *epsilon,
                    to_flow(DVec2::new(1.0, lateral) / 2.0f64.max(lateral.abs()).max(1.0)),
                )
            }
            Behaviour::RandomHeld {
                epsilon,
                min_hold,
                max_hold,
            } => {
                if input.step >= state.until {
                    let angle = state.next_f64() * std::f64::consts::TAU;
                    state.held = DVec2::from_angle(angle);
                    let lo = (*min_hold).max(1) as f64;
                    let hi = (*max_hold).max(*min_hold).max(1) as f64;
                    state.until =
                        input.step + (lo + state.next_f64() * (hi - lo + 1.0)).floor() as u64;
                }
                (*epsilon, state.held)
            }
            Behaviour::TowardsGoal { epsilon } => {
                (*epsilon, unit_or_zero(input.goal - input.position))
            }
            Behaviour::TowardsNearest { epsilon } => match input.nearest {
                Some(other) => (*epsilon, unit_or_zero(other - input.position)),
                None => return Bias::HARMONIC,
            },
            Behaviour::AroundNearest { epsilon, right } => match input.nearest {
                Some(other) => {
                    let line = unit_or_zero(other - input.position);
                    (*epsilon, if *right { -line.perp() } else { line.perp() })
                }
                None => return Bias::HARMONIC,
            },
        };
        Bias::clamped(epsilon, v).unwrap_or(Bias::HARMONIC)
    }
}

fn unit_or_zero(v: DVec2) -> DVec2 {
    if v.length_squared() > 0.0 {
        v.normalize()
    } else {
        DVec2::ZERO
    }
}

/// The two behaviour slots and the look-ahead distance that switches between them.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[cfg_attr(feature = "serde", serde(default))]
#[derive(Debug, Clone, PartialEq)]
pub struct BehaviourSlots {
    /// In force while nothing is within `dvis` ahead.
    pub clear: Behaviour,
    /// In force while an agent or obstacle is within `dvis` ahead (None: always `clear`).
    pub ahead: Option<Behaviour>,
    /// Look-ahead distance in world units.
    pub dvis: f64,
}

impl Default for BehaviourSlots {
    fn default() -> Self {
        Self::single(Behaviour::Harmonic)
    }
}

impl BehaviourSlots {
    /// One behaviour, never switched.
    pub fn single(behaviour: Behaviour) -> Self {
        Self {
            clear: behaviour,
            ahead: None,
            dvis: 0.0,
        }
    }

    /// `clear`, switching to `ahead` while something is within `dvis` ahead.
    pub fn switching(clear: Behaviour, ahead: Behaviour, dvis: f64) -> Self {
        Self {
            clear,
            ahead: Some(ahead),
            dvis,
        }
    }

    /// Validates both programs and dvis.
    pub fn validate(&self) -> Result<(), FieldError> {
        self.clear.validate()?;
        if let Some(a) = &self.ahead {
            a.validate()?;
        }
        if !(self.dvis.is_finite() && self.dvis >= 0.0) {
            return Err(FieldError::BadExtent(self.dvis));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(step: u64) -> BehaviourInput {
        BehaviourInput {
            step,
            flow: DVec2::Y,
            position: DVec2::ZERO,
            goal: DVec2::new(0.0, 10.0),
            nearest: Some(DVec2::new(0.0, 3.0)),
        }
    }

    #[test]
    fn sinusoid_has_a_36_step_period_in_the_flow_frame() {
        let b = Behaviour::Sinusoid {
            epsilon: 0.7,
            omega: SEED_OMEGA,
        };
        let mut s = BehaviourState::seeded(1);
        let v0 = b.bias(&input(0), &mut s).direction();
        let v9 = b.bias(&input(9), &mut s).direction();
        let v36 = b.bias(&input(36), &mut s).direction();
        // Flow is +y, so "lateral" +y of the flow frame is world −x.
        assert!((v0 - DVec2::Y).length() < 1e-12);
        assert!((v9 - DVec2::new(-1.0, 1.0)).length() < 1e-12);
        assert!((v36 - v0).length() < 1e-9);
    }

    #[test]
    fn swerve_right_points_to_the_walkers_right() {
        let mut s = BehaviourState::seeded(1);
        let v = Behaviour::SWERVE_RIGHT.bias(&input(0), &mut s);
        // Walking +y towards someone ahead: right is +x.
        assert!((v.direction() - DVec2::X).length() < 1e-12);
        assert_eq!(v.epsilon(), 0.6);
    }

    #[test]
    fn random_held_is_reproducible_and_held() {
        let b = Behaviour::RandomHeld {
            epsilon: 0.5,
            min_hold: 5,
            max_hold: 5,
        };
        let run = |seed| {
            let mut s = BehaviourState::seeded(seed);
            (0..20)
                .map(|t| b.bias(&input(t), &mut s).direction())
                .collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        assert_eq!(a[0], a[4]);
        assert_ne!(a[4], a[5]);
    }

    #[test]
    fn out_of_range_programs_are_rejected() {
        assert!(
            Behaviour::Constant {
                epsilon: 3.0,
                v: DVec2::Y,
                frame: Frame::World
            }
            .validate()
            .is_err()
        );
        assert!(
            Behaviour::Sinusoid {
                epsilon: 1.9,
                omega: SEED_OMEGA
            }
            .validate()
            .is_err()
        );
        assert!(
            Behaviour::Sinusoid {
                epsilon: 1.2,
                omega: f64::NAN
            }
            .validate()
            .is_err()
        );
        assert!(Behaviour::SWERVE_RIGHT.validate().is_ok());
        // The world frame is checked as given; the flow frame for any rotation of v.
        let diagonal = |frame| Behaviour::Constant {
            epsilon: 2.0,
            v: DVec2::ONE,
            frame,
        };
        assert!(diagonal(Frame::World).validate().is_ok());
        assert!(diagonal(Frame::GlobalFlow).validate().is_err());
        assert!(
            BehaviourSlots {
                dvis: -1.0,
                ..BehaviourSlots::default()
            }
            .validate()
            .is_err()
        );
    }
}
