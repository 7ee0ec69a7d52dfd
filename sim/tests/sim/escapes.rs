//! Inputs as a careless user or a hostile CI job gives them: two spellings
//! of one output, a name from a downloaded summary that points outside its
//! folder, an output found unwritable only after the work, shard counts
//! and failure lists of any size, odd spellings of a summary, a history cut
//! inside a character.

use serde_json::{Value, json};

use super::cli::{finished, refused_in, sim_in, words};

/// A fresh folder holding `sub/`, for relative spellings.
fn folder(prefix: &str) -> test_support::ScratchDir {
    let dir = test_support::ScratchDir::new(prefix);
    std::fs::create_dir(dir.join("sub")).unwrap();
    dir
}

/// `sub/../h.jsonl` and `h.jsonl` are one file whether or not it exists
/// yet, and whether or not `sub` exists: the second write would replace
/// the first (the history was lost under a picture, exit 0).
#[test]
fn two_spellings_of_one_output_are_refused_before_anything_is_written() {
    let dir = folder("sim-spellings-");
    let token = crate::replay::STALE_RELEASE;
    let cases: [&[&str]; 4] = [
        &[
            "run",
            "--seed",
            "1",
            "--jsonl",
            "sub/../h.jsonl",
            "--svg",
            "h.jsonl",
            "--force",
        ],
        &[
            "run",
            "--seed",
            "1",
            "--jsonl",
            "./h.jsonl",
            "--svg",
            "sub/./../h.jsonl",
        ],
        &[
            "run",
            "--seed",
            "1",
            "--jsonl",
            "gone/../h.jsonl",
            "--svg",
            "h.jsonl",
            "--force",
        ],
        &[
            "replay",
            token,
            "--save",
            "sub/../x.toml",
            "--svg",
            "x.toml",
            "--force",
        ],
    ];
    for args in cases {
        let (code, _, err) = sim_in(&dir, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("writes the same file") || err.contains("does not exist"),
            "{args:?}: {err}"
        );
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(left, ["sub"], "{args:?} wrote something");
        assert_eq!(std::fs::read_dir(dir.join("sub")).unwrap().count(), 0);
    }
    // The same names once more, with one already written: still one file.
    std::fs::write(dir.join("h.jsonl"), "kept\n").unwrap();
    let (code, _, err) = sim_in(&dir, cases[0]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("h.jsonl")).unwrap(),
        "kept\n"
    );
}

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A real shard summary of the stale-release variant, which fails some
/// seeds, in `dir/s.json`.
fn failing_summary(dir: &std::path::Path) -> Value {
    let args = words("explore --seeds 12 --swarm --flaw stale-release -q --summary s.json");
    let (code, _, err) = sim_in(dir, &args);
    assert_eq!(code, 1, "the flaw fails some seeds: {err}");
    read_json(&dir.join("s.json"))
}

/// A summary's names reach file names only when they are names this build
/// could have written: `../escaped` as another build's flaw once made
/// `merge --save-failures` write 21 files into the parent folder.
#[test]
fn names_from_a_summary_never_lead_a_write_out_of_its_folder() {
    let dir = folder("sim-escape-");
    let summary = failing_summary(&dir);
    type Edit = fn(&mut Value);
    let forgeries: [(&str, Edit); 4] = [
        ("sweep.flaw: \"../escaped\" is not a flaw's name", |v| {
            v["build"]["source_hash"] = json!("0123456789abcdef");
            v["sweep"]["flaw"] = json!("../escaped");
        }),
        ("sweep.flaw: \"a/b\" is not a flaw's name", |v| {
            v["build"]["source_hash"] = json!("0123456789abcdef");
            v["sweep"]["flaw"] = json!("a/b");
        }),
        (
            "sweep.flaw: no-such-flaw is not a flaw of this build",
            |v| {
                v["sweep"]["flaw"] = json!("no-such-flaw");
            },
        ),
        ("sweep.replicas: 9 is not in 1..=5", |v| {
            v["sweep"]["replicas"] = json!(9);
        }),
    ];
    for (expected, edit) in forgeries {
        let mut forged = summary.clone();
        edit(&mut forged);
        std::fs::write(dir.join("sub/forged.json"), forged.to_string()).unwrap();
        let (code, _, err) = sim_in(
            &dir.join("sub"),
            &["merge", "forged.json", "--save-failures", "kept"],
        );
        assert_eq!(code, 2, "{expected}: {err}");
        assert!(
            err.contains("forged.json") && err.contains(expected),
            "{err}"
        );
        let mut around: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        around.sort();
        assert_eq!(around, ["s.json", "sub"], "{expected}: wrote beside");
        let inside = std::fs::read_dir(dir.join("sub")).unwrap().count();
        assert_eq!(inside, 1, "{expected}: only the forged summary");
    }
}

