//! What one run tells the guided search: the coverage probes it reached,
//! the pairs of them that met in one run, the abstract protocol states it
//! passed through (with the instant each was first reached), and the
//! figures that measure how close it came to a contract's edge.

use std::collections::BTreeMap;

use crate::checker::PROBES;
use crate::model::{
    Actor, EventKind, FailureKind, History, Invocation, OpKind, Outcome, TermEndRec,
};

/// A feature's number: probes first, then probe pairs, then a replica's
/// sequences of unusual observations, then states.
pub(crate) type Feature = u64;

/// Where the pair features start (one above the last probe's number).
pub(super) const PAIRS: u64 = 1 << 16;
/// Where the sequence features start.
pub(super) const SEQUENCES: u64 = 1 << 24;
/// Where the state features start.
pub(super) const STATES: u64 = 1 << 32;

/// What a worker can notice that is out of the ordinary, by number: the
/// things a stateful bug carries from one moment to the next.
#[derive(Clone, Copy)]
pub(super) enum Noticed {
    /// A grant that was not its own, or a renewal not newer than sent.
    CorruptReply = 0,
    NullRenewal,
    /// A delete refused by the fence.
    FencedDelete,
    /// A call refused or lost.
    FailedCall,
    StopCalled,
    /// Its wall clock stepped forward, or back.
    ClockStepForward,
    ClockStepBack,
    /// A renewal granted after the lease it sent had expired.
    LateGrant,
    Paused,
    Partitioned,
    /// A term ended at its row cap.
    Capped,
    /// Its wall clock stepped forward while it believed it led: what its
    /// guard and its cutoff must survive.
    StepWhileLeading,
}

/// How many kinds of [`Noticed`] there are.
pub(super) const NOTICED: usize = 12;
const _: () = assert!(Noticed::StepWhileLeading as usize + 1 == NOTICED);

/// What else the process had in flight when it noticed something: none,
/// a delete, a renewal, or both. Overlapping calls are where the review's
/// findings live, so "a corrupt reply during a delete" is a different
/// observation from "a corrupt reply".
pub(super) const CONTEXTS: usize = 4;

/// Sequence features, in three families. Pairs: noticing `first` (in its
/// context) and later `then` (in its) in one process's life (a crash
/// starts a new life). Triples: three kinds in that order, contexts left
/// out to keep the family small. Repeats: the same kind noticed 2, 3 or
/// 4+ times in one life (AFL's hit-count buckets).
pub(super) fn pair(first: usize, then: usize) -> Feature {
    SEQUENCES + (first as u64) * 64 + then as u64
}

pub(super) fn triple(a: usize, b: usize, c: usize) -> Feature {
    SEQUENCES + (1 << 16) + (a as u64) * 256 + (b as u64) * 16 + c as u64
}

pub(super) fn repeat(kind: usize, times: u8) -> Feature {
    SEQUENCES + (1 << 20) + (kind as u64) * 16 + u64::from(times.min(4))
}

/// A run's feedback: its features with the instant each was first
/// reached (probes and pairs: the run's end, their instant unrecorded),
/// and its guidance figures.
#[derive(Debug, Clone, Default)]
pub(crate) struct Feedback {
    /// Each feature once, by number.
    pub features: BTreeMap<Feature, i64>,
    /// See [`Figures`].
    pub figures: Figures,
}

/// How many guidance figures there are.
pub(crate) const FIGURES: usize = 4;

/// Numbers the search pushes to their extremes: each is how close a run
/// came to breaking a clause, so a plan that sets a record is kept and
/// mutated further. `None` when the run had nothing to measure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Figures {
    /// The smallest time from a delete's commit to the expiry of the
    /// lease whose token it carried (negative: committed after it), ms.
    /// FEN-2's edge: smaller is nearer.
    pub fence_margin_ms: Option<i64>,
    /// The smallest age of a deleted row beyond the retention when its
    /// delete ran, by the database's clock, ms. DATA-4's edge.
    pub row_age_margin_ms: Option<i64>,
    /// The longest time two or more replicas each believed they held the
    /// lease, ms. The exposure fencing exists for: larger is nearer.
    pub overlap_ms: Option<i64>,
    /// The largest forward step of a replica's wall clock while it
    /// believed it led, ms: what the worker's expiry guard and its cutoff
    /// (CUT-1, DATA-4) must survive. Larger is nearer.
    pub step_while_leading_ms: Option<i64>,
}

