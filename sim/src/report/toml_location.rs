//! Where in a scenario file's text a problem is: the line of a byte offset,
//! the field at an offset, the offset of a field path, and the entry and
//! key of a `[[run.events]]` table that does not read as an event.

use serde::Deserialize;
use toml::de::{DeTable, DeValue};

use crate::model::FaultEvent;

/// The first `[[run.events]]` entry that is not an event, as the field to
/// blame (`run.events[2].reply_delay_ms`, or `run.events[2]` for a field it
/// lacks) and serde's message.
pub(super) fn failing_event(text: &str) -> Option<(String, String)> {
    let document: toml::Table = toml::from_str(text).ok()?;
    let events = document.get("run")?.get("events")?.as_array()?;
    events.iter().enumerate().find_map(|(index, event)| {
        let problem = read_event(event)?;
        let entry = format!("run.events[{index}]");
        let Some(table) = event
            .as_table()
            .filter(|_| !problem.starts_with("missing field"))
        else {
            return Some((entry, problem));
        };
        // `kind` is read first: it is to blame if it fails alone. Then each
        // key read beside `kind` alone: a good one leaves only a missing
        // field to complain about, the bad one fails itself. One small read
        // per key, so an entry of many keys is refused in time that grows
        // with its size, not its square.
        let kind = table.get("kind");
        let fails = |pair: toml::Table| {
            read_event(&toml::Value::Table(pair)).is_some_and(|e| !e.starts_with("missing field"))
        };
        let kind_alone = || toml::Table::from_iter(kind.map(|k| ("kind".to_owned(), k.clone())));
        let culprit = if kind.is_some() && fails(kind_alone()) {
            Some("kind")
        } else {
            table
                .iter()
                .filter(|(key, _)| *key != "kind")
                .find(|(key, value)| {
                    let mut pair = kind_alone();
                    pair.insert((*key).clone(), (*value).clone());
                    fails(pair)
                })
                .map(|(key, _)| key.as_str())
        };
        Some(match culprit {
            Some(key) => (format!("{entry}.{key}"), problem),
            None => (entry, problem),
        })
    })
}

/// serde's message when `value` does not read as an event.
fn read_event(value: &toml::Value) -> Option<String> {
    FaultEvent::deserialize(value.clone())
        .err()
        .map(|error| error.message().trim().to_owned())
}

pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The field at byte `offset`: the key on that line, under the nearest
/// table header above it (`[run.worker]`, or the n-th `[[run.events]]`).
pub(super) fn field_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |at| at + 1);
    let line = text[line_start..].lines().next().unwrap_or_default();
    // A table header is blamed as itself (a `[run.worker]` given twice),
    // not as a key of the table above it.
    let (line_start, key) = if line.trim_start().starts_with('[') {
        (line_start + line.len(), None)
    } else {
        let key = line
            .split_once('=')
            .map(|(key, _)| key.trim().trim_matches('"'));
        (line_start, key)
    };
    let above: Vec<&str> = text[..line_start.min(text.len())]
        .lines()
        .map(str::trim)
        .collect();
    let header = above.iter().rposition(|l| l.starts_with('[')).map(|at| {
        let header = above[at];
        match header.strip_prefix("[[").and_then(|h| h.strip_suffix("]]")) {
            Some(array) => {
                let index = above[..=at].iter().filter(|l| **l == header).count() - 1;
                format!("{array}[{index}]")
            }
            None => header.trim_matches(|c| c == '[' || c == ']').to_owned(),
        }
    });
    match (header, key) {
        (Some(header), Some(key)) => Some(format!("{header}.{key}")),
        (header, key) => header.or(key.map(str::to_owned)),
    }
}

/// The byte offset of the value at `path` (`run.events[2].replica`), or of
/// the nearest enclosing item that exists.
pub(super) fn offset_of(text: &str, path: &str) -> Option<usize> {
    let table = DeTable::parse(text).ok()?;
    let mut table = table.get_ref();
    let mut found = None;
    for segment in path.split('.') {
        let (name, indices) = match segment.split_once('[') {
            Some((name, rest)) => (
                name,
                rest.trim_end_matches(']')
                    .split("][")
                    .filter_map(|i| i.parse().ok())
                    .collect(),
            ),
            None => (segment, Vec::<usize>::new()),
        };
        // A field the file leaves out (a rule between two fields, one of
        // them defaulted) is blamed on its table.
        let Some((key, mut value)) = table.iter().find(|(key, _)| key.get_ref().as_ref() == name)
        else {
            return found;
        };
        found = Some(key.span().start);
        for index in indices {
            let DeValue::Array(items) = value.get_ref() else {
                return found;
            };
            let Some(item) = items.get(index) else {
                return found;
            };
            found = Some(item.span().start);
            value = item;
        }
        match value.get_ref() {
            DeValue::Table(inner) => table = inner,
            _ => return found,
        }
    }
    found
}
