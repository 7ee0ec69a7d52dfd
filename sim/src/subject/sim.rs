//! [`Sim`], the one way to build and run a world: a spec, the worker under
//! test, and whether to record.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use crate::model::{History, RunSpec, SpecError, WorkerUnderTest};
use crate::world::{self, RunSlot, SpinDetected, WorkerFactory, WorkerPanicked};

/// One run of a [`RunSpec`]: `Sim::new(&spec).run()` gives its history.
///
/// By default the replicas run the real worker, or the flawed variant
/// `spec.flaw` names; [`Sim::factory`] puts your own worker in their place.
#[derive(Clone)]
pub struct Sim<'a> {
    spec: &'a RunSpec,
    factory: Option<Arc<dyn WorkerFactory>>,
    recorded: bool,
}

impl<'a> Sim<'a> {
    /// A run of `spec`, recorded, with the worker `spec.flaw` selects.
    pub fn new(spec: &'a RunSpec) -> Self {
        Self {
            spec,
            factory: None,
            recorded: true,
        }
    }

    /// Runs the workers `factory` builds instead; `spec.flaw` is ignored.
    pub fn factory(mut self, factory: Arc<dyn WorkerFactory>) -> Self {
        self.factory = Some(factory);
        self
    }

    /// Whether to record the history (default on). Off, the history holds
    /// only its header: the bare simulation, for measuring what recording
    /// and checking cost.
    pub fn recorded(mut self, recorded: bool) -> Self {
        self.recorded = recorded;
        self
    }

    /// Validates the spec, runs it in a fresh madsim runtime seeded with
    /// `spec.seed`, and returns the history. A replica that spins (works on
    /// while simulated time stands still) ends the run at once: the history
    /// then stops at its `Spinning` event, with no `Final`, and the checker
    /// reports LIVE-3; a worker that panics ends it the same way at its
    /// `Panicked` event (LIVE-4).
    pub fn run(self) -> Result<History, SpecError> {
        self.run_in(&RunSlot::default())
    }

    /// Like [`Sim::run`], leaving the run's world in `slot`: a slot made
    /// by [`RunSlot::capturing`] then holds the database as it stood at
    /// its moment (`sim replay --at`).
    pub fn run_in(self, slot: &RunSlot) -> Result<History, SpecError> {
        self.spec.validate()?;
        let runtime = world::runtime(self.spec);
        let (spec, factory) = (self.spec.clone(), self.worker_factory());
        let recorded = self.recorded;
        let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(world::simulate(spec, factory, recorded, slot))
        }));
        match run {
            Ok(history) => Ok(history),
            Err(payload) if payload.is::<SpinDetected>() || payload.is::<WorkerPanicked>() => {
                let history = slot
                    .history()
                    .expect("a worker runs only after the world was built");
                runtime.block_on(slot.free());
                Ok(history)
            }
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }

    /// Like [`Sim::run`], inside the madsim runtime already running this
    /// task, for callers that manage the runtime themselves (madsim's
    /// determinism check). A spin or a worker's panic unwinds out of it.
    pub async fn run_in_current_runtime(self) -> Result<History, SpecError> {
        self.spec.validate()?;
        let (spec, factory) = (self.spec.clone(), self.worker_factory());
        Ok(world::simulate(spec, factory, self.recorded, &RunSlot::default()).await)
    }

    fn worker_factory(&self) -> Arc<dyn WorkerFactory> {
        if let Some(factory) = &self.factory {
            return factory.clone();
        }
        Arc::new(WorkerUnderTest::of(self.spec))
    }
}
