//! The next step's disc rasters, counted while this step's moves are committed (docs/performance.md,
//! *Counting the next step's discs during the commit*; seed 000 §3.2 stamps other agents as discs of the summed radii).
//!
//! The commit walks the agents in id order, one at a time, and once it has passed an agent
//! that agent's position and radius are final for the step. Another pool thread takes the
//! final agents as they come, 32 at a time ([`DiscFeed`]), and counts their discs into a
//! [`DiscCounter`] per raster key the step's planners used ([`DiscCounters`]), so that the
//! next step starts with its disc rasters counted instead of counting them before its first
//! job (crowds of more than 64 planners stepped on a pool of two threads or more; see
//! `Crowd::commit`). A step run whole commits while it plans, and its committing thread
//! counts into the same [`DiscCounters`] as it goes (`pipeline`). The rasters are used only where
//! nothing changed in between: the next snapshot must read, bit for bit, what was counted, and the
//! static rasters must be the same ([`Crowd`](super::Crowd) checks both); otherwise they are
//! counted as usual. Either way each raster is the one [`DiscRaster::build`] gives for that
//! snapshot.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use glam::DVec2;

use super::{DiscKey, RasterKey, Snapshot};
use crate::disc_raster::{DiscCounter, DiscRaster};
use crate::static_raster::StaticRaster;

/// Disc rasters counted ahead for the next step, and what they were counted from.
#[derive(Debug, Clone)]
pub(super) struct CountedAhead {
    /// Every agent slot as the commit left it.
    pub(super) snapshot: Snapshot,
    /// The crowd's static-raster generation they were laid over.
    pub(super) generation: u64,
    /// One raster per key (keys whose count `build` would not have laid over the statics are
    /// missing).
    pub(super) rasters: Vec<(RasterKey, DiscRaster)>,
}

impl CountedAhead {
    /// Whether `snapshot` reads exactly what was counted.
    pub(super) fn counted(&self, snapshot: &[Option<(DVec2, f64)>]) -> bool {
        let bits =
            |s: &Option<(DVec2, f64)>| s.map(|(q, r)| (q.x.to_bits(), q.y.to_bits(), r.to_bits()));
        self.snapshot.len() == snapshot.len()
            && self
                .snapshot
                .iter()
                .zip(snapshot)
                .all(|(a, b)| bits(a) == bits(b))
    }
}

/// The next step's disc rasters being counted, agent slot by agent slot in id order, each
/// slot as the commit left it; what the commit's join ([`DiscFeed::count`]) and the pipelined
/// step's committer (`pipeline`) both count into.
pub(super) struct DiscCounters {
    counters: Vec<(RasterKey, DiscCounter)>,
    snapshot: Snapshot,
    generation: u64,
}

impl DiscCounters {
    /// A counter for each of `keys` (key, local cell size, radius, windows' reach) with a static raster in
    /// `statics` of static-raster generation `generation`, for `slots` agent slots; `None`
    /// where no key has one (there is nothing to count ahead).
    pub(super) fn new(
        keys: &[DiscKey],
        statics: &[(RasterKey, StaticRaster)],
        generation: u64,
        slots: usize,
    ) -> Option<Self> {
        let counters: Vec<(RasterKey, DiscCounter)> = keys
            .iter()
            .filter_map(|&(key, cell, radius, window)| {
                let (_, s) = statics.iter().find(|(k, _)| *k == key)?;
                Some((key, DiscCounter::new(cell, radius, s, window)?))
            })
            .collect();
        (!counters.is_empty()).then(|| Self {
            counters,
            snapshot: Vec::with_capacity(slots),
            generation,
        })
    }

    /// Counts the next agent slot's final state.
    pub(super) fn count(&mut self, slot: Option<(DVec2, f64)>) {
        if let Some((q, r)) = slot {
            for (_, counter) in &mut self.counters {
                counter.add(q, r);
            }
        }
        self.snapshot.push(slot);
    }

