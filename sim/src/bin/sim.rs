//! `sim`: runs the retention worker's simulation and prints its timeline.

use std::process::ExitCode;

use retention_sim::{DemoConfig, run_demo};

const USAGE: &str = "usage: sim [--seed N] [--replicas K]";

fn main() -> ExitCode {
    let config = match parse(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("sim: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let outcome = run_demo(&config);
    println!(
        "seed {}  replicas {}  rows {} old + {} recent  stop at {} ms",
        config.seed, config.replicas, config.old_rows, config.recent_rows, config.stop_at_ms
    );
    print!("{}", outcome.timeline);
    println!(
        "deleted {} rows, {} left, at most {} in one term",
        outcome.rows_deleted, outcome.rows_left, outcome.most_rows_in_a_term
    );
    ExitCode::SUCCESS
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<DemoConfig, String> {
    let mut config = DemoConfig::default();
    while let Some(flag) = args.next() {
        let mut value = |name: &str| {
            let raw = args.next().ok_or(format!("{name} needs a value"))?;
            raw.parse::<u64>()
                .map_err(|_| format!("{name}: {raw:?} is not a non-negative integer"))
        };
        match flag.as_str() {
            "--seed" => config.seed = value("--seed")?,
            "--replicas" => {
                let replicas = value("--replicas")?;
                if !(1..=5).contains(&replicas) {
                    return Err(format!("--replicas: {replicas} is not in 1..=5"));
                }
                config.replicas = replicas as u32;
            }
            "-h" | "--help" => return Err("help".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(config)
}
