//! What a history must be before it is judged: a header within the ranges
//! a run has, time that never runs backwards, every event from the actor
//! that can make it, every actor and lease holder one the header has, terms
//! that only grow, every reply answering exactly one earlier call, every
//! service effect tied to a call that was made, every stop resolved after
//! it was called; and what would be impossible in any run (`semantics.rs`):
//! a crashed process acting before its restart, a restart without a crash,
//! a term that starts other than at an acquire, a transaction that ends
//! twice, faults in a history whose header says it had none. A damaged or
//! hand-edited history is refused with the line of each problem, instead
//! of passing (or being judged as a violation that blames the worker).

use std::collections::{BTreeMap, BTreeSet};

use super::history::{Actor, EventKind, History};
use super::history_rules::{
    actor_name, called, effect_ops, header_problems, kind_name, outcome_fits, service_lease,
    wrong_actor,
};
use super::names::OpKind;
use super::semantics::Semantics;

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
    let mut semantics = Semantics::new(&history.header);
    for (seq, event) in history.events.iter().enumerate() {
        let line = lines[seq];
        let mut problem = |text: String| problems.push(format!("line {line}: {text}"));
        for text in semantics.problems(event, line) {
            problem(text);
        }
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
            let last = terms.entry(n).or_insert(0);
            let acquire = matches!(
                &event.kind,
                EventKind::Invoke { invocation, .. } if invocation.kind() == OpKind::Acquire
            );
            if event.term < *last {
                problem(format!("r{n}'s term {} after its term {last}", event.term));
            } else if acquire && event.term != *last + 1 {
                problem(format!(
                    "r{n}'s acquire opens term {} after its term {last}: each acquire opens the next",
                    event.term
                ));
            } else if !acquire && event.term > *last {
                problem(format!(
                    "r{n}'s term {} begins with a {}, not an acquire",
                    event.term,
                    kind_name(&event.kind)
                ));
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
            EventKind::Final { .. } if seq + 1 != history.events.len() => {
                problem("the final event is not the last".into());
            }
            kind => {
                // A service effect (the reply is judged above).
                let Some(call) = called(kind) else { continue };
                let Some((_, invoked, _)) = calls.get(&call) else {
                    problem(format!(
                        "a service effect of call {call}, which was never invoked"
                    ));
                    continue;
                };
                if let Some(allowed) = effect_ops(kind)
                    && !allowed.contains(invoked)
                {
                    problem(format!(
                        "{} for call {call}, whose operation is {invoked}",
                        kind_name(kind)
                    ));
                }
                if let EventKind::LockWait { behind, .. } = kind
                    && let Some(unknown) = behind.iter().find(|b| !calls.contains_key(b))
                {
                    problem(format!(
                        "call {call} waits behind call {unknown}, never invoked"
                    ));
                }
            }
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
