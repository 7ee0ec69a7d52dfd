//! A second worker, shaped like the reviewed TypeScript one, that can carry
//! exactly one flaw of the catalogue (`model::Flaw`: the review's five
//! findings and the project's own). With no flaw it keeps the contract (the
//! property tests run it that way too), so a violation found with a flaw on
//! is that flaw's doing. It runs on any clock and ports: the simulator's,
//! or the production adapters against PostgreSQL. `shape.rs` holds its
//! fields, `renew.rs` its renewals, `runtime.rs` its timers and detached
//! tasks.

mod renew;
mod runtime;
mod shape;

use std::pin::pin;
use std::sync::{Arc, Mutex};

use futures_util::future::{Either, join, select};
use retention_worker::{
    CallErrorKind, Clock, Dependencies, Jitter, Lease, LeaseService, RecordsRepository,
    SeededJitter, WorkerConfig,
};
use tokio::sync::Notify;

use self::renew::Cell;
pub use self::runtime::{MadsimRuntime, Runtime, TokioRuntime};
use self::shape::{Flags, Memory, Variant};
use crate::model::{Flaw, LossRec, ReleaseRec, TermEndRec, TermSummary};
use crate::world::{BoxFuture, OnTerm, SimulatedWorker};

/// The variant carrying `flaw` (or none) for `owner`, on `deps` and
/// `runtime`'s timers and tasks.
pub fn variant_worker<C, L, R, T>(
    flaw: Option<Flaw>,
    owner: String,
    config: WorkerConfig,
    deps: Dependencies<C, L, R>,
    runtime: T,
) -> Arc<dyn SimulatedWorker>
where
    C: Clock + 'static,
    L: LeaseService + Clone + 'static,
    R: RecordsRepository + 'static,
    T: Runtime,
{
    Arc::new(Variant {
        flaw,
        owner,
        config,
        deps,
        runtime,
        flags: Mutex::new(Flags::default()),
        changed: Arc::new(Notify::new()),
        last_lease: Mutex::new(None),
        memory: Mutex::new(Memory::default()),
    })
}

fn end(end: TermEndRec, rows: u64, batches: u32, release: ReleaseRec) -> TermSummary {
    TermSummary {
        end,
        rows,
        batches,
        renewals: 0,
        release,
    }
}

/// How the delete loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoopEnd {
    Stopped,
    Lost,
    Completed,
    Capped,
    DeleteFailed,
}

/// The term's end as the report names it: a loop that ended on a loss
/// names the loss's cause.
fn term_end(loop_end: LoopEnd, lost: Option<LossRec>) -> TermEndRec {
    match loop_end {
        LoopEnd::Stopped => TermEndRec::Stopped,
        LoopEnd::Lost => TermEndRec::LeadershipLost(lost.expect("the loop saw the loss")),
        LoopEnd::Completed => TermEndRec::Completed,
        LoopEnd::Capped => TermEndRec::Capped,
        LoopEnd::DeleteFailed => TermEndRec::DeleteFailed(None),
    }
}

