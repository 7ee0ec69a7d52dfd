//! `retention_records`: rows ordered by `(created_at_ms, id)`, each maybe
//! row-locked `FOR UPDATE` by one open transaction.

use std::collections::BTreeMap;
use std::num::NonZeroU64;

use crate::model::RowRec;

/// The records table with its row locks.
#[derive(Debug, Clone, Default)]
pub struct Records {
    /// `(created_at_ms, id)` to the transaction holding the row's lock
    /// (non-zero, so an entry stays 24 bytes: the table is most of a run's
    /// memory traffic).
    rows: BTreeMap<(i64, u64), Option<NonZeroU64>>,
    next_id: u64,
}

impl Records {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// A table holding rows created at `created_at_ms`, inserted in that
    /// order (so ids follow it), as many `INSERT`s would leave it. Built in
    /// one pass from sorted keys: seeding thousands of rows one insert at a
    /// time was a sixth of a short run's time.
    pub fn with_rows(created_at_ms: impl IntoIterator<Item = i64>) -> Self {
        let created_at_ms: Vec<i64> = created_at_ms.into_iter().collect();
        let next_id = created_at_ms.len() as u64;
        let keys = sorted_keys(&created_at_ms);
        Self {
            rows: keys.into_iter().map(|key| (key, None)).collect(),
            next_id,
        }
    }

    /// `INSERT ... (created_at_ms)`, autocommitted: ids come from a
    /// sequence, so they grow in insertion order.
    pub fn insert(&mut self, created_at_ms: i64) -> RowRec {
        self.next_id += 1;
        self.rows.insert((created_at_ms, self.next_id), None);
        RowRec {
            id: self.next_id,
            created_at_ms,
        }
    }

    /// The id the next inserted row gets.
    pub fn next_id(&self) -> u64 {
        self.next_id + 1
    }

    /// Rows in the table, locked or not (a row deleted by an open
    /// transaction is still there until it commits).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Rows created strictly before `older_than_ms`.
    pub fn count_older_than(&self, older_than_ms: i64) -> usize {
        self.rows.range(..(older_than_ms, 0)).count()
    }

    /// The inner `SELECT id ... WHERE created_at_ms < $1 ORDER BY
    /// created_at_ms, id LIMIT $2 FOR UPDATE SKIP LOCKED`: the oldest rows
    /// older than the cutoff that no other transaction has locked, now locked
    /// by `txn`. Rows `txn` itself locked are its own and not chosen again.
    pub fn lock_oldest(&mut self, txn: u64, older_than_ms: i64, limit: u32) -> Vec<RowRec> {
        let mut chosen = Vec::new();
        for (&(created_at_ms, id), holder) in self.rows.range_mut(..(older_than_ms, 0)) {
            if chosen.len() as u64 >= u64::from(limit) {
                break;
            }
            if holder.is_some() {
                continue;
            }
            *holder = Some(holder_id(txn));
            chosen.push(RowRec { id, created_at_ms });
        }
        chosen
    }

    /// `COMMIT` of `txn`'s `DELETE`: its locked rows go.
    pub fn remove_locked(&mut self, txn: u64, rows: &[RowRec]) {
        if self.remove_if_oldest(txn, rows) {
            return;
        }
        for row in rows {
            let holder = self.rows.remove(&(row.created_at_ms, row.id));
            assert_eq!(
                holder,
                Some(Some(holder_id(txn))),
                "commit of a row the txn did not lock"
            );
        }
    }

    /// The common commit: `rows` are the table's oldest, in order, so the
    /// table splits after them instead of losing them one at a time.
    fn remove_if_oldest(&mut self, txn: u64, rows: &[RowRec]) -> bool {
        let holder = Some(holder_id(txn));
        let mut table = self.rows.iter();
        let oldest = rows
            .iter()
            .all(|row| table.next() == Some((&(row.created_at_ms, row.id), &holder)));
        if !oldest {
            return false;
        }
        let rest = match table.next() {
            Some((&key, _)) => self.rows.split_off(&key),
            None => Default::default(),
        };
        self.rows = rest;
        true
    }

    /// `ROLLBACK` of `txn`: its rows stay, unlocked.
    pub fn unlock(&mut self, txn: u64, rows: &[RowRec]) {
        for row in rows {
            let holder = self
                .rows
                .get_mut(&(row.created_at_ms, row.id))
                .expect("a locked row is still in the table");
            assert_eq!(
                *holder,
                Some(holder_id(txn)),
                "rollback of a row the txn did not lock"
            );
            *holder = None;
        }
    }
}

/// `(created_at_ms, id)` for ids 1.. in order, sorted. When times span
/// under 2^40 ms and ids fit in 24 bits (any seeded table does), each key
/// packs into one `u64`, which sorts about twice as fast as the pairs.
fn sorted_keys(created_at_ms: &[i64]) -> Vec<(i64, u64)> {
    let (Some(&min), Some(&max)) = (created_at_ms.iter().min(), created_at_ms.iter().max()) else {
        return Vec::new();
    };
    let ids = 1..=created_at_ms.len() as u64;
    let span = max.abs_diff(min);
    if span >= 1 << 40 || created_at_ms.len() >= 1 << 24 {
        let mut keys: Vec<(i64, u64)> = created_at_ms.iter().copied().zip(ids).collect();
        keys.sort_unstable();
        return keys;
    }
    let mut packed: Vec<u64> = created_at_ms
        .iter()
        .zip(ids)
        .map(|(&at, id)| (at.abs_diff(min) << 24) | id)
        .collect();
    packed.sort_unstable();
    packed
        .into_iter()
        .map(|key| {
            let offset = i64::try_from(key >> 24).expect("under 2^40");
            (min + offset, key & ((1 << 24) - 1))
        })
        .collect()
}

fn holder_id(txn: u64) -> NonZeroU64 {
    NonZeroU64::new(txn).expect("transaction ids start at 1")
}
