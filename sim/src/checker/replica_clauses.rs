//! Per-replica checks: what each worker called, with what, and when, term by
//! term (ACQ, REN, FEN-1, CUT, CAP, REL-1, REL-3, STP, LIVE-2).

use std::collections::BTreeMap;

use super::clocks::HostClock;
use super::findings::Findings;
use crate::model::{
    Actor, Event, EventKind, FailureKind, Header, History, Invocation, LeaseRec, OpKind, Outcome,
};

/// What the checker knows about one term of one replica.
#[derive(Debug, Default)]
struct Term {
    number: u32,
    /// The acquire's invoke, and its time.
    started: usize,
    started_at_ms: i64,
    /// The newest lease granted to the term, and the event that granted it.
    newest: Option<(LeaseRec, usize)>,
    granted_at_ms: Option<i64>,
    /// A renewal answered null (`true`) or failed (`false`): leadership lost.
    loss: Option<(usize, bool)>,
    cutoff: Option<(i64, usize)>,
    rows: u64,
    /// Delete replies with a count.
    batches: u32,
    /// Renewal replies granting this replica a newer token than it sent.
    renewals: u32,
    /// The batch after which no delete may follow (short, or the cap).
    finished: Option<usize>,
    released: Option<usize>,
    /// Tokens the repository refused a delete for, with the refusal.
    fenced: BTreeMap<u64, usize>,
    /// Calls in flight: call -> (op, invoke seq).
    in_flight: BTreeMap<u64, (OpKind, usize)>,
}

/// One process lifetime of a replica: crashes start a new one.
#[derive(Debug, Default)]
struct Incarnation {
    term: Option<Term>,
    stop_called: Option<usize>,
    stop_resolved: Option<usize>,
    /// caller -> (StopCalled seq, time).
    stops: BTreeMap<u32, (usize, i64)>,
}

struct Walker<'a> {
    history: &'a History,
    /// The database's clock over the run.
    db_clock: &'a HostClock,
    replica: u32,
    now: Incarnation,
    /// The replica's wall clock so far: its skew, steps and rates.
    clock: HostClock,
    found: &'a mut Findings,
}

pub(super) fn check(history: &History, found: &mut Findings) {
    let db_clock = HostClock::of_database(history);
    // A run stopped by a spin or a panic ends mid-flight: what it never
    // got to finish is LIVE-3's or LIVE-4's finding, not another clause's.
    let ran_to_the_end = !stopped_early(history);
    for replica in 1..=history.header.replicas {
        let skew_ms = history.header.skew_ms(replica);
        let mut walker = Walker {
            history,
            db_clock: &db_clock,
            replica,
            now: Incarnation::default(),
            clock: HostClock::new(skew_ms),
            found,
        };
        for (seq, event) in history.events.iter().enumerate() {
            if event.actor == Actor::Replica(replica) {
                walker.on_event(seq, event);
            }
        }
        if ran_to_the_end {
            walker.finish();
        }
    }
}

/// Whether a replica's spin (LIVE-3) or panic (LIVE-4) stopped the run.
fn stopped_early(history: &History) -> bool {
    history.events.iter().any(|event| {
        matches!(
            event.kind,
            EventKind::Spinning { .. } | EventKind::Panicked { .. }
        )
    })
}

/// LIVE-3 and LIVE-4: every replica lets simulated time pass and never
/// panics; one that spun or panicked stopped the run.
pub(super) fn check_spins(history: &History, found: &mut Findings) {
    for (seq, event) in history.events.iter().enumerate() {
        let Actor::Replica(replica) = event.actor else {
            continue;
        };
        match &event.kind {
            EventKind::Spinning { steps, window_ms } => {
                let message = format!(
                    "r{replica} took {steps} steps within {window_ms} ms of simulated time: it \
                     spins without waiting, and the run was stopped at {} ms",
                    event.at_ms
                );
                found.flag("LIVE-3", &[seq], message);
            }
            EventKind::Panicked { message } => {
                let message = format!(
                    "r{replica}'s worker panicked at {} ms, and the run was stopped there: \
                     {message}",
                    event.at_ms
                );
                found.flag("LIVE-4", &[seq], message);
            }
            _ => {}
        }
    }
}

