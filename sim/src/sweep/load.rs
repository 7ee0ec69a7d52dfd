//! Reading a summary: its format and version, then counts that agree with
//! each other and with the shards it holds, then `plausible.rs`'s checks;
//! every refusal names the file and the field.

use std::path::Path;

use serde_json::Value;

use super::plausible::plausible;
use super::summary::{FORMAT, Summary, VERSION};
use crate::report::{HISTORY_LIMIT_BYTES, read_text};

impl Summary {
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
        Self::from_json(&text).map_err(|problem| format!("{where_}: {problem}"))
    }

    /// A summary from its JSON text, checked as [`Summary::load`] checks a
    /// file; errors name the field.
    pub fn from_json(text: &str) -> Result<Self, String> {
        // Editors may save a byte-order mark; histories and scenarios
        // accept one too.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let value: Value = serde_json::from_str(text).map_err(|error| error.to_string())?;
        // serde keeps the last of two equal keys without a word.
        crate::model::strict_json::refuse_duplicate_keys(text)?;
        match value.get("format").and_then(Value::as_str) {
            Some(FORMAT) => {}
            _ => return Err(format!("not a sweep summary (no \"format\": \"{FORMAT}\")")),
        }
        match value.get("version") {
            Some(version) if version.as_u64() == Some(u64::from(VERSION)) => {}
            other => {
                return Err(format!(
                    "version: {}; this sim reads version {VERSION} only (an integer)",
                    other.map_or("missing".to_owned(), Value::to_string)
                ));
            }
        }
        let summary: Self = serde_json::from_str(text).map_err(|error| error.to_string())?;
        summary.consistent().and_then(|()| plausible(&summary))?;
        Ok(summary)
    }

    /// Whether the counts agree with each other and with the shards held.
    pub fn consistent(&self) -> Result<(), String> {
        let shards = &self.shards;
        if shards.count == 0 || shards.held.is_empty() {
            return Err("shards: holds no shard".into());
        }
        let mut expected_runs: u64 = 0;
        let mut seen = std::collections::BTreeSet::new();
        // Each shard's runs are at most the sweep's seeds, and the shards
        // are distinct: the sum cannot pass the seeds, let alone 2^64.
        for (at, part) in shards.held.iter().enumerate() {
            if !(1..=shards.count).contains(&part.index) || part.visited > self.sweep.seeds {
                return Err(format!(
                    "shards.held[{at}]: shard {}/{} visiting {} of {} seeds is impossible",
                    part.index, shards.count, part.visited, self.sweep.seeds
                ));
            }
            if !seen.insert(part.index) {
                return Err(format!(
                    "shards.held[{at}]: shard {} is held twice",
                    part.index
                ));
            }
            expected_runs += shards.shard(part).seeds_in(part.visited);
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
        // Each seed's shard looked up, not searched for: a million
        // failures over a thousand shards stay linear.
        let visited: std::collections::BTreeMap<u64, u64> = shards
            .held
            .iter()
            .map(|part| (part.index, part.visited))
            .collect();
        for (at, failure) in self.failures.iter().enumerate() {
            let index = failure.seed.wrapping_sub(self.sweep.start);
            let shard = index % shards.count + 1;
            let held = visited.get(&shard).is_some_and(|&seen| index < seen);
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
