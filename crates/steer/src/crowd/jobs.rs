//! How a step's planning is split into jobs and shared between threads: job sizes fitted to
//! the relaxation kernels' batches, the buffers each job reuses, the tuner that decides whether
//! a small crowd's step is worth sharing, and the optional spin that keeps pool threads awake
//! between steps. None of it changes a result: every lane is relaxed as if alone, and plans are
//! committed in id order.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crowdfield_field::{
    BATCH_LANES, BATCH_LANES_F32, Bias, Field, FieldBatch, FieldBatchF32, SKEWED_MAX_MAPS,
};

use super::{Agent, Neighbours, Prepared};
use crate::local_map::LocalPrecision;

/// Chunk buffers kept from step to step: each job of a step takes one (or starts a new one) and
/// gives it back when it ends, so the batches are not allocated, nor their pages first touched,
/// anew for every job of every step. What a job finds in a buffer never changes its results:
/// a batch is loaded, and its lanes beyond the chunk cleared, before it is swept.
#[derive(Debug, Default)]
pub(super) struct ScratchPool(std::sync::Mutex<Vec<ChunkScratch>>);

impl Clone for ScratchPool {
    /// A clone starts with no buffers (they hold nothing a step reads).
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl ScratchPool {
    /// A buffer from the pool, or a new one, that goes back to the pool when dropped.
    pub(super) fn take(&self) -> Pooled<'_> {
        let scratch = self
            .0
            .lock()
            .ok()
            .and_then(|mut free| free.pop())
            .unwrap_or_default();
        Pooled {
            scratch,
            pool: self,
        }
    }

    /// Buffers waiting in the pool.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.lock().map_or(0, |free| free.len())
    }
}

/// A [`ChunkScratch`] taken from a [`ScratchPool`].
pub(super) struct Pooled<'a> {
    pub(super) scratch: ChunkScratch,
    pool: &'a ScratchPool,
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Ok(mut free) = self.pool.0.lock() {
            free.push(std::mem::take(&mut self.scratch));
        }
    }
}

/// Planner counts up to which [`ShareTuner`] measures whether sharing a step's planning between
/// threads pays; larger crowds always share.
pub(super) const TUNED_PLANNERS: usize = 64;

/// Tuned steps after which [`ShareTuner`] times the way it does not prefer again.
const TUNED_RECHECK: u32 = 64;

/// Steps in a row [`ShareTuner`] times a way for, so that most of them see the pool as that way
/// leaves it (a thread that was not used for a while sleeps, and the first shared step pays its
/// wake-up).
const TUNED_BURST: u32 = 4;

/// Steps of each way [`ShareTuner`] keeps (the lower median of them decides).
const TUNED_SAMPLES: usize = 8;

/// Decides, for crowds of up to [`TUNED_PLANNERS`] planners, whether a step's planning is shared
/// between the pool's threads or run on the stepping thread alone, by timing both.
///
/// Sharing costs a pool thread's wake-up and hand-over, which the work it takes may or may not
/// repay: that depends on the machine and on what the host does between steps (a thread that
/// slept through the host's frame wakes slower than one that just finished the last step). The
/// crowd times its fused sensing, relaxation and decision phase both ways and keeps a simple
/// model: alone, a step costs `c` per planner; shared, its largest job's share `f` of that plus
/// a hand-over cost `o`. `c` is the lower median of the last [`TUNED_SAMPLES`] steps alone (per
/// planner), `o` the same of the shared steps' time less `f·P·c`. A step of P planners is shared
/// when `P·c·(1 − f) > o`. Both ways are timed for [`TUNED_BURST`] steps first, and the way not
/// taken again for as many every [`TUNED_RECHECK`] tuned steps; the first step of each burst,
/// which pays for the switch (a pool thread that slept, caches the other thread filled), is not
/// kept. How agents fall into jobs changes no result (see
/// [`Crowd::sense_relax_decide`](super::Crowd::sense_relax_decide)), so neither does this
/// choice: only the speed depends on it.
#[derive(Debug, Clone, Default)]
pub(super) struct ShareTuner {
    /// Seconds per planner of the last steps alone.
    pub(super) alone: Recent<f64>,
    /// The last shared steps: seconds, and the largest job's planners.
    pub(super) shared: Recent<(f64, f64)>,
    /// Tuned steps so far.
    steps: u32,
    /// Steps left of a burst of the way not preferred.
    burst: u32,
    /// The way the last tuned step went (a step that switched ways is not kept).
    last: Option<bool>,
    /// Tests: always share (`Some(true)`) or never.
    #[cfg(test)]
    pub(super) forced: Option<bool>,
}

