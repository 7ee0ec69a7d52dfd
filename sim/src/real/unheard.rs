//! Effects the database committed that no reply told the harness of: an
//! adapter whose timer fired (or whose connection broke) after its `COMMIT`
//! left reports the call ambiguous, yet the rows are gone or the lease
//! changed. The audits (`db_clock.rs`) hold every committed effect; each
//! one no recorded event accounts for is recorded as the event its reply
//! would have left, so that the history holds all the database did, as the
//! simulator's does.

use std::collections::BTreeSet;

use retention_worker::pg::Pool;

use super::log::RealRecorder;
use crate::model::{Actor, Event, EventKind, Invocation, LeaseRec, OpKind, RowRec};

/// One transaction's deletes, as the audit kept them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditedDelete {
    /// The session's `application_name` (`rN` for replica N).
    pub client: String,
    /// The transaction's first clock reading (its fence's): the database's
    /// clock and true time, in µs since the Unix epoch.
    pub first_us: (i64, i64),
    /// The rows, as (id, `created_at_ms` on the database's clock).
    pub rows: Vec<(u64, i64)>,
    /// The latest deletion's reading: database clock and true time, µs.
    pub deleted_us: (i64, i64),
}

/// One change of the lease row, as the audit kept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditedLeaseChange {
    /// The session's `application_name`.
    pub client: String,
    /// The transaction's first clock reading (its statement's), µs.
    pub first_us: (i64, i64),
    /// The holder after the change: none after a release or revocation.
    pub owner: Option<String>,
    /// The token after the change.
    pub token: u64,
    /// The expiry after the change, ms on the database's clock.
    pub expires_at_ms: i64,
    /// When the row changed, by true time, µs.
    pub changed_true_us: i64,
}

/// Records in `log` every effect the audits hold that its events do not
/// account for; returns how many it recorded. Call it once every call has
/// ended and every backend of the workers is idle.
pub async fn record_unheard(pool: &Pool, log: &RealRecorder) -> usize {
    let (deletes, changes) = read_audits(pool).await;
    let found = unheard_events(&log.events(), &deletes, &changes, log.epoch_ms);
    let count = found.len();
    for (at_us, event) in found {
        log.record_at(at_us, event.actor, event.term, event.kind);
    }
    count
}

async fn read_audits(pool: &Pool) -> (Vec<AuditedDelete>, Vec<AuditedLeaseChange>) {
    let client = pool.get().await.expect("a connection");
    let first = |row: &tokio_postgres::Row, at: usize| -> (i64, i64) {
        let reading = |i: usize| -> i64 {
            row.get::<_, Option<i64>>(i)
                .expect("every statement of the adapters reads the clock first")
        };
        (reading(at), reading(at + 1))
    };
    let mut deletes: Vec<(i64, AuditedDelete)> = Vec::new();
    let rows = client
        .query(
            "SELECT txn, client, first_clock_us, first_true_us, id, created_at_ms,
                    at_clock_us, at_true_us
             FROM real_mode_deleted ORDER BY txn, created_at_ms, id",
            &[],
        )
        .await
        .expect("read the deletion audit");
    for row in &rows {
        let txn: i64 = row.get(0);
        let id = u64::try_from(row.get::<_, i64>(4)).expect("ids are positive");
        let deleted_us: (i64, i64) = (row.get(6), row.get(7));
        match deletes.last_mut() {
            Some((last, delete)) if *last == txn => {
                delete.rows.push((id, row.get(5)));
                delete.deleted_us = delete.deleted_us.max(deleted_us);
            }
            _ => deletes.push((
                txn,
                AuditedDelete {
                    client: row.get(1),
                    first_us: first(row, 2),
                    rows: vec![(id, row.get(5))],
                    deleted_us,
                },
            )),
        }
    }
    let changes = client
        .query(
            "SELECT client, first_clock_us, first_true_us, owner, token, expires_at_ms,
                    at_true_us
             FROM real_mode_lease_changes ORDER BY txn, at_true_us",
            &[],
        )
        .await
        .expect("read the lease audit")
        .iter()
        .map(|row| AuditedLeaseChange {
            client: row.get(0),
            first_us: first(row, 1),
            owner: row.get(3),
            token: u64::try_from(row.get::<_, i64>(4)).expect("tokens are positive"),
            expires_at_ms: row.get(5),
            changed_true_us: row.get(6),
        })
        .collect();
    (deletes.into_iter().map(|(_, d)| d).collect(), changes)
}

