//! Servers whose owner process is gone. A process killed outright (`kill
//! -9`, a test runner ending the tests still running, the kernel's OOM
//! killer) runs no destructor and no signal handler, so its server would
//! run on and its folder stay. Each server's folder names its owner, by pid
//! and start time (a pid alone may be reused); every server start first
//! stops and removes the servers of owners that are gone.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::live::ServerFiles;

/// The file in a server's folder that names its owner process.
const OWNER_FILE: &str = "owner";

/// The folders' prefix.
pub(crate) const SERVER_DIR_PREFIX: &str = "retention-pg-";

/// A folder with no owner file this old is an orphan of a start that died
/// before it wrote one (or of a build before owners were written); a
/// younger one may be a start under way in another process.
const UNCLAIMED_GRACE: Duration = Duration::from_secs(600);

/// A process's start time, in clock ticks since boot (`/proc/PID/stat`'s
/// 22nd field), `None` when it is not running.
fn start_ticks(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: count after its ')'.
    let (_, rest) = stat.rsplit_once(") ")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(19).map(|ticks| (*ticks).to_owned())
}

/// Marks `dir` as this process's.
pub(crate) fn claim(dir: &Path) -> std::io::Result<()> {
    let pid = std::process::id();
    let ticks = start_ticks(pid).unwrap_or_default();
    std::fs::write(dir.join(OWNER_FILE), format!("{pid} {ticks}\n"))
}

/// Whether the owner `dir` names is gone: `None` when it names none.
fn owner_gone(dir: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(dir.join(OWNER_FILE)).ok()?;
    let mut words = text.split_whitespace();
    let pid: u32 = words.next()?.parse().ok()?;
    let ticks = words.next().unwrap_or_default();
    Some(start_ticks(pid).is_none_or(|now| now != ticks))
}

fn unclaimed_and_old(dir: &Path) -> bool {
    let modified = std::fs::metadata(dir).and_then(|meta| meta.modified());
    modified.is_ok_and(|at| {
        SystemTime::now()
            .duration_since(at)
            .is_ok_and(|age| age > UNCLAIMED_GRACE)
    })
}

/// Stops and removes every server folder in `parent` whose owner process
/// is gone, with the tools in `bin` run as `run_as`; the folders removed.
pub(crate) fn reap_in(parent: &Path, bin: &Path, run_as: Option<&str>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut reaped = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(SERVER_DIR_PREFIX) {
            continue;
        }
        let dir = entry.path();
        let orphan = match owner_gone(&dir) {
            Some(gone) => gone,
            None => unclaimed_and_old(&dir),
        };
        if !orphan {
            continue;
        }
        let files = ServerFiles {
            dir: dir.clone(),
            bin: bin.to_owned(),
            run_as: run_as.map(str::to_owned),
        };
        files.stop_and_remove();
        if !dir.exists() {
            reaped.push(dir);
        }
    }
    reaped.sort();
    reaped
}
