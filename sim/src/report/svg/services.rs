//! The lease service's lane (grants with their tokens, each lease's life to
//! its expiry, refusals, revocations, releases, statements waiting for the
//! lease row's lock) and the database's (each committed delete as a bar
//! from its fence to its commit with its rows and token, each rolled-back
//! one as a hollow bar, stale fences with the token they refused, another
//! client's row locks, the server's aborts).

use std::collections::BTreeMap;

use super::canvas::{Canvas, n};
use super::scale::Scale;
use crate::model::{Actor, EventKind, History};

/// Draws both service lanes; `lease_y` and `db_y` are their tops.
pub fn draw(
    canvas: &mut Canvas,
    history: &History,
    scale: &Scale,
    lease_y: f64,
    db_y: f64,
    height: f64,
) {
    let end_ms = history.events.iter().map(|e| e.at_ms).max().unwrap_or(0);
    lease_lives(canvas, history, scale, lease_y, end_ms);
    let invoked_at: BTreeMap<u64, i64> = history
        .events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::Invoke { call, .. } => Some((*call, event.at_ms)),
            _ => None,
        })
        .collect();
    // A lease statement's wait, from `waits` to its outcome.
    let mut waiting: BTreeMap<u64, (i64, usize)> = BTreeMap::new();
    let mut last_label_x = f64::MIN;
    for (seq, event) in history.events.iter().enumerate() {
        let title = history.timeline_line(seq);
        let x = scale.x(event.at_ms);
        let y = match event.actor {
            Actor::Lease => lease_y,
            Actor::Db => db_y,
            _ => continue,
        };
        let settled =
            |waiting: &mut BTreeMap<u64, (i64, usize)>, canvas: &mut Canvas, call: u64| {
                if let Some((from, at)) = waiting.remove(&call) {
                    let wait_title = format!("{}\n{}", history.timeline_line(at), title);
                    canvas.line(
                        (scale.x(from), lease_y + 35.0),
                        (x, lease_y + 35.0),
                        "wait",
                        None,
                        Some(&wait_title),
                    );
                }
            };
        match &event.kind {
            EventKind::Granted { call, lease } => {
                settled(&mut waiting, canvas, *call);
                canvas.circle((x, y + 22.0), 3.5, "ok", Some(&title));
                if x - last_label_x > 16.0 {
                    canvas.text(x - 5.0, y + 15.0, "small", &format!("#{}", lease.token));
                    last_label_x = x;
                }
            }
            EventKind::Refused { call, .. } => {
                settled(&mut waiting, canvas, *call);
                cross(canvas, (x, y + 22.0), "refused", &title);
            }
            EventKind::Revoked { call, .. } => {
                settled(&mut waiting, canvas, *call);
                let d = format!("M{},{}l4,4l-4,4l-4,-4z", n(x), n(y + 18.0));
                canvas.path(&d, "ambiguous", Some(&title));
            }
            EventKind::Released { call, cleared, .. } => {
                settled(&mut waiting, canvas, *call);
                let class = if *cleared { "ok" } else { "null" };
                canvas.rect((x - 3.0, y + 26.0, 6.0, 6.0), class, Some(&title));
            }
            EventKind::LockWait { call, .. } => {
                waiting.insert(*call, (event.at_ms, seq));
            }
            EventKind::Aborted { call, .. } => {
                settled(&mut waiting, canvas, *call);
                cross(canvas, (x, y + 35.0), "ambiguous", &title);
            }
            EventKind::Deleted {
                fenced_at_ms,
                rows,
                token,
                ..
            } => {
                let x0 = scale.x(*fenced_at_ms);
                canvas.rect((x0, y + 26.0, x - x0, 12.0), "commit", Some(&title));
                let label = if x - x0 > 34.0 {
                    format!("{} #{token}", rows.len())
                } else {
                    rows.len().to_string()
                };
                canvas.label_inside((x0, x), y + 35.5, 16.0, &label);
            }
            EventKind::Fenced { token, .. } => {
                cross(canvas, (x, y + 32.0), "fenced", &title);
                canvas.text(x + 5.0, y + 24.0, "small stale", &format!("#{token} stale"));
            }
            EventKind::RolledBack { call, rows } => {
                // The transaction from its call's invoke (its BEGIN left
                // then) to the rollback: work that never committed.
                if let Some(&from) = invoked_at.get(call) {
                    let x0 = scale.x(from);
                    canvas.rect((x0, y + 40.0, x - x0, 10.0), "uncommitted", Some(&title));
                    let label = format!("rolled back, {rows} rows kept");
                    canvas.label_inside((x0, x), y + 48.0, 60.0, &label);
                }
                cross(canvas, (x, y + 45.0), "refused", &title);
            }
            EventKind::RowsHeld { for_ms, .. } => {
                let until = event
                    .at_ms
                    .saturating_add(i64::try_from(*for_ms).unwrap_or(i64::MAX));
                let x1 = scale.x(until.min(end_ms));
                canvas.rect((x, y + 4.0, x1 - x, height - 8.0), "held", Some(&title));
            }
            _ => {}
        }
    }
    for (_, (from, at)) in waiting {
        let title = format!(
            "{}\n(still waiting when the run ended)",
            history.timeline_line(at)
        );
        canvas.line(
            (scale.x(from), lease_y + 35.0),
            (scale.x(end_ms), lease_y + 35.0),
            "wait",
            None,
            Some(&title),
        );
    }
}

