//! A group's settings (digest 004 §6 gives every number the seed has; the rest are ours and
//! say why).

use glam::DVec2;

use crowdfield_field::{Bias, Coverage};

use crate::map::{MAX_MAP_SIDE, MIN_MAP_SIDE};
use crate::{GroupError, SlotAssignment};

/// The band weights μ_1, μ_2, … by default: halving from 1 over three rings.
///
/// The seed fixes only μ_1 = 1 and that the weights fall (digest 004 §5.3). Members stand two
/// or three rings apart in a template formation ([`Formation::spacing_for`](crate::Formation)):
/// with μ_2 = ½ and μ_3 = ¼ the slot takes half or more of the step there, while a member
/// pressed against another (B_1) or a wall answers only to the map. Three rings (1.5 m at the
/// default cells) is as far as a wall reaches into the formation before it bends it. The
/// digest's linear fall (1, ⅔, ⅓) would leave members two rings apart two thirds under the
/// map's descent.
pub const DEFAULT_BANDS: [f64; 3] = [1.0, 0.5, 0.25];

/// A group's settings: its map, its bands, its motion and its tolerances.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[cfg_attr(feature = "serde", serde(default))]
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSettings {
    /// Cells per side of the group map (G_x = G_y). The seed's cohesion anchor: 20 keeps a
    /// group together round an obstacle that 30 splits it around (Fig 6.11). Changeable at run
    /// time ([`Groups::set_map_side`](crate::Groups::set_map_side)).
    pub map_side: usize,
    /// Map side near "keep together" regions ([`Groups::add_keep_together`](crate::Groups)):
    /// a smaller map sees such obstacles only through its border and goal, so the whole group
    /// goes round them. 0: the same as `map_side`.
    pub keep_together_side: usize,
    /// Cell size in metres (0: one member diameter, the seed's one agent per cell).
    pub cell_size: f64,
    /// Gauss–Seidel sweeps of the group map each planner step, warm-started (the seed's
    /// benchmarks relax 60 a step on per-agent maps; a group map carried from step to step
    /// needs fewer).
    pub sweeps: usize,
    /// Sweeps over the window around a member after it is stamped where it will stand (the
    /// seed's "a few").
    pub restamp_sweeps: usize,
    /// Border cells set to 0 for the intermediate goal.
    pub goal_cells: usize,
    /// Potential of free cells that enter the map (seed: ≈ 0.9 for maps up to 25 cells).
    pub initial_value: f64,
    /// ε of the group's own (v, ε) (one pair for the whole group, seed 004 §5.11).
    pub epsilon: f64,
    /// v of the group's own (v, ε), in world space; with ε > 0 paths bend towards +v.
    pub behaviour_vector: DVec2,
    /// Band weights μ_1, μ_2, … (μ_1 = 1, falling; 0 beyond the last).
    pub bands: Vec<f64>,
    /// Heading inertia η of the environment term (seed 004 Eq 3.5; 0.5 in Fig 3.4).
    pub heading_inertia: f64,
    /// How far the group map moves each planner step, in metres (0: 0.8 × the slowest
    /// member's `max_step`, so the members can catch up with their slots).
    pub speed: f64,
    /// How far the map's centre may lead the members' centroid, in metres (0: two cells).
    /// The seed warns that members faster than their map leave it; a map faster than its
    /// members (held up in a doorway) would leave them: this keeps the map over them.
    pub leash: f64,
    /// The map's centre has arrived once within this distance of the goal region.
    pub arrival_radius: f64,
    /// A formation is reached when the RMS member-to-slot distance is at most this, in metres
    /// (0: half a cell, the digest's criterion).
    pub formation_tolerance: f64,
    /// A reached formation is broken when the RMS member-to-slot distance exceeds this, in
    /// metres (0: two cells).
    pub break_tolerance: f64,
    /// Which member takes which slot.
    pub assignment: SlotAssignment,
    /// Which cells a static or moving obstacle, grown by the members' radius, closes. `Centre`
    /// keeps a corridor two members wide open by one cell where `Touch` could close it.
    pub obstacle_coverage: Coverage,
    /// Planner steps a member may spend outside its group map before it is reported lost.
    pub lost_after: u32,
}

impl Default for GroupSettings {
    fn default() -> Self {
        Self {
            map_side: 20,
            keep_together_side: 0,
            cell_size: 0.0,
            sweeps: 30,
            restamp_sweeps: 2,
            goal_cells: 3,
            initial_value: 0.9,
            epsilon: 0.0,
            behaviour_vector: DVec2::X,
            bands: DEFAULT_BANDS.to_vec(),
            heading_inertia: 0.5,
            speed: 0.0,
            leash: 0.0,
            arrival_radius: 0.5,
            formation_tolerance: 0.0,
            break_tolerance: 0.0,
            assignment: SlotAssignment::NonCrossing,
            obstacle_coverage: Coverage::Centre,
            lost_after: 10,
        }
    }
}

impl GroupSettings {
    /// The seed's choices where it makes one: slots fixed by index.
    pub fn seed() -> Self {
        Self {
            assignment: SlotAssignment::ByIndex,
            ..Self::default()
        }
    }

    /// Checks every setting; returns the group's bias.
    pub fn validate(&self) -> Result<Bias, GroupError> {
        for side in [self.map_side, self.keep_together_side] {
            if side != 0 && !(MIN_MAP_SIDE..=MAX_MAP_SIDE).contains(&side) {
                return Err(GroupError::BadMapSide(side));
            }
        }
        if self.map_side == 0 {
            return Err(GroupError::BadMapSide(0));
        }
        let finite_non_negative = [
            (self.cell_size, "cell size must be finite and ≥ 0"),
            (self.speed, "speed must be finite and ≥ 0"),
            (self.leash, "leash must be finite and ≥ 0"),
            (self.arrival_radius, "arrival radius must be finite and ≥ 0"),
            (
                self.formation_tolerance,
                "formation tolerance must be finite and ≥ 0",
            ),
            (
                self.break_tolerance,
                "break tolerance must be finite and ≥ 0",
            ),
        ];
        for (v, why) in finite_non_negative {
            if !(v.is_finite() && v >= 0.0) {
                return Err(GroupError::BadSettings(why));
            }
        }
        if !(self.initial_value.is_finite() && (0.0..=1.0).contains(&self.initial_value)) {
            return Err(GroupError::BadSettings("initial value must be in [0, 1]"));
        }
        if !(self.heading_inertia.is_finite() && (0.0..1.0).contains(&self.heading_inertia)) {
            return Err(GroupError::BadSettings("heading inertia must be in [0, 1)"));
        }
        if self.sweeps > 10_000 || self.restamp_sweeps > 100 {
            return Err(GroupError::BadSettings("too many sweeps"));
        }
        if self.bands.first().is_some_and(|b| *b != 1.0)
            || self.bands.windows(2).any(|w| w[1] >= w[0])
            || self
                .bands
                .iter()
                .any(|b| !(b.is_finite() && (0.0..=1.0).contains(b)))
        {
            return Err(GroupError::BadSettings(
                "bands must start at 1 and fall strictly, within [0, 1]",
            ));
        }
        let v = self.behaviour_vector.try_normalize().unwrap_or(DVec2::X);
        Ok(Bias::new(self.epsilon, v)?)
    }

    /// The cell size for members whose largest radius is `radius`.
    pub fn cell_for(&self, radius: f64) -> f64 {
        if self.cell_size > 0.0 {
            self.cell_size
        } else {
            2.0 * radius
        }
    }
}