/// The last [`TUNED_SAMPLES`] values of something timed, oldest overwritten first.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Recent<T> {
    values: [T; TUNED_SAMPLES],
    /// Where the next value goes.
    next: usize,
    len: usize,
}

impl<T: Copy> Recent<T> {
    pub(super) fn push(&mut self, v: T) {
        self.values[self.next] = v;
        self.next = (self.next + 1) % TUNED_SAMPLES;
        self.len = (self.len + 1).min(TUNED_SAMPLES);
    }

    pub(super) fn kept(&self) -> &[T] {
        &self.values[..self.len]
    }
}

/// The lower median of the first [`TUNED_SAMPLES`] of `values` (a slow outlier, such as a
/// wake-up, moves it least), `None` for none.
fn lower_median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut sorted = [0.0; TUNED_SAMPLES];
    let mut n = 0;
    for (slot, v) in sorted.iter_mut().zip(values) {
        *slot = v;
        n += 1;
    }
    let sorted = &mut sorted[..n];
    sorted.sort_unstable_by(f64::total_cmp);
    (n > 0).then(|| sorted[(n - 1) / 2])
}

impl ShareTuner {
    /// Whether `planners` planners share the step on `threads` threads, `sizes` being their
    /// jobs when shared ([`job_sizes`]): always where there is more than one job and more than
    /// [`TUNED_PLANNERS`] planners, never with one job or one thread, and as measured between.
    pub(super) fn choose(&mut self, planners: usize, threads: usize, sizes: &[usize]) -> bool {
        if threads < 2 || sizes.len() < 2 {
            return false;
        }
        if planners > TUNED_PLANNERS {
            return true;
        }
        #[cfg(test)]
        if let Some(share) = self.forced {
            return share;
        }
        self.steps = self.steps.wrapping_add(1);
        // A burst's first step switched ways and is not kept.
        let timed = |n: usize| n + 1 >= TUNED_BURST as usize;
        if !timed(self.shared.len) {
            return true;
        }
        if !timed(self.alone.len) {
            return false;
        }
        let prefer = self.prefers_sharing(planners, sizes);
        if self.burst > 0 {
            self.burst -= 1;
            !prefer
        } else if self.steps.is_multiple_of(TUNED_RECHECK) {
            self.burst = TUNED_BURST - 1;
            !prefer
        } else {
            prefer
        }
    }

    /// The model's answer (see the type's doc).
    fn prefers_sharing(&self, planners: usize, sizes: &[usize]) -> bool {
        let Some(c) = lower_median(self.alone.kept().iter().copied()) else {
            return true;
        };
        let overheads = self
            .shared
            .kept()
            .iter()
            .map(|&(t, largest)| t - largest * c);
        let o = lower_median(overheads).unwrap_or(0.0);
        let largest = sizes.iter().copied().max().unwrap_or(planners) as f64;
        (planners as f64 - largest) * c > o
    }

    /// Records a step of `planners` planners (`sizes` their jobs when shared) that took `took`,
    /// shared or not; steps [`Self::choose`] does not tune are left out.
    pub(super) fn record(
        &mut self,
        planners: usize,
        threads: usize,
        sizes: &[usize],
        shared: bool,
        took: Duration,
    ) {
        if threads < 2 || planners > TUNED_PLANNERS || sizes.len() < 2 {
            return;
        }
        // The first step of a way after the other pays for the switch (a pool thread that slept,
        // or caches the other thread filled): not what that way costs in a run of steps.
        if self.last.replace(shared) != Some(shared) {
            return;
        }
        let t = took.as_secs_f64();
        if shared {
            let largest = sizes.iter().copied().max().unwrap_or(planners) as f64;
            self.shared.push((t, largest));
        } else {
            self.alone.push(t / planners as f64);
        }
    }
}

/// Pool threads kept busy-waiting between steps (see
/// [`Crowd::set_worker_spin`](super::Crowd::set_worker_spin)).
#[derive(Debug, Default)]
pub(super) struct WarmWorkers {
    pub(super) spin: Duration,
    /// Bumped as a step hands out its jobs: the waits begun before it end.
    generation: Arc<AtomicU64>,
    /// Threads waiting now (read by tests).
    pub(super) waiting: Arc<AtomicU64>,
}

