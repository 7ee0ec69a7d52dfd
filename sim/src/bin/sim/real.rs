//! `sim replay TOKEN --real`: the token's plan run against a throwaway
//! PostgreSQL with the production worker and adapters, judged by the same
//! checker, each attempt's history and picture saved.

use crate::commands::jsonl_naming_plan;
use crate::output::say;
use std::path::Path;

use retention_sim::model::RunSpec;
use retention_sim::real::{
    RealServer, attempt_until_violated, compare_scenario, not_applied, refusal, verdict_text,
};
use retention_sim::report::{excerpt, replay_command, swimlanes};
use retention_sim::{Scenario, Sim, check};

/// What a plan fixes, and so is applied exactly; what the machine decides.
const EXACT: &str = "applied exactly: replicas, worker settings, the server-side bounds, \
    the backlog and boundary rows (drawn from the seed), the fault knobs' draws per call, \
    chosen calls' faults and stops (by call number), and each timed event's instant on the \
    run's clock";
const APPROXIMATE: &str = "applied approximately: each delete's work time (the simulator's \
    own draws from db_batch_ms, slept inside the statement in the order statements reach the \
    server, on top of its own work), commit times (the server's own), network delays (a proxy \
    per replica drawing 1-10 ms a message, as madsim does, not the simulator's draws), \
    scheduling (tokio and the OS), and so which call an instant lands in";

/// Runs `spec` up to `attempts` times against one throwaway server, each
/// on a fresh database; stops at the first attempt that violates a clause.
/// Writes `attempt-K.jsonl` and `attempt-K.svg` into `out` (by default a
/// new folder, so that the next replay is not refused). Ok(true) when no
/// attempt violated a clause.
pub fn replay_real(
    spec: &RunSpec,
    attempts: u32,
    out: Option<&Path>,
    force: bool,
) -> Result<bool, String> {
    spec.validate().map_err(|error| error.to_string())?;
    if let Some(why) = refusal(spec) {
        return Err(format!("cannot run this plan against PostgreSQL: {why}"));
    }
    if attempts == 0 {
        return Err("--attempts must be at least 1".to_owned());
    }
    let out = match out {
        Some(out) => {
            prepare_folder(out, force, attempts)?;
            out.to_owned()
        }
        None => fresh_folder("real-replay")?,
    };
    let out = out.as_path();
    say!("attempts are saved in {}", out.display());
    let simulated = check(&Sim::new(spec).run().map_err(|error| error.to_string())?);
    let expected = simulated.clauses();
    say!("simulated: {}", verdict_text(&simulated));
    say!("{EXACT}");
    say!("{APPROXIMATE}");
    for skipped in not_applied(spec) {
        say!("not applied: {skipped}");
    }
    let server = RealServer::start_installed()?;
    let violated = attempt_until_violated(&server, spec, attempts, |attempt| {
        let (number, history) = (attempt.number, &attempt.run.history);
        let jsonl = out.join(format!("attempt-{number}.jsonl"));
        let svg = out.join(format!("attempt-{number}.svg"));
        write(&jsonl, &jsonl_naming_plan(history, spec), force)?;
        write(&svg, &swimlanes(history, &attempt.verdict), force)?;
        say!(
            "attempt {number} of {attempts}: {} events, {} ({})",
            history.events.len(),
            verdict_text(&attempt.verdict),
            jsonl.display()
        );
        Ok(())
    })?;
    let Some(attempt) = violated else {
        say!("not reproduced in {attempts} attempt(s)");
        return Ok(true);
    };
    let first = &attempt.verdict.violations[0];
    say!("{first}\n{}", excerpt(&attempt.run.history, &first.events));
    say!("in the simulator: {}", replay_command(spec));
    let same = expected.contains(&first.clause);
    say!(
        "confirmed against PostgreSQL: {} (attempt {} of {attempts}){}",
        attempt.verdict.clauses().join(", "),
        attempt.number,
        if same || expected.is_empty() {
            ""
        } else {
            "; the simulation violated other clauses"
        }
    );
    Ok(false)
}

