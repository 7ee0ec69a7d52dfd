//! The database: the lease row (its committed value and its lock), the
//! records, the open transactions and the statements in flight, driven by
//! the caller's clock: every entry point takes the time, runs what the
//! server would have done by then, and returns the effects in order.

use std::collections::BTreeMap;

use retention_worker::memory::LeaseTable;

use super::records::Records;
use super::row_lock::RowLock;
use super::statement::{
    Answer, Applied, Effect, Holder, LeaseStatement, Refusal, Request, SessionId, StatementId,
    Timed, TxnId,
};
use crate::model::RowRec;

/// What a statement on a session the server terminated meets: the client
/// finds its connection closed.
pub(super) const SESSION_ENDED: &str =
    "the server ended the session (idle in transaction): connection closed";

/// PostgreSQL's server-side bounds, as the adapters set them on every
/// connection (`worker/src/pg/options.rs`); 0 turns one off, as in
/// PostgreSQL. Default: all off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounds {
    /// `statement_timeout`: the whole statement, every lock wait included,
    /// but not the wait for its commit to be durable.
    pub statement_ms: u64,
    /// `lock_timeout`: each lock acquisition attempt on its own.
    pub lock_ms: u64,
    /// `idle_in_transaction_session_timeout`.
    pub idle_in_transaction_ms: u64,
}

/// An open transaction.
#[derive(Debug, Clone)]
pub(super) struct Txn {
    /// Its client's session; `None` for another client the bounds do not
    /// govern (the held-rows fault).
    pub session: Option<SessionId>,
    /// Rows its `DELETE` locked, to go at `COMMIT`.
    pub deleted: Vec<RowRec>,
    /// Rows it only locked (`SELECT ... FOR UPDATE`), freed at its end.
    pub held: Vec<RowRec>,
    /// Its fence holds the lease row's share lock.
    pub fenced: bool,
    /// Its statement in flight.
    pub busy: Option<StatementId>,
    /// Idle (no statement in flight) since then.
    pub idle_since_ms: i64,
    /// A statement failed: only `ROLLBACK` (or a `COMMIT`, which rolls
    /// back) is left; it holds no locks.
    pub aborted: bool,
    /// Its session closed while a statement ran: roll back when it ends.
    pub roll_back_when_idle: bool,
}

/// A statement the server is working on.
#[derive(Debug, Clone)]
pub(super) struct Running {
    pub session: SessionId,
    /// When it started, on the run's time (its bounds count from here).
    pub started_ms: i64,
    /// The database host's clock at its start: what its CTE read.
    pub clock_ms: i64,
    pub kind: Kind,
    pub phase: Phase,
}

#[derive(Debug, Clone)]
pub(super) enum Kind {
    Lease {
        statement: LeaseStatement,
        commit_ms: u64,
    },
    Fence {
        txn: TxnId,
        token: u64,
    },
    Delete {
        txn: TxnId,
        rows: Vec<RowRec>,
    },
    Commit {
        txn: TxnId,
    },
}

#[derive(Debug, Clone)]
pub(super) enum Phase {
    /// Queued for the lease row; `blocker` is whom this attempt waits for
    /// (`None`: the tuple lock, behind the statement at the head).
    Waiting {
        attempt: u32,
        since_ms: i64,
        blocker: Option<Holder>,
    },
    /// A `DELETE` working until then.
    Working { until_ms: i64 },
    /// Its commit is being flushed and sent to the standby: its locks stay.
    Committing {
        ready_ms: i64,
        pending: Box<Pending>,
    },
}

/// What a commit makes visible once durable.
#[derive(Debug, Clone)]
pub(super) enum Pending {
    Lease { applied: Applied, table: LeaseTable },
    Txn,
}

