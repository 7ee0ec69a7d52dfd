//! Deterministic simulation harness for the retention worker, on madsim.
//!
//! Map of the code:
//! - `spec.rs`: [`RunSpec`], everything that determines a run: seed, world
//!   shape, worker settings, [`FaultConfig`] and timed [`FaultEvent`]s.
//! - `world.rs`: [`run`] builds the nodes (lease service, database, replicas)
//!   in a fresh madsim runtime, injects the faults and returns a [`History`].
//! - `services.rs`: the lease service and the database as RPC nodes.
//! - `replica.rs`: a replica's client side (timeouts, fault injection,
//!   recording) and its process, which serves terms with the worker a
//!   [`WorkerFactory`] builds.
//! - `recorder.rs`: the shared event log.
//! - `history.rs`: [`History`] and its events, as JSON lines.
//! - `timeline.rs`: the fixed-column text timeline.
//! - `checker/`: [`check`] reads a history and reports every [`Violation`]
//!   by clause ID; `replica.rs` walks each worker's terms, `service.rs` what
//!   the services applied.
//! - `swarm.rs`: [`swarm`] draws a fault mix from the seed.
//! - `failure.rs`: [`format_failure`], the one failure formatter, and the
//!   replay token it prints.
//! - `explore.rs`: [`explore`] sweeps seeds over threads.
//! - `scenario.rs`: [`Scenario`] files: a described run and its expected
//!   outcome, with errors naming file, line and field.
//! - `report.rs`: [`scenario_report`], the reviewer's view that snapshots hold.
//! - `subject.rs`: the worker under test: [`SimulatedWorker`] and
//!   [`WorkerFactory`], implemented by [`RealWorker`] and by yours.
//! - `variant.rs`: [`VariantFactory`], a second worker that carries exactly
//!   one review [`Flaw`] (or none).
//! - [`properties`]: the property suite (strategies and a shrinking search)
//!   for any [`WorkerFactory`].
//! - `bench.rs`: [`bench()`], the figures `sim bench` prints.
//! - `clock.rs`: [`SimClock`], the worker's clock on simulated time.

// Without the cfg, madsim is a thin layer over real time and threads, and a
// "simulation" would silently run on the wall clock.
#[cfg(not(madsim))]
compile_error!(
    "the sim crate must be built with `--cfg madsim`; .cargo/config.toml sets it, \
     but an exported RUSTFLAGS replaces that list: use RUSTFLAGS=\"--cfg madsim ...\""
);

mod bench;
mod checker;
mod clock;
mod explore;
mod failure;
mod history;
pub mod properties;
mod recorder;
mod replica;
mod report;
mod scenario;
mod services;
mod spec;
mod subject;
mod swarm;
mod timeline;
mod variant;
mod world;

pub use bench::{BenchConfig, BenchReport, Detection, FlawFigures, bench, standard};
pub use checker::{CLAUSES, Verdict, Violation, check};
pub use clock::SimClock;
pub use explore::{ExploreConfig, ExploreSummary, explore, peak_rss_mb, spec_for};
pub use failure::{excerpt, format_failure, parse_token, replay_command, replay_token};
pub use history::{
    Actor, Event, EventKind, Header, History, Invocation, LeaseRec, Outcome, RowRec,
};
pub use replica::SimPort;
pub use report::{describe_run, scenario_report, term_footers};
pub use scenario::{Expect, Scenario, ScenarioError, scenario_files};
pub use spec::{CallOutcome, FaultConfig, FaultEvent, OpKind, RunSpec, SpecError, WorkerSpec};
pub use subject::{BoxFuture, RealWorker, SimDeps, SimulatedWorker, TermSummary, WorkerFactory};
pub use swarm::swarm;
pub use timeline::TIMELINE_COLUMNS;
pub use variant::{Flaw, VariantFactory};
pub use world::{factory_for, run, run_in_current_runtime, run_unrecorded, run_with};
