//! `sim`: run, sweep and replay simulations of the retention worker.
//!
//! Exit status: 0 when every run kept the contract, 1 when any violated it,
//! 2 for bad input, 3 when `merge` lacks shards, 130 when interrupted
//! (Ctrl-C, SIGTERM). `args.rs` holds the flags; `commands.rs`, `check.rs`,
//! `sweep.rs` and `merge.rs` what each subcommand does (the summary
//! document, merge and triage are the library's `sweep` layer); `tally.rs`
//! how a summary prints, `triage.rs` how a triage prints and failures are
//! saved, `plan.rs` prints the shard plan, `progress.rs` the
//! progress display; `files.rs` how a file is written without losing one,
//! `output.rs` standard output that outlives a closed pipe, `corpus.rs` a
//! guided campaign's corpus files, `interrupt.rs`
//! what a signal does, `page.rs` the sweep's report page; `real.rs`,
//! `real_rate.rs` and `takeover.rs` what runs against PostgreSQL.

mod args;
mod check;
mod commands;
mod corpus;
mod event_flags;
mod explain;
mod files;
mod guided_bench;
mod hints;
mod instant;
mod interrupt;
mod merge;
mod output;
mod page;
mod plan;
mod progress;
mod real;
mod real_rate;
mod sweep;
mod takeover;
mod tally;
mod triage;
mod what_if;

use std::process::ExitCode;

use clap::Parser;
use retention_sim::report::parse_token;

use args::{Cli, Command, build_spec};
use check::check_file;
use commands::{Outputs, run_one, run_scenarios, save_scenario, shrink_token};
use files::preflight;
use output::tell;
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
    // Two files of one name: refused by `one_name_each` before this runs.
    files
        .iter()
        .map(|file| {
            let stem = file.file_stem().unwrap_or_default().to_string_lossy();
            path.join(format!("{stem}.svg"))
        })
        .collect()
}

fn main() -> ExitCode {
    // Code this crate does not own (madsim's executor noting a task's
    // panic) prints with `eprintln!`, which panics when stderr cannot be
    // written: that ends the command as an output failure, not a crash.
    // The hook sees such a panic on any thread (a sweep's workers too),
    // where it may reach here as "a scoped thread panicked".
    output::catch_print_panics();
    let status = std::panic::catch_unwind(status).unwrap_or_else(|payload| {
        interrupt::hold_if_quitting();
        if output::failed() {
            output::WRITE_ERROR
        } else {
            std::panic::resume_unwind(payload)
        }
    });
    ExitCode::from(output::exit_status(status))
}

