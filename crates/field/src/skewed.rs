//! Lexicographic Gauss–Seidel on one or two small maps per vector, in a time-skewed order
//! (digest 000 Eq. 5.1, the update [`crate::relax()`] makes; DESIGN "Performance").
//!
//! [`crate::FieldBatchF32`] puts one map in each SIMD lane, which leaves most lanes idle when a
//! crowd has only a few agents: a batch of two maps sweeps a whole 8-lane vector, and each
//! update waits for its west neighbour. This kernel spreads the cells of each map over the
//! lanes instead.
//!
//! In the lexicographic order (x fastest, then y, both increasing), the update of cell
//! (x, y) in sweep s reads its west and south neighbours from sweep s and its east and north
//! neighbours from sweep s − 1. Give that update the time `2s + x + y`: every neighbour it
//! reads was written at time `2s + x + y − 1`, and none is written again before time
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
//! Built for AVX-512F only; callers fall back to the lane-per-map kernel elsewhere.

#![allow(unsafe_code)]

/// Widest map this kernel sweeps: a row of one colour must fit eight lanes.
pub(crate) const MAX_WIDTH: usize = 16;

/// One 16-lane row of a pair of maps, aligned for vector loads and stores.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Row([f32; 16]);

/// Buffers the kernel reuses from call to call.
#[derive(Debug, Clone, Default)]
pub(crate) struct SkewedScratch {
    /// Colour 0 rows, then colour 1 rows, of the pair being swept.
    rows: Vec<Row>,
    /// Free cells of each row in `rows`, one bit per lane.
    free: Vec<u16>,
    /// For `j = t − y + height`: the lanes of row y updated at time t (both maps' halves).
    span: Vec<u16>,
    /// `(width, height, sweeps)` the span table was built for.
    span_key: (usize, usize, usize),
}

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
}

/// Whether [`sweep_pairs`] can run here on maps of `width × height`.
pub(crate) fn available(width: usize, height: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        (3..=MAX_WIDTH).contains(&width)
            && height >= 3
            && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (width, height);
        false
    }
}

/// `sweeps` lexicographic Gauss–Seidel sweeps of lanes `0..used` of a lane-per-map batch of
/// `width × height` maps (`potential` and `free` cell by cell, `weights` east, west, north,
/// south per lane), two maps at a time in the time-skewed order. Lanes at or above `used`
/// come out as they went in.
///
/// # Safety
///
/// The CPU must have AVX-512F; `3 ≤ width ≤ MAX_WIDTH`, `height ≥ 3`, `used ≤ L`, and
/// `potential` and `free` must hold `width × height` cells.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sweep_pairs<const L: usize>(
    scratch: &mut SkewedScratch,
    potential: &mut [[f32; L]],
    free: &[[u32; L]],
    weights: &[[f32; L]; 4],
    (width, height): (usize, usize),
    used: usize,
    sweeps: usize,
) {
    use std::arch::x86_64::*;

    let (w, h) = (width, height);
    assert!(
        (3..=MAX_WIDTH).contains(&w)
            && h >= 3
            && used <= L
            && potential.len() == w * h
            && free.len() == w * h
    );
    if sweeps == 0 || used == 0 {
        return;
    }
    scratch.build_span(w, h, sweeps);
    let last = 2 * (sweeps - 1);
    let times = last + (w - 2) + (h - 2);
    // West neighbour one lane down (rows whose cells sit at even x), east one lane up (odd x),
    // within each map's half.
    let west_of_even = _mm512_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6, 8, 8, 9, 10, 11, 12, 13, 14);
    let east_of_odd = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7, 9, 10, 11, 12, 13, 14, 15, 15);
    for first in (0..used).step_by(2) {
        let lanes = [first, (first + 1).min(L - 1)];
        let pair = first + 1 < used;
        // Rows of each colour: cell x of row y has colour (x + y) mod 2 and sits in lane x / 2.
        scratch.rows.clear();
        scratch.rows.resize(2 * h, Row([0.0; 16]));
        scratch.free.clear();
        scratch.free.resize(2 * h, 0);
        for y in 0..h {
            for x in 0..w {
                let (cell, row) = (y * w + x, ((x + y) & 1) * h + y);
                for (half, &lane) in lanes.iter().enumerate().take(1 + usize::from(pair)) {
                    let slot = half * 8 + x / 2;
                    scratch.rows[row].0[slot] = potential[cell][lane];
                    if free[cell][lane] != 0 {
                        scratch.free[row] |= 1 << slot;
                    }
                }
            }
        }
        let mut weight = [Row([0.0; 16]); 4];
        for (k, row) in weight.iter_mut().enumerate() {
            for (half, &lane) in lanes.iter().enumerate() {
                row.0[half * 8..half * 8 + 8].fill(weights[k][lane]);
            }
        }
        // SAFETY: `Row` is 64-byte aligned, as the aligned loads and stores need.
        let (we, ww, wn, ws) = unsafe {
            (
                _mm512_load_ps(weight[0].0.as_ptr()),
                _mm512_load_ps(weight[1].0.as_ptr()),
                _mm512_load_ps(weight[2].0.as_ptr()),
                _mm512_load_ps(weight[3].0.as_ptr()),
            )
        };
        let rows = scratch.rows.as_mut_ptr().cast::<f32>();
        let (free_rows, span) = (&scratch.free, &scratch.span);
        for t in 2..=times {
            let (colour, other) = (t & 1, 1 - (t & 1));
            for y in 1..h - 1 {
                let updated = free_rows[colour * h + y] & span[t + h - y];
                if updated == 0 {
                    continue;
                }
                // SAFETY: rows `colour * h + y` and `other * h + y ± 1` are among the 2h
                // rows (1 ≤ y ≤ h − 2), each 16 aligned `f32`.
                unsafe {
                    let at = |c: usize, r: usize| rows.add((c * h + r) * 16);
                    let old = _mm512_load_ps(at(colour, y));
                    let beside = _mm512_load_ps(at(other, y));
                    let north = _mm512_load_ps(at(other, y + 1));
                    let south = _mm512_load_ps(at(other, y - 1));
                    // This row's cells sit at x ≡ t + y (mod 2).
                    let (east, west) = if (t + y) & 1 == 0 {
                        (beside, _mm512_permutexvar_ps(west_of_even, beside))
                    } else {
                        (_mm512_permutexvar_ps(east_of_odd, beside), beside)
                    };
                    // The scalar kernel's operation order.
                    let sum = _mm512_add_ps(
                        _mm512_add_ps(_mm512_mul_ps(we, east), _mm512_mul_ps(ww, west)),
                        _mm512_mul_ps(wn, north),
                    );
                    let new = _mm512_mask_add_ps(old, updated, sum, _mm512_mul_ps(ws, south));
                    _mm512_store_ps(at(colour, y), new);
                }
            }
        }
        for y in 0..h {
            for x in 0..w {
                let (cell, row) = (y * w + x, ((x + y) & 1) * h + y);
                for (half, &lane) in lanes.iter().enumerate().take(1 + usize::from(pair)) {
                    potential[cell][lane] = scratch.rows[row].0[half * 8 + x / 2];
                }
            }
        }
    }
}
