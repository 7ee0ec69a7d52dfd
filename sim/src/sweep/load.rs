//! Reading a summary: its format and version, then counts that agree with
//! each other and with the shards it holds, then `plausible.rs`'s checks;
//! every refusal names the file and the field.

use std::fmt;
use std::path::Path;

use serde::Deserializer;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::plausible::plausible;
use super::summary::{FORMAT, Summary, VERSION};
use crate::report::read_text;

/// The largest summary read: 4 GiB. A failure takes 0.1 to 2.5 KB of
/// pretty JSON (a default plan's token, or a swarm plan's drawn and shrunk
/// tokens), so a million-seed sweep that fails at every seed fits; merging
/// it holds about the file's size again, not a tree of every token.
pub const SUMMARY_LIMIT_BYTES: u64 = 4 << 30;

impl Summary {
    /// Reads a summary, refusing anything that is not one of this version
    /// or whose counts do not add up; errors name the file and the field.
    pub fn load(path: &Path) -> Result<Self, String> {
        let where_ = path.display();
        let text = read_text(path, SUMMARY_LIMIT_BYTES).map_err(|error| match error.line {
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
        let header = Header::read(text)?;
        // serde keeps the last of two equal keys without a word.
        crate::model::strict_json::refuse_duplicate_keys(text)?;
        match header.format.as_ref().and_then(Value::as_str) {
            Some(FORMAT) => {}
            _ => return Err(format!("not a sweep summary (no \"format\": \"{FORMAT}\")")),
        }
        match &header.version {
            Some(version) if version.as_u64() == Some(u64::from(VERSION)) => {}
            other => {
                return Err(format!(
                    "version: {}; this sim reads version {VERSION} only (an integer)",
                    other
                        .as_ref()
                        .map_or("missing".to_owned(), Value::to_string)
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

/// The two fields judged before the rest, read without building the whole
/// document as a `Value` tree (a million failures' plans would take
/// gigabytes): any other JSON is "not a summary" before its first odd field.
#[derive(Default)]
struct Header {
    format: Option<Value>,
    version: Option<Value>,
}

impl Header {
    /// The header of `text`, or the JSON syntax error that stops it.
    fn read(text: &str) -> Result<Self, String> {
        let mut reader = serde_json::Deserializer::from_str(text);
        let header = reader
            .deserialize_any(HeaderVisitor)
            .and_then(|header| reader.end().map(|()| header));
        header.map_err(|error| error.to_string())
    }
}

/// Visits any JSON value: an object gives its `format` and `version` (the
/// last of each, as serde keeps), anything else gives neither.
struct HeaderVisitor;

impl<'de> Visitor<'de> for HeaderVisitor {
    type Value = Header;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
        let mut header = Header::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" => header.format = Some(map.next_value()?),
                "version" => header.version = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(header)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Header, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Header::default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Header, E> {
        Ok(Header::default())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Header, E> {
        Ok(Header::default())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Header, E> {
        Ok(Header::default())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Header, E> {
        Ok(Header::default())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Header, E> {
        Ok(Header::default())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Header, E> {
        Ok(Header::default())
    }
}