/// The attempts' folder: created, or refused when it holds files already
/// (unless `force`, which replaces the attempts' files only, and never
/// through a link).
fn prepare_folder(out: &Path, force: bool, attempts: u32) -> Result<(), String> {
    match std::fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() && !force {
                return Err(format!(
                    "--out {}: the folder is not empty (add --force to replace its attempts)",
                    out.display()
                ));
            }
            // The attempts' files there now (a link, a folder), checked
            // before the server starts: as many checks as files, whatever
            // --attempts says.
            let entries =
                std::fs::read_dir(out).map_err(|e| format!("--out {}: {e}", out.display()))?;
            for entry in entries.flatten() {
                let name = entry.file_name();
                let number = (name.to_str())
                    .and_then(|name| name.strip_prefix("attempt-"))
                    .and_then(|rest| {
                        rest.strip_suffix(".jsonl")
                            .or_else(|| rest.strip_suffix(".svg"))
                    })
                    .and_then(|number| number.parse::<u32>().ok());
                if number.is_some_and(|number| (1..=attempts).contains(&number)) {
                    crate::files::may_write(&entry.path(), force)
                        .map_err(|problem| format!("--out {problem}"))?;
                }
            }
            Ok(())
        }
        // Made only inside a folder that exists, as `scenario --real` does:
        // a mistyped path is not built level by level.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(out)
            .map_err(|error| {
                format!(
                    "--out {}: cannot make it: {error} (is its parent a folder?)",
                    out.display()
                )
            }),
        Err(error) => Err(format!("--out {}: {error}", out.display())),
    }
}

/// `NAME`, else `NAME-2`, `NAME-3`, ...: the first that did not exist,
/// made here (so two replays at once never share one).
fn fresh_folder(name: &str) -> Result<std::path::PathBuf, String> {
    for number in 1_u32.. {
        let folder = match number {
            1 => std::path::PathBuf::from(name),
            _ => std::path::PathBuf::from(format!("{name}-{number}")),
        };
        match std::fs::create_dir(&folder) {
            Ok(()) => return Ok(folder),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                return Err(format!(
                    "cannot make {} for the attempts here: {error} (name a folder with --out)",
                    folder.display()
                ));
            }
        }
    }
    unreachable!("some folder name is free")
}

/// Through the safe writer: never through a link, never half written, a
/// file there replaced only with `force`.
fn write(path: &Path, text: &str, force: bool) -> Result<(), String> {
    crate::files::write_checked(path, text, force, |_| Ok(()))
}

/// Checks `--out DIR` before any run: DIR is a folder or can be made (it
/// is made here), no two scenarios write one `NAME.jsonl` there, none is
/// the table or an input, and none that is there is replaced unless
/// `force`. A folder made here for a refused command is removed.
pub fn histories_folder(
    out: Option<&Path>,
    table: Option<&Path>,
    files: &[std::path::PathBuf],
    force: bool,
) -> Result<(), String> {
    use crate::files::{distinct, folder_or_makeable, folder_takes_files, make_folder, may_write};
    let Some(out) = out else {
        return Ok(());
    };
    folder_or_makeable("--out", out)?;
    crate::files::one_name_each("--out", out, files, "jsonl")?;
    let mut histories = Vec::with_capacity(files.len());
    for file in files {
        let scenario = Scenario::load(file).map_err(|error| error.to_string())?;
        histories.push(out.join(format!("{}.jsonl", scenario.name)));
    }
    let inputs: Vec<&Path> = files.iter().map(std::path::PathBuf::as_path).collect();
    let outputs: Vec<(&str, &Path)> = (table.map(|table| ("--table", table)).into_iter())
        .chain(histories.iter().map(|history| ("--out", history.as_path())))
        .collect();
    distinct(&inputs, &outputs)?;
    let made = make_folder("--out", out)?;
    let checked = histories.iter().try_for_each(|history| {
        may_write(history, force)
            .and_then(|()| folder_takes_files(history))
            .map_err(|problem| format!("--out {problem}"))
    });
    if checked.is_err() && made {
        let _ = std::fs::remove_dir(out);
    }
    checked
}

