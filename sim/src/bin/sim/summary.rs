//! A sweep's summary as one versioned JSON document: what `explore --json`
//! prints and `--summary` writes, and what `merge` reads, checks and adds up.

use std::collections::BTreeMap;
use std::path::Path;

use retention_sim::report::{HISTORY_LIMIT_BYTES, read_text};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `format` every summary names, so any other JSON is refused.
pub const FORMAT: &str = "retention-sim sweep summary";
/// The one version this build reads and writes.
pub const VERSION: u32 = 1;

/// The whole document. Field order is the printed order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub format: String,
    pub version: u32,
    /// The build that ran the sweep: summaries of two builds never merge.
    pub build: Build,
    /// The command line that produced the document.
    pub command: String,
    /// What was swept: every shard of one sweep has the same.
    pub sweep: Sweep,
    /// Which shards of the sweep the document holds, and how far each got.
    pub shards: Shards,
    /// True when a shard stopped early (interrupted) or is missing.
    pub partial: bool,
    pub runs: u64,
    pub failed_runs: u64,
    pub violations: u64,
    pub violations_by_clause: BTreeMap<String, u64>,
    /// How often each coverage probe was reached, over all runs.
    pub coverage: BTreeMap<String, u64>,
    /// Wall-clock seconds, summed over shards (each shard's own machine).
    pub wall_secs: f64,
    pub simulated_secs: f64,
    pub runs_per_sec: f64,
    pub sim_to_wall_ratio: f64,
    /// The largest peak resident memory of any shard's process, in MiB.
    pub peak_rss_mb: Option<f64>,
    /// Every failing run, lowest seed first.
    pub failures: Vec<Failure>,
}

/// Where the summary came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Build {
    /// The `sim` crate's version.
    pub version: String,
    /// FNV-1a hash of the workspace's sources (see `sim/build.rs`).
    pub source_hash: String,
}

impl Build {
    /// This binary's.
    pub fn current() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            source_hash: env!("SIM_SOURCE_HASH").to_owned(),
        }
    }
}

/// The seeds and the plan every seed gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    pub start: u64,
    pub seeds: u64,
    pub swarm: bool,
    pub replicas: Option<u32>,
    pub flaw: Option<String>,
    /// Failures shrunk per shard, lowest seeds first.
    pub shrink_max: u64,
}

/// Shards of `count`, each with the seeds it visited from the range's start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shards {
    pub count: u64,
    pub held: Vec<ShardPart>,
}

/// One shard: 1-based `index`, and how many seeds of the range it visited
/// (all of them unless interrupted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardPart {
    pub index: u64,
    pub visited: u64,
}

/// One failing run: the plan as drawn and, when shrunk, at its smallest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    pub seed: u64,
    /// Each violated clause once, in the order found; the first is shrunk.
    pub clauses: Vec<String>,
    /// The replay token of the run as drawn.
    pub token: Value,
    pub shrunk: Option<ShrunkPlan>,
}

/// A failure's smallest plan that still violates its first clause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShrunkPlan {
    pub clause: String,
    pub token: Value,
    pub size_before: u64,
    pub size_after: u64,
    pub runs: u64,
}

impl Failure {
    /// The token to replay: the shrunk one when there is one.
    pub fn best_token(&self) -> &Value {
        self.shrunk
            .as_ref()
            .map_or(&self.token, |shrunk| &shrunk.token)
    }

    /// What triage keys a failure by: the shrunk plan's clause and plan
    /// without its seed (a shrink may move to a nearby seed). A failure not
    /// shrunk has none.
    pub fn signature(&self) -> Option<String> {
        let shrunk = self.shrunk.as_ref()?;
        let mut plan = shrunk.token.clone();
        if let Value::Object(map) = &mut plan {
            map.remove("seed");
        }
        Some(format!("{} {plan}", shrunk.clause))
    }
}

/// Seeds of `0..visited` (indices from the range's start) in shard
/// `index` of `count`.
pub fn seeds_in_shard(index: u64, count: u64, visited: u64) -> u64 {
    let offset = index - 1;
    if visited <= offset {
        0
    } else {
        (visited - offset).div_ceil(count)
    }
}

