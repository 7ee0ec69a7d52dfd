//! How findable a failure was, and so how many clean runs a fix needs: a
//! failure a sweep drew in k of its R runs has an observed rate p = k / R,
//! and a fix is credible at 95 % only after n = ln 0.05 / ln(1 - p) clean
//! runs of the same sweep (each run would have failed with chance p had the
//! bug stayed).

use std::collections::BTreeMap;

use serde::Serialize;

use super::summary::Summary;

/// The confidence a "fixed" is held to.
pub const CONFIDENCE: f64 = 0.95;

/// One failing clause's findability in a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Findability {
    /// The clause the failures violated first (the one a shrink keeps).
    pub clause: String,
    /// Failing runs whose first clause it is.
    pub failures: u64,
    /// Runs that could have drawn it: every run of the sweep.
    pub runs: u64,
    /// `failures / runs`.
    pub rate: f64,
    /// Clean runs of the same sweep before a fix is credible.
    pub clean_runs_needed: u64,
}

/// Runs without the failure needed before its absence is evidence at
/// [`CONFIDENCE`], for a failure seen at `rate` per run: the smallest n
/// with (1 - rate)^n <= 1 - CONFIDENCE.
pub fn clean_runs_needed(rate: f64) -> u64 {
    if rate >= 1.0 {
        return 1;
    }
    if rate <= 0.0 || !rate.is_finite() {
        return u64::MAX;
    }
    let n = ((1.0 - CONFIDENCE).ln() / (1.0 - rate).ln()).ceil();
    if n >= u64::MAX as f64 {
        u64::MAX
    } else {
        (n as u64).max(1)
    }
}

/// Each failing clause's findability, by clause; `None` for a guided
/// campaign, whose runs are chosen from each other and so give no rate.
pub fn findability(summary: &Summary) -> Option<BTreeMap<String, Findability>> {
    if summary.sweep.guided || summary.runs == 0 {
        return None;
    }
    let mut by_clause: BTreeMap<String, u64> = BTreeMap::new();
    for failure in &summary.failures {
        if let Some(first) = failure.clauses.first() {
            *by_clause.entry(first.clone()).or_default() += 1;
        }
    }
    let runs = summary.runs;
    Some(
        by_clause
            .into_iter()
            .map(|(clause, failures)| {
                let rate = failures as f64 / runs as f64;
                let figure = Findability {
                    clause: clause.clone(),
                    failures,
                    runs,
                    rate,
                    clean_runs_needed: clean_runs_needed(rate),
                };
                (clause, figure)
            })
            .collect(),
    )
}
