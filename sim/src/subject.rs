//! The worker under test: what the simulator needs from a worker, so that the
//! real one, a flawed variant, or your own runs through the same harness.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use retention_worker::{Dependencies, SeededJitter, TermReport, Worker, WorkerConfig};

use crate::SimClock;
use crate::replica::SimPort;

/// The dependencies a simulated replica's worker is built from.
pub type SimDeps = Dependencies<SimClock, SimPort, SimPort>;

/// A boxed, `Send` future, so that implementations stay object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How one term ended, as the history records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermSummary {
    /// How it ended, e.g. `Capped` or `LeadershipLost(NullRenewal)`.
    pub end: String,
    /// Rows the worker counted as deleted.
    pub rows: u64,
    /// Delete calls that returned a count.
    pub batches: u32,
    /// Renewals the worker stored.
    pub renewals: u32,
    /// What happened to the lease, e.g. `Released` or `NotOwed`.
    pub release: String,
}

impl From<&TermReport> for TermSummary {
    fn from(report: &TermReport) -> Self {
        Self {
            end: format!("{:?}", report.end),
            rows: report.rows_deleted,
            batches: report.batches,
            renewals: report.renewals,
            release: format!("{:?}", report.release),
        }
    }
}

/// A worker the simulator can drive: serve terms until stopped, and stop.
pub trait SimulatedWorker: Send + Sync {
    /// Runs terms on the worker's schedule until stopped, reporting each
    /// term as it ends.
    fn serve<'a>(
        &'a self,
        jitter: SeededJitter,
        on_term: &'a (dyn Fn(TermSummary) + Send + Sync),
    ) -> BoxFuture<'a, ()>;

    /// The contract's `stop()`.
    fn stop(&self) -> BoxFuture<'_, ()>;
}

/// Builds the worker of each replica process (again after every restart).
pub trait WorkerFactory: Send + Sync {
    /// A worker for `owner`, talking to the simulated services through `deps`.
    fn build(&self, owner: String, config: WorkerConfig, deps: SimDeps)
    -> Arc<dyn SimulatedWorker>;
}

/// The production worker, unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealWorker;

impl WorkerFactory for RealWorker {
    fn build(
        &self,
        owner: String,
        config: WorkerConfig,
        deps: SimDeps,
    ) -> Arc<dyn SimulatedWorker> {
        Arc::new(Worker::new(owner, config, deps).expect("the spec validated this config"))
    }
}

impl SimulatedWorker for Worker<SimClock, SimPort, SimPort> {
    fn serve<'a>(
        &'a self,
        jitter: SeededJitter,
        on_term: &'a (dyn Fn(TermSummary) + Send + Sync),
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut jitter = jitter;
            let _ = Worker::serve(self, &mut jitter, |report| on_term(report.into())).await;
        })
    }

    fn stop(&self) -> BoxFuture<'_, ()> {
        Box::pin(Worker::stop(self))
    }
}
