//! The variant's renewals: serial, as the contract wants, or on an interval
//! timer (finding 1), and the cell a term's delete loop shares with them.

use std::sync::{Arc, Mutex};

use retention_worker::{CallError, Clock, Lease, LeaseService, RecordsRepository};

use super::{Runtime, Variant};
use crate::model::{Flaw, LossRec};

/// What a term's delete loop and renewals share.
pub(super) struct Cell {
    pub latest: Lease,
    /// Why leadership was lost, once it is.
    pub lost: Option<LossRec>,
    pub done: bool,
    /// Renewal calls not yet answered.
    pub renewing: u32,
    /// Renewals stored.
    pub renewals: u32,
}

/// A renewal reply the worker may store: ours, and newer than what it sent.
fn renews(sent: &Lease, reply: &Lease) -> bool {
    reply.owner_id == sent.owner_id && reply.fencing_token > sent.fencing_token
}

impl<C, L, R, T> Variant<C, L, R, T>
where
    C: Clock + 'static,
    L: LeaseService + Clone + 'static,
    R: RecordsRepository + 'static,
    T: Runtime,
{
    pub(super) async fn renew(&self, cell: &Arc<Mutex<Cell>>) {
        if self.has(Flaw::OverlappingRenewals) {
            self.renew_on_an_interval(cell).await;
        } else {
            self.renew_serially(cell).await;
        }
    }

    fn winding_down(&self, cell: &Mutex<Cell>) -> bool {
        let cell = cell.lock().expect("cell");
        if self.has(Flaw::RenewalOutlivesStop) {
            return cell.lost.is_some();
        }
        cell.done || cell.lost.is_some() || self.stopped()
    }

    async fn renew_serially(&self, cell: &Arc<Mutex<Cell>>) {
        let interval = self.config.renew_interval_ms;
        while self
            .sleep_unless(interval, || self.winding_down(cell))
            .await
        {
            let lease = cell.lock().expect("cell").begin_renewal();
            let mut result = self.deps.leases.renew(&lease).await;
            if self.has(Flaw::RetryFailedRenewal) && result.is_err() {
                result = self.deps.leases.renew(&lease).await;
            }
            if self.has(Flaw::UnwrapsNullRenewal) {
                if let Ok(reply) = &result {
                    reply.as_ref().expect("a lease this replica holds renews");
                }
            }
            if self.has(Flaw::NullRenewalIgnored) && matches!(result, Ok(None)) {
                cell.lock().expect("cell").renewing -= 1;
                self.changed.notify_waiters();
                continue;
            }
            {
                let mut memory = self.memory.lock().expect("memory");
                match &result {
                    Ok(Some(reply)) if !renews(&lease, reply) => memory.corrupt_replies += 1,
                    Ok(None) => memory.null_renewals += 1,
                    _ => {}
                }
            }
            let late = self.flaw.is_some_and(Flaw::is_canary)
                && matches!(&result, Ok(Some(reply)) if renews(&lease, reply))
                && self.deps.clock.now_ms() > lease.expires_at_ms;
            let observed = !self.has(Flaw::FailedRenewalIgnored);
            let lost = {
                let mut cell = cell.lock().expect("cell");
                match result {
                    Ok(Some(reply))
                        if self.has(Flaw::CanaryCorruptReplyKeptAfterAFence)
                            && !renews(&lease, &reply)
                            && {
                                let memory = self.memory.lock().expect("memory");
                                memory.term.deleting
                                    && memory.foreign_fences > 0
                                    && memory.null_renewals > 0
                            } =>
                    {
                        cell.renewing -= 1;
                        cell.latest = reply;
                        false
                    }
                    result => cell.finish_renewal(&lease, result, observed),
                }
            };
            self.changed.notify_waiters();
            if late {
                let primed = {
                    let memory = self.memory.lock().expect("memory");
                    memory.term.jumped && memory.corrupt_replies > 0
                };
                if self.has(Flaw::CanaryOverlapAfterANullRenewalAndAJump) && primed && !lost {
                    self.renew_detached(cell);
                }
            }
            if lost {
                return;
            }
        }
    }

    /// One renewal of the latest lease sent without awaiting it (finding 1,
    /// and `canary-overlap-after-a-null-renewal-and-a-jump`); its answer
    /// replaces the lease when newer, and a failure goes unobserved.
    fn renew_detached(&self, cell: &Arc<Mutex<Cell>>) {
        let lease = cell.lock().expect("cell").begin_renewal();
        let (leases, cell, changed) =
            (self.deps.leases.clone(), cell.clone(), self.changed.clone());
        self.runtime.spawn(Box::pin(async move {
            let result = leases.renew(&lease).await;
            cell.lock()
                .expect("cell")
                .finish_renewal(&lease, result, false);
            changed.notify_waiters();
        }));
    }

    /// Finding 1: a timer fires every interval whether or not the previous
    /// renewal answered; each reply overwrites the lease, and a rejection is
    /// dropped on the floor.
    async fn renew_on_an_interval(&self, cell: &Arc<Mutex<Cell>>) {
        let interval = self.config.renew_interval_ms;
        while self
            .sleep_unless(interval, || self.winding_down(cell))
            .await
        {
            self.renew_detached(cell);
        }
    }
}

impl Cell {
    /// A renewal is going out: counts it in flight and returns the lease it
    /// sends.
    fn begin_renewal(&mut self) -> Lease {
        self.renewing += 1;
        self.latest.clone()
    }

    /// Takes the answer to the renewal that sent `sent`. A failed renewal is
    /// lost leadership only when `observed` (finding 1 drops it). Returns
    /// whether leadership is lost.
    fn finish_renewal(
        &mut self,
        sent: &Lease,
        result: Result<Option<Lease>, CallError>,
        observed: bool,
    ) -> bool {
        self.renewing -= 1;
        match result {
            Ok(Some(renewed)) if renews(sent, &renewed) => {
                self.latest = renewed;
                self.renewals += 1;
            }
            Ok(None) => self.lost = Some(LossRec::NullRenewal),
            Ok(Some(_)) | Err(_) if observed => self.lost = Some(LossRec::RenewalFailed(None)),
            Ok(Some(_)) | Err(_) => {}
        }
        self.lost.is_some()
    }
}
