//! Where each lane of the picture is, the row of each call's arrow in a
//! replica's lane, and the class each call's outcome is drawn in.

use crate::model::{Actor, FailureKind, OpKind, Outcome};

/// A replica lane's height.
pub(super) const REPLICA_LANE: f64 = 74.0;
/// The lease service's and the database's lane height.
pub(super) const SERVICE_LANE: f64 = 56.0;

/// Where each lane is.
pub struct Layout {
    replicas: u32,
    top: f64,
}

impl Layout {
    /// Lanes for `replicas` replicas below `top`.
    pub fn new(replicas: u32, top: f64) -> Self {
        Self { replicas, top }
    }

    /// The top of replica `n`'s lane (from 1).
    pub fn replica(&self, n: u32) -> f64 {
        self.top + f64::from(n.saturating_sub(1)) * REPLICA_LANE
    }

    /// The top of the lease service's lane.
    pub fn lease(&self) -> f64 {
        self.top + f64::from(self.replicas) * REPLICA_LANE
    }

    /// The top of the database's lane.
    pub fn db(&self) -> f64 {
        self.lease() + SERVICE_LANE
    }

    /// Below the last lane.
    pub fn bottom(&self) -> f64 {
        self.db() + SERVICE_LANE
    }

    /// The middle of `actor`'s lane.
    pub fn middle(&self, actor: Actor) -> f64 {
        match actor {
            Actor::Replica(n) => self.replica(n) + REPLICA_LANE / 2.0,
            Actor::Lease => self.lease() + SERVICE_LANE / 2.0,
            Actor::Db | Actor::World => self.db() + SERVICE_LANE / 2.0,
        }
    }
}

/// The row of a call's arrow inside its replica's lane.
pub(super) fn call_row(op: OpKind) -> f64 {
    match op {
        OpKind::Acquire => 31.0,
        OpKind::Release => 41.0,
        OpKind::Renew => 52.0,
        OpKind::Delete => 64.0,
    }
}

/// The class a call's outcome is drawn in.
pub fn outcome_class(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Lease(None) => "null",
        Outcome::Lease(Some(_)) | Outcome::Done | Outcome::Deleted(_) => "ok",
        Outcome::Failed { kind, detail } => match kind {
            FailureKind::Rejected => "refused",
            FailureKind::Fenced => "fenced",
            FailureKind::Ambiguous if timed_out(detail) => "timedout",
            FailureKind::Ambiguous | FailureKind::Protocol => "ambiguous",
        },
    }
}

/// Whether a failure's detail says the caller stopped waiting (the
/// simulator's "no reply within", the adapters' "no answer ... within").
fn timed_out(detail: &str) -> bool {
    ["no reply within", "no answer", "timed out", "timeout"]
        .iter()
        .any(|words| detail.contains(words))
}
