//! The seam between the world and the worker under test: what a replica
//! process needs from a worker, so that the real one, a flawed variant or
//! your own runs in the same world.

use std::sync::Arc;

use retention_worker::{Dependencies, WorkerConfig};

use super::clock::SimClock;
use super::port::SimPort;
use crate::model::SimulatedWorker;

/// The dependencies a simulated replica's worker is built from.
pub type SimDeps = Dependencies<SimClock, SimPort, SimPort>;

/// Builds the worker of each replica process (again after every restart).
pub trait WorkerFactory: Send + Sync {
    /// A worker for `owner`, talking to the simulated services through `deps`.
    fn build(&self, owner: String, config: WorkerConfig, deps: SimDeps)
    -> Arc<dyn SimulatedWorker>;
}
