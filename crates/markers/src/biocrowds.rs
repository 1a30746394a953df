//! BioCrowds motion over typed markers (digest 003 §2.5–2.8, Eqs. 4.2–4.4, §8): the weights of
//! an agent's markers, the motion vector they give and the step it takes, in 3D.
//!
//! - Eq. 4.2: w_k = f(g − p, m_k − p) / Σ_l f(g − p, m_l − p) · ft_k, f the seed's weighting
//!   (Eq. 7 of seed 002, here in 3D). `ft` multiplies **after** normalising, as printed: the
//!   weights no longer sum to 1 on avoided ground, and the agent slows there (§2.8).
//! - Eq. 4.3: `ft` by the marker's ground ([`FtTable`]): 1 walkable, 0 forbidden, in between
//!   for ground to be avoided (ours by default: 1 − intensity, the link digest 003 §2.10
//!   suggests); per agent or per class of agent, [`FtTable::inverted`] for animals whose
//!   habitat is what people avoid.
//! - Eq. 4.4: d = Σ w_k (m_k − p); the step is min(c·‖d‖, s_max) along d, none when d is 0.
//!   The seed's background gives min(‖d‖, s_max) (§8) without saying in which time ‖d‖ is
//!   walked; read per step at 24 steps a second it never slows anyone (a lone agent's ‖d‖ is
//!   about 0.37 m at R = 1.2, seven steps' worth), so space would not set the pace as §2.7 and
//!   §2.8 say it does. Ours: d is walked in τ = 0.25 s (c = Δt/τ, [`BioSettings::pace`]), so a
//!   lone agent walks at s_max, one on ground avoided at ft = 0.3 at about a third of that, and
//!   a crowded one (fewer markers, a shorter d) slower.
//! - [`bio_step`]: Eqs. 4.1–4.4 for a whole crowd: each marker within R (in the plane) goes to
//!   its nearest agent (Eq. 4.1's personal spaces, the lower index on a tie), each agent's d is
//!   summed from its own markers' ground, in 3D on the set's heights (markers, agents and goals
//!   on the surface). The step is taken along the 3D d and handed back in the plane: agents
//!   stay on the surface (digest 003 §8's re-projection, always on; the seed's agents could
//!   leave a steep surface, §5.2.1).

use std::collections::HashMap;

use glam::{DVec2, DVec3};
use rayon::prelude::*;

use crate::personal::{Candidate, Owners, Split};
use crate::{MarkerError, MarkerId, MarkerSet, Terrain};

/// Eq. 7's f in 3D: (1 + cos θ) / (1 + ‖y‖), θ the angle between x (towards the goal) and y
/// (towards the marker); 0 when either is zero or not finite.
pub fn weight(x: DVec3, y: DVec3) -> f64 {
    let (lx, ly) = (x.length(), y.length());
    if !(lx > 0.0 && ly > 0.0 && (lx * ly).is_finite()) {
        return 0.0;
    }
    (1.0 + x.dot(y) / (lx * ly)) / (1.0 + ly)
}

/// The terrain factor of each kind of ground (Eq. 4.3), for one agent or a class of agents.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[cfg_attr(feature = "serde", serde(default))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FtTable {
    /// On walkable ground (the seed's 1).
    pub walkable: f64,
    /// On ground to be avoided: a fixed factor, or `None` for 1 − the ground's intensity.
    pub avoid: Option<f64>,
    /// On forbidden ground (the seed's 0).
    pub forbidden: f64,
}

impl Default for FtTable {
    fn default() -> Self {
        Self {
            walkable: 1.0,
            avoid: None,
            forbidden: 0.0,
        }
    }
}

impl FtTable {
    /// The seed's inverted table (fish in a lake): at home on what people may not walk, never
    /// on walkable ground; ground to be avoided (banks) at 1 − intensity still.
    pub fn inverted() -> Self {
        Self {
            walkable: 0.0,
            avoid: None,
            forbidden: 1.0,
        }
    }

    /// Refuses factors outside [0, 1] (or not finite).
    pub fn validate(&self) -> Result<(), MarkerError> {
        let ok = |v: f64| (0.0..=1.0).contains(&v);
        if ok(self.walkable) && ok(self.forbidden) && self.avoid.is_none_or(ok) {
            Ok(())
        } else {
            Err(MarkerError::BadSetting(
                "a terrain factor ft must lie in [0, 1]",
            ))
        }
    }

