//! `retention_records`: rows ordered by `(created_at_ms, id)`, each maybe
//! row-locked `FOR UPDATE` by one open transaction.

use std::collections::VecDeque;
use std::num::NonZeroU64;

use crate::model::RowRec;

/// The records table with its row locks.
///
/// Kept as one sorted run rather than a tree: deletes take the oldest rows
/// and inserts are nearly always the newest, so both ends are cheap, and a
/// seeded table is built by a sort instead of thousands of node inserts.
#[derive(Debug, Clone, Default)]
pub struct Records {
    /// Sorted by `(created_at_ms, id)`, the index's order.
    rows: VecDeque<Row>,
    next_id: u64,
}

/// One row and the transaction holding its lock (non-zero, so a row stays
/// 24 bytes: the table is most of a run's memory traffic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    created_at_ms: i64,
    id: u64,
    holder: Option<NonZeroU64>,
}

impl Row {
    fn key(&self) -> (i64, u64) {
        (self.created_at_ms, self.id)
    }
}

impl Records {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// A table holding rows created at `created_at_ms`, inserted in that
    /// order (so ids follow it), as many `INSERT`s would leave it.
    pub fn with_rows(created_at_ms: impl IntoIterator<Item = i64>) -> Self {
        let created_at_ms: Vec<i64> = created_at_ms.into_iter().collect();
        let next_id = created_at_ms.len() as u64;
        let rows = sorted_keys(&created_at_ms)
            .into_iter()
            .map(|(created_at_ms, id)| Row {
                created_at_ms,
                id,
                holder: None,
            })
            .collect();
        Self { rows, next_id }
    }

