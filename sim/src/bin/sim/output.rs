//! Standard output that survives its reader going away: once a write finds
//! the pipe closed (`sim run | head`), later output is dropped and the
//! command runs to its end, so it still exits with the status its result
//! calls for instead of panicking.

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes one line to standard output unless its reader is gone.
pub fn line(text: std::fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        if error.kind() == ErrorKind::BrokenPipe {
            CLOSED.store(true, Ordering::Relaxed);
        } else {
            eprintln!("sim: cannot write the output: {error}");
            CLOSED.store(true, Ordering::Relaxed);
        }
    }
}

/// `println!` through [`line`].
macro_rules! say {
    () => { $crate::output::line(format_args!("")) };
    ($($arg:tt)*) => { $crate::output::line(format_args!($($arg)*)) };
}
pub(crate) use say;
