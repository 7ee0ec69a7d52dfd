//! The seam between the world and the worker under test: what a replica
//! process needs from a worker, so that the real one, a flawed variant or
//! your own runs in the same world.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use retention_worker::{Dependencies, SeededJitter, WorkerConfig};

use super::clock::SimClock;
use super::port::SimPort;
use crate::model::TermSummary;

/// The dependencies a simulated replica's worker is built from.
pub type SimDeps = Dependencies<SimClock, SimPort, SimPort>;

/// A boxed, `Send` future, so that implementations stay object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a worker reports each term as it ends.
pub type OnTerm<'a> = &'a (dyn Fn(TermSummary) + Send + Sync);

/// A worker the simulator can drive: serve terms until stopped, and stop.
pub trait SimulatedWorker: Send + Sync {
    /// Runs terms on the worker's schedule until stopped, reporting each
    /// term as it ends.
    fn serve<'a>(&'a self, jitter: SeededJitter, on_term: OnTerm<'a>) -> BoxFuture<'a, ()>;

    /// The contract's `stop()`.
    fn stop(&self) -> BoxFuture<'_, ()>;
}

/// Builds the worker of each replica process (again after every restart).
pub trait WorkerFactory: Send + Sync {
    /// A worker for `owner`, talking to the simulated services through `deps`.
    fn build(&self, owner: String, config: WorkerConfig, deps: SimDeps)
    -> Arc<dyn SimulatedWorker>;
}
