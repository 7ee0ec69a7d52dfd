//! What a run's seed draws before anything runs, one way for both worlds
//! (the simulator and real mode): the seeded rows, and each replica's
//! clock skew, fault draws, stop triggers and jitter seed (`draws.rs`);
//! and the one interpreter of the timed faults, over a target each world
//! implements (`strike.rs`). Uses `model` and `calls`; names no runtime.

mod draws;
mod strike;

pub use draws::{JitterSeed, ReplicaPlan, RunDraws, StopTriggers};
pub use strike::{FaultTarget, Turn, in_turns, strike_in_turn, strike_nothing};
