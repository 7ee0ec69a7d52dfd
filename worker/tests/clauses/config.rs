//! Construction rejects a configuration that breaks a rule, naming the field.

use retention_worker::{ConfigError, WorkerConfig};

use crate::harness::{World, config};

fn invalid(change: impl FnOnce(&mut WorkerConfig)) -> ConfigError {
    let mut config = WorkerConfig::default();
    change(&mut config);
    config.validate().expect_err("the change breaks a rule")
}

#[test]
fn defaults_are_valid_and_documented_values() {
    let config = WorkerConfig::default();
    assert_eq!(config.validate(), Ok(()));
    assert_eq!((config.batch_size, config.term_row_cap), (200, 1_000));
}

#[test]
fn each_rule_names_its_field() {
    let cases: Vec<(&str, ConfigError)> = vec![
        ("batch_size", invalid(|c| c.batch_size = 201)),
        ("batch_size", invalid(|c| c.batch_size = 0)),
        ("term_row_cap", invalid(|c| c.term_row_cap = 0)),
        ("term_row_cap", invalid(|c| c.term_row_cap = 1_001)),
        ("retention_ms", invalid(|c| c.retention_ms = 0)),
        ("retention_ms", invalid(|c| c.retention_ms = u64::MAX)),
        ("lease_ttl_ms", invalid(|c| c.lease_ttl_ms = 0)),
        ("renew_interval_ms", invalid(|c| c.renew_interval_ms = 0)),
        (
            "renew_interval_ms",
            invalid(|c| c.renew_interval_ms = c.lease_ttl_ms),
        ),
        (
            "expiry_margin_ms",
            invalid(|c| c.expiry_margin_ms = c.lease_ttl_ms),
        ),
    ];
    for (field, error) in cases {
        assert_eq!(error.field, field);
        let message = error.to_string();
        assert!(message.contains(field), "{message:?} does not name {field}");
    }
}

#[test]
fn messages_state_the_value_and_the_rule() {
    let error = invalid(|c| c.batch_size = 201);
    assert_eq!(
        error.to_string(),
        "invalid worker config: batch_size = 201 must be in 1..=200 (CAP-1)"
    );
    let error = invalid(|c| {
        c.lease_ttl_ms = 5_000;
        c.renew_interval_ms = 5_000;
    });
    assert_eq!(
        error.to_string(),
        "invalid worker config: renew_interval_ms = 5000 must be shorter than lease_ttl_ms"
    );
}

#[tokio::test(start_paused = true)]
async fn the_worker_refuses_a_bad_config_and_an_empty_owner() {
    use retention_worker::Worker;
    let world = World::new(0, 0);
    let mut bad = config();
    bad.term_row_cap = 0;
    let error = Worker::new("r2", bad, world.deps("r2", 0)).unwrap_err();
    assert_eq!(error.field, "term_row_cap");
    let error = Worker::new("", config(), world.deps("", 0)).unwrap_err();
    assert_eq!(error.field, "owner_id");
}
