//! Coverage probes, in the spirit of FoundationDB's code probes: named
//! situations counted in a history, so that a sweep shows what it reached
//! and a test fails when a change silently stops reaching one.

use std::collections::BTreeMap;

use crate::model::{
    Actor, EventKind, FailureKind, History, Invocation, LossRec, OpKind, Outcome, TermEndRec,
};

/// Every probe, with what it counts. A sweep that never reaches one did
/// not exercise that situation, whatever its verdict.
pub const PROBES: &[(&str, &str)] = &[
    ("acquire-granted", "an acquire answered with a lease"),
    (
        "acquire-refused",
        "an acquire answered null: the lease was held",
    ),
    ("renewal-granted", "a renewal answered with a newer lease"),
    (
        "renewal-after-expiry",
        "a renewal answered after the lease it renewed expired",
    ),
    (
        "renewal-waited-behind-delete",
        "a renewal queued behind a delete's fence",
    ),
    (
        "acquire-waited-behind-delete",
        "an acquire queued behind a delete's fence",
    ),
    (
        "delete-fenced-by-own-renewal",
        "a delete refused because its own renewal rotated the token",
    ),
    (
        "delete-fenced-by-successor",
        "a delete refused because another replica held the lease",
    ),
    (
        "delete-fenced-expired",
        "a delete refused because its lease had expired",
    ),
    (
        "delete-committed-after-expiry",
        "a delete committed after its lease's expiry, fenced before it",
    ),
    (
        "successor-granted-during-old-delete",
        "a lease granted while another replica's delete was in flight",
    ),
    (
        "short-batch",
        "a delete answered fewer rows than it asked for",
    ),
    (
        "rows-held-by-another-client",
        "another client held rows FOR UPDATE",
    ),
    (
        "transaction-rolled-back",
        "a delete's transaction rolled back with its rows kept",
    ),
    (
        "server-ended-idle-session",
        "the server ended a session idle in its transaction",
    ),
    (
        "statement-timeout",
        "the server cut a delete at its statement bound",
    ),
    (
        "lock-timeout",
        "the server failed a lease statement at its lock bound",
    ),
    (
        "cancelled-by-client",
        "a statement stopped by its client's cancel request",
    ),
    (
        "orphan-grant",
        "a lease granted to a call whose caller saw a failure",
    ),
    ("release-cleared", "a release cleared the lease"),
    (
        "release-cleared-nothing",
        "a release named a lease that was no longer current",
    ),
    ("call-ambiguous", "a call failed as ambiguous"),
    ("call-rejected", "a call failed as refused"),
    (
        "corrupt-reply",
        "an acquire or renewal answered with a lease the worker must refuse",
    ),
    (
        "stop-during-acquire",
        "stop() called while an acquire was in flight",
    ),
    (
        "stop-during-renew",
        "stop() called while a renewal was in flight",
    ),
    (
        "stop-during-delete",
        "stop() called while a delete was in flight",
    ),
    (
        "stop-during-release",
        "stop() called while a release was in flight",
    ),
    (
        "stop-racing-a-granted-acquire",
        "stop() called during an acquire that then granted",
    ),
    (
        "crash-mid-delete",
        "a replica crashed with a delete in flight",
    ),
    (
        "pause-outlived-the-lease",
        "a pause lasted past the expiry of the lease its replica held",
    ),
    (
        "cut-outlived-the-lease",
        "a cut from the database lasted past the expiry of the lease its replica held",
    ),
    ("term-capped", "a term ended at its row cap"),
    ("term-completed", "a term ended with a short batch"),
    ("term-stopped", "a term ended by stop()"),
    ("term-not-acquired", "a term found the lease held"),
    ("term-acquire-failed", "a term's acquire failed"),
    ("term-delete-failed", "a term ended by a failed delete"),
    ("loss-null-renewal", "leadership lost to a null renewal"),
    ("loss-renewal-failed", "leadership lost to a failed renewal"),
    (
        "loss-renewal-unanswered",
        "leadership lost to a renewal unanswered at expiry",
    ),
    (
        "loss-expired-before-renewal",
        "leadership lost: the lease expired before the renewal was due",
    ),
    (
        "loss-lease-too-short",
        "leadership lost: a renewed lease was already inside the margin",
    ),
    (
        "lock-wait-restarted",
        "a statement began a second lock acquisition attempt (a fresh lock_timeout)",
    ),
    (
        "lease-applied-after-lock-timeout",
        "a lease statement applied after waiting longer than lock_timeout in all",
    ),
    (
        "renewal-granted-as-a-cut-delete-let-go",
        "a renewal granted the instant a failed delete's abort released the row",
    ),
    (
        "fence-waited-behind-commit",
        "a fence queued behind an update holding the row until durable",
    ),
    (
        "commit-held-by-standby",
        "a commit completed only when a stalled standby answered again",
    ),
    ("clock-stepped", "a replica's wall clock was stepped"),
    ("clock-rate-changed", "a replica's clocks ran fast or slow"),
    (
        "term-outlived-a-clock-step",
        "a term began before its replica's clock was stepped and deleted after",
    ),
    (
        "guard-gave-up-after-a-step-forward",
        "a term gave up on a lease still valid, its clock stepped forward",
    ),
    (
        "renewal-sent-late-by-a-slow-clock",
        "a slow clock sent a renewal after its lease had expired",
    ),
    (
        "db-clock-stepped",
        "the database's clock was stepped (a failover to another host's clock)",
    ),
    (
        "grant-after-a-db-clock-step",
        "a lease granted on the database's clock after it was stepped",
    ),
];

