//! The summary document of a finished (or interrupted) sweep, from what
//! `explore` returned and the failures it shrank.

use std::collections::BTreeMap;

use super::summary::{
    Build, FORMAT, Failure, ShardPart, Shards, ShrunkPlan, Summary, Sweep, Token, VERSION,
};
use crate::model::RunSpec;
use crate::report::replay_token;
use crate::search::{ExploreConfig, ExploreSummary, Shrunk, peak_rss_mb};

impl Summary {
    /// The summary of the sweep `config` ran, `swept`, with the failures in
    /// `shrunk` at their smallest; `shrink_max` and `command` are recorded
    /// as given.
    pub fn of_sweep(
        config: &ExploreConfig,
        swept: &ExploreSummary,
        shrunk: &BTreeMap<u64, Shrunk>,
        shrink_max: u64,
        command: &str,
    ) -> Self {
        let token = |spec: &RunSpec| -> Token {
            Token::new(&serde_json::from_str(&replay_token(spec)).expect("a token is JSON"))
        };
        let failures = swept
            .failures
            .iter()
            .map(|failure| Failure {
                seed: failure.seed,
                clauses: failure.clauses.iter().map(|c| (*c).to_owned()).collect(),
                token: token(&swept.plan(config, failure.seed)),
                shrunk: shrunk.get(&failure.seed).map(|s| ShrunkPlan {
                    clause: s.clause.to_owned(),
                    token: token(&s.spec),
                    size_before: s.size_before as u64,
                    size_after: s.size_after as u64,
                    runs: s.runs as u64,
                }),
            })
            .collect();
        Self {
            format: FORMAT.to_owned(),
            version: VERSION,
            build: Build::current(),
            command: command.to_owned(),
            sweep: Sweep {
                start: config.start,
                seeds: config.seeds,
                swarm: config.swarm,
                guided: !swept.plans.is_empty() || config.guided,
                replicas: config.replicas,
                flaw: config.flaw.map(|flaw| flaw.name().to_owned()),
                shrink_max,
            },
            shards: Shards {
                count: config.shard.count,
                held: vec![ShardPart {
                    index: config.shard.index,
                    visited: swept.visited,
                }],
            },
            partial: swept.visited < config.seeds,
            runs: swept.runs,
            failed_runs: swept.failed_runs,
            violations: swept.violations,
            violations_by_clause: swept.violations_by_clause.clone(),
            coverage: swept
                .coverage
                .iter()
                .map(|(probe, count)| ((*probe).to_owned(), *count))
                .collect(),
            wall_secs: swept.wall_secs,
            simulated_secs: swept.simulated_secs,
            runs_per_sec: swept.runs_per_sec(),
            sim_to_wall_ratio: swept.sim_to_wall_ratio(),
            peak_rss_mb: peak_rss_mb(),
            failures,
        }
    }
}
