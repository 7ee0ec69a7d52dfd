//! The lanes' backgrounds, and pauses and crashes as shaded spans (where
//! each lane is: `layout.rs`); `calls.rs` draws the believed leases and the call arrows,
//! `markers.rs` stops, term ends and violations, `services.rs` the lease
//! service's and the database's lanes. Every mark's tooltip is its
//! timeline line.

use std::collections::BTreeMap;

use super::canvas::Canvas;
use super::layout::{Layout, REPLICA_LANE, SERVICE_LANE};
use super::scale::Scale;
use super::{calls, markers, services};
use crate::model::{Actor, EventKind, History};

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
        let skew = history.header.skew_ms(n);
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
    calls::beliefs(canvas, history, scale, layout, end_ms);
    calls::calls(canvas, history, scale, layout, end_ms);
    markers::markers(canvas, history, scale, layout);
    services::draw(
        canvas,
        history,
        scale,
        layout.lease(),
        layout.db(),
        SERVICE_LANE,
    );
}

/// Pauses, cuts from the database and crashes, shaded over the whole lane.
fn spans(canvas: &mut Canvas, history: &History, scale: &Scale, layout: &Layout, end_ms: i64) {
    let mut down: BTreeMap<u32, (i64, usize)> = BTreeMap::new();
    for (seq, event) in history.events.iter().enumerate() {
        let Actor::Replica(n) = event.actor else {
            continue;
        };
        let y = layout.replica(n);
        match &event.kind {
            EventKind::Paused { for_ms } | EventKind::Partitioned { for_ms } => {
                let until = event
                    .at_ms
                    .saturating_add(i64::try_from(*for_ms).unwrap_or(i64::MAX));
                let (x0, x1) = (scale.x(event.at_ms), scale.x(until.min(end_ms)));
                let title = history.timeline_line(seq);
                let class = match event.kind {
                    EventKind::Paused { .. } => "pause",
                    _ => "cut",
                };
                canvas.rect((x0, y, x1 - x0, REPLICA_LANE), class, Some(&title));
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
