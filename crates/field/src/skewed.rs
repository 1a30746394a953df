//! Lexicographic Gauss–Seidel on one or two small maps per vector, in a time-skewed order
//! (digest 000 Eq. 5.1, the update [`crate::relax()`] makes; docs/performance.md, *Field kernels*).
//!
//! [`crate::FieldBatchF32`] puts one map in each SIMD lane, which leaves most lanes idle when a
//! crowd has only a few agents: a batch of two maps sweeps a whole 8-lane vector, and each
//! update waits for its west neighbour. This kernel spreads the cells of each map over the
//! lanes instead.
//!
//! In the lexicographic order (x fastest, then y, both increasing), the update of cell
//! (x, y) in sweep s reads its west and south neighbours from sweep s and its east and north
//! neighbours from sweep s − 1. Give that update the time `2s + x + y`: every value it reads
//! was written at time `2s + x + y − 1` (or is the neighbour's starting value, for the first
//! sweep, or a fixed cell's), and none of those neighbours is written again before time
//! `2s + x + y + 1`. All updates of one time therefore read only values that are final for
//! them, and do not read each other (they all have the same colour `(x + y) mod 2`, and their
//! neighbours the other one), so they can run at once, in any order, and still compute
//! exactly what the lexicographic sweeps compute: the same operations on the same operands,
//! bit for bit (property tests). A map of `w × h` cells swept `S` times takes
//! `2(S − 1) + (w − 2) + (h − 2)` such times; each updates one colour of every interior row.
//!
//! Each row's cells of one colour, eight at most for maps up to 16 cells wide, fill half a
//! 16-lane `f32` vector, and two maps share each vector: lanes 0–7 hold one map's row, lanes
//! 8–15 the other's. For a cell of the updated colour, the rows above and below hold its
//! north and south neighbours in the same lane; its west and east neighbours sit in the same
//! row of the other colour, one in the same lane and one a lane away (which one depends on the
//! row's parity), so each row update is one lane permutation, four multiplies and four adds
//! (the last one masked, leaving fixed cells, cells outside the update's span of times and
//! unused lanes as they are).
//!
//! Built for AVX-512F; reading straight from maps ([`sweep_fields_avx2`]) also for AVX2, one
//! map per 8-lane vector. Callers fall back to the lane-per-map kernel elsewhere, and for
//! more than [`MAX_SWEEPS`] sweeps.

#![allow(unsafe_code)]

use crate::bias::Bias;
use crate::field::{CellKind, Field};

/// Widest map this kernel sweeps: a row of one colour must fit eight lanes.
pub(crate) const MAX_WIDTH: usize = 16;

/// Most sweeps this kernel takes in one call: its table of updated lanes grows with the sweep
/// count (two bytes per time), so longer relaxations go through the lanes, whose cost per
/// sweep is the same and which need no table.
pub(crate) const MAX_SWEEPS: usize = 4096;

/// One 16-lane row of a pair of maps, aligned for vector loads and stores.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Row([f32; 16]);

/// Buffers the kernel reuses from call to call.
#[derive(Debug, Clone, Default)]
pub(crate) struct SkewedScratch {
    /// Colour 0 rows, then colour 1 rows, of the pair being swept.
    rows: Vec<Row>,
    /// Free cells of each row in `rows` (or `rows8`), one bit per lane.
    free: Vec<u16>,
    /// For `j = t − y + height`: the lanes of row y updated at time t (both maps' halves).
    span: Vec<u16>,
    /// `(width, height, sweeps)` the span table was built for.
    span_key: (usize, usize, usize),
    /// The AVX2 build's rows: one map, colour 0 rows then colour 1 rows, eight lanes each
    /// (their free lanes in `free`, bits 0–7).
    rows8: Vec<Row8>,
}

/// One 8-lane row of one map, aligned for vector loads and stores (the AVX2 build).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
struct Row8([f32; 8]);