impl<C, L, R, T> Variant<C, L, R, T>
where
    C: Clock + 'static,
    L: LeaseService + Clone + 'static,
    R: RecordsRepository + 'static,
    T: Runtime,
{
    fn has(&self, flaw: Flaw) -> bool {
        self.flaw == Some(flaw)
    }

    fn stopped(&self) -> bool {
        self.flags.lock().expect("flags").stopped
    }

    fn set_running(&self, running: bool) {
        self.flags.lock().expect("flags").running = running;
        self.changed.notify_waiters();
    }

    /// Sleeps `ms` unless `interrupt` becomes true first; true if it slept.
    async fn sleep_unless(&self, ms: u64, interrupt: impl Fn() -> bool) -> bool {
        let mut notified = pin!(self.changed.notified());
        let mut sleep = self.runtime.sleep_ms(ms);
        loop {
            notified.as_mut().enable();
            if interrupt() {
                return false;
            }
            match select(notified.as_mut(), sleep.as_mut()).await {
                Either::Left(_) => notified.set(self.changed.notified()),
                Either::Right(_) => return !interrupt(),
            }
        }
    }

    async fn term(&self) -> Option<TermSummary> {
        {
            let mut flags = self.flags.lock().expect("flags");
            if flags.stopped && !self.has(Flaw::StopUnseenBetweenTerms) {
                return None;
            }
            flags.running = true;
        }
        let summary = self.lead().await;
        self.set_running(false);
        Some(summary)
    }

    async fn lead(&self) -> TermSummary {
        let acquired = match self.deps.leases.acquire(&self.owner).await {
            Ok(Some(lease)) if lease.owner_id == self.owner => lease,
            Ok(Some(_)) => {
                self.memory.lock().expect("memory").corrupt_replies += 1;
                let release = self.release_stale_term_lease().await;
                return end(TermEndRec::AcquireFailed(None), 0, 0, release);
            }
            Err(_) => {
                let release = self.release_stale_term_lease().await;
                return end(TermEndRec::AcquireFailed(None), 0, 0, release);
            }
            Ok(None) => {
                let release = self.release_stale_term_lease().await;
                return end(TermEndRec::NotAcquired, 0, 0, release);
            }
        };
        if self.stopped() {
            if self.has(Flaw::FlagOnlyStop) {
                return end(TermEndRec::Stopped, 0, 0, ReleaseRec::Skipped);
            }
            let release = self.release(&acquired).await;
            return end(TermEndRec::Stopped, 0, 0, release);
        }
        let cell = Arc::new(Mutex::new(Cell {
            latest: acquired.clone(),
            lost: None,
            done: false,
            renewing: 0,
            renewals: 0,
        }));
        self.memory.lock().expect("memory").term = Default::default();
        let (outcome, ()) = join(self.delete_batches(&cell), self.renew(&cell)).await;
        let (loop_end, rows, batches, skip_release) = outcome;
        let lost = cell.lock().expect("cell").lost.clone();
        let (stopped_mid_delete, jumped) = {
            let term = &self.memory.lock().expect("memory").term;
            (term.stopped_mid_delete, term.jumped && term.own_fences > 0)
        };
        if self.has(Flaw::CanaryStopForgottenAfterAJump)
            && stopped_mid_delete
            && jumped
            && lost == Some(LossRec::NullRenewal)
        {
            self.flags.lock().expect("flags").stopped = false;
        }
        // Counted last: a renewal left in flight (finding 1) may still land
        // while the release is out, and the report must include it.
        let with_renewals = |summary: TermSummary| TermSummary {
            renewals: cell.lock().expect("cell").renewals,
            ..summary
        };
        if skip_release {
            let end_rec = term_end(loop_end, lost);
            return with_renewals(end(end_rec, rows, batches, ReleaseRec::Skipped));
        }
        if self.has(Flaw::ReleaseStaleTermLease) {
            *self.last_lease.lock().expect("last lease") =
                Some(cell.lock().expect("cell").latest.clone());
        }
        if self.has(Flaw::StopReturnsBeforeRelease) {
            self.set_running(false);
        }
        let release = match lost {
            Some(LossRec::NullRenewal) => ReleaseRec::NotOwed,
            _ => {
                let latest = cell.lock().expect("cell").latest.clone();
                let lease = if self.has(Flaw::StaleRelease) {
                    acquired
                } else {
                    latest
                };
                self.release(&lease).await
            }
        };
        with_renewals(end(term_end(loop_end, lost), rows, batches, release))
    }

    /// A term that acquired nothing releases the last term's lease (only
    /// `release-stale-term-lease`).
    async fn release_stale_term_lease(&self) -> ReleaseRec {
        let stale = self.last_lease.lock().expect("last lease").clone();
        match stale {
            Some(lease) if self.has(Flaw::ReleaseStaleTermLease) => self.release(&lease).await,
            _ => ReleaseRec::NotOwed,
        }
    }

    async fn release(&self, lease: &Lease) -> ReleaseRec {
        match self.deps.leases.release(lease).await {
            Ok(()) => ReleaseRec::Released,
            Err(_) => ReleaseRec::Failed(None),
        }
    }

    /// The delete loop: (end, rows, batches, skip the release).
    async fn delete_batches(&self, cell: &Mutex<Cell>) -> (LoopEnd, u64, u32, bool) {
        let retention_ms = i64::try_from(self.config.retention_ms).expect("validated");
        let cap = u64::from(self.config.term_row_cap);
        let ttl_ms = self.config.lease_ttl_ms;
        // As the real worker: the cutoff on the database's clock, from the
        // grant; the moving-cutoff flaw takes it from each latest renewal.
        let granted_at_ms =
            |cell: &Mutex<Cell>| cell.lock().expect("cell").latest.granted_at_ms(ttl_ms);
        let mut term_cutoff_ms = match self.flaw {
            Some(Flaw::OwnClockCutoff) => self.deps.clock.now_ms() - retention_ms,
            Some(Flaw::TrustsNtpWithinASecond) => self.deps.clock.now_ms() - retention_ms - 1_000,
            Some(Flaw::CutoffFromExpiry) => {
                cell.lock().expect("cell").latest.expires_at_ms - retention_ms
            }
            Some(Flaw::RetentionInWholeSeconds) => {
                granted_at_ms(cell) - retention_ms / 1_000 * 1_000
            }
            _ => granted_at_ms(cell) - retention_ms,
        };
        let (mut rows, mut batches, mut reported_rows) = (0u64, 0u32, 0u64);
        let mut retried_fenced = false;
        // The canaries' memory: the token to send again, the clock at the
        // last batch and the renewals stored by then.
        let mut resend: Option<u64> = None;
        let mut last_batch: Option<(i64, u32)> = None;
        let outcome = loop {
            if self.has(Flaw::SpinWhileRenewing) {
                // Waits for the renewal by watching the clock; nothing here
                // awaits, so the renewal never gets to land.
                while cell.lock().expect("cell").renewing > 0 && !self.stopped() {
                    let _ = self.deps.clock.now_ms();
                }
            }
            let token = {
                let cell = cell.lock().expect("cell");
                if let Some(token) = resend.take() {
                    token
                } else if self.stopped() {
                    break (LoopEnd::Stopped, false);
                } else if cell.lost.is_some() {
                    break (LoopEnd::Lost, false);
                } else {
                    cell.latest.fencing_token
                }
            };
            if self.flaw.is_some_and(Flaw::is_canary) {
                let now_ms = self.deps.clock.now_ms();
                let renewals = cell.lock().expect("cell").renewals;
                let ttl = i64::try_from(ttl_ms).expect("validated");
                let mut memory = self.memory.lock().expect("memory");
                if let Some((then_ms, renewals_then)) = last_batch
                    && now_ms - then_ms > ttl
                    && renewals > renewals_then
                {
                    memory.term.jumped = true;
                }
                last_batch = Some((now_ms, renewals));
                let recut =
                    memory.term.jumped && memory.corrupt_replies > 0 && memory.foreign_fences > 0;
                drop(memory);
                if recut && self.has(Flaw::CanaryRecutAfterAJumpAndACorruptReply) {
                    term_cutoff_ms = granted_at_ms(cell) - retention_ms;
                }
            }
            let cutoff_ms = if self.has(Flaw::MovingCutoff) {
                granted_at_ms(cell) - retention_ms
            } else {
                term_cutoff_ms
            };
            let batch = self.config.batch_size;
            let limit = if self.has(Flaw::UncappedTerm) || self.has(Flaw::CapOvershoot) {
                batch
            } else {
                batch.min(u32::try_from(cap - rows).unwrap_or(u32::MAX))
            };
            self.memory.lock().expect("memory").term.deleting = true;
            let delete = self.deps.records.delete_batch(cutoff_ms, limit, token);
            let result = if self.has(Flaw::StopDropsDelete) {
                let stop = self.sleep_unless(u64::MAX / 4, || self.stopped());
                match select(pin!(delete), pin!(stop)).await {
                    Either::Left((result, _)) => result,
                    Either::Right(_) => break (LoopEnd::Stopped, false),
                }
            } else {
                delete.await
            };
            {
                let term = &mut self.memory.lock().expect("memory").term;
                term.deleting = false;
                term.stopped_mid_delete |= self.stopped();
            }
            match result {
                Ok(deleted) => {
                    rows += deleted;
                    reported_rows += if self.has(Flaw::ReportCountsRequestedRows) {
                        u64::from(limit)
                    } else {
                        deleted
                    };
                    batches += 1;
                    let last = if self.has(Flaw::ContinueAfterShortBatch) {
                        deleted == 0
                    } else {
                        deleted < u64::from(limit)
                    };
                    if last {
                        break (LoopEnd::Completed, false);
                    }
                    if !self.has(Flaw::UncappedTerm) && rows >= cap {
                        break (LoopEnd::Capped, false);
                    }
                }
                Err(error) if error.kind == CallErrorKind::Fenced => {
                    let beside_a_renewal = cell.lock().expect("cell").renewing > 0;
                    let (corrupt, foreign_twice, null) = {
                        let memory = self.memory.lock().expect("memory");
                        let seen = |count: u32| count > 0;
                        (
                            seen(memory.corrupt_replies),
                            memory.foreign_fences >= 2,
                            seen(memory.null_renewals),
                        )
                    };
                    let jumped = self.memory.lock().expect("memory").term.jumped;
                    if self.renewed_since(cell, token).await {
                        self.memory.lock().expect("memory").term.own_fences += 1;
                        if self.has(Flaw::CanaryRecountAfterACorruptReply) && corrupt && jumped {
                            rows = 0;
                        }
                    } else if self.has(Flaw::RetryFencedDelete) && !retried_fenced {
                        retried_fenced = true;
                    } else if self.has(Flaw::CanaryResendAfterACorruptReply)
                        && beside_a_renewal
                        && corrupt
                        && null
                        && foreign_twice
                        && !retried_fenced
                    {
                        retried_fenced = true;
                        resend = Some(token);
                        self.memory.lock().expect("memory").foreign_fences += 1;
                    } else {
                        self.memory.lock().expect("memory").foreign_fences += 1;
                        break (LoopEnd::DeleteFailed, self.has(Flaw::FlagOnlyStop));
                    }
                }
                Err(_) => break (LoopEnd::DeleteFailed, self.has(Flaw::FlagOnlyStop)),
            }
        };
        cell.lock().expect("cell").done = true;
        self.changed.notify_waiters();
        (outcome.0, reported_rows, batches, outcome.1)
    }

    /// A delete refused for its token may have raced our own renewal: wait
    /// for the renewals in flight, then go on if the token moved.
    async fn renewed_since(&self, cell: &Mutex<Cell>, token: u64) -> bool {
        let settled = || {
            let cell = cell.lock().expect("cell");
            cell.renewing == 0 || cell.lost.is_some() || self.stopped()
        };
        let patience_ms = 10 * self.config.lease_ttl_ms;
        self.sleep_unless(patience_ms, settled).await;
        cell.lock().expect("cell").latest.fencing_token > token
    }
}