/// What is known about one call while the history is read.
struct Call {
    replica: u32,
    op: OpKind,
    invocation: Invocation,
    returned: bool,
    stopped_during: bool,
}

/// The probes `history` reached, with counts; every probe is a key.
pub fn coverage(history: &History) -> BTreeMap<&'static str, u64> {
    let mut hits: BTreeMap<&'static str, u64> = PROBES.iter().map(|(name, _)| (*name, 0)).collect();
    let mut hit = |name: &'static str| {
        *hits.get_mut(name).expect("a listed probe") += 1;
    };
    let mut calls: BTreeMap<u64, Call> = BTreeMap::new();
    // Expiries are on the database's clock, events on the run's time.
    let db_clock = super::clocks::HostClock::of_database(history);
    let db_ms = |at_ms: i64| db_clock.reading_at(at_ms);
    // The owner of the latest grant. A fence that answers "stale token"
    // found that grant in the row: a release or revocation empties the
    // row, and a fence then finds no lease at all, until the next grant.
    let mut granted_last_to: Option<String> = None;
    let mut expiry_by_token: BTreeMap<u64, i64> = BTreeMap::new();
    let mut granted_calls = std::collections::BTreeSet::new();
    // Each replica's newest lease expiry as its client saw it.
    let mut held_until: BTreeMap<u32, i64> = BTreeMap::new();
    let owner_of = |replica: u32| format!("r{replica}");
    for event in &history.events {
        let replica = match event.actor {
            Actor::Replica(n) => Some(n),
            _ => None,
        };
        let in_flight = |calls: &BTreeMap<u64, Call>, replica: u32, op: OpKind| {
            calls
                .values()
                .any(|c| c.replica == replica && c.op == op && !c.returned)
        };
        match &event.kind {
            EventKind::Invoke { call, invocation } => {
                let call_record = Call {
                    replica: replica.unwrap_or(0),
                    op: invocation.kind(),
                    invocation: invocation.clone(),
                    returned: false,
                    stopped_during: false,
                };
                calls.insert(*call, call_record);
            }
            EventKind::Return { call, op, outcome } => {
                let Some(record) = calls.get_mut(call) else {
                    continue;
                };
                record.returned = true;
                match (op, outcome) {
                    (OpKind::Acquire, Outcome::Lease(Some(lease)))
                        if lease.owner != owner_of(record.replica) =>
                    {
                        hit("corrupt-reply");
                    }
                    (OpKind::Renew, Outcome::Lease(Some(lease))) if matches!(&record.invocation, Invocation::Renew { lease: sent } if lease.token <= sent.token) =>
                    {
                        hit("corrupt-reply");
                    }
                    (OpKind::Acquire, Outcome::Lease(Some(lease))) => {
                        hit("acquire-granted");
                        if record.stopped_during {
                            hit("stop-racing-a-granted-acquire");
                        }
                        held_until.insert(record.replica, lease.expires_at_ms);
                    }
                    (OpKind::Acquire, Outcome::Lease(None)) => hit("acquire-refused"),
                    (OpKind::Renew, Outcome::Lease(Some(lease))) => {
                        hit("renewal-granted");
                        held_until.insert(record.replica, lease.expires_at_ms);
                    }
                    (OpKind::Delete, Outcome::Deleted(rows)) => {
                        if let Invocation::Delete { limit, .. } = record.invocation
                            && *rows < u64::from(limit)
                        {
                            hit("short-batch");
                        }
                    }
                    (_, Outcome::Failed { kind, .. }) if granted_calls.contains(call) => {
                        // Applied, and the caller never heard.
                        hit("orphan-grant");
                        if *kind == FailureKind::Ambiguous {
                            hit("call-ambiguous");
                        }
                    }
                    (_, Outcome::Failed { kind, .. }) => match kind {
                        FailureKind::Ambiguous => hit("call-ambiguous"),
                        FailureKind::Rejected => hit("call-rejected"),
                        FailureKind::Protocol | FailureKind::Fenced => {}
                    },
                    _ => {}
                }
                if let (OpKind::Renew, Invocation::Renew { lease }) = (op, &record.invocation)
                    && db_ms(event.at_ms) >= lease.expires_at_ms
                {
                    hit("renewal-after-expiry");
                }
            }
            EventKind::Granted { call, lease } => {
                let others_deleting = calls.values().any(|c| {
                    c.op == OpKind::Delete && !c.returned && owner_of(c.replica) != lease.owner
                });
                let is_acquire = calls.get(call).is_some_and(|c| c.op == OpKind::Acquire);
                if is_acquire && others_deleting {
                    hit("successor-granted-during-old-delete");
                }
                if calls.get(call).is_some_and(|c| c.returned) {
                    hit("orphan-grant");
                }
                granted_calls.insert(*call);
                granted_last_to = Some(lease.owner.clone());
                expiry_by_token.insert(lease.token, lease.expires_at_ms);
            }
            EventKind::Released { cleared, .. } => hit(if *cleared {
                "release-cleared"
            } else {
                "release-cleared-nothing"
            }),
            EventKind::LockWait { op, .. } => match op {
                OpKind::Renew => hit("renewal-waited-behind-delete"),
                OpKind::Acquire => hit("acquire-waited-behind-delete"),
                _ => {}
            },
            EventKind::Fenced { call, reason, .. } => {
                let deleter = calls.get(call).map(|c| owner_of(c.replica));
                if reason.contains("expired") {
                    hit("delete-fenced-expired");
                } else if reason.contains("stale token") {
                    let own = granted_last_to.as_ref() == deleter.as_ref();
                    hit(if own {
                        "delete-fenced-by-own-renewal"
                    } else {
                        "delete-fenced-by-successor"
                    });
                }
            }
            EventKind::Deleted { token, .. }
                if expiry_by_token
                    .get(token)
                    .is_some_and(|&expiry| db_ms(event.at_ms) >= expiry) =>
            {
                hit("delete-committed-after-expiry");
            }
            EventKind::RowsHeld { .. } => hit("rows-held-by-another-client"),
            EventKind::RolledBack { .. } => hit("transaction-rolled-back"),
            EventKind::Aborted { reason, .. } => {
                if reason.starts_with("idle in transaction") {
                    hit("server-ended-idle-session");
                } else if reason.starts_with("statement timeout") {
                    hit("statement-timeout");
                } else if reason.starts_with("lock timeout") {
                    hit("lock-timeout");
                } else if reason.starts_with("cancelled by its client") {
                    hit("cancelled-by-client");
                }
            }
            EventKind::StopCalled { .. } => {
                let Some(replica) = replica else { continue };
                for (op, probe) in [
                    (OpKind::Acquire, "stop-during-acquire"),
                    (OpKind::Renew, "stop-during-renew"),
                    (OpKind::Delete, "stop-during-delete"),
                    (OpKind::Release, "stop-during-release"),
                ] {
                    if in_flight(&calls, replica, op) {
                        hit(probe);
                    }
                }
                for c in calls.values_mut() {
                    if c.replica == replica && !c.returned {
                        c.stopped_during = true;
                    }
                }
            }
            EventKind::Crashed => {
                if let Some(replica) = replica {
                    if in_flight(&calls, replica, OpKind::Delete) {
                        hit("crash-mid-delete");
                    }
                    // A dead process's calls never return.
                    for c in calls.values_mut() {
                        if c.replica == replica {
                            c.returned = true;
                        }
                    }
                }
            }
            EventKind::Paused { for_ms } | EventKind::Partitioned { for_ms } => {
                let from_ms = db_ms(event.at_ms);
                let until_ms = db_ms(
                    event
                        .at_ms
                        .saturating_add(i64::try_from(*for_ms).unwrap_or(i64::MAX)),
                );
                if let Some(replica) = replica
                    && held_until
                        .get(&replica)
                        .is_some_and(|&expiry| expiry > from_ms && expiry < until_ms)
                {
                    hit(match event.kind {
                        EventKind::Paused { .. } => "pause-outlived-the-lease",
                        _ => "cut-outlived-the-lease",
                    });
                }
            }
            EventKind::TermEnded { end, .. } => hit(match end {
                TermEndRec::Capped => "term-capped",
                TermEndRec::Completed => "term-completed",
                TermEndRec::Stopped => "term-stopped",
                TermEndRec::NotAcquired => "term-not-acquired",
                TermEndRec::AcquireFailed(_) => "term-acquire-failed",
                TermEndRec::DeleteFailed(_) => "term-delete-failed",
                TermEndRec::LeadershipLost(cause) => match cause {
                    LossRec::NullRenewal => "loss-null-renewal",
                    LossRec::RenewalFailed(_) => "loss-renewal-failed",
                    LossRec::RenewalUnanswered => "loss-renewal-unanswered",
                    LossRec::ExpiredBeforeRenewal => "loss-expired-before-renewal",
                    LossRec::LeaseTooShort => "loss-lease-too-short",
                },
            }),
            _ => {}
        }
    }
    super::db_probes::count(history, &mut hits);
    super::clock_probes::count(history, &mut hits);
    hits
}
