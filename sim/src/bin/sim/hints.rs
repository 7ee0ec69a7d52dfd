//! `--hints` on `explore` and `merge`: the conditions a sweep's failing
//! runs share, per violated clause, most telling first.

use retention_sim::search::hints;
use retention_sim::sweep::Summary;

use crate::output::say;

/// Conditions printed per clause.
const TOP: usize = 12;

/// Replays the sweep's failing runs and a control of its passing runs on
/// `jobs` threads, then prints what the failing runs share.
pub fn print_hints(summary: &Summary, jobs: usize) -> Result<(), String> {
    if summary.failures.is_empty() {
        say!("hints: no run failed, so there is nothing to explain");
        return Ok(());
    }
    let plans = summary
        .hint_plans()
        .map_err(|problem| format!("--hints: {problem}"))?;
    let control = plans.passing.len();
    for clause in hints(
        &plans.failing,
        &plans.passing,
        plans.passing_total,
        TOP,
        jobs,
    ) {
        say!(
            "hints for {}: {} failing runs replayed, against {control} of the {} passing runs; \
             a run of this sweep violated it with chance {:.3} %",
            clause.clause,
            clause.failing_runs,
            plans.passing_total,
            clause.base_rate * 100.0
        );
        say!(
            "  {:>15} {:>8} {:>8}  condition reached by at least half the failing runs",
            "P(fail|reached)",
            "failing",
            "passing"
        );
        for hint in &clause.hints {
            say!(
                "  {:>14.1}% {:>8} {:>8}  {}",
                hint.fail_given_hit * 100.0,
                hint.failing_runs,
                hint.passing_runs,
                hint.condition
            );
        }
    }
    Ok(())
}
