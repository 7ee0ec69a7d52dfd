//! `sim explore --report DIR`: one self-contained HTML page (no network, no
//! scripts, no fonts to fetch) with the sweep's summary, its coverage table
//! and, for the first failure at its smallest, the replay command, the
//! swimlane picture inline and the timeline excerpt; the picture also
//! stands alone beside it as `first-failure.svg`.

use std::fmt::Write as _;
use std::path::Path;

use retention_sim::checker::PROBES;
use retention_sim::report::{Overlay, replay_command};
use retention_sim::search::{ExplainConfig, ExploreSummary, Shrunk, explain};
use retention_sim::{Sim, check, format_failure};

use crate::commands::{picture_with, write_picture};
use crate::files::write_checked;

const STYLE: &str = "body{font-family:DejaVu Sans,Arial,Helvetica,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}\
td.n{text-align:right}tr.never td{color:#d01010;font-weight:bold}\
pre{background:#f6f6f6;padding:8px;overflow-x:auto}.picture{overflow-x:auto;border:1px solid #ccc}";

/// Writes `dir/index.html` (and `dir/first-failure.svg` when a run failed)
/// for the sweep `command` described, refusing to replace either unless
/// `force`.
pub fn write_report(
    dir: &Path,
    command: &str,
    summary: &ExploreSummary,
    shrunk: Option<&Shrunk>,
    force: bool,
) -> Result<(), String> {
    match std::fs::symlink_metadata(dir) {
        Ok(found) if found.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "--report {}: is not a folder (a file or a link); not replaced",
                dir.display()
            ));
        }
        // Made only inside a folder that exists, as every output is.
        Err(_) => std::fs::create_dir(dir).map_err(|error| {
            format!(
                "--report {}: cannot make the folder: {error}",
                dir.display()
            )
        })?,
    }
    let mut page = String::new();
    let title = format!(
        "sim explore: {} runs, {} failed, {} violations",
        summary.runs, summary.failed_runs, summary.violations
    );
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>{}</title>\
         <style>{STYLE}</style></head>\n<body>\n<h1>{}</h1>\n<p>The sweep: <code>{}</code></p>\n",
        escape(&title),
        escape(&title),
        escape(command)
    );
    let _ = writeln!(
        page,
        "<p>{:.0} runs/s, simulated/wall time {:.0}x (these two depend on the machine).</p>",
        summary.runs_per_sec(),
        summary.sim_to_wall_ratio()
    );
    page.push_str("<h2>Violations by clause</h2>\n");
    if summary.violations_by_clause.is_empty() {
        page.push_str("<p>None: every run kept every clause.</p>\n");
    } else {
        page.push_str("<table><tr><th>clause</th><th>violations</th></tr>\n");
        for (clause, count) in &summary.violations_by_clause {
            let _ = writeln!(
                page,
                "<tr><td>{}</td><td class=\"n\">{count}</td></tr>",
                escape(clause)
            );
        }
        page.push_str("</table>\n");
    }
    let missed = summary
        .coverage
        .values()
        .filter(|&&count| count == 0)
        .count();
    let _ = writeln!(
        page,
        "<h2>Coverage</h2>\n<p>{} of {} probes reached; a probe never reached is in red.</p>\n\
         <table><tr><th>probe</th><th>runs' hits</th><th>what it counts</th></tr>",
        summary.coverage.len() - missed,
        summary.coverage.len()
    );
    for (probe, what) in PROBES {
        let count = summary.coverage.get(probe).copied().unwrap_or(0);
        let class = if count == 0 { " class=\"never\"" } else { "" };
        let _ = writeln!(
            page,
            "<tr{class}><td>{probe}</td><td class=\"n\">{count}</td><td>{}</td></tr>",
            escape(what)
        );
    }
    page.push_str("</table>\n");
    let drawn = match shrunk {
        None if summary.failed_runs > 0 => {
            let _ = writeln!(
                page,
                "<h2 id=\"first-failure\">First failure</h2>\n<p>{} runs failed; the sweep was \
                 interrupted before the first was shrunk: <code>{}</code></p>",
                summary.failed_runs,
                escape(
                    summary
                        .first_failure
                        .as_ref()
                        .map_or("", |(_, command)| command)
                )
            );
            None
        }
        None => {
            page.push_str("<h2 id=\"first-failure\">First failure</h2>\n<p>No run failed.</p>\n");
            None
        }
        Some(shrunk) => Some(failure_section(&mut page, summary, shrunk)?),
    };
    page.push_str("</body>\n</html>\n");
    let picture = dir.join("first-failure.svg");
    match &drawn {
        Some(svg) => write_picture(&picture, svg, force)?,
        // An older report's picture would sit beside "No run failed.";
        // it is only there to be replaced when `force` allowed that.
        None if force && picture.is_file() => std::fs::remove_file(&picture)
            .map_err(|error| format!("--report {}: {error}", picture.display()))?,
        None => {}
    }
    write_checked(&dir.join("index.html"), &page, force, |_| Ok(()))
}

