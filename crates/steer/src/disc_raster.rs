//! Other agents' discs, grown by one radius, rasterised once per step on the world lattice the
//! local maps are aligned to (seed 000 §3.2: agents stamped as discs of the summed radii; docs/performance.md,
//! *Rasters of discs and statics*).
//!
//! A local map's cell k covers `[k·c, (k + 1)·c)` of the lattice of its cell size c, and a disc
//! stamped into it covers the cells whose centres lie within the summed radii of the disc's
//! centre. Which lattice cells those are does not depend on whose window they fall in, only on
//! the stamping agent's radius. So every agent's disc of the step's snapshot is counted once
//! into a lattice grid per (cell size, radius), and each window reads its update zone out of
//! it, less its own disc, instead of finding its neighbours and stamping their discs one by one.

use crowdfield_field::floor_i32;
use glam::{DVec2, IVec2};
use rayon::prelude::*;

use crate::static_raster::StaticRaster;

/// How many discs of one step, grown by one radius, cover each cell of a lattice.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DiscRaster {
    cell: f64,
    /// Radius every disc is grown by (the stamping agents' own radius).
    inflation: f64,
    /// Lattice cell of grid cell (0, 0).
    first: IVec2,
    width: usize,
    height: usize,
    counts: Vec<u16>,
    /// One bit per cell, set where the count is not zero: `words` words per row, the last
    /// always zero, so a run of up to 64 bits from any column reads two words.
    covered: Vec<u64>,
    words: usize,
    /// Whether the static raster of the same lattice and radius is counted in (as
    /// [`STATIC`]), so that one read gives both.
    statics: bool,
    /// How far the windows that read it reach from their agents' centres (metres): where the
    /// statics are counted in, the raster holds them that far round every disc.
    window: f64,
}

/// The count a cell covered by a static shape starts from: it reads as more than one disc, so
/// the cell is always stamped, whatever discs add to it.
pub(crate) const STATIC: u16 = 0x8000;

/// Lattice cells a raster may span at most (a few tens of megabytes); a crowd spread wider
/// stamps its discs one by one.
const MAX_CELLS: usize = 1 << 24;

/// Discs from which on a raster is counted by bands of rows in parallel, where the pool has
/// more than one thread. Since the crowd wakes a pool thread as a shared step starts
/// (`Crowd::wake_pool`), that thread is up by the time the rasters are counted; on two threads
/// bands from 64 discs made the crowds of 200–500 faster than from 512, on one thread they only
/// cost (docs/performance.md, *Measurements behind tuning constants*).
const PARALLEL_DISCS: usize = 64;

/// Grid rows per band of parallel counting.
const BAND_ROWS: usize = 16;

