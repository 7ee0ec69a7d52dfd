//! Sweeps across machines: a sweep run as shard processes and merged equals
//! the sweep run whole; `merge` refuses what is not one sweep; triage sorts
//! failures against a baseline; an interrupted sweep reports what it ran.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::cli::{refused_in, sim, sim_in, words};

/// A fresh folder for one test's files.
fn scratch(name: &str) -> test_support::ScratchDir {
    test_support::ScratchDir::new(&format!("sim-{name}-"))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The fields a merge must reproduce exactly (timing and the shard list
/// naturally differ).
const SAME_FIELDS: [&str; 9] = [
    "format",
    "version",
    "build",
    "sweep",
    "runs",
    "failed_runs",
    "violations",
    "violations_by_clause",
    "coverage",
];

/// A swarm sweep with a flaw (so there are failures to merge and shrink),
/// run whole and as the three shard processes `--print-shard-plan` prints.
#[test]
fn a_sweep_run_as_shards_merges_to_the_sweep_run_whole() {
    let dir = scratch("shards");
    let sweep = words("--seeds 45 --swarm --flaw stale-release --shrink-max 100");
    let whole_args = [
        &["explore"][..],
        &sweep[..],
        &["--summary", "whole.json", "-q"],
    ]
    .concat();
    let (code, whole_text, err) = sim_in(&dir, &whole_args);
    assert_eq!(code, 1, "the flaw is found: {err}");
    let plan_args = [&["explore"][..], &sweep[..], &["--print-shard-plan", "3"]].concat();
    let (code, plan, err) = sim_in(&dir, &plan_args);
    assert_eq!(code, 0, "{err}");
    let commands: Vec<Vec<&str>> = plan
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.split(' ').skip(1).collect())
        .collect();
    assert_eq!(commands.len(), 4, "three shards and a merge:\n{plan}");
    for shard in &commands[..3] {
        let (code, _, err) = sim_in(&dir, shard);
        assert!(code <= 1, "{shard:?}: {err}");
    }
    let (code, merged_text, err) = sim_in(
        &dir,
        &[&commands[3][..], &["--summary", "merged.json"]].concat(),
    );
    assert_eq!(code, 1, "a merge with violations exits 1: {err}");

    let (whole, merged) = (
        read_json(&dir.join("whole.json")),
        read_json(&dir.join("merged.json")),
    );
    for field in SAME_FIELDS {
        assert_eq!(whole[field], merged[field], "{field} differs");
    }
    let failures = whole["failures"].as_array().unwrap();
    assert!(failures.len() >= 2, "failures to merge: {}", failures.len());
    assert!(failures.iter().all(|f| f["shrunk"].is_object()));
    assert_eq!(
        whole["failures"], merged["failures"],
        "every failure, shrunk alike"
    );
    assert_eq!(merged["shards"]["count"], 3);
    assert_eq!(merged["partial"], false);

    // The printed summaries agree too, but for timing and the shard line.
    let comparable = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|line| !line.starts_with("peak memory") && !line.starts_with("shards "))
            .map(|line| line.split(';').next().unwrap().to_owned())
            .collect()
    };
    assert_eq!(comparable(&whole_text), comparable(&merged_text));
    assert!(
        whole_text.contains("first failure, as drawn"),
        "{whole_text}"
    );
}

