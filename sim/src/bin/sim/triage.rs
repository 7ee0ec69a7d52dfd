//! Triage printed (`merge --baseline`), and `--save-failures`, which keeps
//! each distinct failure as a scenario file.

use std::path::Path;

use retention_sim::report::{parse_token, replay_command};
use retention_sim::sweep::{Failure, Summary, Triage, distinct};

use crate::commands::save_scenario;
use crate::files::may_write;
use crate::output::{say, tell};

/// Prints the triage after the merged summary.
pub fn print_triage(triaged: &Triage, path: &Path, baseline: &Summary) {
    say!(
        "\ntriage against {} ({} runs, {} failed; build {} {}):",
        path.display(),
        baseline.runs,
        baseline.failed_runs,
        baseline.build.version,
        baseline.build.source_hash
    );
    let sections = [
        ("new", &triaged.new),
        ("still failing", &triaged.still_failing),
        ("fixed", &triaged.fixed),
    ];
    for (name, failures) in sections {
        say!("  {name}: {}", failures.len());
        for failure in failures {
            let command = parse_token(&failure.best_token().to_string()).map_or_else(
                |_| failure.best_token().to_string(),
                |spec| replay_command(&spec),
            );
            say!(
                "    {} (seed {}): {command}",
                failure.clauses[0],
                failure.seed
            );
        }
    }
    if triaged.untriaged > 0 {
        say!(
            "  not triaged: {} failures beyond --shrink-max were not shrunk{}",
            triaged.untriaged,
            if triaged.new_untriaged_clauses.is_empty() {
                String::new()
            } else {
                format!(
                    "; NEW clauses among them: {}",
                    triaged.new_untriaged_clauses.join(", ")
                )
            }
        );
    }
    if let Some(caveat) = &triaged.caveat {
        say!("  NOTE: {caveat}");
    }
}

/// Writes each distinct shrunk failure of `summary` as
/// `DIR/[FLAW-]CLAUSE-seed-SEED.toml` (the folder made if missing). Every
/// target is checked before the first is written.
pub fn save_failures(summary: &Summary, dir: &Path, force: bool) -> Result<(), String> {
    let flag = "--save-failures";
    if !dir.is_dir() {
        std::fs::create_dir(dir).map_err(|error| {
            format!("{flag} {}: cannot make the folder: {error}", dir.display())
        })?;
    }
    let mut chosen: Vec<&Failure> = distinct(summary).into_values().collect();
    chosen.sort_by_key(|failure| failure.seed);
    let targets: Vec<std::path::PathBuf> = chosen
        .iter()
        .map(|failure| {
            let clause = failure
                .shrunk
                .as_ref()
                .map_or(&failure.clauses[0], |s| &s.clause);
            let flaw = summary
                .sweep
                .flaw
                .as_ref()
                .map_or(String::new(), |f| format!("{f}-"));
            dir.join(format!(
                "{flaw}{}-seed-{}.toml",
                clause.to_lowercase(),
                failure.seed
            ))
        })
        .collect();
    for target in &targets {
        may_write(target, force).map_err(|problem| format!("{flag} {problem}"))?;
    }
    let origin = "sim merge --save-failures";
    for (failure, target) in chosen.iter().zip(&targets) {
        let spec = parse_token(&failure.best_token().to_string())?;
        save_scenario(&spec, target, force, origin).map_err(|problem| {
            let why = if problem.contains("keeps every clause") {
                " (the summary is from another build, or damaged)"
            } else {
                ""
            };
            format!(
                "{flag}: the failure of seed {} ({}): {problem}{why}",
                failure.seed,
                failure.clauses.join(", ")
            )
        })?;
    }
    let not_shrunk = summary
        .failures
        .iter()
        .filter(|f| f.shrunk.is_none())
        .count();
    tell!(
        "saved {} distinct failures in {}{}",
        targets.len(),
        dir.display(),
        if not_shrunk > 0 {
            format!(" ({not_shrunk} not shrunk were not saved)")
        } else {
            String::new()
        }
    );
    Ok(())
}
