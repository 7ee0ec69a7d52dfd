//! In a replica's lane: the lease it believes it holds (a bar labelled with
//! its token) and each call as an arrow from invoke to reply, coloured by
//! its outcome, with a delete's rows.

use std::collections::BTreeMap;

use super::canvas::Canvas;
use super::layout::{Layout, call_row, outcome_class};
use super::scale::Scale;
use crate::model::{Actor, EventKind, History, OpKind, Outcome};

/// The lease each replica believes it holds, from the reply that gave it
/// to the next change of belief (a renewal's reply, the release, the
/// term's end, a crash), labelled with its token.
pub(super) fn beliefs(
    canvas: &mut Canvas,
    history: &History,
    scale: &Scale,
    layout: &Layout,
    end_ms: i64,
) {
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
                canvas.label_inside((x0, x1), y + 9.5, 18.0, &format!("#{token}"));
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
pub(super) fn calls(
    canvas: &mut Canvas,
    history: &History,
    scale: &Scale,
    layout: &Layout,
    end_ms: i64,
) {
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
