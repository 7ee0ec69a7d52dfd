//! The lease a worker holds and the error type of every dependency call.

use std::fmt;

/// A grant of leadership from the lease service.
///
/// The lease service rotates `fencing_token` on every successful acquire and
/// renew, so a larger token always means a newer grant (`worker/CONTRACT.md`).
/// `expires_at_ms` is on the lease service's clock, which the worker's own
/// clock may disagree with; [`crate::WorkerConfig::expiry_margin_ms`] absorbs
/// that skew.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lease {
    /// The replica the lease was granted to.
    pub owner_id: String,
    /// The token every protected call must carry (FEN-1, FEN-2).
    pub fencing_token: u64,
    /// When the lease lapses, in milliseconds on the lease service's clock.
    pub expires_at_ms: i64,
}

impl Lease {
    /// When the lease service granted (or last renewed) this lease, on its
    /// clock, given the TTL it grants: a time that clock had reached, which
    /// a replica whose own clock is off can still rely on.
    pub fn granted_at_ms(&self, lease_ttl_ms: u64) -> i64 {
        let ttl_ms = i64::try_from(lease_ttl_ms).unwrap_or(i64::MAX);
        self.expires_at_ms.saturating_sub(ttl_ms)
    }
}

impl fmt::Display for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}#{} (expires {} ms)",
            self.owner_id, self.fencing_token, self.expires_at_ms
        )
    }
}

/// Why a dependency call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum CallErrorKind {
    /// The service refused the call and did not apply it.
    Rejected,
    /// Nobody knows whether the call was applied: a timeout or a lost reply.
    /// A renewal can fail this way after the service already rotated the token.
    Ambiguous,
    /// The repository refused a delete because its fencing token is not the
    /// current holder's unexpired token (FEN-2).
    Fenced,
    /// The reply broke the dependency's own contract, for example a renewal
    /// whose token did not increase. The worker treats it like a failure.
    Protocol,
}

/// A failed call to the lease service or the records repository.
///
/// Adapters map their transport and database errors into this type; the worker
/// only needs to know that the call failed, and the kind is kept for reports.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallError {
    /// What kind of failure this was.
    pub kind: CallErrorKind,
    /// A human-readable detail from the adapter.
    pub detail: String,
}

impl CallError {
    /// A call the service refused without applying it.
    pub fn rejected(detail: impl Into<String>) -> Self {
        Self::new(CallErrorKind::Rejected, detail)
    }

    /// A call whose outcome is unknown (timeout, lost reply).
    pub fn ambiguous(detail: impl Into<String>) -> Self {
        Self::new(CallErrorKind::Ambiguous, detail)
    }

    /// A delete refused for carrying a stale or expired fencing token.
    pub fn fenced(detail: impl Into<String>) -> Self {
        Self::new(CallErrorKind::Fenced, detail)
    }

    /// A reply that violates the dependency's contract.
    pub fn protocol(detail: impl Into<String>) -> Self {
        Self::new(CallErrorKind::Protocol, detail)
    }

    fn new(kind: CallErrorKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            CallErrorKind::Rejected => "rejected",
            CallErrorKind::Ambiguous => "outcome unknown",
            CallErrorKind::Fenced => "fenced",
            CallErrorKind::Protocol => "protocol violation",
        };
        write!(f, "{kind}: {}", self.detail)
    }
}

impl std::error::Error for CallError {}

/// Why the repository refused a delete (FEN-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceRejection {
    /// Nobody holds the lease.
    NoHolder,
    /// The token is not the current holder's.
    StaleToken {
        /// The token that would have been accepted.
        current_token: u64,
    },
    /// The token is current but its lease has expired.
    Expired {
        /// When the lease expired.
        expires_at_ms: i64,
    },
}

impl fmt::Display for FenceRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoHolder => write!(f, "no lease is held"),
            Self::StaleToken { current_token } => {
                write!(f, "stale token (current is {current_token})")
            }
            Self::Expired { expires_at_ms } => write!(f, "lease expired at {expires_at_ms} ms"),
        }
    }
}
