//! Merging shard summaries into the summary of the whole sweep: refuses
//! summaries of different builds or sweeps and overlapping shards, naming
//! the field, and says which shards none holds.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;
use std::path::Path;

use super::summary::Summary;

/// The summary of every shard in `parts`, and the shards none holds, as
/// runs of consecutive indices (so a count of 2^64 - 1 costs what the
/// summaries hold, not a list of every index). The parts are taken, not
/// copied: their failures move into the merged summary.
pub fn merge(
    parts: Vec<(&Path, Summary)>,
    command: &str,
) -> Result<(Summary, Vec<RangeInclusive<u64>>), String> {
    let mut parts = parts.into_iter();
    let (first_path, mut merged) = parts.next().ok_or("no summary to merge")?;
    merged.command = command.to_owned();
    // Which summary holds each shard so far: one look-up per shard.
    let mut holders: BTreeMap<u64, &Path> = BTreeMap::new();
    for shard in &merged.shards.held {
        holders.insert(shard.index, first_path);
    }
    let mut added = vec![first_path.display().to_string()];
    for (path, part) in parts {
        // Adding never changes the build, the sweep or the shard count:
        // the merged summary still has the first part's.
        same_sweep((first_path, &merged), (path, &part))?;
        for shard in &part.shards.held {
            if let Some(holder) = holders.insert(shard.index, path) {
                return Err(format!(
                    "shard {}/{} is in both {} and {}: a shard is merged once",
                    shard.index,
                    part.shards.count,
                    holder.display(),
                    path.display()
                ));
            }
        }
        added.push(path.display().to_string());
        add(&mut merged, part).map_err(|field| {
            let limit = if field.ends_with("_secs") {
                "the largest finite number"
            } else {
                "2^64 - 1"
            };
            format!(
                "{field}: the summaries' counts add up past {limit} ({}); one is damaged",
                added.join(" + ")
            )
        })?;
    }
    merged.shards.held.sort_by_key(|shard| shard.index);
    merged.failures.sort_by_key(|failure| failure.seed);
    merged.partial = merged
        .shards
        .held
        .iter()
        .any(|s| s.visited < merged.sweep.seeds);
    merged.runs_per_sec = merged.runs as f64 / merged.wall_secs.max(1e-9);
    merged.sim_to_wall_ratio = merged.simulated_secs / merged.wall_secs.max(1e-9);
    merged
        .consistent()
        .expect("a merge of consistent, disjoint shards is consistent");
    let held: BTreeSet<u64> = merged.shards.held.iter().map(|s| s.index).collect();
    let mut missing = Vec::new();
    // The first index not yet known held or missing; none past 2^64 - 1.
    let mut from = Some(1_u64);
    for &index in &held {
        if let Some(first) = from
            && index > first
        {
            missing.push(first..=index - 1);
        }
        from = index.checked_add(1);
    }
    if let Some(first) = from
        && first <= merged.shards.count
    {
        missing.push(first..=merged.shards.count);
    }
    Ok((merged, missing))
}

/// Refuses two summaries that are not shards of one sweep by one build.
fn same_sweep(
    (a_path, a): (&Path, &Summary),
    (b_path, b): (&Path, &Summary),
) -> Result<(), String> {
    let differs = |field: &str, a_value: String, b_value: String| {
        Err(format!(
            "{field} differs: {} has {a_value}, {} has {b_value}; only shards of one sweep by one build merge",
            a_path.display(),
            b_path.display()
        ))
    };
    let fields = [
        ("build.version", j(&a.build.version), j(&b.build.version)),
        (
            "build.source_hash",
            j(&a.build.source_hash),
            j(&b.build.source_hash),
        ),
        ("sweep.start", j(&a.sweep.start), j(&b.sweep.start)),
        ("sweep.seeds", j(&a.sweep.seeds), j(&b.sweep.seeds)),
        ("sweep.swarm", j(&a.sweep.swarm), j(&b.sweep.swarm)),
        ("sweep.replicas", j(&a.sweep.replicas), j(&b.sweep.replicas)),
        ("sweep.flaw", j(&a.sweep.flaw), j(&b.sweep.flaw)),
        (
            "sweep.shrink_max",
            j(&a.sweep.shrink_max),
            j(&b.sweep.shrink_max),
        ),
        ("shards.count", j(&a.shards.count), j(&b.shards.count)),
    ];
    for (field, a_value, b_value) in fields {
        if a_value != b_value {
            return differs(field, a_value, b_value);
        }
    }
    Ok(())
}

/// A field's value as JSON, as it reads in the file.
fn j(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("a field serialises")
}

/// Adds `part`'s runs to `merged`; a count that would pass 2^64 - 1 names
/// its field instead.
fn add(merged: &mut Summary, part: Summary) -> Result<(), String> {
    fn sum(total: &mut u64, more: u64, field: &str) -> Result<(), String> {
        *total = total.checked_add(more).ok_or_else(|| field.to_owned())?;
        Ok(())
    }
    merged.shards.held.extend(part.shards.held.iter().copied());
    sum(&mut merged.runs, part.runs, "runs")?;
    sum(&mut merged.failed_runs, part.failed_runs, "failed_runs")?;
    sum(&mut merged.violations, part.violations, "violations")?;
    for (clause, count) in &part.violations_by_clause {
        let total = merged
            .violations_by_clause
            .entry(clause.clone())
            .or_default();
        sum(total, *count, &format!("violations_by_clause.{clause}"))?;
    }
    for (probe, count) in &part.coverage {
        let total = merged.coverage.entry(probe.clone()).or_default();
        sum(total, *count, &format!("coverage.{probe}"))?;
    }
    // Each file's measures are finite; their sum may not be, and JSON
    // has no infinity: the merged summary would not read back.
    for (total, more, field) in [
        (&mut merged.wall_secs, part.wall_secs, "wall_secs"),
        (
            &mut merged.simulated_secs,
            part.simulated_secs,
            "simulated_secs",
        ),
    ] {
        *total += more;
        if !total.is_finite() {
            return Err(field.to_owned());
        }
    }
    merged.peak_rss_mb = match (merged.peak_rss_mb, part.peak_rss_mb) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    merged.failures.extend(part.failures);
    Ok(())
}
