//! `sim explore --print-shard-plan N`: the exact commands that run one
//! sweep as N shards on N machines, and the `sim merge` that combines them.
//! The checked-in CI workflow and Kubernetes Job run these commands, and a
//! test holds them to it.

use crate::args::{DEFAULT_SHRINK_MAX, ExploreArgs};
use crate::output::say;

/// The most shards a plan prints.
const MAX_SHARDS: u64 = 10_000;

/// Prints the plan; runs nothing.
pub fn print_shard_plan(args: &ExploreArgs, shards: u64) -> Result<bool, String> {
    if !(1..=MAX_SHARDS.min(args.seeds)).contains(&shards) {
        return Err(format!(
            "--print-shard-plan {shards}: need 1 to {} shards for {} seeds",
            MAX_SHARDS.min(args.seeds),
            args.seeds
        ));
    }
    let conflicting = [
        ("--shard", args.shard != (1, 1)),
        ("--summary", args.summary.is_some()),
        ("--report", args.report.is_some()),
        ("--json", args.json),
    ];
    if let Some((flag, _)) = conflicting.iter().find(|(_, given)| *given) {
        return Err(format!(
            "--print-shard-plan: {flag} is not planned (each shard gets its own --shard and --summary)"
        ));
    }
    let sweep = sweep_words(args).join(" ");
    say!("# `sim explore {sweep}` as {shards} shards: run each line on its own machine,");
    say!("# in any order; collect the summaries in one folder and merge them there.");
    say!("# A shard that finds a violation exits 1 and still writes its summary.");
    let files: Vec<String> = (1..=shards).map(|i| summary_file(i, shards)).collect();
    for (index, file) in (1..=shards).zip(&files) {
        let force = if args.force { " --force" } else { "" };
        say!("sim explore {sweep} --shard {index}/{shards} --summary {file}{force}");
    }
    say!("sim merge {}", files.join(" "));
    Ok(true)
}

/// Shard `index`'s summary file.
pub fn summary_file(index: u64, shards: u64) -> String {
    format!("shard-{index}-of-{shards}.json")
}

/// The sweep's own flags, in one fixed order, defaults left out.
fn sweep_words(args: &ExploreArgs) -> Vec<String> {
    let mut words = Vec::new();
    let mut flag = |name: &str, value: Option<String>| {
        words.push(name.to_owned());
        words.extend(value);
    };
    if args.start != 0 {
        flag("--start", Some(args.start.to_string()));
    }
    flag("--seeds", Some(args.seeds.to_string()));
    if args.swarm {
        flag("--swarm", None);
    }
    if let Some(replicas) = args.replicas {
        flag("--replicas", Some(replicas.to_string()));
    }
    if let Some(flaw) = args.flaw {
        flag("--flaw", Some(flaw.name().to_owned()));
    }
    if args.jobs != 1 {
        flag("--jobs", Some(args.jobs.to_string()));
    }
    if args.shrink_max != DEFAULT_SHRINK_MAX {
        flag("--shrink-max", Some(args.shrink_max.to_string()));
    }
    if args.quiet {
        flag("--quiet", None);
    }
    words
}
