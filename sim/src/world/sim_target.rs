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
use crate::model::{EventKind, FaultEvent};
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
    type Held = ();

    async fn sleep_until(&self, at_ms: u64) {
        let wait_ms =
            u64::try_from(i64::try_from(at_ms).unwrap_or(i64::MAX) - self.recorder.now_ms())
                .unwrap_or(0);
        madsim::time::sleep(Duration::from_millis(wait_ms)).await;
    }

    async fn sleep(&self, for_ms: u64) {
        madsim::time::sleep(Duration::from_millis(for_ms)).await;
    }

    async fn begin(&self, event: &FaultEvent) {
        match *event {
            FaultEvent::Pause {
                replica, for_ms, ..
            } => {
                let replica = self.replica(replica);
                replica.ctx.record(EventKind::Paused { for_ms });
                self.handle.pause(replica.node.id());
            }
            FaultEvent::Partition {
                replica, for_ms, ..
            } => {
                let replica = self.replica(replica);
                replica.ctx.record(EventKind::Partitioned { for_ms });
                replica.ctx.kernel.cut(for_ms);
            }
            FaultEvent::Crash { replica, .. } => {
                let replica = self.replica(replica);
                replica.ctx.die();
                self.handle.kill(replica.node.id());
            }
            // Spawned on the replica's node: the callers run (and pause,
            // and die) with the process they stop, and the fault task goes
            // on.
            FaultEvent::Stop {
                replica, callers, ..
            } => self.replica(replica).ctx.spawn_stops(callers),
            FaultEvent::ClockStep {
                replica, delta_ms, ..
            } => {
                let replica = self.replica(replica);
                let (from_ms, to_ms) = replica.clock.step(delta_ms);
                replica
                    .ctx
                    .record(EventKind::ClockStepped { from_ms, to_ms });
            }
            FaultEvent::ClockRate {
                replica,
                rate_permille,
                ..
            } => {
                let replica = self.replica(replica);
                let reading_ms = replica.clock.set_rate(rate_permille);
                let kind = EventKind::ClockRateSet {
                    rate_permille,
                    reading_ms,
                };
                replica.ctx.record(kind);
            }
            FaultEvent::DbClockStep { delta_ms, .. } => self.db.step_clock(delta_ms),
            FaultEvent::HoldRows { for_ms, rows, .. } => self.db.hold_rows(rows, for_ms).await,
            FaultEvent::StallStandby { for_ms, .. } => self.db.stall_standby(for_ms).await,
            FaultEvent::CallFault { .. } | FaultEvent::StopDuring { .. } => {
                unreachable!("a fault on a chosen call strikes through the call")
            }
        }
    }

    async fn end(&self, event: &FaultEvent, (): ()) {
        match *event {
            FaultEvent::Pause { replica, .. } => {
                let replica = self.replica(replica);
                self.handle.resume(replica.node.id());
                replica.ctx.record(EventKind::Resumed);
            }
            // The kernel's cut ends on its own at the time it was given.
            FaultEvent::Partition { replica, .. } => {
                self.replica(replica).ctx.record(EventKind::Healed);
            }
            FaultEvent::Crash { replica, .. } => {
                let replica = self.replica(replica);
                replica.ctx.reborn();
                self.handle.restart(replica.node.id());
            }
            _ => unreachable!("only a pause, a cut or a crash lasts"),
        }
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
