//! A failure's printed replay command reproduces the run exactly.

use retention_sim::report::{parse_token, replay_command};
use retention_sim::search::swarm;
use retention_sim::{RunSpec, Sim, check, format_failure};

/// The token between the single quotes of a printed replay command.
fn token_of(printed: &str) -> &str {
    let line = printed
        .lines()
        .find(|l| l.contains("-- replay '"))
        .expect("a replay line");
    let start = line.find('\'').unwrap() + 1;
    &line[start..line.rfind('\'').unwrap()]
}

#[test]
fn a_printed_replay_command_reproduces_history_and_verdict() {
    for seed in [3, 17, 99] {
        let spec = swarm(seed, None);
        let history = Sim::new(&spec).run().unwrap();
        let verdict = check(&history);
        let printed = format_failure(&spec, &history, &verdict);
        let replayed_spec = parse_token(token_of(&printed)).unwrap();
        assert_eq!(replayed_spec, spec);
        let replayed = Sim::new(&replayed_spec).run().unwrap();
        assert_eq!(replayed.to_jsonl(), history.to_jsonl());
        assert_eq!(check(&replayed), verdict);
    }
}

#[test]
fn the_default_spec_replays_from_just_its_seed() {
    let spec = RunSpec {
        seed: 42,
        ..RunSpec::default()
    };
    assert_eq!(
        replay_command(&spec),
        "cargo run --release -p sim -- replay '{\"seed\":42}'"
    );
}

#[test]
fn malformed_tokens_are_refused_with_the_reason() {
    let cases = [
        ("{\"seed\":1,", "EOF"),
        ("{\"seed\":1,\"bogus\":2}", "unknown field `bogus`"),
        ("{\"seed\":1,\"replicas\":0}", "replicas: 0 is not in 1..=5"),
        (
            "{\"seed\":1,\"events\":[{\"kind\":\"pause\",\"replica\":4,\"at_ms\":1,\"for_ms\":1}]}",
            "events[0].replica",
        ),
        (
            "{\"seed\":1,\"worker\":{\"batch_size\":201}}",
            "worker.batch_size: invalid worker config: batch_size = 201 must be in 1..=200 (CAP-1)",
        ),
    ];
    for (token, expected) in cases {
        let error = parse_token(token).unwrap_err();
        assert!(
            error.contains(expected),
            "{token}: {error:?} should mention {expected:?}"
        );
    }
}

/// Every rule of the worker's configuration, at its boundary: a spec that
/// breaks one is refused naming the field; one just inside it runs.
#[test]
fn worker_settings_are_checked_at_their_boundaries() {
    let refused = [
        (r#"{"batch_size":0}"#, "worker.batch_size"),
        (r#"{"term_row_cap":0}"#, "worker.term_row_cap"),
        (r#"{"term_row_cap":1001}"#, "worker.term_row_cap"),
        (r#"{"retention_ms":0}"#, "worker.retention_ms"),
        (
            r#"{"retention_ms":18446744073709551615}"#,
            "worker.retention_ms",
        ),
        (r#"{"lease_ttl_ms":0}"#, "worker.lease_ttl_ms"),
        (r#"{"renew_interval_ms":0}"#, "worker.renew_interval_ms"),
        (
            r#"{"lease_ttl_ms":1000,"renew_interval_ms":1000}"#,
            "worker.renew_interval_ms",
        ),
        (
            r#"{"lease_ttl_ms":1000,"renew_interval_ms":600,"expiry_margin_ms":400}"#,
            "worker.expiry_margin_ms",
        ),
    ];
    for (worker, field) in refused {
        let token = format!(r#"{{"seed":1,"worker":{worker}}}"#);
        let error = parse_token(&token).unwrap_err();
        assert!(
            error.contains(field),
            "{token}: {error:?} should name {field}"
        );
    }
    let accepted = [
        r#"{"batch_size":1,"term_row_cap":1}"#,
        r#"{"batch_size":200,"term_row_cap":1000,"retention_ms":1}"#,
        r#"{"lease_ttl_ms":1000,"renew_interval_ms":999,"expiry_margin_ms":0}"#,
        r#"{"lease_ttl_ms":1000,"renew_interval_ms":600,"expiry_margin_ms":399}"#,
    ];
    for worker in accepted {
        let token =
            format!(r#"{{"seed":1,"duration_ms":3000,"backlog_rows":50,"worker":{worker}}}"#);
        let spec = parse_token(&token).unwrap_or_else(|error| panic!("{token}: {error}"));
        assert!(check(&Sim::new(&spec).run().unwrap()).passed(), "{token}");
    }
}

/// The stale-release variant on one replica: its release sends the lease it
/// acquired, not the renewed one (REL-1). A small failing run to replay.
pub const STALE_RELEASE: &str =
    r#"{"seed":1,"replicas":1,"backlog_rows":625,"duration_ms":1875,"flaw":"stale-release"}"#;

#[test]
fn a_violation_round_trips_through_its_printed_replay_command() {
    let spec = parse_token(STALE_RELEASE).unwrap();
    let history = Sim::new(&spec).run().unwrap();
    let verdict = check(&history);
    assert_eq!(
        verdict
            .violations
            .iter()
            .map(|v| v.clause)
            .collect::<Vec<_>>(),
        vec!["REL-1"]
    );
    let printed = format_failure(&spec, &history, &verdict);
    assert!(
        printed.contains("REL-1 (seed 1): ") && printed.contains("> "),
        "{printed}"
    );
    let replayed = Sim::new(&parse_token(token_of(&printed)).unwrap())
        .run()
        .unwrap();
    assert_eq!(replayed.to_jsonl(), history.to_jsonl());
    assert_eq!(check(&replayed), verdict);
}
