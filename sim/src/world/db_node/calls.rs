//! The node's entry points, one per wire message: each becomes a statement
//! of the caller's session, answered when the database ends it; and the
//! faults that act on the database itself (rows another client holds, a
//! standby that stops answering).

use std::time::Duration;

use tokio::sync::oneshot;

use super::DbNode;
use super::state::{State, Waiter};
use crate::db::{Answer, LeaseAnswer, LeaseStatement, Refusal, Request, TxnId};
use crate::model::{Actor, EventKind, OpKind};
use crate::world::wire::{Caller, Committed, ServerError};

impl DbNode {
    /// Sends the request `build` makes as a statement of `caller`'s session
    /// and waits for its answer.
    async fn run(
        &self,
        caller: Caller,
        (op, txn, token): (OpKind, Option<TxnId>, u64),
        build: impl FnOnce(&Self, &mut State) -> Request,
    ) -> Result<Answer, Refusal> {
        let (reply, answer) = oneshot::channel();
        self.in_turn(caller.session, caller.seq).await;
        let started_ms = self.recorder.now_ms();
        self.with_db(|state| {
            state.next_statement += 1;
            let id = state.next_statement;
            let request = build(self, state);
            let waiter = Waiter {
                caller,
                op,
                started_ms,
                clock_ms: state.db.clock_ms(started_ms),
                token,
                txn,
                reply,
            };
            state.waiters.insert(id, waiter);
            state.db.submit(started_ms, id, caller.session, request)
        });
        self.turn_taken(caller.session, caller.seq);
        answer.await.expect("the database answers every statement")
    }

    /// A lease statement: its answer once applied and durable, or why the
    /// server failed it (nothing applied).
    pub(crate) async fn lease(
        &self,
        caller: Caller,
        statement: LeaseStatement,
    ) -> Result<LeaseAnswer, ServerError> {
        let op = match &statement {
            LeaseStatement::Acquire { .. } => OpKind::Acquire,
            LeaseStatement::Renew { .. } | LeaseStatement::Revoke { .. } => OpKind::Renew,
            LeaseStatement::Release { .. } => OpKind::Release,
        };
        let answer = self
            .run(caller, (op, None, 0), |node, state| Request::Lease {
                statement,
                commit_ms: node.draw_commit_ms(state),
            })
            .await;
        match answer {
            Ok(Answer::Lease(applied)) => Ok(applied.answer),
            Ok(other) => unreachable!("a lease statement answered {other:?}"),
            Err(refusal) => Err(server_error(refusal)),
        }
    }

    pub(crate) async fn begin(&self, caller: Caller) -> Result<TxnId, ServerError> {
        let key = (OpKind::Delete, None, 0);
        match self.run(caller, key, |_, _| Request::Begin).await {
            Ok(Answer::Begun(txn)) => Ok(txn),
            Ok(other) => unreachable!("BEGIN answered {other:?}"),
            Err(refusal) => Err(server_error(refusal)),
        }
    }

    pub(crate) async fn fence(
        &self,
        caller: Caller,
        txn: TxnId,
        token: u64,
    ) -> Result<Result<(), String>, ServerError> {
        let key = (OpKind::Delete, Some(txn), token);
        match self
            .run(caller, key, |_, _| Request::Fence { txn, token })
            .await
        {
            Ok(Answer::Fence(checked)) => Ok(checked.map_err(|rejection| rejection.to_string())),
            Ok(other) => unreachable!("the fence answered {other:?}"),
            Err(refusal) => Err(server_error(refusal)),
        }
    }

    pub(crate) async fn delete(
        &self,
        caller: Caller,
        txn: TxnId,
        older_than_ms: i64,
        limit: u32,
    ) -> Result<u64, ServerError> {
        let key = (OpKind::Delete, Some(txn), 0);
        let build = |node: &Self, state: &mut State| {
            let clock_ms = state.db.clock_ms(node.recorder.now_ms());
            if let Some(info) = state.txns.get_mut(&txn) {
                info.older_than_ms = older_than_ms;
                info.deleted_clock_ms = Some(clock_ms);
            }
            let work_ms = rand::Rng::gen_range(&mut state.work, node.timing.batch_ms.clone());
            Request::Delete {
                txn,
                older_than_ms,
                limit,
                work_ms,
                retention_ms: node.timing.retention_ms,
            }
        };
        match self.run(caller, key, build).await {
            Ok(Answer::Deleted(rows)) => Ok(rows.len() as u64),
            Ok(other) => unreachable!("DELETE answered {other:?}"),
            Err(refusal) => Err(server_error(refusal)),
        }
    }

