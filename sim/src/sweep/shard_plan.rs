//! The shard plan: the exact commands that run one sweep as N shards on N
//! machines, and the `sim merge` that combines them. The checked-in CI
//! workflow and Kubernetes Job run these commands, and a test holds them
//! to it.

use super::summary::Sweep;
use crate::search::Shard;

/// Failures a sweep shrinks unless told otherwise (`--shrink-max`).
pub const DEFAULT_SHRINK_MAX: u64 = 20;

/// The most shards a plan holds.
pub const SHARDS_MAX: u64 = 10_000;

/// A sweep as a shard plan repeats it on every line: what it sweeps and
/// the flags that do not change what it finds.
#[derive(Debug, Clone)]
pub struct PlannedSweep {
    /// What is swept.
    pub sweep: Sweep,
    /// `--jobs` of each shard.
    pub jobs: usize,
    /// `--quiet` on each shard.
    pub quiet: bool,
    /// `--force` on each shard.
    pub force: bool,
}

impl PlannedSweep {
    /// The plan's lines: three comment lines, a command per shard, then
    /// the merge; refused when `shards` is not 1 to the seeds (at most
    /// [`SHARDS_MAX`]).
    pub fn lines(&self, shards: u64) -> Result<Vec<String>, String> {
        let most = SHARDS_MAX.min(self.sweep.seeds);
        if !(1..=most).contains(&shards) {
            return Err(format!(
                "--print-shard-plan {shards}: need 1 to {most} shards for {} seeds",
                self.sweep.seeds
            ));
        }
        let sweep = self.words().join(" ");
        let mut lines = vec![
            format!(
                "# `sim explore {sweep}` as {shards} shards: run each line on its own machine,"
            ),
            "# in any order; collect the summaries in one folder and merge them there.".to_owned(),
            "# A shard that finds a violation exits 1 and still writes its summary.".to_owned(),
        ];
        let force = if self.force { " --force" } else { "" };
        let shard_list = (1..=shards).map(|index| Shard {
            index,
            count: shards,
        });
        let files: Vec<String> = shard_list.clone().map(Shard::summary_file).collect();
        for (shard, file) in shard_list.zip(&files) {
            lines.push(format!(
                "sim explore {sweep} --shard {shard} --summary {file}{force}"
            ));
        }
        lines.push(format!("sim merge {}", files.join(" ")));
        Ok(lines)
    }

    /// The sweep's own flags, in one fixed order, defaults left out.
    fn words(&self) -> Vec<String> {
        let sweep = &self.sweep;
        let mut words = Vec::new();
        let mut flag = |name: &str, value: Option<String>| {
            words.push(name.to_owned());
            words.extend(value);
        };
        if sweep.start != 0 {
            flag("--start", Some(sweep.start.to_string()));
        }
        flag("--seeds", Some(sweep.seeds.to_string()));
        if sweep.swarm {
            flag("--swarm", None);
        }
        if sweep.guided {
            flag("--guided", None);
        }
        if let Some(replicas) = sweep.replicas {
            flag("--replicas", Some(replicas.to_string()));
        }
        if let Some(flaw) = &sweep.flaw {
            flag("--flaw", Some(flaw.clone()));
        }
        if self.jobs != 1 {
            flag("--jobs", Some(self.jobs.to_string()));
        }
        if sweep.shrink_max != DEFAULT_SHRINK_MAX {
            flag("--shrink-max", Some(sweep.shrink_max.to_string()));
        }
        if self.quiet {
            flag("--quiet", None);
        }
        words
    }
}
