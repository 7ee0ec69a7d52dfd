//! What the single-run subcommands do (run, replay, shrink, scenario);
//! `check.rs` has `check`, `sweep.rs` the many-run ones. Each returns whether every
//! run kept the contract, or a message for bad input.

use retention_sim::checker::Verdict;
use retention_sim::model::{Flaw, History, RunSpec};
use retention_sim::report::{Expect, Scenario, replay_command, replay_token, scenario_report};
use retention_sim::report::{MAX_PICTURE_EVENTS, Overlay, swimlanes_with};
use retention_sim::search::{SHRINK_RUNS, Shrunk, shrink, violated_clause};
use retention_sim::{Sim, check, format_failure};
use std::path::Path;

use crate::files::write_checked;
use crate::output::{say, tell};

/// The most events a failing run may record and still be shrunk without
/// being asked (a default run records a few hundred).
const AUTO_SHRINK_EVENTS: usize = 200_000;

/// Files a run's results go to, besides standard output.
pub struct Outputs<'a> {
    /// The history as JSON lines.
    pub jsonl: Option<&'a Path>,
    /// The swimlane picture.
    pub svg: Option<&'a Path>,
    /// Replace files that exist.
    pub force: bool,
}

/// The swimlane picture of `history`, if it is small enough to draw.
pub fn picture(history: &History, verdict: &Verdict) -> Result<String, String> {
    picture_with(history, verdict, &Overlay::default())
}

/// [`picture`] with `overlay`'s marks.
pub fn picture_with(
    history: &History,
    verdict: &Verdict,
    overlay: &Overlay,
) -> Result<String, String> {
    if history.events.len() > MAX_PICTURE_EVENTS {
        return Err(format!(
            "the run recorded {} events; a picture is drawn for at most \
             {MAX_PICTURE_EVENTS} (shorten the run; the printed timeline has every event)",
            history.events.len()
        ));
    }
    Ok(swimlanes_with(history, verdict, overlay))
}

/// Writes the picture of `history` to `path`, checked to parse as XML
/// before it takes the target's place.
pub fn write_svg(
    path: &Path,
    history: &History,
    verdict: &Verdict,
    force: bool,
) -> Result<(), String> {
    let svg = picture(history, verdict)
        .map_err(|problem| format!("--svg {}: {problem}", path.display()))?;
    write_picture(path, &svg, force)
}

/// Writes a drawn picture to `path`, checked to parse as XML first.
pub fn write_picture(path: &Path, svg: &str, force: bool) -> Result<(), String> {
    write_checked(path, svg, force, |text| {
        roxmltree::Document::parse(text)
            .map(|_| ())
            .map_err(|error| format!("{}: the picture is not valid XML: {error}", path.display()))
    })
}

/// `history` as JSON lines whose header names `spec`, the plan that made
/// it, so `sim explain FILE` can start from the file.
pub fn jsonl_naming_plan(history: &History, spec: &RunSpec) -> String {
    let mut saved = history.clone();
    saved.header.plan = Some(replay_token(spec));
    saved.to_jsonl()
}

pub fn run_one(spec: &RunSpec, outputs: &Outputs<'_>) -> Result<bool, String> {
    let history = Sim::new(spec).run().map_err(|error| error.to_string())?;
    if let Some(path) = outputs.jsonl {
        write_checked(
            path,
            &jsonl_naming_plan(&history, spec),
            outputs.force,
            |text| {
                History::from_jsonl(text).map(|_| ()).map_err(|error| {
                    format!(
                        "{}: the history would not read back: {error}",
                        path.display()
                    )
                })
            },
        )?;
    }
    let verdict = check(&history);
    // A picture that cannot be drawn or written loses none of the rest:
    // the timeline and verdict are printed, then the refusal.
    let unwritten = outputs
        .svg
        .and_then(|path| write_svg(path, &history, &verdict, outputs.force).err());
    say!("{}", history.timeline());
    say!("verdict for seed {}:\n{}", spec.seed, verdict.summary());
    if verdict.passed() {
        say!("0 violations\nreplay: {}", replay_command(spec));
    } else {
        say!("{}", format_failure(spec, &history, &verdict));
        let clause = verdict.violations[0].clause;
        if history.events.len() > AUTO_SHRINK_EVENTS {
            // Shrinking replays the run up to SHRINK_RUNS times: for a run
            // this large that is minutes to hours, so only on request.
            tell!(
                "sim: not shrinking automatically: the run recorded {} events; \
                 `sim shrink TOKEN` shrinks it (at most {SHRINK_RUNS} runs)",
                history.events.len()
            );
        } else {
            // Say so where it cannot mix with the output.
            tell!("sim: shrinking the {clause} failure (at most {SHRINK_RUNS} runs; Ctrl-C stops)");
            let shrunk = shrink(spec, clause, SHRINK_RUNS);
            if shrunk.spec == *spec {
                // The failure above is the smallest: not printed twice.
                say!(
                    "\nshrunk: already at its smallest: no smaller plan violates {clause} \
                     ({} runs tried)",
                    shrunk.runs
                );
            } else {
                print_shrunk(&shrunk)?;
            }
        }
    }
    match unwritten {
        Some(problem) => Err(problem),
        None => Ok(verdict.passed()),
    }
}

