//! How a search draws fault events, every kind in one place: the swarm's
//! draw from a seed (each kind on a stream of its own) and the property
//! suite's proptest strategy.

use proptest::prelude::*;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::space::stream;
use crate::model::{CallOutcome, FaultEvent, OpKind};

/// Up to two events of each kind (one of `hold_rows`, `stall_standby`,
/// `db_clock_step`, `clock_rate` and `partition`), each kind on its own
/// stream.
pub(super) fn draw_events(seed: u64, replicas: u32, duration_ms: u64) -> Vec<FaultEvent> {
    let mut events = Vec::new();
    let count = |rng: &mut ChaCha8Rng, most: u32| {
        if rng.gen_bool(0.5) {
            rng.gen_range(1..=most)
        } else {
            0
        }
    };
    let kinds: [(&str, u32, EventDraw); 11] = [
        ("events.pause", 2, |rng, replicas, duration_ms| {
            FaultEvent::Pause {
                replica: rng.gen_range(1..=replicas),
                at_ms: rng.gen_range(0..duration_ms),
                for_ms: rng.gen_range(500..=8_000),
            }
        }),
        ("events.crash", 2, |rng, replicas, duration_ms| {
            FaultEvent::Crash {
                replica: rng.gen_range(1..=replicas),
                at_ms: rng.gen_range(0..duration_ms),
                restart_after_ms: rng.gen_range(100..=5_000),
            }
        }),
        ("events.stop", 2, |rng, replicas, duration_ms| {
            FaultEvent::Stop {
                replica: rng.gen_range(1..=replicas),
                at_ms: rng.gen_range(0..duration_ms),
                callers: rng.gen_range(1..=3),
            }
        }),
        ("events.stop_during", 2, |rng, replicas, _| {
            FaultEvent::StopDuring {
                replica: rng.gen_range(1..=replicas),
                op: OpKind::ALL[rng.gen_range(0..OpKind::ALL.len())],
                nth: rng.gen_range(1..=4),
                callers: rng.gen_range(1..=3),
            }
        }),
        ("events.call_fault", 2, draw_call_fault),
        ("events.stall_standby", 1, |rng, _, duration_ms| {
            FaultEvent::StallStandby {
                at_ms: rng.gen_range(0..duration_ms),
                for_ms: rng.gen_range(100..=8_000),
            }
        }),
        ("events.hold_rows", 1, |rng, _, duration_ms| {
            FaultEvent::HoldRows {
                at_ms: rng.gen_range(0..duration_ms),
                for_ms: rng.gen_range(100..=5_000),
                rows: rng.gen_range(1..=400),
            }
        }),
        // Steps of up to two leases either way; a rate from half to double
        // speed, from any moment.
        ("events.clock_step", 2, |rng, replicas, duration_ms| {
            let size_ms = rng.gen_range(1..=6_000);
            FaultEvent::ClockStep {
                replica: rng.gen_range(1..=replicas),
                at_ms: rng.gen_range(0..duration_ms),
                delta_ms: if rng.gen_bool(0.5) { size_ms } else { -size_ms },
            }
        }),
        ("events.db_clock_step", 1, |rng, _, duration_ms| {
            let size_ms = rng.gen_range(1..=6_000);
            FaultEvent::DbClockStep {
                at_ms: rng.gen_range(0..duration_ms),
                delta_ms: if rng.gen_bool(0.5) { size_ms } else { -size_ms },
            }
        }),
        ("events.clock_rate", 1, |rng, replicas, duration_ms| {
            FaultEvent::ClockRate {
                replica: rng.gen_range(1..=replicas),
                at_ms: rng.gen_range(0..duration_ms),
                rate_permille: rng.gen_range(500..=2_000),
            }
        }),
        // Last, so that adding it left every other kind's draws as they were.
        ("events.partition", 1, |rng, replicas, duration_ms| {
            FaultEvent::Partition {
                replica: rng.gen_range(1..=replicas),
                at_ms: rng.gen_range(0..duration_ms),
                for_ms: rng.gen_range(500..=8_000),
            }
        }),
    ];
    for (dimension, most, draw) in kinds {
        let mut rng = stream(seed, dimension);
        for _ in 0..count(&mut rng, most) {
            events.push(draw(&mut rng, replicas, duration_ms));
        }
    }
    // Two draws for one call would make an invalid plan: the first stays.
    crate::model::first_per_call(events)
}

/// Draws one event for `replicas` replicas in a run of `duration_ms`.
type EventDraw = fn(&mut ChaCha8Rng, u32, u64) -> FaultEvent;

