//! Coverage probes for the database's timing rules: waits that outlast
//! `lock_timeout` because each attempt has its own, renewals let through
//! by a cut delete's abort, fences queued behind a committing update, and
//! commits held by a standby that stopped answering.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Actor, EventKind, History, OpKind};

/// Counts the database timing probes `history` reached into `hits`.
pub(super) fn count(history: &History, hits: &mut BTreeMap<&'static str, u64>) {
    let mut hit = |name: &'static str| {
        *hits.get_mut(name).expect("a listed probe") += 1;
    };
    let lock_timeout_ms = i64::try_from(history.header.lock_timeout_ms).unwrap_or(i64::MAX);
    let mut first_wait: BTreeMap<u64, i64> = BTreeMap::new();
    let mut renew_calls = BTreeSet::new();
    let mut released_at_ms = None;
    let mut resumed_at_ms = None;
    for event in &history.events {
        match &event.kind {
            EventKind::Invoke { call, invocation } if invocation.kind() == OpKind::Renew => {
                renew_calls.insert(*call);
            }
            EventKind::LockWait { call, op, .. } => {
                if first_wait.contains_key(call) {
                    hit("lock-wait-restarted");
                } else {
                    first_wait.insert(*call, event.at_ms);
                }
                if *op == OpKind::Delete {
                    hit("fence-waited-behind-commit");
                }
            }
            // Only a delete's transaction rolls back (a history's rules
            // hold every `rolled_back` to a delete call).
            EventKind::RolledBack { .. } => released_at_ms = Some(event.at_ms),
            EventKind::StandbyResumed => resumed_at_ms = Some(event.at_ms),
            EventKind::Granted { call, .. }
            | EventKind::Refused { call, .. }
            | EventKind::Released { call, .. }
            | EventKind::Revoked { call, .. }
            | EventKind::Deleted { call, .. } => {
                let waited = first_wait.get(call).map(|&since| event.at_ms - since);
                if lock_timeout_ms > 0
                    && event.actor == Actor::Lease
                    && waited.is_some_and(|ms| ms > lock_timeout_ms)
                {
                    hit("lease-applied-after-lock-timeout");
                }
                let granted_renewal =
                    matches!(event.kind, EventKind::Granted { .. }) && renew_calls.contains(call);
                if granted_renewal && waited.is_some() && released_at_ms == Some(event.at_ms) {
                    hit("renewal-granted-as-a-cut-delete-let-go");
                }
                if resumed_at_ms == Some(event.at_ms) {
                    hit("commit-held-by-standby");
                }
            }
            _ => {}
        }
    }
}