impl SkewedScratch {
    /// Builds the table of updated lanes for `sweeps` sweeps of `w × h` maps, unless built.
    fn build_span(&mut self, w: usize, h: usize, sweeps: usize) {
        if self.span_key == (w, h, sweeps) && !self.span.is_empty() {
            return;
        }
        let last = 2 * (sweeps as i64 - 1);
        let times = last as usize + (w - 2) + (h - 2);
        self.span.clear();
        self.span.resize(times + h + 1, 0);
        for (index, lanes) in self.span.iter_mut().enumerate() {
            // j = t − y: cell x of the row is updated at time t when x ≡ j (mod 2) and
            // 0 ≤ (j − x)/2 < sweeps.
            let j = index as i64 - h as i64;
            let o = j.rem_euclid(2);
            for k in 0..8 {
                let x = 2 * k + o;
                if x >= 1 && x <= w as i64 - 2 && x <= j && x >= j - last {
                    *lanes |= (1 << k) | (1 << (k + 8));
                }
            }
        }
        self.span_key = (w, h, sweeps);
    }

    /// `2h` zeroed rows with no free lane, for the next pair.
    fn clear_rows(&mut self, h: usize) {
        self.rows.clear();
        self.rows.resize(2 * h, Row([0.0; 16]));
        self.free.clear();
        self.free.resize(2 * h, 0);
    }
}

/// Whether [`sweep_lanes`] and [`sweep_fields`] can run here on maps of `width × height`
/// for `sweeps` sweeps.
pub(crate) fn available(width: usize, height: usize, sweeps: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        fits(width, height, sweeps) && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = fits(width, height, sweeps);
        false
    }
}

/// Whether [`sweep_fields_avx2`] can run here on maps of `width × height` for `sweeps` sweeps.
pub(crate) fn available_avx2(width: usize, height: usize, sweeps: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        fits(width, height, sweeps) && std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = fits(width, height, sweeps);
        false
    }
}

/// Whether maps of `width × height` and a sweep count suit this kernel on any CPU.
fn fits(width: usize, height: usize, sweeps: usize) -> bool {
    (3..=MAX_WIDTH).contains(&width) && height >= 3 && sweeps <= MAX_SWEEPS
}

/// `sweeps` lexicographic Gauss–Seidel sweeps of lanes `0..used` of a lane-per-map batch of
/// `width × height` maps (`potential` and `free` cell by cell, `weights` east, west, north,
/// south per lane), two maps at a time in the time-skewed order. Lanes at or above `used`
/// come out as they went in.
///
/// # Safety
///
/// The CPU must have AVX-512F; `3 ≤ width ≤ MAX_WIDTH`, `height ≥ 3`, `sweeps ≤ MAX_SWEEPS`,
/// `used ≤ L`, and `potential` and `free` must hold `width × height` cells.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn sweep_lanes<const L: usize>(
    scratch: &mut SkewedScratch,
    potential: &mut [[f32; L]],
    free: &[[u32; L]],
    weights: &[[f32; L]; 4],
    (w, h): (usize, usize),
    used: usize,
    sweeps: usize,
) {
    assert!(fits(w, h, sweeps) && used <= L && potential.len() == w * h && free.len() == w * h);
    if sweeps == 0 || used == 0 {
        return;
    }
    scratch.build_span(w, h, sweeps);
    for first in (0..used).step_by(2) {
        let lanes = &[first, first + 1][..if first + 1 < used { 2 } else { 1 }];
        scratch.clear_rows(h);
        let mut weight = [Row([0.0; 16]); 4];
        for (half, &lane) in lanes.iter().enumerate() {
            for y in 0..h {
                for x in 0..w {
                    let (cell, row, slot) = place(w, h, half, x, y);
                    scratch.rows[row].0[slot] = potential[cell][lane];
                    scratch.free[row] |= u16::from(free[cell][lane] != 0) << slot;
                }
            }
            for (k, row) in weight.iter_mut().enumerate() {
                row.0[half * 8..half * 8 + 8].fill(weights[k][lane]);
            }
        }
        // SAFETY: the CPU has AVX-512F (the caller's promise), the rows and span fit w × h.
        unsafe { sweep_rows(scratch, &weight, (w, h), sweeps) };
        for (half, &lane) in lanes.iter().enumerate() {
            for y in 0..h {
                for x in 0..w {
                    let (cell, row, slot) = place(w, h, half, x, y);
                    potential[cell][lane] = scratch.rows[row].0[slot];
                }
            }
        }
    }
}