/// The events (each with its true instant, µs) for the audited effects
/// that `events` does not account for. A delete is accounted for when its
/// rows were recorded deleted, a grant when its token was recorded
/// granted, a clearing when its token was recorded released or revoked.
/// Each is tied to its replica's latest call that could have made it,
/// invoked by the effect's first clock reading and with no effect recorded.
pub fn unheard_events(
    events: &[Event],
    deletes: &[AuditedDelete],
    changes: &[AuditedLeaseChange],
    epoch_ms: i64,
) -> Vec<(i64, Event)> {
    let mut calls = Calls::of(events);
    let mut found = Vec::new();
    let heard_rows: BTreeSet<u64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Deleted { rows, .. } => Some(rows.iter().map(|row| row.id)),
            _ => None,
        })
        .flatten()
        .collect();
    for delete in deletes {
        let heard = delete.rows.iter().filter(|(id, _)| heard_rows.contains(id));
        match heard.count() {
            0 => {}
            n if n == delete.rows.len() => continue,
            n => panic!(
                "{n} of the {} rows one transaction deleted were recorded: {delete:?}",
                delete.rows.len()
            ),
        }
        let call = calls.take(
            &delete.client,
            &[OpKind::Delete],
            delete.first_us.1,
            epoch_ms,
        );
        let Invocation::Delete {
            older_than_ms,
            token,
            ..
        } = call.invocation
        else {
            unreachable!("a delete call")
        };
        let mut rows: Vec<RowRec> = delete
            .rows
            .iter()
            .map(|&(id, created_at_ms)| RowRec {
                id,
                created_at_ms: created_at_ms - epoch_ms,
            })
            .collect();
        rows.sort_unstable_by_key(|row| (row.created_at_ms, row.id));
        let kind = EventKind::Deleted {
            call: call.call,
            token,
            fenced_at_ms: delete.first_us.1.div_euclid(1_000) - epoch_ms,
            older_than_ms,
            rows,
            deleted_clock_ms: Some(delete.deleted_us.0.div_euclid(1_000) - epoch_ms),
            fenced_clock_ms: Some(delete.first_us.0.div_euclid(1_000) - epoch_ms),
        };
        found.push(event_at(
            delete.deleted_us.1,
            Actor::Db,
            call.term,
            kind,
            epoch_ms,
        ));
    }
    let leases = |pick: fn(&EventKind) -> Option<&LeaseRec>| -> BTreeSet<u64> {
        events
            .iter()
            .filter_map(|e| pick(&e.kind).map(|lease| lease.token))
            .collect()
    };
    let granted = leases(|kind| match kind {
        EventKind::Granted { lease, .. } => Some(lease),
        _ => None,
    });
    let cleared = leases(|kind| match kind {
        EventKind::Released {
            lease,
            cleared: true,
            ..
        }
        | EventKind::Revoked { lease, .. } => Some(lease),
        _ => None,
    });
    for change in changes {
        let first_true_us = change.first_us.1;
        let (term, kind) = match &change.owner {
            Some(_) if granted.contains(&change.token) => continue,
            None if cleared.contains(&change.token) => continue,
            Some(owner) => {
                let ops = [OpKind::Acquire, OpKind::Renew];
                let call = calls.take(&change.client, &ops, first_true_us, epoch_ms);
                let lease = LeaseRec {
                    owner: owner.clone(),
                    token: change.token,
                    expires_at_ms: change.expires_at_ms - epoch_ms,
                };
                (
                    call.term,
                    EventKind::Granted {
                        call: call.call,
                        lease,
                    },
                )
            }
            None => {
                let ops = [OpKind::Release, OpKind::Renew];
                let call = calls.take(&change.client, &ops, first_true_us, epoch_ms);
                let kind = match &call.invocation {
                    Invocation::Release { lease } => EventKind::Released {
                        call: call.call,
                        lease: lease.clone(),
                        cleared: true,
                    },
                    Invocation::Renew { lease } => EventKind::Revoked {
                        call: call.call,
                        lease: lease.clone(),
                    },
                    _ => unreachable!("a release or a renewal"),
                };
                (call.term, kind)
            }
        };
        found.push(event_at(
            change.changed_true_us,
            Actor::Lease,
            term,
            kind,
            epoch_ms,
        ));
    }
    found
}

fn event_at(at_us: i64, actor: Actor, term: u32, kind: EventKind, epoch_ms: i64) -> (i64, Event) {
    let event = Event {
        at_ms: at_us.div_euclid(1_000) - epoch_ms,
        actor,
        term,
        kind,
    };
    (at_us, event)
}

/// A replica's call, as its `Invoke` recorded it.
#[derive(Debug, Clone)]
struct Call {
    replica: u32,
    call: u64,
    term: u32,
    at_ms: i64,
    invocation: Invocation,
}

/// The calls that recorded no effect, in the order invoked.
struct Calls(Vec<Call>);

impl Calls {
    fn of(events: &[Event]) -> Self {
        let answered: BTreeSet<u64> = events.iter().filter_map(|e| e.kind.effect_call()).collect();
        Self(
            events
                .iter()
                .filter_map(|e| match (&e.actor, &e.kind) {
                    (Actor::Replica(replica), EventKind::Invoke { call, invocation })
                        if !answered.contains(call) =>
                    {
                        Some(Call {
                            replica: *replica,
                            call: *call,
                            term: e.term,
                            at_ms: e.at_ms,
                            invocation: invocation.clone(),
                        })
                    }
                    _ => None,
                })
                .collect(),
        )
    }

