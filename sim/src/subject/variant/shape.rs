//! The variant's shape: what it is built from, and the flags and the
//! wake-up its methods (`mod.rs`, `renew.rs`) share.

use std::sync::{Arc, Mutex};

use retention_worker::{Dependencies, Lease, WorkerConfig};
use tokio::sync::Notify;

use crate::model::Flaw;

/// The TypeScript-shaped worker.
pub(super) struct Variant<C, L, R, T> {
    pub(super) flaw: Option<Flaw>,
    pub(super) owner: String,
    pub(super) config: WorkerConfig,
    pub(super) deps: Dependencies<C, L, R>,
    pub(super) runtime: T,
    pub(super) flags: Mutex<Flags>,
    /// Woken on every change of `flags` or of a term's cell.
    pub(super) changed: Arc<Notify>,
    /// The last lease a term held (kept only by `release-stale-term-lease`).
    pub(super) last_lease: Mutex<Option<Lease>>,
    /// What the canaries remember across terms.
    pub(super) memory: Mutex<Memory>,
}

/// Rare things the process has seen, for the canaries: replies it refused
/// as corrupt, deletes refused that its own renewal did not explain, and
/// terms lost to a null renewal.
#[derive(Default)]
pub(super) struct Memory {
    pub(super) corrupt_replies: u32,
    pub(super) foreign_fences: u32,
    pub(super) null_renewals: u32,
    /// The current term's, cleared when a term begins.
    pub(super) term: TermMemory,
}

/// What the canaries remember of one term: a delete in flight, a `stop()`
/// during one, the clock's jump between two batches, and the deletes
/// refused because the term's own renewal moved the token.
#[derive(Default)]
pub(super) struct TermMemory {
    pub(super) deleting: bool,
    pub(super) stopped_mid_delete: bool,
    pub(super) jumped: bool,
    pub(super) own_fences: u32,
}

/// Whether the variant was stopped, and whether a term is running.
#[derive(Default)]
pub(super) struct Flags {
    pub(super) stopped: bool,
    pub(super) running: bool,
}
