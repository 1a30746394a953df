//! Lexicographic Gauss–Seidel on several small maps at once, one map per SIMD lane (digest 000
//! Eq. 5.1 in the world convention of [`crate::bias`]; docs/performance.md, *Field kernels*).
//!
//! An agent's local map is small (15×15 by default) and must be relaxed in the seeds'
//! lexicographic order: partial relaxation with another smoother changes trajectories. That
//! order is a chain (each cell waits for its west neighbour), so one map cannot use SIMD lanes.
//! Many agents' maps can: [`FieldBatch`] interleaves up to [`BATCH_LANES`] maps of the same size
//! cell by cell, and every sweep updates the same cell of all of them in one vector operation,
//! each lane with its own weights (its agent's v and ε) and its own free-cell mask.
//!
//! Each lane computes exactly what [`crate::relax()`] computes on its map with
//! [`crate::Relaxation::GAUSS_SEIDEL`]: the same operations in the same order, and fixed cells
//! kept by a bitwise select rather than a blend, so the results are bit-identical (a property
//! test checks it).

use std::ops::{Add, BitAnd, BitOr, Mul, Not};

use crate::bias::Bias;
use crate::field::{CellKind, Field};
use crate::skewed::{self, SkewedScratch};

/// Maps relaxed together by a [`FieldBatch`].
pub const BATCH_LANES: usize = 16;

/// Maps relaxed together by a [`FieldBatchF32`].
pub const BATCH_LANES_F32: usize = 32;

/// Up to [`BATCH_LANES`] maps of one size, interleaved cell by cell.
#[derive(Debug, Clone)]
pub struct FieldBatch {
    lanes: Interleaved<f64, BATCH_LANES>,
}

impl FieldBatch {
    /// An empty batch of `width × height` maps; every lane unused.
    pub fn new(width: usize, height: usize) -> Self {
        Self {
            lanes: Interleaved::new(width, height),
        }
    }

    /// Width and height of the maps this batch holds.
    pub fn size(&self) -> (usize, usize) {
        (self.lanes.width, self.lanes.height)
    }

    /// Marks every lane unused: sweeps leave them alone.
    pub fn clear(&mut self) {
        self.lanes.clear_from(0);
    }

    /// Copies `field` (potentials and kinds) and `bias` into `lane`. Returns false, changing
    /// nothing, when the lane is out of range or the field has another size.
    pub fn load(&mut self, lane: usize, field: &Field<f64>, bias: &Bias) -> bool {
        self.lanes.load(lane, field, bias, |p| p)
    }

    /// Copies the potentials of `lane` back into the free cells of `field` (a sweep never
    /// changes the others). Returns false, changing nothing, when the lane is out of range or
    /// the field has another size.
    pub fn store(&self, lane: usize, field: &mut Field<f64>) -> bool {
        self.lanes.store(lane, field, |p| p)
    }

    /// `sweeps` lexicographic Gauss–Seidel sweeps (x fastest, then y, both increasing) on every
    /// lane. Border cells are never updated.
    ///
    /// On x86-64 CPUs with AVX-512 or AVX2 the same code runs compiled for 512- or 256-bit
    /// vectors (chosen at run time). No fused multiply–add is used on any path, so the results
    /// are bit-identical across CPUs.
    pub fn relax(&mut self, sweeps: usize) {
        // Four vectors per cell keep the CPU busy reading them: one row at a time, except on
        // AVX-512, whose three rows a wave carried in registers read less (kernels bench,
        // `sweep/gauss_seidel_batch/15`: 157 against 197 µs).
        self.lanes.sweep::<BATCH_LANES>(sweeps, 1, Some(3));
    }
}

/// Up to [`BATCH_LANES_F32`] maps of one size relaxed in single precision on their
/// complements `q = 1 − p`: twice the lanes of a [`FieldBatch`] per vector.
///
/// Why the complement: the stencil's weights sum to one, so `q` obeys the same update as `p`
/// (`1 − Σ wₖ pₖ = Σ wₖ (1 − pₖ)`), with obstacles at 0 and goals at 1. Where a local map goes
/// flat, behind walls and in pockets, `p` creeps towards 1 and `f32` would lose its slope
/// (docs/field.md, "Precision"); `q` creeps towards 0, where `f32` keeps about seven
/// significant digits down to 1e-38. Sweeping the complement in `f32` therefore keeps relative
/// precision exactly where the `p` form needs `f64`; the maps themselves stay `Field<f64>`
/// (potentials are converted on [`Self::load`] and [`Self::store`]), so every decision still
/// reads `f64`.
///
/// Each lane computes exactly what [`crate::relax()`] with [`crate::Relaxation::GAUSS_SEIDEL`]
/// computes on a `Field<f32>` holding the lane's complements (a property test checks it bit for
/// bit); [`Self::store`] writes free cells only, so fixed values never pick up rounding.
#[derive(Debug, Clone)]
pub struct FieldBatchF32 {
    lanes: Interleaved<f32, BATCH_LANES_F32>,
    /// Buffers of the time-skewed kernel that sweeps batches of a few maps.
    skewed: SkewedScratch,
}

/// Batches of at most this many loaded maps are swept two maps per vector in the time-skewed
/// order where the CPU has AVX-512F and the maps are at most [`skewed::MAX_WIDTH`] cells wide.
/// Chosen with the kernels bench against the lane-per-map kernel, faster up to here and slower
/// beyond (docs/performance.md, *Measurements behind tuning constants*).
const SKEWED_MAX_LANES: usize = 6;

/// [`FieldBatchF32::relax_whole`] takes at most this many maps straight into the time-skewed
/// kernel (no lanes to read the maps from and write them back to) on CPUs with AVX-512F: as
/// fast as the lanes or faster up to here in the kernels bench's `whole_maps`, slower beyond
/// (docs/performance.md, *Measurements behind tuning constants*). A crowd sizes its jobs by it.
pub const SKEWED_MAX_MAPS: usize = 16;

/// The same for CPUs with AVX2 but not AVX-512F, whose build of the kernel sweeps one map per
/// 8-lane vector: faster than the lanes up to here, as fast beyond, measured with that build
/// forced (docs/performance.md, *Measurements behind tuning constants*).
const SKEWED_MAX_MAPS_AVX2: usize = 4;

/// Which kernel [`FieldBatchF32::relax_whole`] sweeps with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WholeKernel {
    /// The time-skewed kernel, two maps per 16-lane vector (AVX-512F).
    Skewed512,
    /// The time-skewed kernel, one map per 8-lane vector (AVX2).
    Skewed256,
    /// Through the lanes, one map per lane.
    Lanes,
}

impl FieldBatchF32 {
    /// An empty batch of `width × height` maps; every lane unused.
    pub fn new(width: usize, height: usize) -> Self {
        Self {
            lanes: Interleaved::new(width, height),
            skewed: SkewedScratch::default(),
        }
    }

    /// Width and height of the maps this batch holds.
    pub fn size(&self) -> (usize, usize) {
        (self.lanes.width, self.lanes.height)
    }

    /// Marks every lane unused: sweeps leave them alone.
    pub fn clear(&mut self) {
        self.lanes.clear_from(0);
    }

    /// Marks lanes `first..` unused, keeping the others: after loading lanes `0..first`,
    /// what [`Self::clear`] before loading them would give, without rewriting every mask.
    pub fn clear_from(&mut self, first: usize) {
        self.lanes.clear_from(first);
    }

    /// Copies the complements `1 − p` of `field` (rounded to `f32`), its kinds and `bias` into
    /// `lane`. Returns false, changing nothing, when the lane is out of range or the field has
    /// another size.
    pub fn load(&mut self, lane: usize, field: &Field<f64>, bias: &Bias) -> bool {
        self.lanes.load(lane, field, bias, |p| (1.0 - p) as f32)
    }

    /// Writes `p = 1 − q` of `lane` back into the free cells of `field` (fixed cells keep
    /// their exact values). Returns false, changing nothing, when the lane is out of range or
    /// the field has another size.
    pub fn store(&self, lane: usize, field: &mut Field<f64>) -> bool {
        self.lanes.store(lane, field, |q| 1.0 - f64::from(q))
    }

