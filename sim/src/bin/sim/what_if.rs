//! `sim replay TOKEN --delay-reply CALL:MS ...`: the run as recorded and
//! with the interventions, side by side: each verdict, where the two runs
//! part, and the changed plan's token.

use retention_sim::checker::Verdict;
use retention_sim::model::RunSpec;
use retention_sim::report::replay_command;
use retention_sim::search::{Intervention, violation_site, what_if};

use crate::output::say;

/// The interventions a replay asked for, in the order they apply: the
/// replies (numbered by the recorded run's calls), then the settings.
pub fn interventions(
    (delay_reply, drop_reply): (&[String], &[String]),
    (drop_fault, move_fault): (&[String], &[String]),
    set: &[String],
) -> Result<Vec<Intervention>, String> {
    let parse = |flag: &str, texts: &[String]| -> Result<Vec<Intervention>, String> {
        texts
            .iter()
            .map(|text| Intervention::parse(flag, text))
            .collect()
    };
    let mut all = parse("--delay-reply", delay_reply)?;
    all.extend(parse("--drop-reply", drop_reply)?);
    all.extend(parse("--drop-fault", drop_fault)?);
    all.extend(parse("--move-fault", move_fault)?);
    all.extend(parse("--set", set)?);
    Ok(all)
}

fn verdict_words(verdict: &Verdict) -> String {
    match verdict.violations.first() {
        None => "keeps every clause".to_owned(),
        Some(first) => {
            let mut clauses: Vec<&str> = verdict.violations.iter().map(|v| v.clause).collect();
            clauses.dedup();
            format!("violates {} (first: {first})", clauses.join(", "))
        }
    }
}

/// Prints the comparison; true when the run with the interventions keeps
/// every clause.
pub fn run(spec: &RunSpec, interventions: &[Intervention]) -> Result<bool, String> {
    let compared = what_if(spec, interventions)?;
    let named: Vec<String> = interventions.iter().map(Intervention::describe).collect();
    say!("what if: {}", named.join("; "));
    say!("  as recorded: {}", verdict_words(&compared.before));
    say!("  with it:     {}", verdict_words(&compared.after));
    let shared = compared.shared_events;
    let (recorded, altered) = (&compared.recorded, &compared.altered);
    if shared == recorded.events.len() && shared == altered.events.len() {
        say!("  the two runs are the same, event for event ({shared} events)");
    } else {
        say!("  the two runs share their first {shared} events and part at event {shared}:");
        let line = |history: &retention_sim::History| {
            if shared < history.events.len() {
                history.timeline_line(shared)
            } else {
                "  (the history ends here)".to_owned()
            }
        };
        say!("    as recorded: {}", line(recorded).trim_start());
        say!("    with it:     {}", line(altered).trim_start());
    }
    if let (Some(remains), Some(first)) = (
        compared.first_violation_remains(),
        compared.before.violations.first(),
    ) {
        let (clause, site) = violation_site(&compared.recorded, first);
        if remains {
            say!("  the violation ({clause}, {site}) remains");
        } else {
            say!("  the violation ({clause}, {site}) is gone");
            let elsewhere: Vec<String> = (compared.after.violations.iter())
                .filter(|v| v.clause == clause)
                .map(|v| violation_site(&compared.altered, v).1)
                .collect();
            if !elsewhere.is_empty() {
                say!(
                    "  {clause} still fails elsewhere: {} (the flaw is still there)",
                    elsewhere.join(", ")
                );
            }
        }
    }
    say!("  replay it: {}", replay_command(&compared.spec));
    Ok(compared.after.passed())
}
