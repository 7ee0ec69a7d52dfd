//! Shrinking a failing plan: drop events, turn fault knobs off, move
//! settings to their defaults, remove replicas, shorten the run, for as
//! long as the run still violates the same clause. Deterministic (a run is a
//! function of its spec) and bounded by a number of runs.

use crate::checker::check;
use crate::model::{FaultKnob, History, RunSpec, SpecError, WorkerSpec};
use crate::subject::Sim;

use super::space::fit;

/// Runs a shrink may spend by default: enough for a typical swarm plan to
/// reach its fixpoint a few passes over, a few seconds at most.
pub const SHRINK_RUNS: usize = 400;

/// Other seeds a candidate plan is tried with before it is given up.
const RESEEDS: u64 = 2;

/// A shrunk plan and what it took.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The smallest failing plan found.
    pub spec: RunSpec,
    /// The clause it still violates.
    pub clause: &'static str,
    /// [`plan_size`] before and after.
    pub size_before: usize,
    /// See `size_before`.
    pub size_after: usize,
    /// Runs spent.
    pub runs: usize,
}

/// How big a plan is: timed events, fault knobs on, explicit skews,
/// replicas beyond one, and settings off their defaults.
pub fn plan_size(spec: &RunSpec) -> usize {
    let knobs_on = spec
        .faults
        .knobs()
        .into_iter()
        .filter(|(_, value)| *value > 0)
        .count();
    let d = RunSpec::default();
    let settings = worker_fields(&spec.worker)
        .into_iter()
        .zip(worker_fields(&d.worker))
        .filter(|(a, b)| a != b)
        .count()
        + [
            spec.rpc_timeout_ms != d.rpc_timeout_ms,
            (spec.db_batch_ms_min, spec.db_batch_ms_max) != (d.db_batch_ms_min, d.db_batch_ms_max),
            (spec.db_commit_ms_min, spec.db_commit_ms_max)
                != (d.db_commit_ms_min, d.db_commit_ms_max),
            spec.statement_timeout_ms != d.statement_timeout_ms,
            spec.lock_timeout_ms != d.lock_timeout_ms,
            spec.idle_in_transaction_timeout_ms != d.idle_in_transaction_timeout_ms,
            !spec.skews_ms.is_empty(),
        ]
        .into_iter()
        .filter(|&off| off)
        .count();
    spec.events.len() + knobs_on + settings + spec.replicas as usize - 1
}

/// The worker's settings in one order, for counting and setting them.
fn worker_fields(w: &WorkerSpec) -> [u64; 9] {
    [
        w.batch_size.into(),
        w.term_row_cap.into(),
        w.retention_ms,
        w.lease_ttl_ms,
        w.renew_interval_ms,
        w.expiry_margin_ms,
        w.term_interval_ms,
        w.loss_backoff_ms,
        w.term_jitter_ms_max,
    ]
}

/// The first clause `spec`'s run violates, if any.
pub fn violated_clause(spec: &RunSpec) -> Option<&'static str> {
    let history = Sim::new(spec).recorded(true).run().ok()?;
    check(&history).violations.first().map(|v| v.clause)
}

/// Shrinks `spec`, which violates `clause`, spending at most `budget` runs
/// of the worker its spec names.
pub fn shrink(spec: &RunSpec, clause: &'static str, budget: usize) -> Shrunk {
    shrink_with(spec, clause, budget, |candidate| Sim::new(candidate).run())
}

/// [`shrink`] with runs made by `simulate` (another worker's factory).
pub fn shrink_with(
    spec: &RunSpec,
    clause: &'static str,
    budget: usize,
    simulate: impl Fn(&RunSpec) -> Result<History, SpecError>,
) -> Shrunk {
    let (best, runs) = shrink_while(spec, budget, |candidate| {
        simulate(candidate).is_ok_and(|history| {
            check(&history)
                .violations
                .iter()
                .any(|v| v.clause == clause)
        })
    });
    Shrunk {
        size_before: plan_size(spec),
        size_after: plan_size(&best),
        spec: best,
        clause,
        runs,
    }
}

/// The smallest plan reachable from `spec` one step at a time while
/// `fails` holds of every step (`spec` itself is assumed to fail), and the
/// runs spent; passes repeat until none helps or `budget` runs are spent.
pub fn shrink_while(
    spec: &RunSpec,
    budget: usize,
    fails: impl Fn(&RunSpec) -> bool,
) -> (RunSpec, usize) {
    let mut best = spec.clone();
    let mut runs = 0;
    'passes: loop {
        let mut improved = false;
        for candidate in candidates(&best) {
            if runs >= budget {
                break 'passes;
            }
            if candidate == best || candidate.validate().is_err() {
                continue;
            }
            // A smaller plan perturbs the schedule, and a race may need
            // another seed to recur: a few reseeded copies get a chance too.
            let reseeded = (0..=RESEEDS).map(|k| RunSpec {
                seed: candidate.seed.wrapping_add(k),
                ..candidate.clone()
            });
            let mut found = None;
            for attempt in reseeded {
                if runs >= budget {
                    break;
                }
                runs += 1;
                if fails(&attempt) {
                    found = Some(attempt);
                    break;
                }
            }
            if let Some(smaller) = found {
                // The rest of this pass was derived from the old plan:
                // derive again from the smaller one.
                best = smaller;
                improved = true;
                break;
            }
        }
        if !improved {
            break;
        }
    }
    (best, runs)
}

