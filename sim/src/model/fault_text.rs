//! A fault in text: the command line's short syntax for a fault event
//! (`--pause R:AT:FOR`) and a fault knob (`--fault NAME=VALUE`), parsed
//! here, in the library, so the fuzz tests reach the same code `sim run`
//! does (every error starts with the flag and quotes the text it refuses);
//! and each event in one line of words, as scenario reports print it.

use super::fault_knobs::FaultConfig;
use super::faults::FaultEvent;
use super::names::{FaultKnob, Named, OpKind};

impl FaultEvent {
    /// The event in one line of words, as a scenario's header prints it
    /// (`pause r2 at 1000 ms for 2200 ms`).
    pub fn describe(&self) -> String {
        match self {
            FaultEvent::Pause {
                replica,
                at_ms,
                for_ms,
            } => format!("pause r{replica} at {at_ms} ms for {for_ms} ms"),
            FaultEvent::Partition {
                replica,
                at_ms,
                for_ms,
            } => format!("cut r{replica} off from the database at {at_ms} ms for {for_ms} ms"),
            FaultEvent::Crash {
                replica,
                at_ms,
                restart_after_ms,
            } => {
                format!("crash r{replica} at {at_ms} ms, restart {restart_after_ms} ms later")
            }
            FaultEvent::Stop {
                replica,
                at_ms,
                callers,
            } => format!("stop r{replica} at {at_ms} ms ({callers} caller(s))"),
            FaultEvent::StopDuring {
                replica,
                op,
                nth,
                callers,
            } => {
                format!(
                    "stop r{replica} as it issues {} #{nth} ({callers} caller(s))",
                    op.name()
                )
            }
            FaultEvent::HoldRows {
                at_ms,
                for_ms,
                rows,
            } => {
                format!("another client locks the {rows} oldest rows at {at_ms} ms for {for_ms} ms")
            }
            FaultEvent::StallStandby { at_ms, for_ms } => {
                format!("the synchronous standby stops answering at {at_ms} ms for {for_ms} ms")
            }
            FaultEvent::DbClockStep { at_ms, delta_ms } => {
                format!("the database's clock stepped {delta_ms:+} ms at {at_ms} ms")
            }
            FaultEvent::ClockStep {
                replica,
                at_ms,
                delta_ms,
            } => format!("r{replica}'s wall clock stepped {delta_ms:+} ms at {at_ms} ms"),
            FaultEvent::ClockRate {
                replica,
                at_ms,
                rate_permille,
            } => format!(
                "r{replica}'s clocks run at {}.{:03}x from {at_ms} ms",
                rate_permille / 1_000,
                rate_permille % 1_000
            ),
            FaultEvent::CallFault {
                replica,
                op,
                nth,
                outcome,
                request_delay_ms,
                reply_delay_ms,
            } => format!(
                "r{replica} {} #{nth}: {outcome:?}, request +{request_delay_ms} ms, reply +{reply_delay_ms} ms",
                op.name()
            ),
        }
    }
}

/// A command-line flag that adds one fault event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventFlag {
    /// `--pause REPLICA:AT_MS:FOR_MS`.
    Pause,
    /// `--crash REPLICA:AT_MS:RESTART_MS`.
    Crash,
    /// `--stop REPLICA:AT_MS[:CALLERS]`.
    Stop,
    /// `--stop-during REPLICA:OP:NTH[:CALLERS]`.
    StopDuring,
    /// `--hold-rows AT_MS:FOR_MS:ROWS`.
    HoldRows,
    /// `--stall-standby AT_MS:FOR_MS`.
    StallStandby,
    /// `--clock-step REPLICA:AT_MS:DELTA_MS` (DELTA_MS may be negative).
    ClockStep,
    /// `--clock-rate REPLICA:AT_MS:RATE_PERMILLE`.
    ClockRate,
    /// `--db-clock-step AT_MS:DELTA_MS` (DELTA_MS may be negative).
    DbClockStep,
    /// `--partition REPLICA:AT_MS:FOR_MS`.
    Partition,
}

impl EventFlag {
    /// Every event flag, in the order `sim run` adds their events.
    pub const ALL: [EventFlag; 10] = [
        EventFlag::Pause,
        EventFlag::Crash,
        EventFlag::Stop,
        EventFlag::StopDuring,
        EventFlag::HoldRows,
        EventFlag::StallStandby,
        EventFlag::ClockStep,
        EventFlag::ClockRate,
        EventFlag::DbClockStep,
        EventFlag::Partition,
    ];

