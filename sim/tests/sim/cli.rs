//! The `sim` command line: exit statuses and error messages.

use std::process::Command;

use retention_sim::model::HISTORY_FORMAT_VERSION;

pub(crate) fn sim(args: &[&str]) -> (i32, String, String) {
    finished(Command::new(env!("CARGO_BIN_EXE_sim")).args(args))
}

/// Asserts that `sim ARGS` is refused (exit 2) with `why` in its error.
pub(crate) fn refused(args: &[&str], why: &str) {
    let (code, out, err) = sim(args);
    assert_eq!(code, 2, "sim {}\n{out}\n{err}", args.join(" "));
    assert!(err.contains(why), "sim {}: {err}", args.join(" "));
}

/// Asserts that `sim ARGS`, run in `dir`, is refused (exit 2) with `why` in
/// its error.
pub(crate) fn refused_in(dir: &std::path::Path, args: &[&str], why: &str) {
    let (code, out, err) = sim_in(dir, args);
    assert_eq!(code, 2, "sim {}\n{out}\n{err}", args.join(" "));
    assert!(err.contains(why), "sim {}: {err}", args.join(" "));
}

/// A command line's words, as a shell splits one without quotes.
pub(crate) fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// `sim ARGS` run in `dir`.
pub(crate) fn sim_in(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    finished(
        Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(args)
            .current_dir(dir),
    )
}

/// The exit code, standard output and standard error of `command`, run to
/// its end; a process a signal killed fails the test with its output.
pub(crate) fn finished(command: &mut Command) -> (i32, String, String) {
    let output = command.output().unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    let (out, err) = (text(output.stdout), text(output.stderr));
    let Some(code) = output.status.code() else {
        panic!("{}\nstdout:\n{out}\nstderr:\n{err}", output.status);
    };
    (code, out, err)
}

