//! `sim replay --at`: the world at one instant of a run. The database is
//! read inside the run as it stood after the chosen event (not rebuilt
//! from the history); each replica is what the history shows of it up to
//! that event: its term, process state, clock reading, calls in flight and
//! the lease and token it was last given and last sent.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::db::DbView;
use crate::model::{Actor, EventKind, History, Invocation, LeaseRec, Outcome, RunSpec};
use crate::subject::Sim;
use crate::world::{Moment, RunSlot};

/// The world at one moment of a run.
#[derive(Debug, Clone, Serialize)]
pub struct WorldAt {
    /// The instant, on the run's true time.
    pub at_ms: i64,
    /// The last event the world includes (its sequence number), if any.
    pub seq: Option<usize>,
    /// That event as the timeline prints it.
    pub event: Option<String>,
    /// The database as it stood.
    pub database: DbView,
    /// Each replica, r1 first.
    pub replicas: Vec<ReplicaAt>,
}

/// One replica as the history shows it at the instant.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplicaAt {
    /// Its number, from 1.
    pub replica: u32,
    /// Its latest term (0 before its first acquire).
    pub term: u32,
    /// Whether that term is still going (its report not yet made).
    pub in_term: bool,
    /// `running`, `paused`, `cut-off` (partitioned) or `crashed`.
    pub process: &'static str,
    /// Since when the process is in that state (paused, cut off, crashed).
    pub process_since_ms: Option<i64>,
    /// What its wall clock read at the instant.
    pub clock_ms: i64,
    /// The lease the latest acquire or renewal of this term gave it (what
    /// the worker had to store).
    pub lease: Option<GivenLease>,
    /// The token its latest delete carried.
    pub last_delete_token: Option<u64>,
    /// Rows its deletes reported this term.
    pub rows_this_term: u64,
    /// Calls sent and not yet answered: number, operation, sent at, and
    /// the token or lease they carry.
    pub in_flight: Vec<InFlight>,
    /// Its `stop()` was called.
    pub stop_called: bool,
}

/// A lease a replica was given.
#[derive(Debug, Clone, Serialize)]
pub struct GivenLease {
    /// The lease.
    pub lease: LeaseRec,
    /// When its answer arrived.
    pub given_ms: i64,
}

/// A call sent and not yet answered.
#[derive(Debug, Clone, Serialize)]
pub struct InFlight {
    /// The run-wide call number.
    pub call: u64,
    /// What was asked.
    pub invocation: Invocation,
    /// When it was sent.
    pub sent_ms: i64,
}

/// Runs `spec` and returns the world at `moment`: just after an event, or
/// at an instant (everything before it applied, nothing at it).
pub fn world_at(spec: &RunSpec, moment: Moment) -> Result<WorldAt, String> {
    let slot = RunSlot::capturing(moment);
    let history = Sim::new(spec)
        .run_in(&slot)
        .map_err(|error| error.to_string())?;
    let database = slot.capture();
    let end_ms = history.events.last().map_or(0, |e| e.at_ms);
    let (at_ms, included) = match moment {
        Moment::AfterEvent(seq) => {
            let Some(event) = history.events.get(seq) else {
                return Err(format!(
                    "the run has {} events (0..={}); there is no event {seq}",
                    history.events.len(),
                    history.events.len().saturating_sub(1)
                ));
            };
            (event.at_ms, seq + 1)
        }
        Moment::AtMs(at_ms) if at_ms > end_ms => {
            return Err(format!(
                "the run ends at {end_ms} ms; {at_ms} ms is after it"
            ));
        }
        Moment::AtMs(at_ms) => (
            at_ms,
            history.events.partition_point(|event| event.at_ms < at_ms),
        ),
    };
    let database = database.ok_or("the run ended before the database was read")?;
    let seq = included.checked_sub(1);
    Ok(WorldAt {
        at_ms,
        seq,
        event: seq.map(|seq| history.timeline_line(seq).trim().to_owned()),
        database,
        replicas: replicas_at(&history, included, at_ms),
    })
}