/// `sim shrink`: the smallest plan that still violates what `spec` does.
pub fn shrink_token(spec: &RunSpec, budget: usize) -> Result<bool, String> {
    let Some(clause) = violated_clause(spec) else {
        return Err("the token's run violates no clause: nothing to shrink".into());
    };
    print_shrunk(&shrink(spec, clause, budget))?;
    Ok(false)
}

/// Prints a shrunk failure through the one formatter, with how far it
/// shrank.
pub fn print_shrunk(shrunk: &Shrunk) -> Result<(), String> {
    let sizes = (shrunk.size_before, shrunk.size_after, shrunk.runs);
    print_shrunk_plan(&shrunk.spec, shrunk.clause, sizes)
}

/// [`print_shrunk`] from its parts, as a summary file holds them: the
/// plan, its clause, and (size before, size after, runs spent).
pub fn print_shrunk_plan(
    spec: &RunSpec,
    clause: &str,
    (size_before, size_after, runs): (usize, usize, usize),
) -> Result<(), String> {
    let history = Sim::new(spec).run().map_err(|error| error.to_string())?;
    let verdict = check(&history);
    if !verdict.violations.iter().any(|v| v.clause == clause) {
        // A summary's plan, replayed by a build that judges it otherwise
        // (or a damaged one): said as it is, never as a violation.
        say!(
            "\nshrunk: recorded as violating {clause} at plan size {size_after}, but this \
             build's replay of it keeps {clause} (the summary is from another build, or \
             damaged): {}",
            replay_command(spec)
        );
        return Ok(());
    }
    say!(
        "\nshrunk: still violates {clause} at plan size {size_after} (from {size_before}; {runs} runs):\n{}",
        format_failure(spec, &history, &verdict)
    );
    Ok(())
}

pub fn run_scenarios(
    files: &[std::path::PathBuf],
    flaw: Option<Flaw>,
    svg: Option<&Path>,
    force: bool,
    quiet: bool,
) -> Result<bool, String> {
    if let Some(path) = svg
        && files.len() > 1
        && !path.is_dir()
    {
        return Err(format!(
            "--svg {}: with {} scenario files, name an existing folder for their pictures",
            path.display(),
            files.len()
        ));
    }
    let (mut met, mut missed) = (0, 0);
    let (mut refused, mut unwritten) = (Vec::new(), Vec::new());
    for file in files {
        let mut scenario = match Scenario::load(file) {
            Ok(scenario) => scenario,
            Err(error) => {
                // Every file is still run; the refusals decide the status.
                tell!("sim: {error}");
                refused.push(file.display().to_string());
                continue;
            }
        };
        if let (Some(wanted), Some(own)) = (flaw, scenario.run.flaw)
            && wanted != own
        {
            tell!(
                "sim: {}: run.flaw: --flaw {} conflicts with the file's own {}",
                file.display(),
                wanted.name(),
                own.name()
            );
            refused.push(file.display().to_string());
            continue;
        }
        scenario.run.flaw = flaw.or(scenario.run.flaw);
        let history = Sim::new(&scenario.run).run().map_err(|e| e.to_string())?;
        let verdict = check(&history);
        if let Some(path) = svg {
            let target = if path.is_dir() {
                path.join(format!("{}.svg", scenario.name))
            } else {
                path.to_owned()
            };
            // The file is still judged, and the rest still run.
            if let Err(problem) = write_svg(&target, &history, &verdict, force) {
                tell!("sim: {problem}");
                unwritten.push(target.display().to_string());
            }
        }
        if !quiet {
            say!("{}", scenario_report(&scenario, &history, &verdict));
        }
        let judged = match flaw {
            Some(flaw) => scenario.judge_flawed(flaw, &verdict),
            None => scenario.judge(&verdict, &history.timeline()),
        };
        match judged {
            Ok(()) => {
                met += 1;
                say!("{}: as expected", file.display());
            }
            Err(problems) => {
                missed += 1;
                say!("{}: NOT as expected:\n{problems}", file.display());
                // A violation the scenario did not expect is a failure:
                // printed at its smallest too.
                let unexpected = verdict
                    .violations
                    .iter()
                    .find(|v| !scenario.expect.violates.iter().any(|c| c == v.clause));
                if let Some(violation) = unexpected {
                    print_shrunk(&shrink(&scenario.run, violation.clause, SHRINK_RUNS))?;
                }
            }
        }
    }
    if files.len() > 1 {
        say!(
            "{met} as expected, {missed} not, {} refused ({} scenario files)",
            refused.len(),
            files.len()
        );
    }
    let mut problems = Vec::new();
    if !refused.is_empty() {
        problems.push(format!(
            "{} of {} scenario files refused: {}",
            refused.len(),
            files.len(),
            refused.join(", ")
        ));
    }
    if !unwritten.is_empty() {
        problems.push(format!(
            "{} picture(s) not written: {}",
            unwritten.len(),
            unwritten.join(", ")
        ));
    }
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    Ok(missed == 0)
}

