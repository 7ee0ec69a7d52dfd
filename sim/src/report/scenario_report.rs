//! The reviewer's view of a scenario run: a header, the timeline, a footer
//! per term and the verdict clause by clause. Snapshots store exactly this.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::scenario::Scenario;
use crate::checker::Verdict;
use crate::model::{Actor, EventKind, History, Invocation, Outcome, RunSpec};

/// The full report of one scenario run.
pub fn scenario_report(scenario: &Scenario, history: &History, verdict: &Verdict) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "scenario  {}", scenario.name);
    let _ = writeln!(out, "clauses   {}", scenario.clauses.join(", "));
    out.push_str(&describe_run(&scenario.run));
    let expect = match (scenario.run.flaw, scenario.expect.violates.as_slice()) {
        (Some(flaw), _) => match scenario.expect.flaws.get(flaw.name()) {
            Some(clauses) => format!(
                "violates {} (the {} variant)",
                clauses.join(", "),
                flaw.name()
            ),
            None => format!("nothing declared for the {} variant", flaw.name()),
        },
        (None, []) => "keeps every clause".to_owned(),
        (None, clauses) => format!("violates {}", clauses.join(", ")),
    };
    let _ = writeln!(out, "expect    {expect}\n");
    out.push_str(&history.timeline());
    out.push_str("\nterms\n");
    out.push_str(&term_footers(history));
    out.push_str("\nverdict\n");
    out.push_str(&verdict.summary());
    for violation in &verdict.violations {
        let _ = writeln!(out, "  {violation}");
    }
    let _ = writeln!(out, "{} violation(s)", verdict.violations.len());
    out
}

/// The run's settings in a few lines.
pub fn describe_run(run: &RunSpec) -> String {
    let w = &run.worker;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "run       seed {}, {} replica(s), {} ms; rows: {} backlog, {} near the cutoff, {}/s arriving",
        run.seed,
        run.replicas,
        run.duration_ms,
        run.backlog_rows,
        run.boundary_rows,
        run.arrivals_per_sec
    );
    let _ = writeln!(
        out,
        "worker    lease {} ms, renew every {} ms, margin {} ms, batch {}, cap {}, retention {} ms, term every {}+{} ms",
        w.lease_ttl_ms,
        w.renew_interval_ms,
        w.expiry_margin_ms,
        w.batch_size,
        w.term_row_cap,
        w.retention_ms,
        w.term_interval_ms,
        w.term_jitter_ms_max
    );
    let bound = |ms: u64| {
        if ms == 0 {
            "off".to_owned()
        } else {
            format!("{ms} ms")
        }
    };
    let _ = writeln!(
        out,
        "database  work {}..{} ms a delete; call timeout {} ms; bounds: statement {}, lock {}, idle in transaction {}",
        run.db_batch_ms_min,
        run.db_batch_ms_max,
        run.rpc_timeout_ms,
        bound(run.statement_timeout_ms),
        bound(run.lock_timeout_ms),
        bound(run.idle_in_transaction_timeout_ms)
    );
    let knobs = run.faults.knobs();
    let on: Vec<String> = knobs
        .into_iter()
        .filter(|(_, v)| *v > 0)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let _ = writeln!(
        out,
        "faults    {}",
        if on.is_empty() {
            "none".into()
        } else {
            on.join(", ")
        }
    );
    if let Some(flaw) = run.flaw {
        let _ = writeln!(out, "worker    the flawed variant: {}", flaw.name());
    }
    if !run.skews_ms.is_empty() {
        let skews: Vec<String> = run
            .skews_ms
            .iter()
            .enumerate()
            .map(|(i, s)| format!("r{} {s:+} ms", i + 1))
            .collect();
        let _ = writeln!(out, "skews     {}", skews.join(", "));
    }
    for event in &run.events {
        let _ = writeln!(out, "event     {}", event.describe());
    }
    out
}

#[derive(Default)]
struct TermFacts {
    cutoff: Option<i64>,
    rows: u64,
    tokens: Vec<u64>,
    end: Option<String>,
}

/// One line per replica term: cutoff, rows, tokens held, how it ended.
pub fn term_footers(history: &History) -> String {
    let mut terms: BTreeMap<(u32, u32), TermFacts> = BTreeMap::new();
    for event in &history.events {
        let Actor::Replica(replica) = event.actor else {
            continue;
        };
        let facts = terms.entry((replica, event.term)).or_default();
        match &event.kind {
            EventKind::Invoke {
                invocation: Invocation::Delete { older_than_ms, .. },
                ..
            } => {
                facts.cutoff.get_or_insert(*older_than_ms);
            }
            EventKind::Return {
                outcome: Outcome::Deleted(rows),
                ..
            } => facts.rows += rows,
            EventKind::Return {
                outcome: Outcome::Lease(Some(lease)),
                ..
            } => facts.tokens.push(lease.token),
            EventKind::TermEnded { end, release, .. } => {
                facts.end = Some(format!("{end}, release {release}"))
            }
            _ => {}
        }
    }
    let mut out = String::new();
    for ((replica, term), facts) in terms.iter().filter(|((_, term), _)| *term > 0) {
        let cutoff = facts.cutoff.map_or("-".to_owned(), |c| c.to_string());
        let tokens: Vec<String> = facts.tokens.iter().map(|t| format!("#{t}")).collect();
        let tokens = if tokens.is_empty() {
            "none".to_owned()
        } else {
            tokens.join(" ")
        };
        let end = facts
            .end
            .as_deref()
            .unwrap_or("did not end (crashed or still running)");
        let _ = writeln!(
            out,
            "  r{replica} term {term:>2}: cutoff {cutoff}, {} rows, tokens {tokens}; {end}",
            facts.rows
        );
    }
    out
}
