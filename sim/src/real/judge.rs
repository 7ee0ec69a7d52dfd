//! Real runs judged, as every real command needs them: a replay's attempts
//! until one violates a clause, and a scenario run in the simulator and
//! against PostgreSQL, each judged by its own expectation; and a batch of
//! takeover stories run at once.

use super::run::{RealRun, not_applied, run_plan};
use super::server::RealServer;
use crate::checker::{Verdict, check};
use crate::model::{History, RunSpec};
use crate::report::{Scenario, Story, story_plan};
use crate::subject::Sim;

/// One attempt of a replay against PostgreSQL.
pub struct Attempt {
    /// Which attempt, from 1.
    pub number: u32,
    /// What the run left.
    pub run: RealRun,
    /// The checker's verdict on its history.
    pub verdict: Verdict,
}

/// Runs `spec` up to `attempts` times on `server`, each on a fresh
/// database (`replay_attempt_K`), handing each attempt to `each` (to save
/// or print it); stops at the first attempt that violates a clause and
/// returns it, or `None` when none did. An error from `each` stops the
/// attempts and is returned.
pub fn attempt_until_violated(
    server: &RealServer,
    spec: &RunSpec,
    attempts: u32,
    mut each: impl FnMut(&Attempt) -> Result<(), String>,
) -> Result<Option<Attempt>, String> {
    for number in 1..=attempts {
        let run = server.run(spec, &format!("replay_attempt_{number}"));
        let verdict = check(&run.history);
        let attempt = Attempt {
            number,
            run,
            verdict,
        };
        each(&attempt)?;
        if !attempt.verdict.passed() {
            return Ok(Some(attempt));
        }
    }
    Ok(None)
}

/// A scenario run in the simulator and once against PostgreSQL.
pub struct Comparison {
    /// The simulated history.
    pub simulated_history: History,
    /// The checker's verdict on it.
    pub simulated_verdict: Verdict,
    /// The scenario's expectation held of the simulated run, or what broke
    /// it.
    pub simulated: Result<(), String>,
    /// What the real run left.
    pub real: RealRun,
    /// The checker's verdict on the real history.
    pub verdict: Verdict,
    /// The expectation held of the real run (with the texts it may miss
    /// and did), or what broke it.
    pub judged: Result<Vec<String>, String>,
    /// Each `expect.shows` text the real timeline lacks, marked when the
    /// scenario lets real mode miss it.
    pub missed: Vec<String>,
    /// The parts of the plan real mode could not apply.
    pub not_applied: Vec<String>,
}

/// Runs `scenario` in the simulator and on `server` (database `name`), and
/// judges each run by the scenario's expectation.
pub fn compare_scenario(
    server: &RealServer,
    scenario: &Scenario,
    name: &str,
) -> Result<Comparison, String> {
    let simulated_history = Sim::new(&scenario.run).run().map_err(|e| e.to_string())?;
    let simulated_verdict = check(&simulated_history);
    let simulated = scenario.judge(&simulated_verdict, &simulated_history.timeline());
    let real = server.run(&scenario.run, name);
    let verdict = check(&real.history);
    let timeline = real.history.timeline();
    let judged = scenario.judge_real(&verdict, &timeline);
    let missed = (scenario.expect.shows.iter())
        .filter(|text| !timeline.contains(text.as_str()))
        .map(|text| {
            let excused = scenario.expect.real_may_miss.contains(text);
            let text = format!("`{}`", text.replace('|', "\\|"));
            if excused { text + " (may miss)" } else { text }
        })
        .collect();
    Ok(Comparison {
        simulated_history,
        simulated_verdict,
        simulated,
        real,
        verdict,
        judged,
        missed,
        not_applied: not_applied(&scenario.run),
    })
}

/// `story`'s plans for seeds `start + k`, each `k` of `ks`, run at once on
/// `server`, each on a database of its own: each with its `k` and the
/// instant its fault struck. They spend their time waiting, so a few at
/// once barely touch each other's timing.
pub fn takeover_batch(
    server: &RealServer,
    story: Story,
    start: u64,
    ks: &[u64],
) -> Vec<(u64, u64, RealRun)> {
    let plans: Vec<_> = (ks.iter())
        .map(|&k| (k, story_plan(story, start + k)))
        .collect();
    let finished = server.block_on(futures_util::future::join_all(plans.iter().map(
        |(k, (spec, _))| {
            let name = format!("takeover_{}_{k}", story.name().replace('-', "_"));
            async move { run_plan(server.server(), spec, &name).await }
        },
    )));
    (plans.iter().zip(finished))
        .map(|((k, (_, at_ms)), run)| (*k, *at_ms, run))
        .collect()
}

/// "no violation", or "violates" and the clauses.
pub fn verdict_text(verdict: &Verdict) -> String {
    let clauses = verdict.clauses();
    if clauses.is_empty() {
        "no violation".to_owned()
    } else {
        format!("violates {}", clauses.join(", "))
    }
}
