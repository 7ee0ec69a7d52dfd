//! A run's draws from its seed, in the one order both worlds keep: the
//! seeded rows (the backlog, then the boundary rows), then for each replica
//! its skew, the seed of its fault draws and its jitter seed. A new draw
//! goes after these, or every earlier history changes.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::calls::FaultDraws;
use crate::model::{FaultEvent, OpKind, RunSpec};

/// Everything a run draws from its seed before it starts.
pub struct RunDraws {
    /// Each seeded row's creation time, in ms relative to the run's start
    /// (negative: before it): the backlog lies before the first cutoff, the
    /// boundary rows cross it over the next minute, so later terms find
    /// newly eligible rows.
    pub rows_ms: Vec<i64>,
    /// Each replica's plan, replica 1 first.
    pub replicas: Vec<ReplicaPlan>,
}

/// One replica's part of the plan.
pub struct ReplicaPlan {
    /// The replica's number, from 1.
    pub index: u32,
    /// Its host clock's offset from true time: the plan's own when it names
    /// one, else drawn within the clock-skew knob.
    pub skew_ms: i64,
    /// The call faults it draws, call by call.
    pub draws: FaultDraws,
    /// The stops the plan makes during its calls.
    pub stops: StopTriggers,
    /// Seeds each of its processes' jitter.
    pub jitter: JitterSeed,
}

/// The seed a replica's processes draw their jitter from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitterSeed(pub u64);

