//! The fault plan of a run: probabilistic knobs, timed events, and faults on
//! chosen calls. Every fault is off by default.

use serde::{Deserialize, Serialize};

use super::names::{FaultKnob, OpKind};

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

/// A fault that happens at a chosen moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultEvent {
    /// Freeze replica `replica`'s process for `for_ms` (a GC pause).
    Pause {
        /// The replica, from 1.
        replica: u32,
        /// When the pause starts.
        at_ms: u64,
        /// How long it lasts.
        for_ms: u64,
    },
    /// Cut replica `replica` off from the database at `at_ms` for `for_ms`
    /// (a failed switch, a firewall change): the network drops every packet
    /// between them, both ways, and neither side sees the other close. TCP
    /// retransmits what it sent, so it arrives after the cut heals, at the
    /// first retransmission after that; a new connection's handshake waits
    /// the same way.
    Partition {
        /// The replica, from 1.
        replica: u32,
        /// When the cut starts.
        at_ms: u64,
        /// How long it lasts.
        for_ms: u64,
    },
    /// Kill replica `replica`'s process; restart it after `restart_after_ms`.
    Crash {
        /// The replica, from 1.
        replica: u32,
        /// When it dies.
        at_ms: u64,
        /// When it comes back, counted from the crash.
        restart_after_ms: u64,
    },
    /// `callers` tasks call `stop()` on replica `replica` at `at_ms`.
    Stop {
        /// The replica, from 1.
        replica: u32,
        /// When the callers call.
        at_ms: u64,
        /// How many concurrent callers, 1 or more.
        callers: u32,
    },
    /// Replica `replica`'s `nth` call of `op` meets `outcome`, after
    /// `request_delay_ms` on the way in and `reply_delay_ms` on the way back.
    CallFault {
        /// The replica, from 1.
        replica: u32,
        /// The operation.
        op: OpKind,
        /// Which call of that operation, from 1.
        nth: u32,
        /// What the service does with it.
        #[serde(default)]
        outcome: CallOutcome,
        /// Extra delay before the request reaches the service.
        #[serde(default)]
        request_delay_ms: u64,
        /// Extra delay before the reply reaches the replica.
        #[serde(default)]
        reply_delay_ms: u64,
    },
    /// Another client of the database (an application transaction, a manual
    /// cleanup) locks the `rows` oldest records `FOR UPDATE` at `at_ms` and
    /// holds them for `for_ms`: deletes skip them (`SKIP LOCKED`).
    HoldRows {
        /// When the other client takes the locks.
        at_ms: u64,
        /// How long it holds them.
        for_ms: u64,
        /// How many of the oldest rows it locks.
        rows: u32,
    },
    /// The database's synchronous standby stops answering at `at_ms` for
    /// `for_ms`: every commit that wrote something (a lease statement that
    /// locked the row, a delete's `COMMIT`) waits, holding its locks, until
    /// it answers again or the client cancels the wait. PostgreSQL has no
    /// timeout for that wait.
    StallStandby {
        /// When the standby stops answering.
        at_ms: u64,
        /// For how long.
        for_ms: u64,
    },
    /// Replica `replica`'s wall clock jumps by `delta_ms` at `at_ms`, forward
    /// or back (NTP stepping it, an operator's `date -s`): what the worker
    /// reads as now changes from then on; its timers, which run on the
    /// monotonic clock, do not.
    ClockStep {
        /// The replica, from 1.
        replica: u32,
        /// When the clock is stepped.
        at_ms: u64,
        /// By how much: positive forward, negative back.
        delta_ms: i64,
    },
    /// From `at_ms` replica `replica`'s clocks run at `rate_permille`
    /// thousandths of true time (a VM with a bad clocksource, NTP slewing):
    /// its readings and its timers alike.
    ClockRate {
        /// The replica, from 1.
        replica: u32,
        /// When the rate changes.
        at_ms: u64,
        /// 1000 keeps time; 500 runs at half speed, 2000 at double.
        rate_permille: u64,
    },
    /// The database's clock jumps by `delta_ms` at `at_ms` (a failover to a
    /// standby whose host clock differs, NTP stepping the host): statements
    /// read the new clock from then on; rows and the lease row keep the
    /// times they were written with.
    DbClockStep {
        /// When the clock is stepped.
        at_ms: u64,
        /// By how much: positive forward, negative back.
        delta_ms: i64,
    },
    /// `callers` tasks call `stop()` the moment replica `replica` issues its
    /// `nth` call of `op`, so that stop races that call in flight.
    StopDuring {
        /// The replica, from 1.
        replica: u32,
        /// The operation whose call triggers the stop.
        op: OpKind,
        /// Which call of that operation, from 1.
        nth: u32,
        /// How many concurrent callers, 1 or more.
        callers: u32,
    },
}

impl FaultEvent {
    /// The replica the event targets, if it targets one.
    pub fn replica(&self) -> Option<u32> {
        match self {
            Self::Pause { replica, .. }
            | Self::Partition { replica, .. }
            | Self::Crash { replica, .. }
            | Self::Stop { replica, .. }
            | Self::StopDuring { replica, .. }
            | Self::CallFault { replica, .. }
            | Self::ClockStep { replica, .. }
            | Self::ClockRate { replica, .. } => Some(*replica),
            Self::HoldRows { .. } | Self::StallStandby { .. } | Self::DbClockStep { .. } => None,
        }
    }

    /// When the event happens, for events tied to a time.
    pub fn at_ms(&self) -> Option<u64> {
        match self {
            Self::Pause { at_ms, .. }
            | Self::Partition { at_ms, .. }
            | Self::Crash { at_ms, .. }
            | Self::Stop { at_ms, .. }
            | Self::HoldRows { at_ms, .. }
            | Self::StallStandby { at_ms, .. }
            | Self::ClockStep { at_ms, .. }
            | Self::ClockRate { at_ms, .. }
            | Self::DbClockStep { at_ms, .. } => Some(*at_ms),
            Self::StopDuring { .. } | Self::CallFault { .. } => None,
        }
    }
}

/// What the service does with a call chosen by [`FaultEvent::CallFault`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// Applies it and answers (only the delays apply).
    #[default]
    Normal,
    /// Refuses it before applying it.
    Reject,
    /// Applies it; the reply is lost.
    LoseReply,
    /// For a renewal: revokes the lease and answers null.
    Revoke,
    /// For an acquire or a renewal: applies it, then garbles the reply as a
    /// faulty lease service might: an acquire's lease names another owner
    /// (`intruder`), a renewal's carries the token it was sent.
    Corrupt,
}
