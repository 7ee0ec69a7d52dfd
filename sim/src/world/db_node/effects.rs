//! The database's effects as the history records them, and the answers
//! they release: waits name the calls waited for, lease statements are
//! recorded when durable, a delete when its commit is, and a transaction
//! that let go of its locks (an error's abort, a rollback) once.

use tokio::sync::oneshot;

use super::state::{State, TxnInfo};
use crate::db::{Answer, Effect, Holder, LeaseAnswer, LeaseStatement, Refusal, Timed};
use crate::model::{Actor, EventKind, OpKind};
use crate::world::wire::{Caller, to_rec};

type Records = Vec<(Caller, Actor, EventKind)>;
type Replies = Vec<(
    oneshot::Sender<Result<Answer, Refusal>>,
    Result<Answer, Refusal>,
)>;

/// Applies `effects` to the node's bookkeeping: what to record, in order,
/// and whom to answer (deleted rows kept only for a history being
/// recorded: they are most of a run's memory traffic).
pub(super) fn apply(state: &mut State, effects: Vec<Timed>, keep_rows: bool) -> (Records, Replies) {
    let mut records = Records::new();
    let mut replies = Replies::new();
    for Timed { effect, .. } in effects {
        match effect {
            Effect::Waits { id, behind, .. } => {
                let waiter = &state.waiters[&id];
                let behind = behind
                    .iter()
                    .filter_map(|holder| match holder {
                        Holder::Txn(txn) => state.txns.get(txn).map(|info| info.caller.call),
                        Holder::Statement(other) => state.waiters.get(other).map(|w| w.caller.call),
                    })
                    .collect();
                let kind = EventKind::LockWait {
                    call: waiter.caller.call,
                    op: waiter.op,
                    behind,
                };
                records.push((waiter.caller, actor_of(waiter.op), kind));
            }
            Effect::Done { id, answer } => {
                let waiter = state.waiters.remove(&id).expect("a statement has a waiter");
                let (caller, op) = (waiter.caller, waiter.op);
                match &answer {
                    Ok(Answer::Begun(txn)) => {
                        let info = TxnInfo {
                            caller,
                            token: 0,
                            fenced_at_ms: None,
                            older_than_ms: 0,
                            deleted_clock_ms: None,
                            fenced_clock_ms: None,
                        };
                        state.txns.insert(*txn, info);
                    }
                    Ok(Answer::Lease(applied)) => {
                        let kind = lease_event(caller.call, &applied.statement, &applied.answer);
                        records.push((caller, Actor::Lease, kind));
                    }
                    Ok(Answer::Fence(Ok(()))) => {
                        let info = txn_of(state, waiter.txn);
                        info.fenced_at_ms = Some(waiter.started_ms);
                        info.fenced_clock_ms = Some(waiter.clock_ms);
                        info.token = waiter.token;
                    }
                    Ok(Answer::Fence(Err(rejection))) => {
                        let kind = EventKind::Fenced {
                            call: caller.call,
                            token: waiter.token,
                            reason: rejection.to_string(),
                        };
                        records.push((caller, Actor::Db, kind));
                    }
                    Ok(Answer::Committed(rows)) => {
                        let info = *txn_of(state, waiter.txn);
                        if let Some(fenced_at_ms) = info.fenced_at_ms {
                            let kind = EventKind::Deleted {
                                call: caller.call,
                                token: info.token,
                                fenced_at_ms,
                                older_than_ms: info.older_than_ms,
                                rows: if keep_rows { rows.clone() } else { Vec::new() },
                                deleted_clock_ms: info.deleted_clock_ms,
                                fenced_clock_ms: info.fenced_clock_ms,
                            };
                            records.push((caller, Actor::Db, kind));
                        }
                    }
                    Err(Refusal::Cut(reason)) => {
                        let kind = EventKind::Aborted {
                            call: caller.call,
                            reason: reason.clone(),
                        };
                        records.push((caller, actor_of(op), kind));
                    }
                    _ => {}
                }
                replies.push((waiter.reply, answer));
            }
            Effect::LocksReleased { txn, rows } => {
                let Some(info) = state.txns.get(&txn) else {
                    continue;
                };
                if info.fenced_at_ms.is_some() {
                    let call = info.caller.call;
                    records.push((info.caller, Actor::Db, EventKind::RolledBack { call, rows }));
                }
            }
            Effect::SessionEnded { txn, reason } => {
                let Some(info) = state.txns.get(&txn) else {
                    continue;
                };
                let call = info.caller.call;
                records.push((info.caller, Actor::Db, EventKind::Aborted { call, reason }));
            }
        }
    }
    (records, replies)
}

/// The transaction a delete call's statement ran in.
fn txn_of(state: &mut State, txn: Option<crate::db::TxnId>) -> &mut TxnInfo {
    let txn = txn.expect("a transaction's statement names it");
    state
        .txns
        .get_mut(&txn)
        .expect("a begun transaction is known")
}

/// Lease statements are the lease service's doing; the delete's are the
/// database's.
fn actor_of(op: OpKind) -> Actor {
    match op {
        OpKind::Delete => Actor::Db,
        _ => Actor::Lease,
    }
}

fn lease_event(call: u64, statement: &LeaseStatement, answer: &LeaseAnswer) -> EventKind {
    match (statement, answer) {
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
    }
}
