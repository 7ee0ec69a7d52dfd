//! The lanes and what each event draws in them: in a replica's lane the
//! lease it believes it holds (a bar labelled with its token), each call as
//! an arrow from invoke to reply coloured by outcome, pauses and crashes as
//! shaded spans, stop calls and resolutions as markers, each term's end
//! with how it ended; the service lanes are `services.rs`. Every mark's tooltip is its timeline line.

use std::collections::BTreeMap;

use super::canvas::Canvas;
use super::scale::Scale;
use super::services;
use crate::checker::Verdict;
use crate::model::{Actor, EventKind, FailureKind, History, OpKind, Outcome, TermEndRec};

/// A replica lane's height.
const REPLICA_LANE: f64 = 74.0;
/// The lease service's and the database's lane height.
const SERVICE_LANE: f64 = 56.0;

/// Where each lane is.
pub struct Layout {
    replicas: u32,
    top: f64,
}

impl Layout {
    /// Lanes for `replicas` replicas below `top`.
    pub fn new(replicas: u32, top: f64) -> Self {
        Self { replicas, top }
    }

    /// The top of replica `n`'s lane (from 1).
    pub fn replica(&self, n: u32) -> f64 {
        self.top + f64::from(n.saturating_sub(1)) * REPLICA_LANE
    }

    /// The top of the lease service's lane.
    pub fn lease(&self) -> f64 {
        self.top + f64::from(self.replicas) * REPLICA_LANE
    }

    /// The top of the database's lane.
    pub fn db(&self) -> f64 {
        self.lease() + SERVICE_LANE
    }

    /// Below the last lane.
    pub fn bottom(&self) -> f64 {
        self.db() + SERVICE_LANE
    }

    /// The middle of `actor`'s lane.
    pub fn middle(&self, actor: Actor) -> f64 {
        match actor {
            Actor::Replica(n) => self.replica(n) + REPLICA_LANE / 2.0,
            Actor::Lease => self.lease() + SERVICE_LANE / 2.0,
            Actor::Db | Actor::World => self.db() + SERVICE_LANE / 2.0,
        }
    }
}

/// The row of a call's arrow inside its replica's lane.
fn call_row(op: OpKind) -> f64 {
    match op {
        OpKind::Acquire => 31.0,
        OpKind::Release => 41.0,
        OpKind::Renew => 52.0,
        OpKind::Delete => 64.0,
    }
}

/// The class a call's outcome is drawn in.
pub fn outcome_class(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Lease(None) => "null",
        Outcome::Lease(Some(_)) | Outcome::Done | Outcome::Deleted(_) => "ok",
        Outcome::Failed { kind, detail } => match kind {
            FailureKind::Rejected => "refused",
            FailureKind::Fenced => "fenced",
            FailureKind::Ambiguous if timed_out(detail) => "timedout",
            FailureKind::Ambiguous | FailureKind::Protocol => "ambiguous",
        },
    }
}

/// Whether a failure's detail says the caller stopped waiting (the
/// simulator's "no reply within", the adapters' "no answer ... within").
fn timed_out(detail: &str) -> bool {
    ["no reply within", "no answer", "timed out", "timeout"]
        .iter()
        .any(|words| detail.contains(words))
}

/// The lanes' backgrounds and names (drawn first, under the time axis's
/// grid), with each replica's clock skew when it has one.
pub fn backgrounds(canvas: &mut Canvas, history: &History, scale: &Scale, layout: &Layout) {
    let width = scale.right() + 30.0;
    for n in 1..=history.header.replicas {
        let y = layout.replica(n);
        if n % 2 == 1 {
            canvas.rect((0.0, y, width, REPLICA_LANE), "band", None);
        }
        canvas.text(8.0, y + 16.0, "lane", &format!("r{n}"));
        let skew = history
            .header
            .skews_ms
            .get(n as usize - 1)
            .copied()
            .unwrap_or(0);
        if skew != 0 {
            canvas.text(8.0, y + 30.0, "small", &format!("clock {skew:+} ms"));
        }
    }
    canvas.rect((0.0, layout.lease(), width, SERVICE_LANE), "band", None);
    canvas.text(8.0, layout.lease() + 16.0, "lane", "lease");
    canvas.text(8.0, layout.db() + 16.0, "lane", "database");
}

/// Draws what every event of `history` shows, lane by lane.
pub fn draw(canvas: &mut Canvas, history: &History, scale: &Scale, layout: &Layout) {
    let end_ms = history.events.iter().map(|e| e.at_ms).max().unwrap_or(0);
    spans(canvas, history, scale, layout, end_ms);
    beliefs(canvas, history, scale, layout, end_ms);
    calls(canvas, history, scale, layout, end_ms);
    markers(canvas, history, scale, layout);
    services::draw(
        canvas,
        history,
        scale,
        layout.lease(),
        layout.db(),
        SERVICE_LANE,
    );
}

/// Pauses and crashes, shaded over the whole lane.
fn spans(canvas: &mut Canvas, history: &History, scale: &Scale, layout: &Layout, end_ms: i64) {
    let mut down: BTreeMap<u32, (i64, usize)> = BTreeMap::new();
    for (seq, event) in history.events.iter().enumerate() {
        let Actor::Replica(n) = event.actor else {
            continue;
        };
        let y = layout.replica(n);
        match &event.kind {
            EventKind::Paused { for_ms } => {
                let until = event
                    .at_ms
                    .saturating_add(i64::try_from(*for_ms).unwrap_or(i64::MAX));
                let (x0, x1) = (scale.x(event.at_ms), scale.x(until.min(end_ms)));
                let title = history.timeline_line(seq);
                canvas.rect((x0, y, x1 - x0, REPLICA_LANE), "pause", Some(&title));
            }
            EventKind::Crashed => {
                down.insert(n, (event.at_ms, seq));
            }
            EventKind::Restarted => {
                if let Some((from, at)) = down.remove(&n) {
                    crash(canvas, history, scale, y, (from, event.at_ms), at);
                }
            }
            _ => {}
        }
    }
    for (n, (from, at)) in down {
        crash(
            canvas,
            history,
            scale,
            layout.replica(n),
            (from, end_ms),
            at,
        );
    }
}

