//! The one interpreter of a plan's timed faults: when each strikes and,
//! for a fault that lasts, when it ends, over a [`FaultTarget`] that the
//! simulated world and real mode each implement with what the fault does.

use crate::model::FaultEvent;

/// What a world does when a fault strikes. The interpreter decides the
/// instants and the waits; a target decides what each kind of fault does
/// to it, so a new kind of fault is taught to each world in its target
/// and nowhere else in this layer. Every replica is numbered from 1, as
/// in the plan.
///
/// A world that cannot apply a kind of fault refuses the plan before it
/// runs (real mode's `refusal` and `not_applied`), so its target is never
/// asked to strike one.
#[allow(async_fn_in_trait)]
pub trait FaultTarget {
    /// What a lasting fault keeps from its start to its end: real mode's
    /// frozen gate, so that a replica killed meanwhile is not thawed, or
    /// its hold on a killed replica's lifecycle, so that no stop starts it
    /// before the restart.
    type Held;

    /// Waits until `at_ms` after the run's start.
    async fn sleep_until(&self, at_ms: u64);
    /// Waits `for_ms`.
    async fn sleep(&self, for_ms: u64);

    /// Applies `event` now: freezes, cuts or kills a replica, steps or
    /// slows a clock, calls `stop()`, or holds the database's rows or its
    /// standby (these two for as long as the event says, before
    /// returning).
    async fn begin(&self, event: &FaultEvent) -> Self::Held;
    /// Undoes what [`FaultTarget::begin`] did for a fault that lasts
    /// ([`FaultEvent::ends_after_ms`]): thaws, heals or restarts.
    async fn end(&self, event: &FaultEvent, held: Self::Held);
}

/// Strikes `event` on `target` at its time, and ends it when it ends.
/// Faults on a chosen call (`CallFault`, `StopDuring`) strike through the
/// call itself, not here.
pub async fn strike<T: FaultTarget>(target: &T, event: FaultEvent) {
    let Some(at_ms) = event.at_ms() else {
        return;
    };
    target.sleep_until(at_ms).await;
    let held = target.begin(&event).await;
    if let Some(lasts_ms) = event.ends_after_ms() {
        target.sleep(lasts_ms).await;
        target.end(&event, held).await;
    }
}
