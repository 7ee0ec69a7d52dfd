//! What a run's seed draws before anything runs, one way for both worlds
//! (the simulator and real mode): the seeded rows, and each replica's
//! clock skew, fault draws, stop triggers and jitter seed (`draws.rs`).
//! Uses `model` and `calls`; names no runtime.

mod draws;

pub use draws::{JitterSeed, ReplicaPlan, RunDraws, StopTriggers};
