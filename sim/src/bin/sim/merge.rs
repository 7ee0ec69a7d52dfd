//! `sim merge`: shard summaries in, the whole sweep's summary out. Refuses
//! summaries of different builds or sweeps and overlapping shards, naming
//! the field; reports missing and interrupted shards.

use std::path::{Path, PathBuf};

use retention_sim::sweep::{Build, Summary, merge, triage};
use serde_json::Value;

use crate::args::MergeArgs;
use crate::files::{preflight, write_checked};
use crate::output::{say, tell};
use crate::tally::print_summary;
use crate::triage::{plan_saves, print_triage, save_failures};

/// `merge`'s exit status when every held run kept the contract but shards
/// are missing or were interrupted.
pub const INCOMPLETE: u8 = 3;

/// Runs `sim merge`; returns the exit status.
pub fn run_merge(args: &MergeArgs) -> Result<u8, String> {
    let mut inputs: Vec<&Path> = args.summaries.iter().map(PathBuf::as_path).collect();
    if let Some(baseline) = &args.baseline {
        inputs.push(baseline);
    }
    preflight(
        &inputs,
        &[("--summary", args.summary.as_deref())],
        args.force,
    )?;
    // A summary that does not exist is a shard that never finished (its
    // job failed before writing it): the merge reports it missing, as it
    // does a shard nobody named, instead of refusing the rest.
    let (present, absent): (Vec<&PathBuf>, Vec<&PathBuf>) = args
        .summaries
        .iter()
        .partition(|path| std::fs::symlink_metadata(path).is_ok());
    for path in &absent {
        tell!(
            "sim: {}: does not exist; counted as a missing shard",
            path.display()
        );
    }
    if present.is_empty() {
        return Err("no summary to merge: none of the files named exists".into());
    }
    let parts = present
        .iter()
        .map(|path| Summary::load(path).map(|summary| (path.as_path(), summary)))
        .collect::<Result<Vec<_>, _>>()?;
    let baseline = match &args.baseline {
        Some(path) => Some(Summary::load(path).map_err(|e| format!("--baseline {e}"))?),
        None => None,
    };
    let command = crate::output::command_line();
    let (mut merged, missing) = merge(parts, &command)?;
    let triaged = baseline.as_ref().map(|old| triage(&merged, old));
    // Made before the saves are planned: they borrow the merged failures.
    let triaged_json = match (&triaged, args.json) {
        (Some(triaged), true) => Some(with_triage(&mut merged, &triaged.to_json())),
        _ => None,
    };
    // Every output is checked before the first is written.
    let saves = match &args.save_failures {
        Some(dir) => Some(plan_saves(&merged, dir, args.force)?),
        None => None,
    };
    if merged.build != Build::current() {
        tell!(
            "sim: note: the summaries come from build {} {}, this sim is {} {}: \
             the failures shown are replayed by this build",
            merged.build.version,
            merged.build.source_hash,
            Build::current().version,
            Build::current().source_hash
        );
    }
    if args.json {
        match &triaged_json {
            Some(text) => say!("{text}"),
            None => say!("{}", merged.to_json()),
        }
    } else {
        print_summary(&merged, &missing)?;
        if let (Some(triaged), Some(path)) = (&triaged, &args.baseline) {
            print_triage(triaged, path, baseline.as_ref().expect("loaded"));
        }
        if args.hints {
            let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
            crate::hints::print_hints(&merged, jobs)?;
        }
    }
    if let Some(path) = &args.summary {
        write_checked(path, &merged.to_json(), args.force, |text| {
            serde_json::from_str::<Summary>(text)
                .map(|_| ())
                .map_err(|error| format!("the written summary does not read back: {error}"))
        })
        .map_err(|problem| format!("--summary {problem}"))?;
    }
    if let Some(plan) = saves {
        save_failures(&merged, plan)?;
    }
    let failing = match &triaged {
        Some(triaged) => triaged.any_new(),
        None => merged.failed_runs > 0,
    };
    Ok(if failing {
        1
    } else if merged.partial || !missing.is_empty() || !absent.is_empty() {
        INCOMPLETE
    } else {
        0
    })
}

/// `merge --json --baseline`'s `{"summary": ..., "triage": ...}` as
/// `json!` prints it (compact, every object's keys sorted), made a failure
/// at a time: a `Value` tree of a million failures takes gigabytes.
fn with_triage(merged: &mut Summary, triage: &Value) -> String {
    let failures = std::mem::take(&mut merged.failures);
    let head = serde_json::to_value(&*merged).expect("a summary serialises");
    merged.failures = failures;
    let Value::Object(head) = head else {
        unreachable!("a summary serialises as an object")
    };
    let mut text = String::from(r#"{"summary":{"#);
    for (at, (key, value)) in head.iter().enumerate() {
        if at > 0 {
            text.push(',');
        }
        text.push_str(&Value::String(key.clone()).to_string());
        text.push(':');
        if key != "failures" {
            text.push_str(&value.to_string());
            continue;
        }
        text.push('[');
        for (n, failure) in merged.failures.iter().enumerate() {
            if n > 0 {
                text.push(',');
            }
            let failure = serde_json::to_value(failure).expect("a failure serialises");
            text.push_str(&failure.to_string());
        }
        text.push(']');
    }
    text.push_str(r#"},"triage":"#);
    text.push_str(&triage.to_string());
    text.push('}');
    text
}
