//! Deterministic simulation harness for the retention worker, on madsim.
//!
//! ```no_run
//! use retention_sim::{RunSpec, Sim, check, format_failure};
//!
//! let spec = RunSpec { seed: 7, ..RunSpec::default() };
//! let history = Sim::new(&spec).run()?;
//! let verdict = check(&history);
//! if !verdict.passed() {
//!     eprintln!("{}", format_failure(&spec, &history, &verdict));
//! }
//! # Ok::<(), retention_sim::model::SpecError>(())
//! ```
//!
//! # Layers
//! Each folder is a layer; data flows down this list, and a layer uses only
//! the layers above it (`sim/tests/sim/architecture.rs` fails otherwise):
//!
//! 1. [`model`]: what a run is: [`RunSpec`], faults, the names of
//!    operations, flaws and knobs, and the [`History`] with its JSON lines.
//!    Plain data (serde and the worker's types), no madsim.
//! 2. [`checker`]: [`check`] judges a history clause by clause. Uses `model`.
//! 3. [`db`]: the simulated PostgreSQL, a state machine driven by its
//!    caller's clock: the lease row and its lock, the records and their row
//!    locks, transactions, the server-side bounds and commit durability,
//!    each statement judged where its SQL judges time. Uses `model`.
//! 4. [`calls`]: a replica's call numbering, fault draws and the
//!    adapters' round trips (measured against PostgreSQL) on any runtime,
//!    shared by the simulator and the real-mode tests. Uses `model`.
//! 5. [`plan`]: what a run's seed draws before it starts (seeded rows,
//!    each replica's skew, fault draws, stop triggers and jitter seed), one
//!    way for the simulator and real mode. Uses `model`, `calls`.
//! 6. [`world`]: the madsim boundary: clock, recorder, wire messages, the
//!    replicas' port, connection pools and TCP connections, the database
//!    node, the replica process, timed faults, and the seam a worker plugs
//!    into. Uses `model`, `db`, `calls`, `plan`.
//! 7. [`subject`]: the worker under test (the real one, the flawed variant)
//!    and [`Sim`], the one way to run a world. Uses `model`, `world`.
//! 8. [`report`]: the timeline and its swimlane picture, [`format_failure`],
//!    scenario files and the scenario report. Uses `model`, `checker`.
//! 9. [`search`]: swarm plans, `explore`, the property suite, the
//!    benchmark. Uses all of the above.
//! 10. [`sweep`]: sweeps across machines: the [`Shard`](search::Shard) a
//!     machine runs, the versioned summary document, its checks, merge and
//!     triage, and the shard plan. Uses `model`, `checker`, `report`,
//!     `search`.
//! 11. [`real`]: real mode: replicas of the production worker on tokio
//!     against a throwaway PostgreSQL, with faults around the production
//!     adapters, recorded in the history format `checker` judges. Uses
//!     `model`, `checker`, `calls`, `plan`, `report`, and `subject` for the flawed
//!     variant (on tokio's timers there); never madsim itself.
//!
//! The `sim` command line (`src/bin/sim/`) sits on top of them all.

// Without the cfg, madsim is a thin layer over real time and threads, and a
// "simulation" would silently run on the wall clock.
#[cfg(not(madsim))]
compile_error!(
    "the sim crate must be built with `--cfg madsim`; .cargo/config.toml sets it, \
     but an exported RUSTFLAGS replaces that list: use RUSTFLAGS=\"--cfg madsim ...\""
);

pub mod model;

pub mod checker;

pub mod db;

pub mod calls;

pub mod plan;

pub mod world;

pub mod subject;

pub mod report;

pub mod search;

pub mod sweep;

pub mod real;

pub use checker::{Verdict, Violation, check};
pub use model::{History, RunSpec};
pub use report::{Scenario, format_failure};
pub use subject::Sim;
