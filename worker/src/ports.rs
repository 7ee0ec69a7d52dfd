//! The injected dependencies: clock, lease service, records repository, jitter.
//!
//! Every method returns a `Send` future so that adapters for real runtimes
//! (tokio, PostgreSQL) and simulated ones (madsim) implement the same traits.

use std::future::Future;
use std::sync::Arc;

use crate::{CallError, Lease};

/// The worker's view of time.
///
/// It may be skewed against the lease service's clock; see
/// [`crate::WorkerConfig::expiry_margin_ms`].
pub trait Clock: Send + Sync {
    /// The current instant in milliseconds since a fixed origin.
    fn now_ms(&self) -> i64;

    /// Completes once `duration_ms` milliseconds of this clock have passed.
    ///
    /// It must return `Pending` until then (even a fake clock): the worker
    /// races timers against other events and a timer that is always ready
    /// would starve them.
    fn sleep_ms(&self, duration_ms: u64) -> impl Future<Output = ()> + Send;
}

/// The lease service that grants and rotates leadership.
pub trait LeaseService: Send + Sync {
    /// Takes leadership for `owner_id`: `Some(lease)` if nobody holds an
    /// unexpired lease, `None` otherwise.
    fn acquire(
        &self,
        owner_id: &str,
    ) -> impl Future<Output = Result<Option<Lease>, CallError>> + Send;

    /// Extends `lease`: `Some(replacement)` with a new fencing token if
    /// `lease` is still exactly the current unexpired one, `None` otherwise.
    fn renew(&self, lease: &Lease)
    -> impl Future<Output = Result<Option<Lease>, CallError>> + Send;

    /// Gives `lease` up if it is exactly the current one (compare-and-set,
    /// REL-2); a no-op otherwise.
    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), CallError>> + Send;
}

/// The table the worker cleans up.
pub trait RecordsRepository: Send + Sync {
    /// Deletes up to `limit` rows older than `cutoff_ms`, oldest first, and
    /// returns how many it deleted. It must refuse (FEN-2) unless the
    /// fencing `token` belongs to the current holder's unexpired lease,
    /// checked atomically with the delete.
    fn delete_batch(
        &self,
        cutoff_ms: i64,
        limit: u32,
        token: u64,
    ) -> impl Future<Output = Result<u64, CallError>> + Send;
}

/// Where the service loop draws its jitter from, so that a simulation can
/// seed it and a deployment can use real randomness.
pub trait Jitter: Send {
    /// A value in `0..=max_ms`.
    fn jitter_ms(&mut self, max_ms: u64) -> u64;
}

/// A deterministic [`Jitter`] source (SplitMix64) for simulations and tests.
#[derive(Debug, Clone)]
pub struct SeededJitter {
    state: u64,
}

impl SeededJitter {
    /// A source whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }
}

impl Jitter for SeededJitter {
    fn jitter_ms(&mut self, max_ms: u64) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        match max_ms.checked_add(1) {
            Some(span) => z % span,
            None => z,
        }
    }
}

impl<T: Clock> Clock for Arc<T> {
    fn now_ms(&self) -> i64 {
        (**self).now_ms()
    }

    fn sleep_ms(&self, duration_ms: u64) -> impl Future<Output = ()> + Send {
        (**self).sleep_ms(duration_ms)
    }
}

impl<T: LeaseService> LeaseService for Arc<T> {
    fn acquire(
        &self,
        owner_id: &str,
    ) -> impl Future<Output = Result<Option<Lease>, CallError>> + Send {
        (**self).acquire(owner_id)
    }

    fn renew(
        &self,
        lease: &Lease,
    ) -> impl Future<Output = Result<Option<Lease>, CallError>> + Send {
        (**self).renew(lease)
    }

    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), CallError>> + Send {
        (**self).release(lease)
    }
}

impl<T: RecordsRepository> RecordsRepository for Arc<T> {
    fn delete_batch(
        &self,
        cutoff_ms: i64,
        limit: u32,
        token: u64,
    ) -> impl Future<Output = Result<u64, CallError>> + Send {
        (**self).delete_batch(cutoff_ms, limit, token)
    }
}
