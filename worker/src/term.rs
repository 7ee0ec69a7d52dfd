//! One leadership term: acquire, delete in batches while renewing, release.
//!
//! The shape makes the contract hard to break: the renewal loop is the only
//! writer of the lease after acquire, and it funnels every failure into one
//! loss path; the delete loop reads the latest lease before every batch; the
//! cutoff is a value computed once; and every exit after acquire reaches the
//! single release at the bottom of [`Worker::term`].

use std::pin::pin;

use futures_util::future::{Either, join, select};
use tracing::{debug, info, warn};

use crate::state::State;
use crate::{
    CallError, CallErrorKind, Clock, Lease, LeaseService, LossCause, RecordsRepository,
    ReleaseOutcome, TermEnd, TermReport, Worker,
};

/// Whether the delete loop may issue another batch, and with which lease.
enum Permit {
    Delete(Lease),
    End(TermEnd),
}

impl<C: Clock, L: LeaseService, R: RecordsRepository> Worker<C, L, R> {
    /// The body of `run()`, between marking the term running and settling it.
    pub(crate) async fn term(&self) -> TermReport {
        // ACQ-1: nothing else is called unless this grants a lease to us.
        let lease = match self.deps.leases.acquire(&self.owner_id).await {
            Ok(Some(lease)) if lease.owner_id == self.owner_id => lease,
            Ok(Some(lease)) => {
                let detail = format!("acquire for {} granted {lease}", self.owner_id);
                return TermReport::new(TermEnd::AcquireFailed(CallError::protocol(detail)));
            }
            Ok(None) => return TermReport::new(TermEnd::NotAcquired),
            Err(error) => return TermReport::new(TermEnd::AcquireFailed(error)),
        };
        info!(owner = %self.owner_id, token = lease.fencing_token, "lease acquired");
        let granted_at_ms = lease.granted_at_ms(self.config.lease_ttl_ms);
        self.shared.store_lease(lease);

        // STP-4: a stop that raced the acquire skips the work, not the release.
        let mut report = TermReport::new(TermEnd::Stopped);
        if !self.shared.read(|state| state.stop_requested) {
            // CUT-1: the one cutoff of this term, on the database's clock:
            // the grant's instant (its expiry less the TTL) is a time that
            // clock had reached, so a row older than it by the retention is
            // old enough whenever the delete commits, however far this
            // replica's own clock runs ahead (DATA-4).
            let cutoff_ms = granted_at_ms.saturating_sub(self.retention_ms);
            report.cutoff_ms = Some(cutoff_ms);
            let (end, ()) = join(self.delete_loop(cutoff_ms, &mut report), self.renew_loop()).await;
            report.end = end;
        }

        // REL-1, REL-3, STP-4: the single exit path after acquire.
        let (newest_token, renewals) = self
            .shared
            .read(|state| (state.term().newest_token, state.term().renewals));
        report.last_fencing_token = newest_token;
        report.renewals = renewals;
        report.release = self.release_held().await;
        report
    }

    /// Releases the latest stored lease, if the term still holds one.
    async fn release_held(&self) -> ReleaseOutcome {
        let Some(lease) = self.shared.read(|state| state.term().lease.clone()) else {
            return ReleaseOutcome::NotOwed;
        };
        match self.deps.leases.release(&lease).await {
            Ok(()) => ReleaseOutcome::Released,
            Err(error) => {
                warn!(owner = %self.owner_id, token = lease.fencing_token, %error, "release failed");
                ReleaseOutcome::Failed(error)
            }
        }
    }

    async fn delete_loop(&self, cutoff_ms: i64, report: &mut TermReport) -> TermEnd {
        let end = self.delete_batches(cutoff_ms, report).await;
        self.shared.finish_deletes();
        end
    }

    async fn delete_batches(&self, cutoff_ms: i64, report: &mut TermReport) -> TermEnd {
        let cap = u64::from(self.config.term_row_cap);
        // The token of a lease on which the expiry guard already waited.
        let mut waited_on: Option<u64> = None;
        loop {
            // STP-1, REN-3, FEN-1: decide on the state as it is right now.
            let lease = match self.shared.read(delete_permit) {
                Permit::Delete(lease) => lease,
                Permit::End(end) => return end,
            };
            if self.near_expiry(&lease) {
                if waited_on.is_some_and(|token| token != lease.fencing_token) {
                    // Even a fresh renewal leaves no safe window on our clock.
                    self.shared.declare_loss(LossCause::LeaseTooShort, false);
                    continue;
                }
                waited_on = Some(lease.fencing_token);
                let token = lease.fencing_token;
                self.shared
                    .wait_until(|state| lease_changed(state, token))
                    .await;
                continue;
            }
            waited_on = None;
            // CAP-1: the remaining allowance bounds every batch.
            let remaining = cap - report.rows_deleted;
            let limit = self
                .config
                .batch_size
                .min(remaining.try_into().unwrap_or(u32::MAX));
            let token = lease.fencing_token;
            let result = self
                .deps
                .records
                .delete_batch(cutoff_ms, limit, token)
                .await;
            let deleted = match result {
                Ok(deleted) => deleted,
                Err(error)
                    if error.kind == CallErrorKind::Fenced && self.renewed_since(token).await =>
                {
                    // Our own renewal rotated the token under this delete,
                    // which FEN-2 refused whole: go on with the new token.
                    debug!(owner = %self.owner_id, token, "delete raced a renewal; retrying");
                    continue;
                }
                Err(error) => {
                    warn!(owner = %self.owner_id, token, %error, "delete failed");
                    return TermEnd::DeleteFailed(error);
                }
            };
            report.rows_deleted += deleted;
            report.batches += 1;
            debug!(owner = %self.owner_id, token, limit, deleted, "batch deleted");
            if deleted > u64::from(limit) {
                let detail = format!("asked to delete at most {limit} rows, deleted {deleted}");
                return TermEnd::DeleteFailed(CallError::protocol(detail));
            }
            if report.rows_deleted >= cap {
                return TermEnd::Capped;
            }
            if deleted < u64::from(limit) {
                return TermEnd::Completed;
            }
        }
    }