    /// Takes the latest call of `client`'s replica among `ops` invoked by
    /// true instant `by_us`. Its absence is the harness's defect: every
    /// effect is some call's.
    fn take(&mut self, client: &str, ops: &[OpKind], by_us: i64, epoch_ms: i64) -> Call {
        let replica: u32 = client
            .strip_prefix('r')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("an effect of session {client:?}, which is no replica"));
        let by_ms = by_us.div_euclid(1_000) - epoch_ms;
        let index = (0..self.0.len())
            .rev()
            .find(|&i| {
                let call = &self.0[i];
                call.replica == replica
                    && call.at_ms <= by_ms
                    && ops.contains(&call.invocation.kind())
            })
            .unwrap_or_else(|| {
                panic!(
                    "replica {replica} made a {ops:?} effect at {by_ms} ms with no call \
                     of its own left unanswered by then"
                )
            });
        self.0.remove(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPOCH_MS: i64 = 1_764_763_200_000;

    fn event(at_ms: i64, actor: Actor, kind: EventKind) -> Event {
        Event {
            at_ms,
            actor,
            term: 1,
            kind,
        }
    }

    fn delete_call(at_ms: i64, call: u64) -> Event {
        let invocation = Invocation::Delete {
            older_than_ms: 50,
            limit: 200,
            token: 4,
        };
        event(
            at_ms,
            Actor::Replica(1),
            EventKind::Invoke { call, invocation },
        )
    }

    fn deleted(call: u64, ids: &[u64]) -> Event {
        let rows = ids
            .iter()
            .map(|&id| RowRec {
                id,
                created_at_ms: 0,
            })
            .collect();
        let kind = EventKind::Deleted {
            call,
            token: 4,
            fenced_at_ms: 0,
            older_than_ms: 50,
            rows,
            deleted_clock_ms: None,
            fenced_clock_ms: None,
        };
        event(110, Actor::Db, kind)
    }

    fn audited(ids: &[u64], first_ms: i64) -> AuditedDelete {
        let first_us = (EPOCH_MS + first_ms) * 1_000;
        AuditedDelete {
            client: "r1".into(),
            first_us: (first_us, first_us),
            rows: ids.iter().map(|&id| (id, EPOCH_MS)).collect(),
            deleted_us: (first_us + 5_000, first_us + 5_000),
        }
    }

    /// The delete whose rows were recorded is heard; the other goes to
    /// the replica's latest call that recorded nothing, not to the one
    /// that did.
    #[test]
    fn an_unrecorded_delete_goes_to_the_latest_call_with_no_effect() {
        let events = [
            delete_call(100, 3),
            deleted(3, &[1, 2]),
            delete_call(300, 5),
        ];
        let audits = [audited(&[1, 2], 101), audited(&[3], 350)];
        let found = unheard_events(&events, &audits, &[], EPOCH_MS);
        let [(at_us, event)] = &found[..] else {
            panic!("one unheard delete, found {found:#?}");
        };
        assert_eq!(*at_us, (EPOCH_MS + 355) * 1_000);
        let EventKind::Deleted {
            call,
            rows,
            fenced_at_ms,
            ..
        } = &event.kind
        else {
            panic!("a delete, found {event:?}");
        };
        assert_eq!((*call, *fenced_at_ms, rows.len()), (5, 350, 1));
    }

    /// One transaction is one call's: some of its rows recorded and some
    /// not is the harness's defect, said as such.
    #[test]
    #[should_panic(expected = "1 of the 2 rows one transaction deleted were recorded")]
    fn a_transaction_half_recorded_is_a_harness_defect() {
        let events = [delete_call(100, 3), deleted(3, &[1])];
        unheard_events(&events, &[audited(&[1, 2], 101)], &[], EPOCH_MS);
    }

    /// A grant whose token was recorded is heard; a clearing nobody
    /// recorded is the revocation of the renewal that made it.
    #[test]
    fn an_unrecorded_clearing_by_a_renewal_is_its_revocation() {
        let lease = LeaseRec {
            owner: "r1".into(),
            token: 4,
            expires_at_ms: 1_500,
        };
        let renew = Invocation::Renew {
            lease: lease.clone(),
        };
        let events = [
            event(
                0,
                Actor::Lease,
                EventKind::Granted {
                    call: 1,
                    lease: lease.clone(),
                },
            ),
            event(
                200,
                Actor::Replica(1),
                EventKind::Invoke {
                    call: 2,
                    invocation: renew,
                },
            ),
        ];
        let change = |owner: Option<&str>, at_ms: i64| AuditedLeaseChange {
            client: "r1".into(),
            first_us: ((EPOCH_MS + at_ms) * 1_000, (EPOCH_MS + at_ms) * 1_000),
            owner: owner.map(str::to_owned),
            token: 4,
            expires_at_ms: EPOCH_MS + 1_500,
            changed_true_us: (EPOCH_MS + at_ms) * 1_000,
        };
        let changes = [change(Some("r1"), 0), change(None, 210)];
        let found = unheard_events(&events, &[], &changes, EPOCH_MS);
        let kinds: Vec<&EventKind> = found.iter().map(|(_, e)| &e.kind).collect();
        assert_eq!(kinds, [&EventKind::Revoked { call: 2, lease }]);
    }
}