impl DiscRaster {
    /// Counts the discs `(centre, radius)` of `discs` (absent entries skipped), each grown by
    /// `inflation`, on the lattice of `cell`; discs with a non-finite centre or a non-finite or
    /// negative grown radius are left out. `None` when no disc is left, or the grid would
    /// exceed [`MAX_CELLS`].
    ///
    /// With `statics` (the static raster of the same cell size and radius), the counts are laid
    /// over its cells and its covered cells start from [`STATIC`], when every disc lies inside
    /// its frame: over the part of the frame within `window` metres of the discs (the farthest
    /// a window reading the raster reaches from its agent's centre; see [`Cropped`]), when that
    /// part is not much larger than the crowd needs.
    pub(crate) fn build(
        discs: &[Option<(DVec2, f64)>],
        cell: f64,
        inflation: f64,
        statics: Option<&StaticRaster>,
        window: f64,
    ) -> Option<Self> {
        // A disc counts when its centre and its grown radius are finite and not negative.
        let finite =
            |q: DVec2, r: f64| q.is_finite() && (r + inflation).is_finite() && r + inflation >= 0.0;
        let (mut lo, mut hi, mut count) = (DVec2::INFINITY, DVec2::NEG_INFINITY, 0usize);
        for &(q, r) in discs.iter().flatten() {
            if finite(q, r) {
                let reach = DVec2::splat(r + inflation);
                lo = lo.min(q - reach);
                hi = hi.max(q + reach);
                count += 1;
            }
        }
        if !(lo.is_finite() && hi.is_finite() && cell > 0.0 && inflation.is_finite()) {
            return None;
        }
        let to_cell = |v: f64| (v / cell).floor();
        let (x0, y0) = (to_cell(lo.x) - 1.0, to_cell(lo.y) - 1.0);
        let (x1, y1) = (to_cell(hi.x) + 1.0, to_cell(hi.y) + 1.0);
        let (w, h) = (x1 - x0 + 1.0, y1 - y0 + 1.0);
        let in_range = |v: f64| v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX);
        // A crowd spread thin over a large world would have each step clear a grid of many
        // cells per disc (a 400 m world of 100 walkers: 600,000 cells, a fresh mapping and
        // page faults each step): its agents stamp their few neighbours one by one instead,
        // the same cells.
        let affordable = w * h <= (64 * count + 65_536) as f64;
        if !([x0, x1, y0, y1].into_iter().all(in_range) && w * h <= MAX_CELLS as f64 && affordable)
        {
            return None;
        }
        let grown: Vec<(DVec2, f64)> = discs
            .iter()
            .flatten()
            .filter(|(q, r)| finite(*q, *r))
            .map(|&(q, r)| (q, r + inflation))
            .collect();
        let (first, last) = (
            IVec2::new(x0 as i32, y0 as i32),
            IVec2::new(x1 as i32, y1 as i32),
        );
        // Laid over the static frame when it holds every disc (with the cell of margin), over
        // the part of it the windows read, when that costs at most about 64 cells per disc to
        // start from.
        let statics = statics.and_then(|s| {
            let crop = Cropped::new(s.frame(), first, last, cell, window)?;
            crop.affordable(grown.len()).then_some((s, crop))
        });
        let (first, width, height) = match statics {
            Some((_, crop)) => crop.frame,
            None => (first, w as usize, h as usize),
        };
        let mut raster = Self {
            cell,
            inflation,
            first,
            width,
            height,
            counts: Vec::new(),
            covered: Vec::new(),
            words: bit_words(width),
            statics: statics.is_some(),
            window,
        };
        let words = raster.words;
        // Started from the static cells' counts and bits where laid over them; rows no disc
        // reaches keep them as they are.
        let (mut counts, mut covered) = match statics {
            Some((s, crop)) => crop.copy(s.frame(), s.counts(), s.bits()),
            None => (vec![0u16; width * height], vec![0u64; words * height]),
        };
        // Bands of rows, each counted from the discs whose box meets it; in parallel for many
        // discs (counts are sums: the result does not depend on how the work is split).
        let band_rows = if grown.len() < PARALLEL_DISCS || rayon::current_num_threads() < 2 {
            height
        } else {
            BAND_ROWS
        };
        let mut in_band: Vec<Vec<(DVec2, f64)>> = vec![Vec::new(); height.div_ceil(band_rows)];
        for &(q, reach) in &grown {
            let (lo, hi) = raster.rows_of(q, reach);
            for discs in &mut in_band[lo / band_rows..=hi / band_rows] {
                discs.push((q, reach));
            }
        }
        // Counts only grow while discs are added, so a covered cell's bit is set as its run is
        // counted (the static cells' bits came with their counts).
        let count_band =
            |band: usize, rows: &mut [u16], bits: &mut [u64], discs: &[(DVec2, f64)]| {
                let first = band * band_rows;
                let span = first..first + rows.len() / width;
                for &(q, reach) in discs {
                    raster.add_rows(rows, bits, span.clone(), q, reach);
                }
            };
        if in_band.len() == 1 {
            counts
                .chunks_mut(band_rows * width)
                .zip(covered.chunks_mut(band_rows * words))
                .zip(&in_band)
                .enumerate()
                .for_each(|(band, ((rows, bits), discs))| count_band(band, rows, bits, discs));
        } else {
            counts
                .par_chunks_mut(band_rows * width)
                .zip(covered.par_chunks_mut(band_rows * words))
                .zip(&in_band)
                .enumerate()
                .for_each(|(band, ((rows, bits), discs))| count_band(band, rows, bits, discs));
        }
        raster.counts = counts;
        raster.covered = covered;
        Some(raster)
    }

    /// Whether the static shapes are counted in (see [`Self::build`]).
    pub(crate) fn has_statics(&self) -> bool {
        self.statics
    }

    /// How far the windows that read it reach (the `window` of [`Self::build`]).
    pub(crate) fn window(&self) -> f64 {
        self.window
    }

    /// The clamped grid rows `lo..=hi` a disc of radius `reach` around `q` may count in.
    fn rows_of(&self, q: DVec2, reach: f64) -> (usize, usize) {
        let (lo, hi) = self.cell_box(q, reach);
        (lo.y as usize, hi.y as usize)
    }

    /// The clamped grid cells (inclusive corners) a disc may count in: its box with one cell
    /// of margin; `covers` decides.
    fn cell_box(&self, q: DVec2, reach: f64) -> (IVec2, IVec2) {
        let cell = |v: DVec2| IVec2::new(floor_i32(v.x), floor_i32(v.y));
        let lo = cell((q - DVec2::splat(reach)) / self.cell) - IVec2::ONE;
        let hi = cell((q + DVec2::splat(reach)) / self.cell) + IVec2::ONE;
        let lo = (lo - self.first).max(IVec2::ZERO);
        let hi = (hi - self.first).min(IVec2::new(self.width as i32 - 1, self.height as i32 - 1));
        (lo, hi)
    }

    /// Counts one disc into `band`, the counts of grid rows `rows` (row `rows.start` first),
    /// and sets the bits of the cells it covers in `bits`, the same rows' words.
    fn add_rows(
        &self,
        band: &mut [u16],
        bits: &mut [u64],
        rows: std::ops::Range<usize>,
        q: DVec2,
        reach: f64,
    ) {
        let (lo, hi) = self.cell_box(q, reach);
        let y0 = (lo.y as usize).clamp(rows.start, rows.end);
        let y1 = (hi.y as usize + 1).clamp(y0, rows.end);
        let span = (hi.x - lo.x + 1).max(0) as usize;
        let r2 = reach * reach;
        for y in y0..y1 {
            let line = &mut band[(y - rows.start) * self.width..][..self.width];
            let words = &mut bits[(y - rows.start) * self.words..][..self.words];
            // A row's covered cells are one run: `covers` compares a distance that only falls,
            // then only grows, along the row (each rounded step is monotone), so only the run's
            // ends are needed and the cells between are counted without a test.
            let (a, b) = if span <= 64 {
                // The usual box: every cell's test at once, without branches, as a mask (the
                // same arithmetic as `covers`, so the same cells).
                let dy = self.offset(self.first.y + y as i32, q.y);
                let dy2 = dy * dy;
                // Adding dx² ≥ 0 never rounds below dy²: a row this far misses the disc.
                if dy2 > r2 {
                    continue;
                }
                let mut mask = 0u64;
                for k in 0..span {
                    let dx = self.offset(self.first.x + lo.x + k as i32, q.x);
                    mask |= u64::from(dx * dx + dy2 <= r2) << k;
                }
                if mask == 0 {
                    continue;
                }
                (
                    lo.x + mask.trailing_zeros() as i32,
                    lo.x + 63 - mask.leading_zeros() as i32,
                )
            } else {
                let covers = |x: i32| self.covers(self.first + IVec2::new(x, y as i32), q, reach);
                let Some(a) = (lo.x..=hi.x).find(|&x| covers(x)) else {
                    continue;
                };
                (a, (a..=hi.x).rev().find(|&x| covers(x)).unwrap_or(a))
            };
            for c in &mut line[a as usize..=b as usize] {
                *c = c.saturating_add(1);
            }
            set_bits(words, a as usize, b as usize);
        }
    }

    /// Whether the centre of lattice cell `g` lies within `reach` of `q`: the test every count
    /// was made with, so a window can take its own disc back out exactly.
    #[inline]
    pub(crate) fn covers(&self, g: IVec2, q: DVec2, reach: f64) -> bool {
        let dx = self.offset(g.x, q.x);
        let dy = self.offset(g.y, q.y);
        dx * dx + dy * dy <= reach * reach
    }

    /// Bit `k` set where a disc of radius `reach` around `q` covers lattice cell
    /// `(x0 + k, y)`, for `k` in `0..span` (cells past the 64th are not looked at):
    /// [`Self::covers`] for a run of cells at once, with the same arithmetic.
    #[inline]
    pub(crate) fn covered_run(&self, x0: i32, y: i32, span: usize, q: DVec2, reach: f64) -> u64 {
        let dy = self.offset(y, q.y);
        let dy2 = dy * dy;
        let r2 = reach * reach;
        if dy2 > r2 {
            return 0;
        }
        let mut mask = 0u64;
        for k in 0..span.min(64) {
            let dx = self.offset(x0 + k as i32, q.x);
            mask |= u64::from(dx * dx + dy2 <= r2) << k;
        }
        mask
    }

    /// How far the centre of lattice column (or row) `g` lies from `q` along that axis: the
    /// one computation behind [`Self::covers`] and the row masks of [`Self::add_rows`], so both
    /// accept the same cells.
    #[inline]
    fn offset(&self, g: i32, q: f64) -> f64 {
        (f64::from(g) + 0.5) * self.cell - q
    }

    /// Bit `k` of `out[j]` set where some disc covers lattice cell `start + (k, j)`, `k` in
    /// `0..len`, for every row `j` of `out`, when `len ≤ 64` and all those cells lie in the
    /// grid; false (and `out` unspecified) otherwise.
    pub(crate) fn covered_rows(&self, start: IVec2, len: usize, out: &mut [u64]) -> bool {
        let d = start - self.first;
        let inside = (1..=64).contains(&len)
            && d.x >= 0
            && d.y >= 0
            && d.y as usize + out.len() <= self.height
            && d.x as usize + len <= self.width;
        if !inside {
            return false;
        }
        let (x, y) = (d.x as usize, d.y as usize);
        let (word, shift, mask) = (x / 64, x % 64, u64::MAX >> (64 - len));
        for (j, bits) in out.iter_mut().enumerate() {
            let row = &self.covered[(y + j) * self.words + word..][..2];
            let pair = u128::from(row[0]) | (u128::from(row[1]) << 64);
            *bits = (pair >> shift) as u64 & mask;
        }
        true
    }

    /// How many discs cover lattice cell `g`; 0 outside the grid.
    pub(crate) fn count(&self, g: IVec2) -> u16 {
        let d = g - self.first;
        if d.x < 0 || d.y < 0 || d.x as usize >= self.width || d.y as usize >= self.height {
            return 0;
        }
        self.counts[d.y as usize * self.width + d.x as usize]
    }

    /// The lattice's cell size.
    pub(crate) fn cell(&self) -> f64 {
        self.cell
    }

    /// The radius the discs are grown by.
    pub(crate) fn inflation(&self) -> f64 {
        self.inflation
    }
}