/// One PostgreSQL database holding the lease row and the records.
#[derive(Debug, Clone)]
pub struct Database {
    /// The lease row as committed (what a snapshot sees).
    pub(super) lease: LeaseTable,
    pub(super) lock: RowLock,
    pub(super) records: Records,
    pub(super) txns: BTreeMap<TxnId, Txn>,
    pub(super) statements: BTreeMap<StatementId, Running>,
    pub(super) bounds: Bounds,
    /// The synchronous standby acknowledges commits.
    pub(super) standby_answers: bool,
    /// The database host's clock less the run's time: 0 until a failover
    /// to a host whose clock differs steps it.
    pub(super) clock_offset_ms: i64,
    /// Sessions the server terminated (idle in a transaction too long):
    /// their connections are closed, and nothing more runs on them.
    pub(super) ended_sessions: std::collections::BTreeSet<SessionId>,
    next_txn: TxnId,
    pub(super) now_ms: i64,
}

impl Database {
    /// A database whose lease row grants leases of `lease_ttl_ms`, with
    /// `records` in its table, enforcing `bounds`, at time 0.
    pub fn new(lease_ttl_ms: u64, records: Records, bounds: Bounds) -> Self {
        Self {
            lease: LeaseTable::new(lease_ttl_ms),
            lock: RowLock::default(),
            records,
            txns: BTreeMap::new(),
            statements: BTreeMap::new(),
            bounds,
            standby_answers: true,
            clock_offset_ms: 0,
            ended_sessions: std::collections::BTreeSet::new(),
            next_txn: 0,
            now_ms: i64::MIN,
        }
    }

    /// The lease row's committed value.
    pub fn lease(&self) -> &LeaseTable {
        &self.lease
    }

    /// The records table.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// `INSERT INTO retention_records`, autocommitted; takes no lock a
    /// delete or the fence waits for.
    pub fn insert(&mut self, created_at_ms: i64) -> RowRec {
        self.records.insert(created_at_ms)
    }

    /// What the database host's clock (`retention_now_us()`) reads at
    /// `now_ms` of the run's time.
    pub fn clock_ms(&self, now_ms: i64) -> i64 {
        now_ms.saturating_add(self.clock_offset_ms)
    }

    /// The database's clock jumps by `delta_ms` at `now_ms` (a failover to
    /// a host whose clock differs, NTP stepping the host): statements read
    /// the new clock from now on; rows' `created_at_ms` and the lease row's
    /// `expires_at_ms` keep the values they were written with, and the
    /// server's own timers (its bounds) are not moved. Returns the
    /// readings before and after.
    pub fn step_clock(&mut self, now_ms: i64, delta_ms: i64) -> ((i64, i64), Vec<Timed>) {
        let out = self.advance_to(now_ms);
        let before_ms = self.clock_ms(now_ms);
        self.clock_offset_ms = self.clock_offset_ms.saturating_add(delta_ms);
        ((before_ms, self.clock_ms(now_ms)), out)
    }

    /// Whether the server terminated `session` (its client sees the
    /// connection closed).
    pub fn session_ended(&self, session: SessionId) -> bool {
        self.ended_sessions.contains(&session)
    }

