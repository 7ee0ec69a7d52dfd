//! The simulator's integration tests, one binary.

use retention_sim::{DemoConfig, run_demo};

/// Without `--cfg madsim` (an exported RUSTFLAGS replaces the one in
/// `.cargo/config.toml`) madsim silently becomes a thin wrapper over real
/// time and threads, and every simulation test would run on the wall clock.
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

#[test]
fn the_same_seed_gives_the_same_timeline() {
    let config = DemoConfig::default();
    let first = run_demo(&config);
    assert_eq!(first, run_demo(&config));
    let other = run_demo(&DemoConfig { seed: 2, ..config });
    assert_ne!(first.timeline, other.timeline, "the seed drives the jitter");
}

#[test]
fn replicas_drain_the_backlog_without_exceeding_the_cap() {
    let outcome = run_demo(&DemoConfig::default());
    let timeline = &outcome.timeline;
    assert_eq!(outcome.rows_deleted, 5_000, "every old row:\n{timeline}");
    assert_eq!(
        outcome.rows_left, 500,
        "recent rows are younger than every cutoff"
    );
    assert_eq!(outcome.most_rows_in_a_term, 1_000, "CAP-1");
}
