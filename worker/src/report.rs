//! What a term and a service loop report back, and the errors `run()` returns.

use std::fmt;

use crate::CallError;

/// How one leadership term ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermEnd {
    /// The lease service said someone else holds the lease (ACQ-1).
    NotAcquired,
    /// The acquire call failed; nothing else was called (ACQ-1).
    AcquireFailed(CallError),
    /// A batch came back short: nothing older than the cutoff is left (CAP-1).
    Completed,
    /// The term reached its row cap and yields (CAP-1).
    Capped,
    /// Leadership was lost; no delete was issued after the loss (REN-3).
    LeadershipLost(LossCause),
    /// `stop()` was called; work in flight finished first (STP-1, STP-3).
    Stopped,
    /// A delete failed; the lease was released all the same (REL-3).
    DeleteFailed(CallError),
}

/// Why leadership was lost. Every cause goes through one loss path (REN-3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LossCause {
    /// The lease service answered a renewal with `None`: another replica may
    /// already hold the lease, so no release is owed (REL-3).
    NullRenewal,
    /// The renewal call failed. The lease may still be ours, so the exit path
    /// releases it; compare-and-set makes that harmless if it is not (REL-3).
    RenewalFailed(CallError),
    /// The renewal had not answered when the lease expired on the worker's
    /// clock. The call is still awaited (STP-3), never abandoned.
    RenewalUnanswered,
    /// The lease had expired on the worker's clock before a renewal was due,
    /// as after a process pause longer than the TTL.
    ExpiredBeforeRenewal,
    /// A freshly renewed lease was already within `expiry_margin_ms` of
    /// expiring on the worker's clock, so no delete could start safely.
    LeaseTooShort,
}

/// Whether and how the term gave its lease back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseOutcome {
    /// No lease was held at the end: never acquired, or a null renewal said
    /// it was gone (REL-1, REL-3).
    NotOwed,
    /// The latest lease was released (REL-1).
    Released,
    /// The release call failed; the lease will lapse at its expiry.
    Failed(CallError),
}

/// The outcome of one call of [`crate::Worker::run`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TermReport {
    /// How the term ended.
    pub end: TermEnd,
    /// Rows the repository reported deleted in this term.
    pub rows_deleted: u64,
    /// Delete calls that returned a count.
    pub batches: u32,
    /// Successful renewals.
    pub renewals: u32,
    /// The term's one cutoff (CUT-1), if it got that far.
    pub cutoff_ms: Option<i64>,
    /// The newest fencing token the term held.
    pub last_fencing_token: Option<u64>,
    /// What happened to the lease at the end.
    pub release: ReleaseOutcome,
}

impl TermReport {
    pub(crate) fn new(end: TermEnd) -> Self {
        Self {
            end,
            rows_deleted: 0,
            batches: 0,
            renewals: 0,
            cutoff_ms: None,
            last_fencing_token: None,
            release: ReleaseOutcome::NotOwed,
        }
    }
}

/// Why [`crate::Worker::run`] did not run a term at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunError {
    /// `stop()` was called before this `run()`; no dependency was called
    /// (STP-6).
    Stopped,
    /// Another `run()` of the same worker is in progress.
    AlreadyRunning,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Stopped => "the worker was stopped; stop() is terminal (STP-6)",
            Self::AlreadyRunning => "another run() of this worker is in progress",
        })
    }
}

impl std::error::Error for RunError {}

/// Totals of a [`crate::Worker::serve`] loop, returned once it is stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeSummary {
    /// Terms run, whatever their end.
    pub terms: u32,
    /// Terms that acquired the lease.
    pub terms_led: u32,
    /// Terms that ended in leadership loss.
    pub terms_lost: u32,
    /// Rows deleted over all terms.
    pub rows_deleted: u64,
}
