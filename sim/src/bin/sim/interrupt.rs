//! Ctrl-C, SIGTERM and SIGHUP: a sweep stops starting runs and reports what
//! it finished; anything else stops the PostgreSQL servers it started,
//! removes their folders and the temporary files being written, and exits
//! with 130 (128 + SIGINT), as shells report an interrupted command.

use crate::output::tell;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Temporary files that exist until their write finishes or is refused.
static IN_FLIGHT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Set while a sweep can wind down by itself; the first signal then only
/// asks it to.
static WINDS_DOWN: AtomicBool = AtomicBool::new(false);

/// Set by the first signal a winding-down command receives.
static STOP: AtomicBool = AtomicBool::new(false);

/// Set once a signal began the way out: from then on only the handler
/// ends the process.
static QUITTING: AtomicBool = AtomicBool::new(false);

/// The exit status of an interrupted run.
pub const INTERRUPTED: u8 = 130;

/// Installs the handler; a failure (no signal support) leaves the default,
/// which also ends the process.
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if WINDS_DOWN.load(Ordering::SeqCst) && !STOP.swap(true, Ordering::SeqCst) {
            tell!(
                "\nsim: interrupted: no new runs start; the summary covers the runs finished \
                 (interrupt again to quit at once)"
            );
            return;
        }
        quit_now();
    });
}

fn quit_now() -> ! {
    QUITTING.store(true, Ordering::SeqCst);
    // A second signal meanwhile waits in the handler's queue: the process
    // exits before it is handled, so cleaning up is never cut short.
    test_support::stop_every_server();
    for path in IN_FLIGHT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .drain(..)
    {
        let _ = std::fs::remove_file(path);
    }
    tell!("sim: interrupted");
    std::process::exit(i32::from(INTERRUPTED));
}

/// Waits for ever if a signal is ending the process: the command's own
/// thread, its server stopped under it, must not exit first (with its own
/// status, and the server's folder half removed).
pub fn hold_if_quitting() {
    while QUITTING.load(Ordering::SeqCst) {
        std::thread::park();
    }
}

/// From now on the first signal sets [`stop_flag`] instead of ending the
/// process; the caller must watch the flag.
pub fn wind_down_on_signal() {
    WINDS_DOWN.store(true, Ordering::SeqCst);
}

/// The flag the first signal sets once [`wind_down_on_signal`] was called.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}

/// Whether a signal asked the command to stop.
pub fn interrupted() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Registers `path` as a temporary file to remove if interrupted.
pub fn track(path: &Path) {
    IN_FLIGHT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(path.to_owned());
}

/// Forgets `path` (it was renamed into place or removed).
pub fn untrack(path: &Path) {
    IN_FLIGHT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|tracked| tracked != path);
}