/// `sweeps` lexicographic Gauss–Seidel sweeps of each map of `maps` with its bias, on the
/// complements `q = 1 − p` in `f32` (as [`crate::FieldBatchF32`] sweeps them), two maps at a
/// time in the time-skewed order, every cell then written back as `1 − q` (as
/// [`crate::FieldBatchF32::store_lanes_whole`] writes it).
///
/// # Safety
///
/// The CPU must have AVX-512F; every map must be `w × h` with `3 ≤ w ≤ MAX_WIDTH`, `h ≥ 3`,
/// and `sweeps ≤ MAX_SWEEPS`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn sweep_fields(
    scratch: &mut SkewedScratch,
    maps: &mut [(&mut Field<f64>, &Bias)],
    (w, h): (usize, usize),
    sweeps: usize,
) {
    assert!(fits(w, h, sweeps) && maps.iter().all(|(f, _)| f.width() == w && f.height() == h));
    // No early return for zero sweeps: the write-back still rounds every cell through `f32`,
    // as the lanes' whole store does.
    if sweeps > 0 {
        scratch.build_span(w, h, sweeps);
    }
    for pair in maps.chunks_mut(2) {
        scratch.clear_rows(h);
        let mut weight = [Row([0.0; 16]); 4];
        for (half, (field, bias)) in pair.iter().enumerate() {
            let (p, kinds) = (field.potentials(), field.kinds());
            for y in 0..h {
                // SAFETY: the CPU has AVX-512F; row y has w ≤ 16 cells.
                unsafe { fill_row(scratch, &p[y * w..y * w + w], (y, h), half) };
                let mut bits = [0u16; 2];
                for (x, kind) in kinds[y * w..y * w + w].iter().enumerate() {
                    bits[x & 1] |= u16::from(*kind == CellKind::Free) << (half * 8 + x / 2);
                }
                scratch.free[(y & 1) * h + y] |= bits[0];
                scratch.free[((y + 1) & 1) * h + y] |= bits[1];
            }
            let b = bias.weights();
            for (k, value) in [b.east, b.west, b.north, b.south].into_iter().enumerate() {
                weight[k].0[half * 8..half * 8 + 8].fill(value as f32);
            }
        }
        if sweeps > 0 {
            // SAFETY: the CPU has AVX-512F (the caller's promise), the rows and span fit
            // w × h.
            unsafe { sweep_rows(scratch, &weight, (w, h), sweeps) };
        }
        for (half, (field, _)) in pair.iter_mut().enumerate() {
            let p = field.potentials_mut();
            for y in 0..h {
                // SAFETY: the CPU has AVX-512F; row y has w ≤ 16 cells.
                unsafe { drain_row(scratch, &mut p[y * w..y * w + w], (y, h), half) };
            }
        }
    }
}

/// Row y of a map (`p`, at most 16 cells) into `half` of the pair's two colour rows for y, as
/// complements `(1 − p) as f32`; lanes past the row's end get 0.
///
/// # Safety
///
/// The CPU must have AVX-512F; `scratch` must hold `2h` rows, `y < h`, `half < 2`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fill_row(scratch: &mut SkewedScratch, p: &[f64], (y, h): (usize, usize), half: usize) {
    use std::arch::x86_64::*;
    let w = p.len();
    assert!(w <= MAX_WIDTH && y < h && half < 2 && scratch.rows.len() == 2 * h);
    let inside = ((1u32 << w) - 1) as u16;
    let one = _mm512_set1_pd(1.0);
    // Even cells to lanes 0–7, odd ones to 8–15.
    let split = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    // SAFETY: masked loads touch only cells 0..w of the row; each row is 16 aligned `f32`
    // and `half * 8` keeps the 8-lane stores inside it and 32-byte aligned.
    unsafe {
        let lo = _mm512_maskz_loadu_pd(inside as u8, p.as_ptr());
        let hi = _mm512_maskz_loadu_pd((inside >> 8) as u8, p.as_ptr().wrapping_add(8));
        let lo = _mm512_cvtpd_ps(_mm512_sub_pd(one, lo));
        let hi = _mm512_cvtpd_ps(_mm512_sub_pd(one, hi));
        let q = _mm512_castpd_ps(_mm512_insertf64x4::<1>(
            _mm512_castpd256_pd512(_mm256_castps_pd(lo)),
            _mm256_castps_pd(hi),
        ));
        let q = _mm512_permutexvar_ps(split, _mm512_maskz_mov_ps(inside, q));
        let even = _mm256_castpd_ps(_mm512_castpd512_pd256(_mm512_castps_pd(q)));
        let odd = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(q)));
        let rows = scratch.rows.as_mut_ptr();
        _mm256_store_ps(
            (*rows.add((y & 1) * h + y)).0.as_mut_ptr().add(half * 8),
            even,
        );
        _mm256_store_ps(
            (*rows.add(((y + 1) & 1) * h + y))
                .0
                .as_mut_ptr()
                .add(half * 8),
            odd,
        );
    }
}

