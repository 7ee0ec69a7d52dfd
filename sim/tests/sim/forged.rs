//! Summaries damaged or forged in ways their shape allows: `merge` and
//! `--baseline` refuse each, naming the file and the field, rather than
//! adding it into a sweep's verdict.

use std::path::Path;

use serde_json::{Value, json};

use crate::cli::{refused, sim, sim_in, words};

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn forged_summaries_are_refused_naming_the_file_and_field() {
    let dir = test_support::ScratchDir::new("sim-forged-");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    for (shard, name) in [("1/3", "s1.json"), ("2/3", "s2.json"), ("3/3", "s3.json")] {
        let args = words("explore --seeds 30 --swarm --flaw stale-release");
        let summary = path(name);
        let mut args = args.to_vec();
        args.extend(["--shard", shard, "-q", "--summary", &summary]);
        assert_eq!(sim(&args).0, 1, "the flaw fails some seeds");
    }
    let (code, _, err) = sim(&[
        "explore",
        "--seeds",
        "6",
        "-q",
        "--summary",
        &path("clean.json"),
    ]);
    assert_eq!(code, 0, "{err}");
    let second = read_json(&dir.join("s2.json"));
    assert_eq!(
        second["failures"][0]["seed"], 1,
        "the sweep's first failure"
    );
    let wide = u64::MAX - second["violations"].as_u64().unwrap() + 1;

    type Edit = fn(&mut Value, u64);
    let forgeries: [(&str, &str, Edit); 12] = [
        (
            "s2.json",
            "failures[0].clauses[0]: BOGUS-1 is not a clause",
            |v, _| {
                v["failures"][0]["clauses"] = json!(["BOGUS-1"]);
            },
        ),
        ("s2.json", "failures[1].token: ", |v, _| {
            v["failures"][1]["token"] = json!([1, 2])
        }),
        (
            "s2.json",
            "violations_by_clause: XYZ-9 is not a clause",
            |v, _| {
                let count = v["violations"].clone();
                v["violations_by_clause"] = json!({ "XYZ-9": count });
            },
        ),
        (
            "s2.json",
            "failures[0].token: seed 999 for the failure of seed 1",
            |v, _| {
                v["failures"][0]["token"]["seed"] = json!(999);
            },
        ),
        (
            "s2.json",
            "failures[0].token: runs no flaw, but the sweep ran stale-release",
            |v, _| {
                v["failures"][0]["token"]["flaw"] = Value::Null;
            },
        ),
        (
            "s2.json",
            "failures[0].shrunk.clause: FEN-1, but the failure's first clause",
            |v, _| {
                v["failures"][0]["shrunk"]["clause"] = json!("FEN-1");
            },
        ),
        ("s2.json", "failures[0].shrunk.token: ", |v, _| {
            v["failures"][0]["shrunk"]["token"] = json!({ "seed": 1, "replicas": 9 });
        }),
        (
            "s2.json",
            "coverage: made-up-probe is not a probe",
            |v, _| {
                v["coverage"]["made-up-probe"] = json!(3);
            },
        ),
        ("s2.json", "wall_secs: -5 is not a measure", |v, _| {
            v["wall_secs"] = json!(-5.0)
        }),
        (
            "s2.json",
            "partial: true but every shard held visited all its seeds",
            |v, _| {
                v["partial"] = json!(true);
            },
        ),
        (
            "clean.json",
            "sweep: 6 seeds from 18446744073709551614 is not a range",
            |v, _| {
                v["sweep"]["start"] = json!(u64::MAX - 1);
            },
        ),
        // Each file adds up; together they would wrap to a clean sweep.
        (
            "s1.json",
            "violations: the summaries' counts add up past 2^64 - 1",
            |v, wide| {
                v["violations"] = json!(wide);
                v["violations_by_clause"] = json!({ "REL-1": wide });
            },
        ),
    ];
    for (source, expected, edit) in forgeries {
        let mut value = read_json(&dir.join(source));
        edit(&mut value, wide);
        std::fs::write(dir.join("forged.json"), value.to_string()).unwrap();
        let files: Vec<String> = if source == "clean.json" {
            vec![path("forged.json")]
        } else {
            ["s1.json", "s2.json", "s3.json"]
                .iter()
                .map(|name| path(if *name == source { "forged.json" } else { name }))
                .collect()
        };
        let mut args = vec!["merge"];
        args.extend(files.iter().map(String::as_str));
        let (code, out, err) = sim(&args);
        assert_eq!(code, 2, "{expected}: exit {code}\n{out:.300}\n{err}");
        assert!(
            err.contains("forged.json") && err.contains(expected),
            "{expected}: {err}"
        );
        // As a baseline too: refused, not triaged against (but for the
        // wrapping sum, which only the merge of several files shows).
        let real = [path("s1.json"), path("s2.json"), path("s3.json")];
        if source == "s2.json" {
            let forged = path("forged.json");
            let mut args = vec!["merge"];
            args.extend(real.iter().map(String::as_str));
            args.extend(["--baseline", &forged]);
            let (code, _, err) = sim(&args);
            assert_eq!(code, 2, "--baseline {expected}: {err}");
            assert!(
                err.contains("--baseline") && err.contains(expected),
                "{err}"
            );
        }
    }

    // A shrunk plan of the right shape that this build does not see fail:
    // said so, never printed as a violation.
    let mut value = second.clone();
    value["failures"][0]["shrunk"]["token"] =
        json!({ "seed": 1, "flaw": "stale-release", "replicas": 1, "duration_ms": 1000 });
    std::fs::write(dir.join("forged.json"), value.to_string()).unwrap();
    let (_, out, err) = sim_in(&dir, &words("merge s1.json forged.json s3.json"));
    assert!(
        out.contains("but this build's replay of it keeps REL-1"),
        "{out:.2000}\n{err}"
    );
    assert!(!out.contains("broke 0 clause"), "{out:.2000}");
    let merge_and_save = "merge s1.json forged.json s3.json --save-failures kept";
    let (code, _, err) = sim_in(&dir, &words(merge_and_save));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the failure of seed 1 (REL-1)") && err.contains("another build, or damaged"),
        "{err}"
    );

    // Another build's baseline: its plans are held to its own rules (this
    // build refuses two faults for one call; an older one drew them).
    let mut older = second.clone();
    older["build"]["source_hash"] = json!("0123456789abcdef");
    let mut token = older["failures"][0]["token"].clone();
    let twice = json!({"kind": "call_fault", "replica": 1, "op": "acquire", "nth": 1});
    token["events"] = json!([twice.clone(), twice]);
    older["failures"][0]["token"] = token;
    std::fs::write(dir.join("older.json"), older.to_string()).unwrap();
    let merge_against_older = "merge s1.json s2.json s3.json --baseline older.json";
    let (code, out, err) = sim_in(&dir, &words(merge_against_older));
    assert_ne!(code, 2, "{err}");
    assert!(out.contains("triage against"), "{out}\n{err}");

    // Not a summary at all, and endless: refused at the size limit.
    refused(&["merge", "/dev/zero"], "/dev/zero: larger than the");
}