fn crash(
    canvas: &mut Canvas,
    history: &History,
    scale: &Scale,
    y: f64,
    (from, to): (i64, i64),
    seq: usize,
) {
    let (x0, x1) = (scale.x(from), scale.x(to));
    let title = history.timeline_line(seq);
    canvas.rect((x0, y, x1 - x0, REPLICA_LANE), "crash", Some(&title));
}

/// The lease each replica believes it holds, from the reply that gave it
/// to the next change of belief (a renewal's reply, the release, the
/// term's end, a crash), labelled with its token.
fn beliefs(canvas: &mut Canvas, history: &History, scale: &Scale, layout: &Layout, end_ms: i64) {
    let mut held: BTreeMap<u32, (i64, u64, usize)> = BTreeMap::new();
    let close =
        |canvas: &mut Canvas, n: u32, to: i64, held: &mut BTreeMap<u32, (i64, u64, usize)>| {
            if let Some((from, token, seq)) = held.remove(&n) {
                let (x0, x1) = (scale.x(from), scale.x(to));
                let y = layout.replica(n) + 8.0;
                let title = format!(
                    "r{n} believes it holds #{token} from {from} to {to} ms\n{}",
                    history.timeline_line(seq)
                );
                canvas.rect((x0, y, x1 - x0, 12.0), "bar", Some(&title));
                if x1 - x0 > 18.0 {
                    canvas.text(x0 + 2.0, y + 9.5, "small", &format!("#{token}"));
                }
            }
        };
    for (seq, event) in history.events.iter().enumerate() {
        let Actor::Replica(n) = event.actor else {
            continue;
        };
        match &event.kind {
            EventKind::Return { op, outcome, .. } => match (op, outcome) {
                (OpKind::Acquire | OpKind::Renew, Outcome::Lease(Some(lease))) => {
                    close(canvas, n, event.at_ms, &mut held);
                    held.insert(n, (event.at_ms, lease.token, seq));
                }
                (OpKind::Renew | OpKind::Release, _) => close(canvas, n, event.at_ms, &mut held),
                _ => {}
            },
            EventKind::TermEnded { .. } | EventKind::Crashed => {
                close(canvas, n, event.at_ms, &mut held)
            }
            _ => {}
        }
    }
    let open: Vec<u32> = held.keys().copied().collect();
    for n in open {
        close(canvas, n, end_ms, &mut held);
    }
}

/// One arrow per call, from its invoke to its reply; a call never answered
/// (its replica crashed, or the run ended) is dotted to where it stopped.
fn calls(canvas: &mut Canvas, history: &History, scale: &Scale, layout: &Layout, end_ms: i64) {
    // call -> (replica, op, invoke time, invoke seq)
    let mut open: BTreeMap<u64, (u32, OpKind, i64, usize)> = BTreeMap::new();
    let arrow = |canvas: &mut Canvas,
                 (n, op, from): (u32, OpKind, i64),
                 to: i64,
                 class: &str,
                 title: &str| {
        let y = layout.replica(n) + call_row(op);
        let (x0, x1) = (scale.x(from), scale.x(to).max(scale.x(from) + 2.0));
        canvas.line(
            (x0, y),
            (x1, y),
            &format!("call {class}"),
            Some(class),
            Some(title),
        );
        (x0, x1, y)
    };
    for (seq, event) in history.events.iter().enumerate() {
        let Actor::Replica(n) = event.actor else {
            continue;
        };
        match &event.kind {
            EventKind::Invoke { call, invocation } => {
                open.insert(*call, (n, invocation.kind(), event.at_ms, seq));
            }
            EventKind::Return { call, outcome, .. } => {
                let Some((n, op, from, invoked)) = open.remove(call) else {
                    continue;
                };
                let title = format!(
                    "{}\n{}",
                    history.timeline_line(invoked),
                    history.timeline_line(seq)
                );
                let (x0, x1, y) = arrow(
                    canvas,
                    (n, op, from),
                    event.at_ms,
                    outcome_class(outcome),
                    &title,
                );
                if let Outcome::Deleted(rows) = outcome
                    && x1 - x0 > 16.0
                {
                    canvas.text(x0 + 2.0, y - 2.5, "small", &rows.to_string());
                }
            }
            EventKind::Crashed => {
                let cut: Vec<u64> = open
                    .iter()
                    .filter(|(_, c)| c.0 == n)
                    .map(|(call, _)| *call)
                    .collect();
                for call in cut {
                    let (n, op, from, invoked) = open.remove(&call).expect("listed");
                    let title = format!(
                        "{}\n(never answered: r{n} crashed)",
                        history.timeline_line(invoked)
                    );
                    arrow(canvas, (n, op, from), event.at_ms, "open", &title);
                }
            }
            _ => {}
        }
    }
    for (_, (n, op, from, invoked)) in open {
        let title = format!(
            "{}\n(no reply before the run ended)",
            history.timeline_line(invoked)
        );
        arrow(canvas, (n, op, from), end_ms, "open", &title);
    }
}

/// Stop calls (down triangles) and their resolutions (up triangles), and
/// each term's end (a tick on the belief row).
fn markers(canvas: &mut Canvas, history: &History, scale: &Scale, layout: &Layout) {
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
            _ => {}
        }
    }
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