/// A replica's wall clock: a reading at an instant and its rate since.
#[derive(Clone, Copy)]
struct ClockAnchor {
    true_ms: i64,
    reading_ms: i64,
    rate_permille: i64,
}

impl ClockAnchor {
    fn reading_at(&self, at_ms: i64) -> i64 {
        self.reading_ms + (at_ms - self.true_ms) * self.rate_permille / 1_000
    }
}

/// Each replica after the history's first `included` events, its clock
/// read at `at_ms`.
fn replicas_at(history: &History, included: usize, at_ms: i64) -> Vec<ReplicaAt> {
    let mut replicas: BTreeMap<u32, (ReplicaAt, ClockAnchor)> = (1..=history.header.replicas)
        .map(|replica| {
            let anchor = ClockAnchor {
                true_ms: 0,
                reading_ms: history.header.skew_ms(replica),
                rate_permille: 1_000,
            };
            let at = ReplicaAt {
                replica,
                process: "running",
                ..ReplicaAt::default()
            };
            (replica, (at, anchor))
        })
        .collect();
    for event in &history.events[..included] {
        let Actor::Replica(replica) = event.actor else {
            continue;
        };
        let Some((at, anchor)) = replicas.get_mut(&replica) else {
            continue;
        };
        fold(at, anchor, event.at_ms, event.term, &event.kind);
    }
    replicas
        .into_values()
        .map(|(mut at, anchor)| {
            at.clock_ms = anchor.reading_at(at_ms);
            at
        })
        .collect()
}

fn fold(at: &mut ReplicaAt, anchor: &mut ClockAnchor, event_ms: i64, term: u32, kind: &EventKind) {
    let mut set_process = |state: &'static str| {
        at.process = state;
        at.process_since_ms = (state != "running").then_some(event_ms);
    };
    match kind {
        EventKind::Invoke { call, invocation } => {
            if matches!(invocation, Invocation::Acquire) {
                at.term = term;
                at.in_term = true;
                at.lease = None;
                at.last_delete_token = None;
                at.rows_this_term = 0;
            }
            if let Invocation::Delete { token, .. } = invocation {
                at.last_delete_token = Some(*token);
            }
            at.in_flight.push(InFlight {
                call: *call,
                invocation: invocation.clone(),
                sent_ms: event_ms,
            });
        }
        EventKind::Return { call, outcome, .. } => {
            at.in_flight.retain(|flight| flight.call != *call);
            match outcome {
                Outcome::Lease(Some(lease)) => {
                    at.lease = Some(GivenLease {
                        lease: lease.clone(),
                        given_ms: event_ms,
                    });
                }
                Outcome::Deleted(rows) => at.rows_this_term += rows,
                _ => {}
            }
        }
        EventKind::TermEnded { .. } => at.in_term = false,
        EventKind::Paused { .. } => set_process("paused"),
        EventKind::Partitioned { .. } => set_process("cut-off"),
        EventKind::Resumed | EventKind::Healed | EventKind::Restarted => set_process("running"),
        EventKind::Crashed => {
            set_process("crashed");
            // The process is gone, and its calls with it; the database may
            // still be working on their statements.
            at.in_flight.clear();
            at.in_term = false;
        }
        EventKind::StopCalled { .. } => at.stop_called = true,
        EventKind::ClockStepped { to_ms, .. } => {
            anchor.true_ms = event_ms;
            anchor.reading_ms = *to_ms;
        }
        EventKind::ClockRateSet {
            rate_permille,
            reading_ms,
        } => {
            *anchor = ClockAnchor {
                true_ms: event_ms,
                reading_ms: *reading_ms,
                rate_permille: i64::try_from(*rate_permille).unwrap_or(1_000),
            };
        }
        _ => {}
    }
}
