//! The largest values a plan may hold: every range in `ranges.rs` and
//! `faults.rs` is stated in these.

/// A simulated hour: the longest run, timeout, delay or pause.
pub const HOUR_MS: u64 = 3_600_000;
/// A simulated day: the longest worker period or clock skew.
pub const DAY_MS: u64 = 24 * HOUR_MS;
/// The replicas a run may have.
pub const REPLICAS: std::ops::RangeInclusive<u32> = 1..=5;
/// The most rows a table may start with or a term may meet.
pub const MAX_ROWS: u64 = 1_000_000;

/// Why `replicas` is not a count a run may have, if it is not.
pub fn replicas_problem(replicas: u32) -> Option<String> {
    (!REPLICAS.contains(&replicas)).then(|| {
        format!(
            "{replicas} is not in {}..={}",
            REPLICAS.start(),
            REPLICAS.end()
        )
    })
}
