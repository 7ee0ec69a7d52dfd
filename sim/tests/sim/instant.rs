//! `sim replay --at/--at-seq`: the world at one instant, read inside the
//! run without changing it; held in snapshots for the GC-pause scenario.

use std::path::Path;

use retention_sim::model::{Actor, EventKind, RunSpec};
use retention_sim::search::world_at;
use retention_sim::world::{Moment, RunSlot};
use retention_sim::{Scenario, Sim};

use crate::cli::{refused, sim};

fn gc_pause() -> RunSpec {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/gc-pause-past-ttl-during-a-delete.toml");
    Scenario::load(&path).expect("the scenario loads").run
}

/// The same run with the server's idle-in-transaction bound off, so the
/// frozen holder's transaction keeps its share lock until it thaws.
fn gc_pause_without_idle_bound() -> RunSpec {
    RunSpec {
        idle_in_transaction_timeout_ms: 0,
        ..gc_pause()
    }
}

fn assert_world_snapshot(name: &str, text: String) {
    insta::with_settings!({
        snapshot_path => "../../../snapshots",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name.to_owned(), text);
    });
}

#[test]
fn mid_pause_the_holder_idles_in_its_transaction_with_its_rows_locked() {
    let world = world_at(&gc_pause(), Moment::AtMs(1_000)).expect("the world at 1 s");
    let txn = &world.database.transactions[0];
    assert!(txn.holds_lease_share && txn.rows_deleted == 200 && txn.statement.is_none());
    assert_eq!(txn.caller.map(|c| c.replica), Some(1));
    assert_eq!(world.replicas[0].process, "paused");
    assert_eq!(world.replicas[0].last_delete_token, Some(1));
    assert_world_snapshot(
        "gc-pause-past-ttl-during-a-delete--at-1000ms",
        world.to_string(),
    );
}

#[test]
fn without_the_idle_bound_the_successor_waits_on_the_lease_row() {
    let world =
        world_at(&gc_pause_without_idle_bound(), Moment::AtMs(6_500)).expect("the world at 6.5 s");
    let db = &world.database;
    let lease = db.lease.as_ref().expect("the row names r1");
    assert!(lease.owner == "r1" && lease.token == 1 && lease.expired);
    let waiting = &db.statements[0];
    assert_eq!((waiting.kind, waiting.phase), ("acquire", "waiting"));
    assert_eq!(waiting.caller.map(|c| c.replica), Some(2));
    assert_eq!(
        waiting.waits_for.as_deref(),
        Some(format!("txn {}", db.transactions[0].txn).as_str())
    );
    assert_eq!(world.replicas[0].last_delete_token, Some(1));
    assert_eq!(world.replicas[1].last_delete_token, None);
    assert_world_snapshot(
        "gc-pause-past-ttl-during-a-delete--no-idle-bound--at-6500ms",
        world.to_string(),
    );
}

/// Reading the world changes nothing in the run: the history is the same
/// event for event, whichever moment is read.
#[test]
fn reading_the_world_leaves_the_run_as_it_was() {
    for spec in [gc_pause(), gc_pause_without_idle_bound()] {
        let plain = Sim::new(&spec).run().expect("valid");
        for moment in [
            Moment::AfterEvent(0),
            Moment::AfterEvent(11),
            Moment::AtMs(1_000),
            Moment::AtMs(6_500),
            Moment::AfterEvent(plain.events.len() - 1),
        ] {
            let slot = RunSlot::capturing(moment);
            let captured = Sim::new(&spec).run_in(&slot).expect("valid");
            assert_eq!(captured, plain, "{moment:?}");
            assert!(slot.capture().is_some(), "{moment:?}: read");
        }
    }
}

/// After an event, the world agrees with the event: the lease row after
/// each grant names the lease granted.
#[test]
fn after_each_grant_the_lease_row_is_the_granted_lease() {
    let spec = gc_pause();
    let history = Sim::new(&spec).run().expect("valid");
    let grants: Vec<(usize, u64)> = (history.events.iter().enumerate())
        .filter_map(|(seq, event)| match (&event.actor, &event.kind) {
            (Actor::Lease, EventKind::Granted { lease, .. }) => Some((seq, lease.token)),
            _ => None,
        })
        .collect();
    assert!(grants.len() >= 3, "{grants:?}");
    for (seq, token) in grants {
        let world = world_at(&spec, Moment::AfterEvent(seq)).expect("in range");
        let row = world.database.lease.expect("a holder");
        // The grant's commit may still be flushing: the committed row is
        // the grant's from its durable instant on, which the event marks.
        assert_eq!(row.token, token, "after event {seq}");
    }
}

#[test]
fn the_command_prints_the_world_and_refuses_instants_outside_the_run() {
    let token = serde_json::to_string(&gc_pause()).unwrap();
    let (code, out, err) = sim(&["replay", &token, "--at", "1000"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("idle in transaction since"), "{out}");
    assert!(out.contains("r1  term 1; PAUSED since 700 ms"), "{out}");
    let (code, out, err) = sim(&["replay", &token, "--at-seq", "11", "--json"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(json["seq"], 11);
    assert!(json["database"]["transactions"].is_array(), "{json}");
    refused(
        &["replay", &token, "--at", "99999"],
        "--at 99999: the run ends at",
    );
    refused(
        &["replay", &token, "--at-seq", "999"],
        "there is no event 999",
    );
    refused(
        &["replay", &token, "--json"],
        "--json: only with --at or --at-seq",
    );
    refused(
        &["replay", &token, "--at", "1000", "--drop-reply", "3"],
        "cannot be used with",
    );
}
