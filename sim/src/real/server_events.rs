//! What the server did on its own during a run, as history events: the
//! statements its bounds or a client's cancel ended, the sessions it ended,
//! the deletes it rolled back and the lock waits, as the simulator's
//! database records them (`Aborted`, `RolledBack`, `LockWait`), read from
//! its log and tied to the calls they belong to.

use std::collections::BTreeMap;
use std::time::Duration;

use retention_worker::pg::Pool;
use test_support::TempServer;

use super::log::RealRecorder;
use super::server_log::{self, Entry, lock_wait, locked, operation};
use crate::model::{Actor, Event, EventKind, History, OpKind, RunSpec};

/// Adds to `history` what the server did on its own during the run, as
/// its log tells it, each event in its place in time (the `Final` event
/// stays last).
pub(super) async fn add_server_events(
    server: &TempServer,
    name: &str,
    spec: &RunSpec,
    pool: &Pool,
    log: &RealRecorder,
    history: &mut History,
) {
    let client = pool.get().await.expect("a connection");
    let text = std::fs::read_to_string(server.log_path()).unwrap_or_default();
    let entries = server_log::parse(&text);
    let txns = server_log::delete_transactions(&entries);
    let rolled_back: Vec<i64> = client
        .query(
            "SELECT x FROM unnest($1::bigint[]) AS t(x) WHERE txid_status(x) = 'aborted'",
            &[&txns],
        )
        .await
        .expect("ask which deletes committed")
        .iter()
        .map(|row| row.get(0))
        .collect();
    let fin = history.events.pop().expect("the final event");
    let found = server_events(
        &entries,
        name,
        log.epoch_ms,
        &history.events,
        spec,
        &rolled_back,
    );
    history.events.extend(found);
    history.events.sort_by_key(|event| event.at_ms);
    history.events.push(fin);
}

