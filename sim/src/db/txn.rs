//! The fenced delete's transactions: `DELETE`, `COMMIT` (held until
//! durable), `ROLLBACK`, an error's abort (locks released at once, the
//! session left waiting for `ROLLBACK`), a client's cancel and a closed
//! connection.

use super::database::{Database, Kind, Pending, Phase};
use super::statement::{Answer, Effect, Refusal, SessionId, StatementId, Timed, TxnId};
use super::{emit, refuse};

impl Database {
    /// A statement of `txn` starts on `session`: refused if the server
    /// ended the session, or the transaction is aborted (PostgreSQL
    /// ignores everything but the end of the block).
    pub(super) fn begin_statement(
        &mut self,
        txn: TxnId,
        session: SessionId,
        id: StatementId,
    ) -> Result<(), Refusal> {
        let Some(open) = self.txns.get_mut(&txn) else {
            return Err(Refusal::Closed(format!(
                "transaction {txn} is gone (rolled back by the server)"
            )));
        };
        assert_eq!(
            open.session,
            Some(session),
            "txn {txn} used by another session"
        );
        assert!(
            open.busy.is_none(),
            "a session runs one statement at a time"
        );
        if open.aborted {
            return Err(Refusal::Failed(format!(
                "transaction {txn} is aborted: commands ignored until ROLLBACK"
            )));
        }
        open.busy = Some(id);
        Ok(())
    }

    /// `DELETE_OLDEST`: the oldest rows older than the cutoff that no other
    /// transaction holds (`FOR UPDATE SKIP LOCKED`), at most `limit`, locked
    /// by `txn` at once; the statement then works `work_ms` unless
    /// `statement_timeout` or a cancel cuts it. Their removal shows at
    /// `COMMIT`.
    pub(super) fn submit_delete(
        &mut self,
        now_ms: i64,
        id: StatementId,
        session: SessionId,
        txn: TxnId,
        (older_than_ms, limit, work_ms): (i64, u32, u64),
        out: &mut Vec<Timed>,
    ) {
        if let Err(refusal) = self.begin_statement(txn, session, id) {
            return refuse(out, now_ms, id, refusal);
        }
        let rows = self.records.lock_oldest(txn, older_than_ms, limit);
        let open = self.txns.get_mut(&txn).expect("an open txn");
        open.deleted.extend_from_slice(&rows);
        let until_ms = now_ms.saturating_add_unsigned(work_ms);
        self.start(
            (id, session, now_ms),
            Kind::Delete { txn, rows },
            Phase::Working { until_ms },
        );
    }

    /// `COMMIT`: an aborted transaction rolls back (answered `ROLLBACK`); a
    /// transaction that wrote nothing ends at once; one that locked or
    /// deleted keeps every lock until its commit record is flushed and the
    /// standby has it. `statement_timeout` does not cut that wait.
    pub(super) fn submit_commit(
        &mut self,
        now_ms: i64,
        id: StatementId,
        session: SessionId,
        txn: TxnId,
        commit_ms: u64,
        out: &mut Vec<Timed>,
    ) {
        match self.begin_statement(txn, session, id) {
            Ok(()) => {}
            Err(Refusal::Failed(_)) => {
                self.end_txn(txn, now_ms, out);
                let answer = Ok(Answer::CommitRolledBack);
                emit(out, now_ms, Effect::Done { id, answer });
                return;
            }
            Err(refusal) => return refuse(out, now_ms, id, refusal),
        }
        let open = &self.txns[&txn];
        let wrote = open.fenced || !open.deleted.is_empty() || !open.held.is_empty();
        let ready_ms = if wrote {
            now_ms.saturating_add_unsigned(commit_ms)
        } else {
            now_ms
        };
        self.start(
            (id, session, now_ms),
            Kind::Commit { txn },
            Phase::Committing {
                ready_ms,
                pending: Box::new(Pending::Txn),
            },
        );
        if wrote {
            self.durable_if_ready(id, now_ms, out);
        } else {
            self.finish_commit(id, now_ms, out);
        }
    }

