//! The project's documents agree with its code: the contract lists exactly
//! the clauses the checker checks and the flaws the variant carries, and
//! every repository path the docs and comments name exists.

use std::path::{Path, PathBuf};

use retention_sim::checker::CLAUSES;
use retention_sim::model::Flaw;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_owned()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// The first cell of every table row, e.g. `ACQ-1` from `| ACQ-1 | ... |`.
fn row_ids(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter_map(|rest| rest.split(" |").next())
        .filter(|id| {
            id.contains('-')
                && id
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-')
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_contract_lists_the_clauses_the_checker_checks() {
    let contract = read("worker/CONTRACT.md");
    let listed = row_ids(&contract);
    let checked: Vec<String> = CLAUSES.iter().map(|(id, _)| (*id).to_owned()).collect();
    assert_eq!(
        listed, checked,
        "worker/CONTRACT.md's tables, in the checker's order"
    );
    for flaw in Flaw::ALL {
        let row = contract
            .lines()
            .find(|line| line.contains(&format!("`{}`", flaw.name())))
            .unwrap_or_else(|| panic!("worker/CONTRACT.md has no row for {flaw}"));
        let (first, last) = (flaw.clauses()[0], flaw.clauses()[flaw.clauses().len() - 1]);
        assert!(row.contains(first), "{flaw}: {row}");
        assert!(
            row.contains(last) || row.contains("STP-1..STP-6"),
            "{flaw}: {row}"
        );
    }
}

fn tracked_files() -> Vec<PathBuf> {
    let output = std::process::Command::new("git")
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .current_dir(root())
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git ls-files failed");
    String::from_utf8(output.stdout)
        .expect("utf-8 paths")
        .lines()
        .map(|line| root().join(line))
        .filter(|path| path.exists())
        .collect()
}

/// Words such as `worker/src/pg/records.rs` or `sim/MADSIM.md`: code and
/// documents, not the example file names (`scenarios/NAME.toml`) that
/// usage texts show.
fn named_paths(text: &str) -> Vec<String> {
    let tops = [
        "worker/",
        "sim/",
        "scenarios/",
        "snapshots/",
        ".ci/",
        ".cargo/",
    ];
    let endings = [".rs", ".md", ".toml", ".sql", ".snap"];
    text.split(|c: char| c.is_whitespace() || "`'\"()[],;:*".contains(c))
        .map(|word| word.trim_end_matches('.'))
        .filter(|word| tops.iter().any(|top| word.starts_with(top)))
        .filter(|word| endings.iter().any(|end| word.ends_with(end)))
        .filter(|word| !word.contains('<') && !word.contains('*'))
        .filter(|word| word.contains("/src/") || word.contains("/tests/") || word.ends_with(".md"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_path_the_docs_and_comments_name_exists() {
    let mut missing = Vec::new();
    for file in tracked_files() {
        let readable = ["rs", "md", "toml"];
        if !file
            .extension()
            .is_some_and(|e| readable.iter().any(|r| e == *r))
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a text file");
        for path in named_paths(&text) {
            if !root().join(&path).exists() {
                let shown = file
                    .strip_prefix(root())
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                missing.push(format!("{shown}: {path}"));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_path_reader_finds_paths_in_prose() {
    let text = "see `worker/CONTRACT.md`, (sim/MADSIM.md) and snapshots/<name>.svg.";
    assert_eq!(named_paths(text), ["worker/CONTRACT.md", "sim/MADSIM.md"]);
}

/// The guide's counts of probes and scenarios are the tool's: each grew
/// (54 to 55, 46 to 57) while README, which then held them, still said
/// the old number.
#[test]
fn readme_counts_the_probes_and_scenarios_there_are() {
    let readme = read("sim/docs/guide.md");
    let probes = retention_sim::checker::PROBES.len();
    let scenarios = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .filter(|entry| {
            let path = entry.as_ref().unwrap().path();
            path.extension().is_some_and(|ext| ext == "toml")
        })
        .count();
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    for expected in [
        format!("`sim/src/checker/clock_probes.rs`): {probes} named situations"),
        format!("(they reach all {probes})"),
        format!("`scenarios/` holds {scenarios} named situations"),
        format!("(`{scenarios} as expected, 0 not, 0 refused`)"),
    ] {
        assert!(
            flat.contains(&expected),
            "sim/docs/guide.md should say: {expected}"
        );
    }
}
