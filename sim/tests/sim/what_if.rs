//! `sim replay --delay-reply/--drop-reply/--set`: the changed run is the
//! recorded one, event for event, up to the reply it changes; the change
//! lives in the token; bad interventions are refused by name.

use retention_sim::model::{Actor, EventKind, FaultEvent, OpKind, RunSpec};
use retention_sim::report::{parse_token, replay_token};
use retention_sim::search::{ExplainConfig, Intervention, explain, what_if};
use retention_sim::{Sim, check};

use crate::cli::sim;

/// Review finding 2's scenario under its flaw (`scenarios/finding-2-stale-release.toml`).
const STALE_RELEASE: &str = r#"{"seed":42,"replicas":2,"duration_ms":9000,"backlog_rows":600,"boundary_rows":0,"arrivals_per_sec":0,"db_batch_ms_min":300,"db_batch_ms_max":300,"worker":{"batch_size":60},"flaw":"stale-release"}"#;

fn spec() -> RunSpec {
    parse_token(STALE_RELEASE).expect("a valid token")
}

/// The sequence number of `call`'s return in `events`.
fn return_of(spec: &RunSpec, call: u64) -> usize {
    let history = Sim::new(spec).run().expect("valid");
    history
        .events
        .iter()
        .position(|e| matches!(e.kind, EventKind::Return { call: c, .. } if c == call))
        .expect("the call returns")
}

#[test]
fn a_delayed_reply_changes_the_run_only_from_that_reply_on() {
    let spec = spec();
    // Call 6 is r1's first renewal; its reply is event 20.
    let reply = return_of(&spec, 6);
    for intervention in [
        Intervention::DelayReply {
            call: 6,
            delay_ms: 5_000,
        },
        Intervention::DropReply { call: 6 },
    ] {
        let compared = what_if(&spec, std::slice::from_ref(&intervention)).expect("applies");
        assert_eq!(compared.shared_events, reply, "{intervention:?}");
        assert_eq!(
            compared.recorded.events[..reply],
            compared.altered.events[..reply]
        );
        assert!(!compared.before.passed());
        // The plan's own events are untouched: the change is an
        // intervention, and it is in the token.
        assert_eq!(compared.spec.events, spec.events);
        assert_eq!(compared.spec.interventions.len(), 1);
        let token = replay_token(&compared.spec);
        assert!(token.contains("interventions"), "{token}");
        let again = Sim::new(&parse_token(&token).expect("reads back"))
            .run()
            .expect("valid");
        assert_eq!(again.events, compared.altered.events);
        assert_eq!(check(&again).violations, compared.after.violations);
    }
    // A reply after the violation's release leaves the verdict as it was.
    let late = what_if(
        &spec,
        &[Intervention::DelayReply {
            call: 19,
            delay_ms: 3_000,
        }],
    )
    .expect("applies");
    assert_eq!(late.shared_events, return_of(&spec, 19));
    assert_eq!(late.before.violations, late.after.violations);
}

#[test]
fn a_call_the_plan_already_faults_is_changed_in_place() {
    let mut spec = spec();
    for replica in 1..=2 {
        spec.events.push(FaultEvent::CallFault {
            replica,
            op: OpKind::Renew,
            nth: 1,
            outcome: Default::default(),
            request_delay_ms: 0,
            reply_delay_ms: 100,
        });
    }
    // The plan's events change the schedule: find the first renewal.
    let history = Sim::new(&spec).run().expect("valid");
    let (call, renewer) = history
        .events
        .iter()
        .find_map(|e| match (&e.kind, e.actor) {
            (EventKind::Invoke { call, invocation }, Actor::Replica(r))
                if invocation.kind() == OpKind::Renew =>
            {
                Some((*call, r))
            }
            _ => None,
        })
        .expect("a replica renews");
    let compared = what_if(
        &spec,
        &[Intervention::DelayReply {
            call,
            delay_ms: 400,
        }],
    )
    .expect("applies");
    assert!(compared.spec.interventions.is_empty());
    let delays: Vec<(u32, u64)> = compared
        .spec
        .events
        .iter()
        .filter_map(|event| match *event {
            FaultEvent::CallFault {
                replica,
                reply_delay_ms,
                ..
            } => Some((replica, reply_delay_ms)),
            _ => None,
        })
        .collect();
    let expected: Vec<(u32, u64)> = (1..=2)
        .map(|r| (r, if r == renewer { 500 } else { 100 }))
        .collect();
    assert_eq!(delays, expected);
}

