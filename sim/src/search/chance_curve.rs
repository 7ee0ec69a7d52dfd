//! The chance curve of `sim explain`: which instants it branches at, and
//! where along it the failure's chance rose most and rose for good.

use serde::Serialize;

use crate::model::History;

/// The chance at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurvePoint {
    /// Where the branches part, on the run's time.
    pub at_ms: i64,
    /// The first event at or after it: the last one every branch shares.
    pub seq: usize,
    /// Branches that violated the clause.
    pub failing: usize,
    /// Branches run.
    pub branches: usize,
}

impl CurvePoint {
    /// The share of branches that failed.
    pub fn chance(&self) -> f64 {
        self.failing as f64 / self.branches.max(1) as f64
    }
}

/// The least rise in chance that counts as a jump: below it, no instant
/// stands out from the branches' noise (a share near one half over 100
/// branches has a standard error of 0.05).
pub const JUMP_MIN_RISE: f64 = 0.1;

/// The chance from which a failure counts as inevitable.
pub const SEALED_CHANCE: f64 = 0.9;

/// The points on either side of where the curve last rises into
/// [`SEALED_CHANCE`] (both the first when it starts there). The last point
/// branches past the run's end, where every branch is the run itself.
pub(super) fn sealed<T>(curve: &[(CurvePoint, T, T)]) -> (usize, usize) {
    let staying = curve
        .iter()
        .rposition(|(point, _, _)| point.chance() < SEALED_CHANCE)
        .map_or(0, |below| below + 1)
        .min(curve.len() - 1);
    (staying.saturating_sub(1), staying)
}

/// The adjacent pair of points with the largest rise in chance (the
/// earliest of equals).
pub(super) fn steepest<T>(curve: &[(CurvePoint, T, T)]) -> (usize, usize) {
    let mut best = (0, 1);
    let mut best_rise = f64::MIN;
    for at in 0..curve.len() - 1 {
        let rise = curve[at + 1].0.chance() - curve[at].0.chance();
        if rise > best_rise {
            (best, best_rise) = ((at, at + 1), rise);
        }
    }
    best
}

/// The first event at or after `at_ms` (the last if none is).
pub(super) fn first_at_or_after(history: &History, at_ms: i64) -> usize {
    history
        .events
        .partition_point(|event| event.at_ms < at_ms)
        .min(history.events.len() - 1)
}

/// The distinct event instants strictly between two instants.
pub(super) fn instants_between(history: &History, from_ms: i64, to_ms: i64) -> Vec<i64> {
    let mut instants: Vec<i64> = history
        .events
        .iter()
        .map(|event| event.at_ms)
        .filter(|&at| at > from_ms && at < to_ms)
        .collect();
    instants.dedup();
    instants
}

/// At most `count` of `instants`, evenly spread, the last always in.
pub(super) fn spread(instants: &[i64], count: usize) -> Vec<i64> {
    if instants.len() <= count {
        return instants.to_vec();
    }
    let mut chosen: Vec<i64> = (1..=count)
        .map(|k| instants[k * instants.len() / count - 1])
        .collect();
    chosen.dedup();
    chosen
}
