//! What real mode can stage of a plan: the plans it refuses, the parts it
//! cannot apply (said before the run, which goes on without them), and
//! the adapters' options the plan's settings become.

use retention_worker::pg::PgOptions;

use super::real_target::cannot_strike;
use crate::model::{Flaw, RunSpec};

/// Why real mode will not run `spec` at all, if it will not.
pub fn refusal(spec: &RunSpec) -> Option<String> {
    match spec.flaw {
        Some(flaw @ Flaw::SpinWhileRenewing) => Some(format!(
            "the flaw {flaw} busy-waits without ever awaiting: on tokio it would hold the \
             runtime's thread, and the run, for ever (the simulator stops it as LIVE-3)"
        )),
        _ => None,
    }
}

/// The parts of a plan real mode cannot apply; the run goes on without
/// them, and says so.
pub fn not_applied(spec: &RunSpec) -> Vec<String> {
    let mut skipped = Vec::new();
    for (index, event) in spec.events.iter().enumerate() {
        let Some(why) = cannot_strike(event) else {
            continue;
        };
        skipped.push(format!("events[{index}] ({}): {why}", event.kind_name()));
    }
    if spec.branch.is_some() {
        skipped.push(
            "branch: a branch stirs the simulator's randomness; real time has none to stir \
             (the plan's faults from its instant on are dropped, as in the simulator)"
                .to_owned(),
        );
    }
    if spec.db_commit_ms_max > 0 {
        skipped.push(
            "db_commit_ms: the throwaway server commits without waiting for a flush \
             (fsync and synchronous_commit off)"
                .to_owned(),
        );
    }
    if spec.faults.packet_loss_permille > 0 {
        skipped
            .push("faults.packet_loss_permille: the proxy loses nothing (loopback TCP)".to_owned());
    }
    skipped
}

/// The adapters' options for this plan, as the runner would set them.
pub fn pg_options(spec: &RunSpec) -> PgOptions {
    PgOptions {
        lease_ttl_ms: spec.worker.lease_ttl_ms,
        call_timeout_ms: spec.rpc_timeout_ms,
        statement_timeout_ms: spec.statement_timeout_ms,
        lock_timeout_ms: spec.lock_timeout_ms,
        idle_in_transaction_timeout_ms: spec.idle_in_transaction_timeout_ms,
        retention_ms: spec.database_retention_ms(),
        ..PgOptions::default()
    }
}
