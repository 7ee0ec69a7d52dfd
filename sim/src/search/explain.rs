//! `sim explain`: when a failing run's failure became inevitable. The run
//! is branched at instants over its whole length: each branch keeps the
//! recorded run up to its first event at or after the instant and draws a
//! fresh future from there (see [`Branch`]). The share of branches that
//! violate the same clause, against the instant, is the failure's chance
//! curve; where it rises most is where the run's fate was sealed, and the
//! events there are what sealed it. The grid is refined around the rise,
//! down to single instants when the budget allows.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::chance_curve::{
    CurvePoint, JUMP_MIN_RISE, first_at_or_after, instants_between, sealed, spread, steepest,
};
use super::explore::on_threads;
use crate::checker::check;
use crate::model::{Branch, EventKind, FaultConfig, FaultEvent, History, RunSpec};
use crate::report::ChanceBand;
use crate::subject::Sim;

/// How thoroughly to explain.
#[derive(Debug, Clone)]
pub struct ExplainConfig {
    /// Instants on the first, even grid over the run. Default 24.
    pub points: usize,
    /// Branches drawn at each instant. Default 100.
    pub branches: usize,
    /// Instants tried inside the steepest interval, each refinement.
    /// Default 8.
    pub refine_points: usize,
    /// Threads. Default 1.
    pub jobs: usize,
    /// Seeds the branches' salts and knobs, so an explanation repeats.
    /// Default 1.
    pub seed: u64,
}

impl Default for ExplainConfig {
    fn default() -> Self {
        Self {
            points: 24,
            branches: 100,
            refine_points: 8,
            jobs: 1,
            seed: 1,
        }
    }
}

/// A failure explained.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// The clause the run violates first.
    pub clause: &'static str,
    /// That violation, in words.
    pub violation: String,
    /// The events that show it.
    pub violation_events: Vec<usize>,
    /// The chance curve, instants in order.
    pub curve: Vec<CurvePoint>,
    /// Where the chance jumps: the curve's adjacent points with the largest
    /// rise between them (the earliest of equals).
    pub jump: (CurvePoint, CurvePoint),
    /// The events inside the jump, kept by the later point's branches and
    /// not by the earlier's: what made the failure (all but) inevitable.
    pub jump_events: Vec<usize>,
    /// The calls whose faults the jump's later point keeps and its earlier
    /// point draws afresh: those issued from the earlier point's event on
    /// (a call draws its faults just after it is issued, and a branch draws
    /// afresh from just after its event). A call's faults show only in its
    /// reply, often well after the jump.
    pub jump_calls: Vec<DrawnCall>,
    /// Where the chance last rose into [`SEALED_CHANCE`](super::SEALED_CHANCE) or more and
    /// stayed there, when that is not the jump; the first point twice when
    /// it is there from the start.
    pub sealed: Option<(CurvePoint, CurvePoint)>,
    /// A branch from the rise's start that failed and one that did not,
    /// as replay tokens, when the branches drew both.
    pub failing_branch: Option<RunSpec>,
    /// See `failing_branch`.
    pub passing_branch: Option<RunSpec>,
    /// As `jump_calls`, for where the chance rose to [`SEALED_CHANCE`](super::SEALED_CHANCE).
    pub sealed_calls: Vec<DrawnCall>,
    /// Branch runs spent.
    pub runs: usize,
}

/// A call whose faults were drawn inside an interval of the curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DrawnCall {
    /// Its `Invoke` event.
    pub issued: usize,
    /// Its `Return` event, if the reply came before the run ended.
    pub replied: Option<usize>,
    /// The fault the plan puts on it, if any (the run's own draws are not
    /// recorded; the reply shows what they did).
    pub planned: Option<FaultEvent>,
}

impl Explanation {
    /// Whether the curve jumps at all: a failure that fails from the start
    /// in nearly every future has no instant that sealed it.
    pub fn jump_is_clear(&self) -> bool {
        self.jump.1.chance() - self.jump.0.chance() >= JUMP_MIN_RISE
    }

    /// The chance curve as a picture's band (`sim explain --svg`).
    pub fn band(&self) -> ChanceBand {
        ChanceBand {
            label: format!("P({})", self.clause),
            points: (self.curve.iter())
                .map(|point| (point.at_ms, point.chance()))
                .collect(),
            jump: (self.jump.0.at_ms, self.jump.1.at_ms),
        }
    }
}

/// Rounds of refinement at most: each narrows the steepest interval about
/// `refine_points` times, so four reach single instants in all but runs
/// of tens of thousands of events.
const REFINEMENTS_MAX: usize = 4;

/// The most a branch's future draws for each call fault's odds, in per
/// mille. Harsher than the swarm's (at most 100-300): a future must be
/// able to end the term a run was in, or every instant of a failure that
/// needs no fault looks sealed from the start.
const FUTURE_ODDS_PERMILLE_MAX: u32 = 400;

/// A branch future's call-fault knobs, from `seed`: each odds uniform up
/// to [`FUTURE_ODDS_PERMILLE_MAX`], added latency up to 400 ms.
fn future_faults(seed: u64) -> FaultConfig {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut odds = || rng.gen_range(0..=FUTURE_ODDS_PERMILLE_MAX);
    FaultConfig {
        reject_permille: odds(),
        ambiguous_permille: odds(),
        null_renew_permille: odds(),
        renew_reply_delay_permille: odds(),
        latency_ms_max: u64::from(odds()),
        ..FaultConfig::default()
    }
}

/// The branch of `spec` at `at_ms` numbered `salt`.
pub fn branch_of(spec: &RunSpec, at_ms: i64, salt: u64) -> RunSpec {
    let knob_seed = ChaCha8Rng::seed_from_u64(salt).r#gen();
    RunSpec {
        branch: Some(Branch {
            at_ms: u64::try_from(at_ms).unwrap_or(0),
            salt,
            faults: Some(future_faults(knob_seed)),
        }),
        ..spec.clone()
    }
}

