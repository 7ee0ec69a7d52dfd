//! The database node: one simulated PostgreSQL (`db::Database`) on
//! madsim's clock. Each wire message becomes a statement, answered when
//! the model says it ends; the node keeps the model's clock running
//! (bounds, delete work, commits) and records every effect.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::future::select;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::Notify;

mod calls;
mod effects;
mod state;
mod turns;

use self::state::{State, Turns};
use super::recorder::Recorder;
use super::wire::Caller;
use crate::db::{Bounds, CallRef, Database, DbView, Records, Timed};
use crate::model::{Event, EventKind, deleted_young};

/// The database's timing settings for a run.
#[derive(Debug, Clone)]
pub(crate) struct DbTiming {
    /// Each delete statement works a time drawn from this range.
    pub batch_ms: RangeInclusive<u64>,
    /// Each commit that wrote something is durable after a time drawn from
    /// this range (flush, and the synchronous standby's answer).
    pub commit_ms: RangeInclusive<u64>,
    /// The server-side bounds.
    pub bounds: Bounds,
    /// The adapters' `PgOptions::retention_ms`, `$3` of every delete, as
    /// the runner sets it: the worker's retention.
    pub retention_ms: u64,
}

/// The database, shared by its node's handlers and the fault injector.
pub(crate) struct DbNode {
    state: Mutex<State>,
    recorder: Arc<Recorder>,
    timing: DbTiming,
    /// The clock task's wake-up: the next deadline may have moved.
    wake: Notify,
    /// Rows written during the run.
    pub inserted: AtomicU64,
    /// Connections opened so far.
    next_session: AtomicU64,
    /// From which row id on rows were stamped with which offset of the
    /// database's clock from true time (a step starts a new era).
    eras: Mutex<Vec<(u64, i64)>>,
    /// Where each connection's stream of messages has got to.
    turns: Mutex<Turns>,
    turn_moved: Notify,
    /// What seeded the work and commit streams, and whether a branch has
    /// stirred them.
    work_seed: u64,
    stirred: std::sync::atomic::AtomicBool,
}