/// The first failure, shrunk: its command, picture and excerpt; returns the
/// picture.
fn failure_section(
    page: &mut String,
    summary: &ExploreSummary,
    shrunk: &Shrunk,
) -> Result<String, String> {
    let history = Sim::new(&shrunk.spec).run().map_err(|e| e.to_string())?;
    let verdict = check(&history);
    // Lighter than `sim explain`'s defaults: a report is made at the end of
    // every sweep that asks for one.
    let config = ExplainConfig {
        points: 16,
        branches: 40,
        jobs: 2,
        ..ExplainConfig::default()
    };
    let explained = explain(&shrunk.spec, &config)?;
    let overlay = Overlay {
        band: explained.as_ref().map(|explained| explained.band()),
        instant_ms: None,
    };
    let svg = picture_with(&history, &verdict, &overlay)
        .map_err(|problem| format!("--report: the first failure, shrunk: {problem}"))?;
    let _ = write!(
        page,
        "<h2 id=\"first-failure\">First failure</h2>\n<p>Shrunk from plan size {} to {} in {} runs; \
         it still violates {}.</p>\n<p>Replay it:</p>\n<pre>{}</pre>\n",
        shrunk.size_before,
        shrunk.size_after,
        shrunk.runs,
        escape(shrunk.clause),
        escape(&replay_command(&shrunk.spec))
    );
    if let Some((_, drawn)) = &summary.first_failure {
        let _ = writeln!(
            page,
            "<p>As drawn, before shrinking:</p>\n<pre>{}</pre>",
            escape(drawn)
        );
    }
    if let Some(explained) = explained.as_ref().filter(|e| e.jump_is_clear()) {
        let (from, to) = explained.jump;
        let events: Vec<String> = (explained.jump_events.iter())
            .map(|&seq| history.timeline_line(seq))
            .collect();
        let _ = writeln!(
            page,
            "<p>When it became inevitable (<code>sim explain</code>, {} branches at each of {}              instants; the band under the picture): a fresh future from {} ms violates {}              {:.0} % of the time, from {} ms {:.0} %. The events between:</p>\n<pre>{}</pre>",
            from.branches,
            explained.curve.len(),
            from.at_ms,
            escape(explained.clause),
            from.chance() * 100.0,
            to.at_ms,
            to.chance() * 100.0,
            escape(&events.join("\n"))
        );
    }
    let _ = write!(
        page,
        "<p><a href=\"first-failure.svg\">The picture alone</a> (hover a mark for its timeline \
         line) and <a href=\"#timeline\">the timeline excerpt</a>.</p>\n<div class=\"picture\">\n{}</div>\n\
         <h3 id=\"timeline\">Timeline excerpt</h3>\n<pre>{}</pre>\n",
        svg,
        escape(&format_failure(&shrunk.spec, &history, &verdict))
    );
    Ok(svg)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
