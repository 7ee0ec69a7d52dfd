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
}

/// Whether the variant was stopped, and whether a term is running.
#[derive(Default)]
pub(super) struct Flags {
    pub(super) stopped: bool,
    pub(super) running: bool,
}