/// `sim scenario --real FILES`: each scenario run in the simulator and
/// once against PostgreSQL, judged by its own expectation both times; one
/// line each, then a tally. Ok(true) when every real run met it.
pub fn scenarios_real(
    files: &[std::path::PathBuf],
    table: Option<&Path>,
    out: Option<&Path>,
    force: bool,
) -> Result<bool, String> {
    let server = RealServer::start_installed()?;
    let (mut kept, mut differed, mut unstaged, mut skipped) = (0, 0, 0, 0);
    let mut rows = vec![
        "| scenario | simulated | PostgreSQL | `expect.shows` the real run missed |".to_owned(),
        "|---|---|---|---|".to_owned(),
    ];
    for (index, file) in files.iter().enumerate() {
        let scenario = Scenario::load(file).map_err(|error| error.to_string())?;
        if let Some(why) = refusal(&scenario.run) {
            say!("{}: skipped: {why}", scenario.name);
            rows.push(format!("| {} | - | skipped | {why} |", scenario.name));
            skipped += 1;
            continue;
        }
        let compared = compare_scenario(&server, &scenario, &format!("scenario_{index}"))?;
        if let Some(out) = out {
            let jsonl = out.join(format!("{}.jsonl", scenario.name));
            let text = jsonl_naming_plan(&compared.real.history, &scenario.run);
            write(&jsonl, &text, force)?;
        }
        let real_verdict = verdict_text(&compared.verdict);
        match &compared.judged {
            Ok(excused) => {
                kept += 1;
                say!(
                    "{}: as expected against PostgreSQL ({real_verdict})",
                    scenario.name
                );
                if !excused.is_empty() {
                    say!(
                        "  missed {} text(s) it may miss: {}",
                        excused.len(),
                        scenario.expect.real_why
                    );
                }
            }
            Err(problems) => {
                let (label, count) = if compared.not_applied.is_empty() {
                    ("NOT as expected", &mut differed)
                } else {
                    ("not staged", &mut unstaged)
                };
                *count += 1;
                say!(
                    "{}: {label} against PostgreSQL ({real_verdict}; simulated: {}):\n  {}",
                    scenario.name,
                    if compared.simulated.is_ok() {
                        "as expected"
                    } else {
                        "not as expected either"
                    },
                    problems.replace('\n', "\n  ")
                );
            }
        }
        if !compared.verdict.passed() {
            say!("  in the simulator: {}", replay_command(&scenario.run));
        }
        rows.push(format!(
            "| {} | {}{} | {real_verdict}{} | {} |",
            scenario.name,
            verdict_text(&compared.simulated_verdict),
            if compared.simulated.is_ok() {
                ""
            } else {
                " (not as expected)"
            },
            match (&compared.judged, compared.not_applied.is_empty()) {
                (Ok(_), _) => "",
                (Err(_), true) => " (not as expected)",
                (Err(_), false) => " (not staged)",
            },
            if compared.missed.is_empty() {
                "none".to_owned()
            } else {
                compared.missed.join(", ")
            }
        ));
        for skipped_part in &compared.not_applied {
            say!("  not applied: {skipped_part}");
        }
    }
    let tally = format!(
        "{kept} as expected against PostgreSQL, {differed} not, {unstaged} not staged \
         (a fault real mode cannot apply), {skipped} skipped"
    );
    say!("{tally}");
    if let Some(table) = table {
        rows.push(String::new());
        rows.push(format!("{tally}."));
        write(table, &(rows.join("\n") + "\n"), force)?;
    }
    Ok(differed == 0)
}
