//! Swarm testing: the seed decides which settings move off their defaults,
//! which faults are on and how hard, and which events happen, so that
//! different seeds stress different mixes (as TigerBeetle's VOPR does).
//! Each dimension draws from its own stream ([`stream`]).

use rand::Rng;

use super::event_draws::draw_events;
use super::space::{self, fit, maybe, stream};
use crate::model::{FaultConfig, FaultKnob, REPLICAS, RunSpec, WorkerSpec};

/// A spec for `seed` drawn from `seed`: the worker's whole configuration,
/// the database's speed, the call timeout and the server-side bounds, each
/// off its default with even odds; each fault knob on with even odds at a
/// random strength; sometimes explicit clock skews; and a few events of
/// every kind. `replicas` fixes the replica count instead of drawing it.
pub fn swarm(seed: u64, replicas: Option<u32>) -> RunSpec {
    let mut spec = RunSpec {
        seed,
        ..RunSpec::default()
    };
    spec.replicas = replicas.unwrap_or_else(|| stream(seed, "replicas").gen_range(REPLICAS));
    spec.worker = draw_worker(seed);
    draw_database(seed, &mut spec);
    let renew_interval_ms = spec.worker.renew_interval_ms;
    spec.faults = draw_faults(seed, renew_interval_ms);
    spec.skews_ms = draw_skews(seed, spec.replicas, renew_interval_ms);
    spec.events = draw_events(seed, spec.replicas, spec.duration_ms);
    if let Err(error) = spec.validate() {
        panic!("swarm drew an invalid spec for seed {seed}: {error}");
    }
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

fn draw_worker(seed: u64) -> WorkerSpec {
    let d = WorkerSpec::default();
    let mut worker = WorkerSpec {
        batch_size: maybe(seed, "worker.batch_size", d.batch_size, space::BATCH_SIZE),
        term_row_cap: maybe(
            seed,
            "worker.term_row_cap",
            d.term_row_cap,
            space::TERM_ROW_CAP,
        ),
        retention_ms: maybe(
            seed,
            "worker.retention_ms",
            d.retention_ms,
            space::RETENTION_MS,
        ),
        lease_ttl_ms: maybe(
            seed,
            "worker.lease_ttl_ms",
            d.lease_ttl_ms,
            space::LEASE_TTL_MS,
        ),
        renew_interval_ms: maybe(
            seed,
            "worker.renew_interval_ms",
            d.renew_interval_ms,
            space::RENEW_INTERVAL_MS,
        ),
        expiry_margin_ms: maybe(
            seed,
            "worker.expiry_margin_ms",
            d.expiry_margin_ms,
            space::EXPIRY_MARGIN_MS,
        ),
        term_interval_ms: maybe(
            seed,
            "worker.term_interval_ms",
            d.term_interval_ms,
            space::TERM_INTERVAL_MS,
        ),
        loss_backoff_ms: maybe(
            seed,
            "worker.loss_backoff_ms",
            d.loss_backoff_ms,
            space::LOSS_BACKOFF_MS,
        ),
        term_jitter_ms_max: maybe(
            seed,
            "worker.term_jitter_ms_max",
            d.term_jitter_ms_max,
            space::TERM_JITTER_MS_MAX,
        ),
    };
    fit(&mut worker);
    worker
}

/// The call timeout, the database's speed and its server-side bounds.
fn draw_database(seed: u64, spec: &mut RunSpec) {
    let d = RunSpec::default();
    spec.rpc_timeout_ms = maybe(
        seed,
        "db.rpc_timeout_ms",
        d.rpc_timeout_ms,
        space::RPC_TIMEOUT_MS,
    );
    spec.db_batch_ms_min = maybe(
        seed,
        "db.batch_ms_min",
        d.db_batch_ms_min,
        space::DB_BATCH_MS_MIN,
    );
    let spread_ms = d.db_batch_ms_max - d.db_batch_ms_min;
    spec.db_batch_ms_max = spec.db_batch_ms_min
        + maybe(
            seed,
            "db.batch_ms_spread",
            spread_ms,
            space::DB_BATCH_MS_SPREAD,
        );
    // Commits: instant half the time; else a flush and a synchronous
    // standby nearby (a few ms) or far away (up to a few hundred ms).
    let mut rng = stream(seed, "db.commit_ms");
    if rng.gen_bool(0.5) {
        spec.db_commit_ms_min = rng.gen_range(space::DB_COMMIT_MS_MIN);
        spec.db_commit_ms_max = spec.db_commit_ms_min + rng.gen_range(space::DB_COMMIT_MS_SPREAD);
    }
    let bound = |dimension: &str, default: u64| {
        let mut rng = stream(seed, dimension);
        match rng.gen_range(0..4) {
            0 | 1 => default,
            2 => 0,
            _ => rng.gen_range(space::BOUND_MS),
        }
    };
    spec.statement_timeout_ms = bound("db.statement_timeout_ms", d.statement_timeout_ms);
    spec.lock_timeout_ms = bound("db.lock_timeout_ms", d.lock_timeout_ms);
    spec.idle_in_transaction_timeout_ms = bound(
        "db.idle_in_transaction_timeout_ms",
        d.idle_in_transaction_timeout_ms,
    );
}

fn draw_faults(seed: u64, renew_interval_ms: u64) -> FaultConfig {
    let mut faults = FaultConfig::default();
    for &knob in FaultKnob::ALL {
        let strongest = strongest(knob, renew_interval_ms);
        let value = maybe(seed, &format!("faults.{knob}"), 0, 1..=strongest);
        faults
            .set(knob, value)
            .expect("drawn within the knob's limit");
    }
    faults
}

/// One run in four gives each replica an explicit skew, ahead or behind by
/// up to two renewal intervals (`faults.clock_skew_ms_max` then unused).
fn draw_skews(seed: u64, replicas: u32, renew_interval_ms: u64) -> Vec<i64> {
    let mut rng = stream(seed, "skews_ms");
    if !rng.gen_bool(0.25) {
        return Vec::new();
    }
    let most = i64::try_from(2 * renew_interval_ms).unwrap_or(i64::MAX);
    (0..replicas).map(|_| rng.gen_range(-most..=most)).collect()
}
