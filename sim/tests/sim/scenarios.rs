//! Every file in `scenarios/` runs, meets its expectation and matches its
//! snapshots in `snapshots/` (the text report and the swimlane picture);
//! bad files are refused with file, line and field.

use std::path::{Path, PathBuf};

use retention_sim::checker::CLAUSES;
use retention_sim::model::Flaw;
use retention_sim::report::{scenario_files, scenario_report, swimlanes};
use retention_sim::{RunSpec, Scenario, Sim, check, format_failure};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Compares `report` with `snapshots/<name>.snap`.
fn assert_snapshot(name: &str, description: &str, report: String) {
    insta::with_settings!({
        snapshot_path => "../../../snapshots",
        prepend_module_to_snapshot => false,
        omit_expression => true,
        description => description,
    }, {
        insta::assert_snapshot!(name.to_owned(), report);
    });
}

/// Compares `svg` with `snapshots/<name>.svg`, the picture a reviewer sees
/// change in a pull request. As with insta: `INSTA_UPDATE=always` writes
/// it; otherwise a difference writes `<name>.svg.new` beside it and is
/// returned as a problem.
fn check_picture(name: &str, svg: &str) -> Result<(), String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../snapshots/{name}.svg"));
    let stored = std::fs::read_to_string(&path).ok();
    if stored.as_deref() == Some(svg) {
        return Ok(());
    }
    if std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always") {
        std::fs::write(&path, svg).expect("write the picture");
        return Ok(());
    }
    let new = path.with_extension("svg.new");
    std::fs::write(&new, svg).expect("write the new picture");
    Err(format!(
        "{}: the picture {} (the new one is {}; INSTA_UPDATE=always accepts it)",
        path.display(),
        if stored.is_some() {
            "changed"
        } else {
            "is missing"
        },
        new.display()
    ))
}

fn load_all() -> Vec<Scenario> {
    let files = scenario_files(&scenarios_dir()).expect("the scenarios folder");
    files
        .iter()
        .map(|file| Scenario::load(file).unwrap_or_else(|error| panic!("{error}")))
        .collect()
}

#[test]
fn every_scenario_meets_its_expectation_and_matches_its_snapshot() {
    let scenarios = load_all();
    assert!(scenarios.len() >= 25, "only {} scenarios", scenarios.len());
    let mut unmet = Vec::new();
    for scenario in &scenarios {
        let history = Sim::new(&scenario.run)
            .run()
            .expect("a loaded scenario is valid");
        let verdict = check(&history);
        let report = scenario_report(scenario, &history, &verdict);
        if let Err(problems) = scenario.judge(&verdict, &history.timeline()) {
            let failure = format_failure(&scenario.run, &history, &verdict);
            unmet.push(format!("{}:\n{problems}\n{failure}", scenario.name));
        }
        assert_snapshot(&scenario.name, scenario.description.trim(), report);
        if let Err(problem) = check_picture(&scenario.name, &swimlanes(&history, &verdict)) {
            unmet.push(problem);
        }
    }
    assert!(
        unmet.is_empty(),
        "scenarios not as expected:\n{}",
        unmet.join("\n")
    );
}

/// A finding's scenario fails on its flawed variant with the clauses it
/// names (and passes on the real worker, above); the failing report is a
/// snapshot too, `<scenario>--<flaw>.snap`.
#[test]
fn every_flawed_variant_breaks_its_scenario_as_expected() {
    let mut unmet = Vec::new();
    let mut variants = 0;
    for scenario in load_all() {
        for name in scenario.expect.flaws.keys() {
            let flaw = Flaw::from_name(name).expect("validated on load");
            let spec = RunSpec {
                flaw: Some(flaw),
                ..scenario.run.clone()
            };
            let history = Sim::new(&spec).run().unwrap();
            let verdict = check(&history);
            if let Err(problems) = scenario.judge_flawed(flaw, &verdict) {
                unmet.push(format!("{} with {name}: {problems}", scenario.name));
            }
            let flawed = Scenario {
                run: spec,
                ..scenario.clone()
            };
            let report = scenario_report(&flawed, &history, &verdict);
            let description = format!("{} on the {name} variant", scenario.name);
            assert_snapshot(&format!("{}--{name}", scenario.name), &description, report);
            variants += 1;
        }
    }
    assert!(variants >= 5, "only {variants} flawed runs declared");
    assert!(unmet.is_empty(), "{}", unmet.join("\n"));
}

