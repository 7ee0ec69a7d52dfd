//! "What if" on a replayed run: a plan changed by named interventions
//! (delay or drop one call's reply, change one setting), run beside the
//! plan as recorded, and where the two runs part.

use serde_json::Value;

use crate::checker::{Verdict, check};
use crate::model::{
    CallOutcome, EventEdit, EventKind, FaultEvent, History, Invocation, OpKind, RunSpec,
};
use crate::report::{parse_token, replay_token};
use crate::subject::Sim;

/// One change to a replayed run, as the command line names it.
#[derive(Debug, Clone, PartialEq)]
pub enum Intervention {
    /// `--delay-reply CALL:MS`: the reply of the timeline's call CALL
    /// arrives MS later.
    DelayReply {
        /// The run-wide call number the timeline prints.
        call: u64,
        /// The extra delay.
        delay_ms: u64,
    },
    /// `--drop-reply CALL`: the call is applied and its reply lost.
    DropReply {
        /// The run-wide call number.
        call: u64,
    },
    /// `--drop-fault N`: the plan's event N (its place in the token's
    /// `events`, from 0) does nothing.
    DropFault {
        /// The event's place.
        index: usize,
    },
    /// `--move-fault N:MS`: the plan's timed event N happens at MS.
    MoveFault {
        /// The event's place.
        index: usize,
        /// Its new instant.
        at_ms: u64,
    },
    /// `--set PATH=VALUE`: one field of the token (`worker.lease_ttl_ms`,
    /// `faults.reject_permille`), set to a JSON value.
    Set {
        /// Dotted path of the field.
        path: String,
        /// Its new value.
        value: Value,
    },
}

impl Intervention {
    /// Parses the text of `flag` (`--delay-reply` and the rest); errors
    /// name the flag and quote the text.
    pub fn parse(flag: &str, text: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("{flag} {text:?}: {why}");
        let number = |part: &str, what: &str| {
            part.trim()
                .parse::<u64>()
                .map_err(|_| bad(&format!("{what} {part:?} is not a whole number")))
        };
        match flag {
            "--delay-reply" => {
                let (call, ms) = text
                    .split_once(':')
                    .ok_or_else(|| bad("expected CALL:MS"))?;
                Ok(Self::DelayReply {
                    call: number(call, "CALL")?,
                    delay_ms: number(ms, "MS")?,
                })
            }
            "--drop-reply" => Ok(Self::DropReply {
                call: number(text, "CALL")?,
            }),
            "--drop-fault" => Ok(Self::DropFault {
                index: usize::try_from(number(text, "N")?).map_err(|_| bad("N is too large"))?,
            }),
            "--move-fault" => {
                let (index, ms) = text.split_once(':').ok_or_else(|| bad("expected N:MS"))?;
                Ok(Self::MoveFault {
                    index: usize::try_from(number(index, "N")?)
                        .map_err(|_| bad("N is too large"))?,
                    at_ms: number(ms, "MS")?,
                })
            }
            "--set" => {
                let (path, value) = text
                    .split_once('=')
                    .ok_or_else(|| bad("expected PATH=VALUE"))?;
                let value = serde_json::from_str(value.trim())
                    .unwrap_or_else(|_| Value::String(value.trim().to_owned()));
                Ok(Self::Set {
                    path: path.trim().to_owned(),
                    value,
                })
            }
            _ => Err(format!("{flag}: not an intervention")),
        }
    }

    /// The intervention in words.
    pub fn describe(&self) -> String {
        match self {
            Self::DelayReply { call, delay_ms } => {
                format!("call {call}'s reply {delay_ms} ms later")
            }
            Self::DropReply { call } => format!("call {call} applied and its reply lost"),
            Self::DropFault { index } => format!("the plan's events[{index}] dropped"),
            Self::MoveFault { index, at_ms } => {
                format!("the plan's events[{index}] moved to {at_ms} ms")
            }
            Self::Set { path, value } => format!("{path} = {value}"),
        }
    }
}

/// A run as recorded and the same plan with the interventions.
#[derive(Debug, Clone)]
pub struct WhatIf {
    /// The plan with the interventions (its token records them).
    pub spec: RunSpec,
    /// The verdict on the run as recorded.
    pub before: Verdict,
    /// The verdict on the run with the interventions.
    pub after: Verdict,
    /// How many leading events the two histories share: the event at
    /// this number is where they part (unless both end here).
    pub shared_events: usize,
    /// The run as recorded.
    pub recorded: History,
    /// The run with the interventions.
    pub altered: History,
}

/// Where a violation lives: its clause, and the actor and term of the
/// first event that shows it (a replica's term, or the service's).
pub fn violation_site(
    history: &History,
    violation: &crate::checker::Violation,
) -> (String, String) {
    let place = violation
        .events
        .first()
        .and_then(|&seq| history.events.get(seq));
    let site = place.map_or("the run".to_owned(), |event| match event.actor {
        crate::model::Actor::Replica(r) => format!("r{r} term {}", event.term),
        other => format!("{other:?} (term {})", event.term).to_lowercase(),
    });
    (violation.clause.to_owned(), site)
}

impl WhatIf {
    /// What became of the recorded run's first violation: `Some(true)`
    /// when the changed run violates the same clause at the same site
    /// (replica and term), `Some(false)` when it does not (it may violate
    /// the clause elsewhere), `None` when the recorded run kept every
    /// clause.
    pub fn first_violation_remains(&self) -> Option<bool> {
        let first = self.before.violations.first()?;
        let site = violation_site(&self.recorded, first);
        Some(
            self.after
                .violations
                .iter()
                .any(|v| violation_site(&self.altered, v) == site),
        )
    }
}