impl Summary {
    /// The document as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a summary serialises")
    }

    /// Reads a summary, refusing anything that is not one of this version
    /// or whose counts do not add up; errors name the file and the field.
    pub fn load(path: &Path) -> Result<Self, String> {
        let where_ = path.display();
        // A summary holds a line per failure: a few MB for the largest
        // sweeps; anything past the history limit is not one.
        let text = read_text(path, HISTORY_LIMIT_BYTES).map_err(|error| match error.line {
            Some(line) => format!("{where_}:{line}: {}", error.problem),
            None => format!("{where_}: {}", error.problem),
        })?;
        let value: Value =
            serde_json::from_str(&text).map_err(|error| format!("{where_}: {error}"))?;
        match value.get("format").and_then(Value::as_str) {
            Some(FORMAT) => {}
            _ => {
                return Err(format!(
                    "{where_}: not a sweep summary (no \"format\": \"{FORMAT}\")"
                ));
            }
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(version) if version == u64::from(VERSION) => {}
            other => {
                return Err(format!(
                    "{where_}: version: {}; this sim reads version {VERSION} only",
                    other.map_or("missing".to_owned(), |v| v.to_string())
                ));
            }
        }
        let summary: Self =
            serde_json::from_str(&text).map_err(|error| format!("{where_}: {error}"))?;
        summary
            .consistent()
            .and_then(|()| crate::summary_checks::plausible(&summary))
            .map_err(|problem| format!("{where_}: {problem}"))?;
        Ok(summary)
    }

    /// Whether the counts agree with each other and with the shards held.
    pub fn consistent(&self) -> Result<(), String> {
        let shards = &self.shards;
        if shards.count == 0 || shards.held.is_empty() {
            return Err("shards: holds no shard".into());
        }
        let mut expected_runs: u64 = 0;
        // Each shard's runs are at most the sweep's seeds, and the shards
        // are distinct: the sum cannot pass the seeds, let alone 2^64.
        for (at, part) in shards.held.iter().enumerate() {
            if !(1..=shards.count).contains(&part.index) || part.visited > self.sweep.seeds {
                return Err(format!(
                    "shards.held[{at}]: shard {}/{} visiting {} of {} seeds is impossible",
                    part.index, shards.count, part.visited, self.sweep.seeds
                ));
            }
            if shards.held[..at].iter().any(|p| p.index == part.index) {
                return Err(format!(
                    "shards.held[{at}]: shard {} is held twice",
                    part.index
                ));
            }
            expected_runs += seeds_in_shard(part.index, shards.count, part.visited);
        }
        if self.runs != expected_runs {
            return Err(format!(
                "runs: {} but the shards held ran {expected_runs} seeds",
                self.runs
            ));
        }
        if self.failed_runs != self.failures.len() as u64 || self.failed_runs > self.runs {
            return Err(format!(
                "failed_runs: {} but {} failures are listed (of {} runs)",
                self.failed_runs,
                self.failures.len(),
                self.runs
            ));
        }
        let by_clause = self
            .violations_by_clause
            .values()
            .try_fold(0u64, |sum, count| sum.checked_add(*count));
        if by_clause != Some(self.violations) {
            return Err(format!(
                "violations: {} but violations_by_clause adds up to {}",
                self.violations,
                by_clause.map_or("more than 2^64 - 1".to_owned(), |sum| sum.to_string())
            ));
        }
        for (at, failure) in self.failures.iter().enumerate() {
            let index = failure.seed.wrapping_sub(self.sweep.start);
            let held = shards
                .held
                .iter()
                .any(|part| index < part.visited && index % shards.count == part.index - 1);
            if !held || failure.clauses.is_empty() {
                return Err(format!(
                    "failures[{at}]: seed {} is not a run of the shards held, or names no clause",
                    failure.seed
                ));
            }
            if at > 0 && self.failures[at - 1].seed >= failure.seed {
                return Err(format!(
                    "failures[{at}]: seeds must rise (seed {})",
                    failure.seed
                ));
            }
        }
        Ok(())
    }
}