    /// `ROLLBACK`, as the session gets to it: now if idle, else once its
    /// statement in flight ends. An abort has no commit record to wait for.
    pub(super) fn submit_rollback(
        &mut self,
        now_ms: i64,
        id: StatementId,
        txn: TxnId,
        out: &mut Vec<Timed>,
    ) {
        match self.txns.get_mut(&txn) {
            Some(open) if open.busy.is_some() => open.roll_back_when_idle = true,
            Some(_) => self.end_txn(txn, now_ms, out),
            None => {}
        }
        let answer = Ok(Answer::RolledBack);
        emit(out, now_ms, Effect::Done { id, answer });
    }

    /// Commit `id` becomes durable now if its flush is done and the standby
    /// answers.
    pub(super) fn durable_if_ready(&mut self, id: StatementId, now_ms: i64, out: &mut Vec<Timed>) {
        let Phase::Committing { ready_ms, .. } = self.statements[&id].phase else {
            unreachable!("only commits become durable");
        };
        if ready_ms <= now_ms && self.standby_answers {
            self.finish_commit(id, now_ms, out);
        }
    }

    /// Commit `id` is durable (or its wait was cancelled: it committed
    /// locally): its changes show and its locks go.
    pub(super) fn finish_commit(&mut self, id: StatementId, now_ms: i64, out: &mut Vec<Timed>) {
        let running = self.statements.remove(&id).expect("a committing statement");
        let Phase::Committing { pending, .. } = running.phase else {
            unreachable!("only commits finish");
        };
        let answer = match (*pending, running.kind) {
            (Pending::Lease { applied, table }, _) => {
                self.lease = table;
                self.lock.release_exclusive(id);
                Answer::Lease(applied)
            }
            (Pending::Txn, Kind::Commit { txn }) => {
                let open = self.txns.remove(&txn).expect("a committing txn");
                self.records.remove_locked(txn, &open.deleted);
                self.records.unlock(txn, &open.held);
                self.lock.unshare(txn);
                Answer::Committed(open.deleted)
            }
            (Pending::Txn, _) => unreachable!("a transaction commits by COMMIT"),
        };
        emit(
            out,
            now_ms,
            Effect::Done {
                id,
                answer: Ok(answer),
            },
        );
    }

    /// An error aborted `txn`: PostgreSQL releases its locks at once (the
    /// rows stay), and the session waits, holding nothing, for `ROLLBACK`.
    pub(super) fn abort_txn(&mut self, txn: TxnId, now_ms: i64, out: &mut Vec<Timed>) {
        let open = self.txns.get_mut(&txn).expect("an open txn");
        open.aborted = true;
        let deleted = std::mem::take(&mut open.deleted);
        let held = std::mem::take(&mut open.held);
        let fenced = std::mem::replace(&mut open.fenced, false);
        self.release(txn, (&deleted, &held, fenced), now_ms, out);
    }

    /// `txn` ends without committing (rolled back, or its session ended).
    pub(super) fn end_txn(&mut self, txn: TxnId, now_ms: i64, out: &mut Vec<Timed>) {
        let Some(open) = self.txns.remove(&txn) else {
            return;
        };
        self.release(txn, (&open.deleted, &open.held, open.fenced), now_ms, out);
    }

    fn release(
        &mut self,
        txn: TxnId,
        (deleted, held, fenced): (&[crate::model::RowRec], &[crate::model::RowRec], bool),
        now_ms: i64,
        out: &mut Vec<Timed>,
    ) {
        self.records.unlock(txn, deleted);
        self.records.unlock(txn, held);
        self.lock.unshare(txn);
        if fenced {
            let rows = deleted.len() as u64;
            emit(out, now_ms, Effect::LocksReleased { txn, rows });
        }
    }

