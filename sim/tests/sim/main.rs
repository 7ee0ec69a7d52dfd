//! The simulator's integration tests, one binary.

mod api;
mod architecture;
mod branch_streams;
mod checker;
mod cli;
mod cli_outputs;
mod coverage;
mod db;
mod deploy;
mod determinism;
mod docs;
mod escapes;
mod explain;
mod explain_shrunk;
mod fault_timing;
mod file_circles;
mod flaws;
mod forged;
mod fuzz;
mod guided;
mod hints;
mod history_digest;
mod hostile;
mod instant;
mod model;
mod mutate;
mod named_outputs;
mod names;
mod pictures;
mod probe_edges;
mod properties;
mod regressions;
mod replay;
mod scenarios;
mod shards;
mod source_paths;
mod spin;
mod streams;
mod sweep;
mod takeover;
mod what_if;

/// Without `--cfg madsim` (an exported RUSTFLAGS replaces the one in
/// `.cargo/config.toml`) madsim silently becomes a thin wrapper over real
/// time and threads. The library refuses to compile then; this test says so
/// too, in case that guard is ever lost.
#[test]
#[allow(
    clippy::assertions_on_constants,
    reason = "the constant is the build's cfg, checked at test time on purpose"
)]
fn built_with_cfg_madsim() {
    assert!(
        cfg!(madsim),
        "the simulator was built without `--cfg madsim`: an exported RUSTFLAGS \
         replaced .cargo/config.toml's flags; run with RUSTFLAGS=\"--cfg madsim\""
    );
}
