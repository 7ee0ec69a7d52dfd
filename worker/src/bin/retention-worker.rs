//! `retention-worker`: the retention worker on PostgreSQL, for deployment.
//!
//! Configuration comes from flags and environment (`--help` lists both);
//! logs go to stderr through `tracing` (`RUST_LOG` filters them), in
//! colour only on a terminal and without `NO_COLOR`. SIGTERM
//! or Ctrl-C stops the worker; the process exits once the term in progress
//! has settled and its lease is released.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use retention_worker::runner::{RunnerConfig, environment_note, run_runner};

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colour for a person at a terminal; plain text for a log file, a
        // pipe or a journal, and wherever NO_COLOR is set.
        .with_ansi(
            std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
                && std::env::var_os("TERM").is_none_or(|term| term != "dumb"),
        )
        .init();
    let config = match RunnerConfig::try_parse() {
        Ok(config) => config,
        Err(error) => {
            // Not `args()`: it panics on a word that is not UTF-8.
            let args: Vec<String> = std::env::args_os()
                .map(|word| word.to_string_lossy().into_owned())
                .collect();
            let note = environment_note(&error, &args);
            // clap prints the error (or --help) and picks the status; help
            // that could not be written is a failure (74, as `sim`'s), and
            // a refusal keeps its own status either way.
            if error.print().is_err() && error.exit_code() == 0 {
                return ExitCode::from(74);
            }
            if let Some(note) = note {
                say(format_args!("{note}"));
            }
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    match run_runner(config, shutdown_signal()).await {
        Ok(outcome) if outcome.failed() => {
            say(format_args!(
                "retention-worker: the term failed: {outcome:?}"
            ));
            ExitCode::FAILURE
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            say(format_args!("retention-worker: {error}"));
            ExitCode::from(2)
        }
    }
}

/// Resolves at the first SIGTERM or Ctrl-C (SIGINT).
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(error) => {
                say(format_args!(
                    "retention-worker: cannot watch SIGTERM ({error}); Ctrl-C only"
                ));
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// One line to stderr. A stderr that cannot be written (a full disk) loses
/// the line but never panics: the exit status still tells the outcome.
fn say(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}
