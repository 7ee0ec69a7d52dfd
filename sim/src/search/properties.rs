//! The property suite as a library: strategies over fault plans, and a
//! search that runs any worker implementation through them, so that your
//! worker faces the same tests as ours.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{
    FileFailurePersistence, RngSeed, TestCaseError, TestError, TestRunner,
};

pub use super::event_draws::event;
pub use super::shrink::plan_size;
use super::shrink::{SHRINK_RUNS, shrink_with};
use super::space::{self, fit};
use super::swarm::strongest;
use crate::checker::{Verdict, check};
use crate::model::{
    FaultConfig, FaultEvent, FaultKnob, Flaw, History, RunSpec, SpecError, WorkerSpec,
};
use crate::report::format_failure;
use crate::subject::Sim;
use crate::world::WorkerFactory;

/// At least 1,000 cases by default; `PROPTEST_CASES` overrides. The
/// generator's seed is fixed so CI is repeatable; `PROPTEST_RNG_SEED` picks
/// another to explore further.
pub fn config(default_cases: u32) -> ProptestConfig {
    let defaults = ProptestConfig::default();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    let seeded = std::env::var_os("PROPTEST_RNG_SEED").is_some();
    ProptestConfig {
        cases: cases.unwrap_or(default_cases),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        rng_seed: if seeded {
            defaults.rng_seed
        } else {
            RngSeed::Fixed(0x5EED)
        },
        ..defaults
    }
}

/// Fault knobs, each off or at a random strength up to what the swarm
/// draws ([`FaultKnob::ALL`]'s order).
pub fn faults() -> impl Strategy<Value = FaultConfig> {
    let renew_interval_ms = WorkerSpec::default().renew_interval_ms;
    let knobs: Vec<BoxedStrategy<u64>> = FaultKnob::ALL
        .iter()
        .map(|&knob| prop_oneof![Just(0u64), 1..=strongest(knob, renew_interval_ms)].boxed())
        .collect();
    knobs.prop_map(|values| {
        let mut faults = FaultConfig::default();
        for (&knob, value) in FaultKnob::ALL.iter().zip(values) {
            faults
                .set(knob, value)
                .expect("drawn within the knob's limit");
        }
        faults
    })
}

fn fold(mut event: FaultEvent, replicas: u32, duration_ms: u64) -> FaultEvent {
    let (replica, at_ms) = event.replica_and_at_ms_mut();
    if let Some(replica) = replica {
        *replica = (*replica - 1) % replicas + 1;
    }
    if let Some(at_ms) = at_ms {
        *at_ms %= duration_ms;
    }
    event
}

/// `default`, or a value from `range`; shrinks toward `default`.
fn or_default<T>(default: T, range: std::ops::RangeInclusive<T>) -> BoxedStrategy<T>
where
    T: Clone + std::fmt::Debug + 'static,
    std::ops::RangeInclusive<T>: Strategy<Value = T>,
{
    prop_oneof![Just(default), range].boxed()
}

/// The worker's whole configuration, each setting at its default or drawn
/// from the search space (`space.rs`), then fitted to stay valid; shrinks
/// toward the defaults.
pub fn worker() -> impl Strategy<Value = WorkerSpec> {
    let d = WorkerSpec::default();
    let counts = (
        or_default(d.batch_size, space::BATCH_SIZE),
        or_default(d.term_row_cap, space::TERM_ROW_CAP),
    );
    let times = (
        or_default(d.retention_ms, space::RETENTION_MS),
        or_default(d.lease_ttl_ms, space::LEASE_TTL_MS),
        or_default(d.renew_interval_ms, space::RENEW_INTERVAL_MS),
        or_default(d.expiry_margin_ms, space::EXPIRY_MARGIN_MS),
        or_default(d.term_interval_ms, space::TERM_INTERVAL_MS),
        or_default(d.loss_backoff_ms, space::LOSS_BACKOFF_MS),
        or_default(d.term_jitter_ms_max, space::TERM_JITTER_MS_MAX),
    );
    (counts, times).prop_map(|((batch_size, term_row_cap), times)| {
        // In the order of `times` above.
        let mut worker = WorkerSpec {
            batch_size,
            term_row_cap,
            retention_ms: times.0,
            lease_ttl_ms: times.1,
            renew_interval_ms: times.2,
            expiry_margin_ms: times.3,
            term_interval_ms: times.4,
            loss_backoff_ms: times.5,
            term_jitter_ms_max: times.6,
        };
        fit(&mut worker);
        worker
    })
}

