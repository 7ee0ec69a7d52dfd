//! Triage: a sweep's failures against a baseline's, keyed by clause and
//! shrunk plan (not by seed), sorted into new, still failing and fixed.

use std::collections::{BTreeMap, BTreeSet};

use super::summary::{Failure, Summary};

/// The sweep's failures sorted against the baseline's.
#[derive(Debug, Clone, PartialEq)]
pub struct Triage {
    /// Distinct failures (lowest seed of each) the baseline did not have.
    pub new: Vec<Failure>,
    /// Distinct failures both have (this sweep's lowest seed of each).
    pub still_failing: Vec<Failure>,
    /// The baseline's distinct failures this sweep does not have.
    pub fixed: Vec<Failure>,
    /// For each of `fixed`, in order: whether this sweep ran enough clean
    /// runs for the fix to be credible at 95 %, given the rate the
    /// baseline drew its clause at (`None` when the baseline gives no rate:
    /// a guided campaign's).
    pub fixed_credible: Vec<Option<Credible>>,
    /// Failures not shrunk (beyond `--shrink-max`): they have no plan to key.
    pub untriaged: u64,
    /// Clauses violated only by untriaged failures, and not in the baseline.
    pub new_untriaged_clauses: Vec<String>,
    /// Why the baseline is not this sweep's own, when it is not: then
    /// "new" may mean only "not drawn there", "fixed" only "not drawn here".
    pub caveat: Option<String>,
}

impl Triage {
    /// Whether the sweep broke anything the baseline did not.
    pub fn any_new(&self) -> bool {
        !self.new.is_empty() || !self.new_untriaged_clauses.is_empty()
    }

    /// The triage as JSON (`merge --json --baseline`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "new": self.new,
            "still_failing": self.still_failing,
            "fixed": self.fixed,
            "fixed_credible": self.fixed_credible,
            "untriaged": self.untriaged,
            "new_untriaged_clauses": self.new_untriaged_clauses,
            "caveat": self.caveat,
        })
    }
}

/// Whether a fix is backed by enough clean runs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Credible {
    /// The rate the baseline drew the failure's clause at.
    pub baseline_rate: f64,
    /// Clean runs a fix needs at that rate.
    pub clean_runs_needed: u64,
    /// Runs this sweep made.
    pub runs: u64,
    /// `runs >= clean_runs_needed`.
    pub enough: bool,
}

/// Each distinct shrunk failure once: its lowest seed, keyed by signature.
pub fn distinct(summary: &Summary) -> BTreeMap<String, &Failure> {
    let mut by_signature = BTreeMap::new();
    for failure in &summary.failures {
        if let Some(signature) = failure.signature() {
            by_signature.entry(signature).or_insert(failure);
        }
    }
    by_signature
}

/// Sorts `current`'s failures against `baseline`'s.
pub fn triage(current: &Summary, baseline: &Summary) -> Triage {
    let (now, before) = (distinct(current), distinct(baseline));
    let pick = |from: &BTreeMap<String, &Failure>, keep: &dyn Fn(&String) -> bool| {
        let mut chosen: Vec<Failure> = from
            .iter()
            .filter(|(signature, _)| keep(signature))
            .map(|(_, failure)| (*failure).clone())
            .collect();
        chosen.sort_by_key(|failure| failure.seed);
        chosen
    };
    let untriaged: Vec<&Failure> = current
        .failures
        .iter()
        .filter(|f| f.shrunk.is_none())
        .collect();
    let triaged_clauses: BTreeSet<&String> = current
        .failures
        .iter()
        .filter(|f| f.shrunk.is_some())
        .flat_map(|f| &f.clauses)
        .collect();
    let untriaged_clauses: BTreeSet<String> = untriaged
        .iter()
        .flat_map(|f| f.clauses.iter())
        .filter(|clause| !triaged_clauses.contains(clause))
        .filter(|clause| !baseline.violations_by_clause.contains_key(*clause))
        .cloned()
        .collect();
    let fixed = pick(&before, &|s| !now.contains_key(s));
    let rates = super::findability::findability(baseline);
    let fixed_credible = fixed
        .iter()
        .map(|failure| {
            let figure = rates.as_ref()?.get(failure.clauses.first()?)?;
            Some(Credible {
                baseline_rate: figure.rate,
                clean_runs_needed: figure.clean_runs_needed,
                runs: current.runs,
                enough: current.runs >= figure.clean_runs_needed,
            })
        })
        .collect();
    Triage {
        new: pick(&now, &|s| !before.contains_key(s)),
        still_failing: pick(&now, &|s| before.contains_key(s)),
        fixed,
        fixed_credible,
        untriaged: untriaged.len() as u64,
        new_untriaged_clauses: untriaged_clauses.into_iter().collect(),
        caveat: caveat(current, baseline),
    }
}

/// Whether `baseline` ran what `current` ran: the same sweep, and every
/// seed `current` ran.
fn caveat(current: &Summary, baseline: &Summary) -> Option<String> {
    if baseline.sweep != current.sweep {
        let (a, b) = (&baseline.sweep, &current.sweep);
        let differs: Vec<&str> = [
            ("seeds", a.start != b.start || a.seeds != b.seeds),
            ("swarm", a.swarm != b.swarm),
            ("replicas", a.replicas != b.replicas),
            ("flaw", a.flaw != b.flaw),
            ("shrink_max", a.shrink_max != b.shrink_max),
        ]
        .into_iter()
        .filter_map(|(field, differs)| differs.then_some(field))
        .collect();
        return Some(format!(
            "the baseline swept other {}: \"new\" may mean only \"not drawn there\", \
             \"fixed\" only \"not drawn here\"",
            differs.join(", ")
        ));
    }
    // Same sweep: did the baseline run every seed this one ran? Seed
    // index i (from the range's start) ran in a summary when a shard it
    // holds owns i (i mod count) and visited past it.
    let both = (current.shards.held.iter())
        .flat_map(|part| current.shards.shard(part).indices(part.visited))
        .filter(|&i| baseline.shards.ran(i))
        .count() as u64;
    (both < current.runs).then(|| {
        format!(
            "the baseline ran {both} of the {} seeds this sweep ran (shards {} of {}): a \
             failure at a seed it never ran counts as new",
            current.runs,
            shard_list(baseline),
            baseline.shards.count
        )
    })
}

fn shard_list(summary: &Summary) -> String {
    let held: Vec<String> = summary
        .shards
        .held
        .iter()
        .map(|p| p.index.to_string())
        .collect();
    held.join(", ")
}
