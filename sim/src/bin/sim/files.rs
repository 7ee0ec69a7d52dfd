//! Writing files without losing any: a file that exists is replaced only
//! with `--force`, and what is written goes to a temporary file beside the
//! target, is checked there, and only then moved into place (linked when
//! nothing may be replaced, so a file that appears meanwhile is kept).

use std::path::{Path, PathBuf};

use crate::interrupt;

/// Writes `contents` to `path`, refusing to replace an existing file unless
/// `force`; `check` reads the written text back before it takes the
/// target's place, so a refused write leaves the old file (or none).
pub fn write_checked(
    path: &Path,
    contents: &str,
    force: bool,
    check: impl FnOnce(&str) -> Result<(), String>,
) -> Result<(), String> {
    if let Ok(existing) = std::fs::symlink_metadata(path) {
        let kind = existing.file_type();
        if !kind.is_file() {
            // --force replaces a file's contents, never a directory, a
            // link, a device or a pipe with a file.
            let what = if kind.is_dir() {
                "a directory"
            } else if kind.is_symlink() {
                "a symbolic link (name its target instead)"
            } else {
                "not a regular file (a device, pipe or socket)"
            };
            return Err(format!("{}: is {what}; not replaced", path.display()));
        }
        if !force {
            return Err(format!(
                "{}: exists; pass --force to replace it",
                path.display()
            ));
        }
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent
        && !parent.is_dir()
    {
        return Err(format!(
            "{}: the folder {} does not exist",
            path.display(),
            parent.display()
        ));
    }
    let temporary = beside(path);
    interrupt::track(&temporary);
    let result = write_then_place(&temporary, path, contents, force, check);
    let _ = std::fs::remove_file(&temporary);
    interrupt::untrack(&temporary);
    result
}

fn write_then_place(
    temporary: &Path,
    path: &Path,
    contents: &str,
    force: bool,
    check: impl FnOnce(&str) -> Result<(), String>,
) -> Result<(), String> {
    std::fs::write(temporary, contents)
        .and_then(|()| std::fs::read_to_string(temporary))
        .map_err(|error| format!("{}: {error}", temporary.display()))
        .and_then(|text| check(&text))?;
    let placed = if force {
        std::fs::rename(temporary, path)
    } else {
        // A link fails if the target appeared since the check above, where
        // a rename would silently replace it.
        std::fs::hard_link(temporary, path).or_else(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => Err(error),
            // A file system without links: the check above has to do.
            _ => std::fs::rename(temporary, path),
        })
    };
    placed.map_err(|error| match error.kind() {
        std::io::ErrorKind::AlreadyExists => {
            format!("{}: exists; pass --force to replace it", path.display())
        }
        _ => format!("{}: {error}", path.display()),
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
