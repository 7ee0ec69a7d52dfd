//! Looking for failures: the space of runs a search draws from (`space`),
//! swarm plans drawn from a seed (fault events in `event_draws`), sweeps over many seeds, shrinking a
//! failing plan (`shrink`), the conditions a sweep's failures share (`hints`), a
//! replayed run with interventions (`what_if`), when a failure became
//! inevitable (`explain`, its chance curve in `chance_curve`), the
//! property suite, and the benchmark. Uses every layer below it.

mod bench;
mod chance_curve;
mod event_draws;
mod explain;
mod explore;
mod guided;
mod hints;
mod instant;
mod instant_text;
pub mod properties;
mod shard;
mod shrink;
mod space;
mod swarm;
mod what_if;

pub use bench::{BenchConfig, BenchReport, Detection, FlawFigures, bench, standard};
pub use chance_curve::{CurvePoint, JUMP_MIN_RISE, SEALED_CHANCE};
pub use explain::{DrawnCall, ExplainConfig, Explanation, branch_of, explain};
pub use explore::{
    ExploreConfig, ExploreSummary, FailedSeed, Progress, base_spec, explore, explore_until,
    peak_rss_mb, spec_for,
};
pub use guided::{
    GuidedBench, GuidedBenchConfig, GuidedReport, Reach, Streams, bench_guided, corpus_text,
    guided_until, parse_corpus, thread_cpu_secs,
};
pub use hints::{ClauseHints, FAILING_MAX, Hint, PASSING_MAX, hints};
pub use instant::{GivenLease, InFlight, ReplicaAt, WorldAt, world_at};
pub use shard::Shard;
pub use shrink::{
    SHRINK_RUNS, Shrunk, plan_size, shrink, shrink_while, shrink_with, violated_clause,
};
pub use swarm::swarm;
pub use what_if::{Intervention, WhatIf, planned_fault_on, violation_site, what_if};
