//! What a history must be before it is judged: every actor one the header
//! has, every reply answering exactly one earlier call, every service
//! effect tied to a call that was made. A damaged or hand-edited history
//! is refused with the line of each problem, instead of passing.

use std::collections::BTreeMap;

use super::history::{Actor, EventKind, History};

/// Problems reported at most; the rest are counted.
const MAX_PROBLEMS: usize = 20;

/// Checks `history`, whose event `i` was read from line `lines[i]`.
pub(super) fn validate(history: &History, lines: &[usize]) -> Result<(), String> {
    let mut problems = Vec::new();
    let replicas = history.header.replicas;
    // call -> (replica, op name, answered)
    let mut calls: BTreeMap<u64, (u32, &'static str, bool)> = BTreeMap::new();
    for (seq, event) in history.events.iter().enumerate() {
        let line = lines[seq];
        let mut problem = |text: String| problems.push(format!("line {line}: {text}"));
        if let Actor::Replica(n) = event.actor
            && !(1..=replicas).contains(&n)
        {
            problem(format!("actor r{n}: the header has {replicas} replicas"));
        }
        let replica = match event.actor {
            Actor::Replica(n) => Some(n),
            _ => None,
        };
        match &event.kind {
            EventKind::Invoke { call, invocation } => {
                let Some(replica) = replica else {
                    problem(format!(
                        "call {call} invoked by {:?}, not a replica",
                        event.actor
                    ));
                    continue;
                };
                if calls
                    .insert(*call, (replica, invocation.kind().name(), false))
                    .is_some()
                {
                    problem(format!("call {call} invoked twice"));
                }
            }
            EventKind::Return { call, op, .. } => match calls.get_mut(call) {
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
            EventKind::Final { .. } if seq + 1 != history.events.len() => {
                problem("the final event is not the last".into());
            }
            _ => {}
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let more = problems.len().saturating_sub(MAX_PROBLEMS);
    problems.truncate(MAX_PROBLEMS);
    if more > 0 {
        problems.push(format!("... and {more} more"));
    }
    Err(format!("not a valid history:\n{}", problems.join("\n")))
}