    /// [`Self::load`] of `maps[k]` into lane `first + k` for every k: the same lanes, eight
    /// maps at a time where the CPU has AVX2 (each map read once, in order, and eight lanes
    /// written per vector, instead of one scattered write per map and cell). Returns false,
    /// changing nothing, when the lanes run out or a field has another size.
    pub fn load_lanes(&mut self, first: usize, maps: &[(&Field<f64>, &Bias)]) -> bool {
        if first + maps.len() > BATCH_LANES_F32 || maps.iter().any(|(f, _)| !self.lanes.fits(0, f))
        {
            return false;
        }
        let mut lane = first;
        let mut rest = maps;
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            while let Some((block, tail)) = rest.split_first_chunk::<8>() {
                // SAFETY: AVX2 was just checked for; lanes `lane..lane + 8` exist and every
                // field has the batch's size (both checked above).
                #[allow(unsafe_code)]
                unsafe {
                    self.lanes.load8_avx2(lane, block)
                };
                lane += 8;
                rest = tail;
            }
        }
        for (field, bias) in rest {
            self.load(lane, field, bias);
            lane += 1;
        }
        true
    }

    /// [`Self::store`] of lane `first + k` into `maps[k]` for every k, eight maps at a time
    /// where the CPU has AVX2. Returns false, changing nothing, when the lanes run out or a
    /// field has another size.
    pub fn store_lanes(&self, first: usize, maps: &mut [&mut Field<f64>]) -> bool {
        self.store_lanes_as(first, maps, false)
    }

    /// As [`Self::store_lanes`], but every cell of a lane goes back as `p = 1 − q`, fixed
    /// cells included, with no mask to transpose and blend: the same bits wherever the fixed
    /// cells hold 0 or 1 (goals and obstacles, whose complements are exact in `f32`), as in a
    /// local map; a fixed cell at another value would come back rounded through `f32`.
    pub fn store_lanes_whole(&self, first: usize, maps: &mut [&mut Field<f64>]) -> bool {
        self.store_lanes_as(first, maps, true)
    }

    /// The stores above, `whole` or only the free cells.
    fn store_lanes_as(&self, first: usize, maps: &mut [&mut Field<f64>], whole: bool) -> bool {
        if first + maps.len() > BATCH_LANES_F32 || maps.iter().any(|f| !self.lanes.fits(0, f)) {
            return false;
        }
        let mut lane = first;
        let mut rest = maps;
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            while rest.len() >= 8 {
                let Some((block, tail)) = std::mem::take(&mut rest).split_first_chunk_mut::<8>()
                else {
                    unreachable!("eight maps are left");
                };
                // SAFETY: as in `load_lanes`.
                #[allow(unsafe_code)]
                unsafe {
                    if whole {
                        self.lanes.store8_whole_avx2(lane, block)
                    } else {
                        self.lanes.store8_avx2(lane, block)
                    }
                };
                lane += 8;
                rest = tail;
            }
        }
        for field in rest {
            if whole {
                for (p, cell) in field.potentials_mut().iter_mut().zip(&self.lanes.potential) {
                    *p = 1.0 - f64::from(cell[lane]);
                }
            } else {
                self.store(lane, field);
            }
            lane += 1;
        }
        true
    }

    /// `sweeps` lexicographic Gauss–Seidel sweeps on every lane's complements, as
    /// [`FieldBatch::relax`] (AVX-512 or AVX2 build chosen at run time, no fused multiply–add,
    /// so results are bit-identical across CPUs). A batch of a few maps is swept two maps per
    /// vector in a time-skewed order where the CPU has AVX-512F (the same bits, see the
    /// `skewed` module).
    pub fn relax(&mut self, sweeps: usize) {
        let (w, h) = (self.lanes.width, self.lanes.height);
        if (1..=SKEWED_MAX_LANES).contains(&self.lanes.used) && skewed::available(w, h, sweeps) {
            self.relax_skewed(sweeps);
            return;
        }
        self.relax_lane_per_map(sweeps);
    }

    /// Relaxes each of `maps` with its bias and writes every cell back: what
    /// [`Self::load_lanes`]`(0, maps)`, [`Self::clear_from`]`(maps.len())`, [`Self::relax`]
    /// and [`Self::store_lanes_whole`] do, bit for bit (so, like the latter, meant for maps
    /// whose fixed cells hold 0 or 1). Up to [`SKEWED_MAX_MAPS`] maps (four on CPUs with AVX2
    /// but not AVX-512F) go straight from the maps into the time-skewed kernel's rows and
    /// back, without passing through the lanes, for up to 4,096 sweeps.
    /// Returns false, changing nothing, when there are more than [`BATCH_LANES_F32`] maps or
    /// one has another size. Afterwards the lanes hold these maps or what they held before:
    /// read the maps.
    pub fn relax_whole(&mut self, maps: &mut [(&mut Field<f64>, &Bias)], sweeps: usize) -> bool {
        let (w, h) = (self.lanes.width, self.lanes.height);
        let kernel = if maps.len() <= SKEWED_MAX_MAPS && skewed::available(w, h, sweeps) {
            WholeKernel::Skewed512
        } else if maps.len() <= SKEWED_MAX_MAPS_AVX2 && skewed::available_avx2(w, h, sweeps) {
            WholeKernel::Skewed256
        } else {
            WholeKernel::Lanes
        };
        self.relax_whole_by(maps, sweeps, kernel)
    }

    /// [`Self::relax_whole`] by `kernel`, or through the lanes where that kernel cannot run.
    fn relax_whole_by(
        &mut self,
        maps: &mut [(&mut Field<f64>, &Bias)],
        sweeps: usize,
        kernel: WholeKernel,
    ) -> bool {
        if maps.len() > BATCH_LANES_F32 || maps.iter().any(|(f, _)| !self.lanes.fits(0, f)) {
            return false;
        }
        let (w, h) = (self.lanes.width, self.lanes.height);
        #[cfg(target_arch = "x86_64")]
        match kernel {
            WholeKernel::Skewed512 if skewed::available(w, h, sweeps) => {
                // SAFETY: `available` checked AVX-512F and the width and height, and every
                // map has the batch's size.
                #[allow(unsafe_code)]
                unsafe {
                    skewed::sweep_fields(&mut self.skewed, maps, (w, h), sweeps)
                };
                return true;
            }
            WholeKernel::Skewed256 if skewed::available_avx2(w, h, sweeps) => {
                // SAFETY: as above, with AVX2.
                #[allow(unsafe_code)]
                unsafe {
                    skewed::sweep_fields_avx2(&mut self.skewed, maps, (w, h), sweeps)
                };
                return true;
            }
            _ => {}
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (kernel, w, h);
        let view: Vec<(&Field<f64>, &Bias)> = maps.iter().map(|(f, b)| (&**f, *b)).collect();
        self.load_lanes(0, &view);
        self.clear_from(maps.len());
        self.relax(sweeps);
        let mut fields: Vec<&mut Field<f64>> = maps.iter_mut().map(|(f, _)| &mut **f).collect();
        self.store_lanes_whole(0, &mut fields)
    }

    /// [`Self::relax`] by the time-skewed kernel, whatever the lane count; false where it is
    /// not available (no AVX-512F, or maps wider than [`skewed::MAX_WIDTH`]).
    fn relax_skewed(&mut self, sweeps: usize) -> bool {
        let (w, h) = (self.lanes.width, self.lanes.height);
        if !skewed::available(w, h, sweeps) {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let l = &mut self.lanes;
            // SAFETY: `available` checked AVX-512F and the width and height; the arrays hold
            // w × h cells and `used` ≤ 32 lanes by construction.
            #[allow(unsafe_code)]
            unsafe {
                skewed::sweep_lanes(
                    &mut self.skewed,
                    &mut l.potential,
                    &l.free,
                    &l.weights,
                    (w, h),
                    l.used,
                    sweeps,
                )
            };
        }
        true
    }

    /// [`Self::relax`] one map per lane, whatever the lane count.
    fn relax_lane_per_map(&mut self, sweeps: usize) {
        // Only the lanes in use, rounded up to whole 8-lane vectors: a batch of a few maps
        // costs a fraction of a full one.
        // Rows per wave (see `Interleaved::sweep_lanes`) chosen per vector count by
        // measurement (`cargo bench -p crowdfield_field --bench kernels -- batch_f32` and
        // `-- crowd_batch`): reading every neighbour, one vector is latency-bound and gains
        // most from five rows in flight, four vectors are not; carried in registers (AVX-512,
        // two or four vectors), three rows a wave read least and run fastest.
        match self.lanes.used {
            0 => {}
            1..=8 => self.lanes.sweep::<8>(sweeps, 5, None),
            9..=16 => self.lanes.sweep::<16>(sweeps, 3, Some(3)),
            // Lanes past `used` are fixed, so sweeping them changes nothing: with AVX-512, all
            // 32 lanes (two whole vectors) go faster than 24 (one and a half).
            17..=24 if !wide_vectors() => self.lanes.sweep::<24>(sweeps, 2, None),
            _ => self.lanes.sweep::<BATCH_LANES_F32>(sweeps, 1, Some(3)),
        }
    }
}

