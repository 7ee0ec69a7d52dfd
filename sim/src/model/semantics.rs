//! What no run can record, each line valid on its own: a crashed process
//! that acts before it is restarted, a restart of a process that never
//! crashed, a delete's transaction that commits twice or commits and rolls
//! back or deletes more rows than it asked for, a clock rate or step no
//! plan can set, faults in a history whose header says none were injected.
//! `validate.rs` asks it about every event, in order.

use std::collections::BTreeMap;

use super::faults::RATE_PERMILLE;
use super::history::{Actor, Event, EventKind, Header};
use super::history_rules::kind_name;
use super::limits::DAY_MS;

/// What the events so far say: who is down since which line, how each
/// delete's transaction ended.
pub(super) struct Semantics {
    faults_off: bool,
    /// Replica -> the line of its crash, while it is down.
    down_since: BTreeMap<u32, usize>,
    /// Call -> the line its transaction committed or rolled back on.
    ended: BTreeMap<u64, (usize, &'static str)>,
    /// Replica -> its crashes not yet followed by a restart.
    unrestarted: BTreeMap<u32, u32>,
    /// Delete call -> the most rows it asked for (its `LIMIT`).
    limits: BTreeMap<u64, u32>,
    /// Call -> the replica that invoked it and, for a delete, its cutoff.
    invoked: BTreeMap<u64, (u32, Option<i64>)>,
    /// Lease call -> the line and kind of the service's answer to it.
    answered: BTreeMap<u64, (usize, &'static str)>,
}

impl Semantics {
    pub(super) fn new(header: &Header) -> Self {
        Self {
            faults_off: header.faults_off,
            down_since: BTreeMap::new(),
            ended: BTreeMap::new(),
            unrestarted: BTreeMap::new(),
            limits: BTreeMap::new(),
            invoked: BTreeMap::new(),
            answered: BTreeMap::new(),
        }
    }

    /// The problems `event`, read from `line`, adds.
    pub(super) fn problems(&mut self, event: &Event, line: usize) -> Vec<String> {
        let mut problems = Vec::new();
        for (field, value) in instants(&event.kind) {
            if value.unsigned_abs() > INSTANT_MS_MAX {
                problems.push(format!(
                    "{field} {value}: no clock of a run reads that (beyond {INSTANT_MS_MAX} ms \
                     either way)"
                ));
            }
        }
        problems.extend(clock_fault_problems(&event.kind));
        if self.faults_off && is_fault(&event.kind) {
            problems.push(format!(
                "a {} in a history whose header says no fault was injected (faults_off)",
                kind_name(&event.kind)
            ));
        }
        if let Actor::Replica(n) = event.actor {
            match &event.kind {
                EventKind::Crashed => {
                    // A second kill of a process already down changes
                    // nothing; each kill still owes its restart.
                    self.down_since.entry(n).or_insert(line);
                    *self.unrestarted.entry(n).or_default() += 1;
                }
                EventKind::Restarted => {
                    self.down_since.remove(&n);
                    match self.unrestarted.get_mut(&n) {
                        Some(owed) if *owed > 0 => *owed -= 1,
                        _ => problems.push(format!("r{n} restarts without a crash before it")),
                    }
                }
                kind if !happens_to_a_host(kind) => {
                    if let Some(since) = self.down_since.get(&n) {
                        problems.push(format!(
                            "r{n} records a {} while crashed (since line {since}, no restart)",
                            kind_name(kind)
                        ));
                    }
                }
                _ => {}
            }
        }
        if let (Actor::Replica(n), EventKind::Invoke { call, invocation }) =
            (event.actor, &event.kind)
        {
            let cutoff = match invocation {
                super::history::Invocation::Delete {
                    older_than_ms,
                    limit,
                    ..
                } => {
                    self.limits.insert(*call, *limit);
                    Some(*older_than_ms)
                }
                _ => None,
            };
            self.invoked.insert(*call, (n, cutoff));
        }
        let answer = match &event.kind {
            EventKind::Granted { call, .. } => Some((*call, "granted")),
            EventKind::Refused { call, .. } => Some((*call, "refused")),
            _ => None,
        };
        if let Some((call, how)) = answer
            && let Some((before, how_before)) = self.answered.insert(call, (line, how))
        {
            problems.push(format!(
                "call {call} is {how}, and was {how_before} on line {before}: the service \
                 answers a call once"
            ));
        }
        if let EventKind::Granted { call, lease } = &event.kind
            && let Some((n, _)) = self.invoked.get(call)
            && lease.owner != format!("r{n}")
        {
            problems.push(format!(
                "call {call} of r{n} granted a lease to {:?}: a grant goes to its caller",
                lease.owner
            ));
        }
        if let EventKind::Deleted {
            call,
            older_than_ms,
            ..
        } = &event.kind
            && let Some((_, Some(sent_ms))) = self.invoked.get(call)
            && older_than_ms > sent_ms
        {
            problems.push(format!(
                "call {call} deleted by a cutoff of {older_than_ms} ms, later than the \
                 {sent_ms} ms it sent (the database only ever lowers it)"
            ));
        }
        if let EventKind::Deleted { call, rows, .. } = &event.kind
            && let Some(limit) = self.limits.get(call)
            && rows.len() > *limit as usize
        {
            problems.push(format!(
                "call {call} deleted {} rows, but asked for at most {limit} (a DELETE with a \
                 LIMIT never removes more)",
                rows.len()
            ));
        }
        let ending = match &event.kind {
            EventKind::Deleted { call, .. } => Some((*call, "committed")),
            EventKind::RolledBack { call, .. } => Some((*call, "rolled back")),
            _ => None,
        };
        if let Some((call, how)) = ending
            && let Some((before, how_before)) = self.ended.insert(call, (line, how))
        {
            problems.push(format!(
                "call {call}'s transaction {how}, and had {how_before} on line {before}"
            ));
        }
        problems
    }
}

/// The farthest from time 0 any instant of a run can be: ten years either
/// way (a run lasts at most an hour, clocks are skewed or stepped by at
/// most a day, and a cutoff is a retention of at most a year before a
/// clock reading). Beyond it the checker's arithmetic could wrap.
const INSTANT_MS_MAX: u64 = 10 * 365 * 24 * 3_600_000;

/// The instants an event carries, each with its field's name.
fn instants(kind: &EventKind) -> Vec<(&'static str, i64)> {
    let lease = |lease: &super::history::LeaseRec| vec![("expires_at_ms", lease.expires_at_ms)];
    match kind {
        EventKind::Invoke { invocation, .. } => match invocation {
            super::history::Invocation::Delete { older_than_ms, .. } => {
                vec![("older_than_ms", *older_than_ms)]
            }
            super::history::Invocation::Renew { lease: l }
            | super::history::Invocation::Release { lease: l } => lease(l),
            super::history::Invocation::Acquire => vec![],
        },
        EventKind::Granted { lease: l, .. }
        | EventKind::Revoked { lease: l, .. }
        | EventKind::Released { lease: l, .. } => lease(l),
        EventKind::Deleted {
            fenced_at_ms,
            older_than_ms,
            rows,
            deleted_clock_ms,
            fenced_clock_ms,
            ..
        } => {
            let mut all = vec![
                ("fenced_at_ms", *fenced_at_ms),
                ("older_than_ms", *older_than_ms),
            ];
            all.extend(deleted_clock_ms.map(|ms| ("deleted_clock_ms", ms)));
            all.extend(fenced_clock_ms.map(|ms| ("fenced_clock_ms", ms)));
            all.extend(rows.iter().map(|row| ("created_at_ms", row.created_at_ms)));
            all
        }
        EventKind::ClockStepped { from_ms, to_ms }
        | EventKind::DbClockStepped { from_ms, to_ms, .. } => {
            vec![("from_ms", *from_ms), ("to_ms", *to_ms)]
        }
        EventKind::ClockRateSet { reading_ms, .. } => vec![("reading_ms", *reading_ms)],
        _ => vec![],
    }
}

/// A clock fault no plan can inject: a rate outside the one every plan
/// is checked against, or a step longer than a day either way.
fn clock_fault_problems(kind: &EventKind) -> Vec<String> {
    match kind {
        EventKind::ClockRateSet { rate_permille, .. } if !RATE_PERMILLE.contains(rate_permille) => {
            vec![format!(
                "rate_permille {rate_permille}: a clock's rate is in {}..={} thousandths",
                RATE_PERMILLE.start(),
                RATE_PERMILLE.end()
            )]
        }
        EventKind::ClockStepped { from_ms, to_ms }
        | EventKind::DbClockStepped { from_ms, to_ms, .. }
            if to_ms.abs_diff(*from_ms) > DAY_MS =>
        {
            vec![format!(
                "a clock step from {from_ms} to {to_ms}: a step is at most {DAY_MS} ms either way"
            )]
        }
        _ => vec![],
    }
}

/// Events a replica's host records whatever its process is doing: a
/// freeze, a cut, its clocks.
fn happens_to_a_host(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Paused { .. }
            | EventKind::Resumed
            | EventKind::Partitioned { .. }
            | EventKind::Healed
            | EventKind::ClockStepped { .. }
            | EventKind::ClockRateSet { .. }
    )
}

/// Events that only an injected fault makes.
fn is_fault(kind: &EventKind) -> bool {
    happens_to_a_host(kind)
        || matches!(
            kind,
            EventKind::Crashed
                | EventKind::Restarted
                | EventKind::Revoked { .. }
                | EventKind::RowsHeld { .. }
                | EventKind::StandbyStalled { .. }
                | EventKind::DbClockStepped { .. }
        )
}