impl Clone for WarmWorkers {
    /// A clone keeps the duration; threads kept awake for the original wait for it alone.
    fn clone(&self) -> Self {
        Self {
            spin: self.spin,
            generation: Arc::default(),
            waiting: Arc::default(),
        }
    }
}

impl Drop for WarmWorkers {
    /// A crowd dropped between steps has no next step: its waiting threads stop now, whatever
    /// the spin (with `Duration::MAX` they would wait for ever).
    fn drop(&mut self) {
        self.release();
    }
}

impl WarmWorkers {
    /// Ends the waits of earlier steps.
    pub(super) fn release(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Keeps up to `count` threads of the current pool, other than this one, awake until the
    /// next [`Self::release`] or for `spin`, whichever comes first.
    pub(super) fn keep(&self, count: usize) {
        let threads = rayon::current_num_threads();
        if self.spin.is_zero() || count == 0 || threads < 2 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        let deadline = Instant::now().checked_add(self.spin);
        let spawner = rayon::current_thread_index();
        for _ in 0..count.min(threads - 1) {
            let current = Arc::clone(&self.generation);
            let waiting = Arc::clone(&self.waiting);
            rayon::spawn(move || {
                // Taken back by the thread that queued it: that thread is the next step's.
                if spawner.is_some() && rayon::current_thread_index() == spawner {
                    return;
                }
                waiting.fetch_add(1, Ordering::AcqRel);
                while current.load(Ordering::Acquire) == generation
                    && deadline.is_none_or(|d| Instant::now() < d)
                {
                    // Whatever else the pool has queued runs here meanwhile.
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        std::hint::spin_loop();
                    }
                }
                waiting.fetch_sub(1, Ordering::AcqRel);
            });
        }
    }
}

/// One fused job's buffers: neighbour lists and the batches it last relaxed with.
#[derive(Default, Debug, Clone)]
pub(super) struct ChunkScratch {
    pub(super) neighbours: Neighbours,
    f32_batch: Option<FieldBatchF32>,
    f64_batch: Option<FieldBatch>,
}

impl ChunkScratch {
    /// Relaxes `group` (one key, at most [`BATCH_LANES_F32`] agents; f64 maps go
    /// [`BATCH_LANES`] at a time) in place.
    pub(super) fn relax(&mut self, group: &mut [(RelaxKey, &mut Agent, Bias)]) {
        let Some(&((side, sweeps, precision), _, _)) = group.first() else {
            return;
        };
        match precision {
            LocalPrecision::F32Complement => {
                let batch = match &mut self.f32_batch {
                    Some(b) if b.size() == (side, side) => b,
                    slot => slot.insert(FieldBatchF32::new(side, side)),
                };
                // A local map's fixed cells are obstacles (1) and goals (0), whose complements
                // are exact: storing whole maps gives the masked store's bits. A few maps skip
                // the lanes (the time-skewed kernel reads and writes them directly).
                let mut maps: Vec<(&mut Field<f64>, &Bias)> = group
                    .iter_mut()
                    .map(|(_, agent, bias)| (agent.local.field_mut(), &*bias))
                    .collect();
                batch.relax_whole(&mut maps, sweeps);
            }
            LocalPrecision::F64 => {
                let batch = match &mut self.f64_batch {
                    Some(b) if b.size() == (side, side) => b,
                    slot => slot.insert(FieldBatch::new(side, side)),
                };
                for lanes in group.chunks_mut(BATCH_LANES) {
                    batch.clear();
                    for (lane, (_, agent, bias)) in lanes.iter().enumerate() {
                        batch.load(lane, agent.local.field(), bias);
                    }
                    batch.relax(sweeps);
                    for (lane, (_, agent, _)) in lanes.iter_mut().enumerate() {
                        batch.store(lane, agent.local.field_mut());
                    }
                }
            }
        }
    }
}

