//! Deterministic simulation harness for the retention worker, on madsim.
//!
//! Map of the code:
//! - `clock.rs`: [`SimClock`], the worker's clock on madsim's simulated time,
//!   with a per-replica skew.
//! - `demo.rs`: [`run_demo`], replicas serving terms against the in-memory
//!   reference models under one seed, with a text timeline.
//!
//! The simulated network, fault injector, history checker and property tests
//! build on these pieces.

// Without the cfg, madsim is a thin layer over real time and threads, and a
// "simulation" would silently run on the wall clock.
#[cfg(not(madsim))]
compile_error!(
    "retention-sim must be built with `--cfg madsim`; .cargo/config.toml sets it, \
     but an exported RUSTFLAGS replaces that list: use RUSTFLAGS=\"--cfg madsim ...\""
);

mod clock;
mod demo;

pub use clock::SimClock;
pub use demo::{DemoConfig, DemoOutcome, run_demo};
