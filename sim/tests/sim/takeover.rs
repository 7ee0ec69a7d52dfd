//! Takeover time as `sim takeover` reads it: each story's fault strikes the
//! holder, a new term follows within the formula's bound, and the reading
//! of a history finds exactly when.

use std::process::Command;

use retention_sim::Sim;
use retention_sim::model::{Actor, EventKind};
use retention_sim::report::{Story, bound_ms, story_plan, takeover};

#[test]
fn each_storys_holder_is_struck_and_a_new_term_follows_within_the_bound() {
    for story in Story::ALL {
        let mut measured = 0;
        for seed in 1..=20 {
            let (spec, at_ms) = story_plan(story, seed);
            let history = Sim::new(&spec).run().expect("a valid plan");
            let seen = takeover(&history, at_ms);
            if !seen.holder_at_fault {
                continue;
            }
            measured += 1;
            let after_ms = seen
                .after_ms
                .unwrap_or_else(|| panic!("{} seed {seed}: no new term", story.name()));
            assert!(
                after_ms <= bound_ms(&spec),
                "{} seed {seed}: {after_ms} ms",
                story.name()
            );
            // The reading names the first acquire granted after the fault.
            let at = i64::try_from(at_ms).unwrap() + i64::try_from(after_ms).unwrap();
            let granted = history
                .events
                .iter()
                .find(|event| event.at_ms == at && matches!(event.kind, EventKind::Granted { .. }));
            assert!(granted.is_some(), "{} seed {seed}", story.name());
            // A frozen or crashed holder cannot take its lease back.
            if story != Story::ClockStepped {
                assert!(!seen.same_holder, "{} seed {seed}", story.name());
            }
        }
        assert!(measured >= 18, "{}: {measured} of 20", story.name());
    }
}

#[test]
fn a_run_whose_fault_misses_the_holder_is_not_measured() {
    let (spec, at_ms) = story_plan(Story::Crashed, 3);
    let history = Sim::new(&spec).run().expect("a valid plan");
    // Moved before anyone held the lease, the same history measures nothing.
    let early = takeover(&history, 1);
    assert!(!early.holder_at_fault);
    assert!(takeover(&history, at_ms).holder_at_fault);
    assert!(
        history
            .events
            .iter()
            .any(|e| e.actor == Actor::Replica(1) && e.kind == EventKind::Crashed)
    );
}

#[test]
fn the_command_prints_each_story_against_its_bound() {
    let output = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["takeover", "--runs", "20", "--real-runs", "0"])
        .output()
        .expect("run sim");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    for story in ["frozen", "crashed", "clock-stepped"] {
        assert!(
            stdout.contains(&format!("{story} (bound 10000 ms):")),
            "{stdout}"
        );
    }
    assert!(stdout.contains("PostgreSQL: not run"), "{stdout}");
    assert!(!stdout.contains("OVER THE BOUND"), "{stdout}");
}