    /// The flag as typed, with its dashes.
    pub fn flag(self) -> &'static str {
        match self {
            EventFlag::Pause => "--pause",
            EventFlag::Crash => "--crash",
            EventFlag::Stop => "--stop",
            EventFlag::StopDuring => "--stop-during",
            EventFlag::HoldRows => "--hold-rows",
            EventFlag::StallStandby => "--stall-standby",
            EventFlag::ClockStep => "--clock-step",
            EventFlag::ClockRate => "--clock-rate",
            EventFlag::DbClockStep => "--db-clock-step",
            EventFlag::Partition => "--partition",
        }
    }

    /// The flag's value as `--help` names it.
    pub fn value_name(self) -> &'static str {
        match self {
            EventFlag::Pause | EventFlag::Partition => "R:AT:FOR",
            EventFlag::Crash => "R:AT:RESTART",
            EventFlag::Stop => "R:AT[:CALLERS]",
            EventFlag::StopDuring => "R:OP:NTH[:CALLERS]",
            EventFlag::HoldRows => "AT:FOR:ROWS",
            EventFlag::StallStandby => "AT:FOR",
            EventFlag::ClockStep => "R:AT:DELTA",
            EventFlag::ClockRate => "R:AT:RATE",
            EventFlag::DbClockStep => "AT:DELTA",
        }
    }

    /// What the flag does, in one line, with its syntax.
    pub fn help(self) -> &'static str {
        match self {
            EventFlag::Pause => "Pause REPLICA at AT_MS for FOR_MS: `REPLICA:AT_MS:FOR_MS`",
            EventFlag::Crash => {
                "Crash REPLICA at AT_MS, restart after MS: `REPLICA:AT_MS:RESTART_MS`"
            }
            EventFlag::Stop => {
                "Stop REPLICA at AT_MS with CALLERS concurrent calls: `REPLICA:AT_MS[:CALLERS]`"
            }
            EventFlag::StopDuring => {
                "Stop REPLICA when it issues its NTH call of OP: `REPLICA:OP:NTH[:CALLERS]`"
            }
            EventFlag::HoldRows => {
                "Another database client locks the ROWS oldest rows FOR UPDATE at AT_MS for \
                 FOR_MS (deletes skip them): `AT_MS:FOR_MS:ROWS`"
            }
            EventFlag::StallStandby => {
                "The database's synchronous standby stops answering at AT_MS for FOR_MS \
                 (commits wait, holding their locks): `AT_MS:FOR_MS`"
            }
            EventFlag::ClockStep => {
                "Steps replica R's wall clock by DELTA ms (negative: back) at AT_MS; its \
                 timers are not moved: `R:AT_MS:DELTA`"
            }
            EventFlag::ClockRate => {
                "From AT_MS replica R's clocks (readings and timers) run at RATE thousandths \
                 of true time, 100..=10000 (500: half speed): `R:AT_MS:RATE`"
            }
            EventFlag::DbClockStep => {
                "Steps the database's clock by DELTA ms (negative: back) at AT_MS, as a \
                 failover to a host whose clock differs: `AT_MS:DELTA`"
            }
            EventFlag::Partition => {
                "Cuts replica R off from the database at AT_MS for FOR_MS (packets dropped \
                 both ways; TCP delivers what was sent after the heal): `R:AT_MS:FOR_MS`"
            }
        }
    }

    /// What `--help` adds to [`EventFlag::help`], if anything.
    pub fn long_help(self) -> Option<String> {
        match self {
            EventFlag::StopDuring => Some(format!(
                "{}.\nOperations: {}",
                self.help(),
                OpKind::names().join(", ")
            )),
            _ => None,
        }
    }

    /// Whether the flag's value may start with a minus (a step back).
    pub fn takes_negative(self) -> bool {
        matches!(self, EventFlag::ClockStep | EventFlag::DbClockStep)
    }

    /// The event `text` describes; its fields' ranges are the spec's to
    /// judge (`RunSpec::validate`), this only reads the syntax.
    pub fn parse(self, text: &str) -> Result<FaultEvent, String> {
        let flag = self.flag();
        Ok(match self {
            EventFlag::Pause => {
                let [replica, at_ms, for_ms] = numbers(flag, text)?;
                FaultEvent::Pause {
                    replica: small(flag, text, replica)?,
                    at_ms,
                    for_ms,
                }
            }
            EventFlag::Partition => {
                let [replica, at_ms, for_ms] = numbers(flag, text)?;
                FaultEvent::Partition {
                    replica: small(flag, text, replica)?,
                    at_ms,
                    for_ms,
                }
            }
            EventFlag::Crash => {
                let [replica, at_ms, restart_after_ms] = numbers(flag, text)?;
                FaultEvent::Crash {
                    replica: small(flag, text, replica)?,
                    at_ms,
                    restart_after_ms,
                }
            }
            EventFlag::Stop => {
                let (replica, at_ms, callers) = if text.matches(':').count() == 1 {
                    let [replica, at_ms] = numbers(flag, text)?;
                    (replica, at_ms, 1)
                } else {
                    let [replica, at_ms, callers] = numbers(flag, text)?;
                    (replica, at_ms, callers)
                };
                FaultEvent::Stop {
                    replica: small(flag, text, replica)?,
                    at_ms,
                    callers: small(flag, text, callers)?,
                }
            }
            EventFlag::StopDuring => stop_during(text)?,
            EventFlag::HoldRows => {
                let [at_ms, for_ms, rows] = numbers(flag, text)?;
                FaultEvent::HoldRows {
                    at_ms,
                    for_ms,
                    rows: small(flag, text, rows)?,
                }
            }
            EventFlag::StallStandby => {
                let [at_ms, for_ms] = numbers(flag, text)?;
                FaultEvent::StallStandby { at_ms, for_ms }
            }
            EventFlag::ClockStep => {
                let (head, delta) = text.rsplit_once(':').unwrap_or(("", text));
                let [replica, at_ms] = numbers(flag, head)
                    .map_err(|_| format!("{flag} {text:?}: expected REPLICA:AT_MS:DELTA_MS"))?;
                let delta_ms = delta
                    .parse()
                    .map_err(|_| format!("{flag} {text:?}: {delta:?} is not an integer"))?;
                FaultEvent::ClockStep {
                    replica: small(flag, text, replica)?,
                    at_ms,
                    delta_ms,
                }
            }
            EventFlag::DbClockStep => {
                let (at, delta) = text
                    .split_once(':')
                    .ok_or_else(|| format!("{flag} {text:?}: expected AT_MS:DELTA_MS"))?;
                let [at_ms] = numbers(flag, at).map_err(|_| {
                    format!("{flag} {text:?}: {at:?} is not a non-negative integer")
                })?;
                let delta_ms = delta
                    .parse()
                    .map_err(|_| format!("{flag} {text:?}: {delta:?} is not an integer"))?;
                FaultEvent::DbClockStep { at_ms, delta_ms }
            }
            EventFlag::ClockRate => {
                let [replica, at_ms, rate_permille] = numbers(flag, text)?;
                FaultEvent::ClockRate {
                    replica: small(flag, text, replica)?,
                    at_ms,
                    rate_permille,
                }
            }
        })
    }
}

