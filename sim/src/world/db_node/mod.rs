//! The database node's state: one simulated PostgreSQL (`db::Database`),
//! each lease statement held until the lease row is free, each delete
//! timed, and the transactions of a replica whose connection is gone rolled
//! back; every effect recorded.

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
}

struct State {
    db: Database,
    /// Lease statements waiting for the row: who asked, and where to answer.
    waiting: BTreeMap<StatementId, (Caller, oneshot::Sender<LeaseAnswer>)>,
    txns: BTreeMap<TxnId, TxnInfo>,
    next_statement: StatementId,
    work: ChaCha8Rng,
}

/// The database, shared by its node's handlers and the fault injector.
pub(crate) struct DbNode {
    state: Mutex<State>,
    recorder: Arc<Recorder>,
    batch_ms: RangeInclusive<u64>,
    /// Rows written during the run.
    pub inserted: AtomicU64,
}

impl DbNode {
    /// A database with `records`, granting leases of `lease_ttl_ms`; each
    /// delete statement works a time drawn from `batch_ms` with `work_seed`.
    pub fn new(
        lease_ttl_ms: u64,
        records: Records,
        recorder: Arc<Recorder>,
        batch_ms: RangeInclusive<u64>,
        work_seed: u64,
    ) -> Self {
        let state = State {
            db: Database::new(lease_ttl_ms, records),
            waiting: BTreeMap::new(),
            txns: BTreeMap::new(),
            next_statement: 0,
            work: ChaCha8Rng::seed_from_u64(work_seed),
        };
        Self {
            state: Mutex::new(state),
            recorder,
            batch_ms,
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
