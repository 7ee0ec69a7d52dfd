//! What a plan's timed faults do when two of one kind overlap on one
//! target: a process paused while paused stays paused until the later end,
//! a cut while cut heals at the later heal, a standby stalled while stalled
//! answers at the later end, and a crash of a process already down does
//! nothing. The simulator and real mode apply the plan through this, so a
//! nested fault never ends the outer one early.

use super::faults::FaultEvent;
use super::spec::RunSpec;

impl RunSpec {
    /// The timed faults as they take effect: overlapping windows of one
    /// kind on one target merged into one (at the first start, to the
    /// latest end), and each crash that strikes a replica still down from
    /// an earlier one dropped; every other event as planned. In time order
    /// where the plan was; events without a time keep their place after.
    pub fn effective_events(&self) -> Vec<FaultEvent> {
        effective_of(&self.events)
    }
}

/// [`RunSpec::effective_events`] of any list of events.
pub(crate) fn effective_of(events: &[FaultEvent]) -> Vec<FaultEvent> {
    {
        let mut kept: Vec<FaultEvent> = Vec::with_capacity(events.len());
        let mut ordered: Vec<&FaultEvent> = events.iter().collect();
        // Stable: same-instant events keep the plan's order.
        ordered.sort_by_key(|event| event.at_ms().unwrap_or(u64::MAX));
        for event in ordered {
            if let Some(earlier) = kept
                .iter_mut()
                .rev()
                .find(|earlier| overlaps(earlier, event))
            {
                merge(earlier, event);
                continue;
            }
            kept.push(event.clone());
        }
        kept
    }
}

/// What a per-call event aims at: a stop during, or a fault of, one call
/// (replica, operation, n-th). Two events for one call would conflict
/// (the last silently won), so a plan may hold one of each kind.
pub(crate) fn call_target(event: &FaultEvent) -> Option<(&'static str, u32, super::OpKind, u32)> {
    let (op, nth) = event.chosen_call()?;
    let replica = event.replica().expect("a chosen call is a replica's");
    Some((event.kind_name(), replica, op, nth))
}

/// `events` without any per-call event whose call an earlier one of its
/// kind already aims at: how the generators keep their draws valid.
pub fn first_per_call(events: Vec<FaultEvent>) -> Vec<FaultEvent> {
    let mut seen = Vec::new();
    events
        .into_iter()
        .filter(|event| match call_target(event) {
            Some(target) if seen.contains(&target) => false,
            Some(target) => {
                seen.push(target);
                true
            }
            None => true,
        })
        .collect()
}

/// Whether `later` (starting no earlier) lands inside `earlier`'s window
/// of the same kind and target.
fn overlaps(earlier: &FaultEvent, later: &FaultEvent) -> bool {
    let mut earlier_copy = earlier.clone();
    let (Some(window), Some(later_at_ms)) = (earlier_copy.window_mut(), later.at_ms()) else {
        return false;
    };
    earlier.kind_name() == later.kind_name()
        && earlier.replica() == later.replica()
        && later_at_ms < window.at_ms.saturating_add(*window.length_ms)
}

/// `earlier` stretched to cover `later` (a crash of a process already
/// down changes nothing: its restart stays the first crash's).
fn merge(earlier: &mut FaultEvent, later: &FaultEvent) {
    let mut later_copy = later.clone();
    let (Some(window), Some(later_window)) = (earlier.window_mut(), later_copy.window_mut()) else {
        return;
    };
    if window.stretches {
        let end_ms = (window.at_ms.saturating_add(*window.length_ms))
            .max(later_window.at_ms.saturating_add(*later_window.length_ms));
        *window.length_ms = end_ms - window.at_ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pause(at_ms: u64, for_ms: u64) -> FaultEvent {
        FaultEvent::Pause {
            replica: 1,
            at_ms,
            for_ms,
        }
    }

    #[test]
    fn a_nested_window_never_ends_the_outer_one_early() {
        let spec = RunSpec {
            events: vec![
                pause(600, 5_000),
                pause(1_000, 500),
                pause(5_000, 2_000),
                pause(9_000, 10),
            ],
            ..RunSpec::default()
        };
        assert_eq!(
            spec.effective_events(),
            [pause(600, 6_400), pause(9_000, 10)]
        );
    }

    #[test]
    fn a_crash_of_a_process_already_down_does_nothing() {
        let crash = |replica, at_ms, restart_after_ms| FaultEvent::Crash {
            replica,
            at_ms,
            restart_after_ms,
        };
        let spec = RunSpec {
            events: vec![
                crash(1, 20, 600),
                crash(1, 30, 0),
                crash(2, 30, 0),
                crash(1, 620, 5),
            ],
            ..RunSpec::default()
        };
        assert_eq!(
            spec.effective_events(),
            [crash(1, 20, 600), crash(2, 30, 0), crash(1, 620, 5)]
        );
    }
}