impl Walker<'_> {
    fn on_event(&mut self, seq: usize, event: &Event) {
        self.clock.observe(event.at_ms, &event.kind);
        match &event.kind {
            EventKind::Invoke { call, invocation } => self.on_invoke(seq, event, *call, invocation),
            EventKind::Return { call, op, outcome } => self.on_return(seq, *call, *op, outcome),
            EventKind::TermEnded {
                rows,
                batches,
                renewals,
                ..
            } => {
                self.on_term_end(seq, (*rows, *batches, *renewals));
            }
            EventKind::StopCalled { caller } => {
                self.now.stop_called.get_or_insert(seq);
                self.now.stops.insert(*caller, (seq, event.at_ms));
            }
            EventKind::StopResolved { caller } => self.on_stop_resolved(seq, event.at_ms, *caller),
            // A restart kills whatever still ran, even without a crash first.
            EventKind::Crashed | EventKind::Restarted => self.now = Incarnation::default(),
            _ => {}
        }
    }

    fn on_invoke(&mut self, seq: usize, event: &Event, call: u64, invocation: &Invocation) {
        let op = invocation.kind();
        if op == OpKind::Acquire {
            self.start_term(seq, event.term);
        }
        if op != OpKind::Release
            && let Some(stop) = self.now.stop_called
        {
            let clause = match (op, self.now.stop_resolved) {
                (OpKind::Acquire, Some(_)) => "STP-6",
                (OpKind::Renew, _) => "STP-2",
                _ => "STP-1",
            };
            let message = format!("{} issued after stop() was called", op.name());
            self.found.flag(clause, &[stop, seq], message);
        }
        let Some(term) = self.now.term.as_mut() else {
            self.found
                .flag("ACQ-1", &[seq], format!("{} outside any term", op.name()));
            return;
        };
        if op != OpKind::Acquire && term.newest.is_none() {
            let message = format!(
                "{} before any acquire granted a lease in term {}",
                op.name(),
                term.number
            );
            let clause = if op == OpKind::Release {
                "REL-1"
            } else {
                "ACQ-1"
            };
            self.found.flag(clause, &[term.started, seq], message);
        }
        match invocation {
            Invocation::Acquire => {}
            Invocation::Renew { lease } => check_renew(term, seq, lease, self.found),
            Invocation::Delete {
                older_than_ms,
                limit,
                token,
            } => {
                let header = &self.history.header;
                let ctx = DeleteCtx {
                    header,
                    clock: &self.clock,
                    db_clock: self.db_clock,
                    at_ms: event.at_ms,
                };
                check_delete(
                    term,
                    seq,
                    (*older_than_ms, *limit, *token),
                    &ctx,
                    self.found,
                );
            }
            Invocation::Release { lease } => {
                if let Some((newest, at)) = &term.newest
                    && newest != lease
                {
                    let message = format!(
                        "released token {} while holding newer token {}",
                        lease.token, newest.token
                    );
                    self.found.flag("REL-1", &[*at, seq], message);
                }
                term.released.get_or_insert(seq);
            }
        }
        term.in_flight.insert(call, (op, seq));
    }

    fn start_term(&mut self, seq: usize, number: u32) {
        if let Some(previous) = self.now.term.take() {
            let message = format!("term {number} began before term {} ended", previous.number);
            self.found.flag("STP-5", &[previous.started, seq], message);
        }
        self.now.term = Some(Term {
            number,
            started: seq,
            started_at_ms: self.history.events[seq].at_ms,
            ..Term::default()
        });
    }

    fn on_return(&mut self, seq: usize, call: u64, op: OpKind, outcome: &Outcome) {
        let Some(term) = self.now.term.as_mut() else {
            return;
        };
        let Some((_, invoked)) = term.in_flight.remove(&call) else {
            return;
        };
        let at_ms = self.history.events[seq].at_ms;
        match (op, outcome) {
            // A lease naming another owner is not ours to act on (a faulty
            // lease service's reply); the term has no lease from it.
            (OpKind::Acquire | OpKind::Renew, Outcome::Lease(Some(lease)))
                if lease.owner != format!("r{}", self.replica) => {}
            (OpKind::Acquire | OpKind::Renew, Outcome::Lease(Some(lease))) => {
                if op == OpKind::Renew && lease.token > sent_token(&self.history.events[invoked]) {
                    term.renewals += 1;
                }
                let newer = term
                    .newest
                    .as_ref()
                    .is_none_or(|(held, _)| lease.token > held.token);
                if newer {
                    term.newest = Some((lease.clone(), seq));
                }
                if op == OpKind::Acquire {
                    term.granted_at_ms = Some(at_ms);
                }
            }
            (OpKind::Renew, Outcome::Lease(None)) => {
                term.loss.get_or_insert((seq, true));
            }
            (OpKind::Renew, Outcome::Failed { .. }) => {
                term.loss.get_or_insert((seq, false));
            }
            (
                OpKind::Delete,
                Outcome::Failed {
                    kind: FailureKind::Fenced,
                    ..
                },
            ) => {
                let token = delete_token(&self.history.events[invoked]);
                term.fenced.entry(token).or_insert(seq);
            }
            (OpKind::Delete, Outcome::Deleted(rows)) => {
                term.rows += rows;
                term.batches += 1;
                let limit = match &self.history.events[invoked].kind {
                    EventKind::Invoke {
                        invocation: Invocation::Delete { limit, .. },
                        ..
                    } => *limit,
                    _ => unreachable!("a delete's invoke carries its limit"),
                };
                if *rows < u64::from(limit)
                    || term.rows >= u64::from(self.history.header.term_row_cap)
                {
                    term.finished.get_or_insert(seq);
                }
            }
            _ => {}
        }
    }

    fn on_term_end(&mut self, seq: usize, reported: (u64, u32, u32)) {
        let Some(term) = self.now.term.take() else {
            return;
        };
        let observed = (term.rows, term.batches, term.renewals);
        if reported != observed {
            let message = format!(
                "term {} reported (rows, batches, renewals) = {reported:?}; its replies say {observed:?}",
                term.number
            );
            self.found.flag("RPT-1", &[term.started, seq], message);
        }
        for (&call, &(op, at)) in &term.in_flight {
            // An abandoned renewal is an unobserved result (REN-3); any other
            // abandoned call is work the term did not await (STP-3).
            let clause = if op == OpKind::Renew {
                "REN-3"
            } else {
                "STP-3"
            };
            let message = format!(
                "term {} ended with {} call {call} still in flight",
                term.number,
                op.name()
            );
            self.found.flag(clause, &[at, seq], message);
        }
        let owes_release = term.newest.is_some() && term.loss.is_none();
        if owes_release && term.released.is_none() {
            let (clause, why) = match self.now.stop_called {
                Some(_) => ("STP-4", "stopped"),
                None => ("REL-3", "ended"),
            };
            let (_, granted) = term.newest.as_ref().expect("owes a release");
            let message = format!(
                "term {} {why} holding its lease without releasing it",
                term.number
            );
            self.found.flag(clause, &[*granted, seq], message);
        }
    }

    fn on_stop_resolved(&mut self, seq: usize, at_ms: i64, caller: u32) {
        self.now.stop_resolved.get_or_insert(seq);
        if let Some(term) = &self.now.term {
            let message = format!(
                "stop() resolved while term {} was still running",
                term.number
            );
            self.found.flag("STP-5", &[term.started, seq], message);
        }
        if let Some((called, called_ms)) = self.now.stops.remove(&caller) {
            let took_ms = at_ms - called_ms;
            let bound = self.history.header.stop_bound_ms;
            if took_ms > i64::try_from(bound).unwrap_or(i64::MAX) {
                let message = format!("stop() took {took_ms} ms, more than the {bound} ms bound");
                self.found.flag("LIVE-2", &[called, seq], message);
            }
        }
    }

    fn finish(&mut self) {
        for (caller, (called, _)) in std::mem::take(&mut self.now.stops) {
            let message = format!("stop() caller {caller} of r{} never resolved", self.replica);
            self.found.flag("LIVE-2", &[called], message);
        }
    }
}

