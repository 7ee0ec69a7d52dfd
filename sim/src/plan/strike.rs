//! The one interpreter of a plan's timed faults: when each strikes, what
//! it does first, how long it lasts and what ends it, over a
//! [`FaultTarget`] that the simulated world and real mode each implement.

use crate::model::FaultEvent;

/// What a world does when a fault strikes. The interpreter decides the
/// order and the waits; a target only acts. Every replica is numbered from
/// 1, as in the plan.
///
/// A world that cannot apply a kind of fault refuses the plan before it
/// runs (real mode's `refusal` and `not_applied`), so its method for that
/// kind is never reached with a fault to apply.
#[allow(async_fn_in_trait)]
pub trait FaultTarget {
    /// What a pause keeps from its start to its end (real mode's frozen
    /// gate, so that a replica killed meanwhile is not thawed).
    type Frozen;
    /// What a crash keeps from the kill to the restart (real mode's hold on
    /// the replica's lifecycle, so that no stop starts it meanwhile).
    type Dead;

    /// Waits until `at_ms` after the run's start.
    async fn sleep_until(&self, at_ms: u64);
    /// Waits `for_ms`.
    async fn sleep(&self, for_ms: u64);

    /// Freezes the replica's process (the history says for `for_ms`).
    async fn freeze(&self, replica: u32, for_ms: u64) -> Self::Frozen;
    /// Thaws what [`FaultTarget::freeze`] froze.
    async fn thaw(&self, replica: u32, frozen: Self::Frozen);
    /// Cuts the replica off from the database (the history says for
    /// `for_ms`).
    fn cut(&self, replica: u32, for_ms: u64);
    /// Ends the cut that [`FaultTarget::cut`] began.
    fn heal(&self, replica: u32);
    /// Kills the replica's process.
    async fn kill(&self, replica: u32) -> Self::Dead;
    /// Starts a fresh process of a replica [`FaultTarget::kill`] killed.
    async fn restart(&self, replica: u32, dead: Self::Dead);
    /// `callers` concurrent calls of the replica's `stop()`.
    async fn stop(&self, replica: u32, callers: u32);
    /// Steps the replica's wall clock by `delta_ms`.
    fn step_clock(&self, replica: u32, delta_ms: i64);
    /// Sets the pace of the replica's clocks, in thousandths of true time.
    fn set_clock_rate(&self, replica: u32, rate_permille: u64);

    /// Steps the database's clock by `delta_ms`.
    async fn step_db_clock(&self, delta_ms: i64);
    /// Another client locks the `rows` oldest records for `for_ms`.
    async fn hold_rows(&self, rows: u32, for_ms: u64);
    /// The synchronous standby stops answering for `for_ms`.
    async fn stall_standby(&self, for_ms: u64);
}

/// Strikes `event` on `target` at its time, and ends it when it ends.
/// Faults on a chosen call (`CallFault`, `StopDuring`) strike through the
/// call itself, not here.
pub async fn strike<T: FaultTarget>(target: &T, event: FaultEvent) {
    let Some(at_ms) = event.at_ms() else {
        return;
    };
    target.sleep_until(at_ms).await;
    match event {
        FaultEvent::Pause {
            replica, for_ms, ..
        } => {
            let frozen = target.freeze(replica, for_ms).await;
            target.sleep(for_ms).await;
            target.thaw(replica, frozen).await;
        }
        FaultEvent::Partition {
            replica, for_ms, ..
        } => {
            target.cut(replica, for_ms);
            target.sleep(for_ms).await;
            target.heal(replica);
        }
        FaultEvent::Crash {
            replica,
            restart_after_ms,
            ..
        } => {
            let dead = target.kill(replica).await;
            target.sleep(restart_after_ms).await;
            target.restart(replica, dead).await;
        }
        FaultEvent::Stop {
            replica, callers, ..
        } => target.stop(replica, callers).await,
        FaultEvent::ClockStep {
            replica, delta_ms, ..
        } => target.step_clock(replica, delta_ms),
        FaultEvent::ClockRate {
            replica,
            rate_permille,
            ..
        } => target.set_clock_rate(replica, rate_permille),
        FaultEvent::DbClockStep { delta_ms, .. } => target.step_db_clock(delta_ms).await,
        FaultEvent::HoldRows { for_ms, rows, .. } => target.hold_rows(rows, for_ms).await,
        FaultEvent::StallStandby { for_ms, .. } => target.stall_standby(for_ms).await,
        FaultEvent::CallFault { .. } | FaultEvent::StopDuring { .. } => {
            unreachable!("a fault on a chosen call has no time of its own")
        }
    }
}