/// The call timeout, the database's speed and its three server-side
/// bounds (each at its default, off, or drawn); shrinks toward defaults.
fn database() -> impl Strategy<Value = (u64, u64, u64, [u64; 3])> {
    let d = RunSpec::default();
    let bound = |default: u64| prop_oneof![Just(default), Just(0), space::BOUND_MS].boxed();
    (
        or_default(d.rpc_timeout_ms, space::RPC_TIMEOUT_MS),
        or_default(d.db_batch_ms_min, space::DB_BATCH_MS_MIN),
        or_default(
            d.db_batch_ms_max - d.db_batch_ms_min,
            space::DB_BATCH_MS_SPREAD,
        ),
        [
            bound(d.statement_timeout_ms),
            bound(d.lock_timeout_ms),
            bound(d.idle_in_transaction_timeout_ms),
        ],
    )
}

/// Seed, replicas, duration, the worker's configuration, the database's
/// settings, faults, explicit skews and timed events; shrinking drops
/// events, turns knobs off, moves settings to their defaults and shortens
/// the run.
pub fn spec() -> impl Strategy<Value = RunSpec> {
    let events = prop::collection::vec(event(), 0..4);
    let skews = prop_oneof![
        Just(Vec::new()),
        prop::collection::vec(-2_000..=2_000i64, 5)
    ];
    let plan = (any::<u64>(), 1..=5u32, 5_000..=30_000u64, faults(), events);
    (plan, worker(), database(), skews).prop_map(
        |((seed, replicas, duration_ms, faults, events), worker, database, skews)| {
            let (rpc_timeout_ms, db_batch_ms_min, spread_ms, [statement, lock, idle]) = database;
            let mut skews_ms = skews;
            skews_ms.truncate(replicas as usize);
            RunSpec {
                seed,
                replicas,
                duration_ms,
                backlog_rows: 2_000,
                worker,
                rpc_timeout_ms,
                db_batch_ms_min,
                db_batch_ms_max: db_batch_ms_min + spread_ms,
                statement_timeout_ms: statement,
                lock_timeout_ms: lock,
                idle_in_transaction_timeout_ms: idle,
                faults,
                skews_ms,
                events: crate::model::first_per_call(
                    events
                        .into_iter()
                        .map(|e| fold(e, replicas, duration_ms))
                        .collect(),
                ),
                ..RunSpec::default()
            }
        },
    )
}

/// The smallest failing plan a search found, after shrinking.
#[derive(Debug, Clone)]
pub struct Counterexample {
    /// The shrunk spec.
    pub spec: RunSpec,
    /// Its verdict.
    pub verdict: Verdict,
    /// The failure as the one formatter prints it.
    pub report: String,
}

/// Runs `cases` generated plans (see [`spec`]) through the workers `factory`
/// builds and checks every clause; on a violation, shrinks the plan and
/// returns the smallest one found. (Its replay command runs the real worker:
/// a custom factory has no name the command line knows.)
pub fn search(factory: Arc<dyn WorkerFactory>, cases: u32) -> Result<(), Box<Counterexample>> {
    search_by(
        cases,
        |spec| spec,
        |spec| Sim::new(spec).factory(factory.clone()).run(),
    )
}

/// [`search`] for the real worker (`None`) or a flawed variant; the
/// counterexample's replay command reproduces it exactly.
pub fn search_flaw(flaw: Option<Flaw>, cases: u32) -> Result<(), Box<Counterexample>> {
    search_by(
        cases,
        |spec| RunSpec { flaw, ..spec },
        |spec| Sim::new(spec).run(),
    )
}

fn search_by(
    cases: u32,
    prepare: impl Fn(RunSpec) -> RunSpec,
    simulate: impl Fn(&RunSpec) -> Result<History, SpecError>,
) -> Result<(), Box<Counterexample>> {
    let mut runner = TestRunner::new(ProptestConfig {
        failure_persistence: None,
        ..config(cases)
    });
    let result = runner.run(&spec(), |spec| {
        let history = simulate(&prepare(spec)).expect("generated specs are valid");
        let verdict = check(&history);
        if verdict.passed() {
            Ok(())
        } else {
            Err(TestCaseError::fail("a clause was violated"))
        }
    });
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(_, spec)) => {
            // proptest shrinks each part of the plan on its own; ours then
            // drops what the violated clause does not need, across parts.
            let spec = prepare(spec);
            let history = simulate(&spec).expect("generated specs are valid");
            let clause = check(&history).violations[0].clause;
            let spec = shrink_with(&spec, clause, SHRINK_RUNS, &simulate).spec;
            let history = simulate(&spec).expect("shrunk specs are valid");
            let verdict = check(&history);
            let report = format_failure(&spec, &history, &verdict);
            Err(Box::new(Counterexample {
                spec,
                verdict,
                report,
            }))
        }
        Err(TestError::Abort(reason)) => panic!("the property search aborted: {reason}"),
    }
}