/// A [`DiscRaster`] laid over a static raster and counted one disc at a time, as the discs
/// become known: the crowd counts the next step's discs while it commits this step's moves,
/// each agent as soon as its move is final (`Crowd::commit`). [`Self::finish`] gives exactly
/// the raster [`DiscRaster::build`] gives for the same discs over the same static raster, or
/// nothing where `build` would not lay the counts over it (a disc past the frame, too few
/// discs for the frame's size, none at all), in which case the caller builds as usual.
#[derive(Debug, Clone)]
pub(crate) struct DiscCounter {
    raster: DiscRaster,
    /// The frame's last cell.
    last: IVec2,
    /// Discs counted.
    discs: usize,
    /// False once a disc fell outside the frame: `build` would not have used it.
    fits: bool,
    /// The cells of the counted discs' joint box, a cell of margin added (empty before the
    /// first): what `build` crops the frame round.
    joint: (IVec2, IVec2),
    /// How far windows reach from their agents' centres (see [`DiscRaster::build`]).
    window: f64,
}

impl DiscCounter {
    /// An empty count over `statics` for discs grown by `inflation` on the lattice of `cell`,
    /// read by windows that reach `window` metres from their agents' centres; `None` where
    /// `build` could never lay counts over that frame.
    pub(crate) fn new(
        cell: f64,
        inflation: f64,
        statics: &StaticRaster,
        window: f64,
    ) -> Option<Self> {
        let (first, width, height) = statics.frame();
        if !(cell > 0.0 && inflation.is_finite()) || width * height > MAX_CELLS {
            return None;
        }
        Some(Self {
            raster: DiscRaster {
                cell,
                inflation,
                first,
                width,
                height,
                counts: statics.counts().to_vec(),
                covered: statics.bits().to_vec(),
                words: bit_words(width),
                statics: true,
                window,
            },
            last: first + IVec2::new(width as i32 - 1, height as i32 - 1),
            discs: 0,
            fits: true,
            joint: (IVec2::MAX, IVec2::MIN),
            window,
        })
    }

