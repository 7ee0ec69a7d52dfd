//! New plans from kept ones: the shrinker's moves and their inverses (add,
//! drop, shift, widen or narrow a fault; change a setting or a fault
//! knob), splicing two plans at an instant, and forking a plan at the
//! first instant its run reached a rare state: its events before it are
//! kept, those after it drawn afresh (the run itself is not replayed up to
//! there: every event is a task from the start, `sim/docs/guided.md`).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::model::{FaultEvent, FaultKnob, RunSpec, first_per_call};
use crate::search::swarm::swarm;

/// How a child differs from its parent, for the campaign's tally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Move {
    AddEvent,
    DropEvent,
    ShiftEvent,
    Widen,
    Narrow,
    Setting,
    Knob,
    Splice,
    Fork,
}

const MOVES: [Move; 9] = [
    Move::AddEvent,
    Move::DropEvent,
    Move::ShiftEvent,
    Move::Widen,
    Move::Narrow,
    Move::Setting,
    Move::Knob,
    Move::Splice,
    Move::Fork,
];

/// A child of `parent`: one to three moves stacked, each valid on its
/// own, with `other` for a splice and `fork_ms` where a fork cuts; and
/// whether a fork was among them. `None` when no move made a valid,
/// different plan.
pub(crate) fn mutate(
    parent: &RunSpec,
    other: &RunSpec,
    fork_ms: Option<i64>,
    rng: &mut ChaCha8Rng,
) -> Option<(RunSpec, bool)> {
    let mut child = parent.clone();
    let mut forked = false;
    let moves = rng.gen_range(1..=3);
    for _ in 0..moves {
        // A few tries, since some moves have nothing to act on.
        for _ in 0..4 {
            let kind = MOVES[rng.gen_range(0..MOVES.len())];
            if let Some(next) = apply(kind, &child, other, fork_ms, rng)
                && next.validate().is_ok()
            {
                child = next;
                forked |= kind == Move::Fork;
                break;
            }
        }
    }
    (child != *parent).then_some((child, forked))
}

/// Fresh material for a move: a swarm plan of a random seed with the
/// parent's replicas, so that every drawn value is in the swarm's space.
fn fresh(spec: &RunSpec, rng: &mut ChaCha8Rng) -> RunSpec {
    swarm(rng.r#gen(), Some(spec.replicas))
}

fn apply(
    kind: Move,
    spec: &RunSpec,
    other: &RunSpec,
    fork_ms: Option<i64>,
    rng: &mut ChaCha8Rng,
) -> Option<RunSpec> {
    let mut child = spec.clone();
    match kind {
        Move::AddEvent => {
            let drawn = fresh(spec, rng).events;
            if drawn.is_empty() {
                return None;
            }
            child
                .events
                .push(drawn[rng.gen_range(0..drawn.len())].clone());
            child.events = first_per_call(child.events);
        }
        Move::DropEvent => {
            if child.events.is_empty() {
                return None;
            }
            child.events.remove(rng.gen_range(0..child.events.len()));
        }
        Move::ShiftEvent => {
            if child.events.is_empty() {
                return None;
            }
            let index = rng.gen_range(0..child.events.len());
            let duration_ms = child.duration_ms;
            let (_, at_ms) = child.events[index].replica_and_at_ms_mut();
            let at_ms = at_ms?;
            let shift = rng.gen_range(-3_000i64..=3_000);
            *at_ms = at_ms
                .saturating_add_signed(shift)
                .min(duration_ms.saturating_sub(1));
        }
        Move::Widen | Move::Narrow => {
            if child.events.is_empty() {
                return None;
            }
            let index = rng.gen_range(0..child.events.len());
            let permille = if kind == Move::Widen {
                rng.gen_range(1_200..=3_000)
            } else {
                rng.gen_range(200..=800)
            };
            let mut event = child.events[index].scaled(permille)?;
            // Widened again and again, a pause or a cut grew to an hour:
            // the run lasts until it ends, so each child cost ever more,
            // and an hour's campaign slowed fivefold. One run's length
            // is as long as a fault gets.
            if let Some(window) = event.window_mut() {
                *window.length_ms = (*window.length_ms).min(child.duration_ms);
            }
            child.events[index] = event;
        }
        Move::Setting => {
            let drawn = fresh(spec, rng);
            copy_setting(&mut child, &drawn, rng.gen_range(0..SETTINGS));
        }
        Move::Knob => {
            let drawn = fresh(spec, rng);
            let knob = FaultKnob::ALL[rng.gen_range(0..FaultKnob::ALL.len())];
            child
                .faults
                .set(knob, drawn.faults.get(knob))
                .expect("a drawn value is within the knob's limit");
        }
        Move::Splice => {
            let cut_ms = rng.gen_range(0..child.duration_ms.max(1));
            let before = |e: &FaultEvent| e.at_ms().is_none_or(|at| at < cut_ms);
            let mut events: Vec<FaultEvent> =
                spec.events.iter().filter(|e| before(e)).cloned().collect();
            events.extend(
                other
                    .events
                    .iter()
                    .filter(|e| !before(e) && e.replica().is_none_or(|r| r <= spec.replicas))
                    .cloned(),
            );
            child.events = first_per_call(events);
        }
        Move::Fork => {
            let cut_ms = u64::try_from(fork_ms?).unwrap_or(0);
            let drawn = fresh(spec, rng);
            // Events with no instant (on a chosen call) count as before.
            child
                .events
                .retain(|e| e.at_ms().is_none_or(|at| at < cut_ms));
            child.events.extend(
                drawn
                    .events
                    .into_iter()
                    .filter(|e| e.at_ms().is_some_and(|at| at >= cut_ms)),
            );
            child.events = first_per_call(child.events);
        }
    }
    Some(child)
}

/// The settings [`copy_setting`] knows, by number.
const SETTINGS: usize = 16;

/// Copies setting `index` from `drawn` (a valid swarm plan) to `child`,
/// keeping the worker's configuration valid.
fn copy_setting(child: &mut RunSpec, drawn: &RunSpec, index: usize) {
    let (w, d) = (&mut child.worker, &drawn.worker);
    match index {
        0 => w.batch_size = d.batch_size,
        1 => w.term_row_cap = d.term_row_cap,
        2 => w.retention_ms = d.retention_ms,
        3 => w.lease_ttl_ms = d.lease_ttl_ms,
        4 => w.renew_interval_ms = d.renew_interval_ms,
        5 => w.expiry_margin_ms = d.expiry_margin_ms,
        6 => w.term_interval_ms = d.term_interval_ms,
        7 => w.loss_backoff_ms = d.loss_backoff_ms,
        8 => w.term_jitter_ms_max = d.term_jitter_ms_max,
        9 => child.rpc_timeout_ms = drawn.rpc_timeout_ms,
        10 => {
            (child.db_batch_ms_min, child.db_batch_ms_max) =
                (drawn.db_batch_ms_min, drawn.db_batch_ms_max)
        }
        11 => {
            (child.db_commit_ms_min, child.db_commit_ms_max) =
                (drawn.db_commit_ms_min, drawn.db_commit_ms_max);
        }
        12 => child.statement_timeout_ms = drawn.statement_timeout_ms,
        13 => child.lock_timeout_ms = drawn.lock_timeout_ms,
        14 => child.idle_in_transaction_timeout_ms = drawn.idle_in_transaction_timeout_ms,
        _ => child.skews_ms = drawn.skews_ms.clone(),
    }
    crate::search::space::fit(&mut child.worker);
}