/// Whether the CPU has AVX-512F (the sweeps' 512-bit build).
fn wide_vectors() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// A float the batched sweep works in, with the bits its lane masks select.
trait LaneFloat: Copy + Add<Output = Self> + Mul<Output = Self> + std::fmt::Debug {
    type Bits: Copy
        + BitAnd<Output = Self::Bits>
        + BitOr<Output = Self::Bits>
        + Not<Output = Self::Bits>
        + PartialEq
        + std::fmt::Debug;
    const ZERO: Self;
    /// All bits clear: the mask of a fixed cell or an unused lane.
    const FIXED: Self::Bits;
    /// All bits set: the mask of a free cell.
    const FREE: Self::Bits;
    fn bits(self) -> Self::Bits;
    fn from_bits(bits: Self::Bits) -> Self;
    fn from_f64(v: f64) -> Self;
}

impl LaneFloat for f64 {
    type Bits = u64;
    const ZERO: Self = 0.0;
    const FIXED: u64 = 0;
    const FREE: u64 = u64::MAX;
    #[inline(always)]
    fn bits(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
}

impl LaneFloat for f32 {
    type Bits = u32;
    const ZERO: Self = 0.0;
    const FIXED: u32 = 0;
    const FREE: u32 = u32::MAX;
    #[inline(always)]
    fn bits(self) -> u32 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> Self {
        f32::from_bits(bits)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

/// `L` maps of one size interleaved cell by cell in lanes of `T`: the storage and sweep both
/// batches share.
#[derive(Debug, Clone)]
struct Interleaved<T: LaneFloat, const L: usize> {
    width: usize,
    height: usize,
    potential: Vec<[T; L]>,
    /// All ones on free cells of a lane, zero elsewhere (and on unused lanes).
    free: Vec<[T::Bits; L]>,
    /// Per-lane stencil weights east, west, north, south.
    weights: [[T; L]; 4],
    /// Lanes below this may be in use; sweeps may skip the ones above it.
    used: usize,
}

impl<T: LaneFloat, const L: usize> Interleaved<T, L> {
    fn new(width: usize, height: usize) -> Self {
        let n = width * height;
        Self {
            width,
            height,
            potential: vec![[T::ZERO; L]; n],
            free: vec![[T::FIXED; L]; n],
            weights: [[T::ZERO; L]; 4],
            used: 0,
        }
    }

    fn fits(&self, lane: usize, field: &Field<f64>) -> bool {
        lane < L && field.width() == self.width && field.height() == self.height
    }

    fn clear_from(&mut self, first: usize) {
        // Lanes from `used` on are fixed already: every load raises `used` past its lane and
        // every clear lowers it to where it cleared from.
        if first >= L || first >= self.used {
            return;
        }
        for m in &mut self.free {
            m[first..].fill(T::FIXED);
        }
        self.used = self.used.min(first);
    }

    /// `field`'s potentials (through `value`), kinds and `bias` into `lane`.
    fn load(
        &mut self,
        lane: usize,
        field: &Field<f64>,
        bias: &Bias,
        value: impl Fn(f64) -> T,
    ) -> bool {
        if !self.fits(lane, field) {
            return false;
        }
        for ((cell, mask), (p, k)) in self
            .potential
            .iter_mut()
            .zip(&mut self.free)
            .zip(field.potentials().iter().zip(field.kinds()))
        {
            cell[lane] = value(*p);
            mask[lane] = if *k == CellKind::Free {
                T::FREE
            } else {
                T::FIXED
            };
        }
        self.used = self.used.max(lane + 1);
        let w = bias.weights();
        for (k, weight) in [w.east, w.west, w.north, w.south].into_iter().enumerate() {
            self.weights[k][lane] = T::from_f64(weight);
        }
        true
    }

    /// `lane`'s potentials (through `value`) into the free cells of `field`; fixed cells are
    /// never changed by a sweep, so they keep their exact values.
    fn store(&self, lane: usize, field: &mut Field<f64>, value: impl Fn(T) -> f64) -> bool {
        if !self.fits(lane, field) {
            return false;
        }
        for ((p, cell), mask) in field
            .potentials_mut()
            .iter_mut()
            .zip(&self.potential)
            .zip(&self.free)
        {
            if mask[lane] != T::FIXED {
                *p = value(cell[lane]);
            }
        }
        true
    }

    /// The sweeps on lanes `0..N`, built for AVX-512 or AVX2 where the CPU has them: `rows`
    /// rows a wave reading every neighbour from memory (AVX2, portable), or on AVX-512, where
    /// 32 vector registers can hold the values a wave has read, `carried` rows a wave keeping
    /// them there (`None`: as the others). Each build runs the same operations on the same
    /// values in the same order (Rust never contracts a multiply and an add into a fused one),
    /// so all give the same bits (test).
    fn sweep<const N: usize>(&mut self, sweeps: usize, rows: usize, carried: Option<usize>) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: `sweep_avx512` only needs AVX-512F, which the CPU was just checked for.
            #[allow(unsafe_code)]
            unsafe {
                match carried {
                    Some(k) => self.sweep_avx512::<N, true>(sweeps, k),
                    None => self.sweep_avx512::<N, false>(sweeps, rows),
                }
            };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: `sweep_avx2` only needs AVX2, which the CPU was just checked for.
            #[allow(unsafe_code)]
            unsafe {
                self.sweep_avx2::<N>(sweeps, rows)
            };
            return;
        }
        let _ = carried;
        self.sweep_lanes::<N, false>(sweeps, rows);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn sweep_avx2<const N: usize>(&mut self, sweeps: usize, rows: usize) {
        self.sweep_lanes::<N, false>(sweeps, rows);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn sweep_avx512<const N: usize, const CARRY: bool>(&mut self, sweeps: usize, rows: usize) {
        self.sweep_lanes::<N, CARRY>(sweeps, rows);
    }

    /// `sweeps` lexicographic Gauss–Seidel sweeps (x fastest, then y, both increasing) on
    /// lanes `0..N`; border cells are never updated. Fixed cells keep their value by a bitwise
    /// select, so each lane computes exactly what the scalar kernel computes on its map alone:
    /// the same operations in the same order.
    ///
    /// Rows go `rows` (1 to 6) at a time as a diagonal wavefront: at each wave, row `y + i`
    /// updates the cell one column behind row `y + i − 1`. Every cell still reads its west and
    /// south neighbours after and its east and north neighbours before their updates, exactly as in
    /// the lexicographic order, so the results are the same bits; but the cells of a wave do not
    /// wait for each other, where a single row waits for each cell's west neighbour (a chain of
    /// multiplies and adds, ten-odd cycles per cell, that leaves a batch of one or two vectors
    /// mostly idle). With `CARRY` the waves keep the values they read in registers
    /// ([`Cells::wave_carried`]).
    #[inline(always)]
    fn sweep_lanes<const N: usize, const CARRY: bool>(&mut self, sweeps: usize, rows: usize) {
        let (w, h) = (self.width, self.height);
        if w < 3 || h < 3 {
            return;
        }
        const { assert!(N <= L, "N ≤ L lanes") };
        assert!((1..=6).contains(&rows), "one to six rows per wave");
        assert!(self.potential.len() == w * h && self.free.len() == w * h);
        let cells = Cells {
            potential: self.potential.as_mut_ptr(),
            free: self.free.as_ptr(),
            weights: &self.weights,
            width: w,
        };
        // The h − 2 interior rows in groups of at most `rows`, as even as possible (13 rows in
        // fours: 4, 3, 3, 3), so no group is left with a lone row waiting on each cell.
        let interior = h - 2;
        let groups = interior.div_ceil(rows);
        for _ in 0..sweeps {
            let mut y0 = 1;
            for g in 0..groups {
                let size = interior / groups + usize::from(g < interior % groups);
                // SAFETY: rows y0 − 1 ..= y0 + size lie in the w × h map (y0 ≥ 1 and the
                // groups end at row h − 2), N ≤ L, and nothing else borrows the arrays.
                #[allow(unsafe_code)]
                unsafe {
                    match size {
                        1 if CARRY => cells.wave_carried::<N, 1>(y0),
                        1 => cells.wave::<N, 1>(y0),
                        2 if CARRY => cells.wave_carried::<N, 2>(y0),
                        2 => cells.wave::<N, 2>(y0),
                        3 if CARRY => cells.wave_carried::<N, 3>(y0),
                        3 => cells.wave::<N, 3>(y0),
                        4 if CARRY => cells.wave_carried::<N, 4>(y0),
                        4 => cells.wave::<N, 4>(y0),
                        5 if CARRY => cells.wave_carried::<N, 5>(y0),
                        5 => cells.wave::<N, 5>(y0),
                        6 if CARRY => cells.wave_carried::<N, 6>(y0),
                        6 => cells.wave::<N, 6>(y0),
                        _ => unreachable!("groups are at most six rows"),
                    }
                }
                y0 += size;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Interleaved<f32, BATCH_LANES_F32> {
    /// The complements of eight maps (kinds as masks, biases as weights) into lanes
    /// `lane..lane + 8`: eight cells of a map are read as two vectors of four `f64`, the
    /// complement taken and rounded to `f32` exactly as the one-lane load does, and an 8×8
    /// transpose turns eight maps' runs of eight cells into eight cells' runs of eight lanes.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2, `lane + 8 ≤ BATCH_LANES_F32`, and every field must have the
    /// batch's size.
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx2")]
    unsafe fn load8_avx2(&mut self, lane: usize, maps: &[(&Field<f64>, &Bias); 8]) {
        use std::arch::x86_64::*;
        let n = self.width * self.height;
        let potentials: [&[f64]; 8] = std::array::from_fn(|k| &maps[k].0.potentials()[..n]);
        let kinds: [&[CellKind]; 8] = std::array::from_fn(|k| &maps[k].0.kinds()[..n]);
        let one = _mm256_set1_pd(1.0);
        assert!(lane + 8 <= BATCH_LANES_F32 && self.potential.len() == n && self.free.len() == n);
        let (potential, free) = (self.potential.as_mut_ptr(), self.free.as_mut_ptr());
        let mut i = 0;
        while i + 8 <= n {
            let mut q = [_mm256_setzero_ps(); 8];
            let mut m = [_mm256_setzero_ps(); 8];
            for k in 0..8 {
                // SAFETY: cells i..i + 8 exist in every map (i + 8 ≤ n); `CellKind` is a
                // `u8` with `Free` = 0, so eight kinds are eight bytes.
                unsafe {
                    let p = potentials[k].as_ptr().add(i);
                    let lo = _mm256_cvtpd_ps(_mm256_sub_pd(one, _mm256_loadu_pd(p)));
                    let hi = _mm256_cvtpd_ps(_mm256_sub_pd(one, _mm256_loadu_pd(p.add(4))));
                    q[k] = _mm256_set_m128(hi, lo);
                    let bytes = _mm_loadl_epi64(kinds[k].as_ptr().add(i).cast::<__m128i>());
                    let free =
                        _mm256_cmpeq_epi32(_mm256_cvtepu8_epi32(bytes), _mm256_setzero_si256());
                    m[k] = _mm256_castsi256_ps(free);
                }
            }
            transpose8(&mut q);
            transpose8(&mut m);
            for c in 0..8 {
                // SAFETY: cell i + c < n exists and lanes lane..lane + 8 ≤ 32 are in it (the
                // caller's bounds); no reference into the arrays is alive.
                unsafe {
                    let cell = potential.add(i + c).cast::<f32>().add(lane);
                    _mm256_storeu_ps(cell, q[c]);
                    let mask = free.add(i + c).cast::<f32>().add(lane);
                    _mm256_storeu_ps(mask, m[c]);
                }
            }
            i += 8;
        }
        for cell in i..n {
            for k in 0..8 {
                self.potential[cell][lane + k] = (1.0 - potentials[k][cell]) as f32;
                self.free[cell][lane + k] = if kinds[k][cell] == CellKind::Free {
                    f32::FREE
                } else {
                    f32::FIXED
                };
            }
        }
        for (k, (_, bias)) in maps.iter().enumerate() {
            let w = bias.weights();
            for (j, weight) in [w.east, w.west, w.north, w.south].into_iter().enumerate() {
                self.weights[j][lane + k] = weight as f32;
            }
        }
        self.used = self.used.max(lane + 8);
    }

    /// Lanes `lane..lane + 8` back into the free cells of eight maps as `p = 1 − q`, the
    /// reverse of [`Self::load8_avx2`]; fixed cells keep their bits (a blend on the lane's
    /// free mask).
    ///
    /// # Safety
    ///
    /// As for [`Self::load8_avx2`].
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx2")]
    unsafe fn store8_avx2(&self, lane: usize, maps: &mut [&mut Field<f64>; 8]) {
        use std::arch::x86_64::*;
        let n = self.width * self.height;
        let one = _mm256_set1_pd(1.0);
        let mut i = 0;
        while i + 8 <= n {
            let mut q = [_mm256_setzero_ps(); 8];
            let mut m = [_mm256_setzero_ps(); 8];
            for c in 0..8 {
                // SAFETY: lanes lane..lane + 8 of cell i + c exist.
                unsafe {
                    q[c] = _mm256_loadu_ps(self.potential[i + c][lane..lane + 8].as_ptr());
                    m[c] = _mm256_loadu_ps(self.free[i + c][lane..lane + 8].as_ptr().cast());
                }
            }
            transpose8(&mut q);
            transpose8(&mut m);
            for (k, map) in maps.iter_mut().enumerate() {
                let cells = &mut map.potentials_mut()[i..i + 8];
                let free = _mm256_castps_si256(m[k]);
                // SAFETY: eight cells from i exist in the map.
                unsafe {
                    let p = cells.as_mut_ptr();
                    let lo = _mm256_sub_pd(one, _mm256_cvtps_pd(_mm256_castps256_ps128(q[k])));
                    let hi = _mm256_sub_pd(one, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(q[k])));
                    let mlo =
                        _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(free)));
                    let mhi = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(
                        _mm256_extracti128_si256::<1>(free),
                    ));
                    _mm256_storeu_pd(p, _mm256_blendv_pd(_mm256_loadu_pd(p), lo, mlo));
                    _mm256_storeu_pd(
                        p.add(4),
                        _mm256_blendv_pd(_mm256_loadu_pd(p.add(4)), hi, mhi),
                    );
                }
            }
            i += 8;
        }
        for (k, map) in maps.iter_mut().enumerate() {
            for (cell, p) in map.potentials_mut().iter_mut().enumerate().skip(i) {
                if self.free[cell][lane + k] != f32::FIXED {
                    *p = 1.0 - f64::from(self.potential[cell][lane + k]);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Interleaved<f32, BATCH_LANES_F32> {
    /// Lanes `lane..lane + 8` back into every cell of eight maps as `p = 1 − q` (see
    /// [`FieldBatchF32::store_lanes_whole`]): [`Self::store8_avx2`] without the masks.
    ///
    /// # Safety
    ///
    /// As for [`Self::load8_avx2`].
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx2")]
    unsafe fn store8_whole_avx2(&self, lane: usize, maps: &mut [&mut Field<f64>; 8]) {
        use std::arch::x86_64::*;
        let n = self.width * self.height;
        let one = _mm256_set1_pd(1.0);
        assert!(lane + 8 <= BATCH_LANES_F32 && self.potential.len() == n);
        let potential = self.potential.as_ptr();
        let outs: [*mut f64; 8] = std::array::from_fn(|k| {
            let cells = maps[k].potentials_mut();
            assert_eq!(cells.len(), n);
            cells.as_mut_ptr()
        });
        let mut i = 0;
        while i + 8 <= n {
            let mut q = [_mm256_setzero_ps(); 8];
            for (c, v) in q.iter_mut().enumerate() {
                // SAFETY: cell i + c < n exists and lanes lane..lane + 8 ≤ 32 are in it.
                *v = unsafe { _mm256_loadu_ps(potential.add(i + c).cast::<f32>().add(lane)) };
            }
            transpose8(&mut q);
            for (k, out) in outs.iter().enumerate() {
                let lo = _mm256_sub_pd(one, _mm256_cvtps_pd(_mm256_castps256_ps128(q[k])));
                let hi = _mm256_sub_pd(one, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(q[k])));
                // SAFETY: eight cells from i < n - 7 exist in every map (n cells each), and
                // no other reference to them is alive.
                unsafe {
                    _mm256_storeu_pd(out.add(i), lo);
                    _mm256_storeu_pd(out.add(i + 4), hi);
                }
            }
            i += 8;
        }
        for (k, map) in maps.iter_mut().enumerate() {
            for (cell, p) in map.potentials_mut().iter_mut().enumerate().skip(i) {
                *p = 1.0 - f64::from(self.potential[cell][lane + k]);
            }
        }
    }
}

/// Transposes eight rows of eight `f32` (row k, element c becomes row c, element k).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
fn transpose8(r: &mut [std::arch::x86_64::__m256; 8]) {
    use std::arch::x86_64::*;
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    r[0] = _mm256_permute2f128_ps::<0x20>(s0, s4);
    r[1] = _mm256_permute2f128_ps::<0x20>(s1, s5);
    r[2] = _mm256_permute2f128_ps::<0x20>(s2, s6);
    r[3] = _mm256_permute2f128_ps::<0x20>(s3, s7);
    r[4] = _mm256_permute2f128_ps::<0x31>(s0, s4);
    r[5] = _mm256_permute2f128_ps::<0x31>(s1, s5);
    r[6] = _mm256_permute2f128_ps::<0x31>(s2, s6);
    r[7] = _mm256_permute2f128_ps::<0x31>(s3, s7);
}

/// A batch's cells as the sweep kernel walks them.
struct Cells<'a, T: LaneFloat, const L: usize> {
    potential: *mut [T; L],
    free: *const [T::Bits; L],
    weights: &'a [[T; L]; 4],
    width: usize,
}

impl<T: LaneFloat, const L: usize> Cells<'_, T, L> {
    /// One lexicographic pass over the `K` rows from `y0`, lanes `0..N`, as a diagonal
    /// wavefront: wave `t` updates column `t + 1 − i` of row `y0 + i`.
    ///
    /// # Safety
    ///
    /// Rows `y0 − 1 ..= y0 + K` must lie inside the map, `N ≤ L`, and no reference to the
    /// arrays may be alive.
    #[allow(unsafe_code)]
    #[inline(always)]
    unsafe fn wave<const N: usize, const K: usize>(&self, y0: usize) {
        let w = self.width;
        let inner = w - 2;
        let mut west = [[T::ZERO; N]; K];
        for (i, v) in west.iter_mut().enumerate() {
            // SAFETY: the first cell of row y0 + i, inside the map.
            let first = unsafe { &*self.potential.add((y0 + i) * w) };
            v.copy_from_slice(&first[..N]);
        }
        for t in 0..inner + K - 1 {
            for (i, v) in west.iter_mut().enumerate() {
                if t >= i && t - i < inner {
                    // SAFETY: column t − i + 1 ∈ 1..=w − 2 of a row inside the map, whose
                    // four neighbours are inside too.
                    unsafe { self.update::<N>((y0 + i) * w + t - i + 1, v) };
                }
            }
        }
    }

    /// Cell `i` on lanes `0..N` from its neighbours, the west one carried in `west` (and
    /// replaced by the result); fixed cells keep their bits.
    ///
    /// # Safety
    ///
    /// `i − w` and `i + w` must be cells of the map, `N ≤ L`, and no reference to the arrays
    /// may be alive.
    #[allow(unsafe_code)]
    #[inline(always)]
    unsafe fn update<const N: usize>(&self, i: usize, west: &mut [T; N]) {
        let [we, ww, wn, ws] = self.weights;
        let w = self.width;
        // SAFETY: the caller's bounds; reads and the one write below do not overlap in time.
        let (east, north, south, old, mask) = unsafe {
            (
                *self.potential.add(i + 1),
                *self.potential.add(i + w),
                *self.potential.add(i - w),
                *self.potential.add(i),
                *self.free.add(i),
            )
        };
        let mut out = [T::ZERO; N];
        for l in 0..N {
            // The scalar kernel's operation order.
            let new = we[l] * east[l] + ww[l] * west[l] + wn[l] * north[l] + ws[l] * south[l];
            out[l] = T::from_bits((new.bits() & mask[l]) | (old[l].bits() & !mask[l]));
        }
        // SAFETY: cell i is inside the map.
        let cell = unsafe { &mut *self.potential.add(i) };
        cell[..N].copy_from_slice(&out);
        *west = out;
    }

    /// [`Self::wave`] with fewer reads, for CPUs with registers to spare (AVX-512's 32).
    ///
    /// Each old value is read from memory once and kept in registers for its other uses: the
    /// east neighbour row `i` reads at wave `t` is the cell it updates at wave `t + 1` and the
    /// north neighbour row `i − 1` reads then (rows run from the top of the wave down, so that
    /// value is taken before row `i` overwrites it), and the south neighbour of row `i` is what
    /// row `i − 1` computed at wave `t − 1`. So a wave step reads one east neighbour and one
    /// mask per row, the row below the wave's south neighbour and the row above's north one,
    /// where reading every neighbour would take five reads per row; the values are the same,
    /// and so are the results, bit for bit (tests against the scalar kernel).
    ///
    /// # Safety
    ///
    /// Rows `y0 − 1 ..= y0 + K` must lie inside the map, `N ≤ L`, and no reference to the
    /// arrays may be alive.
    #[allow(unsafe_code)]
    #[inline(always)]
    unsafe fn wave_carried<const N: usize, const K: usize>(&self, y0: usize) {
        let w = self.width;
        let inner = w - 2;
        // Cell `i` of the map, lanes 0..N.
        let read = |i: usize| -> [T; N] {
            // SAFETY: every `i` read below is a cell of rows y0 − 1 ..= y0 + K, which lie in
            // the map (the caller's bounds), and N ≤ L.
            let cell = unsafe { &*self.potential.add(i) };
            std::array::from_fn(|l| cell[l])
        };
        // Row i's new value west of its next cell, and the old value of that next cell.
        let mut west = [[T::ZERO; N]; K];
        let mut here = [[T::ZERO; N]; K];
        for i in 0..K {
            west[i] = read((y0 + i) * w);
            here[i] = read((y0 + i) * w + 1);
        }
        let [we, ww, wn, ws] = self.weights;
        for t in 0..inner + K - 1 {
            // The east neighbour each row read in this wave (the north one of the row below).
            let mut east_read = [[T::ZERO; N]; K];
            for i in (0..K).rev() {
                if t < i || t - i >= inner {
                    continue;
                }
                let c = t - i + 1;
                let at = (y0 + i) * w + c;
                let east = read(at + 1);
                // Row i + 1 has read this cell as its east neighbour in this wave if it has
                // started (its column c − 1 ≥ 1); otherwise read it.
                let north = if i + 1 < K && c >= 2 {
                    east_read[i + 1]
                } else {
                    read(at + w)
                };
                let south = if i > 0 { west[i - 1] } else { read(at - w) };
                let old = here[i];
                // SAFETY: `at` is an interior cell of row y0 + i, inside the map.
                let mask = unsafe { &*self.free.add(at) };
                let mut out = [T::ZERO; N];
                for l in 0..N {
                    // The scalar kernel's operation order.
                    let new =
                        we[l] * east[l] + ww[l] * west[i][l] + wn[l] * north[l] + ws[l] * south[l];
                    out[l] = T::from_bits((new.bits() & mask[l]) | (old[l].bits() & !mask[l]));
                }
                // SAFETY: as above; no other reference into the arrays is alive.
                let cell = unsafe { &mut *self.potential.add(at) };
                cell[..N].copy_from_slice(&out);
                west[i] = out;
                here[i] = east;
                east_read[i] = east;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use glam::DVec2;
    use proptest::prelude::*;

    use super::*;
    use crate::grid::GridGeometry;
    use crate::relax::{Relaxation, relax};

    /// Lane `lane`'s bias in the kernel proptests: ε scaled by the lane, v turned by it.
    fn drawn_bias(eps: f64, angle: f64, lane: usize) -> Bias {
        Bias::new(
            eps * (lane as f64 / BATCH_LANES_F32 as f64),
            DVec2::from_angle(angle + lane as f64),
        )
        .unwrap()
    }

    /// A `side × side` map of [`random_rect`].
    fn random_map(side: usize, seed: u64) -> Field<f64> {
        random_rect(side, side, seed)
    }

    /// A `w × h` map drawn from `seed`: obstacles, fixed values and free cells at drawn
    /// potentials inside, one goal on the border.
    fn random_rect(w: usize, h: usize, seed: u64) -> Field<f64> {
        let g = GridGeometry::new(DVec2::ZERO, 0.5, w, h).unwrap();
        let mut f = Field::new(g, 0.9);
        let mut s = seed;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s >> 33
        };
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                match next() % 10 {
                    0 | 1 => f.set_obstacle(x, y).unwrap(),
                    2 => f.set_fixed(x, y, (next() % 1000) as f64 / 1000.0).unwrap(),
                    _ => f.potentials_mut()[y * w + x] = (next() % 1000) as f64 / 1000.0,
                }
            }
        }
        f.set_goal(w - 1, h / 2).unwrap();
        f
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Every lane matches the scalar lexicographic sweep bit for bit, whatever the other
        /// lanes hold and however many are used.
        #[test]
        fn lanes_match_the_scalar_sweep_bit_for_bit(
            side in (2usize..12).prop_map(|k| 2 * k + 1),
            used in 1usize..=BATCH_LANES,
            seed in any::<u64>(),
            sweeps in 1usize..40,
            eps in -1.5f64..1.5,
            angle in 0.0f64..std::f64::consts::TAU,
        ) {
            let mut batch = FieldBatch::new(side, side);
            let mut maps = Vec::new();
            for lane in 0..used {
                let map = random_map(side, seed.wrapping_add(lane as u64));
                let bias = Bias::new(eps * (lane as f64 / BATCH_LANES as f64), DVec2::from_angle(angle + lane as f64))
                    .unwrap();
                prop_assert!(batch.load(lane, &map, &bias));
                maps.push((map, bias));
            }
            batch.relax(sweeps);
            for (lane, (mut map, bias)) in maps.into_iter().enumerate() {
                let mut out = map.clone();
                prop_assert!(batch.store(lane, &mut out));
                relax(&mut map, &bias, &Relaxation::GAUSS_SEIDEL, sweeps);
                for (a, b) in map.potentials().iter().zip(out.potentials()) {
                    prop_assert_eq!(a.to_bits(), b.to_bits());
                }
            }
        }
    }

    /// Sweeps copies of `base` on lanes `0..N` with one to six rows a wave, each wave reading
    /// every neighbour and carrying them in registers, in the portable build and the AVX2 and
    /// AVX-512 builds the CPU has, and checks they all leave the bits of the portable build's
    /// row-by-row sweeps.
    #[allow(unsafe_code)]
    fn builds_agree<T: LaneFloat, const L: usize, const N: usize>(base: &Interleaved<T, L>) {
        let bits = |l: &Interleaved<T, L>| -> Vec<T::Bits> {
            l.potential.iter().flatten().map(|v| v.bits()).collect()
        };
        let mut reference = base.clone();
        reference.sweep_lanes::<N, false>(30, 1);
        let want = bits(&reference);
        assert_ne!(want, bits(base), "the sweeps changed something");
        for rows in 1..=6 {
            let mut l = base.clone();
            l.sweep_lanes::<N, false>(30, rows);
            assert_eq!(bits(&l), want, "portable, {N} lanes, {rows} rows a wave");
            let mut l = base.clone();
            l.sweep_lanes::<N, true>(30, rows);
            assert_eq!(
                bits(&l),
                want,
                "portable carried, {N} lanes, {rows} rows a wave"
            );
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut l = base.clone();
                    // SAFETY: the CPU has AVX2.
                    unsafe { l.sweep_avx2::<N>(30, rows) };
                    assert_eq!(bits(&l), want, "AVX2, {N} lanes, {rows} rows a wave");
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    for (carry, name) in [(false, "AVX-512"), (true, "AVX-512 carried")] {
                        let mut l = base.clone();
                        // SAFETY: the CPU has AVX-512F.
                        unsafe {
                            if carry {
                                l.sweep_avx512::<N, true>(30, rows)
                            } else {
                                l.sweep_avx512::<N, false>(30, rows)
                            }
                        };
                        assert_eq!(bits(&l), want, "{name}, {N} lanes, {rows} rows a wave");
                    }
                }
            }
        }
    }

    /// The portable, AVX2 and AVX-512 builds of the sweep, reading every neighbour or carrying
    /// them, give the same bits, for every vector count the two batches use and one to six
    /// rows a wave, on square and oblong maps. Only the builds the CPU running the test has are
    /// compared (on a CPU without AVX-512, the AVX-512 build is not checked).
    #[test]
    fn every_build_of_the_sweep_gives_the_same_bits() {
        for (w, h) in [(15, 15), (9, 17), (21, 6)] {
            every_build_agrees_on(w, h);
        }
    }

    fn every_build_agrees_on(w: usize, h: usize) {
        let bias = |lane: usize| {
            Bias::new(
                0.9 * lane as f64 / 32.0 - 0.3,
                DVec2::from_angle(lane as f64),
            )
            .unwrap()
        };
        let mut f32_batch = FieldBatchF32::new(w, h);
        let mut f64_batch = FieldBatch::new(w, h);
        for lane in 0..BATCH_LANES_F32 {
            let map = random_rect(w, h, 7 * lane as u64 + 1);
            assert!(f32_batch.load(lane, &map, &bias(lane)));
            if lane < BATCH_LANES {
                assert!(f64_batch.load(lane, &map, &bias(lane)));
            }
        }
        let f32_lanes = &f32_batch.lanes;
        builds_agree::<_, BATCH_LANES_F32, 8>(f32_lanes);
        builds_agree::<_, BATCH_LANES_F32, 16>(f32_lanes);
        builds_agree::<_, BATCH_LANES_F32, 24>(f32_lanes);
        builds_agree::<_, BATCH_LANES_F32, BATCH_LANES_F32>(f32_lanes);
        builds_agree::<_, BATCH_LANES, BATCH_LANES>(&f64_batch.lanes);
    }

    /// The complement of `map` as a `Field<f32>`: free cells `1 − p`, fixed cells (obstacles
    /// and goals included) fixed at `1 − p`.
    fn complement_f32(map: &Field<f64>) -> Field<f32> {
        let mut q = Field::<f32>::new(*map.geometry(), 0.0);
        for y in 0..map.height() {
            for x in 0..map.width() {
                let i = y * map.width() + x;
                let c = 1.0 - map.potentials()[i];
                if map.kinds()[i] == CellKind::Free {
                    q.set_free(x, y, 0.0).unwrap();
                    q.potentials_mut()[i] = c as f32;
                } else {
                    q.set_fixed(x, y, c).unwrap();
                }
            }
        }
        q
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Every f32 lane matches the scalar lexicographic sweep of its map's complement in
        /// `f32` bit for bit, and stores back `1 − q` on free cells only.
        #[test]
        fn f32_lanes_match_the_scalar_sweep_of_the_complement(
            side in (2usize..12).prop_map(|k| 2 * k + 1),
            used in 1usize..=BATCH_LANES_F32,
            seed in any::<u64>(),
            sweeps in 1usize..40,
            eps in -1.5f64..1.5,
            angle in 0.0f64..std::f64::consts::TAU,
        ) {
            let mut batch = FieldBatchF32::new(side, side);
            let mut maps = Vec::new();
            for lane in 0..used {
                let map = random_map(side, seed.wrapping_add(lane as u64));
                let bias = Bias::new(
                    eps * (lane as f64 / BATCH_LANES_F32 as f64),
                    DVec2::from_angle(angle + lane as f64),
                )
                .unwrap();
                prop_assert!(batch.load(lane, &map, &bias));
                maps.push((map, bias));
            }
            batch.relax(sweeps);
            for (lane, (map, bias)) in maps.into_iter().enumerate() {
                let mut out = map.clone();
                prop_assert!(batch.store(lane, &mut out));
                let mut q = complement_f32(&map);
                relax(&mut q, &bias, &Relaxation::GAUSS_SEIDEL, sweeps);
                for (i, kind) in map.kinds().iter().enumerate() {
                    if *kind == CellKind::Free {
                        let want = 1.0 - f64::from(q.potentials()[i]);
                        prop_assert_eq!(want.to_bits(), out.potentials()[i].to_bits());
                    } else {
                        prop_assert_eq!(map.potentials()[i].to_bits(), out.potentials()[i].to_bits());
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Loading and storing many lanes at once (eight at a time with AVX2) gives the bits
        /// one lane at a time gives, whatever the first lane and the count.
        #[test]
        fn many_lanes_at_once_match_one_lane_at_a_time(
            side in (2usize..12).prop_map(|k| 2 * k + 1),
            first in 0usize..BATCH_LANES_F32,
            count in 1usize..=BATCH_LANES_F32,
            seed in any::<u64>(),
            sweeps in 0usize..12,
        ) {
            let count = count.min(BATCH_LANES_F32 - first);
            let maps: Vec<(Field<f64>, Bias)> = (0..count)
                .map(|k| {
                    let bias = Bias::new(0.3, DVec2::from_angle(k as f64)).unwrap();
                    (random_map(side, seed.wrapping_add(k as u64)), bias)
                })
                .collect();
            let (mut one, mut many) = (FieldBatchF32::new(side, side), FieldBatchF32::new(side, side));
            for (k, (map, bias)) in maps.iter().enumerate() {
                prop_assert!(one.load(first + k, map, bias));
            }
            let refs: Vec<(&Field<f64>, &Bias)> = maps.iter().map(|(m, b)| (m, b)).collect();
            prop_assert!(many.load_lanes(first, &refs));
            one.relax(sweeps);
            many.relax(sweeps);
            let mut by_one: Vec<Field<f64>> = maps.iter().map(|(m, _)| m.clone()).collect();
            let mut by_many = by_one.clone();
            for (k, map) in by_one.iter_mut().enumerate() {
                prop_assert!(one.store(first + k, map));
            }
            let mut targets: Vec<&mut Field<f64>> = by_many.iter_mut().collect();
            prop_assert!(many.store_lanes(first, &mut targets));
            for (a, b) in by_one.iter().zip(&by_many) {
                let bits = |f: &Field<f64>| f.potentials().iter().map(|p| p.to_bits()).collect::<Vec<_>>();
                prop_assert_eq!(bits(a), bits(b));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Storing whole lanes gives the masked store's bits on maps whose fixed cells are
        /// obstacles and goals, as local maps are; elsewhere it differs only at fixed cells.
        #[test]
        fn whole_lanes_store_what_masked_lanes_store_on_obstacles_and_goals(
            side in (2usize..12).prop_map(|k| 2 * k + 1),
            count in 1usize..=BATCH_LANES_F32,
            seed in any::<u64>(),
            sweeps in 0usize..12,
        ) {
            let maps: Vec<(Field<f64>, Bias)> = (0..count)
                .map(|k| {
                    let mut map = random_map(side, seed.wrapping_add(k as u64));
                    let fixed: Vec<(usize, usize)> = (0..side * side)
                        .map(|i| (i % side, i / side))
                        .filter(|&(x, y)| map.kind(x, y) == Some(CellKind::Fixed))
                        .collect();
                    for (j, (x, y)) in fixed.into_iter().enumerate() {
                        if j % 2 == 0 { map.set_obstacle(x, y).unwrap() } else { map.set_goal(x, y).unwrap() }
                    }
                    (map, Bias::new(0.3, DVec2::from_angle(k as f64)).unwrap())
                })
                .collect();
            for local in [true, false] {
                let mut batch = FieldBatchF32::new(side, side);
                let maps: Vec<(Field<f64>, Bias)> = if local {
                    maps.clone()
                } else {
                    (0..count).map(|k| (random_map(side, seed.wrapping_add(k as u64)), maps[k].1)).collect()
                };
                let refs: Vec<(&Field<f64>, &Bias)> = maps.iter().map(|(m, b)| (m, b)).collect();
                prop_assert!(batch.load_lanes(0, &refs));
                batch.relax(sweeps);
                let mut masked: Vec<Field<f64>> = maps.iter().map(|(m, _)| m.clone()).collect();
                let mut whole = masked.clone();
                prop_assert!(batch.store_lanes(0, &mut masked.iter_mut().collect::<Vec<_>>()));
                prop_assert!(batch.store_lanes_whole(0, &mut whole.iter_mut().collect::<Vec<_>>()));
                for (a, b) in masked.iter().zip(&whole) {
                    for ((p, q), k) in a.potentials().iter().zip(b.potentials()).zip(a.kinds()) {
                        if local || *k == CellKind::Free {
                            prop_assert_eq!(p.to_bits(), q.to_bits(), "{:?}", k);
                        }
                    }
                }
            }
        }
    }

    /// Clearing from a lane fixes every lane from there on, also when an earlier clear made
    /// some of it fixed already and it returns early.
    #[test]
    fn clearing_from_a_lane_leaves_every_lane_above_it_fixed() {
        let map = random_map(9, 7);
        let bias = Bias::HARMONIC;
        let mut batch = FieldBatchF32::new(9, 9);
        let free_lanes = |b: &FieldBatchF32| -> Vec<usize> {
            (0..BATCH_LANES_F32)
                .filter(|&l| b.lanes.free.iter().any(|m| m[l] != f32::FIXED))
                .collect()
        };
        for lane in 0..10 {
            assert!(batch.load(lane, &map, &bias));
        }
        batch.clear_from(4);
        assert_eq!(free_lanes(&batch), (0..4).collect::<Vec<_>>());
        batch.clear_from(6);
        assert_eq!(free_lanes(&batch), (0..4).collect::<Vec<_>>());
        let refs = [(&map, &bias); 8];
        assert!(batch.load_lanes(0, &refs));
        // Eight loaded lanes count as used: clearing from five must not return early.
        batch.clear_from(5);
        assert_eq!(free_lanes(&batch), (0..5).collect::<Vec<_>>());
        batch.clear_from(3);
        assert_eq!(free_lanes(&batch), (0..3).collect::<Vec<_>>());
        batch.clear_from(0);
        assert!(free_lanes(&batch).is_empty());
    }

    #[test]
    fn many_lanes_refuse_too_many_maps_and_wrong_sizes() {
        let mut batch = FieldBatchF32::new(9, 9);
        let map = random_map(9, 4);
        let small = random_map(7, 4);
        let bias = Bias::HARMONIC;
        assert!(!batch.load_lanes(30, &[(&map, &bias); 3]));
        assert!(!batch.load_lanes(0, &[(&map, &bias), (&small, &bias)]));
        let (mut a, mut b) = (map.clone(), small.clone());
        assert!(!batch.store_lanes(0, &mut [&mut a, &mut b]));
        assert_eq!(a.potentials(), map.potentials());
    }

    #[test]
    fn f32_batches_refuse_wrong_sizes_and_lanes_and_leave_unused_lanes_alone() {
        let mut batch = FieldBatchF32::new(15, 15);
        let mut small = random_map(11, 1);
        assert!(!batch.load(0, &small, &Bias::HARMONIC));
        assert!(!batch.store(0, &mut small));
        let map = random_map(15, 1);
        assert!(!batch.load(BATCH_LANES_F32, &map, &Bias::HARMONIC));
        assert!(batch.load(0, &map, &Bias::HARMONIC));
        batch.clear();
        batch.relax(10);
        let mut out = map.clone();
        batch.store(0, &mut out);
        assert_eq!(out.potentials(), map.potentials());
        // Lanes past `clear_from` are unused, the ones before it kept.
        let other = random_map(15, 2);
        assert!(batch.load(0, &map, &Bias::HARMONIC));
        assert!(batch.load(1, &other, &Bias::HARMONIC));
        batch.clear_from(1);
        batch.relax(10);
        let (mut first, mut second) = (map.clone(), other.clone());
        batch.store(0, &mut first);
        batch.store(1, &mut second);
        assert_ne!(first.potentials(), map.potentials());
        assert_eq!(second.potentials(), other.potentials());
    }

    #[test]
    fn wrong_sizes_and_lanes_are_refused() {
        let mut batch = FieldBatch::new(15, 15);
        let mut small = random_map(11, 1);
        assert!(!batch.load(0, &small, &Bias::HARMONIC));
        assert!(!batch.store(0, &mut small));
        let map = random_map(15, 1);
        assert!(!batch.load(BATCH_LANES, &map, &Bias::HARMONIC));
    }

    #[test]
    fn unused_lanes_stay_untouched() {
        let mut batch = FieldBatch::new(9, 9);
        let map = random_map(9, 3);
        batch.load(0, &map, &Bias::HARMONIC);
        batch.clear();
        batch.relax(10);
        let mut out = map.clone();
        batch.store(0, &mut out);
        assert_eq!(out.potentials(), map.potentials());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The time-skewed kernel leaves every lane, used or not, with the bits the
        /// lane-per-map kernel leaves, on maps of any width it takes and any height, for any
        /// lane count (also above the count `relax` hands it) and sweep count. Runs only where
        /// the CPU has AVX-512F (the kernel exists nowhere else).
        #[test]
        fn the_skewed_kernel_gives_the_lane_per_map_bits(
            w in 3usize..=skewed::MAX_WIDTH,
            h in 3usize..21,
            used in 0usize..=BATCH_LANES_F32,
            loaded in 0usize..=BATCH_LANES_F32,
            seed in any::<u64>(),
            sweeps in 0usize..70,
            eps in -1.5f64..1.5,
            angle in 0.0f64..std::f64::consts::TAU,
        ) {
            // Lanes `used..loaded` hold maps but are marked unused: they must not move.
            let mut batch = FieldBatchF32::new(w, h);
            for lane in 0..used.max(loaded) {
                let map = random_rect(w, h, seed.wrapping_add(lane as u64));
                prop_assert!(batch.load(lane, &map, &drawn_bias(eps, angle, lane)));
            }
            batch.clear_from(used);
            let mut want = batch.clone();
            want.relax_lane_per_map(sweeps);
            if batch.relax_skewed(sweeps) {
                let bits = |b: &FieldBatchF32| -> Vec<u32> {
                    b.lanes.potential.iter().flatten().map(|v| v.to_bits()).collect()
                };
                prop_assert_eq!(bits(&batch), bits(&want));
            } else {
                prop_assert!(!skewed::available(w, h, sweeps));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// `relax_whole` leaves every map with the bits that loading it into the lanes,
        /// sweeping it one map per lane and storing it whole leave, for any map count, size
        /// and sweep count, whichever kernel it picks and with each kernel forced (the
        /// time-skewed kernel's AVX-512F and AVX2 builds and the lanes; a build the CPU lacks
        /// falls back to the lanes, so only the builds the CPU has are really compared).
        #[test]
        fn relax_whole_gives_what_the_lanes_give(
            w in 3usize..19,
            h in 3usize..21,
            count in 0usize..=BATCH_LANES_F32,
            seed in any::<u64>(),
            sweeps in 0usize..70,
            eps in -1.5f64..1.5,
            angle in 0.0f64..std::f64::consts::TAU,
        ) {
            let maps: Vec<(Field<f64>, Bias)> = (0..count)
                .map(|k| (random_rect(w, h, seed.wrapping_add(k as u64)), drawn_bias(eps, angle, k)))
                .collect();
            let mut lanes = FieldBatchF32::new(w, h);
            let view: Vec<(&Field<f64>, &Bias)> = maps.iter().map(|(f, b)| (f, b)).collect();
            prop_assert!(lanes.load_lanes(0, &view));
            lanes.clear_from(count);
            lanes.relax_lane_per_map(sweeps);
            let mut want: Vec<Field<f64>> = maps.iter().map(|(f, _)| f.clone()).collect();
            let mut refs: Vec<&mut Field<f64>> = want.iter_mut().collect();
            prop_assert!(lanes.store_lanes_whole(0, &mut refs));

            // The kernel `relax_whole` picks, then each one forced (those the CPU lacks fall
            // back to the lanes).
            let kernels = [
                None,
                Some(WholeKernel::Skewed512),
                Some(WholeKernel::Skewed256),
                Some(WholeKernel::Lanes),
            ];
            for kernel in kernels {
                let mut got: Vec<(Field<f64>, Bias)> = maps.clone();
                let mut pairs: Vec<(&mut Field<f64>, &Bias)> =
                    got.iter_mut().map(|(f, b)| (f, &*b)).collect();
                let mut batch = FieldBatchF32::new(w, h);
                let done = match kernel {
                    None => batch.relax_whole(&mut pairs, sweeps),
                    Some(k) => batch.relax_whole_by(&mut pairs, sweeps, k),
                };
                prop_assert!(done);
                for ((g, _), w) in got.iter().zip(&want) {
                    let bits = |f: &Field<f64>| -> Vec<u64> {
                        f.potentials().iter().map(|p| p.to_bits()).collect()
                    };
                    prop_assert_eq!(bits(g), bits(w), "kernel {:?}", kernel);
                }
            }
        }
    }

    /// `relax_whole` refuses too many maps and maps of another size, changing none.
    #[test]
    fn relax_whole_refuses_too_many_maps_and_wrong_sizes() {
        let mut batch = FieldBatchF32::new(9, 9);
        let mut small = random_rect(7, 9, 1);
        let before = small.clone();
        assert!(!batch.relax_whole(&mut [(&mut small, &Bias::HARMONIC)], 5));
        assert_eq!(small.potentials(), before.potentials());
        let mut many: Vec<Field<f64>> = (0..=BATCH_LANES_F32 as u64)
            .map(|k| random_rect(9, 9, k))
            .collect();
        let copies = many.clone();
        let mut pairs: Vec<(&mut Field<f64>, &Bias)> =
            many.iter_mut().map(|f| (f, &Bias::HARMONIC)).collect();
        assert!(!batch.relax_whole(&mut pairs, 5));
        for (a, b) in many.iter().zip(&copies) {
            assert_eq!(a.potentials(), b.potentials());
        }
    }

    /// The time-skewed kernel's table grows with the sweep count, so it takes at most
    /// `MAX_SWEEPS` sweeps; longer relaxations go through the lanes, with the same bits.
    #[test]
    fn long_relaxations_go_through_the_lanes() {
        assert!(!skewed::available(5, 5, skewed::MAX_SWEEPS + 1));
        assert!(!skewed::available_avx2(5, 5, skewed::MAX_SWEEPS + 1));
        let sweeps = skewed::MAX_SWEEPS + 1;
        let map = random_rect(5, 5, 9);
        let mut lanes = FieldBatchF32::new(5, 5);
        assert!(lanes.load_lanes(0, &[(&map, &Bias::HARMONIC)]));
        lanes.relax_lane_per_map(sweeps);
        let mut want = map.clone();
        assert!(lanes.store_lanes_whole(0, &mut [&mut want]));
        let mut got = map.clone();
        assert!(FieldBatchF32::new(5, 5).relax_whole(&mut [(&mut got, &Bias::HARMONIC)], sweeps));
        assert_eq!(got.potentials(), want.potentials());
    }

    /// `relax` takes the time-skewed kernel for a few maps where it can and the lane-per-map
    /// kernel otherwise; both leave the maps the scalar sweep leaves (the proptests above),
    /// so this only checks the choice cannot strand a batch: a 17-cell-wide batch of two
    /// maps (too wide for the skewed kernel) is still swept.
    #[test]
    fn maps_too_wide_for_the_skewed_kernel_are_still_swept() {
        let map = random_rect(17, 9, 5);
        let mut batch = FieldBatchF32::new(17, 9);
        for lane in 0..2 {
            assert!(batch.load(lane, &map, &Bias::HARMONIC));
        }
        assert!(!skewed::available(17, 9, 5));
        let before = batch.clone();
        batch.relax(5);
        assert_ne!(
            batch.lanes.potential, before.lanes.potential,
            "two maps 17 cells wide were not swept"
        );
    }
}