/// Runs `spec` as recorded and with `interventions`, in order.
pub fn what_if(spec: &RunSpec, interventions: &[Intervention]) -> Result<WhatIf, String> {
    let recorded = run(spec)?;
    let mut changed = spec.clone();
    for intervention in interventions {
        changed = apply(&changed, &recorded, intervention)
            .map_err(|why| format!("{}: {why}", intervention.describe()))?;
    }
    let altered = run(&changed)?;
    let shared_events = recorded
        .events
        .iter()
        .zip(&altered.events)
        .take_while(|(a, b)| a == b)
        .count();
    Ok(WhatIf {
        spec: changed,
        before: check(&recorded),
        after: check(&altered),
        shared_events,
        recorded,
        altered,
    })
}

fn run(spec: &RunSpec) -> Result<History, String> {
    Sim::new(spec).run().map_err(|error| error.to_string())
}

/// `spec` with one intervention; `recorded` (its run) names the calls.
fn apply(
    spec: &RunSpec,
    recorded: &History,
    intervention: &Intervention,
) -> Result<RunSpec, String> {
    let mut spec = spec.clone();
    match intervention {
        Intervention::DelayReply { call, delay_ms } => {
            put_on_call(&mut spec, recorded, *call, |fault| {
                if let FaultEvent::CallFault { reply_delay_ms, .. } = fault {
                    *reply_delay_ms = reply_delay_ms.saturating_add(*delay_ms);
                }
            })?;
        }
        Intervention::DropReply { call } => {
            put_on_call(&mut spec, recorded, *call, |fault| {
                if let FaultEvent::CallFault { outcome, .. } = fault {
                    *outcome = CallOutcome::LoseReply;
                }
            })?;
        }
        Intervention::DropFault { index } | Intervention::MoveFault { index, .. } => {
            let at_ms = match intervention {
                Intervention::MoveFault { at_ms, .. } => Some(*at_ms),
                _ => None,
            };
            spec.event_edits.retain(|edit| edit.index != *index);
            spec.event_edits.push(EventEdit {
                index: *index,
                at_ms,
            });
            spec.validate().map_err(|error| error.to_string())?;
        }
        Intervention::Set { path, value } => {
            let mut token: Value =
                serde_json::to_value(&spec).map_err(|error| error.to_string())?;
            let mut at = &mut token;
            let parts: Vec<&str> = path.split('.').collect();
            for part in &parts {
                at = at
                    .get_mut(*part)
                    .ok_or_else(|| format!("the token has no field {path:?}"))?;
            }
            *at = value.clone();
            spec = parse_token(&token.to_string())?;
        }
    }
    spec.validate().map_err(|error| error.to_string())?;
    // Through the token and back: what is printed is what was run.
    parse_token(&replay_token(&spec))
}

/// Edits the plan's fault on `call` (made if it has none) with `edit`.
fn put_on_call(
    spec: &mut RunSpec,
    recorded: &History,
    call: u64,
    edit: impl FnOnce(&mut FaultEvent),
) -> Result<(), String> {
    let (replica, op, nth) = call_of(recorded, call)?;
    let aims = |event: &FaultEvent| aims_call(event, (replica, op, nth));
    // A fault the plan already puts on the call is changed in place; a new
    // one goes with the interventions, which start no task.
    let fault = if let Some(at) = spec.events.iter().position(aims) {
        &mut spec.events[at]
    } else {
        if !spec.interventions.iter().any(aims) {
            spec.interventions.push(FaultEvent::CallFault {
                replica,
                op,
                nth,
                outcome: CallOutcome::Normal,
                request_delay_ms: 0,
                reply_delay_ms: 0,
            });
        }
        let at = spec
            .interventions
            .iter()
            .position(aims)
            .expect("pushed if missing");
        &mut spec.interventions[at]
    };
    edit(fault);
    Ok(())
}

/// Whether `event` is a call fault on the call `(replica, op, nth)`.
fn aims_call(event: &FaultEvent, (replica, op, nth): (u32, OpKind, u32)) -> bool {
    matches!(event, FaultEvent::CallFault { replica: r, op: o, nth: n, .. }
        if *r == replica && *o == op && *n == nth)
}

/// The fault `spec`'s plan (or an intervention) puts on the run-wide call
/// `call` of its run `history`, if any.
pub fn planned_fault_on(spec: &RunSpec, history: &History, call: u64) -> Option<FaultEvent> {
    let aimed = call_of(history, call).ok()?;
    (spec.events.iter())
        .chain(&spec.interventions)
        .find(|event| aims_call(event, aimed))
        .cloned()
}

/// The replica, operation and count among that replica's calls of that
/// operation (from 1) of the run-wide call `call`.
fn call_of(history: &History, call: u64) -> Result<(u32, OpKind, u32), String> {
    let mut counts: std::collections::BTreeMap<(u32, OpKind), u32> = Default::default();
    for event in &history.events {
        if let (
            crate::model::Actor::Replica(replica),
            EventKind::Invoke {
                call: c,
                invocation,
            },
        ) = (event.actor, &event.kind)
        {
            let op = Invocation::kind(invocation);
            let count = counts.entry((replica, op)).or_default();
            *count += 1;
            if *c == call {
                return Ok((replica, op, *count));
            }
        }
    }
    Err(format!("the run has no call {call}"))
}