impl Figures {
    /// Each figure's value in the direction the search pushes it (larger
    /// is more extreme), by name, for records and reports.
    pub(crate) fn extremes(&self) -> [(&'static str, Option<i64>); FIGURES] {
        [
            ("fence-margin", self.fence_margin_ms.map(|v| -v)),
            ("row-age-margin", self.row_age_margin_ms.map(|v| -v)),
            ("overlap", self.overlap_ms),
            ("step-while-leading", self.step_while_leading_ms),
        ]
    }
}

/// The feedback of `history`, whose probes `reached` were counted.
pub(crate) fn feedback(history: &History, reached: &BTreeMap<&'static str, u64>) -> Feedback {
    let end_ms = history.events.last().map_or(0, |e| e.at_ms);
    let mut features = BTreeMap::new();
    let hit: Vec<u64> = PROBES
        .iter()
        .enumerate()
        .filter(|(_, (name, _))| reached.get(name).is_some_and(|&count| count > 0))
        .map(|(index, _)| index as u64)
        .collect();
    for (at, &a) in hit.iter().enumerate() {
        features.insert(a, end_ms);
        for &b in &hit[at + 1..] {
            features.insert(PAIRS + a * 256 + b, end_ms);
        }
    }
    let figures = walk(history, &mut features);
    Feedback { features, figures }
}

/// A call in flight: its replica, its operation, and the token and expiry
/// of the lease a renewal sent.
type CallInFlight = (usize, OpKind, Option<(u64, i64)>);

/// What the walk knows of one replica.
#[derive(Default, Clone, Copy)]
struct ReplicaState {
    /// It believes it holds the lease (a grant answered, no loss since).
    believes: bool,
    /// Its calls in flight, one bit per operation.
    in_flight: [u8; 4],
    /// What it noticed in this life, one bit per kind and context.
    noticed: u64,
    /// For each kind noticed in this life, the kinds noticed after it.
    followed_by: [u16; NOTICED],
    /// How often each kind was noticed in this life.
    times: [u8; NOTICED],
}

impl ReplicaState {
    /// Adds the sequences `what` ends, at `at_ms`, and remembers it.
    fn notice(&mut self, what: Noticed, at_ms: i64, features: &mut BTreeMap<Feature, i64>) {
        let kind = what as usize;
        let context = usize::from(self.in_flight[op_index(OpKind::Delete)] > 0)
            | usize::from(self.in_flight[op_index(OpKind::Renew)] > 0) << 1;
        let then = kind * CONTEXTS + context;
        let mut first_bits = self.noticed;
        while first_bits != 0 {
            let first = first_bits.trailing_zeros() as usize;
            first_bits &= first_bits - 1;
            features.entry(pair(first, then)).or_insert(at_ms);
        }
        for (a, &after_a) in self.followed_by.iter().enumerate() {
            let mut bits = after_a;
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                features.entry(triple(a, b, kind)).or_insert(at_ms);
            }
        }
        for (a, after_a) in self.followed_by.iter_mut().enumerate() {
            if self.times[a] > 0 {
                *after_a |= 1 << kind;
            }
        }
        self.times[kind] = self.times[kind].saturating_add(1);
        if self.times[kind] >= 2 {
            features
                .entry(repeat(kind, self.times[kind]))
                .or_insert(at_ms);
        }
        self.noticed |= 1 << then;
    }
}

fn op_index(op: OpKind) -> usize {
    match op {
        OpKind::Acquire => 0,
        OpKind::Renew => 1,
        OpKind::Release => 2,
        OpKind::Delete => 3,
    }
}

