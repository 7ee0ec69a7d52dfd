//! The largest values a plan may hold: every range in `ranges.rs` and
//! `faults.rs` is stated in these.

/// A simulated hour: the longest run, timeout, delay or pause.
pub const HOUR_MS: u64 = 3_600_000;
/// A simulated day: the longest worker period or clock skew.
pub const DAY_MS: u64 = 24 * HOUR_MS;
/// The most rows a table may start with or a term may meet.
pub const MAX_ROWS: u64 = 1_000_000;
