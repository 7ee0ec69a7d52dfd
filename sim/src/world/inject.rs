//! The timed faults of a plan (pauses, crashes, stops) as they strike, and
//! the wait for every `stop()` to resolve at the end of a run.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use madsim::runtime::{Handle, NodeHandle};

use super::clock::SimClock;
use super::db_node::DbNode;
use super::recorder::Recorder;
use super::replica::ReplicaCtx;
use crate::model::{Actor, EventKind, FaultEvent};

/// A replica's context and its node.
pub(crate) struct Replica {
    pub ctx: Arc<ReplicaCtx>,
    pub node: NodeHandle,
    /// Its host's clock, which clock faults step and slow.
    pub clock: SimClock,
}

pub(crate) async fn inject(
    handle: &Handle,
    replicas: &[Replica],
    recorder: &Recorder,
    db: &DbNode,
    event: FaultEvent,
) {
    let sleep_until = |at_ms: u64| {
        let wait_ms = u64::try_from(i64::try_from(at_ms).unwrap_or(i64::MAX) - recorder.now_ms())
            .unwrap_or(0);
        madsim::time::sleep(Duration::from_millis(wait_ms))
    };
    let Some(index) = event.replica() else {
        match event {
            FaultEvent::HoldRows {
                at_ms,
                for_ms,
                rows,
            } => {
                sleep_until(at_ms).await;
                db.hold_rows(rows, for_ms).await;
            }
            FaultEvent::StallStandby { at_ms, for_ms } => {
                sleep_until(at_ms).await;
                db.stall_standby(for_ms).await;
            }
            FaultEvent::DbClockStep { at_ms, delta_ms } => {
                sleep_until(at_ms).await;
                db.step_clock(delta_ms);
            }
            _ => {}
        }
        return;
    };
    let replica = &replicas[index as usize - 1];
    let actor = Actor::Replica(replica.ctx.replica());
    let term = || replica.ctx.ledger.term();
    match event {
        FaultEvent::Pause { at_ms, for_ms, .. } => {
            sleep_until(at_ms).await;
            recorder.record(actor, term(), EventKind::Paused { for_ms });
            handle.pause(replica.node.id());
            madsim::time::sleep(Duration::from_millis(for_ms)).await;
            handle.resume(replica.node.id());
            recorder.record(actor, term(), EventKind::Resumed);
        }
        FaultEvent::Partition { at_ms, for_ms, .. } => {
            sleep_until(at_ms).await;
            recorder.record(actor, term(), EventKind::Partitioned { for_ms });
            replica.ctx.kernel.cut(for_ms);
            madsim::time::sleep(Duration::from_millis(for_ms)).await;
            recorder.record(actor, term(), EventKind::Healed);
        }
        FaultEvent::Crash {
            at_ms,
            restart_after_ms,
            ..
        } => {
            sleep_until(at_ms).await;
            recorder.record(actor, term(), EventKind::Crashed);
            replica.ctx.alive.store(false, Ordering::Relaxed);
            replica.ctx.stops_pending.store(0, Ordering::Relaxed);
            // A stop the starting process had not yet taken dies with it.
            replica.ctx.stops_deferred.store(0, Ordering::Relaxed);
            replica.ctx.worker.lock().expect("worker slot").take();
            // The kernel closes a dead process's sockets after what they
            // had sent: the database then rolls back their transactions.
            // First, so that the calls the kill drops send nothing more (no
            // ROLLBACK, no cancel request: a dead process sends neither).
            replica.ctx.kernel.process_died();
            handle.kill(replica.node.id());
            madsim::time::sleep(Duration::from_millis(restart_after_ms)).await;
            recorder.record(actor, term(), EventKind::Restarted);
            replica.ctx.alive.store(true, Ordering::Relaxed);
            replica.ctx.stops_pending.store(0, Ordering::Relaxed);
            replica.ctx.worker.lock().expect("worker slot").take();
            handle.restart(replica.node.id());
        }
        FaultEvent::Stop { at_ms, callers, .. } => {
            sleep_until(at_ms).await;
            replica.ctx.spawn_stops(callers);
        }
        FaultEvent::ClockStep {
            at_ms, delta_ms, ..
        } => {
            sleep_until(at_ms).await;
            let (from_ms, to_ms) = replica.clock.step(delta_ms);
            recorder.record(actor, term(), EventKind::ClockStepped { from_ms, to_ms });
        }
        FaultEvent::ClockRate {
            at_ms,
            rate_permille,
            ..
        } => {
            sleep_until(at_ms).await;
            let reading_ms = replica.clock.set_rate(rate_permille);
            let kind = EventKind::ClockRateSet {
                rate_permille,
                reading_ms,
            };
            recorder.record(actor, term(), kind);
        }
        FaultEvent::StopDuring { .. }
        | FaultEvent::CallFault { .. }
        | FaultEvent::HoldRows { .. }
        | FaultEvent::StallStandby { .. }
        | FaultEvent::DbClockStep { .. } => {}
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
