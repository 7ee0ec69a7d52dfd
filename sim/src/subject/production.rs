//! The production worker, unchanged, as a simulated replica's worker, and
//! the factory that builds it or the variant for each replica.

use std::sync::Arc;

use retention_worker::{
    Clock, LeaseService, RecordsRepository, SeededJitter, Worker, WorkerConfig,
};

use super::variant::{MadsimRuntime, variant_worker};
use crate::model::WorkerUnderTest;
use crate::world::{BoxFuture, OnTerm, SimDeps, SimulatedWorker, WorkerFactory};

/// The worker a plan names, built afresh for each replica process on the
/// simulator's clock and ports: what [`super::Sim`] runs unless given a
/// factory of its own.
impl WorkerFactory for WorkerUnderTest {
    fn build(
        &self,
        owner: String,
        config: WorkerConfig,
        deps: SimDeps,
    ) -> Arc<dyn SimulatedWorker> {
        match *self {
            WorkerUnderTest::Production => {
                Arc::new(Worker::new(owner, config, deps).expect("the spec validated this config"))
            }
            WorkerUnderTest::Variant { flaw } => {
                variant_worker(flaw, owner, config, deps, MadsimRuntime)
            }
        }
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
