//! The lease row's statements: applied at once, or held until the row is
//! free and then applied and answered in queue order.

use tokio::sync::oneshot;

use super::DbNode;
use crate::db::{Applied, LeaseAnswer, LeaseStatement};
use crate::model::{Actor, EventKind, OpKind};
use crate::world::wire::{Caller, to_rec};

impl DbNode {
    /// Runs a lease statement; answers once it has taken the row.
    pub(crate) async fn lease(&self, caller: Caller, statement: LeaseStatement) -> LeaseAnswer {
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
                    Err((answer, op, behind.collect()))
                }
            }
        };
        match answer {
            Ok(applied) => {
                self.record_lease(caller, &applied);
                applied.answer
            }
            Err((answer, op, behind)) => {
                let kind = EventKind::LockWait {
                    call: caller.call,
                    op,
                    behind,
                };
                self.record(caller, Actor::Lease, kind);
                answer.await.expect("the database answers every waiter")
            }
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
            let _ = sender.send(applied.answer);
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
