//! A step-at-a-time client of the simulated database (`retention_sim::db`),
//! shared by the model tests and the differential tests against PostgreSQL:
//! each call submits one statement at the given instant and keeps every
//! answer and effect, so a test reads who waits and what each statement
//! said.

#![allow(dead_code)]

use std::collections::BTreeMap;

use retention_sim::db::{
    Answer, Bounds, Database, Effect, LeaseAnswer, LeaseStatement, Records, Refusal, Request,
    SessionId, StatementId, Timed, TxnId,
};
use retention_sim::model::RowRec;
use retention_worker::FenceRejection;

/// The database and everything it answered so far.
pub struct Driver {
    pub db: Database,
    next_id: StatementId,
    pub answers: BTreeMap<StatementId, (i64, Result<Answer, Refusal>)>,
    pub effects: Vec<Timed>,
    /// Time each commit takes to be durable.
    pub commit_ms: u64,
}

impl Driver {
    pub fn new(ttl_ms: u64, rows: &[i64], bounds: Bounds) -> Self {
        let mut records = Records::new();
        for &at in rows {
            records.insert(at);
        }
        Self {
            db: Database::new(ttl_ms, records, bounds),
            next_id: 0,
            answers: BTreeMap::new(),
            effects: Vec::new(),
            commit_ms: 0,
        }
    }

    fn keep(&mut self, effects: Vec<Timed>) {
        for timed in &effects {
            if let Effect::Done { id, answer } = &timed.effect {
                self.answers.insert(*id, (timed.at_ms, answer.clone()));
            }
        }
        self.effects.extend(effects);
    }

    /// Submits `request` on `session` at `now_ms`; returns its id.
    pub fn send(&mut self, now_ms: i64, session: SessionId, request: Request) -> StatementId {
        self.next_id += 1;
        let id = self.next_id;
        let effects = self.db.submit(now_ms, id, session, request);
        self.keep(effects);
        id
    }

    pub fn advance(&mut self, now_ms: i64) {
        let effects = self.db.advance_to(now_ms);
        self.keep(effects);
    }

    pub fn cancel(&mut self, now_ms: i64, session: SessionId) {
        let effects = self.db.cancel(now_ms, session);
        self.keep(effects);
    }

    pub fn close(&mut self, now_ms: i64, session: SessionId) {
        let effects = self.db.connection_closed(now_ms, session);
        self.keep(effects);
    }

    pub fn standby(&mut self, now_ms: i64, answers: bool) {
        let effects = self.db.set_standby(now_ms, answers);
        self.keep(effects);
    }

    /// Statement `id`'s answer and when it came, if it has one.
    pub fn answer(&self, id: StatementId) -> Option<&(i64, Result<Answer, Refusal>)> {
        self.answers.get(&id)
    }

    /// A lease statement's answer and when it came, if it has one yet
    /// (`Err`: the server failed it).
    pub fn lease_answer(&self, id: StatementId) -> Option<(i64, Result<LeaseAnswer, String>)> {
        self.answer(id).map(|(at, answer)| {
            let answer = match answer {
                Ok(Answer::Lease(applied)) => Ok(applied.answer.clone()),
                Err(Refusal::Cut(why) | Refusal::Failed(why) | Refusal::Closed(why)) => {
                    Err(why.clone())
                }
                other => panic!("statement {id} is not a lease statement: {other:?}"),
            };
            (*at, answer)
        })
    }

    pub fn lease(
        &mut self,
        now_ms: i64,
        session: SessionId,
        statement: LeaseStatement,
    ) -> StatementId {
        let commit_ms = self.commit_ms;
        self.send(
            now_ms,
            session,
            Request::Lease {
                statement,
                commit_ms,
            },
        )
    }

    pub fn begin(&mut self, now_ms: i64, session: SessionId) -> TxnId {
        let id = self.send(now_ms, session, Request::Begin);
        match self.answer(id) {
            Some((_, Ok(Answer::Begun(txn)))) => *txn,
            other => panic!("BEGIN answered {other:?}"),
        }
    }

    pub fn fence(
        &mut self,
        now_ms: i64,
        session: SessionId,
        txn: TxnId,
        token: u64,
    ) -> StatementId {
        self.send(now_ms, session, Request::Fence { txn, token })
    }

    /// The fence's check, if it answered.
    pub fn fence_answer(&self, id: StatementId) -> Option<Result<(), FenceRejection>> {
        match self.answer(id)? {
            (_, Ok(Answer::Fence(checked))) => Some(*checked),
            other => panic!("statement {id} is not an answered fence: {other:?}"),
        }
    }

    pub fn delete(
        &mut self,
        now_ms: i64,
        session: SessionId,
        txn: TxnId,
        work: (i64, u32, u64),
    ) -> StatementId {
        self.delete_judged(now_ms, session, txn, work, 0)
    }

    /// A `DELETE` bounded a second time, `retention_ms` back from the
    /// database's own clock (0: not bounded so).
    pub fn delete_judged(
        &mut self,
        now_ms: i64,
        session: SessionId,
        txn: TxnId,
        (older_than_ms, limit, work_ms): (i64, u32, u64),
        retention_ms: u64,
    ) -> StatementId {
        let request = Request::Delete {
            txn,
            older_than_ms,
            limit,
            work_ms,
            retention_ms,
        };
        self.send(now_ms, session, request)
    }

    /// The rows a `DELETE` or `COMMIT` answered.
    pub fn rows(&self, id: StatementId) -> Vec<RowRec> {
        match self.answer(id) {
            Some((_, Ok(Answer::Deleted(rows) | Answer::Committed(rows)))) => rows.clone(),
            other => panic!("statement {id} answered {other:?}"),
        }
    }

    pub fn commit(&mut self, now_ms: i64, session: SessionId, txn: TxnId) -> StatementId {
        let commit_ms = self.commit_ms;
        self.send(now_ms, session, Request::Commit { txn, commit_ms })
    }

    pub fn rollback(&mut self, now_ms: i64, session: SessionId, txn: TxnId) -> StatementId {
        self.send(now_ms, session, Request::Rollback { txn })
    }

    /// The attempts each statement began (from its `Waits` effects).
    pub fn attempts(&self, id: StatementId) -> Vec<(i64, u32)> {
        let waits = self.effects.iter().filter_map(|timed| match &timed.effect {
            Effect::Waits {
                id: waiting,
                attempt,
                ..
            } if *waiting == id => Some((timed.at_ms, *attempt)),
            _ => None,
        });
        waits.collect()
    }
}
