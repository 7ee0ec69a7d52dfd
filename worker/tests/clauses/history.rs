//! Queries and clause checks over a test world's call log.

use retention_worker::Lease;

use crate::harness::{DeleteArgs, Event, Op, What};

/// The events of `owner`, in order.
pub fn of<'a>(log: &'a [Event], owner: &str) -> Vec<&'a Event> {
    log.iter().filter(|event| event.owner == owner).collect()
}

/// The calls (not replies) of `op` by `owner`.
pub fn calls<'a>(log: &'a [Event], owner: &str, op: Op) -> Vec<&'a Event> {
    log.iter()
        .filter(|e| e.owner == owner && e.op == op && matches!(e.what, What::Call(..)))
        .collect()
}

/// Arguments of every delete `owner` issued.
pub fn deletes(log: &[Event], owner: &str) -> Vec<DeleteArgs> {
    calls(log, owner, Op::Delete)
        .into_iter()
        .map(|event| match &event.what {
            What::Call(_, Some(args)) => *args,
            other => panic!("delete call without arguments: {other:?}"),
        })
        .collect()
}

/// The row limit of every delete `owner` issued, in order.
pub fn delete_limits(log: &[Event], owner: &str) -> Vec<u32> {
    deletes(log, owner).iter().map(|d| d.limit).collect()
}

/// The lease a renew or release call carried.
pub fn lease_arg(event: &Event) -> Lease {
    match &event.what {
        What::Call(Some(lease), _) => lease.clone(),
        other => panic!("call without a lease: {other:?}"),
    }
}

/// The most calls of `op` by `owner` that were ever in flight at once.
pub fn max_in_flight(log: &[Event], owner: &str, op: Op) -> usize {
    let (mut now, mut most) = (0usize, 0usize);
    for event in log.iter().filter(|e| e.owner == owner && e.op == op) {
        if matches!(event.what, What::Call(..)) {
            now += 1;
        } else {
            now -= 1;
        }
        most = most.max(now);
    }
    most
}

/// Every lease granted to `owner` by acquire or renew, in order.
pub fn granted(log: &[Event], owner: &str) -> Vec<Lease> {
    of(log, owner)
        .into_iter()
        .filter_map(|event| match &event.what {
            What::Lease(Some(lease)) => Some(lease.clone()),
            _ => None,
        })
        .collect()
}

/// FEN-1: each delete carries the token of the latest lease `owner` had
/// been granted when it issued the delete.
pub fn assert_deletes_use_latest_token(log: &[Event], owner: &str) {
    let mut latest: Option<u64> = None;
    for event in of(log, owner) {
        match &event.what {
            What::Lease(Some(lease)) => latest = Some(lease.fencing_token),
            What::Call(_, Some(args)) => assert_eq!(
                Some(args.token),
                latest,
                "FEN-1: delete at {} ms carried token {} but the latest was {latest:?}",
                event.at_ms,
                args.token
            ),
            _ => {}
        }
    }
}

/// The time of the first event of `owner` that matches `pred`.
pub fn first_at(log: &[Event], owner: &str, pred: impl Fn(&Event) -> bool) -> Option<i64> {
    of(log, owner)
        .into_iter()
        .find(|e| pred(e))
        .map(|e| e.at_ms)
}

/// No call of `op` by `owner` begins at or after `at_ms`.
pub fn assert_no_call_from(log: &[Event], owner: &str, op: Op, at_ms: i64, clause: &str) {
    let late: Vec<_> = calls(log, owner, op)
        .into_iter()
        .filter(|e| e.at_ms >= at_ms)
        .collect();
    assert!(
        late.is_empty(),
        "{clause}: {op:?} issued at/after {at_ms} ms: {late:?}"
    );
}
