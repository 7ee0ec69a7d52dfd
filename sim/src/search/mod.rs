//! Looking for failures: the space of runs a search draws from (`space`),
//! swarm plans drawn from a seed, sweeps over many seeds, the property
//! suite with shrinking, and the benchmark. Uses every layer below it.

mod bench;
mod explore;
pub mod properties;
mod space;
mod swarm;

pub use bench::{BenchConfig, BenchReport, Detection, FlawFigures, bench, standard};
pub use explore::{ExploreConfig, ExploreSummary, explore, peak_rss_mb, spec_for};
pub use swarm::swarm;
