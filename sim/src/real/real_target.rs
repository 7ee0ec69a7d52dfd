//! Real mode as a fault target: what a pause, a crash, a cut or a clock
//! fault does to a replica's process and its network to the server, and
//! what another client or the database's clock does (the plan layer's
//! interpreter decides when).

use std::sync::Arc;
use std::time::Duration;

use retention_worker::WorkerConfig;
use retention_worker::pg::Pool;
use test_support::MeteredProxy;
use tokio::sync::OwnedMutexGuard;

use super::db_clock;
use super::gate::Gate;
use super::log::{RealRecorder, wall_us};
use super::replica_lifecycle::Replica;
use crate::model::{Actor, EventKind, FaultEvent};
use crate::plan::FaultTarget;

/// What the plan's timed faults strike against a real server.
pub(super) struct RealTarget {
    /// Each replica's network to the server.
    pub networks: Vec<MeteredProxy>,
    pub replicas: Vec<Arc<Replica>>,
    /// The harness's own connections (held rows, the database's clock).
    pub pool: Pool,
    pub log: Arc<RealRecorder>,
    /// What a restarted process's worker runs with.
    pub config: WorkerConfig,
}

impl RealTarget {
    fn replica(&self, replica: u32) -> &Arc<Replica> {
        &self.replicas[replica as usize - 1]
    }

    fn network(&self, replica: u32) -> &MeteredProxy {
        &self.networks[replica as usize - 1]
    }
}

/// Waits until `at_ms` after the run's start by the wall clock.
pub(super) async fn sleep_until(log: &RealRecorder, at_ms: u64) {
    let now_ms = wall_us() / 1_000 - log.epoch_ms;
    let wait_ms = i64::try_from(at_ms).unwrap_or(i64::MAX) - now_ms;
    // Never a zero sleep: it would yield, and an event due now must
    // strike before the tasks queued behind it run.
    if let Ok(wait_ms @ 1..) = u64::try_from(wait_ms) {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
    }
}

/// Why real mode cannot strike `event`, if it cannot: its method on
/// [`RealTarget`] then does nothing.
pub(super) fn cannot_strike(event: &FaultEvent) -> Option<&'static str> {
    match event {
        FaultEvent::ClockRate { .. } => {
            Some("a clock's rate cannot be changed under tokio's timers")
        }
        FaultEvent::StallStandby { .. } => Some("the throwaway server has no standby"),
        _ => None,
    }
}

/// What a lasting fault keeps in real mode until it ends.
pub(super) enum Held {
    /// Nothing: the fault is over, or lasts without the harness.
    Nothing,
    /// A paused replica's frozen gate.
    Frozen(Gate),
    /// A killed replica's lifecycle, held until the restart so that no
    /// stop starts a dead process.
    Dead(OwnedMutexGuard<()>),
}

impl FaultTarget for RealTarget {
    type Held = Held;

    async fn sleep_until(&self, at_ms: u64) {
        sleep_until(&self.log, at_ms).await;
    }

    async fn sleep(&self, for_ms: u64) {
        tokio::time::sleep(Duration::from_millis(for_ms)).await;
    }

    async fn begin(&self, event: &FaultEvent) -> Held {
        match *event {
            FaultEvent::Pause {
                replica, for_ms, ..
            } => {
                // The adapters' tasks run on: what they would read or send
                // waits in the replica's network, as in a frozen process's
                // kernel, until the thaw.
                self.network(replica).freeze();
                return Held::Frozen(self.replica(replica).freeze(for_ms));
            }
            FaultEvent::Partition {
                replica, for_ms, ..
            } => {
                self.replica(replica)
                    .record(EventKind::Partitioned { for_ms });
                self.network(replica).cut(for_ms);
            }
            FaultEvent::Crash { replica, .. } => {
                let victim = self.replica(replica);
                let dead = victim.lifecycle.clone().lock_owned().await;
                // A dead process's sockets close after what they had sent:
                // no COMMIT or ROLLBACK of its follows, and the server
                // rolls back its open transaction, as the simulator's
                // kernel does.
                self.network(replica).sever();
                victim.kill().await;
                return Held::Dead(dead);
            }
            FaultEvent::Stop {
                replica, callers, ..
            } => {
                let victim = self.replica(replica);
                let _alone = victim.lifecycle.lock().await;
                victim.stop(callers).await;
            }
            FaultEvent::ClockStep {
                replica, delta_ms, ..
            } => self.replica(replica).step_clock(delta_ms),
            FaultEvent::DbClockStep { delta_ms, .. } => {
                db_clock::step(&self.pool, &self.log, delta_ms).await;
            }
            FaultEvent::HoldRows { for_ms, rows, .. } => self.hold_rows(rows, for_ms).await,
            // Not applied: `cannot_strike` says why before the run.
            FaultEvent::ClockRate { .. } | FaultEvent::StallStandby { .. } => {}
            FaultEvent::CallFault { .. } | FaultEvent::StopDuring { .. } => {
                unreachable!("a fault on a chosen call strikes through the call")
            }
        }
        Held::Nothing
    }

    async fn end(&self, event: &FaultEvent, held: Held) {
        match (event, held) {
            (&FaultEvent::Pause { replica, .. }, Held::Frozen(frozen)) => {
                self.replica(replica).thaw(&frozen);
                self.network(replica).thaw();
            }
            // The network's cut ends on its own at the time it was given.
            (&FaultEvent::Partition { replica, .. }, Held::Nothing) => {
                self.replica(replica).record(EventKind::Healed);
            }
            (&FaultEvent::Crash { replica, .. }, Held::Dead(dead)) => {
                let victim = self.replica(replica);
                victim.record_restart();
                victim.start(self.config.clone());
                drop(dead);
            }
            _ => unreachable!("only a pause, a cut or a crash lasts, each with what it began"),
        }
    }
}

impl RealTarget {
    /// Another client locks the `rows` oldest records for `for_ms`.
    async fn hold_rows(&self, rows: u32, for_ms: u64) {
        let mut client = self.pool.get().await.expect("a connection");
        let txn = client.transaction().await.expect("BEGIN");
        let locked = txn
            .query(
                "SELECT id FROM retention_records ORDER BY created_at_ms, id LIMIT $1 FOR UPDATE",
                &[&i64::from(rows)],
            )
            .await
            .expect("lock the oldest rows")
            .len() as u64;
        let held = EventKind::RowsHeld {
            rows: locked,
            for_ms,
        };
        self.log.record(Actor::Db, 0, held);
        tokio::time::sleep(Duration::from_millis(for_ms)).await;
        txn.commit().await.expect("COMMIT");
        let freed = EventKind::RowsFreed { rows: locked };
        self.log.record(Actor::Db, 0, freed);
    }
}