#[test]
fn every_clause_has_a_scenario_and_every_report_checks_its_clauses() {
    let scenarios = load_all();
    for (clause, _) in CLAUSES {
        let covered = scenarios
            .iter()
            .any(|s| s.clauses.iter().any(|c| c == clause));
        assert!(covered, "no scenario declares {clause}");
    }
    for name in [
        "finding-1",
        "finding-2",
        "finding-3",
        "finding-4",
        "finding-5",
    ] {
        assert!(
            scenarios.iter().any(|s| s.name.starts_with(name)),
            "no scenario for {name}"
        );
    }
    for scenario in &scenarios {
        let history = Sim::new(&scenario.run).run().unwrap();
        let report = scenario_report(scenario, &history, &check(&history));
        for clause in &scenario.clauses {
            let checked = report.lines().any(|line| line.starts_with(clause.as_str()));
            assert!(
                checked,
                "{}'s report never shows {clause} being checked",
                scenario.name
            );
        }
    }
}

fn refusal(text: &str) -> String {
    Scenario::parse(Path::new("scenarios/bad.toml"), text)
        .expect_err("a bad file")
        .to_string()
}

const GOOD: &str = r#"name = "bad"
description = "A scenario with one thing wrong."
clauses = ["STP-5"]

[run]
seed = 3
replicas = 2
duration_ms = 5000

[[run.events]]
kind = "stop"
replica = 1
at_ms = 2000
callers = 1
"#;

#[test]
fn the_reference_file_for_the_error_tests_is_valid() {
    let scenario = Scenario::parse(Path::new("scenarios/bad.toml"), GOOD).unwrap();
    assert_eq!(scenario.run.replicas, 2);
}

#[test]
fn bad_files_are_refused_naming_file_line_and_field() {
    let cases = [
        (
            GOOD.replace("duration_ms = 5000", "duration_ms = 5000\nbogus = 1"),
            "scenarios/bad.toml:9: run.bogus: unknown field `bogus`",
        ),
        (
            GOOD.replace("kind = \"stop\"", "kind = \"meteor\""),
            "scenarios/bad.toml:11: run.events[0].kind: unknown variant `meteor`",
        ),
        (
            GOOD.replace("replica = 1", "replica = 3"),
            "scenarios/bad.toml:12: run.events[0].replica: replica 3 does not exist (1..=2)",
        ),
        (
            GOOD.replace("at_ms = 2000", "at_ms = 7000"),
            "scenarios/bad.toml:13: run.events[0].at_ms: 7000 ms is not before the run's end at 5000 ms (duration_ms)",
        ),
        (
            format!(
                "{GOOD}\n[[run.events]]\nkind = \"pause\"\nreplica = 2\nat_ms = 1000\nfor_ms = 100\n"
            ),
            "scenarios/bad.toml:19: run.events[1].at_ms: 1000 ms is in the past: events[0] happens at 2000 ms",
        ),
        (
            GOOD.replace("[\"STP-5\"]", "[\"STP-9\"]"),
            "scenarios/bad.toml:3: clauses[0]: unknown clause \"STP-9\"",
        ),
        (
            GOOD.replace("name = \"bad\"", "name = \"good\""),
            "scenarios/bad.toml:1: name: \"good\" must match the file name \"bad\"",
        ),
        (
            GOOD.replace("seed = 3", "seed = -3"),
            "scenarios/bad.toml:6: run.seed:",
        ),
    ];
    for (text, expected) in cases {
        let error = refusal(&text);
        assert!(
            error.starts_with(expected),
            "got:\n{error}\nexpected it to start with:\n{expected}"
        );
    }
}