/// Explains `spec`'s failure; `None` when its run keeps every clause.
pub fn explain(spec: &RunSpec, config: &ExplainConfig) -> Result<Option<Explanation>, String> {
    let history = Sim::new(spec).run().map_err(|error| error.to_string())?;
    let verdict = check(&history);
    let Some(first) = verdict.violations.first() else {
        return Ok(None);
    };
    let clause = first.clause;
    // A run's last events may come a little past its schedule and its
    // stops' bound, where a branch may not start (nor change anything).
    let branchable_ms = spec.duration_ms.saturating_add(spec.stop_bound_ms());
    let end_ms = (history.events.last().map_or(0, |e| e.at_ms))
        .min(i64::try_from(branchable_ms).unwrap_or(i64::MAX));
    let mut salts = ChaCha8Rng::seed_from_u64(config.seed ^ spec.seed.rotate_left(32));
    let mut runs = 0;
    let mut measure = |instants: &[i64], runs: &mut usize| {
        let mut drawn = Vec::new();
        for &at_ms in instants {
            for _ in 0..config.branches {
                let salt = salts.r#gen::<u64>() | 1;
                drawn.push((at_ms, branch_of(spec, at_ms, salt)));
            }
        }
        *runs += drawn.len();
        let failed = run_all(&drawn, clause, config.jobs);
        instants
            .iter()
            .enumerate()
            .map(|(index, &at_ms)| {
                let range = index * config.branches..(index + 1) * config.branches;
                let (failing, passing) = split(&drawn[range.clone()], &failed[range]);
                let point = CurvePoint {
                    at_ms,
                    seq: first_at_or_after(&history, at_ms),
                    failing: failing.len(),
                    branches: config.branches,
                };
                (point, failing.first().cloned(), passing.first().cloned())
            })
            .collect::<Vec<_>>()
    };
    let points = config.points.max(2);
    let grid: Vec<i64> = (0..=points)
        .map(|k| end_ms * k as i64 / points as i64)
        .collect();
    let mut curve = measure(&grid, &mut runs);
    for _ in 0..REFINEMENTS_MAX {
        let mut chosen = Vec::new();
        for (from, to) in [steepest(&curve), sealed(&curve)] {
            let inside = instants_between(&history, curve[from].0.at_ms, curve[to].0.at_ms);
            chosen.extend(spread(&inside, config.refine_points));
        }
        chosen.sort_unstable();
        chosen.dedup();
        if chosen.is_empty() {
            break;
        }
        curve.extend(measure(&chosen, &mut runs));
        curve.sort_by_key(|(point, _, _)| point.at_ms);
        curve.dedup_by_key(|(point, _, _)| point.at_ms);
    }
    let (from, to) = steepest(&curve);
    let jump = (curve[from].0, curve[to].0);
    let (sealed_from, sealed_to) = sealed(&curve);
    Ok(Some(Explanation {
        clause,
        violation: first.message.clone(),
        violation_events: first.events.clone(),
        curve: curve.iter().map(|(point, _, _)| *point).collect(),
        jump,
        jump_events: (jump.0.seq + 1..=jump.1.seq).collect(),
        jump_calls: calls_drawn(spec, &history, jump.0.seq..jump.1.seq),
        sealed: (sealed_from != from || sealed_to != to)
            .then(|| (curve[sealed_from].0, curve[sealed_to].0)),
        failing_branch: curve[from].1.clone(),
        passing_branch: curve[from].2.clone(),
        sealed_calls: if (sealed_from, sealed_to) == (from, to) {
            Vec::new()
        } else {
            calls_drawn(
                spec,
                &history,
                curve[sealed_from].0.seq..curve[sealed_to].0.seq,
            )
        },
        runs,
    }))
}

/// The calls issued by the events in `seqs`, with their replies and the
/// plan's faults on them.
fn calls_drawn(spec: &RunSpec, history: &History, seqs: Range<usize>) -> Vec<DrawnCall> {
    seqs.filter_map(|issued| match history.events[issued].kind {
        EventKind::Invoke { call, .. } => Some(DrawnCall {
            issued,
            replied: (history.events.iter().skip(issued))
                .position(|e| matches!(e.kind, EventKind::Return { call: c, .. } if c == call))
                .map(|after| issued + after),
            planned: super::planned_fault_on(spec, history, call),
        }),
        _ => None,
    })
    .collect()
}

/// The branches that failed and those that did not.
fn split(drawn: &[(i64, RunSpec)], failed: &[bool]) -> (Vec<RunSpec>, Vec<RunSpec>) {
    let mut failing = Vec::new();
    let mut passing = Vec::new();
    for ((_, spec), &failed) in drawn.iter().zip(failed) {
        if failed {
            failing.push(spec.clone());
        } else {
            passing.push(spec.clone());
        }
    }
    (failing, passing)
}

/// Runs each branch; whether each violated `clause`.
fn run_all(drawn: &[(i64, RunSpec)], clause: &str, jobs: usize) -> Vec<bool> {
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(vec![false; drawn.len()]);
    on_threads(jobs.min(drawn.len()).max(1), || {
        loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            let Some((_, spec)) = drawn.get(at) else {
                return;
            };
            let history = Sim::new(spec)
                .run()
                .expect("a branch of a valid plan is valid");
            let violated = check(&history)
                .violations
                .iter()
                .any(|v| v.clause == clause);
            failed.lock().expect("no panic while running")[at] = violated;
        }
    });
    failed.into_inner().expect("no panic while running")
}
