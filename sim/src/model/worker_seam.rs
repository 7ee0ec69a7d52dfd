//! What any world (the simulator, real mode) needs from a worker under
//! test, whichever runtime it runs on: which worker it is, serve terms
//! until stopped, and stop; and how a worker's panic reads in its history
//! (LIVE-4).

use std::future::Future;
use std::pin::Pin;

use retention_worker::SeededJitter;

use super::names::Flaw;
use super::spec::RunSpec;
use super::term::TermSummary;

/// Which worker a run's replicas run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerUnderTest {
    /// The production worker, `retention_worker::Worker`.
    Production,
    /// The review's variant, carrying `flaw` (or none: the variant as the
    /// contract wants it).
    Variant {
        /// The flaw it carries.
        flaw: Option<Flaw>,
    },
}

impl WorkerUnderTest {
    /// The worker a plan runs: the variant with its flaw when it names one,
    /// else the production worker.
    pub fn of(spec: &RunSpec) -> Self {
        spec.flaw
            .map_or(Self::Production, |flaw| Self::Variant { flaw: Some(flaw) })
    }
}

/// A boxed, `Send` future, so that implementations stay object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a worker reports each term as it ends.
pub type OnTerm<'a> = &'a (dyn Fn(TermSummary) + Send + Sync);

/// A worker a world can drive: serve terms until stopped, and stop.
pub trait SimulatedWorker: Send + Sync {
    /// Runs terms on the worker's schedule until stopped, reporting each
    /// term as it ends.
    fn serve<'a>(&'a self, jitter: SeededJitter, on_term: OnTerm<'a>) -> BoxFuture<'a, ()>;

    /// The contract's `stop()`.
    fn stop(&self) -> BoxFuture<'_, ()>;
}

/// A panic payload's text: its message when it is one.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with a payload that is not text".to_owned()
    }
}
