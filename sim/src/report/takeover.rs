//! Takeover time: the plans that stage a fault on the lease holder (frozen,
//! cut off, crashed, its clock stepped), the time from the fault until another
//! replica is granted the lease, read from a history, and the bound the
//! formula in `worker/README.md` ("A stalled client cannot hold the
//! cluster") gives it.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::model::{Actor, EventKind, FaultEvent, History, Invocation, RunSpec};

/// What strikes the holder (replica 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Story {
    /// Frozen for longer than the lease and the server's bounds (a GC
    /// pause, SIGSTOP): often between a delete's fence and its commit,
    /// holding the lease row's share lock.
    Frozen,
    /// Cut off from the database for longer than the bound: its calls
    /// time out, and what it sent reaches the server only after the heal.
    Partitioned,
    /// Killed, and not restarted within the run.
    Crashed,
    /// Its wall clock stepped forward past the lease's expiry (NTP, `date
    /// -s`): it stops renewing and gives the lease up.
    ClockStepped,
}

impl Story {
    /// Every story, in the table's order.
    pub const ALL: [Story; 4] = [
        Story::Frozen,
        Story::Partitioned,
        Story::Crashed,
        Story::ClockStepped,
    ];

    /// The story's name on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Story::Frozen => "frozen",
            Story::Partitioned => "partitioned",
            Story::Crashed => "crashed",
            Story::ClockStepped => "clock-stepped",
        }
    }

    /// The story named `name`.
    pub fn named(name: &str) -> Option<Story> {
        Story::ALL.into_iter().find(|story| story.name() == name)
    }
}

/// How long replica 2 is held at the start, so that replica 1 takes the
/// first lease.
const SECOND_REPLICA_LATE_MS: u64 = 300;
/// The window the fault lands in: inside replica 1's first term.
const FAULT_AT_MS: std::ops::RangeInclusive<u64> = 500..=1_300;

/// The plan of one run of `story`: two replicas, a backlog that keeps the
/// holder deleting, the simulator's default settings and bounds, the fault
/// on replica 1 at an instant drawn from `seed`, and time enough for any
/// takeover within the bound.
pub fn story_plan(story: Story, seed: u64) -> (RunSpec, u64) {
    let mut draw = ChaCha8Rng::seed_from_u64(seed ^ 0x7A4E_0FE5);
    let at_ms = draw.gen_range(FAULT_AT_MS);
    let mut spec = RunSpec {
        seed,
        replicas: 2,
        backlog_rows: 3_000,
        boundary_rows: 0,
        arrivals_per_sec: 0,
        ..RunSpec::default()
    };
    let bound_ms = bound_ms(&spec);
    let fault = match story {
        // Past the bound, so that no takeover is the holder's own return,
        // and not much longer: a run's stop waits for a frozen process.
        Story::Frozen => FaultEvent::Pause {
            replica: 1,
            at_ms,
            for_ms: bound_ms + 500,
        },
        Story::Partitioned => FaultEvent::Partition {
            replica: 1,
            at_ms,
            for_ms: bound_ms + 500,
        },
        Story::Crashed => FaultEvent::Crash {
            replica: 1,
            at_ms,
            restart_after_ms: bound_ms + 500,
        },
        Story::ClockStepped => FaultEvent::ClockStep {
            replica: 1,
            at_ms,
            delta_ms: i64::try_from(2 * spec.worker.lease_ttl_ms).expect("a TTL"),
        },
    };
    spec.events = vec![
        FaultEvent::Pause {
            replica: 2,
            at_ms: 0,
            for_ms: SECOND_REPLICA_LATE_MS,
        },
        fault,
    ];
    spec.duration_ms = at_ms + bound_ms + 1_000;
    (spec, at_ms)
}

/// The bound in `worker/README.md`: a successor is granted at most
/// max(TTL, C + S + I + W)
/// after the holder stopped, plus its own retry pause (the longer of its
/// term interval and its loss backoff, with the jitter).
pub fn bound_ms(spec: &RunSpec) -> u64 {
    let w = &spec.worker;
    let lock_ms = spec.rpc_timeout_ms
        + spec.statement_timeout_ms
        + spec.idle_in_transaction_timeout_ms
        + spec.db_commit_ms_max;
    let retry_ms = w.term_interval_ms.max(w.loss_backoff_ms) + w.term_jitter_ms_max;
    w.lease_ttl_ms.max(lock_ms) + retry_ms
}

/// What one run's history says about its takeover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Takeover {
    /// Replica 1 held the lease when the fault struck (otherwise the run
    /// does not measure this story).
    pub holder_at_fault: bool,
    /// Replica 1 had a delete out when the fault struck.
    pub in_delete: bool,
    /// From the fault until a new term was granted (an acquire, not a
    /// renewal), if one was.
    pub after_ms: Option<u64>,
    /// That term went to replica 1 again (only a holder that lived
    /// through its fault, as a stepped clock's, can take it back).
    pub same_holder: bool,
}

