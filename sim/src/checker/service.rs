//! System-level checks on what the services applied: FEN-2, REL-2, token
//! order, and data safety (DATA-1..4), plus LIVE-1.

use std::collections::BTreeMap;

use super::clocks::HostClock;
use super::findings::Findings;
use crate::model::{Actor, EventKind, History, LeaseRec, Outcome, RowRec};

pub(super) fn check(history: &History, found: &mut Findings) {
    let mut holder: Option<(LeaseRec, usize)> = None;
    // Every change of the lease row: (when, event, the holder after it).
    let mut changes: Vec<(i64, usize, Option<LeaseRec>)> = Vec::new();
    let mut last_grant: Option<(u64, usize)> = None;
    // Row ids are small and dense (the table numbers them from 1), so the
    // event that first deleted each row sits in a vector indexed by id.
    // Row ids are dense from 0 in a real run; a hand-edited history may name
    // any id, so ids far past the dense range go to a map instead of sizing
    // the vector by them.
    let dense_rows = usize::try_from(history.header.initial_rows)
        .unwrap_or(usize::MAX)
        .saturating_add(1 << 20);
    let mut deleted_by_row: Vec<Option<usize>> = Vec::new();
    let mut deleted_sparse: BTreeMap<u64, usize> = BTreeMap::new();
    let mut applied_by_call: BTreeMap<u64, (usize, u64)> = BTreeMap::new();
    let mut total_deleted = 0u64;
    // The database's clock so far: events carry the run's time, leases and
    // rows the database's.
    let mut db_clock = HostClock::new(0);

    for (seq, event) in history.events.iter().enumerate() {
        if event.actor == Actor::Db {
            db_clock.observe(event.at_ms, &event.kind);
        }
        match &event.kind {
            EventKind::Granted { lease, .. } => {
                if let Some((token, at)) = last_grant
                    && lease.token <= token
                {
                    let message = format!("token {} granted after token {token}", lease.token);
                    found.flag("REN-2", &[at, seq], message);
                }
                last_grant = Some((lease.token, seq));
                holder = Some((lease.clone(), seq));
                changes.push((event.at_ms, seq, Some(lease.clone())));
            }
            EventKind::Revoked { .. } => {
                holder = None;
                changes.push((event.at_ms, seq, None));
            }
            EventKind::Released {
                lease,
                cleared: true,
                ..
            } => {
                match &holder {
                    Some((current, at)) if current == lease => {
                        let _ = at;
                    }
                    other => {
                        let at: Vec<usize> = other.iter().map(|(_, at)| *at).chain([seq]).collect();
                        let message = format!(
                            "release of {}#{} cleared a lease it did not name",
                            lease.owner, lease.token
                        );
                        found.flag("REL-2", &at, message);
                    }
                }
                holder = None;
                changes.push((event.at_ms, seq, None));
            }
            EventKind::Deleted {
                call,
                token,
                fenced_at_ms,
                older_than_ms,
                rows,
                deleted_clock_ms,
                fenced_clock_ms,
            } => {
                let fence_clock_ms =
                    fenced_clock_ms.unwrap_or_else(|| db_clock.reading_at(*fenced_at_ms));
                let fence = (*token, *fenced_at_ms, fence_clock_ms);
                fence_held(&changes, fence, seq, found);
                // By the clock the DELETE read, as `now()` in a plain
                // `DELETE ... WHERE created_at < now() - retention` would.
                let deleted_at_ms =
                    deleted_clock_ms.unwrap_or_else(|| db_clock.reading_at(event.at_ms));
                retained(rows, deleted_at_ms, history.header.retention_ms, seq, found);
                for row in rows {
                    if row.created_at_ms >= *older_than_ms {
                        let message = format!(
                            "row {} written at {} deleted under cutoff {older_than_ms}",
                            row.id, row.created_at_ms
                        );
                        found.flag("DATA-1", &[seq], message);
                    }
                    let before = match usize::try_from(row.id) {
                        Ok(index) if index < dense_rows => {
                            if index >= deleted_by_row.len() {
                                deleted_by_row.resize(index + 1, None);
                            }
                            deleted_by_row[index].replace(seq)
                        }
                        _ => deleted_sparse.insert(row.id, seq),
                    };
                    if let Some(first) = before {
                        found.flag(
                            "DATA-2",
                            &[first, seq],
                            format!("row {} deleted twice", row.id),
                        );
                    }
                }
                total_deleted += rows.len() as u64;
                applied_by_call.insert(*call, (seq, rows.len() as u64));
            }
            EventKind::Return {
                call,
                outcome: Outcome::Deleted(count),
                ..
            } => match applied_by_call.get(call) {
                Some((at, applied)) if applied != count => {
                    let message = format!(
                        "call {call} reported {count} rows but the database deleted {applied}"
                    );
                    found.flag("DATA-3", &[*at, seq], message);
                }
                None => found.flag(
                    "DATA-3",
                    &[seq],
                    format!("call {call} reported {count} rows the database never deleted"),
                ),
                Some(_) => {}
            },
            EventKind::Final {
                rows_left,
                rows_inserted,
                stale_rows_left,
                ..
            } => {
                let expected =
                    (history.header.initial_rows + rows_inserted).checked_sub(total_deleted);
                if expected != Some(*rows_left) {
                    let message = format!(
                        "{} initial + {rows_inserted} written - {total_deleted} deleted != {rows_left} left",
                        history.header.initial_rows
                    );
                    found.flag("DATA-3", &[seq], message);
                }
                if history.header.drain_owed && *stale_rows_left > 0 {
                    let message =
                        format!("{stale_rows_left} stale rows left after a fault-free run");
                    found.flag("LIVE-1", &[seq], message);
                }
            }
            _ => {}
        }
    }
}

