//! What clients send the database, what it answers, and the effects a
//! reader of the run needs to see (waits, cut statements, released locks).

use retention_worker::{FenceRejection, Lease};

use crate::model::RowRec;

/// A statement, as the caller numbered it (unique in a run).
pub type StatementId = u64;
/// An open transaction.
pub type TxnId = u64;
/// A client connection (the simulator gives every call its own).
pub type SessionId = u64;

/// The autocommitted `UPDATE`s of the lease row (`worker/src/pg/lease.rs`).
/// Each reads the clock once, in a CTE at statement start, and keeps that
/// reading if it has to wait for the row: expiry is judged at the start,
/// a new expiry is the start plus the TTL, and the `WHERE` is re-checked
/// against the row as the waited-for transactions left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseStatement {
    /// `ACQUIRE`: grants iff the row is released or expired at the start.
    Acquire {
        /// The caller's owner id.
        owner: String,
    },
    /// `RENEW`: the next token iff `lease` is exactly the row, unexpired at
    /// the start.
    Renew {
        /// The lease sent.
        lease: Lease,
    },
    /// `RELEASE`: clears the owner iff `lease` is exactly the row
    /// (compare-and-set, no clock).
    Release {
        /// The lease sent.
        lease: Lease,
    },
    /// The injected revoke (an operator or a failover taking the lease):
    /// like `RELEASE`, but only while the lease is unexpired at the start.
    Revoke {
        /// The lease taken.
        lease: Lease,
    },
}

/// What a lease statement did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseAnswer {
    /// An acquire or renewal granted this lease.
    Granted(Lease),
    /// An acquire or renewal matched no row: no lease.
    Refused,
    /// A release or revoke; `cleared` if it matched and cleared the owner.
    Cleared {
        /// Whether the owner was cleared.
        cleared: bool,
    },
}

/// A lease statement that has been applied and committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The caller's number for it.
    pub id: StatementId,
    /// The statement.
    pub statement: LeaseStatement,
    /// The database's clock its CTE read, at statement start.
    pub started_ms: i64,
    /// When it took the row (its commit may end later).
    pub applied_ms: i64,
    /// What it did.
    pub answer: LeaseAnswer,
}

/// One message a client sends on its session, with the times the server
/// will spend on it (drawn by the caller, so the model stays a pure state
/// machine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// An autocommitted lease statement; if it locks the row, its commit
    /// takes `commit_ms` to be durable (and waits for the standby).
    Lease {
        /// The statement.
        statement: LeaseStatement,
        /// Time to flush its commit and hear from the standby.
        commit_ms: u64,
    },
    /// `BEGIN` (READ COMMITTED).
    Begin,
    /// `FENCE` in `txn` (`worker/src/pg/records.rs`).
    Fence {
        /// The transaction.
        txn: TxnId,
        /// The token checked.
        token: u64,
    },
    /// `DELETE_OLDEST` in `txn`, working `work_ms` with its rows locked.
    Delete {
        /// The transaction.
        txn: TxnId,
        /// The cutoff.
        older_than_ms: i64,
        /// The most rows.
        limit: u32,
        /// How long the statement works.
        work_ms: u64,
        /// `$3`: rows must also be this old by the database's clock as the
        /// statement reads it; 0 turns that bound off.
        retention_ms: u64,
    },
    /// `COMMIT` of `txn`, durable after `commit_ms` (and the standby).
    Commit {
        /// The transaction.
        txn: TxnId,
        /// Time to flush the commit and hear from the standby.
        commit_ms: u64,
    },
    /// `ROLLBACK` of `txn` (an abort waits for nobody).
    Rollback {
        /// The transaction.
        txn: TxnId,
    },
}

/// A statement's successful answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A lease statement, applied and durable.
    Lease(Applied),
    /// `BEGIN` opened this transaction.
    Begun(TxnId),
    /// The fence took the share lock, or matched no row (FEN-2 refused).
    Fence(Result<(), FenceRejection>),
    /// The rows the `DELETE` removed (they go at `COMMIT`).
    Deleted(Vec<RowRec>),
    /// `COMMIT` made these deletions durable.
    Committed(Vec<RowRec>),
    /// `COMMIT` of an aborted transaction: PostgreSQL rolls it back and
    /// answers with the command tag `ROLLBACK`, not an error (so
    /// tokio-postgres reports success).
    CommitRolledBack,
    /// `ROLLBACK` done.
    RolledBack,
}

/// Why a statement did not answer normally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A server-side bound or the client's cancel ended it: nothing applied,
    /// and a transaction it ran in is aborted.
    Cut(String),
    /// An error the server raised at once (a statement in an aborted
    /// transaction).
    Failed(String),
    /// The session or transaction is gone (the server ended it).
    Closed(String),
}

/// Who holds the lease row: a transaction's share lock, or an update
/// holding it until its commit is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Holder {
    /// A transaction's `FOR SHARE`.
    Txn(TxnId),
    /// A lease statement committing.
    Statement(StatementId),
}

/// Something the database did that a history records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Statement `id` began a lock acquisition attempt (`attempt` from 1):
    /// it waits behind `behind`, with a fresh `lock_timeout`.
    Waits {
        /// The statement.
        id: StatementId,
        /// Its attempt, from 1.
        attempt: u32,
        /// Who it waits for.
        behind: Vec<Holder>,
    },
    /// Statement `id` answered.
    Done {
        /// The statement.
        id: StatementId,
        /// Its answer.
        answer: Result<Answer, Refusal>,
    },
    /// `txn`, which had fenced, let go of its locks with its rows kept (an
    /// error aborted it, or it rolled back): `rows` its delete had locked.
    LocksReleased {
        /// The transaction.
        txn: TxnId,
        /// Rows unlocked.
        rows: u64,
    },
    /// The server ended `txn`'s session: idle in the transaction too long.
    SessionEnded {
        /// The transaction.
        txn: TxnId,
        /// Why.
        reason: String,
    },
}

/// An effect and the database's instant for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timed {
    /// When.
    pub at_ms: i64,
    /// What.
    pub effect: Effect,
}