impl JitterSeed {
    /// The seed of the replica's process number `incarnation` (from 0), so
    /// that a restarted process draws jitter of its own.
    pub fn for_incarnation(self, incarnation: u32) -> u64 {
        self.0 ^ u64::from(incarnation).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// The plan's stops during a replica's calls: `(op, nth, callers)` makes
/// `callers` stop calls the moment the replica issues its `nth` call of `op`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopTriggers(Vec<(OpKind, u32, u32)>);

impl StopTriggers {
    /// Replica `index`'s triggers among the plan's `events`, in plan order.
    pub fn for_replica(events: &[FaultEvent], index: u32) -> Self {
        Self(
            events
                .iter()
                .filter(|event| event.replica() == Some(index))
                .filter_map(|event| {
                    // A stop aimed at a call: one with both a call and callers.
                    let (op, nth) = event.chosen_call()?;
                    Some((op, nth, event.callers()?))
                })
                .collect(),
        )
    }

    /// The callers of each trigger set off by the `nth` call of `op`, in
    /// plan order.
    pub fn callers_at(&self, op: OpKind, nth: u32) -> impl Iterator<Item = u32> + '_ {
        self.0
            .iter()
            .filter(move |(trigger_op, trigger_nth, _)| (*trigger_op, *trigger_nth) == (op, nth))
            .map(|(_, _, callers)| *callers)
    }
}

impl RunDraws {
    /// The draws of `spec` (already validated).
    pub fn draw(spec: &RunSpec) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        let retention_ms = i64::try_from(spec.worker.retention_ms).expect("validated");
        let backlog: Vec<i64> = (0..spec.backlog_rows)
            .map(|_| -retention_ms - rng.gen_range(1..=600_000))
            .collect();
        let boundary: Vec<i64> = (0..spec.boundary_rows)
            .map(|_| -retention_ms + rng.gen_range(0..60_000))
            .collect();
        let skew_max = i64::try_from(spec.faults.clock_skew_ms_max).unwrap_or(i64::MAX);
        // A replay's interventions aim at calls as the plan's own events do.
        let on_calls: Vec<FaultEvent> = spec
            .call_events()
            .into_iter()
            .chain(spec.interventions.iter().cloned())
            .collect();
        let replicas = (1..=spec.replicas)
            .map(|index| {
                // Drawn even when the plan names the skew, so that naming
                // one moves no later draw.
                let drawn_ms = if skew_max > 0 {
                    rng.gen_range(-skew_max..=skew_max)
                } else {
                    0
                };
                let skew_ms = spec
                    .skews_ms
                    .get(index as usize - 1)
                    .copied()
                    .unwrap_or(drawn_ms);
                let draws = FaultDraws::new(
                    spec.faults.clone(),
                    spec.worker.renew_interval_ms,
                    ChaCha8Rng::seed_from_u64(rng.r#gen()),
                    index,
                    &on_calls,
                );
                ReplicaPlan {
                    index,
                    skew_ms,
                    draws,
                    stops: StopTriggers::for_replica(&on_calls, index),
                    jitter: JitterSeed(rng.r#gen()),
                }
            })
            .collect();
        Self {
            rows_ms: backlog.into_iter().chain(boundary).collect(),
            replicas,
        }
    }

    /// Each replica's skew, replica 1 first, as the history's header
    /// records them.
    pub fn skews_ms(&self) -> Vec<i64> {
        self.replicas
            .iter()
            .map(|replica| replica.skew_ms)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FaultConfig;

    /// The order the simulator and real mode drew in before this module
    /// drew for both, written out draw by draw: rows, then per replica
    /// skew, fault-draw seed, jitter seed.
    fn drawn_by_hand(spec: &RunSpec) -> (Vec<i64>, Vec<(i64, u64)>) {
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        let retention_ms = spec.worker.retention_ms as i64;
        let mut rows = Vec::new();
        for _ in 0..spec.backlog_rows {
            rows.push(-retention_ms - rng.gen_range(1..=600_000i64));
        }
        for _ in 0..spec.boundary_rows {
            rows.push(-retention_ms + rng.gen_range(0..60_000i64));
        }
        let max = spec.faults.clock_skew_ms_max as i64;
        let mut replicas = Vec::new();
        for index in 0..spec.replicas as usize {
            let drawn = if max > 0 {
                rng.gen_range(-max..=max)
            } else {
                0
            };
            let _fault_draws_seed: u64 = rng.r#gen();
            let jitter: u64 = rng.r#gen();
            replicas.push((spec.skews_ms.get(index).copied().unwrap_or(drawn), jitter));
        }
        (rows, replicas)
    }

    #[test]
    fn the_draws_keep_the_order_both_worlds_drew_in() {
        for (seed, replicas, skew_max_ms, skews_ms) in [
            (1, 1, 0, vec![]),
            (2, 3, 500, vec![]),
            (3, 5, 2_000, vec![-40, 0, 70]),
            (4, 2, 0, vec![15]),
        ] {
            let spec = RunSpec {
                seed,
                replicas,
                skews_ms,
                faults: FaultConfig {
                    clock_skew_ms_max: skew_max_ms,
                    ..FaultConfig::default()
                },
                ..RunSpec::default()
            };
            let plan = RunDraws::draw(&spec);
            let (rows, by_replica) = drawn_by_hand(&spec);
            assert_eq!(plan.rows_ms, rows, "seed {seed}");
            let got: Vec<(i64, u64)> = plan
                .replicas
                .iter()
                .map(|replica| (replica.skew_ms, replica.jitter.0))
                .collect();
            assert_eq!(got, by_replica, "seed {seed}");
            assert_eq!(plan.skews_ms().len(), replicas as usize);
        }
    }

    #[test]
    fn stop_triggers_fire_for_their_own_replica_and_call_in_plan_order() {
        let stop = |replica, nth, callers| FaultEvent::StopDuring {
            replica,
            op: OpKind::Renew,
            nth,
            callers,
        };
        let events = [stop(1, 2, 3), stop(2, 2, 9), stop(1, 2, 1), stop(1, 5, 4)];
        let triggers = StopTriggers::for_replica(&events, 1);
        assert_eq!(
            triggers.callers_at(OpKind::Renew, 2).collect::<Vec<_>>(),
            [3, 1]
        );
        assert_eq!(triggers.callers_at(OpKind::Acquire, 2).count(), 0);
        assert_eq!(JitterSeed(5).for_incarnation(0), 5);
        assert_ne!(JitterSeed(5).for_incarnation(1), 5);
    }
}
