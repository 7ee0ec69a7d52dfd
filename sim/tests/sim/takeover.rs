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

/// Arguments that were found wrong only after the runs (an `--out` folder
/// missing, or named with no PostgreSQL runs to save), or not at all (a
/// start whose seeds wrap to 0, a story measured twice): refused first.
#[test]
fn takeover_refuses_its_arguments_before_it_runs() {
    let dir = test_support::ScratchDir::new("sim-takeover-");
    std::fs::write(dir.join("frozen-0.jsonl"), "kept").unwrap();
    let (folder, missing) = (
        dir.to_str().unwrap().to_owned(),
        dir.join("nowhere").to_str().unwrap().to_owned(),
    );
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec!["--real-runs", "1", "--out", &missing],
            "name an existing folder",
        ),
        (
            vec!["--real-runs", "0", "--out", &folder],
            "only PostgreSQL runs are saved",
        ),
        (
            vec!["--real-runs", "1", "--story", "frozen", "--out", &folder],
            "frozen-0.jsonl: exists",
        ),
        (
            vec!["--runs", "2", "--start", "18446744073709551615"],
            "would pass 2^64 - 1",
        ),
        (
            vec!["--story", "frozen", "--story", "frozen"],
            "--story frozen: given twice",
        ),
    ];
    for (args, expected) in cases {
        let output = Command::new(env!("CARGO_BIN_EXE_sim"))
            .arg("takeover")
            .args(&args)
            .output()
            .expect("run sim");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?} ran first: {stdout}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("frozen-0.jsonl")).unwrap(),
        "kept"
    );
}
