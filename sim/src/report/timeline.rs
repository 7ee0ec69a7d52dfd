//! The fixed-column text timeline of a history, for people to read.

use std::fmt::Write as _;

use crate::model::{Actor, EventKind, History, Invocation, LeaseRec, Outcome};

impl History {
    /// The fixed-column text timeline; see [`TIMELINE_COLUMNS`].
    pub fn timeline(&self) -> String {
        let mut out = String::from(TIMELINE_COLUMNS);
        out.push('\n');
        for seq in 0..self.events.len() {
            out.push_str(&self.timeline_line(seq));
            out.push('\n');
        }
        out
    }

    /// One event as a timeline line.
    pub fn timeline_line(&self, seq: usize) -> String {
        let event = &self.events[seq];
        let (name, token, detail) = describe(&event.kind);
        let actor = match event.actor {
            Actor::Replica(n) => format!("r{n}"),
            Actor::Lease => "lease".into(),
            Actor::Db => "db".into(),
            Actor::World => "world".into(),
        };
        let term = if event.term == 0 {
            "-".into()
        } else {
            event.term.to_string()
        };
        let token = token.map_or("-".into(), |t| format!("#{t}"));
        let mut line = String::new();
        let _ = write!(
            line,
            "{seq:>5} {:>8} {actor:<5} {term:>4} {name:<15} {token:>5}  {detail}",
            event.at_ms
        );
        line.trim_end().to_owned()
    }
}
/// The timeline's header line: sequence number, simulated time (ms), actor,
/// the replica's term, the event, the fencing token it carries, and details.
pub const TIMELINE_COLUMNS: &str = "  seq  time_ms actor term event           token  detail";

fn lease_text(lease: &LeaseRec) -> String {
    format!(
        "{}#{} exp {}",
        lease.owner, lease.token, lease.expires_at_ms
    )
}