impl<C, L, R, T> SimulatedWorker for Variant<C, L, R, T>
where
    C: Clock + 'static,
    L: LeaseService + Clone + 'static,
    R: RecordsRepository + 'static,
    T: Runtime,
{
    fn serve<'a>(&'a self, jitter: SeededJitter, on_term: OnTerm<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut jitter = jitter;
            while let Some(summary) = self.term().await {
                let lost = summary.end.lost_leadership();
                on_term(summary);
                let base_ms = if lost {
                    self.config.loss_backoff_ms
                } else {
                    self.config.term_interval_ms
                };
                let pause_ms = base_ms + jitter.jitter_ms(self.config.term_jitter_ms_max);
                if self.has(Flaw::StopUnseenBetweenTerms) {
                    // The flag is read before the pause, and not after it.
                    if self.stopped() {
                        return;
                    }
                    self.runtime.sleep_ms(pause_ms).await;
                    continue;
                }
                if !self.sleep_unless(pause_ms, || self.stopped()).await {
                    return;
                }
            }
        })
    }

    fn stop(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.flags.lock().expect("flags").stopped = true;
            self.changed.notify_waiters();
            if self.has(Flaw::FlagOnlyStop) {
                return;
            }
            let mut notified = pin!(self.changed.notified());
            loop {
                notified.as_mut().enable();
                if !self.flags.lock().expect("flags").running {
                    return;
                }
                notified.as_mut().await;
                notified.set(self.changed.notified());
            }
        })
    }
}
