//! The history of a run: every call, reply and service effect as an event,
//! with JSON-lines and fixed-column text exports.
//!
//! Events carry simulated time, actor and term, never task IDs or anything
//! else that differs between processes, so a history is byte-identical for
//! the same spec.

use serde::{Deserialize, Serialize};

use super::names::OpKind;
use super::term::{CallFailure, FailureKind, ReleaseRec, TermEndRec, TermSummary};

/// A run's header and its events, in the order they happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// What the checker needs to know about the run.
    pub header: Header,
    /// The events; an event's index is its sequence number.
    pub events: Vec<Event>,
}

/// The facts about a run that the clause checks depend on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// The run's seed.
    pub seed: u64,
    /// Replicas, named r1..rN.
    pub replicas: u32,
    /// The workers' retention.
    pub retention_ms: u64,
    /// The workers' batch size.
    pub batch_size: u32,
    /// The workers' per-term row cap.
    pub term_row_cap: u32,
    /// Each replica's clock skew, index 0 for r1.
    pub skews_ms: Vec<i64>,
    /// Rows in the table at the start.
    pub initial_rows: u64,
    /// No fault of any kind was injected.
    pub faults_off: bool,
    /// The run was fault-free and long enough that every stale row must be
    /// gone by the end (LIVE-1).
    pub drain_owed: bool,
    /// Every `stop()` must resolve within this much simulated time.
    pub stop_bound_ms: u64,
    /// The database's `lock_timeout` (0: off, or not known), so a reader
    /// sees which waits outlasted it.
    #[serde(default)]
    pub lock_timeout_ms: u64,
    /// The replay token of the plan that made this history, where its
    /// writer knew it (`sim run --jsonl`, `sim replay --jsonl`, and the
    /// histories real mode saves), so that `sim explain` can start from the
    /// saved file. Absent otherwise, and from every history the simulator
    /// records itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

impl Header {
    /// Replica `replica`'s fixed clock skew (0 when the header names none).
    pub fn skew_ms(&self, replica: u32) -> i64 {
        let index = (replica as usize).checked_sub(1);
        index
            .and_then(|index| self.skews_ms.get(index))
            .copied()
            .unwrap_or(0)
    }
}

/// Who did something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// Worker replica `n` (from 1), as its client saw things.
    Replica(u32),
    /// The lease service, as it applied calls.
    Lease,
    /// The records database, as it applied calls.
    Db,
    /// The simulation itself (faults, the end of the run).
    World,
}

/// One thing that happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Simulated time, in milliseconds since the run began.
    pub at_ms: i64,
    /// Who.
    pub actor: Actor,
    /// The replica's term (its count of acquire calls), 0 outside terms.
    pub term: u32,
    /// What.
    pub kind: EventKind,
}

/// A lease as recorded.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LeaseRec {
    /// The holder.
    pub owner: String,
    /// The fencing token.
    pub token: u64,
    /// Expiry on the lease service's clock.
    pub expires_at_ms: i64,
}

/// A deleted row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RowRec {
    /// Its id.
    pub id: u64,
    /// When it was written.
    pub created_at_ms: i64,
}

/// Whether a row written at `written_ms` was deleted at `deleted_at_ms`
/// (both on one clock) younger than `retention_ms`: one exactly its
/// retention old may go, as DATA-4 has it. The audits of the simulator
/// and of real mode count by it.
pub fn deleted_young(written_ms: i64, deleted_at_ms: i64, retention_ms: i64) -> bool {
    deleted_at_ms - written_ms < retention_ms
}

/// What a replica asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Invocation {
    /// `acquire(owner)`.
    Acquire,
    /// `renew(lease)`.
    Renew {
        /// The lease sent.
        lease: LeaseRec,
    },
    /// `release(lease)`.
    Release {
        /// The lease sent.
        lease: LeaseRec,
    },
    /// `delete_batch(older_than_ms, limit, token)`.
    Delete {
        /// The cutoff sent.
        older_than_ms: i64,
        /// The most rows asked for.
        limit: u32,
        /// The fencing token sent.
        token: u64,
    },
}