/// Reads the takeover of a fault at `at_ms` from `history`.
pub fn takeover(history: &History, at_ms: u64) -> Takeover {
    let at_ms = i64::try_from(at_ms).unwrap_or(i64::MAX);
    let mut holder: Option<(String, i64)> = None;
    let mut deletes_out = Vec::new();
    let mut acquires = Vec::new();
    let mut holder_at_fault = None;
    for event in &history.events {
        if holder_at_fault.is_none() && event.at_ms >= at_ms {
            let held = holder
                .as_ref()
                .is_some_and(|(owner, expires)| owner == "r1" && *expires > at_ms);
            holder_at_fault = Some((held, !deletes_out.is_empty()));
        }
        match &event.kind {
            EventKind::Granted { call, lease } => {
                let struck = holder_at_fault.filter(|_| acquires.contains(call));
                if let Some((held, in_delete)) = struck {
                    return Takeover {
                        holder_at_fault: held,
                        in_delete,
                        after_ms: u64::try_from(event.at_ms - at_ms).ok(),
                        same_holder: lease.owner == "r1",
                    };
                }
                holder = Some((lease.owner.clone(), lease.expires_at_ms));
            }
            EventKind::Invoke {
                call,
                invocation: Invocation::Acquire,
            } => acquires.push(*call),
            EventKind::Released { cleared: true, .. } | EventKind::Revoked { .. } => holder = None,
            EventKind::Invoke {
                call,
                invocation: Invocation::Delete { .. },
            } if event.actor == Actor::Replica(1) => deletes_out.push(*call),
            EventKind::Return { call, .. } => deletes_out.retain(|out| out != call),
            EventKind::Crashed if event.actor == Actor::Replica(1) => deletes_out.clear(),
            _ => {}
        }
    }
    let (held, in_delete) = holder_at_fault.unwrap_or((false, false));
    Takeover {
        holder_at_fault: held,
        in_delete,
        after_ms: None,
        same_holder: false,
    }
}

/// Minimum, median, 90th percentile and maximum of `samples_ms`.
pub fn spread(samples_ms: &[u64]) -> Option<[u64; 4]> {
    let mut sorted = samples_ms.to_vec();
    sorted.sort_unstable();
    let at = |fraction: f64| {
        let index = ((sorted.len() - 1) as f64 * fraction).round() as usize;
        sorted[index]
    };
    (!sorted.is_empty()).then(|| [sorted[0], at(0.5), at(0.9), sorted[sorted.len() - 1]])
}

/// What one side (the simulator, or PostgreSQL) measured for one story:
/// takeover times and what struck when.
#[derive(Default)]
pub struct TakeoverTally {
    /// Runs tallied.
    pub runs: u64,
    /// Runs whose fault struck replica 1 while it held the lease.
    pub measured: u64,
    /// Of those, runs whose fault struck during a delete.
    pub in_delete: u64,
    /// Of those, runs with no new term within the run.
    pub no_takeover: u64,
    /// Of those, runs whose new term went to replica 1 again.
    pub same_holder: u64,
    /// The takeover times measured, in ms.
    pub samples_ms: Vec<u64>,
}

impl TakeoverTally {
    /// Tallies one run's takeover.
    pub fn add(&mut self, seen: Takeover) {
        self.runs += 1;
        if !seen.holder_at_fault {
            return;
        }
        self.measured += 1;
        self.in_delete += u64::from(seen.in_delete);
        self.same_holder += u64::from(seen.same_holder && seen.after_ms.is_some());
        match seen.after_ms {
            Some(after_ms) => self.samples_ms.push(after_ms),
            None => self.no_takeover += 1,
        }
    }

    /// One line: min / median / p90 / max, and what struck when.
    pub fn cell(&self) -> String {
        match spread(&self.samples_ms) {
            Some([min, median, p90, max]) => format!(
                "{min} / {median} / {p90} / {max} ({} of {} runs{}{}{})",
                self.samples_ms.len(),
                self.runs,
                if self.in_delete > 0 {
                    format!(", {} struck in a delete", self.in_delete)
                } else {
                    String::new()
                },
                if self.same_holder > 0 {
                    format!(", {} retaken by replica 1", self.same_holder)
                } else {
                    String::new()
                },
                if self.no_takeover > 0 {
                    format!(", {} NEVER taken over", self.no_takeover)
                } else {
                    String::new()
                }
            ),
            None if self.runs == 0 => "not run".to_owned(),
            None => format!("no takeover measured ({} runs)", self.runs),
        }
    }
}
