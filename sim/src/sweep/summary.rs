//! A sweep's summary as one versioned JSON document: what `explore --json`
//! prints and `--summary` writes, and what `merge` reads, checks and adds up.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::search::Shard;

/// The `format` every summary names, so any other JSON is refused.
pub const FORMAT: &str = "retention-sim sweep summary";
/// The one version this build reads and writes.
pub const VERSION: u32 = 1;

/// The whole document. Field order is the printed order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
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
    /// Runs completed.
    pub runs: u64,
    /// Runs with at least one violation.
    pub failed_runs: u64,
    /// Violations over all runs.
    pub violations: u64,
    /// Violations by clause ID.
    pub violations_by_clause: BTreeMap<String, u64>,
    /// How often each coverage probe was reached, over all runs.
    pub coverage: BTreeMap<String, u64>,
    /// Wall-clock seconds, summed over shards (each shard's own machine).
    pub wall_secs: f64,
    /// Simulated seconds over all runs.
    pub simulated_secs: f64,
    /// Runs per wall-clock second.
    pub runs_per_sec: f64,
    /// Simulated time over wall-clock time.
    pub sim_to_wall_ratio: f64,
    /// The largest peak resident memory of any shard's process, in MiB.
    pub peak_rss_mb: Option<f64>,
    /// Every failing run, lowest seed first.
    pub failures: Vec<Failure>,
}

impl Summary {
    /// How many of the failures carry their shrunk plan.
    pub fn shrunk_failures(&self) -> usize {
        self.failures.iter().filter(|f| f.shrunk.is_some()).count()
    }
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
    /// The first seed of the range.
    pub start: u64,
    /// How many seeds the range holds.
    pub seeds: u64,
    /// Whether each seed drew its own faults and settings.
    pub swarm: bool,
    /// Whether the runs were a guided campaign's (`explore --guided`):
    /// then the seeds number the runs, the first is the campaign's seed,
    /// and each failure's plan is its token alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guided: bool,
    /// The replica count, when the sweep fixed it.
    pub replicas: Option<u32>,
    /// The flaw the variant ran with, by name; none for the real worker.
    pub flaw: Option<String>,
    /// Failures shrunk per shard, lowest seeds first.
    pub shrink_max: u64,
}

/// Shards of `count`, each with the seeds it visited from the range's start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shards {
    /// How many shards split the sweep.
    pub count: u64,
    /// The shards this document holds.
    pub held: Vec<ShardPart>,
}

/// One shard: 1-based `index`, and how many seeds of the range it visited
/// (all of them unless interrupted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardPart {
    /// Which shard, 1-based.
    pub index: u64,
    /// Seeds of the range visited, from its start.
    pub visited: u64,
}

/// One failing run: the plan as drawn and, when shrunk, at its smallest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    /// The failing seed.
    pub seed: u64,
    /// Each violated clause once, in the order found; the first is shrunk.
    pub clauses: Vec<String>,
    /// The replay token of the run as drawn.
    pub token: Token,
    /// The smallest plan found, when the failure was shrunk.
    pub shrunk: Option<ShrunkPlan>,
}

/// A failure's smallest plan that still violates its first clause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShrunkPlan {
    /// The clause the shrink kept violated.
    pub clause: String,
    /// The replay token of the smallest plan.
    pub token: Token,
    /// The plan's size as drawn.
    pub size_before: u64,
    /// The plan's size once shrunk.
    pub size_after: u64,
    /// Runs the shrink took.
    pub runs: u64,
}

impl Failure {
    /// The token to replay: the shrunk one when there is one.
    pub fn best_token(&self) -> &Token {
        self.shrunk
            .as_ref()
            .map_or(&self.token, |shrunk| &shrunk.token)
    }

    /// What triage keys a failure by: the shrunk plan's clause and plan
    /// without its seed (a shrink may move to a nearby seed). A failure not
    /// shrunk has none.
    pub fn signature(&self) -> Option<String> {
        let shrunk = self.shrunk.as_ref()?;
        let mut plan = shrunk.token.value();
        if let Value::Object(map) = &mut plan {
            map.remove("seed");
        }
        Some(format!("{} {plan}", shrunk.clause))
    }
}

/// A replay token held as its compact JSON text, keys sorted as a
/// [`Value`] prints them; it reads and writes as the JSON object itself.
/// A swarm plan as a `Value` tree takes several times its text, and a
/// summary may list a million failures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// The token of a JSON value.
    pub fn new(value: &Value) -> Self {
        Self(value.to_string())
    }

    /// The compact JSON text: what `replay` takes.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The token as a JSON value, parsed again.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.0).expect("a token's text is the JSON it was made from")
    }
}

/// Prints [`Token::as_str`].
impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Token {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Token {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|value| Self::new(&value))
    }
}

impl Shards {
    /// The [`Shard`] a held part is.
    pub fn shard(&self, part: &ShardPart) -> Shard {
        Shard {
            index: part.index,
            count: self.count,
        }
    }

    /// Whether the seed at `seed_index` (from the range's start) ran in a
    /// shard held here: one that owns it and visited past it.
    pub fn ran(&self, seed_index: u64) -> bool {
        self.held
            .iter()
            .any(|part| seed_index < part.visited && self.shard(part).contains(seed_index))
    }
}

impl Summary {
    /// The document as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a summary serialises")
    }
}