    pub(crate) async fn commit(
        &self,
        caller: Caller,
        txn: TxnId,
    ) -> Result<Committed, ServerError> {
        let key = (OpKind::Delete, Some(txn), 0);
        let build = |node: &Self, state: &mut State| Request::Commit {
            txn,
            commit_ms: node.draw_commit_ms(state),
        };
        match self.run(caller, key, build).await {
            Ok(Answer::Committed(rows)) => Ok(Committed::Rows(rows.len() as u64)),
            Ok(Answer::CommitRolledBack) => Ok(Committed::RolledBack),
            Ok(other) => unreachable!("COMMIT answered {other:?}"),
            Err(refusal) => Err(server_error(refusal)),
        }
    }

    /// `ROLLBACK`, as the session gets to it.
    pub(crate) async fn rollback(&self, caller: Caller, txn: TxnId) {
        let key = (OpKind::Delete, Some(txn), 0);
        let _ = self
            .run(caller, key, |_, _| Request::Rollback { txn })
            .await;
    }

    /// A cancel request for what connection `session` runs.
    pub(crate) fn cancel(&self, session: u64) {
        let now_ms = self.recorder.now_ms();
        self.with_db(|state| state.db.cancel(now_ms, session));
    }

    /// The synchronous standby stops answering now, for `for_ms`: every
    /// commit that wrote something waits, holding its locks.
    pub async fn stall_standby(&self, for_ms: u64) {
        let now_ms = self.recorder.now_ms();
        self.with_db(|state| state.db.set_standby(now_ms, false));
        let kind = EventKind::StandbyStalled { for_ms };
        self.recorder.record(Actor::Db, 0, kind);
        madsim::time::sleep(Duration::from_millis(for_ms)).await;
        self.recorder
            .record(Actor::Db, 0, EventKind::StandbyResumed);
        let now_ms = self.recorder.now_ms();
        self.with_db(|state| state.db.set_standby(now_ms, true));
    }

    /// The database's clock jumps by `delta_ms` now (a failover to a host
    /// whose clock differs).
    pub fn step_clock(&self, delta_ms: i64) {
        let now_ms = self.recorder.now_ms();
        let mut readings = (0, 0);
        let mut era = (0, 0);
        self.with_db(|state| {
            let (stepped, effects) = state.db.step_clock(now_ms, delta_ms);
            readings = stepped;
            era = (
                state.db.records().next_id(),
                state.db.clock_ms(now_ms) - now_ms,
            );
            effects
        });
        self.eras.lock().expect("eras").push(era);
        let (from_ms, to_ms) = readings;
        let kind = EventKind::DbClockStepped { from_ms, to_ms };
        self.recorder.record(Actor::Db, 0, kind);
    }

    /// Another client locks the `rows` oldest records for `for_ms`, then
    /// ends its transaction.
    pub async fn hold_rows(&self, rows: u32, for_ms: u64) {
        let now_ms = self.recorder.now_ms();
        let mut held = (0, 0);
        self.with_db(|state| {
            let (txn, locked, effects) = state.db.lock_rows(now_ms, rows);
            held = (txn, locked);
            effects
        });
        let (txn, locked) = held;
        let kind = EventKind::RowsHeld {
            rows: locked,
            for_ms,
        };
        self.recorder.record(Actor::Db, 0, kind);
        madsim::time::sleep(Duration::from_millis(for_ms)).await;
        let now_ms = self.recorder.now_ms();
        self.with_db(|state| state.db.end_other(now_ms, txn));
        let kind = EventKind::RowsFreed { rows: locked };
        self.recorder.record(Actor::Db, 0, kind);
    }
}

/// As the wire carries them: the server failed the statement, or ended the
/// session.
fn server_error(refusal: Refusal) -> ServerError {
    match refusal {
        Refusal::Cut(reason) | Refusal::Failed(reason) => ServerError::Failed(reason),
        Refusal::Closed(reason) => ServerError::Closed(reason),
    }
}
