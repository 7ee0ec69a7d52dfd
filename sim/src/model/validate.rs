//! What a history must be before it is judged: a header within the ranges
//! a run has, time that never runs backwards, every event from the actor
//! that can make it, every actor and lease holder one the header has, terms
//! that only grow, every reply answering exactly one earlier call, every
//! service effect tied to a call that was made, every stop resolved after
//! it was called. A damaged or hand-edited history is refused with the line
//! of each problem, instead of passing (or being judged as a violation).

use std::collections::{BTreeMap, BTreeSet};

use retention_worker::{MAX_BATCH_SIZE, MAX_TERM_ROW_CAP};

use super::history::{Actor, Event, EventKind, Header, History, LeaseRec, Outcome};
use super::names::OpKind;
use super::ranges::{DAY_MS, MAX_ROWS};

/// The latest instant an event may have: a year (the longest run is an hour;
/// real-mode runs are shorter still).
const LONGEST_MS: i64 = 365 * 24 * 3_600_000;

/// Problems reported at most; the rest are counted.
const MAX_PROBLEMS: usize = 20;

/// Checks `history`, whose event `i` was read from line `lines[i]`.
pub(super) fn validate(history: &History, lines: &[usize]) -> Result<(), String> {
    let mut problems = header_problems(&history.header);
    if !problems.is_empty() {
        // Nothing after a bad header can be judged against it.
        return refuse(problems);
    }
    let replicas = history.header.replicas;
    // call -> (replica, op name, answered)
    let mut calls: BTreeMap<u64, (u32, &'static str, bool)> = BTreeMap::new();
    // call -> the term it was invoked in
    let mut call_terms: BTreeMap<u64, u32> = BTreeMap::new();
    let mut terms: BTreeMap<u32, u32> = BTreeMap::new();
    let mut stopping: BTreeSet<(u32, u32)> = BTreeSet::new();
    let mut previous_ms = 0;
    for (seq, event) in history.events.iter().enumerate() {
        let line = lines[seq];
        let mut problem = |text: String| problems.push(format!("line {line}: {text}"));
        if event.at_ms > LONGEST_MS {
            problem(format!(
                "at_ms {}: past a year, longer than any run",
                event.at_ms
            ));
        }
        if event.at_ms < previous_ms {
            problem(format!(
                "at_ms {} is before the previous event's {previous_ms}: time runs backwards",
                event.at_ms
            ));
        }
        previous_ms = previous_ms.max(event.at_ms);
        if let Some(expected) = wrong_actor(event) {
            problem(format!(
                "a {} event by {}, which only {expected} records",
                kind_name(&event.kind),
                actor_name(event.actor)
            ));
        }
        if let Some(lease) = service_lease(event) {
            let owner = lease
                .owner
                .strip_prefix('r')
                .and_then(|n| n.parse::<u32>().ok());
            if !owner.is_some_and(|n| (1..=replicas).contains(&n)) {
                problem(format!(
                    "lease owner {:?}: the header has replicas r1..r{replicas}",
                    lease.owner
                ));
            }
        }
        if let Actor::Replica(n) = event.actor {
            let last = terms.entry(n).or_insert(event.term);
            if event.term < *last {
                problem(format!("r{n}'s term {} after its term {last}", event.term));
            }
            *last = (*last).max(event.term);
            match &event.kind {
                EventKind::StopCalled { caller } if !stopping.insert((n, *caller)) => {
                    problem(format!("r{n}'s stop caller {caller} called twice"));
                }
                EventKind::StopResolved { caller } if !stopping.remove(&(n, *caller)) => {
                    problem(format!(
                        "r{n}'s stop caller {caller} resolved without a call before it"
                    ));
                }
                _ => {}
            }
        }
        if let Actor::Replica(n) = event.actor
            && !(1..=replicas).contains(&n)
        {
            problem(format!("actor r{n}: the header has {replicas} replicas"));
        }
        let replica = match event.actor {
            Actor::Replica(n) => Some(n),
            _ => None,
        };
        if let Some(call) = called(&event.kind)
            && let Some(term) = call_terms.get(&call)
            && *term != event.term
        {
            problem(format!(
                "term {} for call {call}, which was invoked in term {term}",
                event.term
            ));
        }
        match &event.kind {
            EventKind::Invoke { call, invocation } => {
                let Some(replica) = replica else {
                    problem(format!(
                        "call {call} invoked by {:?}, not a replica",
                        event.actor
                    ));
                    continue;
                };
                call_terms.insert(*call, event.term);
                if calls
                    .insert(*call, (replica, invocation.kind().name(), false))
                    .is_some()
                {
                    problem(format!("call {call} invoked twice"));
                }
            }
            EventKind::Return { call, op, outcome } => match calls.get_mut(call) {
                None => problem(format!("a reply to call {call}, which was never invoked")),
                Some((_, _, true)) => problem(format!("a second reply to call {call}")),
                Some((by, invoked, answered)) => {
                    if replica != Some(*by) {
                        problem(format!(
                            "call {call}'s reply reaches another replica than r{by}"
                        ));
                    }
                    if *invoked != op.name() {
                        problem(format!(
                            "call {call} was a {invoked}, its reply is a {}",
                            op.name()
                        ));
                    }
                    if !outcome_fits(*op, outcome) {
                        problem(format!("a reply to {} cannot be {outcome:?}", op.name()));
                    }
                    *answered = true;
                }
            },
            EventKind::Granted { call, .. }
            | EventKind::Refused { call, .. }
            | EventKind::Revoked { call, .. }
            | EventKind::Released { call, .. }
            | EventKind::Deleted { call, .. }
            | EventKind::Fenced { call, .. }
            | EventKind::LockWait { call, .. }
            | EventKind::RolledBack { call, .. }
            | EventKind::Aborted { call, .. }
                if !calls.contains_key(call) =>
            {
                problem(format!(
                    "a service effect of call {call}, which was never invoked"
                ));
            }
            EventKind::Granted { call, .. }
            | EventKind::Refused { call, .. }
            | EventKind::Revoked { call, .. }
            | EventKind::Released { call, .. }
            | EventKind::Deleted { call, .. }
            | EventKind::Fenced { call, .. }
            | EventKind::LockWait { call, .. }
            | EventKind::RolledBack { call, .. } => {
                let invoked = calls.get(call).map(|(_, op, _)| *op).unwrap_or_default();
                if let Some(allowed) = effect_ops(&event.kind)
                    && !allowed.contains(&invoked)
                {
                    problem(format!(
                        "{} for call {call}, whose operation is {invoked}",
                        kind_name(&event.kind)
                    ));
                }
                if let EventKind::LockWait { behind, .. } = &event.kind
                    && let Some(unknown) = behind.iter().find(|b| !calls.contains_key(b))
                {
                    problem(format!(
                        "call {call} waits behind call {unknown}, never invoked"
                    ));
                }
            }
            EventKind::Final { .. } if seq + 1 != history.events.len() => {
                problem("the final event is not the last".into());
            }
            _ => {}
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    refuse(problems)
}

fn refuse(mut problems: Vec<String>) -> Result<(), String> {
    let more = problems.len().saturating_sub(MAX_PROBLEMS);
    problems.truncate(MAX_PROBLEMS);
    if more > 0 {
        problems.push(format!("... and {more} more"));
    }
    Err(format!("not a valid history:\n{}", problems.join("\n")))
}

/// The header's fields against the ranges a run can have.
fn header_problems(header: &Header) -> Vec<String> {
    let mut problems = Vec::new();
    let mut outside = |field: &str, value: String, range: String| {
        problems.push(format!("line 1: header.{field}: {value} is not in {range}"));
    };
    if !(1..=5).contains(&header.replicas) {
        outside("replicas", header.replicas.to_string(), "1..=5".into());
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
fn wrong_actor(event: &Event) -> Option<&'static str> {
    use EventKind as K;
    let (allowed, who): (fn(&Actor) -> bool, _) = match event.kind {
        K::Invoke { .. }
        | K::Return { .. }
        | K::TermEnded { .. }
        | K::StopCalled { .. }
        | K::StopResolved { .. }
        | K::Paused { .. }
        | K::Resumed
        | K::Crashed
        | K::Restarted => (|a| matches!(a, Actor::Replica(_)), "a replica"),
        K::Granted { .. } | K::Refused { .. } | K::Revoked { .. } | K::Released { .. } => {
            (|a| *a == Actor::Lease, "the lease service")
        }
        K::Deleted { .. }
        | K::Fenced { .. }
        | K::RowsHeld { .. }
        | K::RowsFreed { .. }
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
fn service_lease(event: &Event) -> Option<&LeaseRec> {
    match &event.kind {
        EventKind::Granted { lease, .. }
        | EventKind::Revoked { lease, .. }
        | EventKind::Released { lease, .. } => Some(lease),
        _ => None,
    }
}

/// Which operations' calls can have a service effect of `kind` (`None`: any).
fn effect_ops(kind: &EventKind) -> Option<&'static [&'static str]> {
    use EventKind as K;
    Some(match kind {
        K::Granted { .. } => &["acquire", "renew"],
        K::Revoked { .. } => &["renew"],
        K::Released { .. } => &["release"],
        K::Deleted { .. } | K::Fenced { .. } | K::RolledBack { .. } => &["delete"],
        K::Refused { .. } | K::LockWait { .. } => &["acquire", "renew", "release"],
        _ => return None,
    })
}

/// Whether `outcome` is an answer an `op` can give.
fn outcome_fits(op: OpKind, outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Failed { .. } => true,
        Outcome::Lease(_) => matches!(op, OpKind::Acquire | OpKind::Renew),
        Outcome::Done => op == OpKind::Release,
        Outcome::Deleted(_) => op == OpKind::Delete,
    }
}

/// The call an event answers or applies, other than its invoke.
fn called(kind: &EventKind) -> Option<u64> {
    use EventKind as K;
    match kind {
        K::Return { call, .. }
        | K::Granted { call, .. }
        | K::Refused { call, .. }
        | K::Revoked { call, .. }
        | K::Released { call, .. }
        | K::Deleted { call, .. }
        | K::Fenced { call, .. }
        | K::LockWait { call, .. }
        | K::RolledBack { call, .. }
        | K::Aborted { call, .. } => Some(*call),
        _ => None,
    }
}

fn actor_name(actor: Actor) -> String {
    match actor {
        Actor::Replica(n) => format!("r{n}"),
        Actor::Lease => "the lease service".into(),
        Actor::Db => "the database".into(),
        Actor::World => "the world".into(),
    }
}

/// The event's name as the JSON lines write it.
fn kind_name(kind: &EventKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|value| value.get("event")?.as_str().map(str::to_owned))
        .unwrap_or_default()
}