    /// `txn`'s statement ended: the session is idle in it from now, or
    /// rolls it back if its connection closed meanwhile.
    pub(super) fn statement_ended(&mut self, txn: TxnId, now_ms: i64, out: &mut Vec<Timed>) {
        let Some(open) = self.txns.get_mut(&txn) else {
            return;
        };
        open.busy = None;
        open.idle_since_ms = now_ms;
        if open.roll_back_when_idle {
            self.end_txn(txn, now_ms, out);
        }
    }

    /// A cancel request for what `session` runs: a wait fails, a delete
    /// stops (its transaction aborted), a commit's wait for the standby
    /// ends with the commit done locally (PostgreSQL warns and answers
    /// success). Nothing running: nothing happens.
    pub fn cancel(&mut self, now_ms: i64, session: SessionId) -> Vec<Timed> {
        let mut out = self.advance_to(now_ms);
        let running = self.statements.iter();
        let running = running.filter(|(_, r)| r.session == session);
        let ids: Vec<StatementId> = running.map(|(&id, _)| id).collect();
        for id in ids {
            match self.statements[&id].phase {
                Phase::Waiting { .. } => {
                    self.fail_waiting(id, now_ms, "cancelled by its client", &mut out);
                }
                Phase::Working { .. } => {
                    self.cut_delete(id, now_ms, "cancelled by its client", &mut out)
                }
                Phase::Committing { .. } => self.finish_commit(id, now_ms, &mut out),
            }
        }
        self.pump(now_ms, &mut out);
        out
    }

    /// A running `DELETE` stops (`why`: its bound or a cancel); its
    /// transaction is aborted and lets go of its locks.
    pub(super) fn cut_delete(
        &mut self,
        id: StatementId,
        now_ms: i64,
        why: &str,
        out: &mut Vec<Timed>,
    ) {
        let running = self.statements.remove(&id).expect("a running delete");
        let Kind::Delete { txn, .. } = running.kind else {
            unreachable!("only deletes work");
        };
        let reason = format!("{why}: the delete is cancelled, its transaction aborted");
        self.cut_with_txn(id, txn, reason, now_ms, out);
    }

    /// Statement `id` of `txn` fails with `reason`, and its transaction is
    /// aborted with it: PostgreSQL ends a transaction whose statement was
    /// cut, so its locks go at once.
    pub(super) fn cut_with_txn(
        &mut self,
        id: StatementId,
        txn: TxnId,
        reason: String,
        now_ms: i64,
        out: &mut Vec<Timed>,
    ) {
        let answer = Err(Refusal::Cut(reason));
        emit(out, now_ms, Effect::Done { id, answer });
        self.abort_txn(txn, now_ms, out);
        self.statement_ended(txn, now_ms, out);
    }

    /// A message of `session` that touches no data (a `Parse`, a read) was
    /// answered at `now_ms`: an idle transaction's stretch starts anew, as
    /// the server re-arms `idle_in_transaction_session_timeout` each time
    /// it waits for the client again.
    pub fn protocol_exchange(&mut self, now_ms: i64, session: SessionId) -> Vec<Timed> {
        let mut out = self.advance_to(now_ms);
        for open in self.txns.values_mut() {
            if open.session == Some(session) && open.busy.is_none() {
                open.idle_since_ms = now_ms;
            }
        }
        out.extend(self.advance_to(now_ms));
        out
    }

    /// `session`'s connection closed: the server rolls back its open
    /// transaction as soon as it is idle (a statement in flight runs on; a
    /// commit under way completes). Lease statements waiting for the row
    /// keep waiting: the server does not read the socket while it waits.
    pub fn connection_closed(&mut self, now_ms: i64, session: SessionId) -> Vec<Timed> {
        let mut out = self.advance_to(now_ms);
        let mine = self.txns.iter().filter(|(_, t)| t.session == Some(session));
        let txns: Vec<TxnId> = mine.map(|(&txn, _)| txn).collect();
        for txn in txns {
            let open = self.txns.get_mut(&txn).expect("listed");
            match open.busy {
                Some(_) => open.roll_back_when_idle = true,
                None => self.end_txn(txn, now_ms, &mut out),
            }
        }
        self.pump(now_ms, &mut out);
        out
    }
}
