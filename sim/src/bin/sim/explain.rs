//! `sim explain TOKEN|SCENARIO.toml|HISTORY.jsonl`: the failure's chance curve over the
//! run, where it became inevitable, the events and the world there, and a
//! failing and a passing branch to compare.

use std::path::Path;

use retention_sim::History;
use retention_sim::model::{EventKind, Outcome, RunSpec};
use retention_sim::report::Overlay;
use retention_sim::report::{parse_token, replay_command};
use retention_sim::search::{
    CurvePoint, DrawnCall, ExplainConfig, Explanation, JUMP_MIN_RISE, SEALED_CHANCE, explain,
    world_at,
};
use retention_sim::world::Moment;
use retention_sim::{Scenario, Sim, check};

use crate::args::ExplainArgs;
use crate::commands::{picture_with, write_picture};
use crate::files::preflight;
use crate::output::say;

/// The plan a token, a scenario file or a saved history names, and the
/// saved history itself if that is what `input` was.
fn plan_of(input: &str) -> Result<(RunSpec, Option<History>), String> {
    let trimmed = input.trim_start();
    if trimmed.starts_with('{') {
        return Ok((parse_token(input)?, None));
    }
    let path = Path::new(input);
    if !path.is_file() {
        return Err(format!(
            "{input}: neither a replay token (JSON), a scenario file nor a saved history"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|error| format!("{input}: {error}"))?;
    if !text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with('{')
    {
        return Scenario::load(path)
            .map(|scenario| (scenario.run, None))
            .map_err(|error| error.to_string());
    }
    let saved = History::from_jsonl(&text).map_err(|error| format!("{input}: {error}"))?;
    let Some(token) = &saved.header.plan else {
        return Err(format!(
            "{input}: line 1: the history does not name its plan (no \"plan\" in its \
             header: it was written by an older sim or another tool); explain the \
             replay token or scenario it came from instead"
        ));
    };
    let spec = parse_token(token).map_err(|error| format!("{input}: line 1: plan: {error}"))?;
    Ok((spec, Some(saved)))
}

/// Says where this build's run of the plan parts from the saved history,
/// if it does: the explanation is of the plan as this build runs it.
fn compare_with_saved(spec: &RunSpec, saved: &History, input: &str) -> Result<(), String> {
    let now = Sim::new(spec).run().map_err(|error| error.to_string())?;
    let common = saved.events.len().min(now.events.len());
    let parted = (0..common)
        .find(|&seq| saved.events[seq] != now.events[seq])
        .or((saved.events.len() != now.events.len()).then_some(common));
    if let Some(seq) = parted {
        say!(
            "note: {input} parts from this build's simulated run of its plan at event \
             {seq} (a history recorded against PostgreSQL, or by another build, may); \
             what follows explains the plan as this build simulates it"
        );
    }
    Ok(())
}

pub fn run(args: &ExplainArgs) -> Result<bool, String> {
    for (flag, value, range) in [
        ("--points", args.points, 2..=1_000),
        ("--branches", args.branches, 1..=10_000),
        ("--jobs", args.jobs, 1..=256),
    ] {
        if !range.contains(&value) {
            return Err(format!(
                "{flag}: {value} is not in {}..={}",
                range.start(),
                range.end()
            ));
        }
    }
    preflight(&[], &[("--svg", args.svg.as_deref())], args.force)?;
    let (mut spec, saved) = plan_of(&args.input)?;
    if args.flaw.is_some() {
        spec.flaw = args.flaw;
    }
    if let Some(saved) = &saved
        && args.flaw.is_none()
        && !args.json
    {
        compare_with_saved(&spec, saved, &args.input)?;
    }
    let config = ExplainConfig {
        points: args.points,
        branches: args.branches,
        refine_points: args.refine_points,
        jobs: args.jobs,
        seed: args.seed,
    };
    let Some(explained) = explain(&spec, &config)? else {
        if args.json {
            say!("{{\"fails\":false}}");
        } else {
            say!("the run keeps every clause: there is no failure to explain");
            say!("replay: {}", replay_command(&spec));
        }
        return Ok(true);
    };
    if args.json {
        let text = serde_json::to_string(&explained).map_err(|error| error.to_string())?;
        say!("{{\"fails\":true,\"explanation\":{text}}}");
        return Ok(false);
    }
    print(&spec, &explained)?;
    if let Some(path) = &args.svg {
        let history = Sim::new(&spec).run().map_err(|error| error.to_string())?;
        let overlay = Overlay {
            band: Some(explained.band()),
            instant_ms: None,
        };
        let svg = picture_with(&history, &check(&history), &overlay)
            .map_err(|problem| format!("--svg {}: {problem}", path.display()))?;
        write_picture(path, &svg, args.force)?;
    }
    Ok(false)
}

/// The calls issued in an interval, whose faults were drawn there: each
/// with its reply, where those faults show, and the plan's fault on it.
fn print_drawn_calls(history: &History, calls: &[DrawnCall], interval: &str) {
    if calls.is_empty() {
        return;
    }
    say!("calls issued {interval}, which drew their faults there (they show in the reply):");
    for call in calls {
        say!(" {}", history.timeline_line(call.issued));
        match call.replied {
            Some(seq) => say!("   reply{}", history.timeline_line(seq)),
            None => say!("   no reply before the run ended"),
        }
        if let Some(fault) = &call.planned {
            say!("   the plan's fault on it: {}", fault.describe());
        }
    }
}

/// The last event at or before `seq` that a fault made: a process paused,
/// cut off or crashed, a clock stepped or slowed, the database's clock
/// stepped, its standby stalled, rows held by another client, a lease
/// revoked, or a call the injector refused or whose reply it lost.
fn last_fault_before(history: &History, seq: usize) -> Option<usize> {
    (0..=seq.min(history.events.len() - 1))
        .rev()
        .find(|&at| match &history.events[at].kind {
            EventKind::Paused { .. }
            | EventKind::Partitioned { .. }
            | EventKind::Crashed
            | EventKind::ClockStepped { .. }
            | EventKind::ClockRateSet { .. }
            | EventKind::DbClockStepped { .. }
            | EventKind::StandbyStalled { .. }
            | EventKind::RowsHeld { .. }
            | EventKind::Revoked { .. } => true,
            EventKind::Return {
                outcome: Outcome::Failed { detail, .. },
                ..
            } => detail.contains("injected"),
            _ => false,
        })
}

fn bar(chance: f64) -> String {
    let cells = (chance * 20.0).round() as usize;
    format!("{}{}", "#".repeat(cells), ".".repeat(20 - cells.min(20)))
}

/// Prints `events` (marked `>`) after the few before them, or the one at
/// `otherwise` if there are none; returns the last printed.
fn print_events(history: &History, events: &[usize], otherwise: usize) -> usize {
    let (first, last) = match (events.first(), events.last()) {
        (Some(&first), Some(&last)) => (first, last),
        _ => (otherwise, otherwise),
    };
    let last = last.min(history.events.len() - 1);
    for seq in first.saturating_sub(4)..=last {
        let mark = if events.contains(&seq) { ">" } else { " " };
        say!("{mark}{}", history.timeline_line(seq));
    }
    last
}

fn print(spec: &RunSpec, explained: &Explanation) -> Result<(), String> {
    let history = Sim::new(spec).run().map_err(|error| error.to_string())?;
    let (from, to) = explained.jump;
    say!(
        "explain: {} ({}; events {:?})",
        explained.clause,
        explained.violation,
        explained.violation_events
    );
    // The violation's own events, where the review's cause often shows
    // (a second renewal started while one is pending) once it is certain.
    for &seq in &explained.violation_events {
        say!("!{}", history.timeline_line(seq));
    }
    say!(
        "\nthe chance that a fresh future from each instant violates {} ({} branches each, {} runs):",
        explained.clause,
        from.branches,
        explained.runs
    );
    say!("  {:>8} {:>6} {:>7}", "at_ms", "event", "chance");
    for point in &explained.curve {
        let marked = point.at_ms == from.at_ms || point.at_ms == to.at_ms;
        say!(
            "  {:>8} {:>6} {:>7.2}  {}{}",
            point.at_ms,
            point.seq,
            point.chance(),
            bar(point.chance()),
            if marked { "  <" } else { "" }
        );
    }
    if !explained.jump_is_clear() {
        let first = explained.curve.first().map_or(0.0, CurvePoint::chance);
        say!(
            "\nno instant stands out (no rise of {JUMP_MIN_RISE} or more): {first:.2} of fresh futures \
             from the start fail already; the failure needs nothing this run's timing or faults \
             did; its own events are the ones marked ! above."
        );
        say!("the run itself: {}", replay_command(spec));
        return Ok(());
    }
    say!(
        "\nthe chance jumps between {} ms and {} ms, from {:.2} to {:.2}: the failure became inevitable there.",
        from.at_ms,
        to.at_ms,
        from.chance(),
        to.chance()
    );
    match explained.sealed {
        Some((sealed_from, sealed_to)) if sealed_from.at_ms == sealed_to.at_ms => say!(
            "(the chance is {SEALED_CHANCE} or more from {} ms on: the failure needs little of this run)",
            sealed_from.at_ms
        ),
        Some((sealed_from, sealed_to)) => say!(
            "(it rose to {SEALED_CHANCE} or more for good between {} ms and {} ms, from {:.2} to {:.2})",
            sealed_from.at_ms,
            sealed_to.at_ms,
            sealed_from.chance(),
            sealed_to.chance()
        ),
        None => {}
    }
    say!("the events there (>), after what came just before:");
    let last = print_events(&history, &explained.jump_events, to.seq);
    print_drawn_calls(&history, &explained.jump_calls, "from the jump's start");
    // The jump is where the failure became likely; where it became all
    // but certain may be a later event, and the cause a reader looks for.
    if let Some((sealed_from, sealed_to)) = explained.sealed
        && sealed_from.seq < sealed_to.seq
    {
        say!(
            "the events where it rose to {SEALED_CHANCE} or more ({} ms to {} ms):",
            sealed_from.at_ms,
            sealed_to.at_ms
        );
        let sealed: Vec<usize> = (sealed_from.seq + 1..=sealed_to.seq).collect();
        print_events(&history, &sealed, sealed_to.seq);
        print_drawn_calls(&history, &explained.sealed_calls, "from the rise's start");
    }
    match last_fault_before(&history, last) {
        Some(seq) => say!(
            "the last fault to strike by then:\n {}",
            history.timeline_line(seq)
        ),
        None => {
            let drawn = explained.jump_calls.iter().chain(&explained.sealed_calls);
            let other = if drawn.into_iter().any(|call| call.planned.is_some()) {
                " other"
            } else {
                ""
            };
            say!("no{other} fault had struck by then (a fault on a call shows only in its reply)")
        }
    }
    let world = world_at(spec, Moment::AfterEvent(last))?;
    say!("\n{world}");
    let failed = format!("a branch from there that violated {}", explained.clause);
    for (words, branch) in [
        (failed.as_str(), &explained.failing_branch),
        (
            "a branch from there that did not",
            &explained.passing_branch,
        ),
    ] {
        if let Some(branch) = branch {
            say!("{words}: {}", replay_command(branch));
        }
    }
    say!("the run itself: {}", replay_command(spec));
    Ok(())
}