#[test]
fn bad_interventions_are_refused_by_name() {
    let refused = |flag: &str, text: &str| {
        Intervention::parse(flag, text)
            .and_then(|intervention| what_if(&spec(), &[intervention]).map(|_| ()))
            .expect_err("refused")
    };
    assert!(refused("--delay-reply", "6").contains("CALL:MS"));
    assert!(refused("--delay-reply", "six:5").contains("\"six\""));
    assert!(refused("--drop-reply", "999").contains("no call 999"));
    assert!(refused("--set", "worker.nope=1").contains("worker.nope"));
    assert!(refused("--set", "worker.batch_size=0").contains("batch_size"));

    let (code, out, err) = sim(&["replay", STALE_RELEASE, "--delay-reply", "6:5000"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("the two runs share their first 20 events"),
        "{out}"
    );
    assert!(
        out.contains("the violation (REL-1, r1 term 1) is gone"),
        "{out}"
    );
    assert!(
        out.contains("REL-1 still fails elsewhere: r2 term 2"),
        "{out}"
    );
    let (code, _, err) = sim(&["replay", STALE_RELEASE, "--drop-reply", "x"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--drop-reply"), "{err}");
}

/// The call an event is about, if any.
fn call_of(kind: &EventKind) -> Option<u64> {
    match kind {
        EventKind::Invoke { call, .. }
        | EventKind::Return { call, .. }
        | EventKind::Granted { call, .. }
        | EventKind::LockWait { call, .. } => Some(*call),
        _ => None,
    }
}

/// Issue 41's test of an explanation: the reply the jump names is one the
/// failure needs (delayed past the call timeout, the violation at its
/// replica and term is gone), and an unrelated one is not.
#[test]
fn delaying_the_reply_the_explanation_names_removes_the_violation() {
    let spec = spec();
    let history = Sim::new(&spec).run().expect("valid");
    let explained = explain(&spec, &ExplainConfig::default())
        .expect("explains")
        .expect("fails");
    let named = (explained.jump_events.iter())
        .find_map(|&seq| call_of(&history.events[seq].kind))
        .expect("the jump names a call");
    assert_eq!(named, 6, "r1's first renewal: {explained:?}");
    let delayed = |call: u64| {
        let intervention = Intervention::DelayReply {
            call,
            delay_ms: 5_000,
        };
        what_if(&spec, &[intervention]).expect("valid")
    };
    assert_eq!(delayed(named).first_violation_remains(), Some(false));
    // The first delete's reply: the term goes on as before.
    assert_eq!(delayed(3).first_violation_remains(), Some(true));
}

fn scenario(file: &str, flaw: Option<retention_sim::model::Flaw>) -> RunSpec {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/{file}.toml"));
    RunSpec {
        flaw,
        ..retention_sim::Scenario::load(&path).expect("loads").run
    }
}

/// A dropped or moved timed fault keeps its task, so the run is the
/// recorded one, event for event, until the earlier of its instants.
#[test]
fn a_dropped_or_moved_fault_changes_the_run_only_from_its_instant() {
    let spec = scenario("gc-pause-past-ttl-during-a-delete", None);
    let recorded = Sim::new(&spec).run().expect("valid");
    // events[1] is the 8 s pause of r1 at 700 ms.
    for (intervention, from_ms) in [
        (Intervention::DropFault { index: 1 }, 700),
        (
            Intervention::MoveFault {
                index: 1,
                at_ms: 2_000,
            },
            700,
        ),
        (
            Intervention::MoveFault {
                index: 1,
                at_ms: 300,
            },
            300,
        ),
    ] {
        let compared = what_if(&spec, std::slice::from_ref(&intervention)).expect("valid");
        let before = recorded.events.partition_point(|e| e.at_ms < from_ms);
        assert!(before > 3, "{intervention:?}");
        assert!(
            compared.shared_events >= before,
            "{intervention:?}: {}",
            compared.shared_events
        );
        assert_ne!(compared.altered.events, recorded.events, "{intervention:?}");
        let edited =
            retention_sim::report::parse_token(&serde_json::to_string(&compared.spec).unwrap());
        assert_eq!(edited.expect("the token carries the edit"), compared.spec);
    }
}

/// A dropped fault on a chosen call acts from that call on: review
/// finding 5's rejected delete dropped, its term releases (REL-3 at r2's
/// term 2 is gone) while the stop raced with an acquire still fails.
#[test]
fn a_dropped_fault_on_a_call_changes_the_run_from_that_call() {
    let spec = scenario(
        "finding-5-flag-only-stop",
        Some(retention_sim::model::Flaw::FlagOnlyStop),
    );
    // events[3] rejects r2's first delete.
    let compared = what_if(&spec, &[Intervention::DropFault { index: 3 }]).expect("valid");
    let invoke = (compared.recorded.events.iter())
        .position(|e| {
            e.actor == Actor::Replica(2)
                && matches!(
                    &e.kind,
                    EventKind::Invoke {
                        invocation: retention_sim::model::Invocation::Delete { .. },
                        ..
                    }
                )
        })
        .expect("r2 deletes");
    assert!(
        compared.shared_events > invoke,
        "{} <= {invoke}",
        compared.shared_events
    );
    assert_eq!(compared.first_violation_remains(), Some(false));
    assert!(
        compared
            .after
            .violations
            .iter()
            .any(|v| v.clause == "STP-4")
    );
}

#[test]
fn fault_edits_are_refused_by_name() {
    let spec = scenario("gc-pause-past-ttl-during-a-delete", None);
    let refused =
        |intervention: Intervention| what_if(&spec, &[intervention]).expect_err("refused");
    assert!(refused(Intervention::DropFault { index: 7 }).contains("no event 7"));
    assert!(
        refused(Intervention::MoveFault {
            index: 0,
            at_ms: 10
        })
        .contains("acts on a chosen call, not at an instant")
    );
    assert!(
        refused(Intervention::MoveFault {
            index: 1,
            at_ms: 99_999
        })
        .contains("past the run's end")
    );
    let token = serde_json::to_string(&spec).unwrap();
    let (code, out, err) = sim(&["replay", &token, "--drop-fault", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the plan's events[1] dropped"), "{out}");
    let (code, _, err) = sim(&["replay", &token, "--move-fault", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--move-fault \"1\": expected N:MS"), "{err}");
}
