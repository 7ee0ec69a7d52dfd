//! Which conditions a failure needs: the probes, abstract states and
//! sequences most over-represented in a sweep's failing runs against its
//! passing ones, ranked by the chance a run that reached one failed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use super::guided::{Feature, describe, feedback};
use crate::checker::coverage;
use crate::model::RunSpec;
use crate::subject::Sim;

/// Failing runs replayed per clause, at most: enough to see what they
/// share, few enough that hints take seconds.
pub const FAILING_MAX: usize = 500;

/// Passing runs replayed as the control, at most.
pub const PASSING_MAX: usize = 2_000;

/// A condition's share of one clause's failures.
#[derive(Debug, Clone, Serialize)]
pub struct Hint {
    /// The condition, in words (a probe, a state, a sequence).
    pub condition: String,
    /// Failing runs (of this clause) that reached it.
    pub failing_runs: u64,
    /// Passing runs of the control that reached it.
    pub passing_runs: u64,
    /// The estimated chance that a run of the sweep that reached it
    /// violated the clause: failing hits over failing hits plus passing
    /// hits scaled from the control to every passing run.
    pub fail_given_hit: f64,
}

/// The hints for one clause.
#[derive(Debug, Clone, Serialize)]
pub struct ClauseHints {
    /// The clause the failing runs violated.
    pub clause: String,
    /// Failing runs replayed.
    pub failing_runs: u64,
    /// The chance any run of the sweep violated it.
    pub base_rate: f64,
    /// The conditions reached by at least half the failing runs, most
    /// telling first.
    pub hints: Vec<Hint>,
}

/// The hints for each clause violated among `failing` (each run's plan
/// and the clauses it violated), against the control `passing`, a sample
/// of `passing_total` passing runs; at most `top` conditions a clause.
/// Replays every plan on up to `jobs` threads.
pub fn hints(
    failing: &[(RunSpec, Vec<String>)],
    passing: &[RunSpec],
    passing_total: u64,
    top: usize,
    jobs: usize,
) -> Vec<ClauseHints> {
    // Each clause's failing runs, by their place in `failing`; a run that
    // broke several clauses is replayed once.
    let mut by_clause: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, (_, clauses)) in failing.iter().enumerate() {
        for clause in clauses {
            let runs = by_clause.entry(clause).or_default();
            if runs.len() < FAILING_MAX {
                runs.push(index);
            }
        }
    }
    let replayed: BTreeSet<usize> = by_clause.values().flatten().copied().collect();
    let failing_specs: Vec<&RunSpec> = replayed.iter().map(|&index| &failing[index].0).collect();
    let features_of: BTreeMap<usize, BTreeSet<Feature>> = replayed
        .iter()
        .copied()
        .zip(reach(&failing_specs, jobs))
        .collect();
    let control: Vec<&RunSpec> = passing.iter().take(PASSING_MAX).collect();
    let reached_passing = reach(&control, jobs);
    let mut passing_hits: BTreeMap<Feature, u64> = BTreeMap::new();
    for features in &reached_passing {
        for &feature in features {
            *passing_hits.entry(feature).or_default() += 1;
        }
    }
    // Passing hits in the control stand for this many passing runs each.
    let scale = passing_total as f64 / control.len().max(1) as f64;
    let all_failing = failing.len() as u64;
    by_clause
        .into_iter()
        .map(|(clause, runs)| {
            let mut failing_hits: BTreeMap<Feature, u64> = BTreeMap::new();
            for index in &runs {
                for &feature in &features_of[index] {
                    *failing_hits.entry(feature).or_default() += 1;
                }
            }
            let failing_runs = runs.len() as u64;
            let support = failing_runs.div_ceil(2);
            let mut hints: Vec<Hint> = failing_hits
                .into_iter()
                .filter(|&(_, hits)| hits >= support)
                .filter_map(|(feature, hits)| {
                    let passing_runs = passing_hits.get(&feature).copied().unwrap_or(0);
                    let fail_given_hit = hits as f64 / (hits as f64 + passing_runs as f64 * scale);
                    Some(Hint {
                        condition: describe(feature)?,
                        failing_runs: hits,
                        passing_runs,
                        fail_given_hit,
                    })
                })
                .collect();
            hints.sort_by(|a, b| {
                b.fail_given_hit
                    .total_cmp(&a.fail_given_hit)
                    .then(b.failing_runs.cmp(&a.failing_runs))
                    .then(a.condition.cmp(&b.condition))
            });
            hints.truncate(top);
            ClauseHints {
                clause: clause.to_owned(),
                failing_runs,
                base_rate: failing_runs as f64 / (all_failing + passing_total).max(1) as f64,
                hints,
            }
        })
        .collect()
}

/// Each plan's features, in the plans' order.
fn reach(specs: &[&RunSpec], jobs: usize) -> Vec<BTreeSet<Feature>> {
    let next = AtomicUsize::new(0);
    let done = Mutex::new(vec![BTreeSet::new(); specs.len()]);
    let work = || {
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(spec) = specs.get(index) else {
                return;
            };
            let history = Sim::new(spec).run().expect("a replayed plan is valid");
            let features: BTreeSet<Feature> = feedback(&history, &coverage(&history))
                .features
                .into_keys()
                .collect();
            done.lock().expect("no panic while replaying")[index] = features;
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, specs.len().max(1)) {
            scope.spawn(work);
        }
    });
    done.into_inner().expect("no panic while replaying")
}
