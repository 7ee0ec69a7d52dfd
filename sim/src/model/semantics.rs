//! What no run can record, each line valid on its own: a crashed process
//! that acts before it is restarted, a restart of a process that never
//! crashed, a delete's transaction that commits twice or commits and rolls
//! back, faults in a history whose header says none were injected.
//! `validate.rs` asks it about every event, in order.

use std::collections::BTreeMap;

use super::history::{Actor, Event, EventKind, Header};
use super::history_rules::kind_name;

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
}

impl Semantics {
    pub(super) fn new(header: &Header) -> Self {
        Self {
            faults_off: header.faults_off,
            down_since: BTreeMap::new(),
            ended: BTreeMap::new(),
            unrestarted: BTreeMap::new(),
        }
    }

    /// The problems `event`, read from `line`, adds.
    pub(super) fn problems(&mut self, event: &Event, line: usize) -> Vec<String> {
        let mut problems = Vec::new();
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
