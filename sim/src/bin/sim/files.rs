//! Writing files without losing any: a file that exists is replaced only
//! with `--force`, and what is written goes to a temporary file beside the
//! target, is checked there, and only then renamed into place.

use std::path::{Path, PathBuf};

/// Writes `contents` to `path`, refusing to replace an existing file unless
/// `force`; `check` reads the written text back before it takes the
/// target's place, so a refused write leaves the old file (or none).
pub fn write_checked(
    path: &Path,
    contents: &str,
    force: bool,
    check: impl FnOnce(&str) -> Result<(), String>,
) -> Result<(), String> {
    if path.exists() && !force {
        return Err(format!(
            "{}: exists; pass --force to replace it",
            path.display()
        ));
    }
    let temporary = beside(path);
    let written = std::fs::write(&temporary, contents)
        .and_then(|()| std::fs::read_to_string(&temporary))
        .map_err(|error| format!("{}: {error}", temporary.display()));
    let checked = written.and_then(|text| check(&text));
    if let Err(problem) = checked {
        let _ = std::fs::remove_file(&temporary);
        return Err(problem);
    }
    std::fs::rename(&temporary, path).map_err(|error| {
        let _ = std::fs::remove_file(&temporary);
        format!("{}: {error}", path.display())
    })
}

/// `dir/.NAME.tmp-PID`: same folder (so the rename is atomic), hidden, and
/// not a `*.toml` a scenario sweep would pick up.
fn beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}