#[test]
fn merge_refuses_what_is_not_one_sweep_and_reports_missing_shards() {
    let dir = scratch("merge-refusals");
    // Two shards of three (the third never runs), a shard of another split
    // and a shard of another sweep.
    let sweeps = [
        "--shard 1/3 --summary a.json",
        "--shard 2/3 --summary b.json",
        "--shard 1/2 --summary half.json",
        "--shard 3/3 --summary swarm.json --swarm",
    ];
    for flags in sweeps {
        let line = format!("explore --seeds 12 -q {flags}");
        assert_eq!(sim_in(&dir, &words(&line)).0, 0, "sim {line}");
    }

    let (code, out, _) = sim_in(&dir, &["merge", "a.json", "b.json"]);
    assert_eq!(code, 3, "a shard is missing: {out}");
    assert!(
        out.contains("MISSING shard 3/3: its 4 seeds were not run"),
        "{out}"
    );
    assert!(out.starts_with("8 runs, 0 failed"), "{out}");
    // The plan's merge line names every shard's file: one whose job never
    // wrote it is a missing shard, not a refusal of the rest.
    let (code, out, err) = sim_in(&dir, &["merge", "a.json", "b.json", "never-written.json"]);
    assert_eq!(code, 3, "{out}\n{err}");
    assert!(
        err.contains("never-written.json: does not exist; counted as a missing shard"),
        "{err}"
    );
    assert!(out.contains("MISSING shard 3/3"), "{out}");
    refused_in(
        &dir,
        &["merge", "never-written.json"],
        "none of the files named exists",
    );

    let edit = |name: &str, change: &dyn Fn(&mut Value)| {
        let mut value = read_json(&dir.join("b.json"));
        change(&mut value);
        std::fs::write(dir.join(name), value.to_string()).unwrap();
    };
    edit("other-build.json", &|v| {
        v["build"]["source_hash"] = "0000".into()
    });
    edit("lying.json", &|v| v["runs"] = 5.into());
    edit("newer.json", &|v| v["version"] = 2.into());
    std::fs::write(dir.join("other.json"), r#"{"runs": 4}"#).unwrap();
    let refusals: [(&[&str], &str); 7] = [
        (
            &["a.json", "swarm.json"],
            "sweep.swarm differs: a.json has false, swarm.json has true",
        ),
        (&["a.json", "half.json"], "shards.count differs"),
        (
            &["a.json", "b.json", "a.json"],
            "shard 1/3 is in both a.json and a.json",
        ),
        (&["a.json", "other-build.json"], "build.source_hash differs"),
        (
            &["a.json", "lying.json"],
            "lying.json: runs: 5 but the shards held ran 4 seeds",
        ),
        (
            &["newer.json"],
            "newer.json: version: 2; this sim reads version 1 only",
        ),
        (&["other.json"], "other.json: not a sweep summary"),
    ];
    for (files, expected) in refusals {
        refused_in(&dir, &[&["merge"][..], files].concat(), expected);
    }
}

/// A baseline of the real worker, then the same sweep with a flaw: every
/// distinct failure is new; against itself none is; the real worker
/// against the flaw's baseline has fixed them all.
#[test]
fn triage_sorts_failures_into_new_still_failing_and_fixed() {
    let dir = scratch("triage");
    let sweep = ["explore", "--seeds", "30", "--swarm", "-q"];
    assert_eq!(
        sim_in(&dir, &[&sweep[..], &["--summary", "real.json"]].concat()).0,
        0
    );
    let flawed = [
        &sweep[..],
        &[
            "--flaw",
            "moving-cutoff",
            "--shrink-max",
            "100",
            "--summary",
            "flawed.json",
        ],
    ]
    .concat();
    assert_eq!(sim_in(&dir, &flawed).0, 1);

    let triage = |current: &str, baseline: &str| {
        let (code, out, err) = sim_in(&dir, &["merge", current, "--baseline", baseline, "--json"]);
        let value: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
        // One compact object, every object's keys sorted, as `json!` prints
        // (floats aside: serde_json reads some back a last digit off).
        let failures = value["summary"]["failures"].to_string();
        assert!(
            out.starts_with(r#"{"summary":{"build":"#)
                && out.contains(&format!(r#""failures":{failures},"format":"#)),
            "{out}"
        );
        let count = |section: &str| value["triage"][section].as_array().unwrap().len();
        (code, count("new"), count("still_failing"), count("fixed"))
    };
    let (code, new, still, fixed) = triage("flawed.json", "real.json");
    assert!(
        new > 0 && (code, still, fixed) == (1, 0, 0),
        "{code} {new} {still} {fixed}"
    );
    assert_eq!(triage("flawed.json", "flawed.json"), (0, 0, new, 0));
    assert_eq!(triage("real.json", "flawed.json"), (0, 0, 0, new));

    let (code, out, _) = sim_in(&dir, &["merge", "flawed.json", "--baseline", "real.json"]);
    assert_eq!(code, 1);
    assert!(out.contains(&format!("  new: {new}\n")), "{out}");
    assert!(out.contains("NOTE: the baseline swept other flaw"), "{out}");
    assert_eq!(out.matches("NOTE").count(), 1, "{out}");

    // One shard of the same sweep as a baseline: the failures at the seeds
    // it never ran count as new, and the triage says so.
    let shard = [
        &flawed[..flawed.len() - 2],
        &["--shard", "1/3", "--summary", "third.json"],
    ]
    .concat();
    assert_eq!(sim_in(&dir, &shard).0, 1);
    let (_, out, _) = sim_in(&dir, &["merge", "flawed.json", "--baseline", "third.json"]);
    assert!(
        out.contains("NOTE: the baseline ran 10 of the 30 seeds this sweep ran (shards 1 of 3)"),
        "{out}"
    );
    let (_, out, _) = sim_in(&dir, &["merge", "flawed.json", "--baseline", "flawed.json"]);
    assert!(!out.contains("NOTE"), "its own sweep needs no note: {out}");

    // Each distinct failure kept as a scenario that reproduces it.
    let (code, _, err) = sim_in(&dir, &["merge", "flawed.json", "--save-failures", "kept"]);
    assert_eq!(code, 1, "{err}");
    let mut kept: Vec<PathBuf> = std::fs::read_dir(dir.join("kept"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    kept.sort();
    assert_eq!(kept.len(), new, "{err}");
    let names: Vec<&str> = kept.iter().map(|p| p.to_str().unwrap()).collect();
    let (code, out, _) = sim_in(&dir, &[&["scenario"][..], &names].concat());
    assert_eq!(code, 0, "each saved failure meets its expectation:\n{out}");
    let (code, _, err) = sim_in(&dir, &["merge", "flawed.json", "--save-failures", "kept"]);
    assert_eq!(code, 2, "nothing is replaced without --force: {err}");
}

/// Whether process `pid` has a handler for each of `signals`.
fn catches(pid: u32, signals: &[u32]) -> bool {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = text
        .lines()
        .find_map(|line| line.strip_prefix("SigCgt:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok());
    mask.is_some_and(|mask| signals.iter().all(|s| mask & (1 << (s - 1)) != 0))
}

/// SIGINT (Ctrl-C) and SIGTERM (what CI cancellation and `timeout` send)
/// stop a sweep: no new run starts, the summary of the runs finished is
/// printed and written marked partial, and the status is 130.
#[test]
fn an_interrupted_sweep_reports_what_it_ran_and_exits_130() {
    let dir = scratch("interrupt");
    for signal in ["INT", "TERM"] {
        let file = format!("{signal}.json");
        let child = Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(["explore", "--seeds", "100000000", "--summary", &file])
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut tries = 0;
        while !catches(child.id(), &[2, 15]) {
            tries += 1;
            assert!(tries < 2_000, "the handler was never installed");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let output = child.wait_with_output().unwrap();
        let (out, err) = (
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        );
        assert_eq!(output.status.code(), Some(130), "{signal}: {err}");
        assert!(
            out.contains("PARTIAL shard 1/1: interrupted after"),
            "{signal}: {out}"
        );
        assert!(err.contains("no new runs start"), "{signal}: {err}");
        let summary = read_json(&dir.join(&file));
        assert_eq!(summary["partial"], true);
        assert_eq!(summary["runs"], summary["shards"]["held"][0]["visited"]);
        let (code, merged, _) = sim_in(&dir, &["merge", &file]);
        assert_eq!(code, 3, "a partial summary merges as incomplete: {merged}");
    }
}

/// In a log (standard error not a terminal) a sweep prints a plain line
/// every tenth of its runs; `--quiet` prints none.
#[test]
fn a_piped_sweep_prints_plain_progress_lines() {
    let (code, _, err) = sim(&["explore", "--seeds", "200"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("sim: ")).collect();
    assert_eq!(lines.len(), 10, "{err}");
    assert!(lines[0].starts_with("sim: 20/200 runs (10%), "), "{err}");
    assert!(lines[9].starts_with("sim: 200/200 runs (100%), "), "{err}");
    assert!(lines[9].contains(" 0 failed, 0s left"), "{err}");
    let (code, _, err) = sim(&["explore", "--seeds", "200", "--quiet"]);
    assert_eq!((code, err.as_str()), (0, ""));
}