impl Invocation {
    /// Which operation this is.
    pub fn kind(&self) -> OpKind {
        match self {
            Self::Acquire => OpKind::Acquire,
            Self::Renew { .. } => OpKind::Renew,
            Self::Release { .. } => OpKind::Release,
            Self::Delete { .. } => OpKind::Delete,
        }
    }
}

/// What a replica got back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// An acquire or renew answer.
    Lease(Option<LeaseRec>),
    /// A release answer.
    Done,
    /// A delete answer: rows deleted.
    Deleted(u64),
    /// A failure: its kind and detail.
    Failed {
        /// The error kind.
        kind: FailureKind,
        /// The detail.
        detail: String,
    },
}

/// The kinds of event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum EventKind {
    /// A replica issued call `call`.
    Invoke {
        /// Run-wide call number.
        call: u64,
        /// The call.
        invocation: Invocation,
    },
    /// A replica received the answer to call `call`.
    Return {
        /// Run-wide call number.
        call: u64,
        /// The operation.
        op: OpKind,
        /// The answer.
        outcome: Outcome,
    },
    /// The lease service granted `lease` (acquire or renew of call `call`).
    Granted {
        /// The call applied.
        call: u64,
        /// The new lease.
        lease: LeaseRec,
    },
    /// The lease service answered call `call` with no lease.
    Refused {
        /// The call applied.
        call: u64,
        /// The operation.
        op: OpKind,
    },
    /// The lease service revoked `lease` while answering a renewal with
    /// `None` (an injected fault: an operator or a failover took it).
    Revoked {
        /// The renewal call.
        call: u64,
        /// The lease revoked.
        lease: LeaseRec,
    },
    /// The lease service applied a release; `cleared` if it was current.
    Released {
        /// The call applied.
        call: u64,
        /// The lease named.
        lease: LeaseRec,
        /// Whether the holder was cleared.
        cleared: bool,
    },
    /// The database committed call `call`'s delete of `rows` (recorded at
    /// the commit); its fence passed and took the lease row's share lock at
    /// `fenced_at_ms`.
    Deleted {
        /// The call applied.
        call: u64,
        /// The token checked.
        token: u64,
        /// When the fence checked the token and locked the lease row.
        fenced_at_ms: i64,
        /// The cutoff used.
        older_than_ms: i64,
        /// The rows removed, oldest first.
        rows: Vec<RowRec>,
        /// The database's clock as the `DELETE` statement read it, which
        /// DATA-4 judges the rows' age by; absent, the clock at the commit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deleted_clock_ms: Option<i64>,
        /// The database's clock as the fence read it, which FEN-2 judges
        /// the lease's expiry by; absent, the clock at `fenced_at_ms`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fenced_clock_ms: Option<i64>,
    },
    /// The database refused call `call` under FEN-2.
    Fenced {
        /// The call refused.
        call: u64,
        /// The token refused.
        token: u64,
        /// Why.
        reason: String,
    },
    /// Call `call`'s lease statement found the lease row share-locked by the
    /// fences of the deletes `behind` (their call numbers) and waits.
    LockWait {
        /// The waiting call.
        call: u64,
        /// Its operation.
        op: OpKind,
        /// The delete calls whose transactions hold the row.
        behind: Vec<u64>,
    },
    /// Another client locked `rows` of the oldest records `FOR UPDATE`.
    RowsHeld {
        /// Rows it locked.
        rows: u64,
        /// For how long.
        for_ms: u64,
    },
    /// That client ended its transaction: the rows are free again.
    RowsFreed {
        /// Rows it had locked.
        rows: u64,
    },
    /// The replica's wall clock was stepped: it read `from_ms` and reads
    /// `to_ms` from now on (its timers are not moved).
    ClockStepped {
        /// The reading just before the step.
        from_ms: i64,
        /// The reading just after.
        to_ms: i64,
    },
    /// The replica's clocks run at `rate_permille` thousandths of true
    /// time from here; the wall clock read `reading_ms` at the change.
    ClockRateSet {
        /// The new rate.
        rate_permille: u64,
        /// The wall clock's reading at the change.
        reading_ms: i64,
    },
    /// The database's clock was stepped: statements read `from_ms` before
    /// and `to_ms` after.
    DbClockStepped {
        /// The reading just before the step.
        from_ms: i64,
        /// The reading just after.
        to_ms: i64,
    },
    /// The replica took `steps` steps (polls, clock readings, timers,
    /// calls) within `window_ms` of simulated time: it spins without
    /// letting time pass, and the run was stopped here (LIVE-3).
    Spinning {
        /// Steps counted in the window.
        steps: u64,
        /// The window of simulated time they were counted in.
        window_ms: u64,
    },
    /// The replica's worker panicked (in `serve()` or `stop()`, or in code
    /// they called): a panic ends its work without a release or a report,
    /// and the run was stopped here (LIVE-4).
    Panicked {
        /// The panic's message and place, `"message (at file:line:col)"`.
        message: String,
    },
    /// The database's synchronous standby stopped answering for `for_ms`:
    /// commits that wrote something wait, holding their locks.
    StandbyStalled {
        /// For how long.
        for_ms: u64,
    },
    /// The standby answers again: waiting commits complete.
    StandbyResumed,
    /// The database rolled back call `call`'s transaction (asked by a
    /// client that gave up or was fenced, or on its own when the client's
    /// connection was gone); `rows` it had deleted are back.
    RolledBack {
        /// The call whose transaction it was.
        call: u64,
        /// Rows its delete had locked, now unlocked.
        rows: u64,
    },
    /// The database ended call `call`'s statement or session on its own,
    /// as PostgreSQL's server-side bounds do: a lock wait or a statement past
    /// its bound fails (nothing applied; a transaction is left aborted), a
    /// session idle inside a transaction past its bound is terminated (its
    /// transaction rolled back), a statement its client cancelled stops.
    Aborted {
        /// The call whose statement or session it was.
        call: u64,
        /// Which bound, or the cancel, and after how long.
        reason: String,
    },
    /// A replica's term ended with this report.
    TermEnded {
        /// How it ended.
        end: TermEndRec,
        /// Rows the worker counted.
        rows: u64,
        /// Batches the worker counted.
        batches: u32,
        /// Renewals the worker counted.
        #[serde(default)]
        renewals: u32,
        /// The release outcome.
        release: ReleaseRec,
    },
    /// A caller called `stop()` on a replica.
    StopCalled {
        /// The caller's number for this replica.
        caller: u32,
    },
    /// That caller's `stop()` resolved.
    StopResolved {
        /// The caller's number.
        caller: u32,
    },
    /// The replica's process was frozen.
    Paused {
        /// For how long.
        for_ms: u64,
    },
    /// It was thawed.
    Resumed,
    /// The network between it and the database was cut, for `for_ms`.
    Partitioned {
        /// For how long.
        for_ms: u64,
    },
    /// The cut healed.
    Healed,
    /// It was killed.
    Crashed,
    /// It was started again with a fresh worker.
    Restarted,
    /// The run ended: the table's final state.
    Final {
        /// Rows left.
        rows_left: u64,
        /// Rows written during the run.
        rows_inserted: u64,
        /// Rows left that were older than the last cutoff any term could
        /// have used long enough ago to have been deleted by a healthy run.
        stale_rows_left: u64,
        /// Rows deleted younger than the retention by the run's true time
        /// (each was the full retention old by the database's clock, which
        /// a step forward moved ahead of true time): what such a step cost.
        #[serde(default, skip_serializing_if = "is_zero")]
        rows_early_by_true_time: u64,
    },
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Outcome {
    /// How a call's result is recorded: `ok` describes an answer, a failure
    /// is [`Outcome::failed`].
    pub fn of<T>(
        result: &Result<T, retention_worker::CallError>,
        ok: impl FnOnce(&T) -> Self,
    ) -> Self {
        match result {
            Ok(answer) => ok(answer),
            Err(error) => Self::failed(error),
        }
    }

    /// How a failed call is recorded: the error's kind and its detail.
    pub fn failed(error: &retention_worker::CallError) -> Self {
        let CallFailure { kind, detail } = error.into();
        Self::Failed { kind, detail }
    }
}

impl From<TermSummary> for EventKind {
    fn from(term: TermSummary) -> Self {
        let TermSummary {
            end,
            rows,
            batches,
            renewals,
            release,
        } = term;
        Self::TermEnded {
            end,
            rows,
            batches,
            renewals,
            release,
        }
    }
}