/// FEN-2 for a committed delete (event `seq`): when its fence was taken
/// (`fenced_at_ms` on the run's time, `fence_clock_ms` on the database's
/// clock) the lease was `token`'s and unexpired by that clock, and nothing
/// changed the lease row between the fence and the commit (the fence's
/// share lock forbids it).
fn fence_held(
    changes: &[(i64, usize, Option<LeaseRec>)],
    (token, fenced_at_ms, fence_clock_ms): (u64, i64, i64),
    seq: usize,
    found: &mut Findings,
) {
    // Changes are in time order: those after the fence are at the end.
    let after = changes
        .iter()
        .rev()
        .take_while(|(at_ms, ..)| *at_ms > fenced_at_ms);
    if let Some((at_ms, changed, _)) = after.last() {
        let message = format!(
            "the lease row changed at {at_ms} ms, between the delete's fence at \
             {fenced_at_ms} ms and its commit"
        );
        found.flag("FEN-2", &[*changed, seq], message);
    }
    let before = changes
        .iter()
        .rev()
        .find(|(at_ms, ..)| *at_ms <= fenced_at_ms);
    match before {
        Some((_, at, Some(current)))
            if current.token != token || fence_clock_ms >= current.expires_at_ms =>
        {
            let message = format!(
                "delete with token {token} fenced at {fenced_at_ms} ms while the lease was \
                 {}#{} expiring at {}",
                current.owner, current.token, current.expires_at_ms
            );
            found.flag("FEN-2", &[*at, seq], message);
        }
        Some((_, _, Some(_))) => {}
        Some((_, at, None)) => found.flag(
            "FEN-2",
            &[*at, seq],
            format!("delete with token {token} fenced at {fenced_at_ms} ms with no lease held"),
        ),
        None => found.flag(
            "FEN-2",
            &[seq],
            format!("delete with token {token} fenced at {fenced_at_ms} ms with no lease held"),
        ),
    }
}

/// DATA-4: when its `DELETE` ran (`deleted_at_ms`, the database's clock,
/// which also stamps every row), each deleted row was at least `retention_ms`
/// old. DATA-1 judges rows against the cutoff the worker chose; this judges
/// the cutoff, whatever clock the worker took it from. One finding per
/// delete, naming the youngest row.
fn retained(
    rows: &[RowRec],
    deleted_at_ms: i64,
    retention_ms: u64,
    seq: usize,
    found: &mut Findings,
) {
    let retention_ms = i64::try_from(retention_ms).unwrap_or(i64::MAX);
    let young = rows
        .iter()
        .filter(|row| deleted_at_ms.saturating_sub(row.created_at_ms) < retention_ms);
    let (count, youngest) = young.fold((0, None::<&RowRec>), |(count, youngest), row| {
        let younger = youngest.is_none_or(|y| row.created_at_ms > y.created_at_ms);
        (count + 1, if younger { Some(row) } else { youngest })
    });
    if let Some(row) = youngest {
        let message = format!(
            "{count} rows deleted at {deleted_at_ms} ms before their {retention_ms} ms retention \
             by the database's clock; the youngest, row {}, was written at {} ms ({} ms old)",
            row.id,
            row.created_at_ms,
            deleted_at_ms - row.created_at_ms
        );
        found.flag("DATA-4", &[seq], message);
    }
}