/// Writes `spec` as a scenario that expects what the run does now, so a
/// failure found once stays a named regression; `origin` (the command
/// that saves it, `sim replay --save`) goes into the file's comment.
pub fn save_scenario(
    spec: &RunSpec,
    path: &std::path::Path,
    force: bool,
    origin: &str,
) -> Result<(), String> {
    let spec = &in_time_order(spec);
    // `sim scenario` sweeps pick up `*.toml` only, and a scenario's name is
    // its file's: `.toml` alone would name it nothing.
    let name = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|stem| path.extension().is_some_and(|ext| ext == "toml") && !stem.starts_with('.'))
        .ok_or_else(|| format!("--save {}: expected NAME.toml", path.display()))?;
    let history = Sim::new(spec).run().map_err(|error| error.to_string())?;
    let verdict = check(&history);
    let mut violated: Vec<String> = verdict
        .violations
        .iter()
        .map(|v| v.clause.to_owned())
        .collect();
    violated.dedup();
    let Some(first) = verdict.violations.first() else {
        return Err(format!(
            "--save: seed {} keeps every clause; there is no failure to keep",
            spec.seed
        ));
    };
    let scenario = Scenario {
        name: name.to_owned(),
        description: format!(
            "Saved by {origin} from seed {}. First finding: {first}",
            spec.seed
        ),
        clauses: violated.clone(),
        run: spec.clone(),
        expect: Expect {
            violates: violated,
            ..Expect::default()
        },
    };
    let then = match spec.flaw {
        Some(flaw) => format!(
            "The worker is the variant with the flaw {}, on purpose: the harness must\n\
             keep finding this failure.",
            flaw.name()
        ),
        None => "Once the bug is fixed, empty expect.violates so the scenario must pass.".into(),
    };
    let comment = format!("Saved by `{origin}`: it expects what the run did when saved.\n{then}");
    write_checked(path, &scenario.to_toml(&comment), force, |text| {
        Scenario::parse(path, text)
            .map(|_| ())
            .map_err(|error| format!("the saved file would not load back: {error}"))
    })?;
    tell!("saved {}", path.display());
    Ok(())
}

/// The spec as a scenario file must state it: timed events in time order
/// (a swarm draws each kind on its own, so its tokens interleave them).
/// Events without a time keep their places.
fn in_time_order(spec: &RunSpec) -> RunSpec {
    let mut timed: Vec<_> = spec
        .events
        .iter()
        .filter(|e| e.at_ms().is_some())
        .cloned()
        .collect();
    timed.sort_by_key(|event| event.at_ms());
    let mut timed = timed.into_iter();
    let events = spec
        .events
        .iter()
        .map(|event| match event.at_ms() {
            Some(_) => timed.next().expect("as many timed events"),
            None => event.clone(),
        })
        .collect();
    RunSpec {
        events,
        ..spec.clone()
    }
}
