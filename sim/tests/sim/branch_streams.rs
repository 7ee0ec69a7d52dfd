//! A branch of a run (`sim explain`) draws the database's own randomness
//! afresh from where it parts, and keeps drawing: the time each delete's
//! statement works is the database node's, not the scheduler's or the
//! network's.

use retention_sim::Sim;
use retention_sim::model::{Branch, EventKind, RunSpec};

/// Each committed delete's time from its fence to its commit, in the order
/// the database fenced them: the statement's work plus four network hops.
fn fence_to_commit_ms(spec: &RunSpec) -> Vec<i64> {
    let history = Sim::new(spec).run().expect("a valid plan");
    let mut spans: Vec<(i64, i64)> = (history.events.iter())
        .filter_map(|event| match &event.kind {
            EventKind::Deleted { fenced_at_ms, .. } => {
                Some((*fenced_at_ms, event.at_ms - fenced_at_ms))
            }
            _ => None,
        })
        .collect();
    spans.sort_unstable();
    spans.into_iter().map(|(_, span)| span).collect()
}

/// The most four hops of madsim's network (1 to 10 ms each) can move a span.
const HOPS_MS_MAX: i64 = 40;

#[test]
fn a_branch_draws_the_databases_work_afresh_and_goes_on_drawing() {
    // No faults and no commit time: what varies a span is the work the
    // database draws (50 to 400 ms) and the network's jitter.
    let spec = RunSpec::default();
    let run = fence_to_commit_ms(&spec);
    assert!(run.len() >= 10, "only {} deletes", run.len());
    for salt in [1, 7, 12_345] {
        let branch = RunSpec {
            branch: Some(Branch {
                at_ms: 0,
                salt,
                faults: None,
            }),
            ..spec.clone()
        };
        let drawn = fence_to_commit_ms(&branch);
        assert!(
            drawn.len() >= 10,
            "salt {salt}: only {} deletes",
            drawn.len()
        );
        // Had the branch kept the run's stream, each delete would work as
        // long as the run's of the same rank, to the network's jitter.
        let kept = run
            .iter()
            .zip(&drawn)
            .all(|(was, is)| (was - is).abs() <= HOPS_MS_MAX);
        assert!(
            !kept,
            "salt {salt}: the branch's deletes took the run's times: {drawn:?}"
        );
        // Had it restarted the stream at each draw, every delete would work
        // as long as the first.
        let spread = drawn.iter().max().unwrap() - drawn.iter().min().unwrap();
        assert!(
            spread > 2 * HOPS_MS_MAX,
            "salt {salt}: every delete took about as long: {drawn:?}"
        );
    }
}

/// Call `call`'s time from its issue to its answer, if it was answered.
fn round_trip_ms(spec: &RunSpec, call: u64) -> Option<i64> {
    let history = Sim::new(spec).run().expect("a valid plan");
    let at = |returned: bool| {
        history.events.iter().find_map(|event| match event.kind {
            EventKind::Invoke { call: c, .. } if !returned && c == call => Some(event.at_ms),
            EventKind::Return { call: c, .. } if returned && c == call => Some(event.at_ms),
            _ => None,
        })
    };
    Some(at(true)? - at(false)?)
}

#[test]
fn a_branch_draws_packet_losses_afresh() {
    // One replica, a fixed statement time, and two messages in five lost:
    // what varies a call's round trip is its retransmissions (200 ms and
    // more each) and the network's jitter.
    let mut spec = RunSpec {
        replicas: 1,
        duration_ms: 20_000,
        db_batch_ms_min: 100,
        db_batch_ms_max: 100,
        ..RunSpec::default()
    };
    spec.faults.packet_loss_permille = 400;
    let history = Sim::new(&spec).run().expect("a valid plan");
    let issued: Vec<(i64, u64)> = (history.events.iter())
        .filter_map(|event| match event.kind {
            EventKind::Invoke { call, .. } => Some((event.at_ms, call)),
            _ => None,
        })
        .collect();
    assert!(issued.len() >= 8, "only {} calls", issued.len());
    let (mut tried, mut redrawn) = (0, 0);
    for &(at_ms, call) in issued.iter().step_by(issued.len() / 4).take(4) {
        let Some(was) = round_trip_ms(&spec, call) else {
            continue;
        };
        for salt in 1..=8 {
            let branch = RunSpec {
                branch: Some(Branch {
                    at_ms: u64::try_from(at_ms).unwrap(),
                    salt,
                    faults: None,
                }),
                ..spec.clone()
            };
            if let Some(is) = round_trip_ms(&branch, call) {
                tried += 1;
                redrawn += usize::from((was - is).abs() > HOPS_MS_MAX);
            }
        }
    }
    assert!(tried >= 24, "only {tried} branches answered the call");
    assert!(
        redrawn * 5 >= tried,
        "{redrawn} of {tried} branches lost other messages than the run"
    );
}
