//! `sim replay --drop-fault` and `--move-fault`: one of a plan's events
//! dropped or moved in place. Each timed event is a task of the
//! simulator, and a task more or fewer would change its schedule from the
//! run's first instant; so a dropped event stays listed and its task
//! sleeps to its instant and does nothing, and a moved one is the same
//! task sleeping to another instant. The run is then the recorded one
//! until the earlier of the event's old and new instants. (`EventEdit`
//! itself is in `spec.rs`, with the plan.)

use super::faults::FaultEvent;
use super::overlap::effective_of;
use super::spec::RunSpec;

impl RunSpec {
    /// `events` with the moves made (dropped events still listed).
    fn moved_events(&self) -> Vec<FaultEvent> {
        let mut events = self.events.clone();
        for edit in &self.event_edits {
            if let (Some(at_ms), Some(event)) = (edit.at_ms, events.get_mut(edit.index))
                && let (_, Some(event_at_ms)) = event.replica_and_at_ms_mut()
            {
                *event_at_ms = at_ms;
            }
        }
        events
    }

    fn dropped(&self, index: usize) -> bool {
        (self.event_edits.iter()).any(|edit| edit.index == index && edit.at_ms.is_none())
    }

    /// The timed faults as they take effect (see
    /// [`RunSpec::effective_events`]), moves made, each with whether it is
    /// dropped (its task still sleeps to its instant): by an edit, or
    /// because a branch of the run (`sim explain`) starts at or before it.
    pub fn striking_events(&self) -> Vec<(FaultEvent, bool)> {
        let after_branch = |event: &FaultEvent| {
            let branch_ms = self.branch.as_ref().map(|branch| branch.at_ms);
            branch_ms.is_some_and(|branch_ms| event.at_ms().is_some_and(|at| at >= branch_ms))
        };
        let moved = self.moved_events();
        let dropped: Vec<&FaultEvent> = (moved.iter().enumerate())
            .filter(|(index, _)| self.dropped(*index))
            .map(|(_, event)| event)
            .collect();
        effective_of(&moved)
            .into_iter()
            .map(|event| {
                let inert = dropped.contains(&&event) || after_branch(&event);
                (event, inert)
            })
            .collect()
    }

    /// The events that act through a chosen call (faults on calls, stops
    /// during calls), without the dropped ones.
    pub fn call_events(&self) -> Vec<FaultEvent> {
        (self.events.iter().enumerate())
            .filter(|(index, event)| event.chosen_call().is_some() && !self.dropped(*index))
            .map(|(_, event)| event.clone())
            .collect()
    }

    /// Whether the edits name events that exist, once each, move only
    /// timed ones within the run, and leave each edited event acting on
    /// its own (merged into an overlapping one of its kind, it could not
    /// be dropped or moved alone): the field and the problem.
    pub(crate) fn event_edits_problem(&self) -> Option<(String, String)> {
        let moved = self.moved_events();
        let merged = effective_of(&moved);
        for (at, edit) in self.event_edits.iter().enumerate() {
            let field = format!("event_edits[{at}]");
            let Some(event) = self.events.get(edit.index) else {
                let count = self.events.len();
                return Some((
                    format!("{field}.index"),
                    format!(
                        "the plan has {count} events (0..{count}); no event {}",
                        edit.index
                    ),
                ));
            };
            if self.event_edits[..at].iter().any(|e| e.index == edit.index) {
                return Some((field, format!("events[{}] is edited twice", edit.index)));
            }
            if let Some(at_ms) = edit.at_ms {
                if event.at_ms().is_none() {
                    let problem = format!(
                        "events[{}] ({}) acts on a chosen call, not at an instant: it can be dropped, not moved",
                        edit.index,
                        event.kind_name()
                    );
                    return Some((format!("{field}.at_ms"), problem));
                }
                if at_ms > self.duration_ms {
                    let problem =
                        format!("{at_ms} is past the run's end ({} ms)", self.duration_ms);
                    return Some((format!("{field}.at_ms"), problem));
                }
            }
            let own = &moved[edit.index];
            let acting_alone = own.at_ms().is_none()
                || (merged.iter().filter(|e| *e == own).count() == 1
                    && moved.iter().filter(|e| *e == own).count() == 1);
            if !acting_alone {
                let problem = format!(
                    "events[{}] ({}) overlaps another {} on its target, and the two act as one: edit the plan instead",
                    edit.index,
                    own.kind_name(),
                    own.kind_name()
                );
                return Some((field, problem));
            }
        }
        None
    }
}
