//! Swarm testing: the seed decides which faults are on and how hard, so that
//! different seeds stress different mixes (as TigerBeetle's VOPR does).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::model::{FaultConfig, FaultEvent, FaultKnob, OpKind, RunSpec};

/// Keeps swarm draws independent of the world's own draws from the seed.
const SWARM_SALT: u64 = 0x5A5A_C0FF_EE00_0001;

/// A spec for `seed` whose faults are drawn from `seed`: each knob is on
/// with even odds, at a random strength, plus a few timed events.
/// `replicas` fixes the replica count instead of drawing it.
pub fn swarm(seed: u64, replicas: Option<u32>) -> RunSpec {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ SWARM_SALT);
    let mut spec = RunSpec {
        seed,
        ..RunSpec::default()
    };
    spec.replicas = replicas.unwrap_or_else(|| rng.gen_range(1..=5));
    spec.faults = draw_faults(&mut rng, spec.worker.renew_interval_ms);
    spec.events = draw_events(&mut rng, spec.replicas, spec.duration_ms);
    spec
}

/// The strongest value a search draws for `knob`: strong enough to matter,
/// mild enough that runs still make progress. A clock skew stays within
/// one renewal interval.
pub(crate) fn strongest(knob: FaultKnob, renew_interval_ms: u64) -> u64 {
    use FaultKnob as K;
    match knob {
        K::LatencyMsMax => 400,
        K::RenewReplyDelayPermille => 300,
        K::RejectPermille | K::AmbiguousPermille | K::NullRenewPermille => 100,
        K::PacketLossPermille => 50,
        K::ClockSkewMsMax => renew_interval_ms,
    }
}

fn draw_faults(rng: &mut ChaCha8Rng, renew_interval_ms: u64) -> FaultConfig {
    let mut faults = FaultConfig::default();
    for &knob in FaultKnob::ALL {
        let value = if rng.gen_bool(0.5) {
            rng.gen_range(1..=strongest(knob, renew_interval_ms))
        } else {
            0
        };
        faults
            .set(knob, value)
            .expect("drawn within the knob's limit");
    }
    faults
}

/// Builds a timed event for a replica and an instant, drawing the rest.
type TimedEvent = fn(&mut ChaCha8Rng, u32, u64) -> FaultEvent;

fn draw_events(rng: &mut ChaCha8Rng, replicas: u32, duration_ms: u64) -> Vec<FaultEvent> {
    let mut events = Vec::new();
    let some = |rng: &mut ChaCha8Rng| {
        if rng.gen_bool(0.5) {
            rng.gen_range(1..=2)
        } else {
            0
        }
    };
    let timed: [TimedEvent; 3] = [
        |rng, replica, at_ms| FaultEvent::Pause {
            replica,
            at_ms,
            for_ms: rng.gen_range(500..=8_000),
        },
        |rng, replica, at_ms| FaultEvent::Crash {
            replica,
            at_ms,
            restart_after_ms: rng.gen_range(100..=5_000),
        },
        |rng, replica, at_ms| FaultEvent::Stop {
            replica,
            at_ms,
            callers: rng.gen_range(1..=3),
        },
    ];
    for event in timed {
        for _ in 0..some(rng) {
            let (replica, at_ms) = (rng.gen_range(1..=replicas), rng.gen_range(0..duration_ms));
            events.push(event(rng, replica, at_ms));
        }
    }
    for _ in 0..some(rng) {
        let ops = [OpKind::Acquire, OpKind::Renew, OpKind::Delete];
        let op = ops[rng.gen_range(0..ops.len())];
        let replica = rng.gen_range(1..=replicas);
        events.push(FaultEvent::StopDuring {
            replica,
            op,
            nth: rng.gen_range(1..=4),
            callers: rng.gen_range(1..=3),
        });
    }
    events
}
