//! The one formatter for every failure, and the replay token it prints.
//!
//! A token is the run's spec as compact JSON with every default left out,
//! so it is short, exact, and readable; `sim replay TOKEN` runs it again.

use serde_json::Value;

use crate::checker::Verdict;
use crate::model::{History, RunSpec};

/// The token that `sim replay` accepts for `spec`.
pub fn replay_token(spec: &RunSpec) -> String {
    let full = serde_json::to_value(spec).expect("a spec serialises");
    let defaults = serde_json::to_value(RunSpec::default()).expect("a spec serialises");
    let mut sparse = strip_defaults(full, &defaults);
    if let Value::Object(map) = &mut sparse {
        // The seed always shows, even when it equals the default.
        map.insert("seed".into(), spec.seed.into());
    }
    sparse.to_string()
}

/// The exact command that replays `spec`.
pub fn replay_command(spec: &RunSpec) -> String {
    format!(
        "cargo run --release -p sim -- replay '{}'",
        replay_token(spec)
    )
}

/// Reads a replay token back; errors name the field and column.
pub fn parse_token(token: &str) -> Result<RunSpec, String> {
    let value: Value =
        serde_json::from_str(token.trim()).map_err(|error| format!("replay token: {error}"))?;
    // serde would also read a struct from an array of its fields in order;
    // a token is the object a failure prints, nothing else.
    if !value.is_object() {
        return Err(format!(
            "replay token: expected a JSON object ({{\"seed\":...}}), got {}",
            match value {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            }
        ));
    }
    // Every printed token names its seed; one without is not a failure's,
    // and would silently run seed 1.
    if value.get("seed").is_none() {
        return Err("replay token: seed: missing (every printed token names its seed)".into());
    }
    crate::model::strict_json::refuse_duplicate_keys(token.trim())
        .map_err(|problem| format!("replay token: {problem}"))?;
    refuse_positional_structs(&value)?;
    // Read again from the text, so an error says where (line and column).
    let spec: RunSpec =
        serde_json::from_str(token.trim()).map_err(|error| format!("replay token: {error}"))?;
    spec.validate()
        .map_err(|error| format!("replay token: {error}"))?;
    Ok(spec)
}

/// serde reads a struct from an array of its fields in order too; a token
/// writes every struct as an object, so anything else is a mistake.
fn refuse_positional_structs(token: &Value) -> Result<(), String> {
    for field in ["worker", "faults"] {
        if token.get(field).is_some_and(|value| !value.is_object()) {
            return Err(format!(
                "replay token: {field}: expected an object ({{\"name\":value,...}})"
            ));
        }
    }
    let events = token.get("events").and_then(Value::as_array);
    for (index, event) in events.into_iter().flatten().enumerate() {
        if !event.is_object() {
            return Err(format!(
                "replay token: events[{index}]: expected an object ({{\"kind\":...}})"
            ));
        }
    }
    Ok(())
}

fn strip_defaults(value: Value, default: &Value) -> Value {
    match (value, default) {
        (Value::Object(map), Value::Object(defaults)) => Value::Object(
            map.into_iter()
                .filter(|(key, value)| defaults.get(key) != Some(value))
                .map(|(key, value)| {
                    let stripped = match defaults.get(&key) {
                        Some(default) => strip_defaults(value, default),
                        None => value,
                    };
                    (key, stripped)
                })
                .collect(),
        ),
        (value, _) => value,
    }
}

/// How many lines of history to show before each violation's first event.
const CONTEXT_LINES: usize = 2;
/// Violations shown in full; the rest are counted.
const SHOWN_VIOLATIONS: usize = 5;

/// Formats a failed run: each violated clause with the seed, the shortest
/// timeline excerpt that shows it, and the exact replay command.
pub fn format_failure(spec: &RunSpec, history: &History, verdict: &Verdict) -> String {
    let mut out = format!(
        "CONTRACT VIOLATED: seed {} broke {} clause check(s)\n",
        spec.seed,
        verdict.violations.len()
    );
    for violation in verdict.violations.iter().take(SHOWN_VIOLATIONS) {
        out.push_str(&format!(
            "\n{} (seed {}): {}\n",
            violation.clause, spec.seed, violation.message
        ));
        out.push_str(&excerpt(history, &violation.events));
    }
    if verdict.violations.len() > SHOWN_VIOLATIONS {
        out.push_str(&format!(
            "\n... and {} more\n",
            verdict.violations.len() - SHOWN_VIOLATIONS
        ));
    }
    out.push_str(&format!("\nreplay: {}\n", replay_command(spec)));
    out
}

/// The events `marked`, each with a little context, gaps elided; marked
/// lines start with `>`.
pub fn excerpt(history: &History, marked: &[usize]) -> String {
    let mut shown: Vec<usize> = marked
        .iter()
        .flat_map(|&seq| seq.saturating_sub(CONTEXT_LINES)..=seq)
        .filter(|&seq| seq < history.events.len())
        .collect();
    shown.sort_unstable();
    shown.dedup();
    let mut out = String::new();
    let mut previous: Option<usize> = None;
    for seq in shown {
        if previous.is_some_and(|p| p + 1 < seq) {
            out.push_str("      ...\n");
        }
        let mark = if marked.contains(&seq) { '>' } else { ' ' };
        out.push_str(&format!("{mark} {}\n", history.timeline_line(seq)));
        previous = Some(seq);
    }
    out
}
