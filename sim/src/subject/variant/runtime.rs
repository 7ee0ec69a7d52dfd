//! The variant's timers and detached tasks: madsim's in the simulator,
//! tokio's (with a clock's timers) against PostgreSQL.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use retention_worker::Clock;
use tokio::task::AbortHandle;

use crate::world::BoxFuture;

/// What the variant needs besides its ports: a timer, and a way to leave a
/// task running on its own (finding 1's renewals outlive their timer tick).
pub trait Runtime: Send + Sync + 'static {
    /// Completes after `ms` milliseconds.
    fn sleep_ms(&self, ms: u64) -> BoxFuture<'static, ()>;

    /// Runs `task` detached.
    fn spawn(&self, task: BoxFuture<'static, ()>);
}

/// madsim's timer and tasks. The timer is madsim's own, not the replica's
/// clock, as the variant has always slept in the simulator (so its flaws'
/// seeds and shrunk plans stay what they were).
#[derive(Debug, Clone, Copy, Default)]
pub struct MadsimRuntime;

impl Runtime for MadsimRuntime {
    fn sleep_ms(&self, ms: u64) -> BoxFuture<'static, ()> {
        Box::pin(madsim::time::sleep(Duration::from_millis(ms)))
    }

    fn spawn(&self, task: BoxFuture<'static, ()>) {
        // Dropping madsim's handle detaches the task, as tokio's does.
        drop(madsim::task::spawn(task));
    }
}

/// Timers of the clock `C` (so a frozen process's timers freeze with it),
/// tasks on the tokio runtime the caller runs in, kept so that a killed
/// process's tasks die with it.
#[derive(Debug, Clone)]
pub struct TokioRuntime<C> {
    clock: C,
    tasks: Arc<Mutex<Vec<AbortHandle>>>,
}

impl<C> TokioRuntime<C> {
    /// Timers of `clock`, no task yet.
    pub fn new(clock: C) -> Self {
        Self {
            clock,
            tasks: Arc::default(),
        }
    }

    /// Ends every task it spawned (the process was killed).
    pub fn abort_all(&self) {
        for task in self.tasks.lock().expect("tasks").drain(..) {
            task.abort();
        }
    }
}

impl<C: Clock + Clone + 'static> Runtime for TokioRuntime<C> {
    fn sleep_ms(&self, ms: u64) -> BoxFuture<'static, ()> {
        let clock = self.clock.clone();
        Box::pin(async move { clock.sleep_ms(ms).await })
    }

    fn spawn(&self, task: BoxFuture<'static, ()>) {
        let mut tasks = self.tasks.lock().expect("tasks");
        tasks.retain(|task| !task.is_finished());
        tasks.push(tokio::spawn(task).abort_handle());
    }
}