/// `half` of the pair's two colour rows for y back into row y of a map (`p`, at most 16
/// cells) as `1 − q`, every cell.
///
/// # Safety
///
/// The CPU must have AVX-512F; `scratch` must hold `2h` rows, `y < h`, `half < 2`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn drain_row(scratch: &SkewedScratch, p: &mut [f64], (y, h): (usize, usize), half: usize) {
    use std::arch::x86_64::*;
    let w = p.len();
    assert!(w <= MAX_WIDTH && y < h && half < 2 && scratch.rows.len() == 2 * h);
    let inside = ((1u32 << w) - 1) as u16;
    let one = _mm512_set1_pd(1.0);
    // Lanes 0–7 hold the even cells, 8–15 the odd ones: back to cell order.
    let merge = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    // SAFETY: as in `fill_row`; masked stores touch only cells 0..w of the row.
    unsafe {
        let rows = scratch.rows.as_ptr();
        let even = _mm256_load_ps((*rows.add((y & 1) * h + y)).0.as_ptr().add(half * 8));
        let odd = _mm256_load_ps((*rows.add(((y + 1) & 1) * h + y)).0.as_ptr().add(half * 8));
        let q = _mm512_castpd_ps(_mm512_insertf64x4::<1>(
            _mm512_castpd256_pd512(_mm256_castps_pd(even)),
            _mm256_castps_pd(odd),
        ));
        let q = _mm512_permutexvar_ps(merge, q);
        let lo = _mm512_castps512_ps256(q);
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(q)));
        let lo = _mm512_sub_pd(one, _mm512_cvtps_pd(lo));
        let hi = _mm512_sub_pd(one, _mm512_cvtps_pd(hi));
        _mm512_mask_storeu_pd(p.as_mut_ptr(), inside as u8, lo);
        _mm512_mask_storeu_pd(p.as_mut_ptr().wrapping_add(8), (inside >> 8) as u8, hi);
    }
}

/// Where cell (x, y) of the map in `half` of a pair lives: its index in the map, its row in
/// [`SkewedScratch::rows`] (colour `(x + y) mod 2`, then y) and its lane in that row.
#[inline(always)]
fn place(w: usize, h: usize, half: usize, x: usize, y: usize) -> (usize, usize, usize) {
    (y * w + x, ((x + y) & 1) * h + y, half * 8 + x / 2)
}

/// Walks the time-skewed schedule both builds share: for each time `t` of `sweeps` sweeps of
/// `w × h` maps and each interior row y with a lane to update, calls
/// `update(colour, other, y, even, lanes)` with the colour updated at `t`, the other one,
/// whether the row's cells of that colour sit at even x, and the row's free lanes within the
/// time's span (`free` per row, colour 0 rows then colour 1; `span` the table built for
/// `(w, h, sweeps)`). Updates of one time may run in any order.
#[inline(always)]
fn walk_schedule(
    free: &[u16],
    span: &[u16],
    (w, h): (usize, usize),
    sweeps: usize,
    mut update: impl FnMut(usize, usize, usize, bool, u16),
) {
    let times = 2 * (sweeps - 1) + (w - 2) + (h - 2);
    assert!(sweeps >= 1 && free.len() == 2 * h && span.len() > times + h);
    for t in 2..=times {
        let (colour, other) = (t & 1, 1 - (t & 1));
        for y in 1..h - 1 {
            let lanes = free[colour * h + y] & span[t + h - y];
            if lanes != 0 {
                // This row's cells sit at x ≡ t + y (mod 2).
                update(colour, other, y, (t + y) & 1 == 0, lanes);
            }
        }
    }
}

