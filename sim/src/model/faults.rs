//! A run's fault events, timed or on chosen calls, with the range of every
//! field: what one kind of fault is, in one place.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use super::limits::{HOUR_MS, MAX_ROWS};
use super::names::OpKind;

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
        self.clone().replica_and_at_ms_mut().0.copied()
    }

    /// When the event happens, for events tied to a time.
    pub fn at_ms(&self) -> Option<u64> {
        self.clone().replica_and_at_ms_mut().1.copied()
    }

    /// The replica the event targets and when it happens, to change; each
    /// `None` where the event has none.
    pub(crate) fn replica_and_at_ms_mut(&mut self) -> (Option<&mut u32>, Option<&mut u64>) {
        match self {
            Self::Pause { replica, at_ms, .. }
            | Self::Partition { replica, at_ms, .. }
            | Self::Crash { replica, at_ms, .. }
            | Self::Stop { replica, at_ms, .. }
            | Self::ClockStep { replica, at_ms, .. }
            | Self::ClockRate { replica, at_ms, .. } => (Some(replica), Some(at_ms)),
            Self::StopDuring { replica, .. } | Self::CallFault { replica, .. } => {
                (Some(replica), None)
            }
            Self::HoldRows { at_ms, .. }
            | Self::StallStandby { at_ms, .. }
            | Self::DbClockStep { at_ms, .. } => (None, Some(at_ms)),
        }
    }

    /// The call a per-call event aims at (operation, n-th), if it aims at one.
    pub(crate) fn chosen_call(&self) -> Option<(OpKind, u32)> {
        match self {
            Self::StopDuring { op, nth, .. } | Self::CallFault { op, nth, .. } => Some((*op, *nth)),
            _ => None,
        }
    }

    /// How many tasks call `stop()`, for a stop.
    pub(crate) fn callers(&self) -> Option<u32> {
        match self {
            Self::Stop { callers, .. } | Self::StopDuring { callers, .. } => Some(*callers),
            _ => None,
        }
    }

    /// The outcome a call fault gives its call.
    pub(crate) fn outcome(&self) -> Option<CallOutcome> {
        match self {
            Self::CallFault { outcome, .. } => Some(*outcome),
            _ => None,
        }
    }

    /// A fault that lasts, to stretch: its start and its length, and
    /// whether a later one of its kind on its target that starts inside it
    /// stretches it to the later end (a pause, a cut, a stalled standby) or
    /// changes nothing (a crash of a process already down).
    pub(crate) fn window_mut(&mut self) -> Option<Window<'_>> {
        let (at_ms, length_ms, stretches) = match self {
            Self::Pause { at_ms, for_ms, .. }
            | Self::Partition { at_ms, for_ms, .. }
            | Self::StallStandby { at_ms, for_ms } => (*at_ms, for_ms, true),
            Self::Crash {
                at_ms,
                restart_after_ms,
                ..
            } => (*at_ms, restart_after_ms, false),
            _ => return None,
        };
        Some(Window {
            at_ms,
            length_ms,
            stretches,
        })
    }

    /// How long after it strikes a fault is undone by its target (a pause
    /// thawed, a cut healed, a crashed process restarted); `None` for a
    /// fault that is over when its strike returns.
    pub fn ends_after_ms(&self) -> Option<u64> {
        match self {
            Self::Pause { for_ms, .. } | Self::Partition { for_ms, .. } => Some(*for_ms),
            Self::Crash {
                restart_after_ms, ..
            } => Some(*restart_after_ms),
            _ => None,
        }
    }

    /// How long a process is frozen, for a pause.
    pub(crate) fn frozen_ms(&self) -> Option<u64> {
        match self {
            Self::Pause { for_ms, .. } => Some(*for_ms),
            _ => None,
        }
    }

    /// A clock fault half its size, for the shrinker: a step half as
    /// long, a rate halfway back to true time; `None` for any other
    /// kind, or a clock fault as small as it goes.
    pub(crate) fn halved(&self) -> Option<FaultEvent> {
        Some(match *self {
            FaultEvent::ClockStep {
                replica,
                at_ms,
                delta_ms,
            } if delta_ms.abs() > 1 => FaultEvent::ClockStep {
                replica,
                at_ms,
                delta_ms: delta_ms / 2,
            },
            FaultEvent::ClockRate {
                replica,
                at_ms,
                rate_permille,
            } if rate_permille.abs_diff(1_000) > 1 => FaultEvent::ClockRate {
                replica,
                at_ms,
                rate_permille: (rate_permille + 1_000) / 2,
            },
            FaultEvent::DbClockStep { at_ms, delta_ms } if delta_ms.abs() > 1 => {
                FaultEvent::DbClockStep {
                    at_ms,
                    delta_ms: delta_ms / 2,
                }
            }
            _ => return None,
        })
    }

    /// The fault `permille` thousandths its size, for the guided search's
    /// widen and narrow moves: a window's length, a crash's time down, a
    /// step's size, a rate's distance from true time, the rows held; each
    /// at least 1. `None` for the kinds without a size (stops, call faults).
    pub(crate) fn scaled(&self, permille: u64) -> Option<FaultEvent> {
        let scale = |value: u64| (value.saturating_mul(permille) / 1_000).max(1);
        let scale_signed = |value: i64| {
            let size = i64::try_from(scale(value.unsigned_abs())).unwrap_or(i64::MAX);
            if value < 0 { -size } else { size }
        };
        let mut event = self.clone();
        match &mut event {
            Self::Pause { for_ms, .. }
            | Self::Partition { for_ms, .. }
            | Self::StallStandby { for_ms, .. } => *for_ms = scale(*for_ms),
            Self::HoldRows { for_ms, rows, .. } => {
                *for_ms = scale(*for_ms);
                *rows = u32::try_from(scale(u64::from(*rows))).unwrap_or(u32::MAX);
            }
            Self::Crash {
                restart_after_ms, ..
            } => *restart_after_ms = scale(*restart_after_ms),
            Self::ClockStep { delta_ms, .. } | Self::DbClockStep { delta_ms, .. } => {
                *delta_ms = scale_signed(*delta_ms);
            }
            Self::ClockRate { rate_permille, .. } => {
                let offset = i64::try_from(*rate_permille).unwrap_or(i64::MAX) - 1_000;
                *rate_permille = u64::try_from(1_000 + scale_signed(offset)).unwrap_or(1);
            }
            Self::Stop { .. } | Self::CallFault { .. } | Self::StopDuring { .. } => return None,
        }
        Some(event)
    }

    /// The name of its kind, as a plan file spells it (`kind = "..."`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::Pause { .. } => "pause",
            Self::Partition { .. } => "partition",
            Self::Crash { .. } => "crash",
            Self::Stop { .. } => "stop",
            Self::CallFault { .. } => "call_fault",
            Self::HoldRows { .. } => "hold_rows",
            Self::StallStandby { .. } => "stall_standby",
            Self::ClockStep { .. } => "clock_step",
            Self::ClockRate { .. } => "clock_rate",
            Self::DbClockStep { .. } => "db_clock_step",
            Self::StopDuring { .. } => "stop_during",
        }
    }

    /// Its signed field, a clock step's `delta_ms`, checked against ±a day.
    pub(crate) fn delta_ms(&self) -> Option<i64> {
        match self {
            Self::ClockStep { delta_ms, .. } | Self::DbClockStep { delta_ms, .. } => {
                Some(*delta_ms)
            }
            _ => None,
        }
    }

    /// Every unsigned field past the replica and the instant, with its
    /// value and the range a plan may give it.
    pub(crate) fn bounded_fields(&self) -> Vec<(&'static str, u64, RangeInclusive<u64>)> {
        let ms = 0..=HOUR_MS;
        match self {
            FaultEvent::Pause { for_ms, .. } | FaultEvent::Partition { for_ms, .. } => {
                vec![("for_ms", *for_ms, ms)]
            }
            FaultEvent::Crash {
                restart_after_ms, ..
            } => vec![("restart_after_ms", *restart_after_ms, ms)],
            FaultEvent::Stop { callers, .. } => vec![("callers", (*callers).into(), 1..=100)],
            FaultEvent::StopDuring { nth, callers, .. } => vec![
                ("nth", (*nth).into(), 1..=1_000_000),
                ("callers", (*callers).into(), 1..=100),
            ],
            FaultEvent::CallFault {
                nth,
                request_delay_ms,
                reply_delay_ms,
                ..
            } => vec![
                ("nth", (*nth).into(), 1..=1_000_000),
                ("request_delay_ms", *request_delay_ms, ms.clone()),
                ("reply_delay_ms", *reply_delay_ms, ms),
            ],
            FaultEvent::StallStandby { for_ms, .. } => vec![("for_ms", *for_ms, ms)],
            // Signed: checked on its own above.
            FaultEvent::ClockStep { .. } | FaultEvent::DbClockStep { .. } => vec![],
            FaultEvent::ClockRate { rate_permille, .. } => {
                vec![("rate_permille", *rate_permille, RATE_PERMILLE)]
            }
            FaultEvent::HoldRows { for_ms, rows, .. } => vec![
                ("for_ms", *for_ms, ms),
                ("rows", (*rows).into(), 0..=MAX_ROWS),
            ],
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

/// How fast or slow a clock may run: a tenth of true time to ten times it.
pub const RATE_PERMILLE: RangeInclusive<u64> = 100..=10_000;

/// A lasting fault's window, as [`FaultEvent::window_mut`] gives it.
pub(crate) struct Window<'a> {
    /// When it starts.
    pub at_ms: u64,
    /// How long it lasts.
    pub length_ms: &'a mut u64,
    /// Whether a later one inside it stretches it.
    pub stretches: bool,
}

impl CallOutcome {
    /// Why the outcome cannot apply to a call of `op`, if it cannot: a
    /// revoke means something only for a renewal, a corrupt reply only for
    /// an acquire or a renewal.
    pub(crate) fn refusal_for(self, op: OpKind) -> Option<String> {
        match self {
            Self::Revoke if op != OpKind::Renew => {
                Some(format!("revoke applies to renew, not {}", op.name()))
            }
            Self::Corrupt if !matches!(op, OpKind::Acquire | OpKind::Renew) => Some(format!(
                "corrupt applies to acquire and renew, not {}",
                op.name()
            )),
            _ => None,
        }
    }
}
