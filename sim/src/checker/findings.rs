//! A violation of a clause, and the list the checks add violations to as
//! they walk a history.

use std::fmt;

/// One broken clause, with the events (sequence numbers) that show it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    /// The clause ID, e.g. `FEN-1`.
    pub clause: &'static str,
    /// What happened, in words.
    pub message: String,
    /// The events that show it, in history order.
    pub events: Vec<usize>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (events {:?})",
            self.clause, self.message, self.events
        )
    }
}

/// Collects violations while the checks walk the history.
#[derive(Debug, Default)]
pub(crate) struct Findings(Vec<Violation>);

impl Findings {
    pub fn flag(&mut self, clause: &'static str, events: &[usize], message: impl Into<String>) {
        let mut events = events.to_vec();
        events.sort_unstable();
        events.dedup();
        self.0.push(Violation {
            clause,
            message: message.into(),
            events,
        });
    }

    /// Every violation flagged, in the order flagged.
    pub fn into_violations(self) -> Vec<Violation> {
        self.0
    }
}
