//! The faults each call meets: drawn from the replica's own generator, plus
//! whatever the plan put on that call by number.

use std::collections::BTreeMap;
use std::sync::Mutex;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::model::{CallOutcome, FaultConfig, FaultEvent, OpKind};

/// A fault the plan put on one chosen call ([`FaultEvent::CallFault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChosenFault {
    /// What the service does with the call.
    pub outcome: CallOutcome,
    /// Extra delay on the way in.
    pub request_delay_ms: u64,
    /// Extra delay on the way back.
    pub reply_delay_ms: u64,
}

/// What one call meets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallFaults {
    /// Delay before the request is sent.
    pub request_delay_ms: u64,
    /// Delay before the reply is seen.
    pub reply_delay_ms: u64,
    /// Refused before it is applied.
    pub reject: bool,
    /// Applied, and its reply lost.
    pub ambiguous: bool,
    /// A renewal that revokes the lease and answers null.
    pub revoke: bool,
    /// An answer garbled after it was applied.
    pub corrupt: bool,
}

/// One replica's fault draws: its knobs, its generator and its chosen calls.
#[derive(Debug)]
pub struct FaultDraws {
    faults: FaultConfig,
    renew_interval_ms: u64,
    rng: Mutex<ChaCha8Rng>,
    chosen: BTreeMap<(OpKind, u32), ChosenFault>,
    /// Once a branch has stirred the generator: the knobs from then on
    /// (`None`: the plan's), the plan's chosen calls dropped.
    after_branch: std::sync::OnceLock<Option<FaultConfig>>,
}

impl FaultDraws {
    /// Draws for `replica` from `rng`, with the plan's chosen calls for that
    /// replica taken from `events`. A held renewal reply lands past the next
    /// tick of `renew_interval_ms`.
    pub fn new(
        faults: FaultConfig,
        renew_interval_ms: u64,
        rng: ChaCha8Rng,
        replica: u32,
        events: &[FaultEvent],
    ) -> Self {
        let chosen = events
            .iter()
            .filter_map(|event| match *event {
                FaultEvent::CallFault {
                    replica: target,
                    op,
                    nth,
                    outcome,
                    request_delay_ms,
                    reply_delay_ms,
                } if target == replica => {
                    let fault = ChosenFault {
                        outcome,
                        request_delay_ms,
                        reply_delay_ms,
                    };
                    Some(((op, nth), fault))
                }
                _ => None,
            })
            .collect();
        Self {
            faults,
            renew_interval_ms,
            rng: Mutex::new(rng),
            chosen,
            after_branch: std::sync::OnceLock::new(),
        }
    }

    /// A branch of the run (`sim explain`), once: reseeds the generator
    /// from its own next draw and `salt`, so later calls draw a fresh
    /// future, with `knobs` (the plan's when `None`) and none of the plan's
    /// chosen calls.
    pub fn stir(&self, salt: u64, knobs: Option<FaultConfig>) {
        if self.after_branch.set(knobs).is_err() {
            return;
        }
        let mut rng = self.rng.lock().expect("fault rng");
        let next: u64 = rng.r#gen();
        *rng = ChaCha8Rng::seed_from_u64(next ^ salt);
    }

    /// The faults of the `nth` call of `op`.
    pub fn draw(&self, op: OpKind, nth: u32) -> CallFaults {
        let branched = self.after_branch.get();
        let f = branched.and_then(Option::as_ref).unwrap_or(&self.faults);
        let mut rng = self.rng.lock().expect("fault rng");
        // Every call draws the same numbers whichever knobs are on, so that
        // turning one fault off (as shrinking does) leaves the others' draws
        // where they were.
        let rolls: [u32; 4] = std::array::from_fn(|_| rng.gen_range(0..1_000));
        let spreads: [u64; 3] = std::array::from_fn(|_| rng.r#gen());
        let reject = rolls[0] < f.reject_permille;
        let ambiguous = !reject && rolls[1] < f.ambiguous_permille;
        let revoke = op == OpKind::Renew && !reject && rolls[2] < f.null_renew_permille;
        let late_renewal = op == OpKind::Renew && rolls[3] < f.renew_reply_delay_permille;
        let within = |spread: u64, max: u64| spread % (max + 1);
        let request_delay_ms = within(spreads[0], f.latency_ms_max);
        let mut reply_delay_ms = within(spreads[1], f.latency_ms_max);
        if late_renewal {
            // Past the next renewal tick: an overlapping worker would have
            // issued another renewal meanwhile.
            reply_delay_ms +=
                self.renew_interval_ms + within(spreads[2], self.renew_interval_ms / 2);
        }
        let mut faults = CallFaults {
            request_delay_ms,
            reply_delay_ms,
            reject,
            ambiguous,
            revoke,
            corrupt: false,
        };
        if let Some(chosen) = self.chosen.get(&(op, nth)).filter(|_| branched.is_none()) {
            faults.request_delay_ms += chosen.request_delay_ms;
            faults.reply_delay_ms += chosen.reply_delay_ms;
            faults.reject |= chosen.outcome == CallOutcome::Reject;
            faults.ambiguous |= chosen.outcome == CallOutcome::LoseReply;
            faults.revoke |= chosen.outcome == CallOutcome::Revoke;
            faults.corrupt |= chosen.outcome == CallOutcome::Corrupt;
        }
        faults
    }
}
