//! What a summary's counts and plans must agree on beyond its shape: names
//! this build knows, tokens that replay the failure they stand for, sums
//! that fit in 64 bits; so a damaged or forged summary is refused naming
//! its field, never merged into a verdict.

use std::collections::BTreeMap;

use super::summary::{Build, Failure, Summary, Token};
use crate::checker::{CLAUSES, PROBES};
use crate::model::{Flaw, replicas_problem};
use crate::report::parse_token;

/// Whether `text` may become part of a file name. A summary is a
/// downloaded artefact and its names reach paths (`merge
/// --save-failures`), so only lowercase letters, digits and `-`, 1 to 64 of
/// them, not first a `-`: no `/`, no `..`, nothing a shell or a file system
/// reads specially.
pub fn file_name_part(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && !text.starts_with('-')
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Checks of `summary` that `Summary::consistent` leaves out: its clause
/// and probe names, its failures' tokens, its numbers' ranges.
pub(crate) fn plausible(summary: &Summary) -> Result<(), String> {
    let sweep = &summary.sweep;
    if sweep.seeds == 0 || sweep.start.checked_add(sweep.seeds - 1).is_none() {
        return Err(format!(
            "sweep: {} seeds from {} is not a range of seeds (empty, or past 2^64 - 1)",
            sweep.seeds, sweep.start
        ));
    }
    if let Some(flaw) = &sweep.flaw {
        if !file_name_part(flaw) {
            return Err(format!(
                "sweep.flaw: {flaw:?} is not a flaw's name (lowercase letters, digits and '-')"
            ));
        }
        // Another build may have flaws this one lacks; its failures are
        // refused when they are replayed.
        if summary.build == Build::current() && Flaw::from_name(flaw).is_err() {
            let known: Vec<&str> = Flaw::ALL.iter().map(|flaw| flaw.name()).collect();
            return Err(format!(
                "sweep.flaw: {flaw} is not a flaw of this build ({})",
                known.join(", ")
            ));
        }
    }
    if summary.build == Build::current()
        && let Some(problem) = sweep.replicas.and_then(replicas_problem)
    {
        return Err(format!(
            "sweep.replicas: {problem}, the replicas a run can have"
        ));
    }
    let interrupted = summary.shards.held.iter().any(|s| s.visited < sweep.seeds);
    if summary.partial != interrupted {
        return Err(format!(
            "partial: {} but {}",
            summary.partial,
            if interrupted {
                "a shard stopped early"
            } else {
                "every shard held visited all its seeds"
            }
        ));
    }
    for (field, value) in [
        ("wall_secs", summary.wall_secs),
        ("simulated_secs", summary.simulated_secs),
        ("peak_rss_mb", summary.peak_rss_mb.unwrap_or(0.0)),
    ] {
        if !value.is_finite() || value < 0.0 {
            return Err(format!(
                "{field}: {value} is not a measure (negative or not finite)"
            ));
        }
    }
    let known_clause = |clause: &str| CLAUSES.iter().any(|(id, _)| *id == clause);
    for (clause, count) in &summary.violations_by_clause {
        if !known_clause(clause) {
            return Err(format!(
                "violations_by_clause: {clause} is not a clause of the contract"
            ));
        }
        if *count == 0 {
            return Err(format!(
                "violations_by_clause.{clause}: 0 (a clause listed was violated)"
            ));
        }
    }
    // Probe names change with the build; another build's are not judged.
    if summary.build == Build::current() {
        for probe in summary.coverage.keys() {
            if !PROBES.iter().any(|(name, _)| name == probe) {
                return Err(format!("coverage: {probe} is not a probe of this build"));
            }
        }
    }
    // Counted once for all failures: a sweep of a flaw that fails most of
    // a million seeds lists a million failures.
    let mut listed: BTreeMap<&str, u64> = BTreeMap::new();
    for failure in &summary.failures {
        for (at, clause) in failure.clauses.iter().enumerate() {
            // A failure counts once per clause, even one it lists twice.
            if !failure.clauses[..at].contains(clause) {
                *listed.entry(clause.as_str()).or_default() += 1;
            }
        }
    }
    for (at, failure) in summary.failures.iter().enumerate() {
        failure_plausible(summary, &listed, failure)
            .map_err(|problem| format!("failures[{at}].{problem}"))?;
    }
    Ok(())
}

/// One failure: its clauses known and counted, its tokens valid plans of
/// this sweep for its own seed, its shrunk clause its first.
fn failure_plausible(
    summary: &Summary,
    listed: &BTreeMap<&str, u64>,
    failure: &Failure,
) -> Result<(), String> {
    for (at, clause) in failure.clauses.iter().enumerate() {
        if !CLAUSES.iter().any(|(id, _)| id == clause) {
            return Err(format!(
                "clauses[{at}]: {clause} is not a clause of the contract"
            ));
        }
        if failure.clauses[..at].contains(clause) {
            return Err(format!("clauses[{at}]: {clause} is listed twice"));
        }
        let counted = summary
            .violations_by_clause
            .get(clause)
            .copied()
            .unwrap_or(0);
        let listing = listed.get(clause.as_str()).copied().unwrap_or(0);
        if counted < listing {
            return Err(format!(
                "clauses[{at}]: {clause} is violated by {listing} failures listed, but \
                 violations_by_clause counts {counted}"
            ));
        }
    }
    // Another build's plans are its own (its rules and ranges may differ):
    // only their shape and seed are held to this build's.
    if summary.build != Build::current() {
        let token = failure.token.value();
        let seed = token.get("seed").and_then(serde_json::Value::as_u64);
        if !token.is_object()
            || seed.is_none()
            || (!summary.sweep.guided && seed != Some(failure.seed))
        {
            return Err(format!(
                "token: not a plan of seed {} (an object naming its seed)",
                failure.seed
            ));
        }
        return Ok(());
    }
    let plan = |field: &str, token: &Token| {
        let spec = parse_token(token.as_str()).map_err(|problem| format!("{field}: {problem}"))?;
        let flaw = spec.flaw.map(|flaw| flaw.name().to_owned());
        if flaw != summary.sweep.flaw {
            let name = |flaw: &Option<String>| flaw.clone().unwrap_or_else(|| "no flaw".into());
            return Err(format!(
                "{field}: runs {}, but the sweep ran {}",
                name(&flaw),
                name(&summary.sweep.flaw)
            ));
        }
        Ok(spec)
    };
    let drawn = plan("token", &failure.token)?;
    if !summary.sweep.guided && drawn.seed != failure.seed {
        return Err(format!(
            "token: seed {} for the failure of seed {}",
            drawn.seed, failure.seed
        ));
    }
    if let Some(replicas) = summary.sweep.replicas
        && drawn.replicas != replicas
    {
        return Err(format!(
            "token: {} replicas, but the sweep ran {replicas}",
            drawn.replicas
        ));
    }
    if let Some(shrunk) = &failure.shrunk {
        plan("shrunk.token", &shrunk.token)?;
        if failure.clauses.first() != Some(&shrunk.clause) {
            return Err(format!(
                "shrunk.clause: {}, but the failure's first clause (the one shrunk) is {}",
                shrunk.clause,
                failure.clauses.first().map_or("none", String::as_str)
            ));
        }
        if shrunk.size_after > shrunk.size_before {
            return Err(format!(
                "shrunk: size {} after, {} before: a shrink never grows a plan",
                shrunk.size_after, shrunk.size_before
            ));
        }
    }
    Ok(())
}
