//! The production worker, unchanged, as a simulated replica's worker.

use std::sync::Arc;

use retention_worker::{
    Clock, LeaseService, RecordsRepository, SeededJitter, Worker, WorkerConfig,
};

use crate::world::{BoxFuture, OnTerm, SimDeps, SimulatedWorker, WorkerFactory};

/// Builds the production worker for every replica.
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

/// The production worker on any clock and ports: the simulator's, or the
/// production adapters in real mode.
impl<C, L, R> SimulatedWorker for Worker<C, L, R>
where
    C: Clock + 'static,
    L: LeaseService + 'static,
    R: RecordsRepository + 'static,
{
    fn serve<'a>(&'a self, jitter: SeededJitter, on_term: OnTerm<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut jitter = jitter;
            let _ = Worker::serve(self, &mut jitter, |report| on_term(report.into())).await;
        })
    }

    fn stop(&self) -> BoxFuture<'_, ()> {
        Box::pin(Worker::stop(self))
    }
}
