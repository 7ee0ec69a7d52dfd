//! Reading an input file as text, bounded: a file larger than its limit (an
//! endless one, a wrong path to a disk image) is refused before it fills
//! memory, and text that stops being UTF-8 is refused naming its line and
//! byte.

use std::io::Read;
use std::path::Path;

/// The largest scenario file read.
pub const SCENARIO_LIMIT_BYTES: u64 = 1 << 20;
/// The largest history read: 64 MiB, which takes about 1.3 GB to judge (a
/// one-hour run with every fault writes a few megabytes).
pub const HISTORY_LIMIT_BYTES: u64 = 64 << 20;

/// Why a file could not be read: the line, when the problem has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The 1-based line of the problem, when it has one.
    pub line: Option<usize>,
    /// What is wrong.
    pub problem: String,
}

/// The file's text, if it is at most `limit_bytes` of UTF-8.
pub fn read_text(path: &Path, limit_bytes: u64) -> Result<String, InputError> {
    read(path, limit_bytes, false)
}

/// As [`read_text`], for a file whose writer may have been stopped mid-write
/// (`check --partial`): a character cut at the very end is dropped, as the
/// cut line it ends will be. Bytes that are not UTF-8 elsewhere are refused.
pub fn read_text_cut_short(path: &Path, limit_bytes: u64) -> Result<String, InputError> {
    read(path, limit_bytes, true)
}

fn read(path: &Path, limit_bytes: u64, cut_short: bool) -> Result<String, InputError> {
    let file = std::fs::File::open(path).map_err(|error| InputError {
        line: None,
        problem: error.to_string(),
    })?;
    // Sized once from the file's length: a buffer that doubles as it
    // fills holds up to twice a large file while it reads.
    let expected = file
        .metadata()
        .map_or(0, |meta| meta.len().min(limit_bytes));
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    file.take(limit_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| InputError {
            line: None,
            problem: error.to_string(),
        })?;
    if bytes.len() as u64 > limit_bytes {
        return Err(InputError {
            line: None,
            problem: format!("larger than the {limit_bytes}-byte limit for this kind of file"),
        });
    }
    if cut_short
        && let Err(error) = std::str::from_utf8(&bytes)
        && error.error_len().is_none()
    {
        // The text ends inside a character: what is left of it goes.
        bytes.truncate(error.valid_up_to());
    }
    String::from_utf8(bytes).map_err(|error| {
        let at = error.utf8_error().valid_up_to();
        let valid = &error.as_bytes()[..at];
        let line = valid.iter().filter(|&&byte| byte == b'\n').count() + 1;
        let column = at
            - valid
                .iter()
                .rposition(|&byte| byte == b'\n')
                .map_or(0, |i| i + 1)
            + 1;
        InputError {
            line: Some(line),
            problem: format!(
                "not UTF-8 text: byte {} of the file (column {column} of the line, both \
                 from 1) is 0x{:02x}",
                at + 1,
                error.as_bytes()[at]
            ),
        }
    })
}