/// The time-skewed sweeps of the pair held in `scratch.rows` (free lanes in `scratch.free`,
/// span table built for `(w, h, sweeps)`), with per-lane `weight`s east, west, north, south.
///
/// # Safety
///
/// The CPU must have AVX-512F; `scratch` must hold `2h` rows and the span table for
/// `(w, h, sweeps)`, `sweeps ≥ 1`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sweep_rows(
    scratch: &mut SkewedScratch,
    weight: &[Row; 4],
    (w, h): (usize, usize),
    sweeps: usize,
) {
    use std::arch::x86_64::*;

    assert!(
        scratch.rows.len() == 2 * h
            && scratch.free.len() == 2 * h
            && scratch.span_key == (w, h, sweeps)
            && sweeps >= 1
    );
    // West neighbour one lane down (rows whose cells sit at even x), east one lane up (odd x),
    // within each map's half.
    let west_of_even = _mm512_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6, 8, 8, 9, 10, 11, 12, 13, 14);
    let east_of_odd = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7, 9, 10, 11, 12, 13, 14, 15, 15);
    // SAFETY: `Row` is 64-byte aligned, as the aligned loads need.
    let (we, ww, wn, ws) = unsafe {
        (
            _mm512_load_ps(weight[0].0.as_ptr()),
            _mm512_load_ps(weight[1].0.as_ptr()),
            _mm512_load_ps(weight[2].0.as_ptr()),
            _mm512_load_ps(weight[3].0.as_ptr()),
        )
    };
    let rows = scratch.rows.as_mut_ptr().cast::<f32>();
    walk_schedule(
        &scratch.free,
        &scratch.span,
        (w, h),
        sweeps,
        |colour, other, y, even, lanes| {
            // SAFETY: rows `colour * h + y` and `other * h + y ± 1` are among the 2h rows
            // (1 ≤ y ≤ h − 2), each 16 aligned `f32`.
            unsafe {
                let at = |c: usize, r: usize| rows.add((c * h + r) * 16);
                let old = _mm512_load_ps(at(colour, y));
                let beside = _mm512_load_ps(at(other, y));
                let north = _mm512_load_ps(at(other, y + 1));
                let south = _mm512_load_ps(at(other, y - 1));
                let (east, west) = if even {
                    (beside, _mm512_permutexvar_ps(west_of_even, beside))
                } else {
                    (_mm512_permutexvar_ps(east_of_odd, beside), beside)
                };
                // The scalar kernel's operation order.
                let sum = _mm512_add_ps(
                    _mm512_add_ps(_mm512_mul_ps(we, east), _mm512_mul_ps(ww, west)),
                    _mm512_mul_ps(wn, north),
                );
                let new = _mm512_mask_add_ps(old, lanes, sum, _mm512_mul_ps(ws, south));
                _mm512_store_ps(at(colour, y), new);
            }
        },
    );
}

