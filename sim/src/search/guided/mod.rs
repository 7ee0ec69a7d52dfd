//! Guided exploration: a search that learns from each run where the rare
//! states are. Each run's feedback (`signature`) feeds a corpus of plans
//! that reached something new (`corpus`); new plans are mutations of
//! corpus plans chosen by energy (`mutate`), or fresh swarm plans. The
//! campaign is a function of its seed: batches are drawn before they run
//! and observed in order, so `--jobs` changes the speed, never the runs.
//! `words` says a feature in words, for the hints.

mod bench;
mod corpus;
mod mutate;
mod signature;
mod store;
mod words;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use self::corpus::{Chooser, Corpus};
use self::signature::Feedback;
pub(crate) use self::signature::{Feature, feedback};
pub(crate) use self::words::describe;
use super::explore::{ExploreConfig, ExploreSummary, Progress, on_threads, record};
use super::swarm::swarm;
use crate::checker::{Verdict, check, coverage};
use crate::model::{History, RunSpec};
use crate::report::replay_command;
use crate::subject::Sim;

pub use self::bench::{
    GuidedBench, GuidedBenchConfig, Reach, Streams, bench_guided, thread_cpu_secs,
};
pub use self::store::{corpus_text, parse_corpus};

/// Runs drawn together and observed together. Fixed, so that a campaign
/// is the same whatever the threads.
const BATCH: u64 = 32;

/// Of each batch's runs, the share drawn fresh from the swarm rather than
/// mutated from the corpus: new plans keep the corpus from narrowing.
const FRESH_PERMILLE: u32 = 200;

/// Keeps the campaign's draws apart from every other stream of a seed.
const CAMPAIGN_SALT: u64 = 0x6775_6964_6564_0001;

/// What a guided campaign reached, beyond the sweep's summary.
#[derive(Debug, Clone, Default)]
pub struct GuidedReport {
    /// Plans in the corpus at the end (loaded ones included).
    pub corpus_plans: usize,
    /// Plans loaded from `--corpus` before the campaign.
    pub loaded_plans: usize,
    /// Distinct abstract states reached (loaded plans' included).
    pub states: usize,
    /// Distinct features of every kind reached.
    pub features: usize,
    /// The most extreme value reached of each guidance figure.
    pub records: BTreeMap<&'static str, i64>,
    /// The corpus's plans, oldest first (what `--corpus` saves).
    pub plans: Vec<RunSpec>,
}

/// One run's verdict and what the search learns from it.
struct Outcome {
    spec: RunSpec,
    verdict: Verdict,
    end_ms: i64,
    reached: BTreeMap<&'static str, u64>,
    feedback: Feedback,
}

fn run(spec: RunSpec) -> Outcome {
    let history: History = Sim::new(&spec)
        .run()
        .expect("the campaign builds valid specs");
    let verdict = check(&history);
    let reached = coverage(&history);
    let feedback = feedback(&history, &reached);
    let end_ms = history.events.last().map_or(0, |e| e.at_ms);
    Outcome {
        spec,
        verdict,
        end_ms,
        reached,
        feedback,
    }
}

