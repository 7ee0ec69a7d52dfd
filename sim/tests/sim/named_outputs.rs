//! Outputs named after their scenario files (`scenario --svg DIR`,
//! `scenario --real --out DIR`): two files of one name, or one file listed
//! twice, would write one output twice; each is refused before any run,
//! and nothing is left behind.

use std::path::Path;

use super::cli::sim_in;

const SCENARIO: &str = "a-clock-stepped-back-mid-term";

/// A folder holding `a/NAME.toml` and `b/NAME.toml`, the same scenario.
fn two_of_one_name() -> test_support::ScratchDir {
    let dir = test_support::ScratchDir::new("sim-named-outputs-");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/{SCENARIO}.toml")),
    )
    .unwrap();
    for folder in ["a", "b"] {
        std::fs::create_dir(dir.join(folder)).unwrap();
        std::fs::write(dir.join(folder).join(format!("{SCENARIO}.toml")), &text).unwrap();
    }
    std::fs::create_dir(dir.join("pictures")).unwrap();
    std::fs::create_dir(dir.join("histories")).unwrap();
    dir
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn two_scenarios_of_one_name_are_refused_before_any_run() {
    let dir = two_of_one_name();
    let a = format!("a/{SCENARIO}.toml");
    let b = format!("b/{SCENARIO}.toml");
    let history = format!("histories/{SCENARIO}.jsonl");
    let cases: [(Vec<&str>, &str); 4] = [
        // The second picture replaced the first (with --force), or was
        // refused after both runs.
        (
            vec!["scenario", &a, &b, "--svg", "pictures", "--force"],
            "have one name, and both would write",
        ),
        (
            vec!["scenario", &a, "a/", "--svg", "pictures"],
            "is listed twice, and both would write",
        ),
        // Refused before the server starts: no PostgreSQL is needed.
        (
            vec!["scenario", "--real", &a, &b, "--out", "fresh"],
            "have one name, and both would write",
        ),
        (
            vec![
                "scenario",
                "--real",
                &a,
                "--out",
                "histories",
                "--table",
                &history,
            ],
            "--table writes the same file",
        ),
    ];
    for (args, expected) in cases {
        let (code, out, err) = sim_in(&dir, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(!out.contains("as expected"), "{args:?} ran: {out}");
        assert_eq!(
            entries(&dir),
            ["a", "b", "histories", "pictures"],
            "{args:?}"
        );
        assert!(entries(&dir.join("pictures")).is_empty(), "{args:?}");
        assert!(entries(&dir.join("histories")).is_empty(), "{args:?}");
    }
    // One of each name is drawn as before.
    let (code, _, err) = sim_in(&dir, &["scenario", &a, "--svg", "pictures"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(entries(&dir.join("pictures")), [format!("{SCENARIO}.svg")]);
}
