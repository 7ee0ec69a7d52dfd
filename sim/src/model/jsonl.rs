//! A history as JSON lines: a header line that carries the format version,
//! then one event per line with its sequence number.

use serde_json::Value;

use super::history::History;

/// The version of the JSON-lines format this build writes and reads.
/// Version 3 records a delete's fence instant and rolled-back transactions;
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
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty());
        let (_, first) = lines
            .next()
            .ok_or("line 1: empty history, expected a header")?;
        let mut header: Value =
            serde_json::from_str(first).map_err(|e| format!("line 1: header: {e}"))?;
        check_version(&header)?;
        if let Value::Object(fields) = &mut header {
            fields.remove(VERSION_KEY);
        }
        let header = serde_json::from_value(header).map_err(|e| format!("line 1: header: {e}"))?;
        let events = lines
            .map(|(index, line)| {
                serde_json::from_str(line).map_err(|e| format!("line {}: event: {e}", index + 1))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { header, events })
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
