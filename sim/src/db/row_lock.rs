//! The lease row's lock, by PostgreSQL's row-lock rules for the modes the
//! adapters take on it: `FOR SHARE` (the fence, held to the end of the
//! delete's transaction) and `FOR NO KEY UPDATE` (every grant, renewal and
//! release, and an acquire whose `ON CONFLICT ... WHERE` is false, held
//! until that statement's commit is durable).
//!
//! - Share locks are compatible with each other; an update conflicts with
//!   every holder and with the update that holds the row.
//! - A statement that must wait first queues for the row's tuple lock, in
//!   arrival order (PostgreSQL's heavyweight lock queue); the one at the
//!   head then waits for each holder in turn: the committing update, then
//!   the share holders oldest first (the members of the row's multixact, in
//!   transaction-id order; the fence is a transaction's first write, so
//!   that is the order the fences came in).
//! - A share request passes waiting updates when only share holders hold
//!   the row (PostgreSQL sleeps only on a lock that conflicts with the
//!   row's current holders; observed by `sim/tests/real/concurrent.rs`),
//!   and queues like an update while an update holds it.

use std::collections::VecDeque;

use super::statement::{Holder, StatementId, TxnId};

/// Who holds the lease row and who waits for it.
#[derive(Debug, Clone, Default)]
pub struct RowLock {
    /// Transactions holding `FOR SHARE`, in the order they took it.
    share: Vec<TxnId>,
    /// The update holding the row until its commit is durable.
    exclusive: Option<StatementId>,
    /// Statements waiting, in arrival order; the first holds the tuple lock.
    queue: VecDeque<StatementId>,
}

impl RowLock {
    /// `FOR SHARE` for `txn`, held until [`RowLock::unshare`].
    pub fn share(&mut self, txn: TxnId) {
        assert!(self.exclusive.is_none(), "a share lock beside an update");
        if !self.share.contains(&txn) {
            self.share.push(txn);
        }
    }

    /// Ends `txn`'s share lock, if it has one.
    pub fn unshare(&mut self, txn: TxnId) {
        self.share.retain(|&holder| holder != txn);
    }

    /// Transactions holding share locks, in the order they took them.
    pub fn sharers(&self) -> &[TxnId] {
        &self.share
    }

    /// The update `id` holds the row until [`RowLock::release_exclusive`].
    pub fn hold_exclusive(&mut self, id: StatementId) {
        assert!(
            self.exclusive.is_none() && self.share.is_empty(),
            "an update took a row others hold"
        );
        self.exclusive = Some(id);
    }

    /// The update `id` is durable: the row is free of it.
    pub fn release_exclusive(&mut self, id: StatementId) {
        assert_eq!(
            self.exclusive,
            Some(id),
            "released by a statement not holding it"
        );
        self.exclusive = None;
    }

    /// Everyone holding the row: the committing update first, then the
    /// share holders.
    pub fn holders(&self) -> Vec<Holder> {
        let exclusive = self.exclusive.map(Holder::Statement);
        exclusive
            .into_iter()
            .chain(self.share.iter().map(|&txn| Holder::Txn(txn)))
            .collect()
    }

    /// Whether an update arriving now takes the row at once.
    pub fn free_for_update(&self) -> bool {
        self.exclusive.is_none() && self.share.is_empty() && self.queue.is_empty()
    }

    /// Whether a share request arriving now takes the row at once.
    pub fn free_for_share(&self) -> bool {
        self.exclusive.is_none()
    }

    /// What the statement at the head of the queue waits for now: an update
    /// for the committing update, else the oldest share holder; a share
    /// request only for the committing update. `None`: it takes the row.
    pub fn head_blocker(&self, update: bool) -> Option<Holder> {
        if let Some(id) = self.exclusive {
            return Some(Holder::Statement(id));
        }
        if update {
            self.share.first().map(|&txn| Holder::Txn(txn))
        } else {
            None
        }
    }

    /// Queues `id` behind everyone waiting.
    pub fn enqueue(&mut self, id: StatementId) {
        self.queue.push_back(id);
    }

    /// The statement at the head of the queue.
    pub fn head(&self) -> Option<StatementId> {
        self.queue.front().copied()
    }

    /// Takes `id` out of the queue (it got the row, or gave up); the rest
    /// keep their order. `false` if it was not waiting.
    pub fn dequeue(&mut self, id: StatementId) -> bool {
        let Some(index) = self.queue.iter().position(|&waiting| waiting == id) else {
            return false;
        };
        self.queue.remove(index);
        true
    }

    /// Statements waiting, oldest first.
    pub fn waiting(&self) -> impl Iterator<Item = StatementId> + '_ {
        self.queue.iter().copied()
    }
}
