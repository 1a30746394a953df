//! A whole step with the commit running alongside the planning (docs/performance.md,
//! *Committing while planning*; the commit itself is seed 000 §3.3's move through the collision guard, in id order).
//!
//! A step run whole ([`Crowd::step`](super::Crowd::step), or `advance_to(Motion)` from its
//! start) has nobody looking between its decision and its motion, so the commit need not wait
//! for every plan. The jobs are handed out in id order from a shared counter; as each is
//! planned, whichever thread holds the commit commits every planned job that follows the last
//! committed one, agent by agent in id order, and counts each committed agent's disc for the
//! next step (see [`ahead`](super::ahead)). Job by job the commit trails the planning instead of
//! following it, and only the last job's agents are committed after the planning ends.
//!
//! Only a thread of a rayon pool can hand jobs out this way and keep the commit. A whole step
//! asked for from elsewhere (the plugin with `fuse_motion` under Bevy's multi-threaded
//! executor, whose systems run on Bevy's threads; a host calling [`Crowd::step`] from its own
//! thread) therefore moves onto a thread of rayon's global pool first, the caller waiting for
//! it as it would for the step's parallel work anyway: one hand-over a step instead of one per
//! parallel pass. Steps run phase by phase from outside a pool stay where they are: a hop for
//! each phase cost more than it saved (docs/performance.md, *Two threads*).
//!
//! Every agent gets exactly what the serial commit gives it: agents are committed in the same
//! order against the same discs (those not yet committed stand where the snapshot has them),
//! and the collision guard looks as far as the longest move any planner may make (its
//! `max_step`) instead of the step's longest planned move, which only adds candidates it then
//! rejects, visited in the same order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use glam::DVec2;

use super::ahead::DiscCounters;
use super::guard::{GuardScratch, Obstacles};
use super::jobs::{job_sizes, split_into};
use super::plan::World;
use super::{
    Agent, CommitWorld, Crowd, Plan, Snapshot, StepPhase, StepReport, commit_agent, disc_keys,
    plan_job,
};

/// A job's agent slots, in id order.
type Slots<'s, 'a> = &'s mut [(usize, &'a mut Option<Agent>)];

/// A planned job: its slots and each agent's index and plan, in the same order.
type Planned<'s, 'a> = (Slots<'s, 'a>, Vec<(usize, Option<Plan>)>);

/// The commit's state, held by one thread at a time.
struct Committer {
    /// The next job to commit.
    next_job: usize,
    /// The next agent slot whose final state is to be counted.
    next_slot: usize,
    /// Discs as committed so far (the snapshot's for agents not yet committed).
    committed: Snapshot,
    guard: GuardScratch,
    report: StepReport,
    /// The next step's disc rasters, made at the first commit (copying the static rasters
    /// while the other threads plan); `Some(None)` where there is nothing to count ahead.
    counters: Option<Option<DiscCounters>>,
}

impl Committer {
    /// Counts the next slot's final state (`make` the counters at the first).
    fn count(&mut self, slot: Option<(DVec2, f64)>, make: impl FnOnce() -> Option<DiscCounters>) {
        if let Some(counters) = self.counters.get_or_insert_with(make) {
            counters.count(slot);
        }
        self.next_slot += 1;
    }
}

impl Crowd {
    /// Whether the step about to sense should run whole through [`Self::plan_and_commit`]: a
    /// crowd of more than [`AHEAD_PLANNERS`](super::AHEAD_PLANNERS) planners (whose steps are
    /// always shared) stepped from a pool thread with another thread in the pool.
    pub(super) fn pipelines(&self) -> bool {
        rayon::current_thread_index().is_some() && self.pipelinable()
    }

    /// More than [`AHEAD_PLANNERS`](super::AHEAD_PLANNERS) planners, and another thread in the
    /// pool the step's work goes to (rayon's global pool from outside any pool).
    fn pipelinable(&self) -> bool {
        // `Preset::slides` guards every move before the second try of the shortened ones,
        // which needs every plan first.
        !self.settings.preset.slides()
            && rayon::current_num_threads() > 1
            && self.agents.iter().flatten().filter(|a| a.plans()).count() > super::AHEAD_PLANNERS
    }

    /// Whether [`Crowd::advance_to`]`(phase)` should move onto a thread of rayon's global pool
    /// (see the module): asked from outside any pool for the rest of a step whose planning has
    /// not begun, by a crowd whose whole steps commit while they plan there.
    pub(super) fn hops_into_pool(&self, phase: StepPhase) -> bool {
        phase == StepPhase::Motion
            && self
                .in_flight
                .as_ref()
                .is_none_or(|f| f.done == StepPhase::Guidance)
            && rayon::current_thread_index().is_none()
            && self.pipelinable()
    }

