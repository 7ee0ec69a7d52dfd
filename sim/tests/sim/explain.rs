//! `sim explain`: a branch is the recorded run up to its branching event
//! and a fresh future after it; the chance curve's jump names, for each of
//! the review's five findings, the event its review blames.

use std::path::Path;

use retention_sim::model::{
    Actor, EventKind, FaultEvent, Flaw, History, Invocation, OpKind, Outcome, RunSpec,
};
use retention_sim::report::{Overlay, swimlanes_with};
use retention_sim::search::{ExplainConfig, Explanation, branch_of, explain, swarm};
use retention_sim::{Scenario, Sim, check};

use crate::cli::sim;

fn finding(file: &str, flaw: Flaw) -> RunSpec {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/{file}.toml"));
    RunSpec {
        flaw: Some(flaw),
        ..Scenario::load(&path).expect("the scenario loads").run
    }
}

fn findings() -> Vec<(RunSpec, &'static str)> {
    vec![
        (
            finding("finding-1-overlapping-renewals", Flaw::OverlappingRenewals),
            "1",
        ),
        (finding("finding-2-stale-release", Flaw::StaleRelease), "2"),
        (finding("finding-3-moving-cutoff", Flaw::MovingCutoff), "3"),
        (finding("finding-4-uncapped-term", Flaw::UncappedTerm), "4"),
        (finding("finding-5-flag-only-stop", Flaw::FlagOnlyStop), "5"),
    ]
}

fn run(spec: &RunSpec) -> History {
    Sim::new(spec).run().expect("a valid plan")
}

/// A branch shares every event of the run before its instant (the first
/// at or after it too, unless that is a planned fault the branch drops),
/// and parts from the run after that for some salts.
#[test]
fn a_branch_is_the_run_up_to_its_branching_event() {
    let mut specs: Vec<RunSpec> = findings().into_iter().map(|(spec, _)| spec).collect();
    specs.extend((1..=4).map(|seed| swarm(seed, None)));
    for spec in specs {
        let history = run(&spec);
        let end_ms = history.events.last().unwrap().at_ms;
        let mut parted = 0;
        for k in 0..=4 {
            let at_ms = end_ms * k / 5;
            let shared = history.events.partition_point(|e| e.at_ms < at_ms);
            for salt in [1, 7, 12_345] {
                let branch = run(&branch_of(&spec, at_ms, salt));
                assert_eq!(
                    branch.events[..shared],
                    history.events[..shared],
                    "seed {} branched at {at_ms} ms (salt {salt})",
                    spec.seed
                );
                parted += usize::from(branch.events != history.events);
            }
        }
        assert!(
            parted >= 5,
            "seed {}: only {parted} of 15 branches parted",
            spec.seed
        );
    }
}

/// A branch is a plan like any other: its token replays it exactly.
#[test]
fn a_branch_replays_from_its_token() {
    let (spec, _) = findings().remove(1);
    let branch = branch_of(&spec, 1_500, 99);
    let token = serde_json::to_string(&branch).unwrap();
    let parsed = retention_sim::report::parse_token(&token).expect("a valid token");
    assert_eq!(parsed, branch);
    assert_eq!(run(&parsed), run(&branch));
}

/// Whether the jump's events include one `is_cause` picks out.
fn jump_holds(explained: &Explanation, is_cause: impl Fn(usize) -> bool) -> bool {
    explained.jump_events.iter().any(|&seq| is_cause(seq))
}

/// The first renewal's statement reaching the lease row: the renewal that
/// stays pending (finding 1) and replaces the lease (findings 2 and 3).
fn first_renewal_waits(history: &History) -> usize {
    let first_renew = history
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Invoke {
                call,
                invocation: Invocation::Renew { .. },
            } => Some(*call),
            _ => None,
        })
        .expect("a renewal");
    history
        .events
        .iter()
        .position(|e| {
            matches!(&e.kind, EventKind::LockWait { call, op: OpKind::Renew, .. } if *call == first_renew)
        })
        .expect("the first renewal waits for the delete's fence")
}

#[test]
fn the_jump_names_the_event_each_review_finding_blames() {
    let config = ExplainConfig::default();
    for (spec, number) in findings() {
        let history = run(&spec);
        let explained = explain(&spec, &config)
            .expect("explains")
            .expect("the finding's scenario fails under its flaw");
        let cause = |seq: usize| match number {
            "1" | "2" | "3" => seq == first_renewal_waits(&history),
            // The batch that brings the term to its 1,000 rows: the next
            // one is asked for anyway.
            "4" => matches!(
                &history.events[seq].kind,
                EventKind::Deleted { call, .. } if *call == 8
            ),
            // The rejected delete whose failure skips the release.
            _ => matches!(
                (&history.events[seq].actor, &history.events[seq].kind),
                (
                    Actor::Replica(2),
                    EventKind::Return {
                        op: OpKind::Delete,
                        outcome: Outcome::Failed { .. },
                        ..
                    }
                )
            ),
        };
        assert!(
            jump_holds(&explained, cause),
            "finding {number}: the jump {:?} holds events {:?}",
            explained.jump,
            explained.jump_events
        );
        assert!(explained.jump.1.chance() - explained.jump.0.chance() >= 0.2);
        if number == "1" {
            the_jump_holds_the_renewal_the_second_overlaps(&history, &explained);
        }
    }
}

