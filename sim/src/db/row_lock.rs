//! The lease row's lock, by PostgreSQL's row-lock rules for the two modes
//! the adapters take on it: `FOR SHARE` (the fence, held to the end of the
//! delete's transaction) and `FOR NO KEY UPDATE` (every grant, renewal and
//! release is an `UPDATE` of non-key columns, autocommitted).
//!
//! - Share locks are compatible with each other; an update conflicts with
//!   every share holder and waits until none is left.
//! - Updates that wait queue in arrival order (PostgreSQL's tuple lock
//!   hands the row to the longest waiter first).
//! - A share request is granted at once when only updates are waiting:
//!   PostgreSQL sleeps only on a lock that conflicts with the row's current
//!   holders, so share lockers pass a queued update (observed on a real
//!   server by `sim/tests/real/concurrent.rs`).
//! - An autocommitted update holds the row only for its own instant, so a
//!   share request never finds one holding it.

use std::collections::{BTreeSet, VecDeque};

/// Who holds the lease row and who waits for it.
#[derive(Debug, Clone)]
pub struct RowLock<W> {
    share: BTreeSet<u64>,
    waiting: VecDeque<W>,
}

impl<W> Default for RowLock<W> {
    fn default() -> Self {
        Self {
            share: BTreeSet::new(),
            waiting: VecDeque::new(),
        }
    }
}

impl<W> RowLock<W> {
    /// `FOR SHARE` for transaction `txn`, held until [`RowLock::unshare`].
    pub fn share(&mut self, txn: u64) {
        self.share.insert(txn);
    }

    /// Transactions holding share locks, lowest id first.
    pub fn sharers(&self) -> impl Iterator<Item = u64> + '_ {
        self.share.iter().copied()
    }

    /// Ends `txn`'s share lock (commit or rollback).
    pub fn unshare(&mut self, txn: u64) {
        self.share.remove(&txn);
    }

    /// Whether an update arriving now may take the row at once: no share
    /// holder, and nobody queued ahead of it.
    pub fn free_for_update(&self) -> bool {
        self.share.is_empty() && self.waiting.is_empty()
    }

    /// Queues an update behind the row's holders and earlier waiters.
    pub fn wait(&mut self, waiter: W) {
        self.waiting.push_back(waiter);
    }

    /// Takes the first waiter `matches` picks out of the queue (its
    /// statement failed: a lock timeout, a cancel); the rest keep their
    /// order.
    pub fn give_up(&mut self, matches: impl Fn(&W) -> bool) -> Option<W> {
        let index = self.waiting.iter().position(matches)?;
        self.waiting.remove(index)
    }

    /// Updates waiting, oldest first.
    pub fn waiters(&self) -> impl Iterator<Item = &W> {
        self.waiting.iter()
    }

    /// The next waiter, if the row is free for it: every update holds the
    /// row only for its own instant, so once the last share lock is gone
    /// the whole queue goes through, in order.
    pub fn next_ready(&mut self) -> Option<W> {
        if self.share.is_empty() {
            self.waiting.pop_front()
        } else {
            None
        }
    }
}
