//! When the plan's timed faults strike and end: at their instants, in the
//! plan's order within one instant, a nested fault inside the outer one,
//! and an hour-long one still ending in a verdict.

use retention_sim::model::{Actor, EventKind};
use retention_sim::report::parse_token;
use retention_sim::{Sim, check};

/// Faults planned for one instant take effect in the plan's order. Each is
/// a task of its own, and madsim woke the later of two first: of two rate
/// changes at 1,000 ms the plan's first won, and of a pause and a cut the
/// cut was recorded first.
#[test]
fn faults_at_one_instant_take_effect_in_the_plans_order() {
    // Replica 1's host events, in the order they were recorded.
    let host_events = |events: &str| -> Vec<String> {
        let token = format!(r#"{{"seed":7,"replicas":2,"duration_ms":5000,"events":[{events}]}}"#);
        let history = Sim::new(&parse_token(&token).unwrap()).run().unwrap();
        (history.events.iter())
            .filter(|e| e.actor == Actor::Replica(1) && e.at_ms == 1_000)
            .filter_map(|e| match &e.kind {
                EventKind::ClockRateSet { rate_permille, .. } => {
                    Some(format!("rate {rate_permille}"))
                }
                EventKind::ClockStepped { from_ms, to_ms } => {
                    Some(format!("step {}", to_ms - from_ms))
                }
                EventKind::Paused { .. } => Some("pause".into()),
                EventKind::Partitioned { .. } => Some("cut".into()),
                _ => None,
            })
            .collect()
    };
    let rate = |permille: u32| {
        format!(r#"{{"kind":"clock_rate","replica":1,"at_ms":1000,"rate_permille":{permille}}}"#)
    };
    let step = |delta_ms: i64| {
        format!(r#"{{"kind":"clock_step","replica":1,"at_ms":1000,"delta_ms":{delta_ms}}}"#)
    };
    let pause = r#"{"kind":"pause","replica":1,"at_ms":1000,"for_ms":300}"#;
    let cut = r#"{"kind":"partition","replica":1,"at_ms":1000,"for_ms":300}"#;
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (vec![rate(200), rate(5_000)], vec!["rate 200", "rate 5000"]),
        (vec![rate(5_000), rate(200)], vec!["rate 5000", "rate 200"]),
        (
            vec![step(-400), rate(3_000), step(900)],
            vec!["step -400", "rate 3000", "step 900"],
        ),
        (vec![pause.into(), cut.into()], vec!["pause", "cut"]),
        (vec![cut.into(), pause.into()], vec!["cut", "pause"]),
    ];
    for (events, expected) in cases {
        let recorded = host_events(&events.join(","));
        assert_eq!(recorded, expected, "for {events:?}");
    }
}

/// Plans inside every documented range whose stops settle long after the
/// schedule: a pause of over ten minutes, and an hour's cut or batch under
/// an hour's call timeout. madsim's time limit once ended each with a
/// panic (exit 101) and no verdict; each is judged now.
#[test]
fn a_pause_or_timeout_of_an_hour_ends_in_a_verdict_not_a_panic() {
    let tokens = [
        r#"{"seed":1,"replicas":1,"events":[{"kind":"pause","replica":1,"at_ms":100,"for_ms":700000}]}"#,
        r#"{"seed":1,"replicas":1,"rpc_timeout_ms":3600000,"events":[{"kind":"partition","replica":1,"at_ms":100,"for_ms":3600000}]}"#,
        r#"{"seed":1,"replicas":1,"rpc_timeout_ms":3600000,"statement_timeout_ms":0,"db_batch_ms_min":3600000,"db_batch_ms_max":3600000}"#,
    ];
    for token in tokens {
        let spec = retention_sim::report::parse_token(token).expect("a valid token");
        let history = retention_sim::Sim::new(&spec).run().expect("a valid plan");
        let verdict = retention_sim::check(&history);
        assert!(
            verdict.violations.is_empty(),
            "{token}: {:?}",
            verdict.violations
        );
        assert!(
            history
                .events
                .iter()
                .any(|e| matches!(e.kind, retention_sim::model::EventKind::Final { .. })),
            "{token}: the run did not reach its end"
        );
    }
}

/// Two faults of one kind overlapping on one target: the inner one ending
/// once ended the outer (a replica paused 600-5600 ms acted at 1500; one
/// cut off until 5600 was granted a lease at 2154), and a crash of a
/// process already down restarted it early and later killed the live one
/// without a `CRASHED` line. Each window now lasts to its latest end.
#[test]
fn a_nested_fault_never_ends_the_outer_one_early() {
    let window = |kind: &str| {
        parse_token(&format!(
            r#"{{"seed":5,"replicas":1,"duration_ms":12000,"events":[
            {{"kind":"{kind}","replica":1,"at_ms":600,"for_ms":5000}},
            {{"kind":"{kind}","replica":1,"at_ms":1000,"for_ms":500}}]}}"#
        ))
        .unwrap()
    };
    for kind in ["pause", "partition"] {
        let history = Sim::new(&window(kind)).run().unwrap();
        let acted: Vec<i64> = (history.events.iter())
            .filter(|e| {
                let granted = matches!(e.kind, EventKind::Granted { .. });
                let invoked =
                    e.actor == Actor::Replica(1) && matches!(e.kind, EventKind::Invoke { .. });
                (granted || (kind == "pause" && invoked)) && (601..5_600).contains(&e.at_ms)
            })
            .map(|e| e.at_ms)
            .collect();
        assert!(
            acted.is_empty(),
            "{kind}: r1 acted or was granted at {acted:?} ms"
        );
    }
    let spec = parse_token(
        r#"{"seed":5,"replicas":2,"duration_ms":12000,"events":[
        {"kind":"crash","replica":1,"at_ms":20,"restart_after_ms":600},
        {"kind":"crash","replica":1,"at_ms":30,"restart_after_ms":0}]}"#,
    )
    .unwrap();
    let history = Sim::new(&spec).run().unwrap();
    let lines: Vec<(i64, bool)> = (history.events.iter())
        .filter_map(|e| match e.kind {
            EventKind::Crashed => Some((e.at_ms, true)),
            EventKind::Restarted => Some((e.at_ms, false)),
            _ => None,
        })
        .collect();
    assert_eq!(
        lines,
        [(20, true), (620, false)],
        "one crash, one restart at its time"
    );
    assert!(check(&history).passed());
}