/// Every output is checked before the first is written or the work runs:
/// the summary was written and then the folder refused; a folder name and
/// a name too long were found after the whole sweep.
#[test]
fn every_output_is_refused_before_any_write_or_run() {
    let dir = folder("sim-before-");
    failing_summary(&dir);
    std::fs::write(dir.join("a-file"), "").unwrap();
    let args = words("merge s.json --summary new.json --save-failures a-file");
    refused_in(&dir, &args, "--save-failures a-file");
    assert!(
        !dir.join("new.json").exists(),
        "the summary was written first"
    );
    let long = format!("{}.json", "x".repeat(300));
    for (summary, shows) in [("newdir/", "newdir/"), (long.as_str(), "xxxx")] {
        let args = ["explore", "--seeds", "100000", "--summary", summary];
        let (code, out, err) = sim_in(&dir, &args);
        assert_eq!(code, 2, "{summary}: {err}");
        assert!(err.contains("--summary") && err.contains(shows), "{err}");
        assert!(out.is_empty(), "the sweep ran first: {out}");
    }
}

/// What a sweep and a merge cost follows what they run: one seed of a
/// shard of 10^11, and a merge missing 2^64 - 2 shards (it listed every
/// missing index: 134 under a 4 GB limit).
#[test]
fn a_huge_shard_count_costs_what_is_run_not_the_range() {
    let dir = folder("sim-huge-shards-");
    let cases = [
        ("100000000000", "1/100000000000"),
        ("1", "1/18446744073709551615"),
    ];
    for (seeds, shard) in cases {
        let args = [
            "explore",
            "--seeds",
            seeds,
            "--shard",
            shard,
            "-q",
            "--summary",
            "x.json",
        ];
        let (code, out, err) = sim_in(&dir, &args);
        assert_eq!(code, 0, "{shard}: {out}\n{err}");
        let summary = read_json(&dir.join("x.json"));
        assert_eq!(summary["runs"], 1, "{shard}");
        let (code, out, err) = sim_in(&dir, &["merge", "x.json"]);
        assert_eq!(code, 3, "{shard}: a merge missing shards: {err}");
        let count = shard.split_once('/').unwrap().1;
        assert!(
            out.contains(&format!("MISSING shards 2 to {count} of {count}: their ")),
            "{out}"
        );
        std::fs::remove_file(dir.join("x.json")).unwrap();
    }
}

