//! Triage printed (`merge --baseline`), and `--save-failures`, which keeps
//! each distinct failure as a scenario file.

use std::path::Path;

use retention_sim::report::{parse_token, replay_command};
use retention_sim::sweep::{Failure, Summary, Triage, distinct, file_name_part};

use crate::commands::save_scenario;
use crate::files::may_write;
use crate::output::{say, tell};

/// Whether a "fixed" is backed by enough clean runs, in words.
fn credibility(credible: Option<retention_sim::sweep::Credible>) -> String {
    match credible {
        None => "no rate to judge the fix by (the baseline was a guided campaign)".into(),
        Some(c) if c.enough => format!(
            "credible at 95 %: the baseline drew it at {:.2e} per run, so a fix needs {} clean runs; this sweep ran {}",
            c.baseline_rate, c.clean_runs_needed, c.runs
        ),
        Some(c) => format!(
            "NOT YET CREDIBLE: the baseline drew it at {:.2e} per run, so a fix needs {} clean runs at 95 %; this sweep ran only {}",
            c.baseline_rate, c.clean_runs_needed, c.runs
        ),
    }
}

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
        for (at, failure) in failures.iter().enumerate() {
            let command = parse_token(failure.best_token().as_str()).map_or_else(
                |_| failure.best_token().to_string(),
                |spec| replay_command(&spec),
            );
            say!(
                "    {} (seed {}): {command}",
                failure.clauses[0],
                failure.seed
            );
            if name == "fixed" {
                say!(
                    "      {}",
                    credibility(triaged.fixed_credible.get(at).copied().flatten())
                );
            }
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

/// `DIR/[FLAW-]CLAUSE-seed-SEED.toml`, refused unless each name taken from
/// the summary is a safe file-name part, so the file is inside `dir`.
fn failure_file(
    dir: &Path,
    flaw: Option<&str>,
    clause: &str,
    seed: u64,
) -> Result<std::path::PathBuf, String> {
    let clause = clause.to_lowercase();
    for (field, name) in [("sweep.flaw", flaw), ("clause", Some(clause.as_str()))] {
        if let Some(name) = name
            && !file_name_part(name)
        {
            return Err(format!("{field} {name:?} cannot be part of a file name"));
        }
    }
    let flaw = flaw.map_or(String::new(), |flaw| format!("{flaw}-"));
    let file = dir.join(format!("{flaw}{clause}-seed-{seed}.toml"));
    assert_eq!(
        file.parent(),
        Some(dir),
        "a checked name stays in its folder"
    );
    Ok(file)
}

const SAVE_FLAG: &str = "--save-failures";

/// The files `--save-failures DIR` will write, one per distinct failure,
/// each checked (a safe name inside `DIR`, writable) before the merge
/// writes anything: `DIR` is a folder, or can be made in one.
pub struct SavePlan<'a> {
    dir: &'a Path,
    chosen: Vec<(&'a Failure, std::path::PathBuf)>,
    force: bool,
}

/// Plans `--save-failures DIR` for `summary`; refuses before any write.
pub fn plan_saves<'a>(
    summary: &'a Summary,
    dir: &'a Path,
    force: bool,
) -> Result<SavePlan<'a>, String> {
    let flag = SAVE_FLAG;
    crate::files::folder_or_makeable(flag, dir)?;
    let mut chosen: Vec<&Failure> = distinct(summary).into_values().collect();
    chosen.sort_by_key(|failure| failure.seed);
    let targets = chosen
        .iter()
        .map(|failure| {
            let clause = failure
                .shrunk
                .as_ref()
                .map_or(&failure.clauses[0], |s| &s.clause);
            let flaw = summary.sweep.flaw.as_deref();
            failure_file(dir, flaw, clause, failure.seed)
                .map_err(|why| format!("{flag}: the failure of seed {}: {why}", failure.seed))
        })
        .collect::<Result<Vec<_>, String>>()?;
    if dir.is_dir() {
        for target in &targets {
            may_write(target, force).map_err(|problem| format!("{flag} {problem}"))?;
        }
    }
    Ok(SavePlan {
        dir,
        chosen: chosen.into_iter().zip(targets).collect(),
        force,
    })
}

/// Writes each distinct shrunk failure of `summary` as planned, as
/// `DIR/[FLAW-]CLAUSE-seed-SEED.toml` (the folder made if missing).
pub fn save_failures(summary: &Summary, plan: SavePlan<'_>) -> Result<(), String> {
    let (flag, dir, force) = (SAVE_FLAG, plan.dir, plan.force);
    crate::files::make_folder(flag, dir)?;
    let origin = "sim merge --save-failures";
    for (failure, target) in &plan.chosen {
        let spec = parse_token(failure.best_token().as_str()).map_err(|problem| {
            format!(
                "{flag}: the failure of seed {}: token: {problem}",
                failure.seed
            )
        })?;
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
    let not_shrunk = summary.failures.len() - summary.shrunk_failures();
    tell!(
        "saved {} distinct failures in {}{}",
        plan.chosen.len(),
        dir.display(),
        if not_shrunk > 0 {
            format!(" ({not_shrunk} not shrunk were not saved)")
        } else {
            String::new()
        }
    );
    Ok(())
}