/// Runs a guided campaign over the runs `config` names (its seeds are the
/// runs' numbers; `config.start` is also the campaign's seed), starting
/// from the plans in `seed_plans`, until done or `stop` is set. A failure
/// is listed under its run's number, with its plan in
/// [`ExploreSummary::plans`].
pub fn guided_until(
    config: &ExploreConfig,
    seed_plans: &[RunSpec],
    stop: &AtomicBool,
    progress: impl Fn(Progress) + Sync,
) -> (ExploreSummary, GuidedReport) {
    let started = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(config.start ^ CAMPAIGN_SALT);
    rng.set_stream(config.shard.index);
    let mut corpus = Corpus::default();
    for spec in seed_plans {
        let outcome = run(spec.clone());
        corpus.observe(&outcome.spec, &outcome.feedback, !outcome.verdict.passed());
    }
    let loaded_plans = corpus.len();
    let summary = Mutex::new(ExploreSummary::default());
    let mut taken = 0u64;
    let mut jobs_run = config.jobs.max(1);
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let indices: Vec<u64> = (taken..taken + BATCH)
            .map_while(|k| config.shard.nth_index(k).filter(|&i| i < config.seeds))
            .collect();
        if indices.is_empty() {
            break;
        }
        taken += indices.len() as u64;
        // One chooser a batch: a batch is drawn from one corpus.
        let chooser = corpus.chooser();
        let plans: Vec<(u64, RunSpec)> = indices
            .iter()
            .map(|&index| {
                let number = config.start.wrapping_add(index);
                (number, draw(config, &corpus, &chooser, number, &mut rng))
            })
            .collect();
        let (outcomes, started_jobs) = run_batch(&plans, config.jobs);
        jobs_run = jobs_run.min(started_jobs);
        for ((number, _), outcome) in plans.iter().zip(outcomes) {
            let failed = !outcome.verdict.passed();
            corpus.observe(&outcome.spec, &outcome.feedback, failed);
            let at = record(
                &summary,
                *number,
                &outcome.spec,
                &outcome.verdict,
                outcome.end_ms,
                outcome.reached,
            );
            if failed {
                summary
                    .lock()
                    .expect("no panic while summing")
                    .plans
                    .insert(*number, outcome.spec);
            }
            progress(at);
        }
    }
    let mut summary = summary.into_inner().expect("no panic while summing");
    summary.wall_secs = started.elapsed().as_secs_f64();
    summary.jobs_run = jobs_run;
    let first_not_taken = config.shard.nth_index(taken);
    summary.visited = first_not_taken.map_or(config.seeds, |index| index.min(config.seeds));
    summary.failures.sort_by_key(|failure| failure.seed);
    summary.first_failure = summary.failures.first().map(|failure| {
        let spec = summary.plans[&failure.seed].clone();
        let command = replay_command(&spec);
        (spec, command)
    });
    let report = GuidedReport {
        corpus_plans: corpus.len(),
        loaded_plans,
        states: corpus.states_reached(),
        features: corpus.features_reached(),
        records: corpus.records(),
        plans: corpus.specs().cloned().collect(),
    };
    (summary, report)
}

/// The plan of run `number`: fresh from the swarm while the corpus is
/// empty and for a share of runs after; else a mutation of a corpus plan
/// chosen by energy, keeping the parent's seed half the time (a fork
/// always keeps it: its run starts on the parent's schedule, though it
/// does not replay the parent's prefix exactly; see `sim/docs/guided.md`).
fn draw(
    config: &ExploreConfig,
    corpus: &Corpus,
    chooser: &Chooser,
    number: u64,
    rng: &mut ChaCha8Rng,
) -> RunSpec {
    let fresh = |seed: u64| RunSpec {
        flaw: config.flaw,
        ..swarm(seed, config.replicas)
    };
    if corpus.len() == 0 || rng.gen_range(0..1_000) < FRESH_PERMILLE {
        return fresh(number);
    }
    let (parent, fork_ms) = corpus.choose(chooser, rng);
    let (other, _) = corpus.choose(chooser, rng);
    let parent_spec = corpus.spec(parent).clone();
    match mutate::mutate(&parent_spec, corpus.spec(other), fork_ms, rng) {
        Some((mut child, forked)) => {
            if !forked && rng.gen_bool(0.5) {
                child.seed = number;
            }
            child.flaw = config.flaw;
            child
        }
        None => RunSpec {
            seed: number,
            ..parent_spec
        },
    }
}

/// Runs a batch on up to `jobs` threads; the outcomes in the batch's
/// order, and the threads the system started.
fn run_batch(plans: &[(u64, RunSpec)], jobs: usize) -> (Vec<Outcome>, usize) {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..plans.len()).map(|_| None).collect());
    let work = || {
        loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            let Some((_, spec)) = plans.get(at) else {
                return;
            };
            let outcome = run(spec.clone());
            done.lock().expect("no panic while running")[at] = Some(outcome);
        }
    };
    let started = on_threads(jobs.min(plans.len()), work);
    let outcomes = done
        .into_inner()
        .expect("no panic while running")
        .into_iter()
        .map(|outcome| outcome.expect("every plan of the batch ran"))
        .collect();
    (outcomes, started)
}
