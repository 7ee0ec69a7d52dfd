//! The fenced delete's transactions: begin, fence, delete, commit and
//! rollback, the statement and idle-in-transaction bounds, and the server's
//! rollback of a dead connection's transactions.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{Either, select};
use rand::Rng;
use tokio::sync::oneshot;

use super::{DbNode, State, TxnInfo};
use crate::db::TxnId;
use crate::model::{Actor, EventKind};
use crate::world::wire::{Caller, ServerError};

impl DbNode {
    pub(crate) fn begin(self: &Arc<Self>, caller: Caller) -> TxnId {
        let txn = {
            let mut state = self.state.lock().expect("db state");
            let txn = state.db.begin();
            let info = TxnInfo {
                caller,
                token: 0,
                fenced_at_ms: None,
                older_than_ms: 0,
                running: false,
                roll_back_when_idle: false,
                activity: 0,
                aborted: false,
            };
            state.txns.insert(txn, info);
            txn
        };
        self.idle(txn);
        txn
    }

    /// A statement of `txn` starts: refused if the session is gone or the
    /// transaction aborted.
    fn statement(&self, state: &mut State, txn: TxnId) -> Result<(), ServerError> {
        let Some(info) = state.txns.get_mut(&txn) else {
            return Err(ServerError::Closed(gone(txn)));
        };
        info.activity += 1;
        if info.aborted {
            return Err(ServerError::Failed(format!(
                "transaction {txn} is aborted: commands ignored until ROLLBACK"
            )));
        }
        Ok(())
    }

    pub(crate) fn fence(
        self: &Arc<Self>,
        caller: Caller,
        txn: TxnId,
        token: u64,
    ) -> Result<Result<(), String>, ServerError> {
        let now_ms = self.recorder.now_ms();
        let mut state = self.state.lock().expect("db state");
        self.statement(&mut state, txn)?;
        let fenced = state.db.fence(txn, token, now_ms);
        let info = state.txns.get_mut(&txn).expect("an open txn is known");
        info.token = token;
        if fenced.is_ok() {
            info.fenced_at_ms = Some(now_ms);
        }
        drop(state);
        self.idle(txn);
        Ok(fenced.map_err(|rejection| {
            let reason = rejection.to_string();
            let kind = EventKind::Fenced {
                call: caller.call,
                token,
                reason: reason.clone(),
            };
            self.record(caller, Actor::Db, kind);
            reason
        }))
    }

    pub(crate) async fn delete(
        self: &Arc<Self>,
        txn: TxnId,
        older_than_ms: i64,
        limit: u32,
    ) -> Result<u64, ServerError> {
        let (count, work_ms, stopped) = {
            let mut state = self.state.lock().expect("db state");
            let work_ms = state.work.gen_range(self.batch_ms.clone());
            self.statement(&mut state, txn)?;
            let rows = state.db.delete_oldest(txn, older_than_ms, limit);
            let info = state.txns.get_mut(&txn).expect("an open txn is known");
            (info.older_than_ms, info.running) = (older_than_ms, true);
            let (stop, stopped) = oneshot::channel();
            state.cancels.insert(txn, stop);
            (rows.len() as u64, work_ms, stopped)
        };
        // The statement works with its rows locked, and its share lock on
        // the lease row still held, until done, cut by `statement_timeout`,
        // or cancelled by its client.
        let bound_ms = self.bounds.statement_ms;
        let timed_out = bound_ms > 0 && work_ms > bound_ms;
        let work = madsim::time::sleep(Duration::from_millis(if timed_out {
            bound_ms
        } else {
            work_ms
        }));
        let failure = match select(pin!(work), stopped).await {
            Either::Left(_) if timed_out => Some(format!(
                "statement timeout after {bound_ms} ms: the delete is cancelled, its \
                 transaction aborted"
            )),
            Either::Left(_) => None,
            Either::Right(_) => Some("cancelled by its client: its transaction aborted".into()),
        };
        let (caller, roll_back) = {
            let mut state = self.state.lock().expect("db state");
            state.cancels.remove(&txn);
            let info = state
                .txns
                .get_mut(&txn)
                .expect("only this statement ends it");
            info.running = false;
            info.aborted |= failure.is_some();
            (info.caller, info.roll_back_when_idle)
        };
        if let Some(reason) = &failure {
            let kind = EventKind::Aborted {
                call: caller.call,
                reason: reason.clone(),
            };
            self.record(caller, Actor::Db, kind);
        }
        if roll_back {
            self.rollback(txn);
        } else {
            self.idle(txn);
        }
        match failure {
            Some(reason) => Err(ServerError::Failed(reason)),
            None => Ok(count),
        }
    }