/// Lanes of each parallel job for `count` agents on `threads` threads, in order, at most
/// [`BATCH_LANES_F32`] a job. Where there are full batches for every thread (and at least two),
/// the jobs are full batches and the rest one job, or two shared in pairs where it holds more
/// than [`SKEWED_MAX_MAPS`] agents (200 agents go 32 × 6 + 8, 250 go 32 × 7 + 14 + 12): a full
/// batch sweeps a map for about half what the time-skewed kernel takes, and on AVX-512 17–24
/// maps cost a full batch's sweep. Otherwise at least one job per thread while there are 8-lane
/// vectors' worth of agents to share, and, while jobs are few, a multiple of the thread count;
/// where every job then holds at most [`SKEWED_MAX_MAPS`] (16) agents, the jobs the time-skewed
/// kernel sweeps two maps at a time, the agents are shared out in pairs as evenly as possible (24
/// agents on two threads go 12 + 12, 30 go 16 + 14), otherwise in whole 8-lane vectors, the last
/// job taking the remainder (40 go 24 + 16); even shares never put more vectors in the largest job
/// than whole vectors would. Results never depend on it: every lane is relaxed as if alone.
pub(super) fn job_sizes(count: usize, threads: usize) -> Vec<usize> {
    const VECTOR: usize = 8;
    let vectors = count.div_ceil(VECTOR);
    if vectors == 0 {
        return Vec::new();
    }
    let threads = threads.max(1);
    let full = count / BATCH_LANES_F32;
    if full >= threads.max(2) {
        let rest = count % BATCH_LANES_F32;
        let mut sizes = vec![BATCH_LANES_F32; full];
        if rest > SKEWED_MAX_MAPS {
            let first = rest.div_ceil(2).next_multiple_of(2);
            sizes.extend([first, rest - first]);
        } else if rest > 0 {
            sizes.push(rest);
        }
        return sizes;
    }
    let mut jobs = vectors
        .div_ceil(BATCH_LANES_F32 / VECTOR)
        .max(threads.min(vectors));
    if jobs < 2 * threads {
        jobs = jobs.next_multiple_of(threads).min(vectors);
    }
    // Jobs small enough for the time-skewed kernel (which sweeps maps in pairs, not whole
    // vectors) share the agents evenly in pairs.
    let pairs = count.div_ceil(2);
    if jobs > 1 && pairs.div_ceil(jobs) * 2 <= SKEWED_MAX_MAPS {
        let mut left = count;
        return (0..jobs)
            .map(|j| {
                let take = ((pairs / jobs + usize::from(j < pairs % jobs)) * 2).min(left);
                left -= take;
                take
            })
            .filter(|&n| n > 0)
            .collect();
    }
    let mut left = count;
    (0..jobs)
        .map(|j| {
            let lanes = (vectors / jobs + usize::from(j < vectors % jobs)) * VECTOR;
            let take = lanes.min(left);
            left -= take;
            take
        })
        .collect()
}

/// `items` cut into consecutive slices of `sizes` (which must not sum past its length).
pub(super) fn split_into<'a, T>(mut items: &'a mut [T], sizes: &[usize]) -> Vec<&'a mut [T]> {
    sizes
        .iter()
        .map(|&n| {
            let (head, tail) = std::mem::take(&mut items).split_at_mut(n);
            items = tail;
            head
        })
        .collect()
}

/// Agents whose local maps relax in one batch: side, sweeps and precision.
pub(super) type RelaxKey = (usize, usize, LocalPrecision);