/// Sets the knob `text` (`NAME=VALUE`) names in `faults`.
pub fn set_fault_flag(faults: &mut FaultConfig, text: &str) -> Result<(), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("--fault {text:?}: expected NAME=VALUE"))?;
    let knob = FaultKnob::from_name(name).map_err(|error| format!("--fault: {error}"))?;
    let value: u64 = value
        .parse()
        .map_err(|_| format!("--fault {name}: {value:?} is not a non-negative integer"))?;
    faults
        .set(knob, value)
        .map_err(|problem| format!("--fault faults.{knob}: {problem}"))
}

fn stop_during(text: &str) -> Result<FaultEvent, String> {
    let flag = EventFlag::StopDuring.flag();
    let parts: Vec<&str> = text.split(':').collect();
    if !(3..=4).contains(&parts.len()) {
        return Err(format!(
            "{flag} {text:?}: expected REPLICA:OP:NTH[:CALLERS]"
        ));
    }
    let op = OpKind::from_name(parts[1]).map_err(|error| format!("{flag} {text:?}: {error}"))?;
    let number = |index: usize, default: u32| -> Result<u32, String> {
        let Some(raw) = parts.get(index) else {
            return Ok(default);
        };
        let value = raw
            .parse()
            .map_err(|_| format!("{flag} {text:?}: {raw:?} is not a non-negative integer"))?;
        small(flag, text, value)
    };
    Ok(FaultEvent::StopDuring {
        replica: number(0, 0)?,
        op,
        nth: number(2, 1)?,
        callers: number(3, 1)?,
    })
}

fn numbers<const N: usize>(flag: &str, text: &str) -> Result<[u64; N], String> {
    let values: Vec<u64> = text
        .split(':')
        .map(|part| {
            part.parse()
                .map_err(|_| format!("{flag} {text:?}: {part:?} is not a non-negative integer"))
        })
        .collect::<Result<_, _>>()?;
    values
        .try_into()
        .map_err(|_| format!("{flag} {text:?}: expected {N} numbers separated by ':'"))
}

/// A count or replica number: anything past `u32` is refused here, the
/// field's real range by the spec.
fn small(flag: &str, text: &str, value: u64) -> Result<u32, String> {
    u32::try_from(value).map_err(|_| format!("{flag} {text:?}: {value} is too large"))
}