/// Waits (bounded) for every other backend of the run's database to be
/// idle or gone: a statement on a connection its client abandoned runs on
/// to its bound, and commits or logs its end only then.
pub(super) async fn settle(spec: &RunSpec, pool: &Pool) {
    let client = pool.get().await.expect("a connection");
    let settle_ms = spec
        .statement_timeout_ms
        .max(spec.rpc_timeout_ms)
        .saturating_add(spec.idle_in_transaction_timeout_ms)
        .saturating_add(1_000);
    let busy = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                AND pid <> pg_backend_pid() AND backend_type = 'client backend' \
                AND state IS DISTINCT FROM 'idle'";
    let deadline = std::time::Instant::now() + Duration::from_millis(settle_ms);
    while std::time::Instant::now() < deadline {
        let running: i64 = client
            .query_one(busy, &[])
            .await
            .expect("read pg_stat_activity")
            .get(0);
        if running == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The server's own events in database `database`, on the history's clock
/// (`epoch_ms`), tied to the calls in `events` (the run's history so far):
/// a log entry's backend names its replica (`application_name` `rN`), and
/// the call is that replica's latest of the statement's operation. `rolled
/// back` holds the delete transactions that did not commit.
pub fn server_events(
    entries: &[Entry],
    database: &str,
    epoch_ms: i64,
    events: &[Event],
    spec: &RunSpec,
    rolled_back: &[i64],
) -> Vec<Event> {
    let entries: Vec<&Entry> = entries.iter().filter(|e| e.database == database).collect();
    let replica_of: BTreeMap<u32, u32> = entries
        .iter()
        .filter_map(|e| Some((e.pid, e.client.strip_prefix('r')?.parse().ok()?)))
        .collect();
    let calls = Calls::of(events);
    let at_ms = |at_us: i64| at_us.div_euclid(1_000) - epoch_ms;
    let mut out = Vec::new();
    let mut push = |at_us: i64, actor, (_, term): (u64, u32), kind| {
        out.push(Event {
            at_ms: at_ms(at_us),
            actor,
            term,
            kind,
        });
    };
    for entry in &entries {
        let Some(&replica) = replica_of.get(&entry.pid) else {
            continue;
        };
        let op = operation(&entry.statement);
        let ended = |why: String| match op {
            Some(OpKind::Delete) => format!("{why}: its transaction aborted"),
            _ => format!("{why}: not applied"),
        };
        let reason = match (entry.sqlstate.as_str(), entry.message.as_str()) {
            ("57014", "canceling statement due to statement timeout") => Some(ended(format!(
                "statement timeout after {} ms",
                spec.statement_timeout_ms
            ))),
            ("55P03", "canceling statement due to lock timeout") => Some(ended(format!(
                "lock timeout after {} ms",
                spec.lock_timeout_ms
            ))),
            ("57014", "canceling statement due to user request") => {
                Some(ended("cancelled by its client".to_owned()))
            }
            ("25P03", _) => Some(format!(
                "idle in transaction for {} ms: the server ends the session",
                spec.idle_in_transaction_timeout_ms
            )),
            _ => None,
        };
        let op = if entry.sqlstate == "25P03" {
            Some(OpKind::Delete)
        } else {
            op
        };
        if let (Some(reason), Some(op)) = (reason, op) {
            // Tied to the call whose statement this was: a statement its
            // client gave up on can end after the next call began.
            let began_us = began_us(&entries, entry, op);
            if let Some(call) = calls.latest(replica, op, at_ms(began_us)) {
                let kind = EventKind::Aborted {
                    call: call.0,
                    reason,
                };
                push(entry.at_us, actor_of(op), call, kind);
            }
            continue;
        }
        if let (Some(op), Some((waited_ms, holders))) = (op, lock_wait(entry)) {
            let at_us = entry.at_us - (waited_ms * 1_000.0) as i64;
            let Some(call) = calls.latest(replica, op, at_ms(at_us)) else {
                continue;
            };
            // Each holder's call is the one whose statement its backend
            // ran last before the wait began (a delete's fence, another
            // replica's renewal...), as the server logged it.
            let behind = holders
                .iter()
                .filter_map(|pid| {
                    let r = *replica_of.get(pid)?;
                    let (began_us, held) = statements(&entries, *pid, at_us).next_back()?;
                    calls.latest(r, held, at_ms(began_us))
                })
                .map(|(call, _)| call)
                .collect();
            let kind = EventKind::LockWait {
                call: call.0,
                op,
                behind,
            };
            push(at_us, actor_of(op), call, kind);
        }
    }
    // A delete that locked rows and did not commit let them go when its
    // backend next failed, or closed.
    for lock in entries.iter().filter_map(|e| locked(e)) {
        if !rolled_back.contains(&lock.txn) {
            continue;
        }
        let (Some(&replica), Some(end)) = (
            replica_of.get(&lock.pid),
            entries.iter().find(|e| {
                e.pid == lock.pid
                    && e.at_us >= lock.at_us
                    && (matches!(e.level.as_str(), "ERROR" | "FATAL")
                        || e.message.starts_with("disconnection:"))
            }),
        ) else {
            continue;
        };
        if let Some(call) = calls.latest(replica, OpKind::Delete, at_ms(lock.at_us)) {
            let kind = EventKind::RolledBack {
                call: call.0,
                rows: lock.rows,
            };
            push(end.at_us, Actor::Db, call, kind);
        }
    }
    out
}

/// When the statement `entry` is about began, as its backend logged it
/// (`log_statement = all`): the latest statement of operation `op` that
/// backend logged by then; `entry`'s own time when none was logged.
fn began_us(entries: &[&Entry], entry: &Entry, op: OpKind) -> i64 {
    statements(entries, entry.pid, entry.at_us)
        .filter(|(_, logged)| *logged == op)
        .map(|(at_us, _)| at_us)
        .next_back()
        .unwrap_or(entry.at_us)
}

/// The adapters' statements backend `pid` logged by `at_us`, oldest first:
/// when each began, and its operation.
fn statements<'a>(
    entries: &'a [&'a Entry],
    pid: u32,
    at_us: i64,
) -> impl DoubleEndedIterator<Item = (i64, OpKind)> + 'a {
    entries
        .iter()
        .filter(move |e| e.pid == pid && e.at_us <= at_us && e.level == "LOG")
        .filter_map(|e| {
            let sql = e.message.strip_prefix("statement: ").or_else(|| {
                let (_, sql) = e.message.strip_prefix("execute ")?.split_once(": ")?;
                Some(sql)
            })?;
            Some((e.at_us, operation(sql)?))
        })
}

fn actor_of(op: OpKind) -> Actor {
    match op {
        OpKind::Delete => Actor::Db,
        _ => Actor::Lease,
    }
}

/// Every call a replica invoked: its operation, when, and its term.
struct Calls(Vec<(u32, OpKind, i64, u64, u32)>);

impl Calls {
    fn of(events: &[Event]) -> Self {
        Self(
            events
                .iter()
                .filter_map(|e| match (&e.actor, &e.kind) {
                    (Actor::Replica(r), EventKind::Invoke { call, invocation }) => {
                        Some((*r, invocation.kind(), e.at_ms, *call, e.term))
                    }
                    _ => None,
                })
                .collect(),
        )
    }

