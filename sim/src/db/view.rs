//! The database as a reader would query it at one instant: the lease row
//! and who holds or waits for its lock (`pg_locks`), each open
//! transaction and statement (`pg_stat_activity`), and the records by age
//! against the retention. Read only: taking a view changes nothing.

use serde::Serialize;

use super::database::{Database, Kind, Phase};
use super::statement::{Holder, LeaseStatement, SessionId, StatementId, TxnId};

/// The database at one instant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DbView {
    /// The database host's clock then (the run's time plus any step).
    pub clock_ms: i64,
    /// The lease row as committed.
    pub lease: Option<LeaseRowView>,
    /// Transactions holding the lease row `FOR SHARE` (the fences), in the
    /// order they took it.
    pub lease_shared_by: Vec<TxnId>,
    /// The lease statement holding the row until its commit is durable.
    pub lease_updating: Option<StatementId>,
    /// Statements queued for the lease row, the head first.
    pub lease_queue: Vec<StatementId>,
    /// Open transactions.
    pub transactions: Vec<TxnView>,
    /// Statements the server is working on or that wait.
    pub statements: Vec<StatementView>,
    /// Rows in the table (rows an open transaction deleted included).
    pub rows: u64,
    /// Of them, rows older than the retention by the database's clock: what
    /// a delete with the cutoff taken now could remove.
    pub rows_past_retention: u64,
    /// Rows locked by an open transaction.
    pub rows_locked: u64,
    /// The oldest row's creation stamp, by the database's clock.
    pub oldest_row_ms: Option<i64>,
}

/// The lease row's committed value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeaseRowView {
    /// Its owner id.
    pub owner: String,
    /// The fencing token.
    pub token: u64,
    /// Its expiry, by the database's clock.
    pub expires_at_ms: i64,
    /// Whether the database's clock is past it.
    pub expired: bool,
}

/// Which replica's call a transaction or statement serves, as the node
/// that owns the connections knows it (the model itself does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CallRef {
    /// The replica, from 1.
    pub replica: u32,
    /// Its term.
    pub term: u32,
    /// The run-wide call number.
    pub call: u64,
}

/// An open transaction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TxnView {
    /// Its number.
    pub txn: TxnId,
    /// The call it serves (`None` for another client's).
    pub caller: Option<CallRef>,
    /// Its session; `None` for another client's (the held-rows fault).
    pub session: Option<SessionId>,
    /// Its fence holds the lease row's share lock.
    pub holds_lease_share: bool,
    /// Rows its `DELETE` locked (gone at `COMMIT`).
    pub rows_deleted: u64,
    /// Rows it only locked.
    pub rows_held: u64,
    /// The statement it runs, if any.
    pub statement: Option<StatementId>,
    /// Idle in transaction since then, when no statement runs.
    pub idle_since_ms: Option<i64>,
    /// A statement failed: it holds no locks and waits for `ROLLBACK`.
    pub aborted: bool,
}

/// A statement in flight.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatementView {
    /// Its number.
    pub statement: StatementId,
    /// The call it serves.
    pub caller: Option<CallRef>,
    /// Its session.
    pub session: SessionId,
    /// What it is: `acquire`, `renew`, `release`, `revoke`, `fence`,
    /// `delete`, `commit`.
    pub kind: &'static str,
    /// The transaction it runs in, for the delete's statements.
    pub txn: Option<TxnId>,
    /// When it started, on the run's time.
    pub started_ms: i64,
    /// Where it is: `waiting`, `working` or `committing`.
    pub phase: &'static str,
    /// Since when it waits, or until when it works or commits.
    pub phase_ms: i64,
    /// Whom it waits for: a transaction's share lock, or a committing
    /// lease statement (`None`: behind the queue's head).
    pub waits_for: Option<String>,
}

impl Database {
    /// The database as it stands at `now_ms` of the run's time, judging the
    /// records' age against `retention_ms`.
    pub fn view(&self, now_ms: i64, retention_ms: i64) -> DbView {
        let clock_ms = self.clock_ms(now_ms);
        let lease = self.lease.stored().map(|lease| LeaseRowView {
            owner: lease.owner_id.clone(),
            token: lease.fencing_token,
            expires_at_ms: lease.expires_at_ms,
            expired: clock_ms >= lease.expires_at_ms,
        });
        let holders = self.lock.holders();
        let transactions = self
            .txns
            .iter()
            .map(|(&txn, open)| TxnView {
                txn,
                caller: None,
                session: open.session,
                holds_lease_share: open.fenced,
                rows_deleted: open.deleted.len() as u64,
                rows_held: open.held.len() as u64,
                statement: open.busy,
                idle_since_ms: open.busy.is_none().then_some(open.idle_since_ms),
                aborted: open.aborted,
            })
            .collect();
        let statements = self
            .statements
            .iter()
            .map(|(&statement, running)| statement_view(statement, running))
            .collect();
        DbView {
            clock_ms,
            lease,
            lease_shared_by: holders
                .iter()
                .filter_map(|h| match h {
                    Holder::Txn(txn) => Some(*txn),
                    Holder::Statement(_) => None,
                })
                .collect(),
            lease_updating: holders.iter().find_map(|h| match h {
                Holder::Statement(id) => Some(*id),
                Holder::Txn(_) => None,
            }),
            lease_queue: self.lock.waiting().collect(),
            transactions,
            statements,
            rows: self.records.len() as u64,
            rows_past_retention: self
                .records
                .count_older_than(clock_ms.saturating_sub(retention_ms))
                as u64,
            rows_locked: self.records.count_locked() as u64,
            oldest_row_ms: self.records.oldest_ms(),
        }
    }
}

fn statement_view(statement: StatementId, running: &super::database::Running) -> StatementView {
    let (kind, txn) = match &running.kind {
        Kind::Lease { statement, .. } => (
            match statement {
                LeaseStatement::Acquire { .. } => "acquire",
                LeaseStatement::Renew { .. } => "renew",
                LeaseStatement::Release { .. } => "release",
                LeaseStatement::Revoke { .. } => "revoke",
            },
            None,
        ),
        Kind::Fence { txn, .. } => ("fence", Some(*txn)),
        Kind::Delete { txn, .. } => ("delete", Some(*txn)),
        Kind::Commit { txn } => ("commit", Some(*txn)),
    };
    let (phase, phase_ms, waits_for) = match &running.phase {
        Phase::Waiting {
            since_ms, blocker, ..
        } => (
            "waiting",
            *since_ms,
            blocker.map(|holder| match holder {
                Holder::Txn(txn) => format!("txn {txn}"),
                Holder::Statement(id) => format!("statement {id}"),
            }),
        ),
        Phase::Working { until_ms } => ("working", *until_ms, None),
        Phase::Committing { ready_ms, .. } => ("committing", *ready_ms, None),
    };
    StatementView {
        statement,
        caller: None,
        session: running.session,
        kind,
        txn,
        started_ms: running.started_ms,
        phase,
        phase_ms,
        waits_for,
    }
}
