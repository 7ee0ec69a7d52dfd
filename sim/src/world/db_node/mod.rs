//! The database node's state: one simulated PostgreSQL (`db::Database`),
//! each lease statement held until the lease row is free, each delete
//! timed, the server-side bounds and cancel requests enforced, and the
//! transactions of a replica whose connection is gone rolled back; every
//! effect recorded.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::oneshot;

mod lease;
mod txn;

use super::recorder::Recorder;
use super::wire::Caller;
use crate::db::{Database, LeaseAnswer, Records, StatementId, TxnId};
use crate::model::{Actor, EventKind};

/// What a transaction's statements need to be recorded.
#[derive(Debug, Clone, Copy)]
struct TxnInfo {
    caller: Caller,
    token: u64,
    /// When its fence took the lease row's share lock.
    fenced_at_ms: Option<i64>,
    older_than_ms: i64,
    /// A statement of it is executing now.
    running: bool,
    /// Roll back as soon as the running statement ends: the client asked
    /// (a session runs its messages in order), or its connection is gone.
    roll_back_when_idle: bool,
    /// Statements begun in it so far: the idle bound ends only a session
    /// that sent nothing since it went idle.
    activity: u64,
    /// A statement of it failed: PostgreSQL then refuses everything but
    /// `ROLLBACK` (a `COMMIT` rolls back).
    aborted: bool,
}

/// PostgreSQL's server-side bounds, as the adapters set them on every
/// connection (`worker/src/pg/options.rs`); 0 turns one off.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub statement_ms: u64,
    pub lock_ms: u64,
    pub idle_in_transaction_ms: u64,
}

impl Bounds {
    /// How long a lease statement may wait for the row: the shorter of the
    /// lock and statement bounds that are on.
    fn lock_wait_ms(&self) -> Option<u64> {
        [self.lock_ms, self.statement_ms]
            .into_iter()
            .filter(|&ms| ms > 0)
            .min()
    }
}

struct State {
    db: Database,
    /// Lease statements waiting for the row: who asked, and where to answer
    /// (`Err`: failed by a bound or a cancel, nothing applied).
    waiting: BTreeMap<StatementId, (Caller, oneshot::Sender<Result<LeaseAnswer, String>>)>,
    txns: BTreeMap<TxnId, TxnInfo>,
    /// Running deletes: a cancel request stops one early.
    cancels: BTreeMap<TxnId, oneshot::Sender<()>>,
    next_statement: StatementId,
    work: ChaCha8Rng,
}

/// The database, shared by its node's handlers and the fault injector.
pub(crate) struct DbNode {
    state: Mutex<State>,
    recorder: Arc<Recorder>,
    batch_ms: RangeInclusive<u64>,
    bounds: Bounds,
    /// Rows written during the run.
    pub inserted: AtomicU64,
}

impl DbNode {
    /// A database with `records`, granting leases of `lease_ttl_ms`, under
    /// `bounds`; each delete statement works a time drawn from `batch_ms`
    /// with `work_seed`.
    pub fn new(
        lease_ttl_ms: u64,
        records: Records,
        recorder: Arc<Recorder>,
        batch_ms: RangeInclusive<u64>,
        bounds: Bounds,
        work_seed: u64,
    ) -> Self {
        let state = State {
            db: Database::new(lease_ttl_ms, records),
            waiting: BTreeMap::new(),
            txns: BTreeMap::new(),
            cancels: BTreeMap::new(),
            next_statement: 0,
            work: ChaCha8Rng::seed_from_u64(work_seed),
        };
        Self {
            state: Mutex::new(state),
            recorder,
            batch_ms,
            bounds,
            inserted: AtomicU64::new(0),
        }
    }

    /// Reads the database.
    pub fn read<T>(&self, read: impl FnOnce(&Database) -> T) -> T {
        read(&self.state.lock().expect("db state").db)
    }

    fn record(&self, caller: Caller, actor: Actor, kind: EventKind) {
        self.recorder.record(actor, caller.term, kind);
    }

    /// Autocommitted inserts of `count` rows written now.
    pub fn insert_arrivals(&self, count: u32) {
        let now_ms = self.recorder.now_ms();
        let mut state = self.state.lock().expect("db state");
        for _ in 0..count {
            state.db.insert(now_ms);
        }
        self.inserted.fetch_add(u64::from(count), Ordering::Relaxed);
    }
}
