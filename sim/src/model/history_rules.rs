//! The rules a well-formed history's parts keep, one function each: the
//! header's ranges, which actor records which event, which operation's
//! calls can have which effect and answer, and the names problems use.
//! `validate.rs` walks a history with them.

use retention_worker::{MAX_BATCH_SIZE, MAX_TERM_ROW_CAP};

use super::history::{Actor, Event, EventKind, Header, LeaseRec, Outcome};
use super::limits::{DAY_MS, HOUR_MS, MAX_ROWS, REPLICAS};
use super::names::OpKind;

/// The header's fields against the ranges a run can have.
pub(super) fn header_problems(header: &Header) -> Vec<String> {
    let mut problems = Vec::new();
    let mut outside = |field: &str, value: String, range: String| {
        problems.push(format!("line 1: header.{field}: {value} is not in {range}"));
    };
    if !REPLICAS.contains(&header.replicas) {
        let range = format!("{}..={}", REPLICAS.start(), REPLICAS.end());
        outside("replicas", header.replicas.to_string(), range);
    }
    if !(1..=MAX_BATCH_SIZE).contains(&header.batch_size) {
        let range = format!("1..={MAX_BATCH_SIZE}");
        outside("batch_size", header.batch_size.to_string(), range);
    }
    if !(1..=MAX_TERM_ROW_CAP).contains(&header.term_row_cap) {
        let range = format!("1..={MAX_TERM_ROW_CAP}");
        outside("term_row_cap", header.term_row_cap.to_string(), range);
    }
    if !(1..=365 * DAY_MS).contains(&header.retention_ms) {
        let range = format!("1..={}", 365 * DAY_MS);
        outside("retention_ms", header.retention_ms.to_string(), range);
    }
    if header.initial_rows > 2 * MAX_ROWS {
        let range = format!("0..={}", 2 * MAX_ROWS);
        outside("initial_rows", header.initial_rows.to_string(), range);
    }
    for (index, skew) in header.skews_ms.iter().enumerate() {
        if skew.unsigned_abs() > DAY_MS {
            let field = format!("skews_ms[{index}]");
            outside(&field, skew.to_string(), format!("-{DAY_MS}..={DAY_MS}"));
        }
    }
    // The bound every run's header carries (`RunSpec::stop_bound_ms`):
    // three call timeouts of 1 ms to an hour, the longest pause and a
    // second. Overlapping pauses merge, each starting within the run (at
    // most an hour) and lasting at most an hour: under two hours. Outside
    // it the worker would be judged by an obligation no run ever set.
    let stop_bounds = (3 + 1_000)..=(3 * HOUR_MS + (2 * HOUR_MS - 1) + 1_000);
    if !stop_bounds.contains(&header.stop_bound_ms) {
        let range = format!("{}..={}", stop_bounds.start(), stop_bounds.end());
        outside("stop_bound_ms", header.stop_bound_ms.to_string(), range);
    }
    if header.skews_ms.len() != header.replicas as usize {
        problems.push(format!(
            "line 1: header.skews_ms: {} entries for {} replicas",
            header.skews_ms.len(),
            header.replicas
        ));
    }
    problems
}

/// Who records `event`'s kind, when its actor is not that.
pub(super) fn wrong_actor(event: &Event) -> Option<&'static str> {
    use EventKind as K;
    let (allowed, who): (fn(&Actor) -> bool, _) = match event.kind {
        K::Invoke { .. }
        | K::Return { .. }
        | K::TermEnded { .. }
        | K::StopCalled { .. }
        | K::StopResolved { .. }
        | K::Paused { .. }
        | K::Resumed
        | K::Partitioned { .. }
        | K::Healed
        | K::Crashed
        | K::Restarted
        | K::ClockStepped { .. }
        | K::ClockRateSet { .. }
        | K::Spinning { .. }
        | K::Panicked { .. } => (|a| matches!(a, Actor::Replica(_)), "a replica"),
        K::Granted { .. } | K::Refused { .. } | K::Revoked { .. } | K::Released { .. } => {
            (|a| *a == Actor::Lease, "the lease service")
        }
        K::Deleted { .. }
        | K::Fenced { .. }
        | K::RowsHeld { .. }
        | K::RowsFreed { .. }
        | K::StandbyStalled { .. }
        | K::StandbyResumed
        | K::DbClockStepped { .. }
        | K::RolledBack { .. } => (|a| *a == Actor::Db, "the database"),
        K::LockWait { .. } | K::Aborted { .. } => (
            |a| matches!(a, Actor::Lease | Actor::Db),
            "the lease service or the database",
        ),
        K::Final { .. } => (|a| *a == Actor::World, "the world"),
    };
    (!allowed(&event.actor)).then_some(who)
}

/// The lease a service event names (a replica may hear of another owner
/// from a garbled reply, the lease row holds only replicas).
pub(super) fn service_lease(event: &Event) -> Option<&LeaseRec> {
    match &event.kind {
        EventKind::Granted { lease, .. }
        | EventKind::Revoked { lease, .. }
        | EventKind::Released { lease, .. } => Some(lease),
        _ => None,
    }
}

/// Which operations' calls can have a service effect of `kind` (`None`: any).
pub(super) fn effect_ops(kind: &EventKind) -> Option<&'static [&'static str]> {
    use EventKind as K;
    Some(match kind {
        K::Granted { .. } => &["acquire", "renew"],
        K::Revoked { .. } => &["renew"],
        K::Released { .. } => &["release"],
        K::Deleted { .. } | K::Fenced { .. } | K::RolledBack { .. } => &["delete"],
        K::Refused { .. } => &["acquire", "renew", "release"],
        // A fence waits for an update that holds the row until durable.
        K::LockWait { .. } => &["acquire", "renew", "release", "delete"],
        _ => return None,
    })
}

/// Whether `outcome` is an answer an `op` can give.
pub(super) fn outcome_fits(op: OpKind, outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Failed { .. } => true,
        Outcome::Lease(_) => matches!(op, OpKind::Acquire | OpKind::Renew),
        Outcome::Done => op == OpKind::Release,
        Outcome::Deleted(_) => op == OpKind::Delete,
    }
}

/// The call an event answers or applies, other than its invoke.
pub(super) fn called(kind: &EventKind) -> Option<u64> {
    use EventKind as K;
    match kind {
        K::Return { call, .. }
        | K::LockWait { call, .. }
        | K::RolledBack { call, .. }
        | K::Aborted { call, .. } => Some(*call),
        _ => kind.effect_call(),
    }
}

impl EventKind {
    /// The call whose effect this event records (a grant, a refusal, a
    /// revocation, a release, a delete or a fence), if it records one.
    pub fn effect_call(&self) -> Option<u64> {
        use EventKind as K;
        match self {
            K::Granted { call, .. }
            | K::Refused { call, .. }
            | K::Revoked { call, .. }
            | K::Released { call, .. }
            | K::Deleted { call, .. }
            | K::Fenced { call, .. } => Some(*call),
            _ => None,
        }
    }
}

pub(super) fn actor_name(actor: Actor) -> String {
    match actor {
        Actor::Replica(n) => format!("r{n}"),
        Actor::Lease => "the lease service".into(),
        Actor::Db => "the database".into(),
        Actor::World => "the world".into(),
    }
}

/// The event's name as the JSON lines write it.
pub(super) fn kind_name(kind: &EventKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|value| value.get("event")?.as_str().map(str::to_owned))
        .unwrap_or_default()
}
