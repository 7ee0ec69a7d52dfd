//! Ctrl-C: the temporary files being written are removed and the tool exits
//! with 130 (128 + SIGINT), as shells report an interrupted command.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Temporary files that exist until their write finishes or is refused.
static IN_FLIGHT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The exit status of an interrupted run.
pub const INTERRUPTED: u8 = 130;

/// Installs the handler; a failure (no signal support) leaves the default,
/// which also ends the process.
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        for path in IN_FLIGHT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = std::fs::remove_file(path);
        }
        eprintln!("sim: interrupted");
        std::process::exit(i32::from(INTERRUPTED));
    });
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