/// Finding 1's cause, a renewal issued while an earlier one is pending:
/// the jump names the earlier renewal, whose faults it draws (the plan
/// holds its reply), and the violation is a later renewal issued before
/// that reply came.
fn the_jump_holds_the_renewal_the_second_overlaps(history: &History, explained: &Explanation) {
    let held = (explained.jump_calls.iter())
        .find(|call| {
            matches!(
                call.planned,
                Some(FaultEvent::CallFault {
                    op: OpKind::Renew,
                    reply_delay_ms: 1_200,
                    ..
                })
            )
        })
        .unwrap_or_else(|| panic!("the held renewal in {:?}", explained.jump_calls));
    let replied = held.replied.expect("the held reply comes");
    let overlapping = explained.violation_events.iter().any(|&seq| {
        (held.issued + 1..replied).contains(&seq)
            && matches!(
                &history.events[seq].kind,
                EventKind::Invoke {
                    invocation: Invocation::Renew { .. },
                    ..
                }
            )
    });
    assert!(
        explained.violation_events.contains(&held.issued) && overlapping,
        "REN-1's events {:?}: the held renewal issued at event {}, replied at {replied}",
        explained.violation_events,
        held.issued
    );
}

#[test]
fn an_explanation_repeats_and_a_clean_run_has_none() {
    let (spec, _) = findings().remove(4);
    let config = ExplainConfig {
        branches: 20,
        ..ExplainConfig::default()
    };
    let once = serde_json::to_string(&explain(&spec, &config).unwrap()).unwrap();
    let again = serde_json::to_string(&explain(&spec, &config).unwrap()).unwrap();
    assert_eq!(once, again);
    let clean = RunSpec { flaw: None, ..spec };
    assert!(check(&run(&clean)).passed());
    assert!(explain(&clean, &config).unwrap().is_none());
}

/// The command prints the curve and the jump, and a failing and a passing
/// branch whose tokens replay as failing and passing.
#[test]
fn the_command_explains_and_its_branches_replay() {
    let (spec, _) = findings().remove(4);
    let token = serde_json::to_string(&spec).unwrap();
    let (code, out, err) = sim(&["explain", &token, "--branches", "30"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("the chance jumps between"), "{out}");
    let branch = |words: &str| {
        let line = out.lines().find(|l| l.starts_with(words)).expect(words);
        let json = line
            .split_once("replay '")
            .unwrap()
            .1
            .trim_end_matches('\'');
        retention_sim::report::parse_token(json).unwrap()
    };
    let violates = |spec: &RunSpec| {
        let verdict = check(&run(spec));
        verdict.violations.iter().any(|v| v.clause == "REL-3")
    };
    assert!(violates(&branch("a branch from there that violated REL-3")));
    assert!(!violates(&branch("a branch from there that did not")));
    let clean = serde_json::to_string(&RunSpec { flaw: None, ..spec }).unwrap();
    let (code, out, _) = sim(&["explain", &clean]);
    assert_eq!(code, 0);
    assert!(out.contains("there is no failure to explain"), "{out}");
    let (code, _, err) = sim(&["explain", "nowhere.toml"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("nowhere.toml: neither a replay token"),
        "{err}"
    );
}

/// A history saved by `sim run --jsonl` names its plan in its header, so
/// explain starts from the file as from the token; a history without one
/// is refused with the line and the reason.
#[test]
fn the_command_explains_a_saved_history() {
    let (spec, _) = findings().remove(4);
    let token = serde_json::to_string(&spec).unwrap();
    let dir = test_support::ScratchDir::new("sim-explain-saved-");
    let saved = dir.join("run.jsonl");
    let saved_arg = saved.to_str().unwrap();
    let (code, _, err) = sim(&["replay", &token, "--jsonl", saved_arg]);
    assert_eq!(code, 1, "{err}");
    let from_token = sim(&["explain", &token, "--branches", "10", "--points", "6"]);
    let from_file = sim(&["explain", saved_arg, "--branches", "10", "--points", "6"]);
    assert_eq!(from_file.0, 1, "{}", from_file.2);
    assert_eq!(
        from_file.1, from_token.1,
        "the same explanation, and no note"
    );
    let mut history = History::from_jsonl(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert!(history.header.plan.is_some());
    history.header.plan = None;
    assert_eq!(history, run(&spec), "the rest of the file is the run");
    std::fs::write(&saved, history.to_jsonl()).unwrap();
    let (code, _, err) = sim(&["explain", saved_arg]);
    assert_eq!(code, 2);
    assert!(
        err.contains("line 1: the history does not name its plan"),
        "{err}"
    );
}

/// The picture README's "Replaying a failure" shows: finding 2's run with
/// its chance band, held in `snapshots/` like the scenarios' pictures.
#[test]
fn the_readme_picture_of_an_explanation_is_current() {
    let (spec, _) = findings().remove(1);
    let history = run(&spec);
    let explained = explain(&spec, &ExplainConfig::default())
        .unwrap()
        .expect("fails");
    let overlay = Overlay {
        band: Some(explained.band()),
        instant_ms: None,
    };
    let svg = swimlanes_with(&history, &check(&history), &overlay);
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../snapshots/finding-2-stale-release--explained.svg");
    if std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always") {
        std::fs::write(&path, &svg).unwrap();
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == svg,
        "{} differs from the picture drawn now (INSTA_UPDATE=always writes it)",
        path.display()
    );
}