fn check_renew(term: &mut Term, seq: usize, lease: &LeaseRec, found: &mut Findings) {
    if let Some((&call, &(_, at))) = term
        .in_flight
        .iter()
        .find(|(_, (op, _))| *op == OpKind::Renew)
    {
        found.flag(
            "REN-1",
            &[at, seq],
            format!("renewal issued while renewal call {call} was in flight"),
        );
    }
    if let Some((newest, at)) = &term.newest
        && newest != lease
    {
        let message = format!(
            "renewed token {} while holding newer token {}",
            lease.token, newest.token
        );
        found.flag("REN-2", &[*at, seq], message);
    }
    if let Some((lost, _)) = term.loss {
        found.flag(
            "REN-3",
            &[lost, seq],
            "renewal issued after leadership was lost",
        );
    }
}

struct DeleteCtx<'a> {
    header: &'a Header,
    clock: &'a HostClock,
    db_clock: &'a HostClock,
    at_ms: i64,
}

fn check_delete(
    term: &mut Term,
    seq: usize,
    (older_than_ms, limit, token): (i64, u32, u64),
    ctx: &DeleteCtx<'_>,
    found: &mut Findings,
) {
    if let Some((lost, _)) = term.loss {
        found.flag(
            "REN-3",
            &[lost, seq],
            "delete issued after leadership was lost",
        );
    }
    if let Some((newest, at)) = &term.newest
        && newest.token != token
    {
        let message = format!(
            "delete carried token {token} while the newest held was {}",
            newest.token
        );
        found.flag("FEN-1", &[*at, seq], message);
    }
    if let Some(&refused) = term.fenced.get(&token) {
        let message = format!("delete sent token {token} again after the repository refused it");
        found.flag("FEN-1", &[refused, seq], message);
    }
    let retention_ms = i64::try_from(ctx.header.retention_ms).unwrap_or(i64::MAX);
    match term.cutoff {
        Some((cutoff, at)) if cutoff != older_than_ms => {
            let message =
                format!("delete used cutoff {older_than_ms}, the term's first used {cutoff}");
            found.flag("CUT-1", &[at, seq], message);
        }
        Some(_) => {}
        None => {
            // Captured on the database's clock by the grant (between the
            // acquire's invoke and the first delete), or on the worker's
            // own clock after the acquire answered.
            // On the replica's own clock the capture read `on_db_ms` too:
            // the clock (skewed, stepped, fast or slow) must have read it
            // between the grant and the first delete.
            let on_db_ms = older_than_ms + retention_ms;
            let by_grant = ctx
                .db_clock
                .read_within(on_db_ms, term.started_at_ms, ctx.at_ms);
            if let Some(granted_ms) = term.granted_at_ms
                && !by_grant
                && !ctx.clock.read_within(on_db_ms, granted_ms, ctx.at_ms)
            {
                let message = format!(
                    "cutoff {older_than_ms} was captured when a clock read {on_db_ms} ms: \
                     the database's did not between acquire ({} ms) and first delete ({} ms), \
                     nor did the replica's between its grant and that delete",
                    term.started_at_ms, ctx.at_ms
                );
                found.flag("CUT-1", &[term.started, seq], message);
            }
            term.cutoff = Some((older_than_ms, seq));
        }
    }
    let cap = u64::from(ctx.header.term_row_cap).min(1_000);
    let allowance = cap.saturating_sub(term.rows);
    if limit > ctx.header.batch_size.min(200) || u64::from(limit) > allowance {
        let message = format!(
            "batch asked for {limit} rows with {} deleted of the {cap} cap",
            term.rows
        );
        found.flag("CAP-1", &[term.started, seq], message);
    }
    if let Some(finished) = term.finished {
        found.flag(
            "CAP-1",
            &[finished, seq],
            "delete issued after the term's short or final batch",
        );
    }
}

/// The token a delete invoke carried.
fn delete_token(invoke: &Event) -> u64 {
    match &invoke.kind {
        EventKind::Invoke {
            invocation: Invocation::Delete { token, .. },
            ..
        } => *token,
        _ => unreachable!("a delete reply answers a delete invoke"),
    }
}

/// The token a renew invoke sent.
fn sent_token(invoke: &Event) -> u64 {
    match &invoke.kind {
        EventKind::Invoke {
            invocation: Invocation::Renew { lease },
            ..
        } => lease.token,
        _ => unreachable!("a renew reply answers a renew invoke"),
    }
}