    /// `ft` on `terrain`.
    pub fn ft(&self, terrain: Terrain) -> f64 {
        match terrain {
            Terrain::Walkable => self.walkable,
            Terrain::Avoid { intensity } => self.avoid.unwrap_or(1.0 - intensity),
            Terrain::Forbidden => self.forbidden,
        }
    }
}

/// Eq. 4.2: each marker's weight for an agent at `p` heading for `goal`, the markers given
/// with their `ft`. All zero when every f is (the goal reached, no marker ahead or beside).
pub fn weights(p: DVec3, goal: DVec3, markers: &[(DVec3, f64)]) -> Vec<f64> {
    let x = goal - p;
    let f: Vec<f64> = markers.iter().map(|(m, _)| weight(x, *m - p)).collect();
    let sum: f64 = f.iter().sum();
    if !(sum > 0.0 && sum.is_finite()) {
        return vec![0.0; markers.len()];
    }
    f.iter()
        .zip(markers)
        .map(|(f, (_, ft))| f / sum * ft)
        .collect()
}

/// Eq. 4.4: d = Σ w_k (m_k − p) with Eq. 4.2's weights.
pub fn motion(p: DVec3, goal: DVec3, markers: &[(DVec3, f64)]) -> DVec3 {
    weights(p, goal, markers)
        .iter()
        .zip(markers)
        .map(|(w, (m, _))| *w * (*m - p))
        .sum()
}

/// The step d gives: min(‖d‖, `max_step`) along d; zero when d is zero or not finite.
pub fn step(d: DVec3, max_step: f64) -> DVec3 {
    let length = d.length();
    if !(length > 0.0 && length.is_finite()) {
        return DVec3::ZERO;
    }
    d * (length.min(max_step.max(0.0)) / length)
}

/// One agent as [`bio_step`] reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BioAgent {
    /// Where it stands.
    pub position: DVec2,
    /// Its goal or current sub-goal (`None`: it stands, and still takes markers).
    pub goal: Option<DVec2>,
    /// Its terrain factors.
    pub ft: FtTable,
}

/// The crowd step's parameters (digest 003 §8's suggestions, and the pace: see the module
/// doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BioSettings {
    /// The perception radius R, metres (1.2).
    pub radius: f64,
    /// s_max: the longest step, metres (1.3 m/s at 24 steps a second).
    pub max_step: f64,
    /// c: the share of d walked in a step before s_max caps it (Δt / τ: 1/6 at 24 steps a
    /// second with d walked in τ = 0.25 s; 1 is the background's law read per step).
    pub pace: f64,
}

impl Default for BioSettings {
    fn default() -> Self {
        Self {
            radius: 1.2,
            max_step: 1.3 / 24.0,
            pace: (1.0 / 24.0) / 0.25,
        }
    }
}

/// Eqs. 4.1–4.4 for every agent: each agent's displacement this step, min(c·‖d‖, s_max) along
/// d (zero for agents with no goal, at positions that are not finite, or with no marker
/// pulling). Refuses a radius, step or pace that is not positive and finite, and ft tables
/// outside [0, 1].
pub fn bio_step(
    set: &MarkerSet,
    agents: &[BioAgent],
    settings: &BioSettings,
) -> Result<Vec<DVec2>, MarkerError> {
    Ok(step_many(set, agents, settings)?
        .into_iter()
        .map(DVec3::truncate)
        .collect())
}

