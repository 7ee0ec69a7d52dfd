//! LIVE-4: a worker that panics ends the run as a finding, with the
//! panic's message and place in the history, instead of taking the whole
//! sweep down with it.
//!
//! madsim lets a task's panic unwind out of `block_on`, so one panicking
//! seed would end `sim explore` with exit 101 and no replay command. Every
//! poll of a replica's `serve()` and `stop()` futures runs under
//! [`catch_worker_panic`]: the panic is recorded as the replica's
//! `Panicked` event, and the run is stopped with [`WorkerPanicked`], which
//! [`Sim::run`] turns into the history it recorded (as it does a spin).
//!
//! [`Sim::run`]: crate::Sim::run

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Once;

use crate::model::panic_message;

/// The panic payload that ends a run whose replica spun.
#[derive(Debug, Clone, Copy)]
pub struct SpinDetected {
    /// The replica, from 1.
    pub replica: u32,
}

/// The panic payload that ends a run whose replica's worker panicked.
#[derive(Debug, Clone, Copy)]
pub struct WorkerPanicked {
    /// The replica, from 1.
    pub replica: u32,
}

thread_local! {
    /// How many worker polls this thread is inside (madsim runs every task
    /// on the thread that called `block_on`).
    static IN_WORKER: Cell<u32> = const { Cell::new(0) };
    /// The last worker panic's message and place, taken by the hook.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs one poll of a worker's future. A panic inside it (other than a
/// spin's, which passes through) comes back as `Err` with its message and
/// place, `"message (at file:line:col)"`.
pub(crate) fn catch_worker_panic<T>(poll: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    IN_WORKER.with(|depth| depth.set(depth.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(poll));
    IN_WORKER.with(|depth| depth.set(depth.get() - 1));
    match result {
        Ok(value) => Ok(value),
        Err(payload) if payload.is::<SpinDetected>() || payload.is::<WorkerPanicked>() => {
            resume_unwind(payload)
        }
        Err(payload) => Err(LAST
            .with(|last| last.borrow_mut().take())
            .unwrap_or_else(|| panic_message(payload.as_ref()))),
    }
}

/// Ends the run: `replica`'s worker panicked (its event is recorded).
pub(crate) fn stop_the_run(replica: u32) -> ! {
    resume_unwind(Box::new(WorkerPanicked { replica }))
}

/// A worker's panic is the run's finding, recorded in its history: the
/// hook keeps it (with its place) instead of printing it. Every other panic
/// prints as before.
pub(crate) fn install_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let ends_a_run = payload.is::<SpinDetected>() || payload.is::<WorkerPanicked>();
            if IN_WORKER.with(Cell::get) > 0 && !ends_a_run {
                let place = info
                    .location()
                    .map(|at| format!(" (at {}:{}:{})", at.file(), at.line(), at.column()))
                    .unwrap_or_default();
                let message = format!("{}{place}", panic_message(payload));
                LAST.with(|last| *last.borrow_mut() = Some(message));
            } else if !ends_a_run {
                previous(info);
            }
        }));
    });
}