    /// Replica `replica`'s latest call of `op` invoked by `at_ms`.
    fn latest(&self, replica: u32, op: OpKind, at_ms: i64) -> Option<(u64, u32)> {
        self.0
            .iter()
            .filter(|(r, o, at, _, _)| *r == replica && *o == op && *at <= at_ms)
            .max_by_key(|(_, _, at, call, _)| (*at, *call))
            .map(|(_, _, _, call, term)| (*call, *term))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retention_worker::pg::{ACQUIRE, FENCE, RENEW};

    /// A renewal its client gave up on runs on until the server's
    /// statement timeout, which comes after the client's next renewal
    /// began (on another connection): the timeout is the first call's.
    #[test]
    fn a_statement_that_outlived_its_call_is_tied_to_the_call_it_began_in() {
        let renew = RENEW.split_whitespace().collect::<Vec<_>>().join(" ");
        let log = format!(
            "1764763200.010|4242|00000|runs|r1|LOG:  execute s1: {renew}\n\
             1764763200.610|4343|00000|runs|r1|LOG:  execute s1: {renew}\n\
             1764763200.900|4242|57014|runs|r1|ERROR:  canceling statement due to statement timeout\n\
             1764763200.900|4242|57014|runs|r1|STATEMENT:  {renew}\n"
        );
        let invoke = |at_ms: i64, call: u64| -> Event {
            serde_json::from_value(serde_json::json!({
                "at_ms": at_ms, "actor": {"replica": 1}, "term": 1,
                "kind": {"event": "invoke", "call": call, "invocation": {"op": "renew",
                    "lease": {"owner": "r1", "token": 1, "expires_at_ms": 3_000}}}
            }))
            .expect("an event")
        };
        let events = [invoke(0, 1), invoke(600, 2)];
        let epoch_ms = 1_764_763_200_000;
        let found = server_events(
            &server_log::parse(&log),
            "runs",
            epoch_ms,
            &events,
            &RunSpec::default(),
            &[],
        );
        let aborted: Vec<u64> = found
            .iter()
            .filter_map(|event| match event.kind {
                EventKind::Aborted { call, .. } => Some(call),
                _ => None,
            })
            .collect();
        assert_eq!(aborted, [1], "{found:#?}");
    }

    /// An acquire queued behind another replica's renewal names that
    /// renewal, not the holder's latest delete (which ran on another
    /// connection and had committed).
    #[test]
    fn a_lock_wait_names_the_call_whose_statement_holds_the_lock() {
        let flat = |sql: &str| sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let (fence, renew, acquire) = (flat(FENCE), flat(RENEW), flat(ACQUIRE));
        let log = format!(
            "1764763200.050|4141|00000|runs|r1|LOG:  execute s2: {fence}\n\
             1764763200.100|4242|00000|runs|r1|LOG:  execute s1: {renew}\n\
             1764763200.110|4343|00000|runs|r2|LOG:  execute s0: {acquire}\n\
             1764763200.130|4343|00000|runs|r2|LOG:  process 4343 still waiting for \
             ShareLock on transaction 771 after 20.000 ms\n\
             1764763200.130|4343|00000|runs|r2|DETAIL:  Process holding the lock: 4242. \
             Wait queue: 4343.\n\
             1764763200.130|4343|00000|runs|r2|STATEMENT:  {acquire}\n"
        );
        let invoke =
            |at_ms: i64, replica: u32, call: u64, invocation: serde_json::Value| -> Event {
                serde_json::from_value(serde_json::json!({
                    "at_ms": at_ms, "actor": {"replica": replica}, "term": 1,
                    "kind": {"event": "invoke", "call": call, "invocation": invocation}
                }))
                .expect("an event")
            };
        let lease = serde_json::json!({"owner": "r1", "token": 1, "expires_at_ms": 3_000});
        let events = [
            invoke(
                40,
                1,
                7,
                serde_json::json!({"op": "delete", "older_than_ms": 0, "limit": 1, "token": 1}),
            ),
            invoke(95, 1, 8, serde_json::json!({"op": "renew", "lease": lease})),
            invoke(105, 2, 9, serde_json::json!({"op": "acquire"})),
        ];
        let found = server_events(
            &server_log::parse(&log),
            "runs",
            1_764_763_200_000,
            &events,
            &RunSpec::default(),
            &[],
        );
        let waits: Vec<(u64, Vec<u64>)> = found
            .iter()
            .filter_map(|event| match &event.kind {
                EventKind::LockWait { call, behind, .. } => Some((*call, behind.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(waits, [(9, vec![8])], "{found:#?}");
    }
}
