//! The space searches draw runs from: each setting's range (within what the
//! worker and the spec validate), the fix that keeps a drawn worker
//! configuration valid, and one random stream per dimension of a plan.
//!
//! Every range excludes nothing the validators accept that matters: caps
//! that are not multiples of the batch, renew intervals up to the TTL,
//! margins up to what the interval leaves, short retentions (rows arriving
//! during the run come of age), slow databases, and each server-side bound
//! off, short or long.

use std::ops::RangeInclusive;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::model::WorkerSpec;

/// Rows per batch; the worker refuses more than 200.
pub(crate) const BATCH_SIZE: RangeInclusive<u32> = 1..=200;
/// Rows per term; the worker refuses more than 1,000.
pub(crate) const TERM_ROW_CAP: RangeInclusive<u32> = 1..=1_000;
/// Short retentions, so that rows written during the run become eligible
/// in it; the default (an hour) is the long one.
pub(crate) const RETENTION_MS: RangeInclusive<u64> = 2_000..=30_000;
pub(crate) const LEASE_TTL_MS: RangeInclusive<u64> = 1_000..=6_000;
/// Up to the TTL; [`fit`] keeps it below.
pub(crate) const RENEW_INTERVAL_MS: RangeInclusive<u64> = 50..=6_000;
/// Up to what the interval leaves; [`fit`] keeps it below.
pub(crate) const EXPIRY_MARGIN_MS: RangeInclusive<u64> = 0..=5_000;
pub(crate) const TERM_INTERVAL_MS: RangeInclusive<u64> = 50..=8_000;
pub(crate) const LOSS_BACKOFF_MS: RangeInclusive<u64> = 50..=6_000;
pub(crate) const TERM_JITTER_MS_MAX: RangeInclusive<u64> = 0..=3_000;
/// The client's call timeout.
pub(crate) const RPC_TIMEOUT_MS: RangeInclusive<u64> = 200..=5_000;
/// A delete's work: the fastest, and how much slower the slowest may be.
pub(crate) const DB_BATCH_MS_MIN: RangeInclusive<u64> = 1..=1_000;
pub(crate) const DB_BATCH_MS_SPREAD: RangeInclusive<u64> = 0..=3_000;
/// A server-side bound that is on (0, off, is drawn separately).
pub(crate) const DB_COMMIT_MS_MIN: RangeInclusive<u64> = 0..=20;
pub(crate) const DB_COMMIT_MS_SPREAD: RangeInclusive<u64> = 0..=300;
pub(crate) const BOUND_MS: RangeInclusive<u64> = 100..=3_000;

/// Makes a drawn worker configuration valid the way a careful operator
/// would, moving only what breaks a rule: the renew interval below the TTL,
/// then the margin below what the interval leaves.
pub(crate) fn fit(worker: &mut WorkerSpec) {
    if worker.renew_interval_ms >= worker.lease_ttl_ms {
        worker.renew_interval_ms = (worker.lease_ttl_ms / 3).max(1);
    }
    let room_ms = worker.lease_ttl_ms - worker.renew_interval_ms;
    if worker.expiry_margin_ms >= room_ms {
        worker.expiry_margin_ms = room_ms / 2;
    }
    assert!(
        worker.config().validate().is_ok(),
        "a fitted configuration is valid: {worker:?}"
    );
}

/// Keeps search draws independent of the world's own draws from the seed.
const SEARCH_SALT: u64 = 0x5A5A_C0FF_EE00_0001;

/// The random stream of one dimension of `seed`'s plan (`"worker.batch_size"`,
/// `"events.pause"`): ChaCha's stream id is the name's hash, so no two
/// dimensions share draws, and turning one off (or adding a new one) leaves
/// every other exactly as it was.
pub(crate) fn stream(seed: u64, dimension: &str) -> ChaCha8Rng {
    // FNV-1a: stable across builds and platforms, unlike std's hasher.
    let id = dimension
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ SEARCH_SALT);
    rng.set_stream(id);
    rng
}

/// With even odds, a value from `range` drawn on `dimension`'s stream;
/// otherwise `default` (what shrinking moves toward).
pub(crate) fn maybe<T>(seed: u64, dimension: &str, default: T, range: RangeInclusive<T>) -> T
where
    T: rand::distributions::uniform::SampleUniform + PartialOrd,
{
    let mut rng = stream(seed, dimension);
    if rng.gen_bool(0.5) {
        rng.gen_range(range)
    } else {
        default
    }
}