    /// Sensing to motion of a step whose guidance ran, with the commit trailing the planning
    /// (see the module). Changes no result.
    pub(super) fn plan_and_commit(&mut self) -> StepReport {
        let (snapshot, hash, discs) = self.sensing_start();
        let keys = disc_keys(&discs);
        self.ensure_shape_grid();
        let flight = *self.in_flight.take().expect("guidance ran");
        // The longest move any planner may make: a unit heading times its `max_step` times a
        // speed factor of at most one (a little more for rounding).
        let longest = self
            .agents
            .iter()
            .flatten()
            .filter(|a| a.plans())
            .map(|a| a.params.max_step)
            .fold(0.0, f64::max)
            * (1.0 + 1e-9);
        let count = self.agents.len();
        let threads = rayon::current_num_threads();
        let world = world_of!(self, &discs);
        let others = longest + flight.drift + self.largest_radius;
        let commit_world = commit_world_of!(self, &hash, others, &[]);
        let statics = &self.rasters;
        let generation = self.raster_generation;
        let make_counters = || DiscCounters::new(&keys, statics, generation, count);
        let mut planners: Vec<(usize, &mut Option<Agent>)> = self
            .agents
            .iter_mut()
            .enumerate()
            .filter(|(_, slot)| slot.as_ref().is_some_and(|a| a.plans()))
            .collect();
        let sizes = job_sizes(planners.len(), threads);
        let jobs = split_into(&mut planners, &sizes);
        let njobs = jobs.len();
        let todo: Vec<Mutex<Option<Slots<'_, '_>>>> =
            jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
        let planned: Vec<Mutex<Option<Planned<'_, '_>>>> =
            (0..njobs).map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        let committer = Mutex::new(Committer {
            next_job: 0,
            next_slot: 0,
            committed: snapshot.clone(),
            guard: GuardScratch::default(),
            report: StepReport {
                maps_solved: flight.maps_solved,
                ..Default::default()
            },
            counters: None,
        });
        // Commits job after job while the next one is planned; `c` holds the commit.
        let commit_job =
            |c: &mut Committer, job: Slots<'_, '_>, plans: Vec<(usize, Option<Plan>)>| {
                for ((i, slot), (_, plan)) in job.iter_mut().zip(plans) {
                    while c.next_slot < *i {
                        c.count(snapshot[c.next_slot], make_counters);
                    }
                    commit_agent(
                        &commit_world,
                        *i,
                        plan,
                        None,
                        slot,
                        &mut c.committed,
                        &mut c.guard,
                        &mut c.report,
                    );
                    c.count(
                        slot.as_ref().map(|a| (a.position, a.params.radius)),
                        make_counters,
                    );
                }
            };
        let take_planned = |k: usize| planned[k].lock().ok().and_then(|mut p| p.take());
        // Commits every planned job that follows the last committed one, unless another
        // thread is at it (that thread, or the one that planned the job it waits for, takes
        // them up: a job planned while the commit was held is looked at again once it is
        // let go).
        let commit_ready = || {
            loop {
                let Ok(mut c) = committer.try_lock() else {
                    return;
                };
                while c.next_job < njobs {
                    let Some((job, plans)) = take_planned(c.next_job) else {
                        break;
                    };
                    commit_job(&mut c, job, plans);
                    c.next_job += 1;
                }
                let waiting = c.next_job;
                drop(c);
                let ready = waiting < njobs && planned[waiting].lock().is_ok_and(|p| p.is_some());
                if !ready {
                    return;
                }
            }
        };
        let pool = &self.scratch;
        let work = || {
            let mut pooled = pool.take();
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= njobs {
                    break;
                }
                let Some(job) = todo[k].lock().ok().and_then(|mut j| j.take()) else {
                    continue;
                };
                let plans = {
                    let mut agents: Vec<(usize, &mut Agent)> = job
                        .iter_mut()
                        .map(|(i, slot)| (*i, slot.as_mut().expect("planners are agents")))
                        .collect();
                    plan_job(&world, &hash, &mut pooled.scratch, &mut agents)
                };
                if let Ok(mut p) = planned[k].lock() {
                    *p = Some((job, plans));
                }
                commit_ready();
            }
        };
        self.warm.release();
        rayon::scope(|s| {
            for _ in 1..threads {
                s.spawn(|_| work());
            }
            work();
        });
        self.warm.keep(threads - 1);
        let mut c = committer
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Every job was committed as the threads planned them (a job planned while the commit
        // was held is taken up by the holder, or by its own thread once the commit is let go).
        // Tests (debug builds) stop on a slip in that hand-over; elsewhere the jobs left are
        // committed here, in order, rather than their moves lost.
        debug_assert_eq!(c.next_job, njobs, "every planned job committed");
        while c.next_job < njobs {
            let Some((job, plans)) = take_planned(c.next_job) else {
                break;
            };
            commit_job(&mut c, job, plans);
            c.next_job += 1;
        }
        while c.next_slot < count {
            c.count(snapshot[c.next_slot], make_counters);
        }
        self.ahead = c.counters.take().flatten().map(DiscCounters::finish);
        self.step += 1;
        #[cfg(test)]
        {
            self.pipelined_steps += 1;
        }
        c.report
    }
}