    /// Counts the disc `(q, r)`, grown by the counter's inflation; a disc `build` would leave
    /// out (non-finite, negative grown radius) is left out here too.
    pub(crate) fn add(&mut self, q: DVec2, r: f64) {
        let reach = r + self.raster.inflation;
        if !(self.fits && q.is_finite() && reach.is_finite() && reach >= 0.0) {
            return;
        }
        // `build` frames the discs by the cells of their joint box, a cell of margin added,
        // and lays them over the statics when that box lies in the frame: as the cell of a
        // coordinate only grows with it, the joint box lies in the frame when every disc's
        // own box does. The same arithmetic, disc by disc.
        let cell = |v: f64| (v / self.raster.cell).floor();
        let (lo, hi) = (q - DVec2::splat(reach), q + DVec2::splat(reach));
        let (x0, y0) = (cell(lo.x) - 1.0, cell(lo.y) - 1.0);
        let (x1, y1) = (cell(hi.x) + 1.0, cell(hi.y) + 1.0);
        let (first, last) = (self.raster.first.as_dvec2(), self.last.as_dvec2());
        if !(x0 >= first.x && y0 >= first.y && x1 <= last.x && y1 <= last.y) {
            self.fits = false;
            return;
        }
        // Inside the frame, so within i32.
        let (lo, hi) = (
            IVec2::new(x0 as i32, y0 as i32),
            IVec2::new(x1 as i32, y1 as i32),
        );
        self.joint = (self.joint.0.min(lo), self.joint.1.max(hi));
        let mut counts = std::mem::take(&mut self.raster.counts);
        let mut covered = std::mem::take(&mut self.raster.covered);
        self.raster
            .add_rows(&mut counts, &mut covered, 0..self.raster.height, q, reach);
        self.raster.counts = counts;
        self.raster.covered = covered;
        self.discs += 1;
    }

    /// The raster, where `build` would have laid the same discs over the same statics, cropped
    /// as `build` crops it.
    pub(crate) fn finish(self) -> Option<DiscRaster> {
        if !(self.fits && self.discs > 0) {
            return None;
        }
        let r = self.raster;
        let frame = (r.first, r.width, r.height);
        let crop = Cropped::new(frame, self.joint.0, self.joint.1, r.cell, self.window)?;
        if !crop.affordable(self.discs) {
            return None;
        }
        if crop.frame == frame {
            // A crowd spread over the whole frame keeps all of it: nothing to copy.
            return Some(r);
        }
        let (counts, covered) = crop.copy(frame, &r.counts, &r.covered);
        let (first, width, height) = crop.frame;
        Some(DiscRaster {
            first,
            width,
            height,
            counts,
            covered,
            words: bit_words(width),
            ..r
        })
    }
}

