//! A history as JSON lines: a header line that carries the format version,
//! then one event per line with its sequence number.

use serde_json::Value;

use super::history::{EventKind, History};
use super::strict_json::refuse_duplicate_keys;
use super::validate::validate;

/// The version of the JSON-lines format this build writes and reads.
/// Version 4 records the server's bounds and cancels (`aborted`); version 3
/// records a delete's fence instant and rolled-back transactions;
/// version 2 recorded a term's end, its release and a call's failure kind
/// as typed values; version 1 wrote them as the worker's `Debug` text.
pub const HISTORY_FORMAT_VERSION: u64 = 4;

/// The header line's key for [`HISTORY_FORMAT_VERSION`].
const VERSION_KEY: &str = "format_version";

impl History {
    /// One JSON object per line: the header (with its format version), then
    /// each event with its `seq`.
    pub fn to_jsonl(&self) -> String {
        let mut header = serde_json::to_value(&self.header).expect("a header serialises");
        header[VERSION_KEY] = HISTORY_FORMAT_VERSION.into();
        let mut out = header.to_string();
        out.push('\n');
        for (seq, event) in self.events.iter().enumerate() {
            let mut value = serde_json::to_value(event).expect("an event serialises");
            value["seq"] = seq.into();
            out.push_str(&value.to_string());
            out.push('\n');
        }
        out
    }

    /// Reads what [`History::to_jsonl`] wrote, naming the line of any error;
    /// refuses a header of another format version.
    pub fn from_jsonl(text: &str) -> Result<Self, String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let all: Vec<(usize, &str)> = text.lines().enumerate().collect();
        // Blank lines may only trail; one inside would hide a removed event.
        let last = all.iter().rposition(|(_, line)| !line.trim().is_empty());
        let used = &all[..last.map_or(0, |at| at + 1)];
        if let Some((index, _)) = used.iter().find(|(_, line)| line.trim().is_empty()) {
            return Err(format!(
                "line {}: a blank line inside the history",
                index + 1
            ));
        }
        let mut lines = used.iter().copied();
        let (_, first) = lines
            .next()
            .ok_or("line 1: empty history, expected a header")?;
        let mut header: Value = read_json(1, "header", first)?;
        check_version(&header)?;
        if let Value::Object(fields) = &mut header {
            fields.remove(VERSION_KEY);
        }
        let header = serde_json::from_value(header).map_err(|e| format!("line 1: header: {e}"))?;
        let mut events = Vec::new();
        let mut line_numbers = Vec::new();
        for (index, line) in lines {
            let number = index + 1;
            let mut value: Value = read_json(number, "event", line)?;
            let seq = value
                .as_object_mut()
                .and_then(|fields| fields.remove("seq"));
            let expected = events.len();
            match seq.as_ref().and_then(Value::as_u64) {
                Some(seq) if seq == expected as u64 => {}
                Some(seq) => {
                    return Err(format!(
                        "line {number}: seq {seq} where {expected} comes next: events are \
                         missing, repeated or out of order"
                    ));
                }
                None => return Err(format!("line {number}: event: no seq")),
            }
            let event =
                serde_json::from_value(value).map_err(|e| format!("line {number}: event: {e}"))?;
            events.push(event);
            line_numbers.push(number);
        }
        let history = Self { header, events };
        validate(&history, &line_numbers)?;
        Ok(history)
    }

    /// Whether the history ends as a run ends: with its final event, or
    /// with a replica's spin or panic, which stops the run there (one cut off early
    /// ends otherwise, and cannot be judged for liveness or counts).
    pub fn is_complete(&self) -> bool {
        matches!(
            self.events.last().map(|event| &event.kind),
            Some(EventKind::Final { .. } | EventKind::Spinning { .. } | EventKind::Panicked { .. })
        )
    }
}

/// One line's JSON, its errors placed by the file's line and the line's
/// column, and a key repeated in one object refused.
fn read_json(number: usize, what: &str, line: &str) -> Result<Value, String> {
    let value = serde_json::from_str(line).map_err(|error| {
        let message = error.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(message, _)| message);
        format!(
            "line {number}, column {}: {what}: {message}",
            error.column()
        )
    })?;
    refuse_duplicate_keys(line).map_err(|problem| format!("line {number}: {what}: {problem}"))?;
    if let Some(c) = control_character(&value) {
        return Err(format!(
            "line {number}: {what}: a text holds the control character U+{:04X} \
             (no recorder writes one; it would reach the terminal and the picture)",
            u32::from(c)
        ));
    }
    Ok(value)
}

/// The first control character (or XML non-character) in any string of
/// `value`.
fn control_character(value: &Value) -> Option<char> {
    match value {
        Value::String(text) => text
            .chars()
            .find(|&c| c.is_control() || c == '\u{fffe}' || c == '\u{ffff}'),
        Value::Array(items) => items.iter().find_map(control_character),
        Value::Object(map) => map.iter().find_map(|(key, value)| {
            control_character(&Value::String(key.clone())).or_else(|| control_character(value))
        }),
        _ => None,
    }
}

fn check_version(header: &Value) -> Result<(), String> {
    let this = HISTORY_FORMAT_VERSION;
    match header.get(VERSION_KEY) {
        Some(version) if version.as_u64() == Some(this) => Ok(()),
        Some(version) => Err(format!(
            "line 1: header: {VERSION_KEY} {version} is not supported; this build reads \
             version {this} only (record the history again with this build)"
        )),
        None => Err(format!(
            "line 1: header: no {VERSION_KEY}; this build reads version {this} only \
             (histories written before versions existed are version 1: record it again)"
        )),
    }
}
