//! `sim bench --real FILES`: how often each scenario's expectation holds
//! against PostgreSQL over single attempts; a figure, never a pass or fail.

use crate::output::{say, tell};
use std::path::PathBuf;

use retention_sim::real::{RealServer, refusal};
use retention_sim::{Scenario, check};

/// A false failure of the whole gate the attempt counts are chosen for:
/// below 1 in 100,000 CI runs.
pub const GATE_FALSE_FAILURE: f64 = 1e-5;

/// z for a one-sided 97.5% bound (the lower end of a 95% interval).
const Z: f64 = 1.96;

/// One file's figure.
#[derive(serde::Serialize)]
pub struct Rate {
    /// The scenario's name.
    pub name: String,
    /// Attempts run.
    pub attempts: u32,
    /// Attempts whose real run met the scenario's expectation.
    pub as_expected: u32,
    /// `as_expected / attempts`.
    pub rate: f64,
    /// Wilson's lower 95% bound on the rate.
    pub rate_lower: f64,
    /// Single attempts that keep a miss of this file below its share of
    /// [`GATE_FALSE_FAILURE`] at `rate_lower`; none when it is 0.
    pub gate_attempts: Option<u32>,
}

/// Wilson's score interval's lower end for `hits` in `n`.
pub fn wilson_lower(hits: u32, n: u32) -> f64 {
    assert!(hits <= n && n > 0, "{hits} of {n}");
    let (n, p) = (f64::from(n), f64::from(hits) / f64::from(n));
    let z2 = Z * Z;
    let centre = p + z2 / (2.0 * n);
    let spread = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - spread) / (1.0 + z2 / n)).max(0.0)
}

/// The fewest attempts `k` with `(1 - rate)^k < share`; none at rate 0.
pub fn attempts_for(rate: f64, share: f64) -> Option<u32> {
    if rate <= 0.0 {
        return None;
    }
    if rate >= 1.0 {
        return Some(1);
    }
    let k = (share.ln() / (1.0 - rate).ln()).floor() + 1.0;
    Some(k.min(f64::from(u32::MAX)) as u32)
}

/// Runs each file `attempts` times against one throwaway server, each on a
/// fresh database, and prints each file's rate. Ok(true) always once the
/// runs are done: a rate is reported, not judged.
pub fn real_rates(files: &[PathBuf], attempts: u32, json: bool) -> Result<bool, String> {
    if !(1..=100_000).contains(&attempts) {
        return Err(format!("--attempts: {attempts} is not in 1..=100000"));
    }
    let mut scenarios = Vec::new();
    for file in files {
        let scenario = Scenario::load(file).map_err(|error| error.to_string())?;
        if let Some(why) = refusal(&scenario.run) {
            return Err(format!(
                "{}: cannot run against PostgreSQL: {why}",
                file.display()
            ));
        }
        scenarios.push(scenario);
    }
    let server = RealServer::start_installed()?;
    let share = GATE_FALSE_FAILURE / scenarios.len() as f64;
    let mut rates = Vec::new();
    for (index, scenario) in scenarios.iter().enumerate() {
        let mut as_expected = 0;
        for attempt in 1..=attempts {
            let name = format!("rate_{index}_{attempt}");
            let real = server.run(&scenario.run, &name);
            let verdict = check(&real.history);
            let judged = scenario.judge_real(&verdict, &real.history.timeline());
            as_expected += u32::from(judged.is_ok());
            // The first problem says which way the race fell this time.
            let outcome = match judged {
                Ok(_) => "as expected".to_owned(),
                Err(problems) => format!(
                    "NOT as expected: {}",
                    problems.lines().next().unwrap_or_default()
                ),
            };
            tell!(
                "bench: {} attempt {attempt} of {attempts}: {outcome}",
                scenario.name
            );
        }
        let rate_lower = wilson_lower(as_expected, attempts);
        rates.push(Rate {
            name: scenario.name.clone(),
            attempts,
            as_expected,
            rate: f64::from(as_expected) / f64::from(attempts),
            rate_lower,
            gate_attempts: attempts_for(rate_lower, share),
        });
    }
    if json {
        say!(
            "{}",
            serde_json::to_string(&rates).map_err(|error| error.to_string())?
        );
        return Ok(true);
    }
    say!(
        "as expected against PostgreSQL, single attempts on one server \
         (rate, Wilson's 95% lower bound, attempts that keep a miss of all {} \
         below 1 in {:.0} at that bound):",
        rates.len(),
        1.0 / GATE_FALSE_FAILURE
    );
    for rate in &rates {
        say!(
            "  {:<48} {:>4} of {:<4} {:.2} (>= {:.2})  {}",
            rate.name,
            rate.as_expected,
            rate.attempts,
            rate.rate,
            rate.rate_lower,
            rate.gate_attempts
                .map_or("never".to_owned(), |k| format!("{k} attempt(s)"))
        );
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_and_the_attempts_follow_the_arithmetic() {
        // 100 of 100: Wilson's bound is n / (n + z^2).
        let all = wilson_lower(100, 100);
        assert!((all - 100.0 / (100.0 + Z * Z)).abs() < 1e-12, "{all}");
        assert_eq!(wilson_lower(0, 10), 0.0);
        let half = wilson_lower(50, 100);
        assert!(half > 0.40 && half < 0.41, "{half}");
        // (1 - 0.9)^k < 2e-6 first at k = 6 (1e-6), not at 5 (1e-5).
        assert_eq!(attempts_for(0.9, 2e-6), Some(6));
        assert_eq!(attempts_for(0.0, 2e-6), None);
        assert_eq!(attempts_for(1.0, 2e-6), Some(1));
    }
}