/// A million-seed sweep of a flaw that fails every seed is a normal user
/// action: its summary (about 100 MB of default plans' failures, compact)
/// merges under a 2 GiB address-space limit. Merging was once quadratic
/// (60,000 failures took 54 s), then refused anything past the 64 MiB
/// history limit and held about 3.3 KB a failure. The deadline is a
/// watchdog, not a speed target.
#[test]
fn a_merge_of_a_million_failures_ends_within_two_gib() {
    const FAILURES: u64 = 1_000_000;
    const LIMIT_KIB: u64 = 2 << 20;
    let dir = folder("sim-many-failures-");
    let mut summary = failing_summary(&dir);
    summary["sweep"]["start"] = json!(0);
    summary["sweep"]["seeds"] = json!(FAILURES);
    summary["shards"]["held"][0]["visited"] = json!(FAILURES);
    for field in ["runs", "failed_runs", "violations"] {
        summary[field] = json!(FAILURES);
    }
    summary["violations_by_clause"] = json!({ "REL-1": FAILURES });
    summary["partial"] = json!(false);
    summary["failures"] = json!("FAILURES");
    // Written as text: a million `Value`s would cost the test a gigabyte.
    let failures: Vec<String> = (0..FAILURES)
        .map(|seed| {
            format!(
                r#"{{"seed":{seed},"clauses":["REL-1"],"token":{{"flaw":"stale-release","seed":{seed}}},"shrunk":null}}"#
            )
        })
        .collect();
    let text =
        summary
            .to_string()
            .replacen(r#""FAILURES""#, &format!("[{}]", failures.join(",")), 1);
    std::fs::write(dir.join("many.json"), text).unwrap();
    let script = r#"ulimit -v "$1" && exec "$0" merge many.json --summary merged.json"#;
    let mut child = std::process::Command::new("sh")
        .args([
            "-c",
            script,
            env!("CARGO_BIN_EXE_sim"),
            &LIMIT_KIB.to_string(),
        ])
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("merging {FAILURES} failures ran past 300 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(
        status.code(),
        Some(1),
        "failures merged, not refused: {err}"
    );
    let merged = std::fs::read_to_string(dir.join("merged.json")).unwrap();
    assert_eq!(merged.matches(r#""clauses""#).count() as u64, FAILURES);
}

/// Odd spellings a hand-edited or forged summary has: a key twice (serde
/// keeps the last), `1.0` for the version (reported as missing), a
/// byte-order mark (refused, where histories take one), measures whose sum
/// is past any number (written as `null`, which the merge then refused).
#[test]
fn odd_summaries_are_refused_naming_the_field_or_read_as_meant() {
    let dir = folder("sim-odd-summary-");
    let summary = failing_summary(&dir);
    let text = summary.to_string();
    let doubled = text.replacen("{\"", "{\"runs\":1,\"", 1);
    let version = text.replace("\"version\":1,", "\"version\":1.0,");
    assert_ne!(version, text, "the summary spells its version 1");
    for (name, forged, expected) in [
        ("doubled.json", doubled, "duplicate key \"runs\""),
        (
            "version.json",
            version,
            "version: 1.0; this sim reads version 1 only",
        ),
    ] {
        std::fs::write(dir.join(name), forged).unwrap();
        let (code, _, err) = sim_in(&dir, &["merge", name]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(name) && err.contains(expected), "{err}");
    }
    // Another build's plan this one cannot read: the error names the
    // failure and its field, where it was a bare parse error.
    let mut newer = summary.clone();
    newer["build"]["source_hash"] = json!("0123456789abcdef");
    let seed = newer["failures"][0]["seed"].clone();
    newer["failures"][0]["token"] = json!({ "seed": seed, "a_newer_setting": 3 });
    std::fs::write(dir.join("newer.json"), newer.to_string()).unwrap();
    let (code, _, err) = sim_in(&dir, &["merge", "newer.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("the failure of seed {seed}: token: ")),
        "{err}"
    );
    std::fs::write(dir.join("bom.json"), format!("\u{feff}{text}")).unwrap();
    let (code, _, err) = sim_in(&dir, &["merge", "bom.json"]);
    assert_eq!(code, 1, "read as written, failures and all: {err}");
    // JSON is for programs: no colour codes in it, whatever --color says
    // (the merged summary's `command` names this file, and a line with
    // MISSING in it was painted yellow).
    std::fs::copy(dir.join("bom.json"), dir.join("MISSING.json")).unwrap();
    let (_, out, _) = sim_in(
        &dir,
        &["merge", "MISSING.json", "--json", "--color", "always"],
    );
    assert!(
        out.contains("\"failures\"") && !out.contains('\u{1b}'),
        "{out:.500}"
    );
    for (shard, name) in [("1/2", "a.json"), ("2/2", "b.json")] {
        let args = [
            "explore",
            "--seeds",
            "4",
            "--shard",
            shard,
            "-q",
            "--summary",
            name,
        ];
        let (code, _, err) = sim_in(&dir, &args);
        assert_eq!(code, 0, "{err}");
        let mut half = read_json(&dir.join(name));
        half["wall_secs"] = json!(f64::MAX);
        std::fs::write(dir.join(name), half.to_string()).unwrap();
    }
    refused_in(&dir, &["merge", "a.json", "b.json"], "wall_secs");
}

/// `check --partial` is for a history whose writer was stopped at any
/// byte, inside a character too; without `--partial` that is refused.
#[test]
fn a_history_cut_inside_a_character_is_judged_with_partial() {
    let dir = folder("sim-cut-char-");
    let (code, _, err) = sim_in(&dir, &["run", "--seed", "1", "--jsonl", "h.jsonl"]);
    assert_eq!(code, 0, "{err}");
    let mut bytes = std::fs::read(dir.join("h.jsonl")).unwrap();
    // A last line cut after the first byte of a two-byte character.
    bytes.extend_from_slice(b"{\"at_ms\":1,\"note\":\"\xc3");
    std::fs::write(dir.join("h.jsonl"), &bytes).unwrap();
    let (code, out, err) = sim_in(&dir, &["check", "h.jsonl", "--partial"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("its last line is cut off"), "{out}");
    refused_in(&dir, &["check", "h.jsonl"], "not UTF-8");
}

/// More jobs than the system gives threads (here: 256 under a 1 GB
/// address-space limit, each thread's stack reserved in it) is a sweep on
/// the threads it got, not an abort (134) or a panic (101).
#[test]
fn a_sweep_runs_on_the_threads_the_system_gives() {
    let dir = folder("sim-threads-");
    let sim = env!("CARGO_BIN_EXE_sim");
    let (code, out, err) = finished(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v 1048576 && exec '{sim}' explore --seeds 40 --jobs 256 --summary s.json"
            ))
            .current_dir(&dir),
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(read_json(&dir.join("s.json"))["runs"], 40, "{err}");
}

/// A scenario's expected texts are a set: one listed twice is a mistake
/// (a copy meant to be edited), refused naming its entry.
#[test]
fn a_scenario_text_listed_twice_is_refused_naming_it() {
    let dir = folder("sim-twice-");
    let source = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/a-database-failover-steps-its-clock-forward.toml"
    );
    let text = std::fs::read_to_string(source).unwrap();
    let missed = "real_may_miss = [\"lease expired at 4196 ms\"]";
    assert!(text.contains(missed), "the scenario still says {missed}");
    let twice = "real_may_miss = [\"lease expired at 4196 ms\", \"lease expired at 4196 ms\"]";
    // The name must match the file's: the same name, another folder.
    let file = "a-database-failover-steps-its-clock-forward.toml";
    std::fs::write(dir.join(file), text.replace(missed, twice)).unwrap();
    let (code, _, err) = sim_in(&dir, &["scenario", file]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("expect.real_may_miss[1]") && err.contains("listed twice"),
        "{err}"
    );
}