/// Files within the size limit that are refused for their size of some
/// part: each in time that grows with the file (no timing is asserted;
/// the quadratic search this replaced took minutes on the first two), and
/// blamed on the table where the problem is.
#[test]
fn large_or_repeated_parts_are_refused_quickly_and_in_the_right_table() {
    let keys: String = (0..60_000).map(|i| format!("k{i} = 1\n")).collect();
    let many_keys = format!("{GOOD}\n[[run.events]]\nkind = \"pause\"\n{keys}");
    let error = refusal(&many_keys);
    assert!(
        error.contains("run.events[1].k0: unknown field `k0`"),
        "{}",
        &error[..error.len().min(300)]
    );
    let shows = vec!["\"a\""; 100_000].join(", ");
    let many_shows = format!("{GOOD}\n[expect]\nshows = [{shows}]\n");
    let error = refusal(&many_shows);
    assert!(
        error.contains("expect.shows[1000]: 100000 texts: a scenario shows at most 1000"),
        "{error}"
    );
    let twice = format!("{GOOD}\n[expect]\nshows = [\"x\", \"y\", \"x\"]\n");
    let error = refusal(&twice);
    assert!(
        error.contains("expect.shows[2]: \"x\" listed twice"),
        "{error}"
    );
    // A table given twice is blamed as itself, not as the table above it.
    let worker = "[run.worker]\nbatch_size = 5\n\n";
    let repeated = format!(
        "{}\n[expect]\nshows = []\n\n{worker}",
        GOOD.replace("[[run.events]]", &format!("{worker}[[run.events]]"))
    );
    let error = refusal(&repeated);
    assert!(error.contains(": run.worker"), "{error}");
    assert!(!error.contains(": expect"), "{error}");
}

#[test]
fn texts_a_real_run_may_miss_are_shown_ones_with_a_reason() {
    let expect = |lines: &str| format!("{GOOD}\n[expect]\nshows = [\"stop called\"]\n{lines}");
    let cases = [
        (
            expect("real_may_miss = [\"stop resolved\"]\nreal_why = \"timing\"\n"),
            "scenarios/bad.toml:18: expect.real_may_miss[0]: \"stop resolved\" is not in expect.shows",
        ),
        (
            expect("real_may_miss = [\"stop called\"]\n"),
            "scenarios/bad.toml:18: expect.real_may_miss: say in expect.real_why why a real run may miss these",
        ),
        (
            expect("real_why = \"timing\"\n"),
            "scenarios/bad.toml:18: expect.real_why: explains nothing: expect.real_may_miss is empty",
        ),
    ];
    for (text, expected) in cases {
        let error = refusal(&text);
        assert!(
            error.starts_with(expected),
            "got:\n{error}\nexpected it to start with:\n{expected}"
        );
    }
    let text = expect("real_may_miss = [\"stop called\"]\nreal_why = \"timing\"\n");
    let scenario = Scenario::parse(Path::new("scenarios/bad.toml"), &text).unwrap();
    let verdict = check(&Sim::new(&scenario.run).run().unwrap());
    // The real judgement excuses the listed text; the simulated one does not.
    assert_eq!(
        scenario.judge_real(&verdict, "no such text"),
        Ok(vec!["stop called".to_owned()])
    );
    assert!(scenario.judge(&verdict, "no such text").is_err());
    assert_eq!(scenario.judge_real(&verdict, "stop called"), Ok(vec![]));
}

#[test]
fn a_scenario_survives_its_toml_form() {
    for scenario in load_all().into_iter().take(5) {
        let text = scenario.to_toml("saved\nby a test");
        assert!(text.starts_with("# saved\n# by a test\n"));
        let path = PathBuf::from(format!("{}.toml", scenario.name));
        assert_eq!(Scenario::parse(&path, &text).unwrap(), scenario);
    }
}

#[test]
fn the_format_example_in_the_scenarios_readme_is_valid_and_runs_as_it_says() {
    let readme = std::fs::read_to_string(scenarios_dir().join("README.md")).unwrap();
    let start = readme.find("```toml\n").expect("a toml example") + "```toml\n".len();
    let example = &readme[start..start + readme[start..].find("```").unwrap()];
    let scenario = Scenario::parse(Path::new("stop-racing-acquire.toml"), example).unwrap();
    let history = Sim::new(&scenario.run).run().unwrap();
    assert_eq!(
        scenario.judge(&check(&history), &history.timeline()),
        Ok(())
    );
}