/// The status the command's result calls for, before output failures.
fn status() -> u8 {
    interrupt::install();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // `--help` and `--version` go to stdout, usage errors to stderr.
            let text = error.render().to_string();
            let text = text.trim_end();
            if error.use_stderr() {
                tell!("{text}");
            } else {
                output::say!("{text}");
            }
            return if error.use_stderr() { 2 } else { 0 };
        }
    };
    // JSON is read by programs: never coloured, whatever --color says.
    let json_out = match &cli.command {
        Command::Explore(args) => args.json,
        Command::Merge(args) => args.json,
        Command::Bench(args) => args.json,
        Command::Replay { json, .. } => *json,
        Command::Explain(args) => args.json,
        _ => false,
    };
    output::set_colour(match cli.color {
        _ if json_out => false,
        args::Colour::Always => true,
        args::Colour::Never => false,
        args::Colour::Auto => {
            use std::io::IsTerminal;
            output::colour_by_default(std::io::stdout().is_terminal())
        }
    });
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
            real: true,
            attempts,
            out,
            force,
            ..
        } => parse_token(&token)
            .and_then(|spec| real::replay_real(&spec, attempts, out.as_deref(), force)),
        Command::Replay {
            token,
            at,
            at_seq,
            json,
            svg,
            force,
            ..
        } if at.is_some() || at_seq.is_some() => {
            preflight(&[], &[("--svg", svg.as_deref())], force)
                .and_then(|()| parse_token(&token))
                .and_then(|spec| instant::run(&spec, (at, at_seq), json, (svg.as_deref(), force)))
        }
        Command::Replay {
            token,
            delay_reply,
            drop_reply,
            drop_fault,
            move_fault,
            set,
            ..
        } if !(delay_reply.is_empty()
            && drop_reply.is_empty()
            && drop_fault.is_empty()
            && move_fault.is_empty()
            && set.is_empty()) =>
        {
            what_if::interventions(
                (&delay_reply, &drop_reply),
                (&drop_fault, &move_fault),
                &set,
            )
            .and_then(|interventions| {
                parse_token(&token).and_then(|spec| what_if::run(&spec, &interventions))
            })
        }
        Command::Replay { json: true, .. } => {
            Err("--json: only with --at or --at-seq (the timeline is text)".to_owned())
        }
        Command::Replay {
            token,
            save,
            svg,
            jsonl,
            force,
            ..
        } => preflight(
            &[],
            &[
                ("--save", save.as_deref()),
                ("--svg", svg.as_deref()),
                ("--jsonl", jsonl.as_deref()),
            ],
            force,
        )
        .and_then(|()| parse_token(&token))
        .and_then(|spec| {
            if let Some(path) = save {
                save_scenario(&spec, &path, force, "sim replay --save")?;
            }
            let outputs = Outputs {
                jsonl: jsonl.as_deref(),
                svg: svg.as_deref(),
                force,
            };
            run_one(&spec, &outputs)
        }),
        Command::Explain(args) => explain::run(&args),
        Command::Shrink { token, budget } => {
            parse_token(&token).and_then(|spec| shrink_token(&spec, budget))
        }
        Command::Scenario {
            files,
            real: true,
            table,
            out,
            force,
            ..
        } => scenario_inputs(files).and_then(|files| {
            let inputs: Vec<&std::path::Path> = files.iter().map(|f| f.as_path()).collect();
            preflight(&inputs, &[("--table", table.as_deref())], force)
                .and_then(|()| {
                    real::histories_folder(out.as_deref(), table.as_deref(), &files, force)
                })
                .and_then(|()| {
                    real::scenarios_real(&files, table.as_deref(), out.as_deref(), force)
                })
        }),
        Command::Scenario {
            files,
            flaw,
            svg,
            force,
            quiet,
            ..
        } => scenario_inputs(files).and_then(|files| {
            let inputs: Vec<&std::path::Path> = files.iter().map(|f| f.as_path()).collect();
            if let Some(folder) = svg.as_deref().filter(|svg| svg.is_dir()) {
                files::one_name_each("--svg", folder, &files, "svg")?;
            }
            let pictures = scenario_pictures(&files, svg.as_deref());
            let outputs: Vec<(&str, Option<&std::path::Path>)> = pictures
                .iter()
                .map(|p| ("--svg", Some(p.as_path())))
                .collect();
            preflight(&inputs, &outputs, force)
                .and_then(|()| run_scenarios(&files, flaw, svg.as_deref(), force, quiet))
        }),
        Command::Explore(args) => run_explore(&args),
        Command::Merge(args) => {
            return match merge::run_merge(&args) {
                Ok(status) => status,
                Err(message) => {
                    tell!("sim: {message}");
                    2
                }
            };
        }
        Command::Bench(args) if !args.real.is_empty() => scenario_inputs(args.real)
            .and_then(|files| real_rate::real_rates(&files, args.attempts, args.json)),
        Command::Bench(args) => run_bench(&args),
        Command::Takeover(args) => takeover::run_takeover(&args),
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
    interrupt::hold_if_quitting();
    if interrupt::interrupted() {
        // A sweep stopped by a signal has printed (and written) its partial
        // summary; the status says it did not finish.
        if let Err(message) = result {
            tell!("sim: {message}");
        }
        return interrupt::INTERRUPTED;
    }
    match result {
        Ok(passed) => u8::from(!passed),
        Err(message) => {
            tell!("sim: {message}");
            2
        }
    }
}

/// The scenario files named: a folder stands for its `*.toml` files, in
/// name order; a folder with none is refused.
fn scenario_inputs(named: Vec<std::path::PathBuf>) -> Result<Vec<std::path::PathBuf>, String> {
    let mut files = Vec::new();
    for path in named {
        if !path.is_dir() {
            files.push(path);
            continue;
        }
        let inside = retention_sim::report::scenario_files(&path)
            .map_err(|error| format!("{}: cannot list the folder: {error}", path.display()))?;
        if inside.is_empty() {
            return Err(format!(
                "{}: a folder with no .toml scenario files",
                path.display()
            ));
        }
        files.extend(inside);
    }
    Ok(files)
}