/// The part of a static raster's frame a disc raster laid over it keeps: the rows and columns
/// within the windows' reach of the discs, the columns widened to whole words of the frame's
/// bits so that rows of bits copy without shifts.
///
/// Every window that reads a disc raster belongs to an agent whose disc is counted in it, so
/// the cells it reads lie within its reach of some disc. Laying the discs over the whole frame
/// (the world and a window's reach round it) copied a frame of up to 65,536 cells each step
/// for a crowd of any size: two walkers in a 100 m square world stepped a third slower than in
/// a 20 m × 6 m one, memmove taking 31 % of the samples.
#[derive(Debug, Clone, Copy)]
struct Cropped {
    /// Lattice cell of the kept part's cell (0, 0), its width and height.
    frame: (IVec2, usize, usize),
}

impl Cropped {
    /// The part of `frame` (first cell, width, height) within `window` metres (on the lattice
    /// of `cell`) of the cells `first..=last` (the discs' joint box, a cell of margin added);
    /// `None` where that box is not inside the frame.
    fn new(
        (sf, sw, sh): (IVec2, usize, usize),
        first: IVec2,
        last: IVec2,
        cell: f64,
        window: f64,
    ) -> Option<Self> {
        let sl = sf + IVec2::new(sw as i32 - 1, sh as i32 - 1);
        if !(first.cmpge(sf).all() && last.cmple(sl).all() && first.cmple(last).all()) {
            return None;
        }
        // A cell of margin beyond the reach; the whole frame where the reach is not finite or
        // negative (nonsense, and keeping everything is always right).
        let reach = (window / cell).ceil() + 1.0;
        let margin = if reach.is_finite() && reach >= 0.0 {
            reach.min(f64::from(i32::MAX / 4)) as i32
        } else {
            i32::MAX / 4
        };
        let lo = first.saturating_sub(IVec2::splat(margin)).max(sf);
        let hi = last.saturating_add(IVec2::splat(margin)).min(sl);
        // Columns from the start of the frame's word that holds the first one; whole rows
        // where that keeps half of them or more (rows then copy as one block).
        let x0 = sf.x + (lo.x - sf.x) / 64 * 64;
        let (x0, width) = match (hi.x - x0 + 1) as usize {
            w if 2 * w < sw => (x0, w),
            _ => (sf.x, sw),
        };
        Some(Self {
            frame: (IVec2::new(x0, lo.y), width, (hi.y - lo.y + 1) as usize),
        })
    }

    /// Whether starting from the kept cells costs at most about 64 cells for each of `discs`.
    fn affordable(&self, discs: usize) -> bool {
        let (_, w, h) = self.frame;
        w * h <= 64 * discs + 65_536
    }

    /// The kept part of `counts` and `bits` (a raster's, over `frame`, [`bit_words`] per row
    /// of bits): its counts row by row, and its bits with a zero word after each row's and
    /// none set past its last column.
    fn copy(
        &self,
        (sf, sw, _): (IVec2, usize, usize),
        counts: &[u16],
        bits: &[u64],
    ) -> (Vec<u16>, Vec<u64>) {
        let (first, width, height) = self.frame;
        let (dx, dy) = ((first.x - sf.x) as usize, (first.y - sf.y) as usize);
        let (src_words, words) = (bit_words(sw), bit_words(width));
        if width == sw {
            // Whole rows: one block each (the frame's rows of bits already end in a zero
            // word, with no bit set past the last column).
            return (
                counts[dy * sw..(dy + height) * sw].to_vec(),
                bits[dy * words..(dy + height) * words].to_vec(),
            );
        }
        let used = width.div_ceil(64);
        let tail = if width.is_multiple_of(64) {
            u64::MAX
        } else {
            u64::MAX >> (64 - width % 64)
        };
        let mut kept_counts = Vec::with_capacity(width * height);
        let mut kept_bits = Vec::with_capacity(words * height);
        for y in dy..dy + height {
            kept_counts.extend_from_slice(&counts[y * sw + dx..][..width]);
            let row = &bits[y * src_words + dx / 64..][..used];
            kept_bits.extend_from_slice(row);
            if let Some(last) = kept_bits.last_mut() {
                *last &= tail;
            }
            kept_bits.push(0);
        }
        (kept_counts, kept_bits)
    }
}

/// Sets bits `a..=b` of a row of words (bit `k` of word `w` is cell `64·w + k`).
fn set_bits(words: &mut [u64], a: usize, b: usize) {
    let (wa, wb) = (a / 64, b / 64);
    let (from, to) = (u64::MAX << (a % 64), u64::MAX >> (63 - b % 64));
    if wa == wb {
        words[wa] |= from & to;
    } else {
        words[wa] |= from;
        words[wa + 1..wb].fill(u64::MAX);
        words[wb] |= to;
    }
}

/// Words of bits per grid row of `width` cells: one per 64 cells, and one more, always zero, so
/// that a run of up to 64 bits from any column reads two words.
pub(crate) fn bit_words(width: usize) -> usize {
    width.div_ceil(64) + 1
}