fn describe(kind: &EventKind) -> (String, Option<u64>, String) {
    use EventKind as K;
    match kind {
        K::Invoke { call, invocation } => {
            let name = format!("> {}", invocation.kind().name());
            match invocation {
                Invocation::Acquire => (name, None, format!("call {call}")),
                Invocation::Renew { lease } | Invocation::Release { lease } => (
                    name,
                    Some(lease.token),
                    format!("call {call} {}", lease_text(lease)),
                ),
                Invocation::Delete {
                    older_than_ms,
                    limit,
                    token,
                } => (
                    name,
                    Some(*token),
                    format!("call {call} older_than {older_than_ms} limit {limit}"),
                ),
            }
        }
        K::Return { call, op, outcome } => {
            let name = format!("< {}", op.name());
            match outcome {
                Outcome::Lease(Some(lease)) => (
                    name,
                    Some(lease.token),
                    format!("call {call} {}", lease_text(lease)),
                ),
                Outcome::Lease(None) => (name, None, format!("call {call} null")),
                Outcome::Done => (name, None, format!("call {call} ok")),
                Outcome::Deleted(n) => (name, None, format!("call {call} deleted {n}")),
                Outcome::Failed { kind, detail } => {
                    (name, None, format!("call {call} FAILED {kind}: {detail}"))
                }
            }
        }
        K::Granted { call, lease } => (
            "granted".into(),
            Some(lease.token),
            format!("call {call} {}", lease_text(lease)),
        ),
        K::Refused { call, op } => ("refused".into(), None, format!("call {call} {}", op.name())),
        K::Revoked { call, lease } => (
            "revoked".into(),
            Some(lease.token),
            format!("call {call} {}", lease_text(lease)),
        ),
        K::Released {
            call,
            lease,
            cleared,
        } => {
            let effect = if *cleared {
                "cleared"
            } else {
                "no-op (not current)"
            };
            (
                "released".into(),
                Some(lease.token),
                format!("call {call} {effect}"),
            )
        }
        K::Deleted {
            call,
            token,
            fenced_at_ms,
            older_than_ms,
            rows,
            ..
        } => {
            let span = match (rows.first(), rows.last()) {
                (Some(first), Some(last)) => {
                    format!(" created {}..{}", first.created_at_ms, last.created_at_ms)
                }
                _ => String::new(),
            };
            (
                "deleted".into(),
                Some(*token),
                format!(
                    "call {call} {} rows older than {older_than_ms}{span}, fenced at {fenced_at_ms}",
                    rows.len()
                ),
            )
        }
        K::Fenced {
            call,
            token,
            reason,
        } => (
            "FENCED".into(),
            Some(*token),
            format!("call {call} {reason}"),
        ),
        K::LockWait { call, op, behind } => {
            let behind: Vec<String> = behind.iter().map(|c| format!("call {c}")).collect();
            (
                "waits".into(),
                None,
                format!("call {call} {} behind {}", op.name(), behind.join(", ")),
            )
        }
        K::RowsHeld { rows, for_ms } => (
            "rows held".into(),
            None,
            format!("another client locks {rows} oldest rows for {for_ms} ms"),
        ),
        K::RowsFreed { rows } => ("rows freed".into(), None, format!("{rows} rows unlocked")),
        K::StandbyStalled { for_ms } => (
            "STANDBY".into(),
            None,
            format!("the synchronous standby stops answering for {for_ms} ms: commits wait"),
        ),
        K::StandbyResumed => ("standby".into(), None, "the standby answers again".into()),
        K::Spinning { steps, window_ms } => (
            "SPINNING".into(),
            None,
            format!(
                "{steps} steps within {window_ms} ms of simulated time: the run is stopped here"
            ),
        ),
        K::Panicked { message } => (
            "PANICKED".into(),
            None,
            format!("the worker panicked: {message}; the run is stopped here"),
        ),
        K::ClockStepped { from_ms, to_ms } => (
            "CLOCK".into(),
            None,
            format!(
                "wall clock stepped {:+} ms: read {from_ms}, reads {to_ms}",
                to_ms - from_ms
            ),
        ),
        K::DbClockStepped { from_ms, to_ms } => (
            "CLOCK".into(),
            None,
            format!(
                "the database's clock stepped {:+} ms: read {from_ms}, reads {to_ms}",
                to_ms - from_ms
            ),
        ),
        K::ClockRateSet {
            rate_permille,
            reading_ms,
        } => (
            "CLOCK".into(),
            None,
            format!(
                "clocks run at {}.{:03}x from reading {reading_ms}",
                rate_permille / 1_000,
                rate_permille % 1_000
            ),
        ),
        K::RolledBack { call, rows } => (
            "rolled back".into(),
            None,
            format!("call {call}, {rows} rows kept"),
        ),
        K::Aborted { call, reason } => ("ABORTED".into(), None, format!("call {call} {reason}")),
        K::TermEnded {
            end,
            rows,
            batches,
            renewals,
            release,
        } => (
            "term ended".into(),
            None,
            format!(
                "{end}: {rows} rows in {batches} batches, {renewals} renewals, release {release}"
            ),
        ),
        K::StopCalled { caller } => ("stop called".into(), None, format!("caller {caller}")),
        K::StopResolved { caller } => ("stop resolved".into(), None, format!("caller {caller}")),
        K::Paused { for_ms } => ("PAUSED".into(), None, format!("for {for_ms} ms")),
        K::Resumed => ("resumed".into(), None, String::new()),
        K::Partitioned { for_ms } => (
            "CUT OFF".into(),
            None,
            format!("from the database for {for_ms} ms"),
        ),
        K::Healed => ("reconnected".into(), None, "the network heals".into()),
        K::Crashed => ("CRASHED".into(), None, String::new()),
        K::Restarted => ("restarted".into(), None, String::new()),
        K::Final {
            rows_left,
            rows_inserted,
            stale_rows_left,
            rows_early_by_true_time,
        } => {
            let early = if *rows_early_by_true_time > 0 {
                format!(
                    "; {rows_early_by_true_time} deleted younger than the retention by true \
                     time"
                )
            } else {
                String::new()
            };
            (
                "final".into(),
                None,
                format!(
                    "{rows_left} rows left ({rows_inserted} written during the run, \
                     {stale_rows_left} stale){early}"
                ),
            )
        }
    }
}