/// Walks the history once: adds each abstract state reached, at its first
/// instant, and measures the figures.
///
/// The abstract state is what the contract's clauses turn on, and nothing
/// that merely counts: the kind of event, how many replicas believe they
/// lead (none, one, several), whether the lease row's holder is one of
/// them, expired, or absent, which operations are in flight across the
/// replicas, and whether a delete is in flight from a replica that no
/// longer believes it leads.
fn walk(history: &History, features: &mut BTreeMap<Feature, i64>) -> Figures {
    let replicas = history.header.replicas as usize;
    let mut state = vec![ReplicaState::default(); replicas + 1];
    let mut op_of_call: BTreeMap<u64, CallInFlight> = BTreeMap::new();
    let mut expiry_by_token: BTreeMap<u64, i64> = BTreeMap::new();
    // The lease row: holder's replica and expiry.
    let mut row: Option<(usize, i64)> = None;
    let mut figures = Figures::default();
    let mut overlap_since: Option<i64> = None;
    let retention_ms = i64::try_from(history.header.retention_ms).unwrap_or(i64::MAX);
    let replica_of = |owner: &str| {
        owner
            .strip_prefix('r')
            .and_then(|n| n.parse::<usize>().ok())
    };
    for event in &history.events {
        let actor = match event.actor {
            Actor::Replica(n) => Some(n as usize).filter(|&n| n <= replicas),
            _ => None,
        };
        let kind_code = event_code(&event.kind);
        match &event.kind {
            EventKind::Invoke { call, invocation } => {
                if let Some(r) = actor {
                    let op = invocation.kind();
                    state[r].in_flight[op_index(op)] += 1;
                    let sent = match invocation {
                        Invocation::Renew { lease } => Some((lease.token, lease.expires_at_ms)),
                        _ => None,
                    };
                    op_of_call.insert(*call, (r, op, sent));
                }
            }
            EventKind::Return { call, op, outcome } => {
                if let Some((r, _, sent)) = op_of_call.remove(call) {
                    let slot = &mut state[r].in_flight[op_index(*op)];
                    *slot = slot.saturating_sub(1);
                    let at_ms = event.at_ms;
                    match (op, outcome) {
                        (OpKind::Acquire | OpKind::Renew, Outcome::Lease(Some(lease)))
                            if replica_of(&lease.owner) != Some(r)
                                || sent.is_some_and(|(token, _)| lease.token <= token) =>
                        {
                            state[r].notice(Noticed::CorruptReply, at_ms, features);
                        }
                        (OpKind::Acquire | OpKind::Renew, Outcome::Lease(Some(_))) => {
                            state[r].believes = true;
                            if sent.is_some_and(|(_, expiry)| at_ms > expiry) {
                                state[r].notice(Noticed::LateGrant, at_ms, features);
                            }
                        }
                        (OpKind::Renew, Outcome::Lease(None)) => {
                            state[r].believes = false;
                            state[r].notice(Noticed::NullRenewal, at_ms, features);
                        }
                        (_, Outcome::Failed { kind, .. }) => {
                            if *op == OpKind::Renew {
                                state[r].believes = false;
                            }
                            let what = if *kind == FailureKind::Fenced {
                                Noticed::FencedDelete
                            } else {
                                Noticed::FailedCall
                            };
                            state[r].notice(what, at_ms, features);
                        }
                        _ => {}
                    }
                }
            }
            EventKind::Granted { lease, .. } => {
                expiry_by_token.insert(lease.token, lease.expires_at_ms);
                row = replica_of(&lease.owner).map(|r| (r, lease.expires_at_ms));
            }
            EventKind::Released { cleared: true, .. } | EventKind::Revoked { .. } => row = None,
            EventKind::Deleted {
                token,
                rows,
                deleted_clock_ms,
                ..
            } => {
                if let Some(&expiry) = expiry_by_token.get(token) {
                    let margin = expiry - event.at_ms;
                    figures.fence_margin_ms =
                        Some(figures.fence_margin_ms.map_or(margin, |m| m.min(margin)));
                }
                if let Some(youngest) = rows.iter().map(|row| row.created_at_ms).max() {
                    let read_ms = deleted_clock_ms.unwrap_or(event.at_ms);
                    let margin = read_ms - youngest - retention_ms;
                    figures.row_age_margin_ms =
                        Some(figures.row_age_margin_ms.map_or(margin, |m| m.min(margin)));
                }
            }
            EventKind::TermEnded { end, .. } => {
                if let Some(r) = actor {
                    state[r].believes = false;
                    if matches!(end, TermEndRec::Capped) {
                        state[r].notice(Noticed::Capped, event.at_ms, features);
                    }
                }
            }
            EventKind::Crashed => {
                if let Some(r) = actor {
                    // A new life: nothing in flight, nothing remembered.
                    state[r] = ReplicaState::default();
                }
            }
            EventKind::StopCalled { .. }
            | EventKind::Paused { .. }
            | EventKind::Partitioned { .. }
            | EventKind::ClockStepped { .. } => {
                if let Some(r) = actor {
                    let what = match &event.kind {
                        EventKind::StopCalled { .. } => Noticed::StopCalled,
                        EventKind::Paused { .. } => Noticed::Paused,
                        EventKind::Partitioned { .. } => Noticed::Partitioned,
                        EventKind::ClockStepped { from_ms, to_ms }
                            if to_ms > from_ms && state[r].believes =>
                        {
                            let step = to_ms - from_ms;
                            figures.step_while_leading_ms =
                                Some(figures.step_while_leading_ms.map_or(step, |m| m.max(step)));
                            Noticed::StepWhileLeading
                        }
                        EventKind::ClockStepped { from_ms, to_ms } if to_ms > from_ms => {
                            Noticed::ClockStepForward
                        }
                        _ => Noticed::ClockStepBack,
                    };
                    state[r].notice(what, event.at_ms, features);
                }
            }
            _ => {}
        }
        let believers = state.iter().filter(|s| s.believes).count();
        if believers >= 2 {
            overlap_since.get_or_insert(event.at_ms);
        } else if let Some(since) = overlap_since.take() {
            let span = event.at_ms - since;
            figures.overlap_ms = Some(figures.overlap_ms.map_or(span, |m| m.max(span)));
        }
        let row_code: u64 = match row {
            None => 0,
            Some((_, expiry)) if expiry <= event.at_ms => 1,
            Some((r, _)) if state.get(r).is_some_and(|s| s.believes) => 2,
            Some(_) => 3,
        };
        let mut ops = 0u64;
        let mut orphan_delete = 0u64;
        for s in &state {
            for (index, &count) in s.in_flight.iter().enumerate() {
                if count > 0 {
                    ops |= 1 << index;
                }
            }
            if s.in_flight[3] > 0 && !s.believes {
                orphan_delete = 1;
            }
        }
        let code = kind_code
            | (believers.min(2) as u64) << 6
            | row_code << 8
            | ops << 10
            | orphan_delete << 14;
        features.entry(STATES + code).or_insert(event.at_ms);
    }
    figures
}