/// A stop aimed at a replica while it is down reaches nobody: it was held
/// over and delivered to the process that restarted 3 s later.
#[test]
fn a_stop_sent_to_a_crashed_replica_is_not_delivered_after_its_restart() {
    // When r1's `stop()` calls began, in the run of `token`.
    let r1_stops = |token: &str| -> Vec<i64> {
        let history = Sim::new(&parse_token(token).unwrap()).run().unwrap();
        (history.events.iter())
            .filter(|e| {
                e.actor == Actor::Replica(1) && matches!(e.kind, EventKind::StopCalled { .. })
            })
            .map(|e| e.at_ms)
            .collect()
    };
    let stops = r1_stops(
        r#"{"seed":3,"replicas":2,"duration_ms":6000,"events":[
        {"kind":"crash","replica":1,"at_ms":500,"restart_after_ms":3000},
        {"kind":"stop","replica":1,"at_ms":1000,"callers":2}]}"#,
    );
    assert_eq!(stops, [6_000], "only the run's own stop at its end");

    // Down when the run ends, back while the other replica's stop is
    // still settling (it is paused): the run's own stop reaches the
    // restarted process (the run is over for it too).
    let stops = r1_stops(
        r#"{"seed":3,"replicas":2,"duration_ms":6000,"events":[
        {"kind":"crash","replica":1,"at_ms":5500,"restart_after_ms":1000},
        {"kind":"pause","replica":2,"at_ms":5000,"for_ms":3000}]}"#,
    );
    assert_eq!(stops, [6_500], "the end's stop, taken at the restart");
}
