//! The servers this process started and has not stopped yet, so that a
//! command ended by a signal, where no destructor runs, can still stop them
//! and remove their folders.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock, RwLockReadGuard};

/// What stopping one server needs.
#[derive(Debug, Clone)]
pub(crate) struct ServerFiles {
    /// The server's folder: its data, socket and log.
    pub(crate) dir: PathBuf,
    /// The folder holding `pg_ctl`.
    pub(crate) bin: PathBuf,
    /// The user the server runs as, when this process is root.
    pub(crate) run_as: Option<String>,
}

impl ServerFiles {
    /// Stops the server at once (`-m immediate`: no checkpoint, it is
    /// thrown away) and removes its folder. Safe to call twice.
    pub(crate) fn stop_and_remove(&self) {
        let data = self.dir.join("data");
        if data.join("postmaster.pid").exists() {
            let data = data.to_string_lossy().into_owned();
            let _ = crate::tools::run_tool(
                &self.bin,
                self.run_as.as_deref(),
                &self.dir,
                "pg_ctl",
                &["-D", data.as_str(), "-m", "immediate", "-w", "stop"],
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static LIVE: Mutex<Vec<ServerFiles>> = Mutex::new(Vec::new());

/// Read-held by every start in progress; [`stop_every_server`] takes it for
/// writing and never gives it back, so it waits for the starts under way
/// and no server starts after it.
static STARTS: RwLock<()> = RwLock::new(());

/// Held while one server starts (from its folder's creation until
/// `pg_ctl start` returns).
pub(crate) fn starting() -> RwLockReadGuard<'static, ()> {
    STARTS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records a server's folder as soon as it exists.
pub(crate) fn register(files: ServerFiles) {
    LIVE.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push(files);
}

/// Forgets a server once its drop has stopped it and removed its folder.
pub(crate) fn forget(dir: &Path) {
    LIVE.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .retain(|files| files.dir != dir);
}

/// Stops every server this process started and has not dropped, and
/// removes their folders: for a signal handler that is about to end the
/// process, when no [`crate::TempServer`]'s drop will run. A server still
/// starting is waited for and then stopped; none can start afterwards, so
/// call this only on the way out.
pub fn stop_every_server() {
    let no_more_starts = STARTS
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    std::mem::forget(no_more_starts);
    let live = LIVE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    for files in &live {
        files.stop_and_remove();
    }
}