/// A small number per kind of event (below 64), calls by operation; the
/// kinds no clause turns on share 0.
fn event_code(kind: &EventKind) -> u64 {
    let op = |op: &OpKind| op_index(*op) as u64;
    match kind {
        EventKind::Invoke { invocation, .. } => 1 + op(&invocation.kind()),
        EventKind::Return { op: o, .. } => 5 + op(o),
        EventKind::Granted { .. } => 9,
        EventKind::Refused { .. } => 10,
        EventKind::Revoked { .. } => 11,
        EventKind::Released { .. } => 12,
        EventKind::Deleted { .. } => 13,
        EventKind::Fenced { .. } => 14,
        EventKind::LockWait { .. } => 15,
        EventKind::RolledBack { .. } => 16,
        EventKind::Aborted { .. } => 17,
        EventKind::TermEnded { .. } => 18,
        EventKind::StopCalled { .. } => 19,
        EventKind::StopResolved { .. } => 20,
        EventKind::Paused { .. } => 21,
        EventKind::Partitioned { .. } => 22,
        EventKind::Crashed => 23,
        EventKind::Restarted => 24,
        EventKind::ClockStepped { .. }
        | EventKind::ClockRateSet { .. }
        | EventKind::DbClockStepped { .. } => 25,
        EventKind::StandbyStalled { .. } => 26,
        _ => 0,
    }
}

/// Whether `feature` is a probe.
pub(crate) fn is_probe(feature: Feature) -> bool {
    feature < PAIRS
}

/// Whether `feature` is a sequence of unusual observations.
pub(crate) fn is_sequence(feature: Feature) -> bool {
    (SEQUENCES..STATES).contains(&feature)
}

/// Whether `feature` is an abstract state.
pub(crate) fn is_state(feature: Feature) -> bool {
    feature >= STATES
}
