//! `sim explore --print-shard-plan N`: prints the library's shard plan
//! (`retention_sim::sweep::PlannedSweep`) for this sweep's flags.

use retention_sim::sweep::{PlannedSweep, Shard, Sweep};

use crate::args::ExploreArgs;
use crate::output::say;

/// Prints the plan; runs nothing.
pub fn print_shard_plan(args: &ExploreArgs, shards: u64) -> Result<bool, String> {
    let planned = PlannedSweep {
        sweep: Sweep {
            start: args.start,
            seeds: args.seeds,
            swarm: args.swarm || args.guided,
            guided: args.guided,
            replicas: args.replicas,
            flaw: args.flaw.map(|flaw| flaw.name().to_owned()),
            shrink_max: args.shrink_max,
        },
        jobs: args.jobs,
        quiet: args.quiet,
        force: args.force,
    };
    let lines = planned.lines(shards)?;
    let conflicting = [
        ("--shard", args.shard != Shard::ALL),
        ("--summary", args.summary.is_some()),
        ("--report", args.report.is_some()),
        ("--json", args.json),
    ];
    if let Some((flag, _)) = conflicting.iter().find(|(_, given)| *given) {
        return Err(format!(
            "--print-shard-plan: {flag} is not planned (each shard gets its own --shard and --summary)"
        ));
    }
    for line in lines {
        say!("{line}");
    }
    Ok(true)
}