#[test]
fn a_clean_run_prints_its_timeline_and_verdict_and_exits_0() {
    let (code, out, _) = sim(&["run", "--seed", "5", "--duration-ms", "10000"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with(retention_sim::report::TIMELINE_COLUMNS),
        "{out}"
    );
    assert!(
        out.contains("FEN-1   ok") && out.contains("0 violations"),
        "{out}"
    );
}

/// `sim run | head`: the reader leaves after a line while 250 KB are still
/// to come (more than a pipe holds, so the write must fail); the tool drops
/// the rest, runs to its end and exits 141 (128 + SIGPIPE, as a shell
/// reports a process a closed pipe ended), without a panic.
#[test]
fn a_reader_that_goes_away_does_not_make_it_panic() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["run", "--seed", "1", "--duration-ms", "600000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The pipe's read end is dropped here.
    let output = child.wait_with_output().unwrap();
    let err = String::from_utf8(output.stderr).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(output.status.code(), Some(141), "{err}");
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--replicas", "0"], "replicas: 0 is not in 1..=5"),
        (
            &["run", "--fault", "gremlins=3"],
            "unknown fault \"gremlins\"",
        ),
        (
            &["run", "--fault", "reject_permille"],
            "expected NAME=VALUE",
        ),
        (
            &["run", "--fault", "reject_permille=2000"],
            "faults.reject_permille",
        ),
        (&["run", "--pause", "2:100"], "expected 3 numbers"),
        (
            &["run", "--clock-step", "1:500"],
            "--clock-step \"1:500\": expected REPLICA:AT_MS:DELTA_MS",
        ),
        (
            &["run", "--clock-step", "1:500:-abc"],
            "\"-abc\" is not an integer",
        ),
        (
            &["run", "--clock-step", "1:0:-99999999999"],
            "--clock-step 1:0:-99999999999: -99999999999 is not within ±86400000 (events[0].delta_ms)",
        ),
        (
            &["run", "--clock-rate", "1:0:50"],
            "50 is not in 100..=10000 (events[0].rate_permille)",
        ),
        (
            &["run", "--hold-rows", "1:2"],
            "--hold-rows \"1:2\": expected 3 numbers",
        ),
        (
            &["run", "--replicas", "2", "--crash", "3:100:100"],
            "--crash 3:100:100: replica 3 does not exist (1..=2) (events[0].replica)",
        ),
        (
            &["run", "--stop-during", "1:sleep:2"],
            "unknown operation \"sleep\"",
        ),
        (&["replay", "{\"seed\":"], "replay token"),
        (
            &["run", "--fault", "latency_ms_max=18446744073709551615"],
            "faults.latency_ms_max: 18446744073709551615 is not in 0..=3600000",
        ),
        (
            &["run", "--duration-ms", "99999999999"],
            "--duration-ms: 99999999999 is not in 1..=3600000",
        ),
        (
            &["replay", r#"{"seed":1,"backlog_rows":4000000000}"#],
            "backlog_rows: 4000000000 is not in 0..=1000000",
        ),
        (
            &["replay", "[1, 3, 60000]"],
            "expected a JSON object ({\"seed\":...}), got an array",
        ),
        (
            &["run", "--duration-ms", "5000", "--pause", "1:9000:100"],
            "--pause 1:9000:100: 9000 ms is not before the run's end at 5000 ms (duration_ms) (events[0].at_ms)",
        ),
        (
            &["run", "--pause", "1:100:100", "--stop", "7:200"],
            "--stop 7:200: replica 7 does not exist (1..=3) (events[1].replica)",
        ),
        (
            &[
                "replay",
                r#"{"seed":1,"duration_ms":5000,"events":[{"kind":"hold_rows","at_ms":5000,"for_ms":1,"rows":1}]}"#,
            ],
            "events[0].at_ms: 5000 ms is not before the run's end",
        ),
        (&["explore", "--seeds", "0"], "--seeds must be at least 1"),
        (&["explore", "--replicas", "6"], "--replicas: 6"),
        (&["frobnicate"], "unrecognized subcommand"),
        // Found by a hostile pass over every subcommand.
        (
            &["explore", "--seeds", "1", "--jobs", "0"],
            "--jobs: 0 is not in 1..=256",
        ),
        (
            &["explore", "--seeds", "1", "--jobs", "1000000"],
            "--jobs: 1000000 is not in 1..=256",
        ),
        (
            &["explore", "--seeds", "5", "--start", "18446744073709551613"],
            "seeds do not wrap",
        ),
        (
            &["explore", "--seeds", "5", "--shard", "6/10"],
            "--shard 6/10: of 5 seeds, shard 6 gets none",
        ),
        (
            &[
                "run",
                "--fault",
                "reject_permille=1",
                "--fault",
                "reject_permille=9",
            ],
            "--fault reject_permille: given twice",
        ),
        (
            &["run", "--stop-during", "1:delete:18446744073709551615"],
            "--stop-during \"1:delete:18446744073709551615\": 18446744073709551615 is too large",
        ),
        (
            &["bench", "--streams", "18446744073709551615"],
            "--streams: 18446744073709551615 is not in 1..=1000",
        ),
        (&["run", "--jsonl", "/"], "/: is a directory; not replaced"),
        (
            &["replay", "{\"seed\":1}", "--save", "/tmp/x.txt"],
            "--save /tmp/x.txt: expected NAME.toml",
        ),
        // Found by a second hostile pass: outputs that are one file, or an
        // input, would replace each other with --force.
        (
            &[
                "run",
                "--jsonl",
                "/tmp/same.out",
                "--svg",
                "/tmp/same.out",
                "--force",
            ],
            "--svg /tmp/same.out: --jsonl writes the same file",
        ),
        (
            &[
                "replay",
                "{\"seed\":1}",
                "--save",
                "/tmp/same.toml",
                "--svg",
                "/tmp/same.toml",
            ],
            "--svg /tmp/same.toml: --save writes the same file",
        ),
        (
            &[
                "replay",
                r#"{"seed":1,"duration_ms":120000,"replicas":5,"worker":{"renew_interval_ms":1,"lease_ttl_ms":2,"expiry_margin_ms":0,"term_interval_ms":1,"loss_backoff_ms":1,"term_jitter_ms_max":0,"batch_size":1}}"#,
                "--svg",
                "/tmp/sim-too-many-events.svg",
            ],
            "a picture is drawn for at most 40000",
        ),
        (
            &["run", "--jsonl", "/nonexistent-folder/x.jsonl"],
            "/nonexistent-folder does not exist",
        ),
    ];
    // A run that drew a picture there (a mutant's, say) must not turn the
    // refusal below into "exists".
    let _ = std::fs::remove_file("/tmp/sim-too-many-events.svg");
    for (args, expected) in cases {
        refused(args, expected);
    }
}

#[test]
fn explore_json_reports_the_summary_keys() {
    let (code, out, _) = sim(&[
        "explore", "--seeds", "30", "--swarm", "--jobs", "2", "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    let summary: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    for key in [
        "format",
        "version",
        "build",
        "command",
        "sweep",
        "shards",
        "runs",
        "violations",
        "violations_by_clause",
        "runs_per_sec",
        "sim_to_wall_ratio",
        "coverage",
        "failures",
    ] {
        assert!(summary.get(key).is_some(), "missing {key} in {summary}");
    }
    assert_eq!(summary["runs"], 30);
    assert_eq!(summary["violations"], 0);
    assert_eq!(summary["sweep"]["swarm"], true);
    assert_eq!(summary["build"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(summary["failures"], serde_json::json!([]));
}

/// A failing sweep prints its first failure shrunk: the smallest plan
/// still violating the same clause, its size before and after, and a
/// token that `sim shrink` (deterministic) and `sim replay` agree on.
#[test]
fn a_failure_is_printed_at_its_smallest() {
    let (code, out, _) = sim(&words(
        "explore --seeds 20 --swarm --flaw stale-release --json",
    ));
    assert_eq!(code, 1, "{out}");
    let summary: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let first = &summary["failures"][0];
    let shrunk = &first["shrunk"];
    assert_eq!(shrunk["clause"], "REL-1", "{summary}");
    assert!(
        shrunk["size_after"].as_u64() < shrunk["size_before"].as_u64(),
        "{summary}"
    );
    let (unshrunk, smallest) = (first["token"].to_string(), shrunk["token"].to_string());
    let (code, first, _) = sim(&["shrink", &unshrunk]);
    assert_eq!(code, 1, "{first}");
    let (_, again, _) = sim(&["shrink", &unshrunk]);
    assert_eq!(first, again, "shrinking is deterministic");
    assert!(first.contains("shrunk: still violates REL-1"), "{first}");
    assert!(
        first.contains(&smallest),
        "sim shrink reaches the sweep's plan:\n{first}"
    );
    let (code, replayed, _) = sim(&["replay", &smallest]);
    assert_eq!(code, 1, "{replayed}");
    assert!(replayed.contains("REL-1"), "{replayed}");
    refused(&["shrink", r#"{"seed":1}"#], "violates no clause");
}

#[test]
fn memory_stays_flat_over_a_long_sweep() {
    // Every run kills its nodes and breaks its reference cycles before its
    // runtime ends. Either leak once cost ~17 KB a run: +70 MB over 4,000.
    let (short_code, short, _) = sim(&["explore", "--seeds", "200", "--swarm", "--json"]);
    let (long_code, long, _) = sim(&[
        "explore", "--seeds", "4000", "--swarm", "--jobs", "2", "--json",
    ]);
    assert_eq!((short_code, long_code), (0, 0));
    let peak = |out: &str| {
        let summary: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        summary["peak_rss_mb"]
            .as_f64()
            .expect("Linux reports VmHWM")
    };
    let (after_200, after_4000) = (peak(&short), peak(&long));
    assert!(
        after_4000 < after_200 + 20.0,
        "peak memory grew from {after_200:.1} MiB (200 runs) to {after_4000:.1} MiB (4,000 runs)"
    );
}

#[test]
fn replay_save_turns_a_failure_into_a_scenario_that_reproduces_it() {
    let dir = test_support::ScratchDir::new("sim-save-");
    let path = dir.join("stale-release.toml");
    let token = crate::replay::STALE_RELEASE;
    let (code, out, err) = sim(&["replay", token, "--save", path.to_str().unwrap()]);
    assert_eq!(code, 1, "the replayed run violates REL-1: {out}{err}");
    let scenario = retention_sim::Scenario::load(&path).unwrap();
    assert_eq!(
        scenario.run,
        retention_sim::report::parse_token(token).unwrap()
    );
    assert_eq!(scenario.expect.violates, vec!["REL-1"]);
    let (code, out, _) = sim(&["scenario", path.to_str().unwrap()]);
    assert_eq!(
        code, 0,
        "the saved scenario expects exactly what happens: {out}"
    );
    assert!(out.contains("as expected"));
    // The file exists now: replacing it takes --force, and a refused
    // save leaves it as it was.
    let saved = std::fs::read_to_string(&path).unwrap();
    refused(
        &["replay", token, "--save", path.to_str().unwrap()],
        "exists; pass --force to replace it",
    );
    refused(
        &[
            "replay",
            "{\"seed\":1}",
            "--save",
            path.to_str().unwrap(),
            "--force",
        ],
        "keeps every clause",
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        saved,
        "a refused save kept the file"
    );
    let (code, _, err) = sim(&["replay", token, "--save", path.to_str().unwrap(), "--force"]);
    assert_eq!(code, 1, "{err}");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");

    // A swarm token interleaves event kinds; saved, its timed events are
    // put in time order, and the scenario reproduces the run it saved.
    let (_, out, _) = sim(&words(
        "explore --seeds 5 --swarm --flaw stale-release --json",
    ));
    let summary: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let swarm_token = &summary["failures"][0]["token"].to_string();
    let swarm_path = dir.join("swarm-token.toml");
    let (code, _, err) = sim(&[
        "replay",
        swarm_token,
        "--save",
        swarm_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let (code, out, _) = sim(&["scenario", swarm_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");

    // run --jsonl refuses to replace a file too.
    let jsonl = dir.join("run.jsonl");
    std::fs::write(&jsonl, "keep me").unwrap();
    let (code, _, err) = sim(&["run", "--seed", "1", "--jsonl", jsonl.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), "keep me");
    let (code, _, _) = sim(&[
        "run",
        "--seed",
        "1",
        "--jsonl",
        jsonl.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(code, 0);
    assert!(
        std::fs::read_to_string(&jsonl)
            .unwrap()
            .contains("format_version")
    );
}

#[test]
fn bench_reports_every_figure_as_json() {
    let args = words("bench --json --rounds 1 --runs-per-round 5 --streams 2 --memory-runs 1000");
    let (code, out, err) = sim(&args);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    for key in [
        "runs_per_sec_checked",
        "runs_per_sec_bare",
        "overhead_ratio",
        "sim_to_wall_ratio",
        "rss_mb_after_1k",
        "rss_mb_after_memory_runs",
        "cpu_ms_per_run",
        "jobs_2_speedup",
    ] {
        assert!(
            report[key].as_f64().is_some_and(|x| x > 0.0),
            "{key} in {report}"
        );
    }
    for flaw in [
        "overlapping-renewals",
        "stale-release",
        "moving-cutoff",
        "uncapped-term",
        "flag-only-stop",
    ] {
        for mode in ["random", "swarm"] {
            let median = report["flaws"][flaw][mode]["median"].as_u64();
            assert!(median.is_some_and(|m| m >= 1), "{flaw} {mode} in {report}");
        }
    }
    refused(
        &["bench", "--memory-runs", "10"],
        "--memory-runs: 10 is not in 1000..=",
    );
}

#[test]
fn shards_split_a_sweep_between_machines() {
    let runs = |shard: &str| {
        let (code, out, err) = sim(&["explore", "--seeds", "31", "--shard", shard, "--json"]);
        assert_eq!(code, 0, "{err}");
        let summary: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        summary["runs"].as_u64().unwrap()
    };
    assert_eq!((runs("1/2"), runs("2/2"), runs("1/1")), (16, 15, 31));
    let (code, _, err) = sim(&["explore", "--shard", "3/2"]);
    assert_eq!(code, 2);
    assert!(err.contains("need 1 <= I <= N"), "{err}");
}

#[test]
fn check_judges_a_recorded_history_file() {
    let dir = test_support::ScratchDir::new("sim-check-");
    let clean = dir.join("clean.jsonl");
    let path = clean.to_str().unwrap();
    let (code, _, _) = sim(&["run", "--seed", "4", "--jsonl", path]);
    assert_eq!(code, 0);
    let (code, out, _) = sim(&["check", path]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 violations"), "{out}");

    // The same history with one delete's token changed breaks FEN-1.
    let text = std::fs::read_to_string(&clean).unwrap();
    let mut history = retention_sim::History::from_jsonl(&text).unwrap();
    let delete = history
        .events
        .iter_mut()
        .find_map(|event| match &mut event.kind {
            retention_sim::model::EventKind::Invoke {
                invocation: retention_sim::model::Invocation::Delete { token, .. },
                ..
            } => Some(token),
            _ => None,
        })
        .expect("the run deleted");
    *delete += 100;
    let edited = dir.join("edited.jsonl");
    std::fs::write(&edited, history.to_jsonl()).unwrap();
    let (code, out, _) = sim(&["check", edited.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FEN-1: delete carried token"), "{out}");

    std::fs::write(&edited, "{\"seed\": 1}\n").unwrap();
    refused(
        &["check", edited.to_str().unwrap()],
        "edited.jsonl: line 1: header: no format_version",
    );

    // Damaged histories are refused with the line of the problem, never
    // judged: cut off, a header alone, a line repeated, lines swapped, a
    // seq changed, an unknown field, an actor the header does not have, a
    // reply to a call never made.
    let lines: Vec<&str> = text.lines().collect();
    let joined = |lines: &[&str]| lines.join("\n") + "\n";
    let mut swapped = lines.clone();
    swapped.swap(3, 4);
    let mut repeated = lines.clone();
    repeated.insert(4, lines[4]);
    let damaged: Vec<(String, &str)> = vec![
        (
            joined(&lines[..lines.len() - 1]),
            "incomplete: the history has no final event",
        ),
        (
            joined(&lines[..1]),
            "a header and no events: nothing to judge",
        ),
        (joined(&repeated), "line 6: seq 3 where 4 comes next"),
        (joined(&swapped), "line 4: seq 3 where 2 comes next"),
        (
            text.replacen("\"seq\":2,", "\"seq\":7,", 1),
            "seq 7 where 2 comes next",
        ),
        (
            text.replacen("\"term\":1}", "\"term\":1,\"x\":0}", 1),
            "unknown field `x`",
        ),
        (
            text.replace("{\"replica\":1}", "{\"replica\":9}"),
            "actor r9: the header has 3 replicas",
        ),
        (
            text.replacen(
                "\"event\":\"invoke\"",
                "\"event\":\"stop_resolved\",\"caller\":1,\"y\"",
                1,
            ),
            "line 2, column 89: event",
        ),
    ];
    for (content, expected) in &damaged {
        std::fs::write(&edited, content).unwrap();
        let (code, out, err) = sim(&["check", edited.to_str().unwrap()]);
        assert_eq!(code, 2, "{expected}: {out}{err}");
        assert!(
            err.contains(expected),
            "{err:?} should contain {expected:?}"
        );
    }
    // A cut-off history is judged with --partial, which says what it skips.
    std::fs::write(&edited, &damaged[0].0).unwrap();
    let (code, out, _) = sim(&["check", edited.to_str().unwrap(), "--partial"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("partial history: LIVE-1, LIVE-2, REL-3 not judged"),
        "{out}"
    );

    // A history full of violations prints ten of each clause unless --all.
    let flawed = dir.join("flawed.jsonl");
    let flawed_path = flawed.to_str().unwrap();
    let (code, _, _) = sim(&[
        "run",
        "--seed",
        "1",
        "--flaw",
        "uncapped-term",
        "--jsonl",
        flawed_path,
    ]);
    assert_eq!(code, 1);
    let (_, capped, _) = sim(&["check", flawed_path]);
    let (_, every, _) = sim(&["check", flawed_path, "--all"]);
    let printed = |out: &str| {
        out.lines()
            .filter(|line| line.starts_with("CAP-1: "))
            .count()
    };
    assert_eq!(printed(&capped), 10, "{capped}");
    assert!(printed(&every) > 10, "{every}");
    assert!(
        capped.contains("more CAP-1 violations (--all prints every one)"),
        "{capped}"
    );

    // Text that stops being UTF-8 is refused naming its line.
    std::fs::write(&edited, b"{\"a\":1}\n\xfe\n").unwrap();
    refused(
        &["check", edited.to_str().unwrap()],
        "edited.jsonl: line 2: not UTF-8 text: byte",
    );

    // A history of another format version is refused by name, not misread.
    let version = format!("\"format_version\":{HISTORY_FORMAT_VERSION}");
    assert!(text.lines().next().unwrap().contains(&version), "{text}");
    std::fs::write(&edited, text.replacen(&version, "\"format_version\":1", 1)).unwrap();
    let (code, _, err) = sim(&["check", edited.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("edited.jsonl: line 1: header: format_version 1 is not supported")
            && err.contains(&format!("reads version {HISTORY_FORMAT_VERSION} only")),
        "{err}"
    );
}

/// `sim scenario` reads every file, refusing the bad ones by name at the
/// end (exit 2), and refuses a `--flaw` that contradicts a file's own.
#[test]
fn scenario_runs_every_file_and_refuses_a_conflicting_flaw() {
    let dir = test_support::ScratchDir::new("sim-scenarios-");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "name = \"bad\"\n").unwrap();
    let good = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/stop-is-terminal.toml"
    );
    let (code, out, err) = sim(&["scenario", bad.to_str().unwrap(), good]);
    assert_eq!(code, 2, "{err}");
    assert!(out.contains("stop-is-terminal.toml: as expected"), "{out}");
    assert!(
        out.ends_with("1 as expected, 0 not, 1 refused (2 scenario files)\n"),
        "{out}"
    );
    assert!(err.contains("1 of 2 scenario files refused"), "{err}");
    // A folder stands for its scenario files; an empty one is refused.
    let (code, out, err) = sim(&["scenario", dir.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "one file, no tally: {out}");
    assert!(err.contains("bad.toml"), "{err}");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    refused(
        &["scenario", empty.to_str().unwrap()],
        "a folder with no .toml scenario files",
    );
    let flawed = dir.join("flawed.toml");
    let finding = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/finding-2-stale-release.toml"
    );
    let text = std::fs::read_to_string(finding).unwrap();
    let text = text
        .replace("name = \"finding-2-stale-release\"", "name = \"flawed\"")
        .replacen("[run]\n", "[run]\nflaw = \"stale-release\"\n", 1);
    std::fs::write(&flawed, text).unwrap();
    refused(
        &[
            "scenario",
            "--flaw",
            "moving-cutoff",
            flawed.to_str().unwrap(),
        ],
        "--flaw moving-cutoff conflicts with the file's own stale-release",
    );
}

/// An event `--swarm` drew is not blamed as if the user had typed it, and
/// a token already at its smallest is not shrunk and printed a second time.
#[test]
fn drawn_events_are_named_as_drawn_and_a_minimal_failure_prints_once() {
    let (code, _, err) = sim(&["run", "--swarm", "--seed", "1", "--duration-ms", "200"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("(an event --swarm drew from seed 1)") && err.contains("change --duration-ms"),
        "{err}"
    );
    let kept = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/regressions/stale-release-rel-1-seed-1.toml"
    );
    let scenario = retention_sim::Scenario::load(std::path::Path::new(kept)).unwrap();
    let token = retention_sim::report::replay_token(&scenario.run);
    let (code, out, _) = sim(&["replay", &token]);
    assert_eq!(code, 1);
    assert_eq!(out.matches("CONTRACT VIOLATED").count(), 1, "{out}");
    assert!(
        out.contains("shrunk: already at its smallest: no smaller plan violates REL-1"),
        "{out}"
    );
}
