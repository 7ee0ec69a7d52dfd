//! The lease row's statements: applied at once, or held until the row is
//! free and then applied and answered in queue order, unless a lock-wait
//! bound or the client's cancel fails them first.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::DbNode;
use crate::db::{Applied, LeaseAnswer, LeaseStatement, StatementId};
use crate::model::{Actor, EventKind, OpKind};
use crate::world::wire::{Caller, to_rec};

impl DbNode {
    /// Runs a lease statement; answers once it has taken the row, or with
    /// why the server failed it (nothing applied).
    pub(crate) async fn lease(
        self: &Arc<Self>,
        caller: Caller,
        statement: LeaseStatement,
    ) -> Result<LeaseAnswer, String> {
        let now_ms = self.recorder.now_ms();
        let answer = {
            let mut state = self.state.lock().expect("db state");
            state.next_statement += 1;
            let id = state.next_statement;
            let op = match &statement {
                LeaseStatement::Acquire { .. } => OpKind::Acquire,
                LeaseStatement::Renew { .. } | LeaseStatement::Revoke { .. } => OpKind::Renew,
                LeaseStatement::Release { .. } => OpKind::Release,
            };
            match state.db.update_lease(id, statement, now_ms) {
                Some(applied) => Ok(applied),
                None => {
                    let (sender, answer) = oneshot::channel();
                    state.waiting.insert(id, (caller, sender));
                    let behind = state.db.fence_holders();
                    let behind = behind.iter().map(|txn| state.txns[txn].caller.call);
                    Err((id, answer, op, behind.collect()))
                }
            }
        };
        match answer {
            Ok(applied) => {
                self.record_lease(caller, &applied);
                Ok(applied.answer)
            }
            Err((id, answer, op, behind)) => {
                let kind = EventKind::LockWait {
                    call: caller.call,
                    op,
                    behind,
                };
                self.record(caller, Actor::Lease, kind);
                if let Some(bound_ms) = self.bounds.lock_wait_ms() {
                    let node = self.clone();
                    madsim::task::spawn(async move {
                        madsim::time::sleep(Duration::from_millis(bound_ms)).await;
                        let reason = format!("lock timeout after {bound_ms} ms: not applied");
                        node.fail_waiting(id, reason);
                    });
                }
                answer.await.expect("the database answers every waiter")
            }
        }
    }

    /// Statement `id`, if still waiting for the row, fails unapplied.
    fn fail_waiting(&self, id: StatementId, reason: String) {
        let failed = {
            let mut state = self.state.lock().expect("db state");
            if state.db.give_up_waiting(id) {
                state.waiting.remove(&id)
            } else {
                None
            }
        };
        if let Some((caller, sender)) = failed {
            let kind = EventKind::Aborted {
                call: caller.call,
                reason: reason.clone(),
            };
            self.record(caller, Actor::Lease, kind);
            let _ = sender.send(Err(reason));
        }
    }

    /// A cancel request for call `call`: its lease statement, if it still
    /// waits for the row, fails; a delete it runs stops early.
    pub(crate) fn cancel(&self, call: u64) {
        let (waiting, running): (Vec<StatementId>, Vec<_>) = {
            let mut state = self.state.lock().expect("db state");
            let waiting = state.waiting.iter();
            let waiting = waiting.filter(|(_, (caller, _))| caller.call == call);
            let waiting = waiting.map(|(id, _)| *id).collect();
            let txns: Vec<_> = state
                .txns
                .iter()
                .filter(|(_, info)| info.caller.call == call)
                .map(|(txn, _)| *txn)
                .collect();
            let running = txns
                .iter()
                .filter_map(|txn| state.cancels.remove(txn))
                .collect();
            (waiting, running)
        };
        for id in waiting {
            self.fail_waiting(id, "cancelled by its client: not applied".into());
        }
        for stop in running {
            let _ = stop.send(());
        }
    }

    /// Records and answers the statements a commit or rollback let through.
    pub(super) fn deliver(&self, applied: Vec<Applied>) {
        for applied in applied {
            let waiter = self
                .state
                .lock()
                .expect("db state")
                .waiting
                .remove(&applied.id);
            let (caller, sender) = waiter.expect("an applied statement was waiting");
            self.record_lease(caller, &applied);
            // The caller may be gone (crashed, timed out): the statement
            // applied all the same, as PostgreSQL applies it.
            let _ = sender.send(Ok(applied.answer));
        }
    }

    fn record_lease(&self, caller: Caller, applied: &Applied) {
        let call = caller.call;
        let kind = match (&applied.statement, &applied.answer) {
            (_, LeaseAnswer::Granted(lease)) => EventKind::Granted {
                call,
                lease: to_rec(lease),
            },
            (LeaseStatement::Acquire { .. }, _) => EventKind::Refused {
                call,
                op: OpKind::Acquire,
            },
            (LeaseStatement::Release { lease }, LeaseAnswer::Cleared { cleared }) => {
                EventKind::Released {
                    call,
                    lease: to_rec(lease),
                    cleared: *cleared,
                }
            }
            (LeaseStatement::Revoke { lease }, LeaseAnswer::Cleared { cleared: true }) => {
                EventKind::Revoked {
                    call,
                    lease: to_rec(lease),
                }
            }
            _ => EventKind::Refused {
                call,
                op: OpKind::Renew,
            },
        };
        self.record(caller, Actor::Lease, kind);
    }
}
