//! The checks a [`RunSpec`] must pass before a world is built from it,
//! beyond what its types hold: ranges, counts, and events that name calls,
//! replicas and instants the run has.

use super::faults::FaultEvent;
use super::limits::{MAX_ROWS, replicas_problem};
use super::overlap::call_target;
use super::ranges::check_ranges;
use super::spec::{RunSpec, SpecError};

impl RunSpec {
    /// Checks what the world needs beyond the types.
    pub fn validate(&self) -> Result<(), SpecError> {
        check_ranges(self)?;
        let fail = |field: String, problem: String| Err(SpecError { field, problem });
        if let Some(problem) = replicas_problem(self.replicas) {
            return fail("replicas".into(), problem);
        }
        if let Err(error) = self.worker.config().validate() {
            // The worker's own message names the field, value and rule.
            return fail(format!("worker.{}", error.field), error.to_string());
        }
        for (knob, value) in self.faults.knobs() {
            if let Some(limit) = knob.limit()
                && value > limit
            {
                return fail(
                    format!("faults.{knob}"),
                    format!("{value} is above {limit} per mille"),
                );
            }
        }
        // A million rows written during the run at most, as in the table at
        // the start: 10,000 a second for an hour would be 36 million (1.8 GB).
        let written = u64::from(self.arrivals_per_sec) * self.duration_ms / 1_000;
        if written > MAX_ROWS {
            let problem = format!(
                "{} a second for {} ms writes {written} rows; at most {} may be written \
                 during a run (shorten the run or lower the rate)",
                self.arrivals_per_sec, self.duration_ms, MAX_ROWS
            );
            return fail("arrivals_per_sec".into(), problem);
        }
        if self.db_batch_ms_min > self.db_batch_ms_max {
            let problem = format!(
                "{} is above db_batch_ms_max {}",
                self.db_batch_ms_min, self.db_batch_ms_max
            );
            return fail("db_batch_ms_min".into(), problem);
        }
        if self.db_commit_ms_min > self.db_commit_ms_max {
            let problem = format!(
                "{} is above db_commit_ms_max {}",
                self.db_commit_ms_min, self.db_commit_ms_max
            );
            return fail("db_commit_ms_min".into(), problem);
        }
        if !self.skews_ms.is_empty() && self.skews_ms.len() != self.replicas as usize {
            let problem = format!(
                "has {} entries for {} replicas",
                self.skews_ms.len(),
                self.replicas
            );
            return fail("skews_ms".into(), problem);
        }
        for (index, event) in self.events.iter().enumerate() {
            let target = call_target(event);
            if let Some(earlier) = target.and_then(|target| {
                self.events[..index]
                    .iter()
                    .position(|e| call_target(e) == Some(target))
            }) {
                let (kind, replica, op, nth) = target.expect("found through it");
                let problem = format!(
                    "a second {kind} for r{replica}'s {op} {nth} (events[{earlier}] aims at it): \
                     one call gets one of each"
                );
                return fail(format!("events[{index}]"), problem);
            }
            if let Some(at_ms) = event.at_ms()
                && at_ms >= self.duration_ms
            {
                let problem = format!(
                    "{at_ms} ms is not before the run's end at {} ms (duration_ms)",
                    self.duration_ms
                );
                return fail(format!("events[{index}].at_ms"), problem);
            }
            if let Some(replica) = event.replica()
                && !(1..=self.replicas).contains(&replica)
            {
                let problem = format!("replica {replica} does not exist (1..={})", self.replicas);
                return fail(format!("events[{index}].replica"), problem);
            }
            if event.callers() == Some(0) {
                return fail(
                    format!("events[{index}].callers"),
                    "must be at least 1".into(),
                );
            }
            let Some((op, nth)) = event.chosen_call() else {
                continue;
            };
            if nth == 0 {
                return fail(format!("events[{index}].nth"), "counts calls from 1".into());
            }
            if let Some(problem) = event.outcome().and_then(|outcome| outcome.refusal_for(op)) {
                return fail(format!("events[{index}].outcome"), problem);
            }
        }
        if let Some((field, problem)) = self.event_edits_problem() {
            return fail(field, problem);
        }
        // The run goes on past its schedule while the stops settle.
        let end_ms = self.duration_ms.saturating_add(self.stop_bound_ms());
        if let Some(branch) = &self.branch
            && branch.at_ms > end_ms
        {
            let problem = format!(
                "{} is past the run's end ({end_ms} ms, its stops settled)",
                branch.at_ms
            );
            return fail("branch.at_ms".into(), problem);
        }
        for (index, event) in self.interventions.iter().enumerate() {
            let field = format!("interventions[{index}]");
            let FaultEvent::CallFault {
                replica, op, nth, ..
            } = *event
            else {
                return fail(field, "only faults on chosen calls (call_fault)".into());
            };
            if !(1..=self.replicas).contains(&replica) {
                let problem = format!("replica {replica} does not exist (1..={})", self.replicas);
                return fail(format!("{field}.replica"), problem);
            }
            if nth == 0 {
                return fail(format!("{field}.nth"), "counts calls from 1".into());
            }
            if let Some(problem) = event.outcome().and_then(|outcome| outcome.refusal_for(op)) {
                return fail(format!("{field}.outcome"), problem);
            }
            let target = call_target(event);
            if self
                .events
                .iter()
                .chain(&self.interventions[..index])
                .any(|other| call_target(other) == target)
            {
                let problem =
                    format!("r{replica}'s {op} {nth} already has a fault; change that one instead");
                return fail(field, problem);
            }
        }
        Ok(())
    }
}
