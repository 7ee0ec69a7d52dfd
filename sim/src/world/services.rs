//! The database node: one simulated PostgreSQL (`db::Database`) answering
//! the adapters' statements over madsim's network, holding each lease
//! statement until the lease row is free, timing each delete, and rolling
//! back the transactions of a replica whose connection is gone.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::net::Endpoint;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retention_worker::Lease;
use tokio::sync::oneshot;

use super::recorder::Recorder;
use super::wire::{
    AcquireReq, BeginReq, Caller, CommitReq, DB_ADDR, DeleteReq, FenceReq, ReleaseReq, RenewReq,
    RollbackReq, addr, from_rec, to_rec,
};
use crate::db::{Applied, Database, LeaseAnswer, LeaseStatement, Records, StatementId, TxnId};
use crate::model::{Actor, EventKind, LeaseRec, OpKind};

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

    /// Runs a lease statement; answers once it has taken the row.
    async fn lease(&self, caller: Caller, statement: LeaseStatement) -> LeaseAnswer {
        let now_ms = self.recorder.now_ms();
        let answer = {
            let mut state = self.state.lock().expect("db state");
            state.next_statement += 1;
            let id = state.next_statement;
            let op = match &statement {
                LeaseStatement::Acquire { .. } => OpKind::Acquire,
                LeaseStatement::Renew { .. } | LeaseStatement::Revoke { .. } => OpKind::Renew,
                LeaseStatement::Release { .. } => OpKind::Release,
            };
            match state.db.update_lease(id, statement, now_ms) {
                Some(applied) => Ok(applied),
                None => {
                    let (sender, answer) = oneshot::channel();
                    state.waiting.insert(id, (caller, sender));
                    let behind = state.db.fence_holders();
                    let behind = behind.iter().map(|txn| state.txns[txn].caller.call);
                    Err((answer, op, behind.collect()))
                }
            }
        };
        match answer {
            Ok(applied) => {
                self.record_lease(caller, &applied);
                applied.answer
            }
            Err((answer, op, behind)) => {
                let kind = EventKind::LockWait {
                    call: caller.call,
                    op,
                    behind,
                };
                self.record(caller, Actor::Lease, kind);
                answer.await.expect("the database answers every waiter")
            }
        }
    }

    /// Records and answers the statements a commit or rollback let through.
    fn deliver(&self, applied: Vec<Applied>) {
        for applied in applied {
            let waiter = self
                .state
                .lock()
                .expect("db state")
                .waiting
                .remove(&applied.id);
            let (caller, sender) = waiter.expect("an applied statement was waiting");
            self.record_lease(caller, &applied);
            // The caller may be gone (crashed, timed out): the statement
            // applied all the same, as PostgreSQL applies it.
            let _ = sender.send(applied.answer);
        }
    }

    fn record_lease(&self, caller: Caller, applied: &Applied) {
        let call = caller.call;
        let kind = match (&applied.statement, &applied.answer) {
            (_, LeaseAnswer::Granted(lease)) => EventKind::Granted {
                call,
                lease: to_rec(lease),
            },
            (LeaseStatement::Acquire { .. }, _) => EventKind::Refused {
                call,
                op: OpKind::Acquire,
            },
            (LeaseStatement::Release { lease }, LeaseAnswer::Cleared { cleared }) => {
                EventKind::Released {
                    call,
                    lease: to_rec(lease),
                    cleared: *cleared,
                }
            }
            (LeaseStatement::Revoke { lease }, LeaseAnswer::Cleared { cleared: true }) => {
                EventKind::Revoked {
                    call,
                    lease: to_rec(lease),
                }
            }
            _ => EventKind::Refused {
                call,
                op: OpKind::Renew,
            },
        };
        self.record(caller, Actor::Lease, kind);
    }

    fn begin(&self, caller: Caller) -> TxnId {
        let mut state = self.state.lock().expect("db state");
        let txn = state.db.begin();
        let info = TxnInfo {
            caller,
            token: 0,
            fenced_at_ms: None,
            older_than_ms: 0,
            running: false,
            roll_back_when_idle: false,
        };
        state.txns.insert(txn, info);
        txn
    }

    fn fence(&self, caller: Caller, txn: TxnId, token: u64) -> Result<(), String> {
        let now_ms = self.recorder.now_ms();
        let mut state = self.state.lock().expect("db state");
        if !state.db.is_open(txn) {
            return Err(gone(txn));
        }
        let fenced = state.db.fence(txn, token, now_ms);
        let info = state.txns.get_mut(&txn).expect("an open txn is known");
        info.token = token;
        if fenced.is_ok() {
            info.fenced_at_ms = Some(now_ms);
        }
        drop(state);
        fenced.map_err(|rejection| {
            let reason = rejection.to_string();
            let kind = EventKind::Fenced {
                call: caller.call,
                token,
                reason: reason.clone(),
            };
            self.record(caller, Actor::Db, kind);
            reason
        })
    }

    async fn delete(&self, txn: TxnId, older_than_ms: i64, limit: u32) -> Result<u64, String> {
        let (count, work_ms) = {
            let mut state = self.state.lock().expect("db state");
            let work_ms = state.work.gen_range(self.batch_ms.clone());
            if !state.db.is_open(txn) {
                return Err(gone(txn));
            }
            let rows = state.db.delete_oldest(txn, older_than_ms, limit);
            let info = state.txns.get_mut(&txn).expect("an open txn is known");
            (info.older_than_ms, info.running) = (older_than_ms, true);
            (rows.len() as u64, work_ms)
        };
        // The statement works with its rows locked, and its share lock on
        // the lease row still held.
        madsim::time::sleep(Duration::from_millis(work_ms)).await;
        let roll_back = {
            let mut state = self.state.lock().expect("db state");
            let info = state
                .txns
                .get_mut(&txn)
                .expect("only this statement ends it");
            info.running = false;
            info.roll_back_when_idle
        };
        if roll_back {
            self.rollback(txn);
        }
        Ok(count)
    }

    fn commit(&self, txn: TxnId) -> Result<u64, String> {
        let now_ms = self.recorder.now_ms();
        let mut state = self.state.lock().expect("db state");
        if !state.db.is_open(txn) {
            return Err(gone(txn));
        }
        let (rows, applied) = state.db.commit(txn, now_ms);
        let info = state.txns.remove(&txn).expect("an open txn is known");
        drop(state);
        let count = rows.len() as u64;
        if let Some(fenced_at_ms) = info.fenced_at_ms {
            let kind = EventKind::Deleted {
                call: info.caller.call,
                token: info.token,
                fenced_at_ms,
                older_than_ms: info.older_than_ms,
                rows: if self.recorder.enabled() {
                    rows
                } else {
                    Vec::new()
                },
            };
            self.record(info.caller, Actor::Db, kind);
        }
        self.deliver(applied);
        Ok(count)
    }

    /// `ROLLBACK` as the session gets to it: now if idle, else once its
    /// running statement ends.
    fn request_rollback(&self, txn: TxnId) {
        let running = {
            let mut state = self.state.lock().expect("db state");
            match state.txns.get_mut(&txn) {
                Some(info) if info.running => {
                    info.roll_back_when_idle = true;
                    true
                }
                _ => false,
            }
        };
        if !running {
            self.rollback(txn);
        }
    }

    fn rollback(&self, txn: TxnId) {
        let now_ms = self.recorder.now_ms();
        let mut state = self.state.lock().expect("db state");
        let Some(info) = state.txns.remove(&txn) else {
            return;
        };
        let locked = state.db.locked_by(txn);
        let applied = state.db.rollback(txn, now_ms);
        drop(state);
        if info.fenced_at_ms.is_some() {
            let kind = EventKind::RolledBack {
                call: info.caller.call,
                rows: locked,
            };
            self.record(info.caller, Actor::Db, kind);
        }
        self.deliver(applied);
    }

    /// Replica `replica`'s connections are gone (its process died): the
    /// server rolls back each of its transactions as soon as it is idle.
    pub fn disconnect(&self, replica: u32) {
        let idle: Vec<TxnId> = {
            let mut state = self.state.lock().expect("db state");
            let mut idle = Vec::new();
            for (txn, info) in state.txns.iter_mut() {
                if info.caller.replica == replica {
                    info.roll_back_when_idle = true;
                    if !info.running {
                        idle.push(*txn);
                    }
                }
            }
            idle
        };
        for txn in idle {
            self.rollback(txn);
        }
    }

    /// Another client locks the `rows` oldest records for `for_ms`, then
    /// ends its transaction.
    pub async fn hold_rows(&self, rows: u32, for_ms: u64) {
        let (txn, locked) = {
            let mut state = self.state.lock().expect("db state");
            let txn = state.db.begin();
            let locked = state.db.lock_oldest(txn, rows).len() as u64;
            (txn, locked)
        };
        let nobody = Caller {
            call: 0,
            replica: 0,
            term: 0,
        };
        let held = EventKind::RowsHeld {
            rows: locked,
            for_ms,
        };
        self.record(nobody, Actor::Db, held);
        madsim::time::sleep(Duration::from_millis(for_ms)).await;
        let now_ms = self.recorder.now_ms();
        let applied = self
            .state
            .lock()
            .expect("db state")
            .db
            .rollback(txn, now_ms);
        self.record(nobody, Actor::Db, EventKind::RowsFreed { rows: locked });
        self.deliver(applied);
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

fn gone(txn: TxnId) -> String {
    format!("transaction {txn} is gone (rolled back by the server)")
}

fn lease_of(answer: LeaseAnswer) -> Option<LeaseRec> {
    match answer {
        LeaseAnswer::Granted(lease) => Some(to_rec(&lease)),
        _ => None,
    }
}

/// The database node's main task: serves the statements and keeps rows
/// arriving, `arrivals_per_sec` every second.
pub(crate) async fn database(node: Arc<DbNode>, arrivals_per_sec: u32) {
    let endpoint = Endpoint::bind(addr(DB_ADDR))
        .await
        .expect("bind the database");
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: AcquireReq| {
        let n = n.clone();
        async move {
            let owner = req.owner.clone();
            lease_of(n.lease(req.caller, LeaseStatement::Acquire { owner }).await)
        }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: RenewReq| {
        let n = n.clone();
        async move {
            let lease: Lease = from_rec(&req.lease);
            let statement = if req.revoke {
                LeaseStatement::Revoke { lease }
            } else {
                LeaseStatement::Renew { lease }
            };
            lease_of(n.lease(req.caller, statement).await)
        }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: ReleaseReq| {
        let n = n.clone();
        async move {
            let lease = from_rec(&req.lease);
            n.lease(req.caller, LeaseStatement::Release { lease }).await;
        }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: BeginReq| {
        let txn = n.begin(req.caller);
        async move { txn }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: FenceReq| {
        let fenced = n.fence(req.caller, req.txn, req.token);
        async move { fenced }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: DeleteReq| {
        let n = n.clone();
        async move { n.delete(req.txn, req.older_than_ms, req.limit).await }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: CommitReq| {
        let committed = n.commit(req.txn);
        async move { committed }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: RollbackReq| {
        n.request_rollback(req.txn);
        async move {}
    });
    loop {
        madsim::time::sleep(Duration::from_secs(1)).await;
        node.insert_arrivals(arrivals_per_sec);
    }
}
