//! `sim check`: a recorded history read bounded, validated, judged and
//! printed (ten violations a clause unless `--all`), with `--partial` for
//! one cut off before its end.

use std::path::Path;

use retention_sim::check;
use retention_sim::model::History;
use retention_sim::report::{HISTORY_LIMIT_BYTES, excerpt, read_text, read_text_cut_short};

use crate::commands::write_svg;
use crate::output::say;

/// Whether `error` is a JSON syntax error on the last non-blank line of
/// `text` that ends before its object does (a write cut short).
fn cut_last_line(text: &str, error: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let last = lines
        .iter()
        .rposition(|line| !line.trim().is_empty())
        .map_or(0, |at| at + 1);
    error.starts_with(&format!("line {last}, column ")) && error.contains("EOF while parsing")
}

/// Clauses judged only at a run's end: a history cut off before it cannot
/// show them kept.
const NEED_THE_END: &[&str] = &["LIVE-1", "LIVE-2", "REL-3"];

/// Violations printed per clause unless `--all`: a history full of them
/// would otherwise print without end.
const SHOWN_PER_CLAUSE: usize = 10;

pub fn check_file(
    path: &std::path::Path,
    timeline: bool,
    partial: bool,
    all: bool,
    svg: Option<&Path>,
    force: bool,
) -> Result<bool, String> {
    let read = if partial {
        read_text_cut_short
    } else {
        read_text
    };
    let text = read(path, HISTORY_LIMIT_BYTES).map_err(|error| match error.line {
        Some(line) => format!("{}: line {line}: {}", path.display(), error.problem),
        None => format!("{}: {}", path.display(), error.problem),
    })?;
    let history = match History::from_jsonl(&text) {
        Ok(history) => history,
        // A recorder killed mid-write leaves its last line cut: with
        // --partial that line is dropped, and said so.
        Err(error) if partial && cut_last_line(&text, &error) => {
            let kept = text.trim_end_matches('\n');
            let kept = &kept[..kept.rfind('\n').map_or(0, |at| at + 1)];
            say!("partial history: its last line is cut off; judged without it");
            History::from_jsonl(kept).map_err(|e| format!("{}: {e}", path.display()))?
        }
        Err(error) => return Err(format!("{}: {error}", path.display())),
    };
    if history.events.is_empty() {
        return Err(format!(
            "{}: a header and no events: nothing to judge",
            path.display()
        ));
    }
    let complete = history.is_complete();
    if !complete && !partial {
        return Err(format!(
            "{}: incomplete: the history has no final event (cut off?); pass --partial \
             to judge it without {}",
            path.display(),
            NEED_THE_END.join(", ")
        ));
    }
    let mut verdict = check(&history);
    if !complete {
        verdict
            .violations
            .retain(|v| !NEED_THE_END.contains(&v.clause));
        say!(
            "partial history: {} not judged (they need the run's end)",
            NEED_THE_END.join(", ")
        );
    }
    // Printed whatever becomes of the picture; a refusal comes last.
    let unwritten = svg.and_then(|path| write_svg(path, &history, &verdict, force).err());
    if timeline {
        say!("{}", history.timeline());
    }
    say!(
        "verdict for {} (seed {}, {} events):\n{}",
        path.display(),
        verdict.seed,
        history.events.len(),
        verdict.summary()
    );
    let mut shown: std::collections::BTreeMap<&str, usize> = Default::default();
    for violation in &verdict.violations {
        let count = shown.entry(violation.clause).or_default();
        *count += 1;
        if all || *count <= SHOWN_PER_CLAUSE {
            say!("{violation}\n{}", excerpt(&history, &violation.events));
        }
    }
    for (clause, count) in shown {
        if !all && count > SHOWN_PER_CLAUSE {
            say!(
                "... and {} more {clause} violations (--all prints every one)",
                count - SHOWN_PER_CLAUSE
            );
        }
    }
    say!("{} violations", verdict.violations.len());
    match unwritten {
        Some(problem) => Err(problem),
        None => Ok(verdict.passed()),
    }
}