    /// After a fenced delete with `token`: waits for any renewal in flight
    /// to answer, then tells whether the term may go on, because it now holds
    /// a newer token (or a loss or stop, which the next permit check reports).
    async fn renewed_since(&self, token: u64) -> bool {
        self.shared
            .wait_until(|state| state.stop_requested || !state.term().renewing)
            .await;
        self.shared.read(|state| {
            let term = state.term();
            let newer = term
                .lease
                .as_ref()
                .is_some_and(|lease| lease.fencing_token > token);
            newer || state.stop_requested || term.loss.is_some()
        })
    }

    /// The lease is, on the worker's own clock, too close to expiry for a
    /// delete to start.
    fn near_expiry(&self, lease: &Lease) -> bool {
        let margin_ms = i64::try_from(self.config.expiry_margin_ms).unwrap_or(i64::MAX);
        self.deps.clock.now_ms() >= lease.expires_at_ms.saturating_sub(margin_ms)
    }

    /// REN-1: one loop, one renewal at a time, each awaited before the next
    /// is scheduled.
    async fn renew_loop(&self) {
        loop {
            // STP-2: stop, loss or the end of deletes cancels the schedule.
            if !self
                .sleep_unless(self.config.renew_interval_ms, State::winding_down)
                .await
            {
                return;
            }
            let lease = match self
                .shared
                .read(|state| (!state.winding_down()).then(|| state.term().lease.clone()))
            {
                Some(Some(lease)) => lease,
                _ => return,
            };
            let now_ms = self.deps.clock.now_ms();
            if now_ms >= lease.expires_at_ms {
                warn!(owner = %self.owner_id, token = lease.fencing_token, "lease expired before renewal");
                self.shared
                    .declare_loss(LossCause::ExpiredBeforeRenewal, false);
                return;
            }
            let budget_ms = (lease.expires_at_ms - now_ms).unsigned_abs();
            if !self.renew_once(&lease, budget_ms).await {
                return;
            }
        }
    }

    /// Renews `lease` (REN-2: always the latest) and stores the result or
    /// declares the loss. An answer later than `budget_ms` is a loss, but the
    /// call is still awaited (STP-3) and its lease stored, so release uses it.
    async fn renew_once(&self, lease: &Lease, budget_ms: u64) -> bool {
        self.shared.begin_renewal();
        let call = pin!(self.deps.leases.renew(lease));
        let deadline = pin!(self.deps.clock.sleep_ms(budget_ms));
        let (result, in_time) = match select(call, deadline).await {
            Either::Left((result, _)) => (result, true),
            Either::Right(((), call)) => {
                warn!(owner = %self.owner_id, token = lease.fencing_token, "renewal unanswered at expiry");
                self.shared
                    .declare_loss(LossCause::RenewalUnanswered, false);
                (call.await, false)
            }
        };
        match self.check_renewal(lease, result) {
            Ok(renewed) => {
                debug!(owner = %self.owner_id, token = renewed.fencing_token, "lease renewed");
                self.shared.store_lease(renewed);
                in_time
            }
            Err((cause, lease_gone)) => {
                warn!(owner = %self.owner_id, token = lease.fencing_token, ?cause, "leadership lost");
                self.shared.declare_loss(cause, lease_gone);
                false
            }
        }
    }

    /// Accepts a renewal only if it is ours and newer; anything else is a
    /// loss, with `true` when the lease service says the lease is gone.
    fn check_renewal(
        &self,
        lease: &Lease,
        result: Result<Option<Lease>, CallError>,
    ) -> Result<Lease, (LossCause, bool)> {
        match result {
            Ok(Some(renewed))
                if renewed.owner_id == lease.owner_id
                    && renewed.fencing_token > lease.fencing_token =>
            {
                Ok(renewed)
            }
            Ok(Some(renewed)) => {
                let detail = format!("renewing {lease} returned {renewed}");
                Err((LossCause::RenewalFailed(CallError::protocol(detail)), false))
            }
            Ok(None) => Err((LossCause::NullRenewal, true)),
            Err(error) => Err((LossCause::RenewalFailed(error), false)),
        }
    }

    /// Sleeps `duration_ms` on the worker's clock unless `interrupt` becomes
    /// true first; returns whether the full sleep elapsed. The interrupt is
    /// polled first, so a tie always goes to it (deterministic, no `select!`).
    pub(crate) async fn sleep_unless(
        &self,
        duration_ms: u64,
        interrupt: impl FnMut(&State) -> bool,
    ) -> bool {
        let interrupted = pin!(self.shared.wait_until(interrupt));
        let slept = pin!(self.deps.clock.sleep_ms(duration_ms));
        matches!(select(interrupted, slept).await, Either::Right(_))
    }
}

fn delete_permit(state: &State) -> Permit {
    if state.stop_requested {
        return Permit::End(TermEnd::Stopped);
    }
    let term = state.term();
    if let Some(cause) = &term.loss {
        return Permit::End(TermEnd::LeadershipLost(cause.clone()));
    }
    let lease = term
        .lease
        .clone()
        .expect("a term with no loss holds a lease");
    Permit::Delete(lease)
}

fn lease_changed(state: &State, token: u64) -> bool {
    let term = state.term();
    state.stop_requested
        || term.loss.is_some()
        || term.lease.as_ref().map(|lease| lease.fencing_token) != Some(token)
}
