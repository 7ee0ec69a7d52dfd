//! The one statement of every numeric field's range in a run's spec, used
//! for flags, replay tokens and scenario files alike: a value outside it is
//! refused naming the field, the value and the range, before anything runs
//! (huge values used to overflow a draw or grow memory without end).

use std::ops::RangeInclusive;

use super::limits::{DAY_MS, HOUR_MS, MAX_ROWS};
use super::spec::{RunSpec, SpecError};

/// Checks every numeric field of `spec` against its range.
pub fn check_ranges(spec: &RunSpec) -> Result<(), SpecError> {
    let w = &spec.worker;
    let fields: Vec<(String, u64, RangeInclusive<u64>)> = vec![
        ("duration_ms".into(), spec.duration_ms, 1..=HOUR_MS),
        (
            "backlog_rows".into(),
            spec.backlog_rows.into(),
            0..=MAX_ROWS,
        ),
        (
            "boundary_rows".into(),
            spec.boundary_rows.into(),
            0..=MAX_ROWS,
        ),
        (
            "arrivals_per_sec".into(),
            spec.arrivals_per_sec.into(),
            0..=10_000,
        ),
        ("rpc_timeout_ms".into(), spec.rpc_timeout_ms, 1..=HOUR_MS),
        ("db_batch_ms_min".into(), spec.db_batch_ms_min, 0..=HOUR_MS),
        ("db_batch_ms_max".into(), spec.db_batch_ms_max, 0..=HOUR_MS),
        (
            "db_commit_ms_min".into(),
            spec.db_commit_ms_min,
            0..=HOUR_MS,
        ),
        (
            "db_commit_ms_max".into(),
            spec.db_commit_ms_max,
            0..=HOUR_MS,
        ),
        (
            "statement_timeout_ms".into(),
            spec.statement_timeout_ms,
            0..=HOUR_MS,
        ),
        ("lock_timeout_ms".into(), spec.lock_timeout_ms, 0..=HOUR_MS),
        (
            "idle_in_transaction_timeout_ms".into(),
            spec.idle_in_transaction_timeout_ms,
            0..=HOUR_MS,
        ),
        (
            "worker.retention_ms".into(),
            w.retention_ms,
            1..=365 * DAY_MS,
        ),
        ("worker.lease_ttl_ms".into(), w.lease_ttl_ms, 1..=DAY_MS),
        (
            "worker.renew_interval_ms".into(),
            w.renew_interval_ms,
            1..=DAY_MS,
        ),
        (
            "worker.expiry_margin_ms".into(),
            w.expiry_margin_ms,
            0..=DAY_MS,
        ),
        (
            "worker.term_interval_ms".into(),
            w.term_interval_ms,
            0..=DAY_MS,
        ),
        (
            "worker.loss_backoff_ms".into(),
            w.loss_backoff_ms,
            0..=DAY_MS,
        ),
        (
            "worker.term_jitter_ms_max".into(),
            w.term_jitter_ms_max,
            0..=DAY_MS,
        ),
        (
            "faults.latency_ms_max".into(),
            spec.faults.latency_ms_max,
            0..=HOUR_MS,
        ),
        (
            "faults.clock_skew_ms_max".into(),
            spec.faults.clock_skew_ms_max,
            0..=DAY_MS,
        ),
    ];
    for (field, value, range) in fields {
        within(field, value, &range)?;
    }
    for (index, skew) in spec.skews_ms.iter().enumerate() {
        within(
            format!("skews_ms[{index}]"),
            skew.unsigned_abs(),
            &(0..=DAY_MS),
        )
        .map_err(|error| SpecError {
            problem: format!("{skew} is not within ±{DAY_MS}"),
            ..error
        })?;
    }
    for (index, event) in spec.events.iter().enumerate() {
        if let Some(delta_ms) = event.delta_ms()
            && delta_ms.unsigned_abs() > DAY_MS
        {
            return Err(SpecError {
                field: format!("events[{index}].delta_ms"),
                problem: format!("{delta_ms} is not within ±{DAY_MS}"),
            });
        }
        for (name, value, range) in event.bounded_fields() {
            within(format!("events[{index}].{name}"), value, &range)?;
        }
    }
    Ok(())
}

fn within(field: String, value: u64, range: &RangeInclusive<u64>) -> Result<(), SpecError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(SpecError {
            field,
            problem: format!("{value} is not in {}..={}", range.start(), range.end()),
        })
    }
}