/// The agents prepared for relaxation, with their keys and biases, sorted by key (agents of
/// one key keep their order).
pub(super) fn to_relax<'a, 'b>(
    agents: impl Iterator<Item = (&'a mut Agent, &'b Prepared)>,
) -> Vec<(RelaxKey, &'a mut Agent, Bias)> {
    let mut relaxing: Vec<(RelaxKey, &mut Agent, Bias)> = agents
        .filter_map(|(agent, p)| match p {
            Prepared::Relax { bias, .. } => {
                let s = agent.params.local_map;
                Some(((s.side, s.sweeps, s.precision), agent, *bias))
            }
            _ => None,
        })
        .collect();
    // Usually one key for all: nothing to sort.
    if !relaxing.is_sorted_by_key(|(key, _, _)| *key) {
        relaxing.sort_by_key(|(key, _, _)| *key);
    }
    relaxing
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Jobs cover every agent once, in order, at most a full batch each, one per thread
        /// at least while vectors last. With full batches for every thread (two at least),
        /// every job but the last one or two is a full batch, and those share the rest, each
        /// within reach of the time-skewed kernel (the first even, the two within three).
        /// Otherwise: jobs of at most `SKEWED_MAX_MAPS` agents go in pairs (all but the last
        /// even, sizes within two of each other); larger ones in whole vectors whose counts
        /// differ by one at most; and the largest job holds no more vectors than the
        /// whole-vector share would give it.
        #[test]
        fn jobs_share_the_agents_evenly(count in 0usize..2_000, threads in 1usize..9) {
            let sizes = job_sizes(count, threads);
            let vectors = count.div_ceil(8);
            proptest::prop_assert_eq!(sizes.iter().sum::<usize>(), count);
            proptest::prop_assert!(sizes.len() >= threads.min(vectors));
            proptest::prop_assert!(sizes.iter().all(|&n| n > 0 && n <= BATCH_LANES_F32));
            let full = count / BATCH_LANES_F32;
            if full >= threads.max(2) {
                let (batches, rest) = sizes.split_at(full);
                proptest::prop_assert!(batches.iter().all(|&n| n == BATCH_LANES_F32), "{:?}", sizes);
                proptest::prop_assert!(rest.len() <= 2, "{:?}", sizes);
                proptest::prop_assert!(rest.iter().all(|&n| n <= SKEWED_MAX_MAPS), "{:?}", sizes);
                if let [a, b] = rest {
                    proptest::prop_assert!(a % 2 == 0 && a >= b && a - b <= 3, "{:?}", sizes);
                }
                return Ok(());
            }
            let (lo, hi) = (sizes.iter().min().copied(), sizes.iter().max().copied());
            let paired = sizes.len() > 1 && hi.is_some_and(|hi| hi <= SKEWED_MAX_MAPS);
            if let Some((_, most)) = sizes.split_last() {
                let unit = if paired { 2 } else { 8 };
                proptest::prop_assert!(most.iter().all(|n| n % unit == 0), "{:?}", sizes);
            }
            if paired {
                let most = &sizes[..sizes.len() - 1];
                let (mlo, mhi) = (most.iter().min(), most.iter().max());
                if let (Some(mlo), Some(mhi)) = (mlo, mhi) {
                    proptest::prop_assert!(mhi - mlo <= 2, "{:?}", sizes);
                }
            } else {
                let jobs_vectors: Vec<usize> = sizes.iter().map(|n| n.div_ceil(8)).collect();
                let (lo, hi) = (jobs_vectors.iter().min(), jobs_vectors.iter().max());
                if let (Some(lo), Some(hi)) = (lo, hi) {
                    proptest::prop_assert!(hi - lo <= 1, "{:?}", sizes);
                }
            }
            if let (Some(_), Some(hi)) = (lo, hi) {
                // Whole vectors over the same number of jobs, as evenly as they go.
                let whole = vectors.div_ceil(sizes.len());
                proptest::prop_assert!(hi.div_ceil(8) <= whole, "{:?}", sizes);
            }
        }
    }

    #[test]
    fn small_crowds_are_split_between_threads() {
        assert_eq!(job_sizes(2, 2), vec![2]);
        assert_eq!(job_sizes(24, 2), vec![12, 12]);
        assert_eq!(job_sizes(30, 2), vec![16, 14]);
        assert_eq!(job_sizes(40, 2), vec![24, 16]);
        assert_eq!(job_sizes(70, 2), vec![32, 32, 6]);
        assert_eq!(job_sizes(90, 4), vec![24, 24, 24, 18]);
        assert_eq!(job_sizes(13, 2), vec![8, 5]);
        assert_eq!(job_sizes(200, 2), vec![32, 32, 32, 32, 32, 32, 8]);
        assert_eq!(job_sizes(250, 2), vec![32, 32, 32, 32, 32, 32, 32, 14, 12]);
        assert_eq!(job_sizes(24, 1), vec![24]);
        assert_eq!(job_sizes(40, 1), vec![24, 16]);
        assert_eq!(job_sizes(0, 4), Vec::<usize>::new());
    }

    /// The share tuner times both ways first (a burst each, shared first), then shares where
    /// sharing measured faster and keeps the step on one thread where the hand-over cost more
    /// than it saved, timing the other way again in bursts; its model carries over to other
    /// crowd sizes; crowds above its range always share, and one job or one thread never.
    #[test]
    fn the_share_tuner_follows_the_times() {
        let us = Duration::from_micros;
        let sizes = job_sizes;
        let steps = 400u32;
        let run = |alone_us: u64, shared_us: u64| -> (Vec<bool>, ShareTuner) {
            let mut tuner = ShareTuner::default();
            let ways = (0..steps)
                .map(|_| {
                    let share = tuner.choose(24, 2, &sizes(24, 2));
                    let took = us(if share { shared_us } else { alone_us });
                    tuner.record(24, 2, &sizes(24, 2), share, took);
                    share
                })
                .collect();
            (ways, tuner)
        };
        let burst = TUNED_BURST as usize;
        let first: Vec<bool> = (0..2 * burst).map(|k| k < burst).collect();
        // 24 planners go 12 + 12: 1 µs a planner alone; shared, 12 µs and a 2 or 20 µs hand-over.
        let (cheap, tuner) = run(24, 14);
        let (costly, _) = run(24, 32);
        assert_eq!(&cheap[..2 * burst], &first[..]);
        assert_eq!(&costly[..2 * burst], &first[..]);
        // Bursts of the other way start at every multiple of the recheck period.
        let rechecked = (steps / TUNED_RECHECK) as usize * burst;
        let shared = |ways: &[bool]| ways.iter().filter(|&&s| s).count();
        let learnt = steps as usize - 2 * burst;
        assert_eq!(shared(&cheap[2 * burst..]), learnt - rechecked);
        assert_eq!(shared(&costly[2 * burst..]), rechecked);
        for k in (TUNED_RECHECK as usize..steps as usize).step_by(TUNED_RECHECK as usize) {
            assert!(
                cheap[k - 1..k - 1 + burst].iter().all(|&s| !s),
                "a burst alone from step {k}"
            );
        }
        // With the 2 µs hand-over, 16 planners (8 + 8: 8 µs saved) and 40 (24 + 16: 16 µs
        // saved) share too; a 10 µs one keeps 16 alone and still shares 24 and 40.
        assert!(tuner.prefers_sharing(16, &sizes(16, 2)));
        assert!(tuner.prefers_sharing(40, &sizes(40, 2)));
        let mut slower = ShareTuner::default();
        for shared in [false, true] {
            for _ in 0..TUNED_SAMPLES {
                slower.record(
                    24,
                    2,
                    &sizes(24, 2),
                    shared,
                    us(if shared { 22 } else { 24 }),
                );
            }
        }
        assert!(!slower.prefers_sharing(16, &sizes(16, 2)));
        assert!(slower.prefers_sharing(24, &sizes(24, 2)));
        assert!(slower.prefers_sharing(40, &sizes(40, 2)));
        // A step that switched ways is not kept, so alternating steps teach nothing.
        let mut switching = ShareTuner::default();
        for k in 0..2 * TUNED_SAMPLES {
            switching.record(24, 2, &sizes(24, 2), k % 2 == 1, us(24));
        }
        assert_eq!((switching.alone.len, switching.shared.len), (0, 0));
        // Outside its range, and nothing learnt on one thread or above the range.
        let mut tuner = ShareTuner::default();
        for _ in 0..2 * TUNED_SAMPLES {
            tuner.record(40, 1, &sizes(40, 1), false, us(40));
            tuner.record(100, 2, &sizes(100, 2), false, us(100));
        }
        assert_eq!(tuner.alone.len, 0);
        let above = TUNED_PLANNERS + 1;
        assert!(tuner.choose(above, 2, &sizes(above, 2)));
        assert!(!tuner.choose(2, 2, &sizes(2, 2)), "one job");
        assert!(!tuner.choose(24, 1, &sizes(24, 1)), "one thread");
    }

    /// The tuner keeps the last [`TUNED_SAMPLES`] times of a way, and its lower median is the
    /// middle one, or the lower of the two middle ones.
    #[test]
    fn recent_times_keep_the_last_ones_and_their_lower_median() {
        let mut recent = Recent::<f64>::default();
        assert_eq!(lower_median(recent.kept().iter().copied()), None);
        for v in 1..=3 {
            recent.push(f64::from(v));
        }
        assert_eq!(lower_median(recent.kept().iter().copied()), Some(2.0));
        for v in 4..=20 {
            recent.push(f64::from(v));
        }
        let mut kept = recent.kept().to_vec();
        kept.sort_by(f64::total_cmp);
        let last: Vec<f64> = (13..=20).map(f64::from).collect();
        assert_eq!(kept, last);
        assert_eq!(lower_median(recent.kept().iter().copied()), Some(16.0));
    }
}
