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
    let fields: Vec<(&str, u64, RangeInclusive<u64>)> = vec![
        ("duration_ms", spec.duration_ms, 1..=HOUR_MS),
        ("backlog_rows", spec.backlog_rows.into(), 0..=MAX_ROWS),
        ("boundary_rows", spec.boundary_rows.into(), 0..=MAX_ROWS),
        ("arrivals_per_sec", spec.arrivals_per_sec.into(), 0..=10_000),
        ("rpc_timeout_ms", spec.rpc_timeout_ms, 1..=HOUR_MS),
        ("db_batch_ms_min", spec.db_batch_ms_min, 0..=HOUR_MS),
        ("db_batch_ms_max", spec.db_batch_ms_max, 0..=HOUR_MS),
        ("db_commit_ms_min", spec.db_commit_ms_min, 0..=HOUR_MS),
        ("db_commit_ms_max", spec.db_commit_ms_max, 0..=HOUR_MS),
        (
            "statement_timeout_ms",
            spec.statement_timeout_ms,
            0..=HOUR_MS,
        ),
        ("lock_timeout_ms", spec.lock_timeout_ms, 0..=HOUR_MS),
        (
            "idle_in_transaction_timeout_ms",
            spec.idle_in_transaction_timeout_ms,
            0..=HOUR_MS,
        ),
        ("worker.retention_ms", w.retention_ms, 1..=365 * DAY_MS),
        ("worker.lease_ttl_ms", w.lease_ttl_ms, 1..=DAY_MS),
        ("worker.renew_interval_ms", w.renew_interval_ms, 1..=DAY_MS),
        ("worker.expiry_margin_ms", w.expiry_margin_ms, 0..=DAY_MS),
        ("worker.term_interval_ms", w.term_interval_ms, 0..=DAY_MS),
        ("worker.loss_backoff_ms", w.loss_backoff_ms, 0..=DAY_MS),
        (
            "worker.term_jitter_ms_max",
            w.term_jitter_ms_max,
            0..=DAY_MS,
        ),
        (
            "faults.latency_ms_max",
            spec.faults.latency_ms_max,
            0..=HOUR_MS,
        ),
        (
            "faults.clock_skew_ms_max",
            spec.faults.clock_skew_ms_max,
            0..=DAY_MS,
        ),
    ];
    for (field, value, range) in fields {
        within(field.into(), value, &range)?;
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