    /// Statement `id` arrives on `session` at `now_ms`.
    pub fn submit(
        &mut self,
        now_ms: i64,
        id: StatementId,
        session: SessionId,
        request: Request,
    ) -> Vec<Timed> {
        let mut out = self.advance_to(now_ms);
        assert!(
            !self.statements.contains_key(&id),
            "statement {id} submitted twice"
        );
        match request {
            Request::Lease {
                statement,
                commit_ms,
            } => self.submit_lease(now_ms, id, session, statement, commit_ms, &mut out),
            Request::Begin if self.session_ended(session) => {
                let answer = Err(Refusal::Closed(SESSION_ENDED.into()));
                super::emit(&mut out, now_ms, Effect::Done { id, answer });
            }
            Request::Begin => {
                let txn = self.open(Some(session), now_ms);
                let answer = Ok(Answer::Begun(txn));
                super::emit(&mut out, now_ms, Effect::Done { id, answer });
            }
            Request::Fence { txn, token } => {
                self.submit_fence(now_ms, id, session, txn, token, &mut out);
            }
            Request::Delete {
                txn,
                older_than_ms,
                limit,
                work_ms,
                retention_ms,
            } => {
                // `$3`: the retention again, on the clock this statement reads.
                let by_own_clock = i64::try_from(retention_ms)
                    .ok()
                    .filter(|&ms| ms > 0)
                    .map(|ms| self.clock_ms(now_ms).saturating_sub(ms));
                let cutoff_ms = by_own_clock.map_or(older_than_ms, |own| own.min(older_than_ms));
                let work = (cutoff_ms, limit, work_ms);
                self.submit_delete(now_ms, id, session, txn, work, &mut out);
            }
            Request::Commit { txn, commit_ms } => {
                self.submit_commit(now_ms, id, session, txn, commit_ms, &mut out);
            }
            Request::Rollback { txn } => self.submit_rollback(now_ms, id, txn, &mut out),
        }
        self.pump(now_ms, &mut out);
        // Work of no duration ends now.
        out.extend(self.advance_to(now_ms));
        out
    }

    /// The synchronous standby starts (`true`) or stops acknowledging
    /// commits at `now_ms`; while it does not, every commit that wrote
    /// something waits, holding its locks.
    pub fn set_standby(&mut self, now_ms: i64, answers: bool) -> Vec<Timed> {
        let mut out = self.advance_to(now_ms);
        self.standby_answers = answers;
        out.extend(self.advance_to(now_ms));
        out
    }

    /// Statement `id` of `session` starts at `now_ms`.
    pub(super) fn start(
        &mut self,
        (id, session, now_ms): (StatementId, SessionId, i64),
        kind: Kind,
        phase: Phase,
    ) {
        let running = Running {
            session,
            started_ms: now_ms,
            clock_ms: self.clock_ms(now_ms),
            kind,
            phase,
        };
        assert!(
            self.statements.insert(id, running).is_none(),
            "statement {id} twice"
        );
    }

    /// Opens a transaction.
    pub(super) fn open(&mut self, session: Option<SessionId>, now_ms: i64) -> TxnId {
        self.next_txn += 1;
        let txn = Txn {
            session,
            deleted: Vec::new(),
            held: Vec::new(),
            fenced: false,
            busy: None,
            idle_since_ms: now_ms,
            aborted: false,
            roll_back_when_idle: false,
        };
        self.txns.insert(self.next_txn, txn);
        self.next_txn
    }

    /// Another client of the database locks the `limit` oldest rows `FOR
    /// UPDATE SKIP LOCKED` in a transaction of its own (no bounds): its id
    /// and how many rows it got, after what the server did before it.
    pub fn lock_rows(&mut self, now_ms: i64, limit: u32) -> (TxnId, u64, Vec<Timed>) {
        let out = self.advance_to(now_ms);
        let txn = self.open(None, now_ms);
        let rows = self.records.lock_oldest(txn, i64::MAX, limit);
        let count = rows.len() as u64;
        self.txns.get_mut(&txn).expect("just opened").held = rows;
        (txn, count, out)
    }

    /// That client ends its transaction.
    pub fn end_other(&mut self, now_ms: i64, txn: TxnId) -> Vec<Timed> {
        let mut out = self.advance_to(now_ms);
        self.end_txn(txn, now_ms, &mut out);
        self.pump(now_ms, &mut out);
        out
    }

    /// Lease statements and fences waiting for the row, oldest first.
    pub fn waiting(&self) -> Vec<StatementId> {
        self.lock.waiting().collect()
    }

    /// Open transactions holding the fence's share lock, in fence order.
    pub fn fence_holders(&self) -> Vec<TxnId> {
        self.lock.sharers().to_vec()
    }

    /// Whether `txn` is open (an aborted one is, until it ends).
    pub fn is_open(&self, txn: TxnId) -> bool {
        self.txns.contains_key(&txn)
    }
}