    /// Slots counted so far.
    pub(super) fn counted(&self) -> usize {
        self.snapshot.len()
    }

    /// The rasters of every slot counted.
    pub(super) fn finish(self) -> CountedAhead {
        CountedAhead {
            snapshot: self.snapshot,
            generation: self.generation,
            rasters: self
                .counters
                .into_iter()
                .filter_map(|(key, c)| Some((key, c.finish()?)))
                .collect(),
        }
    }
}

/// Slots handed over at a time (see [`DiscFeed::publish`]).
const HANDOVER: usize = 32;

/// Final agent slots handed from the committing thread to the counting one, in id order.
pub(super) struct DiscFeed {
    /// Position x and y, radius (bits), and 1 for an agent, 0 for an empty slot.
    slots: Vec<[AtomicU64; 4]>,
    /// Slots `0..ready` are final.
    ready: AtomicUsize,
    /// Set when the committing side is done, normally or not: a counter still short of every
    /// slot then gives up instead of waiting.
    closed: AtomicBool,
}

impl DiscFeed {
    /// A feed for `len` agent slots.
    pub(super) fn new(len: usize) -> Self {
        Self {
            slots: (0..len)
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
            ready: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Hands over slot `i` (the next in order) as final. Slots become visible to the counter
    /// [`HANDOVER`] at a time (and the rest at [`Self::finish`]): a counter reading each slot
    /// as it is written would pull the cache lines of the slots and of the count of final ones
    /// back and forth between the two cores at every agent.
    pub(super) fn publish(&self, i: usize, slot: Option<(DVec2, f64)>) {
        let [x, y, r, present] = &self.slots[i];
        if let Some((q, radius)) = slot {
            x.store(q.x.to_bits(), Ordering::Relaxed);
            y.store(q.y.to_bits(), Ordering::Relaxed);
            r.store(radius.to_bits(), Ordering::Relaxed);
            present.store(1, Ordering::Relaxed);
        }
        if (i + 1).is_multiple_of(HANDOVER) {
            self.ready.store(i + 1, Ordering::Release);
        }
    }

    /// Every slot is final (all were published).
    pub(super) fn finish(&self) {
        self.ready.store(self.slots.len(), Ordering::Release);
    }

    /// Slot count.
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The committing side is done (see [`Closer`]).
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    fn slot(&self, i: usize) -> Option<(DVec2, f64)> {
        let [x, y, r, present] = &self.slots[i];
        (present.load(Ordering::Relaxed) == 1).then(|| {
            let f = |a: &AtomicU64| f64::from_bits(a.load(Ordering::Relaxed));
            (DVec2::new(f(x), f(y)), f(r))
        })
    }

    /// Counts every slot's disc, waiting for each to be handed over, into a raster per key
    /// of `keys` (key, local cell size, radius, windows' reach) that has a static raster in `statics`.
    /// `None` when the committing side closed before handing over every slot.
    pub(super) fn count(
        &self,
        keys: &[DiscKey],
        statics: &[(RasterKey, StaticRaster)],
        generation: u64,
    ) -> Option<CountedAhead> {
        let mut counters = DiscCounters::new(keys, statics, generation, self.len())?;
        while counters.counted() < self.len() {
            // Read `closed` before `ready`: once closed, `ready` holds its last value.
            let closed = self.closed.load(Ordering::Acquire);
            let ready = self.ready.load(Ordering::Acquire);
            if ready == counters.counted() {
                if closed {
                    return None;
                }
                std::hint::spin_loop();
                continue;
            }
            for i in counters.counted()..ready {
                counters.count(self.slot(i));
            }
        }
        Some(counters.finish())
    }
}

/// Closes a [`DiscFeed`] when dropped, so that the counting side never waits on a commit that
/// ended early (a panic).
pub(super) struct Closer<'a>(pub(super) &'a DiscFeed);

impl Drop for Closer<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}
