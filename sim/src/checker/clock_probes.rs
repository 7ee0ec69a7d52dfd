//! Coverage probes for clocks that lie: steps and rates, a term that
//! outlived a step, a guard that gave up because its clock jumped, a
//! renewal a slow clock sent after its lease expired, and the database's
//! clock stepped with a grant after it.

use std::collections::BTreeMap;

use crate::model::{Actor, EventKind, History, Invocation, LossRec, OpKind, TermEndRec};

/// One replica's clock and term, as far as the probes need them.
#[derive(Default)]
struct Seen {
    /// Its clocks' rate, thousandths of true time (0: never set, so 1000).
    rate_permille: u64,
    /// A term is running (from its acquire to its end).
    in_term: bool,
    /// Its wall clock was stepped during the running term (forward?).
    stepped: Option<bool>,
    /// The newest lease expiry it held, on the database's clock.
    held_until_ms: Option<i64>,
}

/// Counts the clock probes `history` reached into `hits`.
pub(super) fn count(history: &History, hits: &mut BTreeMap<&'static str, u64>) {
    let mut hit = |name: &'static str| {
        *hits.get_mut(name).expect("a listed probe") += 1;
    };
    let mut replicas: BTreeMap<u32, Seen> = BTreeMap::new();
    let mut db_stepped = false;
    // Expiries are on the database's clock, events on the run's time.
    let db_clock = super::clocks::HostClock::of_database(history);
    for event in &history.events {
        match (&event.actor, &event.kind) {
            (Actor::Db, EventKind::DbClockStepped { .. }) => {
                hit("db-clock-stepped");
                db_stepped = true;
            }
            (Actor::Lease, EventKind::Granted { .. }) if db_stepped => {
                hit("grant-after-a-db-clock-step");
            }
            _ => {}
        }
        let Actor::Replica(replica) = event.actor else {
            continue;
        };
        let seen = replicas.entry(replica).or_default();
        match &event.kind {
            EventKind::ClockStepped { from_ms, to_ms } => {
                hit("clock-stepped");
                if seen.in_term {
                    seen.stepped = Some(seen.stepped.unwrap_or(false) || to_ms > from_ms);
                }
            }
            EventKind::ClockRateSet { rate_permille, .. } => {
                hit("clock-rate-changed");
                seen.rate_permille = *rate_permille;
            }
            EventKind::Invoke { invocation, .. } => match invocation {
                Invocation::Acquire => {
                    (seen.in_term, seen.stepped) = (true, None);
                }
                Invocation::Delete { .. } if seen.stepped.is_some() => {
                    hit("term-outlived-a-clock-step");
                }
                Invocation::Renew { lease }
                    if (1..1_000).contains(&seen.rate_permille)
                        && db_clock.reading_at(event.at_ms) >= lease.expires_at_ms =>
                {
                    hit("renewal-sent-late-by-a-slow-clock");
                }
                _ => {}
            },
            EventKind::Return {
                op: OpKind::Acquire | OpKind::Renew,
                outcome: crate::model::Outcome::Lease(Some(lease)),
                ..
            } => seen.held_until_ms = Some(lease.expires_at_ms),
            EventKind::TermEnded { end, .. } => {
                let gave_up = matches!(
                    end,
                    TermEndRec::LeadershipLost(
                        LossRec::ExpiredBeforeRenewal | LossRec::LeaseTooShort
                    )
                );
                let now_ms = db_clock.reading_at(event.at_ms);
                let still_valid = seen.held_until_ms.is_some_and(|until| now_ms < until);
                if gave_up && still_valid && seen.stepped == Some(true) {
                    hit("guard-gave-up-after-a-step-forward");
                }
                (seen.in_term, seen.stepped) = (false, None);
            }
            // A crash needs no reset of its own: a restarted replica's next
            // term begins with an acquire, before anything reads these.
            _ => {}
        }
    }
}