/// One step smaller in each direction: events, then the run's size
/// (replicas, duration, backlog), then faults and settings.
fn candidates(spec: &RunSpec) -> Vec<RunSpec> {
    let mut out = Vec::new();
    for index in (0..spec.events.len()).rev() {
        let mut c = spec.clone();
        c.events.remove(index);
        out.push(c);
    }
    // Each fault half its size, where its kind says how.
    for (index, event) in spec.events.iter().enumerate() {
        let Some(smaller) = event.halved() else {
            continue;
        };
        let mut c = spec.clone();
        c.events[index] = smaller;
        out.push(c);
    }
    if spec.replicas > 1 {
        out.push(without_last_replica(spec));
    }
    if spec.duration_ms > 2_000 {
        out.push(shortened(spec, spec.duration_ms / 2));
    }
    if spec.backlog_rows > 0 {
        out.push(RunSpec {
            backlog_rows: spec.backlog_rows / 2,
            ..spec.clone()
        });
    }
    for &knob in FaultKnob::ALL {
        let value = spec.faults.get(knob);
        for weaker in [0, value / 2] {
            if weaker < value {
                let mut c = spec.clone();
                c.faults
                    .set(knob, weaker)
                    .expect("weaker is within the limit");
                out.push(c);
            }
        }
    }
    if !spec.skews_ms.is_empty() {
        out.push(RunSpec {
            skews_ms: Vec::new(),
            ..spec.clone()
        });
    }
    out.extend(worker_defaults(spec));
    let d = RunSpec::default();
    out.push(RunSpec {
        rpc_timeout_ms: d.rpc_timeout_ms,
        ..spec.clone()
    });
    out.push(RunSpec {
        db_batch_ms_min: d.db_batch_ms_min,
        db_batch_ms_max: d.db_batch_ms_max,
        ..spec.clone()
    });
    out.push(RunSpec {
        db_commit_ms_min: d.db_commit_ms_min,
        db_commit_ms_max: d.db_commit_ms_max,
        ..spec.clone()
    });
    out.push(RunSpec {
        db_commit_ms_min: spec.db_commit_ms_min / 2,
        db_commit_ms_max: spec.db_commit_ms_max / 2,
        ..spec.clone()
    });
    out.push(RunSpec {
        statement_timeout_ms: d.statement_timeout_ms,
        ..spec.clone()
    });
    out.push(RunSpec {
        lock_timeout_ms: d.lock_timeout_ms,
        ..spec.clone()
    });
    out.push(RunSpec {
        idle_in_transaction_timeout_ms: d.idle_in_transaction_timeout_ms,
        ..spec.clone()
    });
    out
}

/// Each worker setting back at its default, then halfway there, one at a
/// time, refitted.
fn worker_defaults(spec: &RunSpec) -> Vec<RunSpec> {
    let (now, default) = (
        worker_fields(&spec.worker),
        worker_fields(&WorkerSpec::default()),
    );
    let to_default = (0..now.len()).map(|i| (i, default[i]));
    let halfway = (0..now.len()).map(|i| (i, now[i] / 2 + default[i] / 2));
    to_default
        .chain(halfway)
        .map(|(index, value)| {
            let mut c = spec.clone();
            set_worker_field(&mut c.worker, index, value);
            fit(&mut c.worker);
            c
        })
        .collect()
}

/// Sets the `index`-th field of [`worker_fields`]'s order.
fn set_worker_field(w: &mut WorkerSpec, index: usize, value: u64) {
    let count = |value: u64| u32::try_from(value).expect("between two u32 values");
    match index {
        0 => w.batch_size = count(value),
        1 => w.term_row_cap = count(value),
        2 => w.retention_ms = value,
        3 => w.lease_ttl_ms = value,
        4 => w.renew_interval_ms = value,
        5 => w.expiry_margin_ms = value,
        6 => w.term_interval_ms = value,
        7 => w.loss_backoff_ms = value,
        8 => w.term_jitter_ms_max = value,
        _ => unreachable!("WorkerSpec has nine settings"),
    }
}

fn without_last_replica(spec: &RunSpec) -> RunSpec {
    let replicas = spec.replicas - 1;
    let mut c = spec.clone();
    c.replicas = replicas;
    c.events
        .retain(|event| event.replica().is_none_or(|r| r <= replicas));
    if !c.skews_ms.is_empty() {
        c.skews_ms.truncate(replicas as usize);
    }
    c
}

fn shortened(spec: &RunSpec, duration_ms: u64) -> RunSpec {
    let mut c = spec.clone();
    c.duration_ms = duration_ms;
    c.events
        .retain(|event| event.at_ms().is_none_or(|at| at < duration_ms));
    c
}
