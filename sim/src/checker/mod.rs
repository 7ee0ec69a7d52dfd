//! The checker: judges a [`History`] against every clause of the contract,
//! plus data safety and liveness (`replica_clauses.rs`, `service.rs`, with each
//! replica's clock rebuilt by `clocks.rs`), and counts the situations it
//! reached (`coverage.rs`). Uses only `model`, so
//! histories recorded from real runs are checked the same way.

mod clock_probes;
mod clocks;
mod coverage;
mod db_probes;
mod findings;
mod replica_clauses;
mod service;

pub use coverage::{PROBES, coverage};
pub use findings::Violation;

use findings::Findings;

use crate::model::History;

/// Every clause the checker checks, in report order: `worker/CONTRACT.md`'s
/// clauses, then data safety (DATA-*), report honesty (RPT-1) and liveness
/// (LIVE-*).
pub const CLAUSES: &[(&str, &str)] = &[
    (
        "ACQ-1",
        "no renew, delete or release before a granted acquire",
    ),
    ("REN-1", "renewals of one worker never overlap"),
    (
        "REN-2",
        "each renewal sends the newest lease; tokens only grow",
    ),
    (
        "REN-3",
        "no delete or renewal after a null or failed renewal",
    ),
    (
        "FEN-1",
        "each delete carries the newest token the worker holds",
    ),
    (
        "FEN-2",
        "the database deletes only under the current unexpired token",
    ),
    ("CUT-1", "one cutoff per term, captured after acquiring"),
    (
        "CAP-1",
        "batches of at most 200 and the allowance; at most 1,000 rows a term",
    ),
    (
        "REL-1",
        "release sends the newest lease, only after acquiring",
    ),
    ("REL-2", "release clears only the exact current lease"),
    ("REL-3", "every exit that may hold leadership releases it"),
    ("STP-1", "no acquire, renew or delete begins after stop()"),
    ("STP-2", "stop() ends renewal scheduling"),
    ("STP-3", "stop() awaits calls in flight"),
    (
        "STP-4",
        "stop() releases held leadership, even from a racing acquire",
    ),
    ("STP-5", "stop() resolves only after run() has settled"),
    ("STP-6", "a run after stop() calls nothing"),
    ("DATA-1", "no row newer than its term's cutoff is deleted"),
    ("DATA-2", "no row is deleted twice"),
    ("DATA-3", "deleted counts match the database"),
    (
        "DATA-4",
        "no row goes before its retention by the database's clock",
    ),
    ("RPT-1", "a term's report matches its history"),
    ("LIVE-1", "without faults, the backlog drains"),
    ("LIVE-2", "every stop() resolves within a bounded time"),
    (
        "LIVE-3",
        "no replica spins while simulated time stands still",
    ),
    ("LIVE-4", "no replica's worker panics"),
];

/// The checker's findings for one history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The run's seed.
    pub seed: u64,
    /// Every violation found, ordered by clause then by first event.
    pub violations: Vec<Violation>,
}

impl Verdict {
    /// Whether the history satisfies every clause.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The clauses violated, each once, in the order first violated.
    pub fn clauses(&self) -> Vec<&'static str> {
        let mut seen: Vec<&'static str> = Vec::new();
        for violation in &self.violations {
            if !seen.contains(&violation.clause) {
                seen.push(violation.clause);
            }
        }
        seen
    }

    /// A line per clause: `ok` or the number of violations.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for (clause, meaning) in CLAUSES {
            let count = self
                .violations
                .iter()
                .filter(|v| v.clause == *clause)
                .count();
            let status = if count == 0 {
                "ok".to_owned()
            } else {
                format!("VIOLATED x{count}")
            };
            out.push_str(&format!("{clause:<7} {status:<13} {meaning}\n"));
        }
        out
    }
}

/// Checks `history` and reports every violation.
pub fn check(history: &History) -> Verdict {
    let mut found = Findings::default();
    replica_clauses::check(history, &mut found);
    replica_clauses::check_spins(history, &mut found);
    service::check(history, &mut found);
    let mut violations = found.into_violations();
    let rank = |clause: &str| CLAUSES.iter().position(|(id, _)| *id == clause);
    violations.sort_by(|a, b| (rank(a.clause), &a.events).cmp(&(rank(b.clause), &b.events)));
    for violation in &violations {
        assert!(
            rank(violation.clause).is_some(),
            "unlisted clause {}",
            violation.clause
        );
    }
    Verdict {
        seed: history.header.seed,
        violations,
    }
}