/// A chosen call meets an outcome that applies to its operation (revoke to
/// a renewal, a corrupt reply to an acquire or a renewal), with delays.
fn draw_call_fault(rng: &mut ChaCha8Rng, replicas: u32, _: u64) -> FaultEvent {
    let op = OpKind::ALL[rng.gen_range(0..OpKind::ALL.len())];
    let mut outcomes = vec![
        CallOutcome::Normal,
        CallOutcome::Reject,
        CallOutcome::LoseReply,
    ];
    if op == OpKind::Renew {
        outcomes.push(CallOutcome::Revoke);
    }
    if matches!(op, OpKind::Acquire | OpKind::Renew) {
        outcomes.push(CallOutcome::Corrupt);
    }
    let delay_ms = |rng: &mut ChaCha8Rng| {
        if rng.gen_bool(0.5) {
            0
        } else {
            rng.gen_range(0..=3_000)
        }
    };
    FaultEvent::CallFault {
        replica: rng.gen_range(1..=replicas),
        op,
        nth: rng.gen_range(1..=4),
        outcome: outcomes[rng.gen_range(0..outcomes.len())],
        request_delay_ms: delay_ms(rng),
        reply_delay_ms: delay_ms(rng),
    }
}

fn outcome() -> impl Strategy<Value = CallOutcome> {
    prop_oneof![
        Just(CallOutcome::Normal),
        Just(CallOutcome::Reject),
        Just(CallOutcome::LoseReply),
        Just(CallOutcome::Revoke),
        Just(CallOutcome::Corrupt),
    ]
}

/// A timed event for replica 1..=5 at 0..30 s; [`spec`](super::properties::spec) folds both into
/// the run's replicas and duration, so shrinking never regenerates them.
/// Cuts from the database are the swarm's to draw: a new arm here would
/// move every draw of this search, whose shrunk counterexamples the tests
/// hold to a size.
pub fn event() -> impl Strategy<Value = FaultEvent> {
    let replica = 1..=5u32;
    let at = 0..30_000u64;
    let op = prop_oneof![
        Just(OpKind::Acquire),
        Just(OpKind::Renew),
        Just(OpKind::Delete),
        Just(OpKind::Release)
    ];
    prop_oneof![
        (replica.clone(), at.clone(), 100..10_000u64).prop_map(|(replica, at_ms, for_ms)| {
            FaultEvent::Pause {
                replica,
                at_ms,
                for_ms,
            }
        }),
        (replica.clone(), at.clone(), 0..6_000u64).prop_map(
            |(replica, at_ms, restart_after_ms)| {
                FaultEvent::Crash {
                    replica,
                    at_ms,
                    restart_after_ms,
                }
            }
        ),
        (replica.clone(), at.clone(), 1..=3u32).prop_map(|(replica, at_ms, callers)| {
            FaultEvent::Stop {
                replica,
                at_ms,
                callers,
            }
        }),
        (replica.clone(), op.clone(), 1..=6u32, 1..=3u32).prop_map(
            |(replica, op, nth, callers)| {
                FaultEvent::StopDuring {
                    replica,
                    op,
                    nth,
                    callers,
                }
            }
        ),
        (replica.clone(), at.clone(), -6_000..=6_000i64).prop_map(|(replica, at_ms, delta_ms)| {
            FaultEvent::ClockStep {
                replica,
                at_ms,
                delta_ms,
            }
        }),
        (replica.clone(), at.clone(), 500..=2_000u64).prop_map(
            |(replica, at_ms, rate_permille)| FaultEvent::ClockRate {
                replica,
                at_ms,
                rate_permille,
            }
        ),
        (at.clone(), -6_000..=6_000i64)
            .prop_map(|(at_ms, delta_ms)| FaultEvent::DbClockStep { at_ms, delta_ms }),
        (at.clone(), 100..5_000u64, 1..=400u32).prop_map(|(at_ms, for_ms, rows)| {
            FaultEvent::HoldRows {
                at_ms,
                for_ms,
                rows,
            }
        }),
        (replica, op, 1..=6u32, outcome(), 0..3_000u64, 0..3_000u64).prop_map(
            |(replica, op, nth, outcome, request_delay_ms, reply_delay_ms)| {
                // A revoke only means something for a renewal.
                let outcome = match outcome {
                    CallOutcome::Revoke if op != OpKind::Renew => CallOutcome::Reject,
                    CallOutcome::Corrupt if !matches!(op, OpKind::Acquire | OpKind::Renew) => {
                        CallOutcome::Reject
                    }
                    other => other,
                };
                FaultEvent::CallFault {
                    replica,
                    op,
                    nth,
                    outcome,
                    request_delay_ms,
                    reply_delay_ms,
                }
            }
        ),
    ]
}
