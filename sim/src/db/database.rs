//! The database: the lease row (its value and its lock), the records, and
//! the open transactions of the fenced delete.

use std::collections::BTreeMap;

use retention_worker::memory::LeaseTable;
use retention_worker::{FenceRejection, Lease};

use super::records::Records;
use super::row_lock::RowLock;
use crate::model::RowRec;

/// A statement on the lease row, as the caller numbered it.
pub type StatementId = u64;
/// An open transaction.
pub type TxnId = u64;

/// The autocommitted `UPDATE`s of the lease row (`worker/src/pg/lease.rs`).
/// Each reads the clock once, in a CTE at statement start, and keeps that
/// reading if it has to wait for the row: expiry is judged at the start,
/// a new expiry is the start plus the TTL, and the `WHERE` is re-checked
/// against the row as the waited-for transactions left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseStatement {
    /// `ACQUIRE`: grants iff the row is released or expired at the start.
    Acquire {
        /// The caller's owner id.
        owner: String,
    },
    /// `RENEW`: the next token iff `lease` is exactly the row, unexpired at
    /// the start.
    Renew {
        /// The lease sent.
        lease: Lease,
    },
    /// `RELEASE`: clears the owner iff `lease` is exactly the row
    /// (compare-and-set, no clock).
    Release {
        /// The lease sent.
        lease: Lease,
    },
    /// The injected revoke (an operator or a failover taking the lease):
    /// like `RELEASE`, but only while the lease is unexpired at the start.
    Revoke {
        /// The lease taken.
        lease: Lease,
    },
}

/// What a lease statement did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseAnswer {
    /// An acquire or renewal granted this lease.
    Granted(Lease),
    /// An acquire or renewal matched no row: no lease.
    Refused,
    /// A release or revoke; `cleared` if it matched and cleared the owner.
    Cleared {
        /// Whether the owner was cleared.
        cleared: bool,
    },
}

/// A lease statement that has been applied (and committed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The caller's number for it.
    pub id: StatementId,
    /// The statement.
    pub statement: LeaseStatement,
    /// The clock its CTE read, at statement start.
    pub started_ms: i64,
    /// When it took the row and committed.
    pub applied_ms: i64,
    /// What it did.
    pub answer: LeaseAnswer,
}

#[derive(Debug, Clone)]
struct Waiting {
    id: StatementId,
    statement: LeaseStatement,
    started_ms: i64,
}

/// An open transaction.
#[derive(Debug, Clone, Default)]
struct Txn {
    /// Rows its `DELETE` locked, to go at `COMMIT`.
    deleted: Vec<RowRec>,
    /// Rows it only locked (`SELECT ... FOR UPDATE`), to be freed at its end.
    held: Vec<RowRec>,
}

/// One PostgreSQL database holding the lease row and the records.
#[derive(Debug, Clone)]
pub struct Database {
    lease: LeaseTable,
    lock: RowLock<Waiting>,
    records: Records,
    txns: BTreeMap<TxnId, Txn>,
    next_txn: TxnId,
}

impl Database {
    /// A database whose lease row grants leases of `lease_ttl_ms`, with
    /// `records` in its table.
    pub fn new(lease_ttl_ms: u64, records: Records) -> Self {
        Self {
            lease: LeaseTable::new(lease_ttl_ms),
            lock: RowLock::default(),
            records,
            txns: BTreeMap::new(),
            next_txn: 0,
        }
    }

    /// The lease row's committed value.
    pub fn lease(&self) -> &LeaseTable {
        &self.lease
    }

    /// The records table.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// `INSERT INTO retention_records`, autocommitted; takes no lock a
    /// delete or the fence waits for.
    pub fn insert(&mut self, created_at_ms: i64) -> RowRec {
        self.records.insert(created_at_ms)
    }

    /// Runs `statement`, started at `started_ms`: applied at once if the
    /// row is free, otherwise queued behind the fence holders and earlier
    /// waiters (`None`) until a commit or rollback frees it.
    pub fn update_lease(
        &mut self,
        id: StatementId,
        statement: LeaseStatement,
        started_ms: i64,
    ) -> Option<Applied> {
        let waiting = Waiting {
            id,
            statement,
            started_ms,
        };
        if self.lock.free_for_update() || !self.locks_row(&waiting.statement, started_ms) {
            Some(self.apply(waiting, started_ms))
        } else {
            self.lock.wait(waiting);
            None
        }
    }

    /// Whether the statement must lock the row, and so wait for its holders.
    /// `INSERT ... ON CONFLICT DO UPDATE` locks the conflicting row before
    /// it evaluates its `WHERE`, so an acquire always waits. A plain
    /// `UPDATE` first reads the row from its statement-start snapshot and
    /// locks it only if its `WHERE` matches there: a renewal or release
    /// naming a lease that is not the row's finds nothing and returns at
    /// once, without waiting.
    fn locks_row(&self, statement: &LeaseStatement, started_ms: i64) -> bool {
        match statement {
            LeaseStatement::Acquire { .. } => true,
            LeaseStatement::Renew { lease } | LeaseStatement::Revoke { lease } => {
                self.lease.holder(started_ms) == Some(lease)
            }
            LeaseStatement::Release { lease } => self.lease.stored() == Some(lease),
        }
    }

    /// Statement `id` stops waiting for the row, unapplied (its lock wait
    /// or statement bound ran out, or its client cancelled it); `false` if
    /// it was not waiting (already applied).
    pub fn give_up_waiting(&mut self, id: StatementId) -> bool {
        self.lock.give_up(|waiting| waiting.id == id).is_some()
    }

