//! A corpus as text: one replay token per line, so that a campaign can
//! be continued, or its corpus shared with other shards, and each plan in
//! it replayed on its own (`sim replay TOKEN`).

use crate::model::{Flaw, RunSpec};
use crate::report::{parse_token, replay_token};

/// The corpus file of `plans`, oldest first.
pub fn corpus_text(plans: &[RunSpec]) -> String {
    let mut text = String::new();
    for spec in plans {
        text.push_str(&replay_token(spec));
        text.push('\n');
    }
    text
}

/// The plans of a corpus file (`file` names it in errors), each set to run
/// `flaw`: a corpus learnt on one worker guides a search of another. Blank
/// lines are skipped; a bad line is refused with its number.
pub fn parse_corpus(text: &str, file: &str, flaw: Option<Flaw>) -> Result<Vec<RunSpec>, String> {
    let mut plans = Vec::new();
    for (at, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let spec = parse_token(line).map_err(|problem| format!("{file}:{}: {problem}", at + 1))?;
        plans.push(RunSpec { flaw, ..spec });
    }
    Ok(plans)
}