    pub(crate) fn commit(&self, txn: TxnId) -> Result<u64, ServerError> {
        let now_ms = self.recorder.now_ms();
        let mut state = self.state.lock().expect("db state");
        if let Err(error) = self.statement(&mut state, txn) {
            if matches!(error, ServerError::Failed(_)) {
                // COMMIT of an aborted transaction rolls it back.
                drop(state);
                self.rollback(txn);
            }
            return Err(error);
        }
        // The client sends COMMIT only after its DELETE answered; a COMMIT
        // overtaking its own session's statement would be a harness bug.
        assert!(
            !state.txns[&txn].running,
            "COMMIT while a statement of {txn} runs"
        );
        let (rows, applied) = state.db.commit(txn, now_ms);
        let info = state.txns.remove(&txn).expect("an open txn is known");
        drop(state);
        let count = rows.len() as u64;
        if let Some(fenced_at_ms) = info.fenced_at_ms {
            let kind = EventKind::Deleted {
                call: info.caller.call,
                token: info.token,
                fenced_at_ms,
                older_than_ms: info.older_than_ms,
                rows: if self.recorder.enabled() {
                    rows
                } else {
                    Vec::new()
                },
            };
            self.record(info.caller, Actor::Db, kind);
        }
        self.deliver(applied);
        Ok(count)
    }

    /// The session is idle inside `txn` from now: unless it sends a
    /// statement first, the server ends it after the idle bound and rolls
    /// the transaction back (`idle_in_transaction_session_timeout`).
    fn idle(self: &Arc<Self>, txn: TxnId) {
        let bound_ms = self.bounds.idle_in_transaction_ms;
        let activity = self
            .state
            .lock()
            .expect("db state")
            .txns
            .get(&txn)
            .map(|info| info.activity);
        let (Some(activity), true) = (activity, bound_ms > 0) else {
            return;
        };
        let node = self.clone();
        madsim::task::spawn(async move {
            madsim::time::sleep(Duration::from_millis(bound_ms)).await;
            let caller = {
                let state = node.state.lock().expect("db state");
                match state.txns.get(&txn) {
                    Some(info) if info.activity == activity && !info.running => info.caller,
                    _ => return,
                }
            };
            let reason =
                format!("idle in transaction for {bound_ms} ms: the server ends the session");
            node.record(
                caller,
                Actor::Db,
                EventKind::Aborted {
                    call: caller.call,
                    reason,
                },
            );
            node.rollback(txn);
        });
    }

    /// `ROLLBACK` as the session gets to it: now if idle, else once its
    /// running statement ends.
    pub(crate) fn request_rollback(&self, txn: TxnId) {
        let running = {
            let mut state = self.state.lock().expect("db state");
            match state.txns.get_mut(&txn) {
                Some(info) if info.running => {
                    info.roll_back_when_idle = true;
                    true
                }
                _ => false,
            }
        };
        if !running {
            self.rollback(txn);
        }
    }

    fn rollback(&self, txn: TxnId) {
        let now_ms = self.recorder.now_ms();
        let mut state = self.state.lock().expect("db state");
        let Some(info) = state.txns.remove(&txn) else {
            return;
        };
        let locked = state.db.locked_by(txn);
        let applied = state.db.rollback(txn, now_ms);
        drop(state);
        if info.fenced_at_ms.is_some() {
            let kind = EventKind::RolledBack {
                call: info.caller.call,
                rows: locked,
            };
            self.record(info.caller, Actor::Db, kind);
        }
        self.deliver(applied);
    }

    /// The connection of call `call` closed (its process died, or the call
    /// gave up on it): the server rolls back that call's transaction as soon
    /// as it is idle.
    pub(crate) fn connection_closed(&self, call: u64) {
        let txns: Vec<TxnId> = {
            let state = self.state.lock().expect("db state");
            state
                .txns
                .iter()
                .filter(|(_, info)| info.caller.call == call)
                .map(|(txn, _)| *txn)
                .collect()
        };
        for txn in txns {
            self.request_rollback(txn);
        }
    }

    /// Another client locks the `rows` oldest records for `for_ms`, then
    /// ends its transaction.
    pub async fn hold_rows(&self, rows: u32, for_ms: u64) {
        let (txn, locked) = {
            let mut state = self.state.lock().expect("db state");
            let txn = state.db.begin();
            let locked = state.db.lock_oldest(txn, rows).len() as u64;
            (txn, locked)
        };
        let nobody = Caller {
            call: 0,
            replica: 0,
            term: 0,
        };
        let held = EventKind::RowsHeld {
            rows: locked,
            for_ms,
        };
        self.record(nobody, Actor::Db, held);
        madsim::time::sleep(Duration::from_millis(for_ms)).await;
        let now_ms = self.recorder.now_ms();
        let applied = self
            .state
            .lock()
            .expect("db state")
            .db
            .rollback(txn, now_ms);
        self.record(nobody, Actor::Db, EventKind::RowsFreed { rows: locked });
        self.deliver(applied);
    }
}

fn gone(txn: TxnId) -> String {
    format!("transaction {txn} is gone (rolled back by the server)")
}
