//! `sim`: run, sweep and replay simulations of the retention worker.
//!
//! Exit status: 0 when every run kept the contract, 1 when any violated it,
//! 2 for bad input, 130 when interrupted (Ctrl-C). `args.rs` holds the
//! flags, `commands.rs`, `check.rs` and `sweep.rs` what each subcommand does,
//! `files.rs` how a file is written without losing one, `output.rs`
//! standard output that outlives a closed pipe, `interrupt.rs` what Ctrl-C
//! does, `page.rs` the sweep's report page.

mod args;
mod check;
mod commands;
mod files;
mod interrupt;
mod output;
mod page;
mod sweep;

use std::process::ExitCode;

use clap::Parser;
use retention_sim::report::parse_token;

use args::{Cli, Command, build_spec};
use check::check_file;
use commands::{Outputs, run_one, run_scenarios, save_scenario, shrink_token};
use files::preflight;
use sweep::{run_bench, run_explore};

/// Where `sim scenario --svg` puts each file's picture: the path itself for
/// one file, `DIR/NAME.svg` for several (or when it names a folder).
fn scenario_pictures(
    files: &[std::path::PathBuf],
    svg: Option<&std::path::Path>,
) -> Vec<std::path::PathBuf> {
    let Some(path) = svg else { return Vec::new() };
    if files.len() == 1 && !path.is_dir() {
        return vec![path.to_owned()];
    }
    if !path.is_dir() {
        return Vec::new(); // refused by the scenario run, naming the problem
    }
    files
        .iter()
        .map(|file| {
            let stem = file.file_stem().unwrap_or_default().to_string_lossy();
            path.join(format!("{stem}.svg"))
        })
        .collect()
}

fn main() -> ExitCode {
    interrupt::install();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match cli.command {
        Command::Run(args) => {
            let outputs = Outputs {
                jsonl: args.jsonl.as_deref(),
                svg: args.svg.as_deref(),
                force: args.force,
            };
            let files = [("--jsonl", outputs.jsonl), ("--svg", outputs.svg)];
            preflight(&[], &files, args.force)
                .and_then(|()| build_spec(&args))
                .and_then(|spec| run_one(&spec, &outputs))
        }
        Command::Replay {
            token,
            save,
            svg,
            force,
        } => preflight(
            &[],
            &[("--save", save.as_deref()), ("--svg", svg.as_deref())],
            force,
        )
        .and_then(|()| parse_token(&token))
        .and_then(|spec| {
            if let Some(path) = save {
                save_scenario(&spec, &path, force)?;
            }
            let outputs = Outputs {
                jsonl: None,
                svg: svg.as_deref(),
                force,
            };
            run_one(&spec, &outputs)
        }),
        Command::Shrink { token, budget } => {
            parse_token(&token).and_then(|spec| shrink_token(&spec, budget))
        }
        Command::Scenario {
            files,
            flaw,
            svg,
            force,
        } => {
            let inputs: Vec<&std::path::Path> = files.iter().map(|f| f.as_path()).collect();
            let pictures = scenario_pictures(&files, svg.as_deref());
            let outputs: Vec<(&str, Option<&std::path::Path>)> = pictures
                .iter()
                .map(|p| ("--svg", Some(p.as_path())))
                .collect();
            preflight(&inputs, &outputs, force)
                .and_then(|()| run_scenarios(&files, flaw, svg.as_deref(), force))
        }
        Command::Explore(args) => run_explore(&args),
        Command::Bench(args) => run_bench(&args),
        Command::Check {
            history,
            timeline,
            partial,
            all,
            svg,
            force,
        } => preflight(&[history.as_path()], &[("--svg", svg.as_deref())], force)
            .and_then(|()| check_file(&history, timeline, partial, all, svg.as_deref(), force)),
    };
    match result {
        Ok(passed) => ExitCode::from(if passed { 0 } else { 1 }),
        Err(message) => {
            eprintln!("sim: {message}");
            ExitCode::from(2)
        }
    }
}
