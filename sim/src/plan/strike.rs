//! The one interpreter of a plan's timed faults: when each strikes and,
//! for a fault that lasts, when it ends, over a [`FaultTarget`] that the
//! simulated world and real mode each implement with what the fault does.
//! Faults planned for one instant take effect in the plan's order.

use std::future::{Future, poll_fn};
use std::pin::pin;

use tokio::sync::oneshot;

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

/// A timed fault's place among the faults planned for its instant: it
/// waits for the one before it to take effect, and lets the one after it
/// go once it has. Each fault is a task of its own, and a runtime is free
/// to wake tasks due at one instant in any order (madsim woke the later
/// of two clock steps first, so the plan's last step did not win).
#[derive(Debug, Default)]
pub struct Turn {
    after: Option<oneshot::Receiver<()>>,
    begun: Option<oneshot::Sender<()>>,
}

/// `events` (as [`crate::model::RunSpec::effective_events`] orders them:
/// by instant, the plan's order within one) each with its turn.
pub fn in_turns(events: Vec<FaultEvent>) -> Vec<(FaultEvent, Turn)> {
    let mut turns: Vec<(FaultEvent, Turn)> = Vec::with_capacity(events.len());
    for event in events {
        let mut turn = Turn::default();
        if let Some((previous, previous_turn)) = turns.last_mut()
            && event.at_ms().is_some()
            && previous.at_ms() == event.at_ms()
        {
            let (begun, after) = oneshot::channel();
            previous_turn.begun = Some(begun);
            turn.after = Some(after);
        }
        turns.push((event, turn));
    }
    turns
}

/// A dropped fault (`sim replay --drop-fault`, or one a branch of the run
/// starts after, `sim explain`): its task sleeps to its
/// instant as the fault's would, holding its turn, and does nothing.
pub async fn strike_nothing<T: FaultTarget>(target: &T, event: &FaultEvent, turn: Turn) {
    if let Some(at_ms) = event.at_ms() {
        target.sleep_until(at_ms).await;
    }
    drop(turn);
}

/// Strikes `event` on `target` at its time, in `turn`, and ends it when it
/// ends. A fault whose predecessor at its instant has not taken effect
/// waits for it; one that comes in its turn anyway (the usual case) is not
/// delayed by a single step. Faults on a chosen call (`CallFault`,
/// `StopDuring`) strike through the call itself, not here.
pub async fn strike_in_turn<T: FaultTarget>(target: &T, event: FaultEvent, turn: Turn) {
    let Some(at_ms) = event.at_ms() else {
        return;
    };
    target.sleep_until(at_ms).await;
    if let Some(after) = turn.after {
        // An error means the predecessor's task ended with the run.
        let _ = after.await;
    }
    // The next fault goes when this `begin` first waits: a hold of rows
    // returns only when it ends, and the next must not wait for that. The
    // simulator's faults have all taken effect by then.
    let mut begun = turn.begun;
    let mut begin = pin!(target.begin(&event));
    let held = poll_fn(|context| {
        let poll = begin.as_mut().poll(context);
        if let Some(begun) = begun.take() {
            let _ = begun.send(());
        }
        poll
    })
    .await;
    if let Some(lasts_ms) = event.ends_after_ms() {
        target.sleep(lasts_ms).await;
        target.end(&event, held).await;
    }
}
