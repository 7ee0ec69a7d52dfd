//! Standard output and error that never panic: once a write finds stdout's
//! reader gone (`sim run | head`), later output is dropped and the command
//! runs to its end; a write that fails otherwise (a full disk) is said on
//! stderr if stderr still works. Either way the exit status says so
//! ([`exit_status`]), so that no output is lost behind a zero; a refusal
//! keeps its 2, as `retention-worker`'s does.

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static READER_GONE: AtomicBool = AtomicBool::new(false);
static WRITE_FAILED: AtomicBool = AtomicBool::new(false);
static COLOUR: AtomicBool = AtomicBool::new(false);

/// Colours lines from now on, or not.
pub fn set_colour(on: bool) {
    COLOUR.store(on, Ordering::Relaxed);
}

/// `text` in red if it reports a violation or a failed expectation, in
/// yellow if it reports something never reached or missing, when colour
/// is on; as it is otherwise.
fn painted(text: String) -> String {
    if !COLOUR.load(Ordering::Relaxed) {
        return text;
    }
    let red = ["VIOLATED", "NOT as expected", "violates "];
    let yellow = ["  NEVER", "MISSING", "PARTIAL", "not staged"];
    let paint = |line: &str| {
        if red.iter().any(|mark| line.contains(mark)) {
            format!("\u{1b}[31m{line}\u{1b}[0m")
        } else if yellow.iter().any(|mark| line.contains(mark)) {
            format!("\u{1b}[33m{line}\u{1b}[0m")
        } else {
            line.to_owned()
        }
    };
    text.split('\n').map(paint).collect::<Vec<_>>().join("\n")
}

/// The status of a refused command: bad input, a file it may not write.
pub const REFUSED: u8 = 2;
/// The status of a command whose stdout's reader went away: 128 + SIGPIPE,
/// as a shell reports a process a closed pipe killed.
pub const CLOSED_PIPE: u8 = 141;
/// The status of a command whose output could not be written (BSD's
/// `EX_IOERR`).
pub const WRITE_ERROR: u8 = 74;

/// Writes one line to standard output unless its reader is gone.
pub fn line(text: std::fmt::Arguments<'_>) {
    if READER_GONE.load(Ordering::Relaxed) {
        return;
    }
    let text = painted(text.to_string());
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        READER_GONE.store(true, Ordering::Relaxed);
        if error.kind() != ErrorKind::BrokenPipe {
            WRITE_FAILED.store(true, Ordering::Relaxed);
            note(format_args!("sim: cannot write the output: {error}"));
        }
    }
}

/// Writes one line to standard error; a failure is remembered for the
/// exit status, never a panic.
pub fn note(text: std::fmt::Arguments<'_>) {
    let mut stderr = std::io::stderr().lock();
    match writeln!(stderr, "{text}").and_then(|()| stderr.flush()) {
        Ok(()) => {}
        // stderr's reader left, as stdout's can: a closed pipe, not a
        // failed write.
        Err(error) if error.kind() == ErrorKind::BrokenPipe => {
            READER_GONE.store(true, Ordering::Relaxed);
        }
        Err(_) => WRITE_FAILED.store(true, Ordering::Relaxed),
    }
}

/// Routes a panic raised by a failed `print!` in code this crate does not
/// own (madsim's executor notes a task's panic with `eprintln!`), on any
/// thread: it is remembered as a failed write and not printed; any other
/// panic goes to `previous`.
pub fn catch_print_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = (payload.downcast_ref::<String>().map(String::as_str))
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to") {
            if message.contains("Broken pipe") {
                READER_GONE.store(true, Ordering::Relaxed);
            } else {
                WRITE_FAILED.store(true, Ordering::Relaxed);
            }
        } else {
            previous(info);
        }
    }));
}

/// Whether a write failed or stdout's reader left.
pub fn failed() -> bool {
    WRITE_FAILED.load(Ordering::Relaxed) || READER_GONE.load(Ordering::Relaxed)
}

/// `status`, unless output failed: [`WRITE_ERROR`] when a write failed,
/// [`CLOSED_PIPE`] when a reader went away. A refusal (2) and an
/// interruption (130) keep theirs: their cause outranks their message's
/// fate, as `retention-worker`'s refusals do. Every other status says the
/// command did its work, whose output is then lost, so it must not stand.
pub fn exit_status(status: u8) -> u8 {
    if status == REFUSED || status == crate::interrupt::INTERRUPTED {
        status
    } else if WRITE_FAILED.load(Ordering::Relaxed) {
        WRITE_ERROR
    } else if READER_GONE.load(Ordering::Relaxed) {
        CLOSED_PIPE
    } else {
        status
    }
}

/// `println!` through [`line`].
macro_rules! say {
    () => { $crate::output::line(format_args!("")) };
    ($($arg:tt)*) => { $crate::output::line(format_args!($($arg)*)) };
}
pub(crate) use say;

/// `eprintln!` through [`note`].
macro_rules! tell {
    ($($arg:tt)*) => { $crate::output::note(format_args!($($arg)*)) };
}
pub(crate) use tell;

/// Colour by default only on a terminal that shows it: not under a
/// non-empty `NO_COLOR` (no-color.org: an empty one does not count), and
/// not on `TERM=dumb`.
pub fn colour_by_default(terminal: bool) -> bool {
    let no_colour = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|term| term == "dumb");
    terminal && !no_colour && !dumb
}

/// This process's command line as a shell would take it back: each word
/// quoted when it holds anything but plain characters (a report or a
/// summary quotes it, and a folder named `$(touch x)` must stay a name),
/// and words that are not UTF-8 shown lossily rather than panicking.
pub fn command_line() -> String {
    std::env::args_os()
        .map(|word| {
            let word = word.to_string_lossy();
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
            if plain {
                word.into_owned()
            } else {
                format!("'{}'", word.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
