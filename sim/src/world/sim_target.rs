//! The simulated world as a fault target: what a pause, a crash, a cut or
//! a clock fault does to a madsim node, its kernel and its clock (the plan
//! layer's interpreter decides when); and the wait for every `stop()` to
//! resolve at the end of a run.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use madsim::runtime::{Handle, NodeHandle};

use super::clock::SimClock;
use super::db_node::DbNode;
use super::recorder::Recorder;
use super::replica_process::ReplicaCtx;
use crate::model::EventKind;
use crate::plan::FaultTarget;

/// A replica's context and its node.
pub(crate) struct Replica {
    pub ctx: Arc<ReplicaCtx>,
    pub node: NodeHandle,
    /// Its host's clock, which clock faults step and slow.
    pub clock: SimClock,
}

/// What the plan's timed faults strike in the simulator.
pub(crate) struct SimTarget {
    pub handle: Handle,
    pub replicas: Arc<Vec<Replica>>,
    pub recorder: Arc<Recorder>,
    pub db: Arc<DbNode>,
}

impl SimTarget {
    fn replica(&self, replica: u32) -> &Replica {
        &self.replicas[replica as usize - 1]
    }
}

impl FaultTarget for SimTarget {
    type Frozen = ();
    type Dead = ();

    async fn sleep_until(&self, at_ms: u64) {
        let wait_ms =
            u64::try_from(i64::try_from(at_ms).unwrap_or(i64::MAX) - self.recorder.now_ms())
                .unwrap_or(0);
        madsim::time::sleep(Duration::from_millis(wait_ms)).await;
    }

    async fn sleep(&self, for_ms: u64) {
        madsim::time::sleep(Duration::from_millis(for_ms)).await;
    }

    async fn freeze(&self, replica: u32, for_ms: u64) {
        let replica = self.replica(replica);
        replica.ctx.record(EventKind::Paused { for_ms });
        self.handle.pause(replica.node.id());
    }

    async fn thaw(&self, replica: u32, (): ()) {
        let replica = self.replica(replica);
        self.handle.resume(replica.node.id());
        replica.ctx.record(EventKind::Resumed);
    }

    fn cut(&self, replica: u32, for_ms: u64) {
        let replica = self.replica(replica);
        replica.ctx.record(EventKind::Partitioned { for_ms });
        replica.ctx.kernel.cut(for_ms);
    }

    fn heal(&self, replica: u32) {
        // The kernel's cut ends on its own at the time it was given.
        self.replica(replica).ctx.record(EventKind::Healed);
    }

    async fn kill(&self, replica: u32) {
        let replica = self.replica(replica);
        replica.ctx.die();
        self.handle.kill(replica.node.id());
    }

    async fn restart(&self, replica: u32, (): ()) {
        let replica = self.replica(replica);
        replica.ctx.reborn();
        self.handle.restart(replica.node.id());
    }

    async fn stop(&self, replica: u32, callers: u32) {
        // Spawned on the replica's node: the callers run (and pause, and
        // die) with the process they stop, and the fault task goes on.
        self.replica(replica).ctx.spawn_stops(callers);
    }

    fn step_clock(&self, replica: u32, delta_ms: i64) {
        let replica = self.replica(replica);
        let (from_ms, to_ms) = replica.clock.step(delta_ms);
        replica
            .ctx
            .record(EventKind::ClockStepped { from_ms, to_ms });
    }

    fn set_clock_rate(&self, replica: u32, rate_permille: u64) {
        let replica = self.replica(replica);
        let reading_ms = replica.clock.set_rate(rate_permille);
        let kind = EventKind::ClockRateSet {
            rate_permille,
            reading_ms,
        };
        replica.ctx.record(kind);
    }

    async fn step_db_clock(&self, delta_ms: i64) {
        self.db.step_clock(delta_ms);
    }

    async fn hold_rows(&self, rows: u32, for_ms: u64) {
        self.db.hold_rows(rows, for_ms).await;
    }

    async fn stall_standby(&self, for_ms: u64) {
        self.db.stall_standby(for_ms).await;
    }
}

/// Waits until every `stop()` spawned so far has resolved, or the bound.
pub(crate) async fn settle_stops(replicas: &[Replica], recorder: &Recorder, bound_ms: u64) {
    let deadline_ms = recorder.now_ms() + i64::try_from(bound_ms).unwrap_or(i64::MAX);
    let pending = || {
        replicas
            .iter()
            .filter(|r| r.ctx.alive.load(Ordering::Relaxed))
            .map(|r| r.ctx.stops_pending.load(Ordering::Relaxed))
            .sum::<u32>()
    };
    while pending() > 0 && recorder.now_ms() < deadline_ms {
        madsim::time::sleep(Duration::from_millis(10)).await;
    }
}
