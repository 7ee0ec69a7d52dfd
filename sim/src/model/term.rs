//! How a term ended and how a call failed, as the history records them:
//! typed, with serde, and printed as the worker's own reports read.

use std::fmt;

use retention_worker::{CallError, CallErrorKind, LossCause, ReleaseOutcome, TermEnd, TermReport};
use serde::{Deserialize, Serialize};

use super::names::named;

named! {
    /// What kind of failure a call met (the worker's `CallErrorKind`).
    pub enum FailureKind ("failure kind") {
        /// Refused before it was applied.
        Rejected => "rejected",
        /// It may or may not have been applied.
        Ambiguous => "ambiguous",
        /// The repository refused the delete's token (FEN-2).
        Fenced => "fenced",
        /// The answer broke the dependency's contract.
        Protocol => "protocol",
    }
}

/// A failed call: its kind and the adapter's detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallFailure {
    /// The kind.
    pub kind: FailureKind,
    /// The detail.
    pub detail: String,
}

/// How a term ended (the worker's `TermEnd`). A variant worker may know a
/// failure happened without its error, hence the options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TermEndRec {
    /// Someone else holds the lease.
    NotAcquired,
    /// The acquire failed.
    AcquireFailed(Option<CallFailure>),
    /// A short batch: nothing old is left.
    Completed,
    /// The term reached its row cap.
    Capped,
    /// Leadership was lost.
    LeadershipLost(LossRec),
    /// `stop()` was called.
    Stopped,
    /// A delete failed.
    DeleteFailed(Option<CallFailure>),
}

/// Why leadership was lost (the worker's `LossCause`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossRec {
    /// A renewal answered null.
    NullRenewal,
    /// A renewal failed.
    RenewalFailed(Option<CallFailure>),
    /// No renewal answer by the lease's expiry.
    RenewalUnanswered,
    /// The lease expired before a renewal was due.
    ExpiredBeforeRenewal,
    /// A renewed lease was already inside the expiry margin.
    LeaseTooShort,
}

/// What happened to the term's lease at its end (the worker's
/// `ReleaseOutcome`, plus a variant's skipped release).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseRec {
    /// No lease was held at the end.
    NotOwed,
    /// The latest lease was released.
    Released,
    /// The release call failed.
    Failed(Option<CallFailure>),
    /// A flawed worker did not even try.
    Skipped,
}

impl TermEndRec {
    /// Whether the term lost leadership (the service loop backs off then).
    pub fn lost_leadership(&self) -> bool {
        matches!(self, Self::LeadershipLost(_))
    }
}

impl From<&CallError> for CallFailure {
    fn from(error: &CallError) -> Self {
        let kind = match error.kind {
            CallErrorKind::Rejected => FailureKind::Rejected,
            CallErrorKind::Ambiguous => FailureKind::Ambiguous,
            CallErrorKind::Fenced => FailureKind::Fenced,
            _ => FailureKind::Protocol,
        };
        Self {
            kind,
            detail: error.detail.clone(),
        }
    }
}

fn failure(error: &CallError) -> Option<CallFailure> {
    Some(error.into())
}

impl From<&TermEnd> for TermEndRec {
    fn from(end: &TermEnd) -> Self {
        match end {
            TermEnd::NotAcquired => Self::NotAcquired,
            TermEnd::AcquireFailed(error) => Self::AcquireFailed(failure(error)),
            TermEnd::Completed => Self::Completed,
            TermEnd::Capped => Self::Capped,
            TermEnd::LeadershipLost(cause) => Self::LeadershipLost(cause.into()),
            TermEnd::Stopped => Self::Stopped,
            TermEnd::DeleteFailed(error) => Self::DeleteFailed(failure(error)),
        }
    }
}

impl From<&LossCause> for LossRec {
    fn from(cause: &LossCause) -> Self {
        match cause {
            LossCause::NullRenewal => Self::NullRenewal,
            LossCause::RenewalFailed(error) => Self::RenewalFailed(failure(error)),
            LossCause::RenewalUnanswered => Self::RenewalUnanswered,
            LossCause::ExpiredBeforeRenewal => Self::ExpiredBeforeRenewal,
            LossCause::LeaseTooShort => Self::LeaseTooShort,
        }
    }
}

impl From<&ReleaseOutcome> for ReleaseRec {
    fn from(release: &ReleaseOutcome) -> Self {
        match release {
            ReleaseOutcome::NotOwed => Self::NotOwed,
            ReleaseOutcome::Released => Self::Released,
            ReleaseOutcome::Failed(error) => Self::Failed(failure(error)),
        }
    }
}

/// How one term ended, as a worker under test reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermSummary {
    /// How it ended.
    pub end: TermEndRec,
    /// Rows the worker counted as deleted.
    pub rows: u64,
    /// Delete calls that returned a count.
    pub batches: u32,
    /// Renewals the worker stored.
    pub renewals: u32,
    /// What happened to the lease.
    pub release: ReleaseRec,
}

impl From<&TermReport> for TermSummary {
    fn from(report: &TermReport) -> Self {
        Self {
            end: (&report.end).into(),
            rows: report.rows_deleted,
            batches: report.batches,
            renewals: report.renewals,
            release: (&report.release).into(),
        }
    }
}

// The timeline prints a term's end as the worker's `Debug` of it reads, so
// that a timeline reads the same whichever worker produced it.

impl fmt::Display for CallFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CallError {{ kind: {:?}, detail: {:?} }}",
            self.kind, self.detail
        )
    }
}

fn with_error(f: &mut fmt::Formatter<'_>, name: &str, error: &Option<CallFailure>) -> fmt::Result {
    match error {
        Some(error) => write!(f, "{name}({error})"),
        None => f.write_str(name),
    }
}

impl fmt::Display for TermEndRec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAcquired => f.write_str("NotAcquired"),
            Self::AcquireFailed(error) => with_error(f, "AcquireFailed", error),
            Self::Completed => f.write_str("Completed"),
            Self::Capped => f.write_str("Capped"),
            Self::LeadershipLost(cause) => write!(f, "LeadershipLost({cause})"),
            Self::Stopped => f.write_str("Stopped"),
            Self::DeleteFailed(error) => with_error(f, "DeleteFailed", error),
        }
    }
}

impl fmt::Display for LossRec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NullRenewal => f.write_str("NullRenewal"),
            Self::RenewalFailed(error) => with_error(f, "RenewalFailed", error),
            Self::RenewalUnanswered => f.write_str("RenewalUnanswered"),
            Self::ExpiredBeforeRenewal => f.write_str("ExpiredBeforeRenewal"),
            Self::LeaseTooShort => f.write_str("LeaseTooShort"),
        }
    }
}

impl fmt::Display for ReleaseRec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotOwed => f.write_str("NotOwed"),
            Self::Released => f.write_str("Released"),
            Self::Failed(error) => with_error(f, "Failed", error),
            Self::Skipped => f.write_str("Skipped"),
        }
    }
}