    /// Lease statements waiting for the row, oldest first.
    pub fn waiting(&self) -> Vec<StatementId> {
        self.lock.waiters().map(|waiting| waiting.id).collect()
    }

    /// Open transactions holding the fence's share lock, lowest first.
    pub fn fence_holders(&self) -> Vec<TxnId> {
        self.lock.sharers().collect()
    }

    /// `BEGIN` (READ COMMITTED).
    pub fn begin(&mut self) -> TxnId {
        self.next_txn += 1;
        self.txns.insert(self.next_txn, Txn::default());
        self.next_txn
    }

    /// Rows `txn`'s delete has locked (0 for a transaction not open).
    pub fn locked_by(&self, txn: TxnId) -> u64 {
        self.txns
            .get(&txn)
            .map_or(0, |open| open.deleted.len() as u64)
    }

    /// Whether `txn` is open.
    pub fn is_open(&self, txn: TxnId) -> bool {
        self.txns.contains_key(&txn)
    }

    /// `FENCE` (`worker/src/pg/records.rs`): `SELECT ... FOR SHARE` of the
    /// lease row iff `token` is its current token, unexpired at `now_ms`
    /// (the CTE's clock, read at statement start; the share lock never
    /// waits, since no update holds the row past its own instant). A fence
    /// that fails takes no lock, and says why from the row as it is.
    pub fn fence(&mut self, txn: TxnId, token: u64, now_ms: i64) -> Result<(), FenceRejection> {
        assert!(self.is_open(txn), "fence outside a transaction");
        self.lease.check_fence(token, now_ms)?;
        self.lock.share(txn);
        Ok(())
    }

    /// `DELETE_OLDEST`: the oldest rows older than the cutoff that no other
    /// transaction holds (`FOR UPDATE SKIP LOCKED`), at most `limit`, locked
    /// by `txn` until it ends. Their removal shows at `COMMIT`.
    pub fn delete_oldest(&mut self, txn: TxnId, older_than_ms: i64, limit: u32) -> Vec<RowRec> {
        let rows = self.records.lock_oldest(txn, older_than_ms, limit);
        let open = self
            .txns
            .get_mut(&txn)
            .expect("delete outside a transaction");
        open.deleted.extend_from_slice(&rows);
        rows
    }

    /// `SELECT ... FOR UPDATE SKIP LOCKED` of the `limit` oldest rows, as
    /// another client of the database might run: the rows stay, locked by
    /// `txn` until it ends.
    pub fn lock_oldest(&mut self, txn: TxnId, limit: u32) -> Vec<RowRec> {
        let rows = self.records.lock_oldest(txn, i64::MAX, limit);
        let open = self
            .txns
            .get_mut(&txn)
            .expect("a lock outside a transaction");
        open.held.extend_from_slice(&rows);
        rows
    }

    /// `COMMIT` at `now_ms`: `txn`'s deleted rows go, its locks end, and the
    /// lease statements that were waiting for the row apply now. Returns
    /// the rows deleted and the statements applied, in order.
    pub fn commit(&mut self, txn: TxnId, now_ms: i64) -> (Vec<RowRec>, Vec<Applied>) {
        let open = self
            .txns
            .remove(&txn)
            .expect("commit of an open transaction");
        self.records.remove_locked(txn, &open.deleted);
        self.records.unlock(txn, &open.held);
        (open.deleted, self.end_locks(txn, now_ms))
    }

    /// `ROLLBACK` at `now_ms` (asked for, or the server's when the
    /// connection is gone): `txn`'s rows stay and its locks end; waiting
    /// statements apply. A transaction already ended is left alone.
    pub fn rollback(&mut self, txn: TxnId, now_ms: i64) -> Vec<Applied> {
        let Some(open) = self.txns.remove(&txn) else {
            return Vec::new();
        };
        self.records.unlock(txn, &open.deleted);
        self.records.unlock(txn, &open.held);
        self.end_locks(txn, now_ms)
    }

    fn end_locks(&mut self, txn: TxnId, now_ms: i64) -> Vec<Applied> {
        self.lock.unshare(txn);
        let mut applied = Vec::new();
        while let Some(waiting) = self.lock.next_ready() {
            applied.push(self.apply(waiting, now_ms));
        }
        applied
    }

    /// Applies a statement that holds the row, judged at its start.
    fn apply(&mut self, waiting: Waiting, applied_ms: i64) -> Applied {
        let Waiting {
            id,
            statement,
            started_ms,
        } = waiting;
        let at = started_ms;
        let answer = match &statement {
            LeaseStatement::Acquire { owner } => granted(self.lease.acquire(owner, at)),
            LeaseStatement::Renew { lease } => granted(self.lease.renew(lease, at)),
            LeaseStatement::Release { lease } => LeaseAnswer::Cleared {
                cleared: self.lease.release(lease),
            },
            LeaseStatement::Revoke { lease } => {
                let current = self.lease.holder(at) == Some(lease);
                LeaseAnswer::Cleared {
                    cleared: current && self.lease.release(lease),
                }
            }
        };
        Applied {
            id,
            statement,
            started_ms,
            applied_ms,
            answer,
        }
    }
}

fn granted(lease: Option<Lease>) -> LeaseAnswer {
    lease.map_or(LeaseAnswer::Refused, LeaseAnswer::Granted)
}
