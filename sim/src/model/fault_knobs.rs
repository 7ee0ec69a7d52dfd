//! The fault plan's probabilistic knobs, drawn per call from the run's
//! seed. Every knob is off by default.

use serde::{Deserialize, Serialize};

use super::names::FaultKnob;

/// Probabilistic faults, drawn per call from the run's seed. Every knob is
/// off (zero) by default. Probabilities are in per mille.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultConfig {
    /// Extra delay before a request and before its reply, each uniform in
    /// `0..=latency_ms_max`; on top of madsim's own network jitter.
    pub latency_ms_max: u64,
    /// Chance that a renewal's reply is held back long enough to arrive
    /// after the next renewal tick would have fired.
    pub renew_reply_delay_permille: u32,
    /// Chance that any call is refused before the service applies it.
    pub reject_permille: u32,
    /// Chance that any call is applied but its reply is lost.
    pub ambiguous_permille: u32,
    /// Chance that the lease service revokes the lease on a renewal and
    /// answers `None`, so another replica may take over.
    pub null_renew_permille: u32,
    /// Chance that the network loses any packet, request or reply. The
    /// database connections are TCP: a lost packet is retransmitted after
    /// 200 ms (doubling each time it is lost again), so it arrives late,
    /// and a call whose messages are late enough times out.
    pub packet_loss_permille: u32,
    /// Each replica's clock is skewed by a fixed amount in
    /// `-clock_skew_ms_max..=clock_skew_ms_max`.
    pub clock_skew_ms_max: u64,
}

impl FaultConfig {
    /// Whether any probabilistic fault is on.
    pub fn any(&self) -> bool {
        *self != Self::default()
    }

    /// Every knob with its value (0 is off), in [`FaultKnob`]'s order.
    pub fn knobs(&self) -> Vec<(FaultKnob, u64)> {
        FaultKnob::ALL
            .iter()
            .map(|&knob| (knob, self.get(knob)))
            .collect()
    }

    /// The value of `knob`.
    pub fn get(&self, knob: FaultKnob) -> u64 {
        use FaultKnob as K;
        match knob {
            K::LatencyMsMax => self.latency_ms_max,
            K::RenewReplyDelayPermille => self.renew_reply_delay_permille.into(),
            K::RejectPermille => self.reject_permille.into(),
            K::AmbiguousPermille => self.ambiguous_permille.into(),
            K::NullRenewPermille => self.null_renew_permille.into(),
            K::PacketLossPermille => self.packet_loss_permille.into(),
            K::ClockSkewMsMax => self.clock_skew_ms_max,
        }
    }

    /// Sets `knob` to `value`, refusing what breaks [`FaultKnob::limit`].
    pub fn set(&mut self, knob: FaultKnob, value: u64) -> Result<(), String> {
        use FaultKnob as K;
        if let Some(limit) = knob.limit()
            && value > limit
        {
            return Err(format!("{value} is above {limit} per mille"));
        }
        // Below the limit, a chance always fits its u32 field.
        let chance = || u32::try_from(value).expect("at most 1000");
        match knob {
            K::LatencyMsMax => self.latency_ms_max = value,
            K::RenewReplyDelayPermille => self.renew_reply_delay_permille = chance(),
            K::RejectPermille => self.reject_permille = chance(),
            K::AmbiguousPermille => self.ambiguous_permille = chance(),
            K::NullRenewPermille => self.null_renew_permille = chance(),
            K::PacketLossPermille => self.packet_loss_permille = chance(),
            K::ClockSkewMsMax => self.clock_skew_ms_max = value,
        }
        Ok(())
    }
}

impl FaultKnob {
    /// The largest value the knob accepts: 1000 for a chance in per mille,
    /// none for a time.
    pub fn limit(self) -> Option<u64> {
        self.name().ends_with("_permille").then_some(1_000)
    }
}
