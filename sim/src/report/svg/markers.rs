//! Markers in a replica's lane (stop() called and resolved, counted when
//! callers call at once; each term's end with how it ended; its clock
//! stepped or set to a rate) and each violation's events ringed with its
//! clause.

use std::collections::BTreeMap;

use super::canvas::Canvas;
use super::layout::Layout;
use super::scale::Scale;
use crate::checker::Verdict;
use crate::model::{Actor, EventKind, History, TermEndRec};

/// Stop calls (down triangles) and their resolutions (up triangles), and
/// each term's end (a tick on the belief row).
pub(super) fn markers(canvas: &mut Canvas, history: &History, scale: &Scale, layout: &Layout) {
    let mut last_label_x: BTreeMap<u32, f64> = BTreeMap::new();
    let mut stops_drawn: std::collections::BTreeSet<(u32, bool, i64)> = Default::default();
    for (seq, event) in history.events.iter().enumerate() {
        let Actor::Replica(n) = event.actor else {
            continue;
        };
        let (x, y) = (scale.x(event.at_ms), layout.replica(n));
        let title = history.timeline_line(seq);
        match &event.kind {
            EventKind::StopCalled { .. } | EventKind::StopResolved { .. } => {
                let called = matches!(event.kind, EventKind::StopCalled { .. });
                // Callers at the same instant share one marker, counted.
                let key = (n, called, event.at_ms);
                if !stops_drawn.insert(key) {
                    continue;
                }
                let same: Vec<usize> = (seq..history.events.len())
                    .take_while(|&i| history.events[i].at_ms == event.at_ms)
                    .filter(|&i| {
                        let other = &history.events[i];
                        other.actor == event.actor
                            && matches!(other.kind, EventKind::StopCalled { .. }) == called
                            && matches!(
                                other.kind,
                                EventKind::StopCalled { .. } | EventKind::StopResolved { .. }
                            )
                    })
                    .collect();
                let lines: Vec<String> = same.iter().map(|&i| history.timeline_line(i)).collect();
                let d = if called {
                    format!(
                        "M{},{}l-4,-6h8z",
                        super::canvas::n(x),
                        super::canvas::n(y + 8.0)
                    )
                } else {
                    format!(
                        "M{},{}l-4,6h8z",
                        super::canvas::n(x),
                        super::canvas::n(y + 20.0)
                    )
                };
                canvas.path(&d, "stop", Some(&lines.join("\n")));
                if same.len() > 1 {
                    let at = if called { y + 8.0 } else { y + 27.0 };
                    canvas.text(x + 5.0, at, "small", &format!("x{}", same.len()));
                }
            }
            EventKind::TermEnded { end, .. } => {
                let name = term_end_name(end);
                if !name.is_empty() && x - last_label_x.get(&n).copied().unwrap_or(f64::MIN) > 44.0
                {
                    // Near the right edge the word goes left of its tick.
                    let at = if x + 44.0 > scale.right() + 30.0 {
                        x - 40.0
                    } else {
                        x + 2.0
                    };
                    canvas.text(at, y + 17.0, "small", name);
                    last_label_x.insert(n, x);
                }
                canvas.line((x, y + 6.0), (x, y + 22.0), "mark null", None, Some(&title));
            }
            EventKind::ClockStepped { from_ms, to_ms } => {
                let delta_s = (to_ms - from_ms) as f64 / 1_000.0;
                clock_mark(canvas, (x, y), &format!("{delta_s:+.1} s"), Some(&title));
            }
            EventKind::ClockRateSet { rate_permille, .. } => {
                let rate = *rate_permille as f64 / 1_000.0;
                clock_mark(canvas, (x, y), &format!("{rate:.2}x"), Some(&title));
            }
            _ => {}
        }
    }
}

/// A clock face on the lane, with what happened to the clock beside it.
pub(super) fn clock_mark(
    canvas: &mut Canvas,
    (x, y): (f64, f64),
    label: &str,
    title: Option<&str>,
) {
    canvas.circle((x, y + 14.0), 4.5, "clock", title);
    let hands = format!(
        "M{},{}v-3M{},{}h2.5",
        super::canvas::n(x),
        super::canvas::n(y + 14.0),
        super::canvas::n(x),
        super::canvas::n(y + 14.0)
    );
    canvas.path(&hands, "clock", None);
    canvas.text(x + 6.0, y + 25.0, "clocktext", label);
}

/// How a term ended, in a word (none for a term that never acquired: most
/// replicas' most terms, which would only crowd the lane).
fn term_end_name(end: &TermEndRec) -> &'static str {
    match end {
        TermEndRec::NotAcquired => "",
        TermEndRec::AcquireFailed(_) => "acquire failed",
        TermEndRec::Completed => "completed",
        TermEndRec::Capped => "capped",
        TermEndRec::LeadershipLost(_) => "lost",
        TermEndRec::Stopped => "stopped",
        TermEndRec::DeleteFailed(_) => "delete failed",
    }
}

/// Each violation's events ringed in red, its clause ID beside the first.
pub fn violations(
    canvas: &mut Canvas,
    history: &History,
    verdict: &Verdict,
    scale: &Scale,
    layout: &Layout,
) {
    for violation in &verdict.violations {
        let title = format!("{}: {}", violation.clause, violation.message);
        for (index, &seq) in violation.events.iter().enumerate() {
            let Some(event) = history.events.get(seq) else {
                continue;
            };
            let (x, y) = (scale.x(event.at_ms), layout.middle(event.actor));
            canvas.circle(
                (x, y),
                7.0,
                "violation",
                Some(&format!("{title}\n{}", history.timeline_line(seq))),
            );
            if index == 0 {
                canvas.text(x + 9.0, y - 8.0, "clause", violation.clause);
            }
        }
    }
}