impl DbNode {
    /// A database with `records`, granting leases of `lease_ttl_ms`, timed
    /// by `timing`; its draws come from `work_seed`.
    pub fn new(
        lease_ttl_ms: u64,
        records: Records,
        recorder: Arc<Recorder>,
        timing: DbTiming,
        work_seed: u64,
    ) -> Self {
        let state = State {
            db: Database::new(lease_ttl_ms, records, timing.bounds),
            waiters: BTreeMap::new(),
            txns: BTreeMap::new(),
            next_statement: 0,
            work: ChaCha8Rng::seed_from_u64(work_seed),
            commits: ChaCha8Rng::seed_from_u64(work_seed ^ 0xC0_4417),
        };
        Self {
            state: Mutex::new(state),
            recorder,
            timing,
            wake: Notify::new(),
            inserted: AtomicU64::new(0),
            next_session: AtomicU64::new(0),
            eras: Mutex::new(Vec::new()),
            turns: Mutex::new(Turns::default()),
            turn_moved: Notify::new(),
            work_seed,
            stirred: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Reads the database.
    pub fn read<T>(&self, read: impl FnOnce(&Database) -> T) -> T {
        read(&self.lock_state().db)
    }

    /// The node's state, read first for the recorder's capture when one is
    /// due: every look at the database goes through here, so the first
    /// after the captured event sees it as that event left it.
    fn lock_state(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock().expect("db state");
        if let Some(at_ms) = self.recorder.capture_due() {
            self.recorder.store_capture(self.view_of(&state, at_ms));
        }
        if let Some(salt) = self.recorder.branch_salt()
            && !self.stirred.swap(true, Ordering::Relaxed)
        {
            state.work = ChaCha8Rng::seed_from_u64(self.work_seed ^ salt.rotate_left(17));
            state.commits = ChaCha8Rng::seed_from_u64(self.work_seed ^ salt.rotate_left(41));
        }
        state
    }

    /// A branch's salt, once the run has reached it (for the streams the
    /// node's clients draw from).
    pub fn branch_salt(&self) -> Option<u64> {
        self.recorder.branch_salt()
    }

    /// The database at `at_ms`, each transaction and statement with the
    /// call it serves. The model acts only when looked at, so a copy is
    /// brought to `at_ms` first: what fell due since its last look (a
    /// delete's work done, a bound passed) shows as done.
    fn view_of(&self, state: &State, at_ms: i64) -> DbView {
        let retention_ms = i64::try_from(self.timing.retention_ms).unwrap_or(i64::MAX);
        let mut db = state.db.clone();
        db.advance_to(at_ms);
        let mut view = db.view(at_ms, retention_ms);
        let call_ref = |caller: &Caller| CallRef {
            replica: caller.replica,
            term: caller.term,
            call: caller.call,
        };
        for txn in &mut view.transactions {
            txn.caller = state.txns.get(&txn.txn).map(|info| call_ref(&info.caller));
        }
        for statement in &mut view.statements {
            statement.caller =
                (state.waiters.get(&statement.statement)).map(|waiter| call_ref(&waiter.caller));
        }
        view
    }

    /// Autocommitted inserts of `count` rows written now.
    pub fn insert_arrivals(&self, count: u32) {
        let now_ms = self.recorder.now_ms();
        let mut state = self.lock_state();
        // Stamped by the database's clock (the schema has no default: the
        // application writes them; we assume it writes the database's now).
        let created_at_ms = state.db.clock_ms(now_ms);
        for _ in 0..count {
            state.db.insert(created_at_ms);
        }
        self.inserted.fetch_add(u64::from(count), Ordering::Relaxed);
    }

    /// Rows the history says were deleted younger than `retention_ms` by
    /// the run's true time: each row's true age at its commit, from its
    /// stamp less the database clock's offset when it was written.
    pub fn rows_early_by_true_time(&self, events: &[Event], retention_ms: i64) -> u64 {
        let eras = self.eras.lock().expect("eras");
        let offset_of = |id: u64| {
            eras.iter()
                .rev()
                .find(|(first_id, _)| *first_id <= id)
                .map_or(0, |(_, offset)| *offset)
        };
        let mut early = 0;
        for event in events {
            if let EventKind::Deleted { rows, .. } = &event.kind {
                for row in rows {
                    let written_ms = row.created_at_ms - offset_of(row.id);
                    early += u64::from(deleted_young(written_ms, event.at_ms, retention_ms));
                }
            }
        }
        early
    }

    fn draw_commit_ms(&self, state: &mut State) -> u64 {
        let range = self.timing.commit_ms.clone();
        if range.start() == range.end() {
            *range.start()
        } else {
            state.commits.gen_range(range)
        }
    }

    /// Keeps the model's clock running: whenever something is due, the
    /// database acts at that instant. Runs on the database's node.
    pub(crate) async fn keep_time(self: Arc<Self>) {
        loop {
            let next = self.read(Database::next_deadline);
            let woken = self.wake.notified();
            match next {
                Some(at_ms) => {
                    let due = madsim::time::sleep_until(self.recorder.instant_at(at_ms));
                    select(pin!(due), pin!(woken)).await;
                }
                None => woken.await,
            }
            let now_ms = self.recorder.now_ms();
            // No wake-up for itself: it reads the next deadline anyway.
            self.step_db(|state| state.db.advance_to(now_ms));
        }
    }

    /// Runs `step` on the database and applies its effects, then wakes the
    /// clock task: the next deadline may have moved.
    fn with_db(&self, step: impl FnOnce(&mut State) -> Vec<Timed>) {
        self.step_db(step);
        self.wake.notify_one();
    }

    /// Runs `step` on the database at the current instant and applies its
    /// effects: recorded in order, then the answers sent.
    fn step_db(&self, step: impl FnOnce(&mut State) -> Vec<Timed>) {
        let (records, replies) = {
            let mut state = self.lock_state();
            let effects = step(&mut state);
            effects::apply(&mut state, effects, self.recorder.enabled())
        };
        for (caller, actor, kind) in records {
            self.recorder.record(actor, caller.term, kind);
        }
        for (reply, answer) in replies {
            // The caller may be gone (crashed, timed out): the statement
            // ended all the same, as PostgreSQL ends it.
            let _ = reply.send(answer);
        }
    }
}
