//! In-memory reference models of the lease service and the records repository,
//! exactly as `worker/CONTRACT.md` defines them, for tests, simulations and demos.
//!
//! [`LeaseTable`] and [`RecordTable`] are plain state machines that take the
//! time as an argument; [`InMemoryBackend`] wraps both behind the worker's
//! traits, with FEN-2 checked in the same critical section as the delete.

use std::collections::BTreeSet;
use std::sync::Mutex;

pub use crate::FenceRejection;
use crate::{CallError, Clock, Lease, LeaseService, RecordsRepository};

/// The lease service model: one global token counter, bumped on every
/// successful acquire and renew; expiry by the service's clock;
/// compare-and-set release.
#[derive(Debug, Clone)]
pub struct LeaseTable {
    ttl_ms: i64,
    last_token: u64,
    holder: Option<Lease>,
}

impl LeaseTable {
    /// An empty table granting leases of `ttl_ms`.
    pub fn new(ttl_ms: u64) -> Self {
        Self {
            ttl_ms: i64::try_from(ttl_ms).expect("a lease TTL fits in i64 milliseconds"),
            last_token: 0,
            holder: None,
        }
    }

    /// The lease as stored, expired or not; `None` once released.
    pub fn stored(&self) -> Option<&Lease> {
        self.holder.as_ref()
    }

    /// The current holder's lease, if it is unexpired at `now_ms`.
    pub fn holder(&self, now_ms: i64) -> Option<&Lease> {
        self.holder
            .as_ref()
            .filter(|lease| now_ms < lease.expires_at_ms)
    }

    /// Grants a new lease iff nobody holds an unexpired one.
    pub fn acquire(&mut self, owner_id: &str, now_ms: i64) -> Option<Lease> {
        if self.holder(now_ms).is_some() {
            return None;
        }
        Some(self.grant(owner_id.to_owned(), now_ms))
    }

    /// Replaces `lease` with a new token and expiry iff it is exactly the
    /// current unexpired lease.
    pub fn renew(&mut self, lease: &Lease, now_ms: i64) -> Option<Lease> {
        if self.holder(now_ms) != Some(lease) {
            return None;
        }
        Some(self.grant(lease.owner_id.clone(), now_ms))
    }

    /// Clears the holder iff `lease` is exactly the current lease (REL-2);
    /// returns whether it did.
    pub fn release(&mut self, lease: &Lease) -> bool {
        let is_current = self.holder.as_ref() == Some(lease);
        if is_current {
            self.holder = None;
        }
        is_current
    }

    /// FEN-2: `fencing_token` is the current holder's and unexpired.
    pub fn check_fence(&self, fencing_token: u64, now_ms: i64) -> Result<(), FenceRejection> {
        match &self.holder {
            None => Err(FenceRejection::NoHolder),
            Some(lease) if lease.fencing_token != fencing_token => {
                Err(FenceRejection::StaleToken {
                    current_token: lease.fencing_token,
                })
            }
            Some(lease) if now_ms >= lease.expires_at_ms => Err(FenceRejection::Expired {
                expires_at_ms: lease.expires_at_ms,
            }),
            Some(_) => Ok(()),
        }
    }

    fn grant(&mut self, owner_id: String, now_ms: i64) -> Lease {
        self.last_token += 1;
        let lease = Lease {
            owner_id,
            fencing_token: self.last_token,
            expires_at_ms: now_ms.saturating_add(self.ttl_ms),
        };
        self.holder = Some(lease.clone());
        lease
    }
}

/// A row of the cleaned table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Row {
    /// When the row was written; the ordering key.
    pub created_at_ms: i64,
    /// Unique id, in insertion order.
    pub id: u64,
}

/// The records repository model: rows ordered by age.
#[derive(Debug, Clone, Default)]
pub struct RecordTable {
    rows: BTreeSet<Row>,
    next_id: u64,
}

impl RecordTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a row written at `created_at_ms` and returns it.
    pub fn insert(&mut self, created_at_ms: i64) -> Row {
        self.next_id += 1;
        let row = Row {
            created_at_ms,
            id: self.next_id,
        };
        self.rows.insert(row);
        row
    }

    /// Rows in the table.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Rows strictly older than `older_than_ms`.
    pub fn count_older_than(&self, older_than_ms: i64) -> usize {
        self.rows
            .iter()
            .take_while(|row| row.created_at_ms < older_than_ms)
            .count()
    }

    /// Removes up to `limit` rows strictly older than `older_than_ms`,
    /// oldest first, and returns them.
    pub fn delete_older_than(&mut self, older_than_ms: i64, limit: u32) -> Vec<Row> {
        let doomed: Vec<Row> = self
            .rows
            .iter()
            .take_while(|row| row.created_at_ms < older_than_ms)
            .take(limit as usize)
            .copied()
            .collect();
        for row in &doomed {
            self.rows.remove(row);
        }
        doomed
    }
}

/// A lease service and a repository in one process, answering at once and
/// timing leases by `clock`. FEN-2 is checked under the same lock as the
/// delete, as a database transaction would.
#[derive(Debug)]
pub struct InMemoryBackend<C> {
    clock: C,
    tables: Mutex<(LeaseTable, RecordTable)>,
}

impl<C: Clock> InMemoryBackend<C> {
    /// A backend granting leases of `lease_ttl_ms` over `records`.
    pub fn new(clock: C, lease_ttl_ms: u64, records: RecordTable) -> Self {
        Self {
            clock,
            tables: Mutex::new((LeaseTable::new(lease_ttl_ms), records)),
        }
    }

    /// Runs `f` on the tables, for inspection or seeding.
    pub fn with_tables<T>(&self, f: impl FnOnce(&mut LeaseTable, &mut RecordTable) -> T) -> T {
        let mut tables = self
            .tables
            .lock()
            .expect("no panic while holding the tables");
        let (leases, records) = &mut *tables;
        f(leases, records)
    }
}

impl<C: Clock> LeaseService for InMemoryBackend<C> {
    async fn acquire(&self, owner_id: &str) -> Result<Option<Lease>, CallError> {
        let now_ms = self.clock.now_ms();
        Ok(self.with_tables(|leases, _| leases.acquire(owner_id, now_ms)))
    }

    async fn renew(&self, lease: &Lease) -> Result<Option<Lease>, CallError> {
        let now_ms = self.clock.now_ms();
        Ok(self.with_tables(|leases, _| leases.renew(lease, now_ms)))
    }

    async fn release(&self, lease: &Lease) -> Result<(), CallError> {
        self.with_tables(|leases, _| leases.release(lease));
        Ok(())
    }
}

impl<C: Clock> RecordsRepository for InMemoryBackend<C> {
    async fn delete_batch(&self, cutoff_ms: i64, limit: u32, token: u64) -> Result<u64, CallError> {
        let now_ms = self.clock.now_ms();
        self.with_tables(|leases, records| {
            leases
                .check_fence(token, now_ms)
                .map_err(|rejection| CallError::fenced(format!("token {token}: {rejection}")))?;
            Ok(records.delete_older_than(cutoff_ms, limit).len() as u64)
        })
    }
}