/// Bit `k` set where `cells[k]` is not zero (at most 64 cells): the compares into bytes of 0
/// or 1, eight of which one multiplication gathers into a byte of bits (`0x0102…80` moves byte
/// `i`'s low bit to bit `56 + i` without carries, for bytes of 0 and 1).
pub(crate) fn nonzero_bits(cells: &[u16]) -> u64 {
    let mut bytes = [0u8; 64];
    for (b, &c) in bytes.iter_mut().zip(cells) {
        *b = u8::from(c != 0);
    }
    bytes.chunks_exact(8).enumerate().fold(0, |w, (j, eight)| {
        let v = u64::from_le_bytes(eight.try_into().expect("chunks of eight"));
        w | ((v.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * j))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disc as the tests draw it: centre, radius, and one chance in 17 of an absent slot.
    fn disc() -> impl proptest::strategy::Strategy<Value = (f64, f64, f64, u8)> {
        (-10.0f64..30.0, -5.0f64..25.0, 0.1f64..1.0, 0u8..17)
    }

    /// Laid over a large static frame, a few discs keep only the rows and word-aligned columns
    /// within the windows' reach of them: two discs 16 m apart in a 100 m square world with a
    /// wall along its south side keep 106 × 37 of the frame's 230 × 230 cells, from the
    /// frame's second word of columns, with the statics in those cells as the frame has them
    /// and no bit set past the last column (the wall's run on); a window too wide to crop
    /// keeps the whole frame.
    #[test]
    fn discs_over_a_large_frame_keep_the_part_windows_read() {
        let (cell, inflation, reach) = (0.5, 0.25, 7.3);
        let walls = [
            crowdfield_field::Shape::Aabb {
                min: DVec2::new(0.0, 0.0),
                max: DVec2::new(100.0, 1.0),
            },
            crowdfield_field::Shape::Disc {
                centre: DVec2::new(30.0, 8.0),
                radius: 1.0,
            },
        ];
        let statics = StaticRaster::build(
            &walls,
            cell,
            inflation,
            crowdfield_field::Coverage::Touch,
            DVec2::splat(-reach),
            DVec2::splat(100.0 + reach),
        )
        .unwrap();
        let (sf, sw, sh) = statics.frame();
        assert_eq!((sw, sh), (230, 230));
        let discs = [
            Some((DVec2::new(52.0, 3.0), 0.25)),
            Some((DVec2::new(68.0, 3.0), 0.25)),
        ];
        let raster = DiscRaster::build(&discs, cell, inflation, Some(&statics), reach).unwrap();
        assert!(raster.has_statics());
        assert_eq!((raster.width, raster.height), (106, 37));
        assert_eq!(raster.first.x - sf.x, 64, "columns from a word's start");
        for y in 0..raster.height {
            for x in 0..raster.width {
                let g = raster.first + IVec2::new(x as i32, y as i32);
                let d = g - sf;
                let wall = statics.counts()[d.y as usize * sw + d.x as usize];
                let count = raster.count(g);
                assert_eq!(count >= STATIC, wall == STATIC, "cell {g}");
                let bit = raster.covered[y * raster.words + x / 64] >> (x % 64) & 1;
                assert_eq!(bit == 1, count != 0, "bit of cell {g}");
            }
            let row = &raster.covered[y * raster.words..][..raster.words];
            for x in raster.width..64 * raster.words {
                assert_eq!(
                    row[x / 64] >> (x % 64) & 1,
                    0,
                    "row {y}: bit {x} past the end"
                );
            }
        }
        let wide = DiscRaster::build(&discs, cell, inflation, Some(&statics), 200.0).unwrap();
        assert_eq!((wide.first, wide.width, wide.height), (sf, sw, sh));
    }

    /// A crowd spread thin over a large world gets no raster (its agents stamp their few
    /// neighbours one by one): two discs 300 m apart would need about 360,000 cells, beyond 64 a disc
    /// and 65,536; 10 m apart they get one, of 25 × 5 cells.
    #[test]
    fn a_thin_crowd_over_a_large_world_gets_no_raster() {
        let apart = |d: f64| [Some((DVec2::ZERO, 0.25)), Some((DVec2::new(d, d), 0.25))];
        assert!(DiscRaster::build(&apart(300.0), 0.5, 0.25, None, f64::INFINITY).is_none());
        let near = [
            Some((DVec2::ZERO, 0.25)),
            Some((DVec2::new(10.0, 0.0), 0.25)),
        ];
        let raster = DiscRaster::build(&near, 0.5, 0.25, None, f64::INFINITY).unwrap();
        assert_eq!((raster.width, raster.height), (25, 5));
    }

    /// A run sets exactly its own bits, within a word and across words, and keeps the bits
    /// already set.
    #[test]
    fn set_bits_sets_exactly_the_run() {
        for a in 0..200 {
            for b in a..200 {
                let mut words = [0u64; 5];
                words[4] = 1 << 7;
                set_bits(&mut words, a, b);
                for cell in 0..320 {
                    let want = (a..=b).contains(&cell) || cell == 4 * 64 + 7;
                    assert_eq!(
                        words[cell / 64] >> (cell % 64) & 1 == 1,
                        want,
                        "{a}..={b}, {cell}"
                    );
                }
            }
        }
    }

    /// The gathered bits are the cells' nonzero flags, for every pattern of eight and for
    /// runs of every length up to 64.
    #[test]
    fn nonzero_bits_gather_every_pattern() {
        for p in 0u32..256 {
            let cells: Vec<u16> = (0..8).map(|i| ((p >> i) & 1) as u16 * (i + 1)).collect();
            assert_eq!(nonzero_bits(&cells), u64::from(p));
        }
        for len in 0..=64usize {
            let cells: Vec<u16> = (0..len).map(|k| ((k * 7919) % 3) as u16).collect();
            let want = (0..len).fold(0u64, |w, k| w | (u64::from(cells[k] != 0) << k));
            assert_eq!(nonzero_bits(&cells), want, "{len}");
        }
    }

    /// Discs whose box is wider than 64 cells take the cell-by-cell run search, the others the
    /// mask: both count exactly the cells `covers` accepts, side by side in one raster, rims
    /// included.
    #[test]
    fn wide_and_narrow_discs_count_what_covers_accepts() {
        let discs: Vec<Option<(DVec2, f64)>> = vec![
            Some((DVec2::new(3.1, 4.7), 17.3)),
            Some((DVec2::new(-6.25, 2.0), 0.25)),
            Some((DVec2::new(10.0, 10.0), 0.75)),
            Some((DVec2::new(0.0, 0.0), 31.9)),
            Some((DVec2::new(12.3, -8.8), 15.6)),
            // On a cell centre, with cell centres exactly at the grown radius (0.5 and 1.0):
            // the rim counts.
            Some((DVec2::new(0.25, 0.25), 0.25)),
            Some((DVec2::new(5.25, 3.75), 0.75)),
        ];
        let raster = DiscRaster::build(&discs, 0.5, 0.25, None, f64::INFINITY).unwrap();
        let widest = discs
            .iter()
            .flatten()
            .map(|&(q, r)| {
                let (lo, hi) = raster.cell_box(q, r + 0.25);
                hi.x - lo.x + 1
            })
            .max()
            .unwrap();
        assert!(widest > 64, "a disc takes the wide path");
        for y in 0..raster.height {
            for x in 0..raster.width {
                let g = raster.first + IVec2::new(x as i32, y as i32);
                let want = discs
                    .iter()
                    .flatten()
                    .filter(|(q, r)| raster.covers(g, *q, r + 0.25))
                    .count();
                assert_eq!(
                    usize::from(raster.counts[y * raster.width + x]),
                    want,
                    "cell {g}"
                );
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Counted one disc at a time, in any order, the discs give the raster `build` gives
        /// over the same statics, or nothing exactly where `build` does not lay them over the
        /// statics: a disc past the frame (the frame is drawn to cut some), too few discs for
        /// the frame, none at all.
        #[test]
        fn discs_counted_one_by_one_make_the_raster_build_makes(
            drawn in proptest::collection::vec(disc(), 0..40),
            frame_lo in -14.0f64..-2.0,
            frame_hi in 22.0f64..40.0,
            cell in proptest::sample::select(vec![0.5f64, 0.4, 0.8, 0.1]),
            inflation in 0.0f64..0.6,
            reversed: bool,
            odd in proptest::option::of(0usize..40),
            window in proptest::sample::select(vec![0.0f64, 1.0, 3.7, 12.0, f64::INFINITY]),
        ) {
            let mut discs: Vec<Option<(DVec2, f64)>> = drawn
                .iter()
                .map(|&(x, y, r, slot)| (slot != 3).then_some((DVec2::new(x, y), r)))
                .collect();
            // A disc `build` leaves out: not finite, or grown to a negative radius.
            if let Some(k) = odd.filter(|&k| k < discs.len()) {
                discs[k] = Some(match k % 3 {
                    0 => (DVec2::new(f64::NAN, 1.0), 0.3),
                    1 => (DVec2::new(2.0, 3.0), f64::INFINITY),
                    _ => (DVec2::new(2.0, 3.0), -inflation - 0.1),
                });
            }
            let statics = StaticRaster::build(
                &[crowdfield_field::Shape::Disc {
                    centre: DVec2::new(5.0, 5.0),
                    radius: 2.0,
                }],
                cell,
                inflation,
                crowdfield_field::Coverage::Touch,
                DVec2::splat(frame_lo),
                DVec2::splat(frame_hi),
            )
            .unwrap();
            let built = DiscRaster::build(&discs, cell, inflation, Some(&statics), window)
                .filter(DiscRaster::has_statics);
            let mut counter = DiscCounter::new(cell, inflation, &statics, window).unwrap();
            let order: Vec<_> = if reversed {
                discs.iter().rev().flatten().collect()
            } else {
                discs.iter().flatten().collect()
            };
            for &(q, r) in order {
                counter.add(q, r);
            }
            let counted = counter.finish();
            // Compared whole, reported short (a raster prints as thousands of counts).
            let summary = |r: &Option<DiscRaster>| {
                r.as_ref()
                    .map(|r| (r.first, r.width, r.height, r.counts.iter().map(|&c| u64::from(c)).sum::<u64>()))
            };
            proptest::prop_assert!(counted == built, "{:?} against {:?}", summary(&counted), summary(&built));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(8))]

        /// Counted by bands in parallel (many discs) or in one band (few), every cell holds the
        /// number of discs whose grown radius reaches its centre, as `covers` tells, plus
        /// [`STATIC`] where a static raster counted in covers it.
        #[test]
        fn counts_match_a_cell_by_cell_count_serial_and_parallel(
            few in proptest::collection::vec(disc(), 20..60),
            more in proptest::collection::vec(disc(), PARALLEL_DISCS + 100..PARALLEL_DISCS + 300),
            many: bool,
        ) {
            let drawn = if many { &more } else { &few };
            let discs: Vec<Option<(DVec2, f64)>> = drawn
                .iter()
                .map(|&(x, y, r, slot)| (slot != 3).then_some((DVec2::new(x, y), r)))
                .collect();
            proptest::prop_assert_eq!(
                discs.iter().flatten().count() >= PARALLEL_DISCS,
                many,
                "the drawn discs take the path they are meant to"
            );
            let statics = StaticRaster::build(
                &[crowdfield_field::Shape::Disc {
                    centre: DVec2::new(20.0, 15.0),
                    radius: 4.0,
                }],
                0.5,
                0.25,
                crowdfield_field::Coverage::Touch,
                DVec2::splat(-14.0),
                DVec2::splat(42.0),
            )
            .unwrap();
            // Two threads, so that many discs take the parallel bands on any machine.
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            for over in [None, Some(&statics)] {
                let raster = pool
                    .install(|| DiscRaster::build(&discs, 0.5, 0.25, over, f64::INFINITY))
                    .unwrap();
                proptest::prop_assert_eq!(raster.has_statics(), over.is_some());
                proptest::prop_assert!(raster.height > 2 * BAND_ROWS);
                for y in 0..raster.height {
                    for x in 0..raster.width {
                        let g = raster.first + IVec2::new(x as i32, y as i32);
                        let mut want = discs
                            .iter()
                            .flatten()
                            .filter(|(q, r)| raster.covers(g, *q, r + 0.25))
                            .count();
                        if over.is_some_and(|s| s.blocked(g)) {
                            want += usize::from(STATIC);
                        }
                        proptest::prop_assert_eq!(
                            usize::from(raster.counts[y * raster.width + x]),
                            want,
                            "cell {}",
                            g
                        );
                    }
                }
                // Runs of bits from every column, of every length, say count > 0; runs that
                // leave the grid or exceed 64 cells give none.
                let w = raster.width as i32;
                for y in [0, raster.height as i32 / 2, raster.height as i32 - 1] {
                    for x in -1..=w {
                        for len in [0usize, 1, 11, 37, 64, 65] {
                            let start = raster.first + IVec2::new(x, y);
                            let inside = x >= 0 && x + len as i32 <= w;
                            let mut one = [0u64; 1];
                            let bits = raster
                                .covered_rows(start, len, &mut one)
                                .then_some(one[0]);
                            if !(inside && (1..=64).contains(&len)) {
                                proptest::prop_assert_eq!(bits, None);
                                continue;
                            }
                            let want = (0..len).fold(0u64, |b, k| {
                                let covered = raster.count(start + IVec2::new(k as i32, 0)) > 0;
                                b | (u64::from(covered) << k)
                            });
                            proptest::prop_assert_eq!(bits, Some(want), "{} + {}", start, len);
                        }
                    }
                }
                // Every row's bits, in runs of up to 64 cells, say count > 0 (rows no disc
                // reaches keep the static cells' bits).
                for y in 0..raster.height as i32 {
                    for x in (0..w).step_by(40) {
                        let len = (w - x).min(64) as usize;
                        let start = raster.first + IVec2::new(x, y);
                        let mut one = [0u64; 1];
                        proptest::prop_assert!(raster.covered_rows(start, len, &mut one));
                        let want = (0..len).fold(0u64, |b, k| {
                            let covered = raster.count(start + IVec2::new(k as i32, 0)) > 0;
                            b | (u64::from(covered) << k)
                        });
                        proptest::prop_assert_eq!(one[0], want, "row {} from {}", y, x);
                    }
                }
                // A block of rows reads what its rows read one by one, and none when a row
                // leaves the grid.
                let h = raster.height;
                for (y, rows) in [(0, 11), (h / 2, 11), (h - 11, 11), (h - 10, 11), (0, h)] {
                    let start = raster.first + IVec2::new(3, y as i32);
                    let mut block = vec![0u64; rows];
                    let read = raster.covered_rows(start, 11, &mut block);
                    proptest::prop_assert_eq!(read, y + rows <= h);
                    if read {
                        for (j, &bits) in block.iter().enumerate() {
                            let mut one = [0u64; 1];
                            let row = start + IVec2::new(0, j as i32);
                            proptest::prop_assert!(raster.covered_rows(row, 11, &mut one));
                            proptest::prop_assert_eq!(bits, one[0]);
                        }
                    }
                }
            }
        }
    }
}