    /// `INSERT ... (created_at_ms)`, autocommitted: ids come from a
    /// sequence, so they grow in insertion order.
    pub fn insert(&mut self, created_at_ms: i64) -> RowRec {
        self.next_id += 1;
        let row = Row {
            created_at_ms,
            id: self.next_id,
            holder: None,
        };
        // The new id is the largest, so the row goes after every row
        // created at or before it.
        let at = self
            .rows
            .partition_point(|other| other.created_at_ms <= created_at_ms);
        self.rows.insert(at, row);
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

    /// Rows locked by an open transaction.
    pub fn count_locked(&self) -> usize {
        self.rows.iter().filter(|row| row.holder.is_some()).count()
    }

    /// The oldest row's creation stamp.
    pub fn oldest_ms(&self) -> Option<i64> {
        self.rows.front().map(|row| row.created_at_ms)
    }

    /// Rows created strictly before `older_than_ms`.
    pub fn count_older_than(&self, older_than_ms: i64) -> usize {
        self.rows
            .partition_point(|row| row.created_at_ms < older_than_ms)
    }

    /// The inner `SELECT id ... WHERE created_at_ms < $1 ORDER BY
    /// created_at_ms, id LIMIT $2 FOR UPDATE SKIP LOCKED`: the oldest rows
    /// older than the cutoff that no other transaction has locked, now locked
    /// by `txn`. Rows `txn` itself locked are its own and not chosen again.
    pub fn lock_oldest(&mut self, txn: u64, older_than_ms: i64, limit: u32) -> Vec<RowRec> {
        let mut chosen = Vec::new();
        for row in self.rows.iter_mut() {
            if row.created_at_ms >= older_than_ms || chosen.len() as u64 >= u64::from(limit) {
                break;
            }
            if row.holder.is_some() {
                continue;
            }
            row.holder = Some(holder_id(txn));
            chosen.push(RowRec {
                id: row.id,
                created_at_ms: row.created_at_ms,
            });
        }
        chosen
    }

    /// `COMMIT` of `txn`'s `DELETE`: its locked rows go.
    pub fn remove_locked(&mut self, txn: u64, rows: &[RowRec]) {
        let holder = Some(holder_id(txn));
        assert!(
            rows.len() <= self.rows.len(),
            "commit of more rows than the table holds"
        );
        // The common commit: `rows` are the table's oldest, in order.
        let oldest = (self.rows.iter().zip(rows))
            .all(|(kept, row)| (kept.key(), kept.holder) == ((row.created_at_ms, row.id), holder));
        if oldest {
            self.rows.drain(..rows.len());
            return;
        }
        for row in rows {
            let at = self.position(row);
            let removed = at.and_then(|at| self.rows.remove(at));
            assert_eq!(
                removed.map(|kept| kept.holder),
                Some(holder),
                "commit of a row the txn did not lock"
            );
        }
    }

    /// `ROLLBACK` of `txn`: its rows stay, unlocked.
    pub fn unlock(&mut self, txn: u64, rows: &[RowRec]) {
        for row in rows {
            let at = self
                .position(row)
                .expect("a locked row is still in the table");
            let kept = &mut self.rows[at];
            assert_eq!(
                kept.holder,
                Some(holder_id(txn)),
                "rollback of a row the txn did not lock"
            );
            kept.holder = None;
        }
    }

    /// Where `row` is in the table, if it still is.
    fn position(&self, row: &RowRec) -> Option<usize> {
        self.rows
            .binary_search_by_key(&(row.created_at_ms, row.id), Row::key)
            .ok()
    }
}

/// `(created_at_ms, id)` for ids 1.. in order, sorted. When times span
/// under 2^40 ms and ids fit in 24 bits (any seeded table does), each key
/// packs into one `u64` and a radix sort on the time alone orders them: it
/// is stable and the ids come in order, so equal times stay in id order.
fn sorted_keys(created_at_ms: &[i64]) -> Vec<(i64, u64)> {
    let (Some(&min), Some(&max)) = (created_at_ms.iter().min(), created_at_ms.iter().max()) else {
        return Vec::new();
    };
    let ids = 1..=created_at_ms.len() as u64;
    let span = max.abs_diff(min);
    let ids_fit = created_at_ms.len() < PACKED_ROWS_MAX;
    if span >= PACKED_SPAN_MS_MAX || !ids_fit {
        let mut keys: Vec<(i64, u64)> = created_at_ms.iter().copied().zip(ids).collect();
        keys.sort_unstable();
        return keys;
    }
    let mut packed: Vec<u64> = created_at_ms
        .iter()
        .zip(ids)
        .map(|(&at, id)| (at.abs_diff(min) << ID_BITS) | id)
        .collect();
    radix_sort_by_time(&mut packed, u64::BITS - span.leading_zeros());
    packed
        .into_iter()
        .map(|key| {
            let offset = i64::try_from(key >> ID_BITS).expect("under 2^40");
            (min + offset, key & ((1 << ID_BITS) - 1))
        })
        .collect()
}

/// The low bits of a packed key that hold the row's id.
const ID_BITS: u32 = 24;

/// Tables packed into one `u64` a row: fewer rows than ids fit in
/// [`ID_BITS`], and times spanning less than the bits above them hold.
const PACKED_ROWS_MAX: usize = 1 << ID_BITS;
const PACKED_SPAN_MS_MAX: u64 = 1 << (u64::BITS - ID_BITS);

/// A stable least-significant-digit radix sort of packed keys by their
/// time bits (the `time_bits` above [`ID_BITS`]): a few linear passes where
/// a comparison sort of a seeded table took a twentieth of a short run.
fn radix_sort_by_time(keys: &mut Vec<u64>, time_bits: u32) {
    const DIGIT_BITS: u32 = 11;
    const DIGIT_MASK: u64 = (1 << DIGIT_BITS) - 1;
    let mut scratch = vec![0u64; keys.len()];
    let mut shift = ID_BITS;
    while shift < ID_BITS + time_bits {
        let digit = |key: u64| ((key >> shift) & DIGIT_MASK) as usize;
        let mut starts = [0usize; 1 << DIGIT_BITS];
        for &key in keys.iter() {
            starts[digit(key)] += 1;
        }
        let mut total = 0;
        for start in starts.iter_mut() {
            (*start, total) = (total, total + *start);
        }
        for &key in keys.iter() {
            let slot = &mut starts[digit(key)];
            scratch[*slot] = key;
            *slot += 1;
        }
        std::mem::swap(keys, &mut scratch);
        shift += DIGIT_BITS;
    }
}

fn holder_id(txn: u64) -> NonZeroU64 {
    NonZeroU64::new(txn).expect("transaction ids start at 1")
}