/// [`sweep_fields`] built for AVX2, one map per 8-lane vector: each map's rows of one colour
/// fill a vector alone, the fixed and out-of-span lanes are kept by a blend, and the maps go
/// one after the other. The same operations in the same order, so the same bits.
///
/// # Safety
///
/// The CPU must have AVX2; every map must be `w × h` with `3 ≤ w ≤ MAX_WIDTH`, `h ≥ 3`, and
/// `sweeps ≤ MAX_SWEEPS`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn sweep_fields_avx2(
    scratch: &mut SkewedScratch,
    maps: &mut [(&mut Field<f64>, &Bias)],
    (w, h): (usize, usize),
    sweeps: usize,
) {
    assert!(fits(w, h, sweeps) && maps.iter().all(|(f, _)| f.width() == w && f.height() == h));
    if sweeps > 0 {
        scratch.build_span(w, h, sweeps);
    }
    for (field, bias) in maps.iter_mut() {
        scratch.rows8.clear();
        scratch.rows8.resize(2 * h, Row8([0.0; 8]));
        scratch.free.clear();
        scratch.free.resize(2 * h, 0);
        let (p, kinds) = (field.potentials(), field.kinds());
        for y in 0..h {
            for x in 0..w {
                let (cell, row, slot) = place(w, h, 0, x, y);
                // The batch's load: the complement, rounded to `f32`.
                scratch.rows8[row].0[slot] = (1.0 - p[cell]) as f32;
                scratch.free[row] |= u16::from(kinds[cell] == CellKind::Free) << slot;
            }
        }
        if sweeps > 0 {
            let b = bias.weights();
            let weight = [b.east, b.west, b.north, b.south].map(|v| v as f32);
            // SAFETY: the CPU has AVX2 (the caller's promise); the rows and span fit w × h.
            unsafe { sweep_rows_avx2(scratch, weight, (w, h), sweeps) };
        }
        let p = field.potentials_mut();
        for y in 0..h {
            for x in 0..w {
                let (cell, row, slot) = place(w, h, 0, x, y);
                p[cell] = 1.0 - f64::from(scratch.rows8[row].0[slot]);
            }
        }
    }
}

/// [`sweep_rows`] for one map in `scratch.rows8`, built for AVX2.
///
/// # Safety
///
/// The CPU must have AVX2; `scratch` must hold `2h` eight-lane rows and the span table for
/// `(w, h, sweeps)`, `sweeps ≥ 1`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sweep_rows_avx2(
    scratch: &mut SkewedScratch,
    weight: [f32; 4],
    (w, h): (usize, usize),
    sweeps: usize,
) {
    use std::arch::x86_64::*;

    assert!(
        scratch.rows8.len() == 2 * h
            && scratch.free.len() == 2 * h
            && scratch.span_key == (w, h, sweeps)
            && sweeps >= 1
    );
    let west_of_even = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
    let east_of_odd = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7);
    let lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    let [we, ww, wn, ws] = weight.map(|v| _mm256_set1_ps(v));
    let rows = scratch.rows8.as_mut_ptr().cast::<f32>();
    walk_schedule(
        &scratch.free,
        &scratch.span,
        (w, h),
        sweeps,
        |colour, other, y, even, lanes| {
            // SAFETY: rows `colour * h + y` and `other * h + y ± 1` are among the 2h rows
            // (1 ≤ y ≤ h − 2), each 8 aligned `f32`.
            unsafe {
                let at = |c: usize, r: usize| rows.add((c * h + r) * 8);
                let old = _mm256_load_ps(at(colour, y));
                let beside = _mm256_load_ps(at(other, y));
                let north = _mm256_load_ps(at(other, y + 1));
                let south = _mm256_load_ps(at(other, y - 1));
                let (east, west) = if even {
                    (beside, _mm256_permutevar8x32_ps(beside, west_of_even))
                } else {
                    (_mm256_permutevar8x32_ps(beside, east_of_odd), beside)
                };
                // The scalar kernel's operation order.
                let new = _mm256_add_ps(
                    _mm256_add_ps(
                        _mm256_add_ps(_mm256_mul_ps(we, east), _mm256_mul_ps(ww, west)),
                        _mm256_mul_ps(wn, north),
                    ),
                    _mm256_mul_ps(ws, south),
                );
                // Only the first map's half of the span table applies: `free` has no higher bits.
                let bits = _mm256_and_si256(_mm256_set1_epi32(i32::from(lanes)), lane_bit);
                let keep = _mm256_castsi256_ps(_mm256_cmpeq_epi32(bits, lane_bit));
                // The blend in assembly: written as a blend and a store, it becomes a masked
                // store, which the next time's loads of the row cannot take their values from
                // (about five times slower in the kernels bench).
                let out: __m256;
                std::arch::asm!(
                    "vblendvps {out}, {old}, {new}, {keep}",
                    out = lateout(ymm_reg) out,
                    old = in(ymm_reg) old,
                    new = in(ymm_reg) new,
                    keep = in(ymm_reg) keep,
                    options(pure, nomem, nostack, preserves_flags),
                );
                _mm256_store_ps(at(colour, y), out);
            }
        },
    );
}