/// [`bio_step`]'s steps in 3D, on the surface.
pub(crate) fn step_many(
    set: &MarkerSet,
    agents: &[BioAgent],
    settings: &BioSettings,
) -> Result<Vec<DVec3>, MarkerError> {
    if !(settings.radius.is_finite() && settings.radius > 0.0) {
        return Err(MarkerError::BadSetting(
            "the perception radius must be positive",
        ));
    }
    if !(settings.max_step.is_finite() && settings.max_step >= 0.0) {
        return Err(MarkerError::BadSetting(
            "the longest step must be finite, not negative",
        ));
    }
    if !(settings.pace.is_finite() && settings.pace > 0.0) {
        return Err(MarkerError::BadSetting("the pace must be positive"));
    }
    for a in agents {
        a.ft.validate()?;
    }
    /// One band's sums: Σ f·ft·(m − p) and Σ f for each agent it saw, in first-seen order.
    struct Sums<'a> {
        set: &'a MarkerSet,
        agents: &'a [BioAgent],
        cell: Vec<usize>,
        /// Each agent's position and goal on the surface.
        at: &'a [(DVec3, DVec3)],
        slots: HashMap<usize, usize>,
        /// The cell's candidates' slots in `pull` (`usize::MAX`: no goal, not summed).
        cell_slots: Vec<usize>,
        pull: Vec<(usize, DVec3, f64)>,
    }
    impl Owners for Sums<'_> {
        fn cell(&mut self, _: DVec2, _: DVec2, candidates: &[Candidate]) {
            self.cell.clear();
            self.cell.extend(candidates.iter().map(|c| c.index));
            self.cell_slots.clear();
            for &i in &self.cell {
                let slot = if self.agents[i].goal.is_none() {
                    usize::MAX
                } else {
                    *self.slots.entry(i).or_insert_with(|| {
                        self.pull.push((i, DVec3::ZERO, 0.0));
                        self.pull.len() - 1
                    })
                };
                self.cell_slots.push(slot);
            }
        }
        fn marker(&mut self, owner: usize, id: u32, m: DVec2, _: f64) {
            let slot = self.cell_slots[owner];
            if slot == usize::MAX {
                return;
            }
            let i = self.cell[owner];
            let Some(marker) = self.set.marker(MarkerId(id)) else {
                return;
            };
            let (p, goal) = self.at[i];
            let m = m.extend(marker.height);
            let f = weight(goal - p, m - p);
            let ft = self.agents[i].ft.ft(marker.terrain);
            let (_, pull, sum) = &mut self.pull[slot];
            *pull += f * ft * (m - p);
            *sum += f;
        }
    }
    let points: Vec<Option<DVec2>> = agents
        .iter()
        .map(|a| a.position.is_finite().then_some(a.position))
        .collect();
    let split = Split::new(set, &points, settings.radius);
    let at: Vec<(DVec3, DVec3)> = agents
        .iter()
        .map(|a| {
            let goal = a.goal.unwrap_or(a.position);
            (set.surface(a.position), set.surface(goal))
        })
        .collect();
    let reach = split.reach(|i| agents[i].goal.is_some());
    // Bands in parallel, added in band order: the sums do not depend on the thread count.
    let bands: Vec<Vec<(usize, DVec3, f64)>> = (0..split.bands())
        .into_par_iter()
        .map(|band| {
            let mut sums = Sums {
                set,
                agents,
                cell: Vec::new(),
                at: &at,
                slots: HashMap::new(),
                cell_slots: Vec::new(),
                pull: Vec::new(),
            };
            split.walk_band(band, &reach, &mut sums);
            sums.pull
        })
        .collect();
    let mut pull = vec![(DVec3::ZERO, 0.0); agents.len()];
    for list in bands {
        for (i, p, f) in list {
            pull[i].0 += p;
            pull[i].1 += f;
        }
    }
    Ok(pull
        .iter()
        .map(|&(pull, sum)| {
            if !(sum > 0.0 && sum.is_finite()) {
                return DVec3::ZERO;
            }
            step(pull / sum * settings.pace, settings.max_step)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Generation, MarkerSettings};
    use crowdfield_field::Shape;

    /// Eqs. 4.1–4.4 over a crowd equal the plain rule: each agent's markers are those within
    /// R nearer it than any other agent (lower index on a tie), weighted by Eq. 4.2 with their
    /// ground's ft.
    #[test]
    fn the_crowd_step_follows_the_plain_rule() {
        let mut set = MarkerSet::new(
            MarkerSettings {
                min: DVec2::ZERO,
                max: DVec2::new(12.0, 8.0),
                ..Default::default()
            },
            vec![],
        )
        .unwrap();
        set.generate(Generation::default(), 60.0, 3).unwrap();
        set.paint(
            Shape::Aabb {
                min: DVec2::new(4.0, 0.0),
                max: DVec2::new(7.0, 8.0),
            },
            Terrain::Avoid { intensity: 0.6 },
        )
        .unwrap();
        let agents: Vec<BioAgent> = (0..30)
            .map(|k| BioAgent {
                position: DVec2::new(
                    0.5 + (k % 10) as f64 * 1.1 + (k as f64 * 0.37).sin() * 0.3,
                    1.0 + (k / 10) as f64 * 2.5,
                ),
                goal: (k % 7 != 0).then_some(DVec2::new(11.5, 4.0)),
                ft: if k % 2 == 0 {
                    FtTable::default()
                } else {
                    FtTable {
                        avoid: Some(0.3),
                        ..Default::default()
                    }
                },
            })
            .collect();
        let settings = BioSettings::default();
        let steps = bio_step(&set, &agents, &settings).unwrap();
        let r2 = settings.radius * settings.radius;
        for (i, a) in agents.iter().enumerate() {
            let Some(goal) = a.goal else {
                assert_eq!(steps[i], DVec2::ZERO);
                continue;
            };
            let mine: Vec<(DVec3, f64)> = set
                .markers()
                .filter(|(_, m)| {
                    let d = (m.position - a.position).length_squared();
                    d <= r2
                        && agents.iter().enumerate().all(|(j, b)| {
                            let e = (m.position - b.position).length_squared();
                            j == i || e > d || (e == d && j > i)
                        })
                })
                .map(|(_, m)| (m.position.extend(0.0), a.ft.ft(m.terrain)))
                .collect();
            let d = motion(a.position.extend(0.0), goal.extend(0.0), &mine);
            let want = step(d * settings.pace, settings.max_step).truncate();
            assert!(
                (steps[i] - want).length() < 1e-12,
                "agent {i}: {} vs {want}",
                steps[i]
            );
        }
        let bad = BioSettings {
            radius: 0.0,
            ..Default::default()
        };
        assert!(bio_step(&set, &agents, &bad).is_err());
        let mut wrong = agents.clone();
        wrong[3].ft.walkable = 2.0;
        assert!(bio_step(&set, &wrong, &settings).is_err());
    }

    /// Digest 003 test 2: the weights are f_k / Σf · ft_k; they sum to 1 on walkable ground; a
    /// forbidden marker weighs 0; on ground avoided with ft = 0.3 everywhere ‖d‖ is 0.3× the
    /// walkable one.
    #[test]
    fn eq_4_2_weighs_after_normalising() {
        let p = DVec3::new(0.0, 0.0, 0.0);
        let goal = DVec3::new(10.0, 0.0, 1.0);
        let places = [
            DVec3::new(0.5, 0.2, 0.0),
            DVec3::new(0.8, -0.4, 0.1),
            DVec3::new(-0.3, 0.6, 0.0),
            DVec3::new(0.2, -0.9, -0.1),
        ];
        let table = FtTable::default();
        let kinds = [
            Terrain::Walkable,
            Terrain::Avoid { intensity: 0.4 },
            Terrain::Forbidden,
            Terrain::Walkable,
        ];
        let mixed: Vec<(DVec3, f64)> = places
            .iter()
            .zip(kinds)
            .map(|(m, t)| (*m, table.ft(t)))
            .collect();
        let f: Vec<f64> = places.iter().map(|m| weight(goal - p, *m - p)).collect();
        let sum: f64 = f.iter().sum();
        let w = weights(p, goal, &mixed);
        for k in 0..4 {
            assert!((w[k] - f[k] / sum * mixed[k].1).abs() < 1e-15);
        }
        assert_eq!(w[2], 0.0);
        let walkable: Vec<(DVec3, f64)> = places.iter().map(|m| (*m, 1.0)).collect();
        assert!((weights(p, goal, &walkable).iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let avoided: Vec<(DVec3, f64)> = places.iter().map(|m| (*m, 0.3)).collect();
        let (slow, free) = (motion(p, goal, &avoided), motion(p, goal, &walkable));
        assert!((slow.length() - 0.3 * free.length()).abs() < 1e-12);
        assert!(slow.angle_between(free) < 1e-9);
        // The step keeps to s_max and stands still on nothing.
        assert!((step(free * 10.0, 0.05).length() - 0.05).abs() < 1e-12);
        assert_eq!(step(DVec3::ZERO, 0.05), DVec3::ZERO);
        assert_eq!(weights(p, p, &walkable), vec![0.0; 4]);
    }

    #[test]
    fn ft_tables_refuse_factors_outside_the_unit_interval() {
        assert!(FtTable::default().validate().is_ok());
        assert!(FtTable::inverted().validate().is_ok());
        for bad in [
            FtTable {
                walkable: 1.2,
                ..Default::default()
            },
            FtTable {
                avoid: Some(-0.1),
                ..Default::default()
            },
            FtTable {
                forbidden: f64::NAN,
                ..Default::default()
            },
        ] {
            assert!(bad.validate().is_err());
        }
        let fish = FtTable::inverted();
        assert_eq!(fish.ft(Terrain::Forbidden), 1.0);
        assert_eq!(fish.ft(Terrain::Walkable), 0.0);
        assert!((FtTable::default().ft(Terrain::Avoid { intensity: 0.7 }) - 0.3).abs() < 1e-12);
    }
}
