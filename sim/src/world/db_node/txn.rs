//! The fenced delete's transactions: begin, fence, delete, commit and
//! rollback, and the server's rollback of a dead connection's transactions.

use std::time::Duration;

use rand::Rng;

use super::{DbNode, TxnInfo};
use crate::db::TxnId;
use crate::model::{Actor, EventKind};
use crate::world::wire::Caller;

impl DbNode {
    pub(crate) fn begin(&self, caller: Caller) -> TxnId {
        let mut state = self.state.lock().expect("db state");
        let txn = state.db.begin();
        let info = TxnInfo {
            caller,
            token: 0,
            fenced_at_ms: None,
            older_than_ms: 0,
            running: false,
            roll_back_when_idle: false,
        };
        state.txns.insert(txn, info);
        txn
    }

    pub(crate) fn fence(&self, caller: Caller, txn: TxnId, token: u64) -> Result<(), String> {
        let now_ms = self.recorder.now_ms();
        let mut state = self.state.lock().expect("db state");
        if !state.db.is_open(txn) {
            return Err(gone(txn));
        }
        let fenced = state.db.fence(txn, token, now_ms);
        let info = state.txns.get_mut(&txn).expect("an open txn is known");
        info.token = token;
        if fenced.is_ok() {
            info.fenced_at_ms = Some(now_ms);
        }
        drop(state);
        fenced.map_err(|rejection| {
            let reason = rejection.to_string();
            let kind = EventKind::Fenced {
                call: caller.call,
                token,
                reason: reason.clone(),
            };
            self.record(caller, Actor::Db, kind);
            reason
        })
    }

    pub(crate) async fn delete(
        &self,
        txn: TxnId,
        older_than_ms: i64,
        limit: u32,
    ) -> Result<u64, String> {
        let (count, work_ms) = {
            let mut state = self.state.lock().expect("db state");
            let work_ms = state.work.gen_range(self.batch_ms.clone());
            if !state.db.is_open(txn) {
                return Err(gone(txn));
            }
            let rows = state.db.delete_oldest(txn, older_than_ms, limit);
            let info = state.txns.get_mut(&txn).expect("an open txn is known");
            (info.older_than_ms, info.running) = (older_than_ms, true);
            (rows.len() as u64, work_ms)
        };
        // The statement works with its rows locked, and its share lock on
        // the lease row still held.
        madsim::time::sleep(Duration::from_millis(work_ms)).await;
        let roll_back = {
            let mut state = self.state.lock().expect("db state");
            let info = state
                .txns
                .get_mut(&txn)
                .expect("only this statement ends it");
            info.running = false;
            info.roll_back_when_idle
        };
        if roll_back {
            self.rollback(txn);
        }
        Ok(count)
    }

    pub(crate) fn commit(&self, txn: TxnId) -> Result<u64, String> {
        let now_ms = self.recorder.now_ms();
        let mut state = self.state.lock().expect("db state");
        if !state.db.is_open(txn) {
            return Err(gone(txn));
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
