//! Writing files without losing any: a file that exists is replaced only
//! with `--force`, and what is written goes to a temporary file beside the
//! target, is checked there, and only then moved into place (linked when
//! nothing may be replaced, so a file that appears meanwhile is kept).

use std::path::{Path, PathBuf};

use crate::interrupt;

/// Whether `path` may be written: not a directory, link, device or pipe,
/// not an existing file unless `force`, in a folder that exists. Run for
/// every output before anything is written, so a refusal of the second
/// file does not leave the first one changed.
pub fn may_write(path: &Path, force: bool) -> Result<(), String> {
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
        let why = if parent.exists() {
            "is not a folder"
        } else {
            "does not exist"
        };
        return Err(format!("{}: {} {why}", path.display(), parent.display()));
    }
    Ok(())
}

/// Checks, before anything runs, that every output may be written and that
/// no two name one file or an input.
pub fn preflight(
    inputs: &[&Path],
    outputs: &[(&str, Option<&Path>)],
    force: bool,
) -> Result<(), String> {
    let named: Vec<(&str, &Path)> = outputs
        .iter()
        .filter_map(|(flag, path)| path.map(|path| (*flag, path)))
        .collect();
    distinct(inputs, &named)?;
    for (flag, path) in &named {
        may_write(path, force)
            .and_then(|()| folder_takes_files(path))
            .map_err(|problem| format!("{flag} {problem}"))?;
    }
    Ok(())
}

/// Whether `dir` is a folder, or can be made as one: nothing by its name,
/// and its parent a folder (a mistyped path is not built level by level).
pub fn folder_or_makeable(flag: &str, dir: &Path) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    if std::fs::symlink_metadata(dir).is_ok() || parent.is_some_and(|p| !p.is_dir()) {
        return Err(format!(
            "{flag} {}: not a folder, and cannot be made (is its parent a folder?)",
            dir.display()
        ));
    }
    Ok(())
}

/// Makes `dir` when it is missing; whether it was made here.
pub fn make_folder(flag: &str, dir: &Path) -> Result<bool, String> {
    if dir.is_dir() {
        return Ok(false);
    }
    std::fs::create_dir(dir)
        .map(|()| true)
        .map_err(|error| format!("{flag} {}: cannot make the folder: {error}", dir.display()))
}

/// Refuses two of `files` that would write one `NAME.EXT` in `dir` (each
/// scenario's output is named after its file): one file listed twice, or
/// two of one name in two folders.
pub fn one_name_each(flag: &str, dir: &Path, files: &[PathBuf], ext: &str) -> Result<(), String> {
    let mut seen: std::collections::BTreeMap<&std::ffi::OsStr, &Path> = Default::default();
    for file in files {
        let Some(stem) = file.file_stem() else {
            continue;
        };
        if let Some(first) = seen.insert(stem, file) {
            let how = if same_file_key(first) == same_file_key(file) {
                format!("{} is listed twice", file.display())
            } else {
                format!("{} and {} have one name", first.display(), file.display())
            };
            return Err(format!(
                "{flag} {}: {how}, and both would write {}.{ext} there",
                dir.display(),
                stem.to_string_lossy()
            ));
        }
    }
    Ok(())
}

/// Whether a file can be made at `path` (or beside it, when it exists):
/// a folder that refuses new files (read-only, a full inode table,
/// `/proc`), a name too long for the file system or one that ends in `/`
/// would otherwise be found only when the write comes, after the work.
/// A new name is tried itself, and removed at once.
pub fn folder_takes_files(path: &Path) -> Result<(), String> {
    let probe = if std::fs::symlink_metadata(path).is_ok() {
        beside(path)
    } else {
        path.to_owned()
    };
    interrupt::track(&probe);
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe);
    if made.is_ok() {
        let _ = std::fs::remove_file(&probe);
    }
    interrupt::untrack(&probe);
    made.map(drop).map_err(|error| {
        let folder = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        format!(
            "{}: cannot make a file in {}: {error}",
            path.display(),
            folder.display()
        )
    })
}

/// Refuses outputs that name one file twice, or name an input: with
/// `--force` the second write would replace the first, or the input.
pub fn distinct(inputs: &[&Path], outputs: &[(&str, &Path)]) -> Result<(), String> {
    let key = |path: &Path| same_file_key(path);
    for (index, (flag, path)) in outputs.iter().enumerate() {
        let this = key(path);
        if let Some(input) = inputs.iter().find(|input| key(input) == this) {
            return Err(format!(
                "{flag} {}: is an input of this command ({}); not overwritten",
                path.display(),
                input.display()
            ));
        }
        if let Some((other, _)) = outputs[..index].iter().find(|(_, p)| key(p) == this) {
            return Err(format!(
                "{flag} {}: {other} writes the same file",
                path.display()
            ));
        }
    }
    Ok(())
}

/// One spelling for every name of a file, whether it exists yet or not:
/// links and `..` resolved through the folders that exist, the rest
/// resolved by name. `sub/../h.jsonl` and `h.jsonl` get one key.
pub fn same_file_key(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let (Some(name), Ok(folder)) = (
        path.file_name(),
        std::fs::canonicalize(parent.unwrap_or(Path::new("."))),
    ) {
        return folder.join(name);
    }
    // No folder on the way exists: the write would fail anyway; compare
    // the names with `.` and `..` taken away by hand.
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut normal = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

/// Writes `contents` to `path` (see [`may_write`]); `check` reads the
/// written text back before it takes the target's place, so a refused
/// write leaves the old file (or none).
pub fn write_checked(
    path: &Path,
    contents: &str,
    force: bool,
    check: impl FnOnce(&str) -> Result<(), String>,
) -> Result<(), String> {
    may_write(path, force)?;
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
        .map_err(|error| format!("{}: {error}", path.display()))
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

/// `dir/.sim-PID-N.tmp`: same folder (so the rename is atomic), hidden,
/// short (a target name near the file system's limit still fits), and not a
/// `*.toml` a scenario sweep would pick up.
fn beside(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    path.with_file_name(format!(".sim-{}-{n}.tmp", std::process::id()))
}
