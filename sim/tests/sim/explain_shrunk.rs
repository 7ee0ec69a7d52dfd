//! `sim explain` on the review findings' shrunk counterexamples, the tokens
//! `sim explore --swarm --flaw NAME --seeds 200 --start 1 --shrink-max 1`
//! printed for each finding's flaw (2026-12-07): the jump, or the rise to
//! 0.9 when that is elsewhere, holds the cause the review gives.

use retention_sim::model::{EventKind, History, OpKind, Outcome, RunSpec};
use retention_sim::report::parse_token;
use retention_sim::search::{ExplainConfig, Explanation, explain};
use retention_sim::{Sim, check};

const OVERLAPPING_RENEWALS: &str = r#"{"backlog_rows":312,"db_batch_ms_max":1444,"db_batch_ms_min":39,"duration_ms":1875,"flaw":"overlapping-renewals","replicas":1,"seed":11,"worker":{"renew_interval_ms":1393}}"#;
const STALE_RELEASE: &str = r#"{"backlog_rows":156,"db_batch_ms_max":407,"db_batch_ms_min":57,"duration_ms":1875,"faults":{"latency_ms_max":47},"flaw":"stale-release","replicas":1,"seed":4,"worker":{"batch_size":157}}"#;
const MOVING_CUTOFF: &str =
    r#"{"backlog_rows":625,"duration_ms":1875,"flaw":"moving-cutoff","replicas":1,"seed":7}"#;
const UNCAPPED_TERM: &str = r#"{"backlog_rows":625,"duration_ms":1875,"flaw":"uncapped-term","replicas":1,"seed":5,"worker":{"term_row_cap":791}}"#;
const FLAG_ONLY_STOP: &str = r#"{"backlog_rows":1250,"duration_ms":30000,"flaw":"flag-only-stop","replicas":1,"seed":12,"worker":{"batch_size":157}}"#;

/// The call `call`'s issue and reply (if it came).
fn span_of(history: &History, call: u64) -> (usize, Option<usize>) {
    let at = |returned: bool| {
        history.events.iter().position(|e| match e.kind {
            EventKind::Invoke { call: c, .. } => !returned && c == call,
            EventKind::Return { call: c, .. } => returned && c == call,
            _ => false,
        })
    };
    (at(false).expect("the call was issued"), at(true))
}

/// Whether the call issued at `issued` is still in flight at event `seq`.
fn in_flight_at(history: &History, issued: usize, seq: usize) -> bool {
    let EventKind::Invoke { call, .. } = history.events[issued].kind else {
        panic!("event {issued} issues no call");
    };
    let (issued, replied) = span_of(history, call);
    issued < seq && replied.is_none_or(|replied| replied > seq)
}

fn invokes(history: &History, seq: usize, op: OpKind) -> bool {
    matches!(&history.events[seq].kind, EventKind::Invoke { invocation, .. } if invocation.kind() == op)
}

/// The events inside the rise to 0.9, when the explanation names one.
fn sealed_events(explained: &Explanation) -> Vec<usize> {
    explained
        .sealed
        .map_or(Vec::new(), |(from, to)| (from.seq + 1..=to.seq).collect())
}

/// Finding 1: "a rejected renewal is left on an unobserved promise". The
/// shrunk run's term ends with its renewal in flight (REN-3): the jump
/// holds the release that ends the term while that renewal is pending.
fn release_over_a_pending_renewal(history: &History, explained: &Explanation) -> bool {
    let renewal = explained.violation_events[0];
    assert!(invokes(history, renewal, OpKind::Renew));
    (explained.jump_events.iter())
        .any(|&seq| invokes(history, seq, OpKind::Release) && in_flight_at(history, renewal, seq))
}

/// Finding 2: "successful renewals replace the lease, but cleanup
/// releases the original": the jump draws the renewal whose granted reply
/// is the violation's newer lease.
fn renewal_that_replaces_the_lease(history: &History, explained: &Explanation) -> bool {
    (explained.jump_calls.iter()).any(|call| {
        invokes(history, call.issued, OpKind::Renew)
            && call
                .replied
                .is_some_and(|seq| explained.violation_events.contains(&seq))
    })
}

/// Finding 3: "the cutoff is recalculated for every batch", here from the
/// latest grant: the jump draws a renewal granted before the batch with
/// the moved cutoff.
fn renewal_granted_before_the_moved_cutoff(history: &History, explained: &Explanation) -> bool {
    let moved = *explained.violation_events.last().unwrap();
    (explained.jump_calls.iter()).any(|call| {
        invokes(history, call.issued, OpKind::Renew)
            && call.replied.is_some_and(|seq| {
                seq < moved
                    && matches!(
                        &history.events[seq].kind,
                        EventKind::Return {
                            outcome: Outcome::Lease(Some(_)),
                            ..
                        }
                    )
            })
    })
}

/// Finding 4: "the loop continues while full batches are returned and
/// never tracks a total": the jump draws the last batch answered before
/// the one asked past the cap.
fn last_batch_before_the_one_past_the_cap(history: &History, explained: &Explanation) -> bool {
    let past_cap = *explained.violation_events.last().unwrap();
    assert!(invokes(history, past_cap, OpKind::Delete));
    let last_answered = (0..past_cap).rev().find(|&seq| {
        matches!(
            history.events[seq].kind,
            EventKind::Return {
                op: OpKind::Delete,
                ..
            }
        )
    });
    (explained.jump_calls.iter())
        .any(|call| invokes(history, call.issued, OpKind::Delete) && call.replied == last_answered)
}

/// Finding 5: "stop only flips a flag; it does not await an executing
/// delete": the rise to 0.9 holds the stop called while a delete is in
/// flight.
fn stop_during_a_delete(history: &History, explained: &Explanation) -> bool {
    let sealed = sealed_events(explained);
    sealed.iter().any(|&stop| {
        matches!(history.events[stop].kind, EventKind::StopCalled { .. })
            && (0..stop).any(|seq| {
                invokes(history, seq, OpKind::Delete) && in_flight_at(history, seq, stop)
            })
    })
}

type Cause = fn(&History, &Explanation) -> bool;

#[test]
fn each_findings_shrunk_counterexample_names_the_reviews_cause() {
    let findings: [(&str, &str, Cause); 5] = [
        (
            OVERLAPPING_RENEWALS,
            "REN-3",
            release_over_a_pending_renewal,
        ),
        (STALE_RELEASE, "REL-1", renewal_that_replaces_the_lease),
        (
            MOVING_CUTOFF,
            "CUT-1",
            renewal_granted_before_the_moved_cutoff,
        ),
        (
            UNCAPPED_TERM,
            "CAP-1",
            last_batch_before_the_one_past_the_cap,
        ),
        (FLAG_ONLY_STOP, "STP-5", stop_during_a_delete),
    ];
    for (token, clause, names_the_cause) in findings {
        let spec: RunSpec = parse_token(token).expect("a valid token");
        let history = Sim::new(&spec).run().expect("a valid plan");
        assert!(!check(&history).passed(), "{token} fails");
        let explained = explain(&spec, &ExplainConfig::default())
            .expect("explains")
            .expect("the counterexample fails");
        assert_eq!(explained.clause, clause, "{token}");
        assert!(explained.jump_is_clear(), "{token}: {:?}", explained.jump);
        assert!(
            names_the_cause(&history, &explained),
            "{clause}: the jump {:?} (events {:?}, calls {:?}), the rise to 0.9 {:?} (calls {:?})",
            explained.jump,
            explained.jump_events,
            explained.jump_calls,
            explained.sealed,
            explained.sealed_calls
        );
    }
}
