//! The runs a sweep's hints compare: its failing runs, from their tokens,
//! and a control of its passing runs, replayed from their seeds.

use super::summary::Summary;
use crate::model::{Flaw, RunSpec};
use crate::report::parse_token;
use crate::search::{ExploreConfig, PASSING_MAX, Shard, base_spec, spec_for};

/// What [`crate::search::hints`] needs from a summary.
pub struct HintPlans {
    /// Each failing run's plan and the clauses it violated.
    pub failing: Vec<(RunSpec, Vec<String>)>,
    /// The first passing runs of the sweep, in seed order.
    pub passing: Vec<RunSpec>,
    /// Every passing run of the sweep.
    pub passing_total: u64,
}

impl Summary {
    /// The plans the hints of this sweep replay; an error when its passing
    /// runs cannot be replayed (a guided campaign keeps only its failing
    /// plans) or a failure's token does not read.
    pub fn hint_plans(&self) -> Result<HintPlans, String> {
        if self.sweep.guided {
            return Err(
                "hints replay a sweep's passing runs from their seeds, and a guided \
                 campaign does not keep its passing plans: ask a swarm sweep for them"
                    .into(),
            );
        }
        let flaw = match &self.sweep.flaw {
            Some(name) => Some(Flaw::from_name(name).map_err(|error| error.to_string())?),
            None => None,
        };
        let config = ExploreConfig {
            seeds: self.sweep.seeds,
            start: self.sweep.start,
            jobs: 1,
            swarm: self.sweep.swarm,
            base: base_spec(self.sweep.replicas),
            replicas: self.sweep.replicas,
            flaw,
            shard: Shard::ALL,
            guided: false,
        };
        let failing = self
            .failures
            .iter()
            .map(|failure| {
                parse_token(failure.token.as_str())
                    .map(|spec| (spec, failure.clauses.clone()))
                    .map_err(|error| format!("failure of seed {}: {error}", failure.seed))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let failing_seeds: std::collections::BTreeSet<u64> =
            self.failures.iter().map(|failure| failure.seed).collect();
        let passing = (0..self.sweep.seeds)
            .filter(|&index| self.shards.ran(index))
            .map(|index| self.sweep.start + index)
            .filter(|seed| !failing_seeds.contains(seed))
            .take(PASSING_MAX)
            .map(|seed| spec_for(&config, seed))
            .collect();
        Ok(HintPlans {
            failing,
            passing,
            passing_total: self.runs - self.failed_runs,
        })
    }
}