/// An x mark centred at (x, y).
fn cross(canvas: &mut Canvas, (x, y): (f64, f64), class: &str, title: &str) {
    let d = format!("M{},{}l6,6m0,-6l-6,6", n(x - 3.0), n(y - 3.0));
    canvas.path(&d, &format!("mark {class}"), Some(title));
}

/// Each granted lease's life on the lease service's clock: from its grant
/// to its expiry, or to the grant, release or revocation that replaced it
/// sooner; labelled with its token and holder. Where a bar stops short of
/// the next grant, the lease expired with nobody holding it.
fn lease_lives(canvas: &mut Canvas, history: &History, scale: &Scale, lease_y: f64, end_ms: i64) {
    let mut live: Option<(i64, i64, String, u64, usize)> = None;
    let draw = |canvas: &mut Canvas,
                (from, expires, owner, token, seq): (i64, i64, String, u64, usize),
                cut: i64| {
        let to = expires.min(cut).min(end_ms).max(from);
        let (x0, x1) = (scale.x(from), scale.x(to));
        let how = if expires <= cut {
            "expires"
        } else {
            "replaced"
        };
        let title = format!(
            "#{token} held by {owner} from {from} ms, {how} at {} ms\n{}",
            expires.min(cut),
            history.timeline_line(seq)
        );
        canvas.rect((x0, lease_y + 40.0, x1 - x0, 6.0), "life", Some(&title));
        let label = format!("#{token} {owner}");
        canvas.label_inside((x0, x1), lease_y + 54.0, 40.0, &label);
    };
    for (seq, event) in history.events.iter().enumerate() {
        if event.actor != Actor::Lease {
            continue;
        }
        match &event.kind {
            EventKind::Granted { lease, .. } => {
                if let Some(previous) = live.take() {
                    draw(canvas, previous, event.at_ms);
                }
                live = Some((
                    event.at_ms,
                    lease.expires_at_ms,
                    lease.owner.clone(),
                    lease.token,
                    seq,
                ));
            }
            EventKind::Released { cleared: true, .. } | EventKind::Revoked { .. } => {
                if let Some(previous) = live.take() {
                    draw(canvas, previous, event.at_ms);
                }
            }
            _ => {}
        }
    }
    if let Some(last) = live {
        draw(canvas, last, i64::MAX);
    }
}
