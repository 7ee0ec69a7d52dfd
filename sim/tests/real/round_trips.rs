//! The adapters' conversation measured: each call goes through a proxy
//! that holds every byte from PostgreSQL for `DELAY`, so a call's time over
//! `DELAY` is the number of times it waited for the server. The counts must
//! be the round trips the simulator spends (`calls::round_trips_per_call`):
//! a fresh connection's start-up and prepares, warm calls, a refused
//! fence's extra read, and the new connection after an ambiguous call.

use std::time::{Duration, Instant};

use retention_sim::calls::{AdapterCall, RoundTrip, START_UP_ROUND_TRIPS, round_trips_per_call};
use retention_worker::pg::{PgLeaseService, PgOptions, PgRecords, Pool, connect_pool};
use retention_worker::{CallErrorKind, Lease};
use test_support::{MeteredProxy, Traffic, insert_old_rows};

use crate::on_database;

/// Long beside the server's own time for a statement on loopback (well
/// under a millisecond) and the client's work between replies: a call's
/// time divided by it, rounded, counts its round trips. At 100 ms a fresh
/// connection's acquire once counted 6 round trips for 5 on an idle
/// 2-core machine (the test build's unoptimised SCRAM key derivation runs
/// between two replies); at 300 ms that work would have to take 150 ms.
const DELAY: Duration = Duration::from_millis(300);

/// One call's measure: round trips by time, and what crossed the wire.
#[derive(Debug)]
struct Measured {
    round_trips: usize,
    traffic: Traffic,
}

async fn measure<T>(proxy: &MeteredProxy, call: impl AsyncFnOnce() -> T) -> (T, Measured) {
    let before = proxy.traffic();
    let started = Instant::now();
    let value = call().await;
    let elapsed = started.elapsed();
    let round_trips = (elapsed.as_secs_f64() / DELAY.as_secs_f64()).round() as usize;
    // Fire-and-forget messages (a ROLLBACK, a cancel) may still be passing.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let traffic = proxy.traffic() - before;
    (
        value,
        Measured {
            round_trips,
            traffic,
        },
    )
}

fn adapters(pool: &Pool, call_timeout_ms: u64) -> (PgLeaseService, PgRecords) {
    let options = PgOptions {
        call_timeout_ms,
        ..PgOptions::for_lease_ttl(60_000)
    };
    (
        PgLeaseService::new(pool.clone(), options.clone()),
        PgRecords::new(pool.clone(), options),
    )
}

#[test]
fn each_adapter_call_takes_the_round_trips_the_simulator_spends() {
    let _alone = crate::alone();
    on_database("trips", 2, async |server, admin| {
        insert_old_rows(&admin, 1_000).await;

        // Start-up with the test server's `trust`: one round trip.
        let trusting = MeteredProxy::start(server.port(), DELAY);
        let url = format!("postgres://postgres@127.0.0.1:{}/trips", trusting.port());
        let pool = connect_pool(&url, 1, &PgOptions::default()).expect("pool");
        let (_, opened) = measure(&trusting, async || pool.get().await.map(drop)).await;
        assert_eq!(opened.round_trips, 1, "trust start-up: {opened:?}");

        // From here on, SCRAM-SHA-256 as production: the simulator's model.
        let direct = server.require_passwords("trips", "worker", "pw").await;
        let proxy = MeteredProxy::start(server.port(), DELAY);
        let url = direct.replace(
            &format!(":{}/", server.port()),
            &format!(":{}/", proxy.port()),
        );
        let pool = connect_pool(&url, 1, &PgOptions::default()).expect("pool");
        let (leases, records) = adapters(&pool, 10_000);
        let (impatient, _) = adapters(&pool, 350);
        let admin = connect_pool(&direct, 1, &PgOptions::default()).expect("admin pool");

        use AdapterCall::*;
        let script = [
            Acquire,
            Renew,
            Renew,
            Delete,
            Delete,
            DeleteFenced,
            Release,
            Acquire,
            Ambiguous,
            Renew,
        ];
        let mut measured = Vec::new();
        let mut lease: Option<Lease> = None;
        for call in script {
            let (ok, m) = match call {
                Acquire => {
                    let (granted, m) =
                        measure(&proxy, async || leases.acquire_applied("r1").await).await;
                    let granted = granted.expect("acquire answers");
                    lease = granted.map(|applied| applied.value).or(lease);
                    (true, m)
                }
                Renew => {
                    let held = lease.clone().expect("held");
                    let (renewed, m) =
                        measure(&proxy, async || leases.renew_applied(&held).await).await;
                    lease = Some(renewed.expect("renew answers").expect("renewed").value);
                    (true, m)
                }
                Release => {
                    let held = lease.clone().expect("held");
                    let (released, m) =
                        measure(&proxy, async || leases.release_applied(&held).await).await;
                    (released.expect("release answers").is_some(), m)
                }
                Delete | DeleteFenced => {
                    let token = lease.as_ref().expect("held").fencing_token;
                    let token = if call == Delete { token } else { token - 1 };
                    let (deleted, m) = measure(&proxy, async || {
                        records.delete_applied(i64::MAX, 10, token).await
                    })
                    .await;
                    let fenced = matches!(&deleted, Err(e) if e.kind == CallErrorKind::Fenced);
                    (
                        if call == Delete {
                            deleted.is_ok()
                        } else {
                            fenced
                        },
                        m,
                    )
                }
                Ambiguous => {
                    // Another session holds the lease row: the renewal waits
                    // past the call timeout, is cancelled, and its connection
                    // closed.
                    let holder = admin.get().await.expect("admin connection");
                    holder
                        .batch_execute("BEGIN; SELECT * FROM retention_lease FOR UPDATE")
                        .await
                        .expect("lock the row");
                    let held = lease.clone().expect("held");
                    let (renewed, m) =
                        measure(&proxy, async || impatient.renew_applied(&held).await).await;
                    holder.batch_execute("COMMIT").await.expect("unlock");
                    let ambiguous =
                        matches!(&renewed, Err(e) if e.kind == CallErrorKind::Ambiguous);
                    assert_eq!(m.traffic.cancels, 1, "the adapter cancels: {m:?}");
                    (ambiguous, m)
                }
            };
            assert!(ok, "{call:?} did not end as the script says: {m:?}");
            measured.push(m);
        }

        let modelled = round_trips_per_call(&script);
        for ((call, model), m) in script.iter().zip(&modelled).zip(&measured) {
            // The proxy accepts on loopback itself: TCP's handshake never
            // reaches its clock. Every other round trip does.
            let seen = model
                .iter()
                .filter(|trip| **trip != RoundTrip::Handshake)
                .count();
            if *call == Ambiguous {
                continue;
            }
            eprintln!(
                "{call:?}: {} round trips measured, {} modelled ({model:?}); {:?}",
                m.round_trips,
                model.len(),
                m.traffic
            );
            assert_eq!(
                m.round_trips, seen,
                "{call:?}: model {model:?}, measured {m:?}"
            );
        }
        let fresh = &measured[0].traffic;
        assert_eq!(
            (fresh.connections, fresh.auth_challenges as usize + 1),
            (1, START_UP_ROUND_TRIPS),
            "SCRAM start-up: {fresh:?}"
        );
        // The refused fence's ROLLBACK (and the Close of the statement
        // prepared for FENCE_STATE) leave as the call returns, without a
        // round trip of their own: BEGIN and ROLLBACK crossed the proxy in
        // that call's four waits, and the release behind them waited twice.
        let (fenced, release) = (&measured[5], &measured[6]);
        assert_eq!(
            (fenced.round_trips, fenced.traffic.simple_queries),
            (4, 2),
            "{fenced:?}"
        );
        assert_eq!(release.round_trips, 2, "{release:?}");
        // After the ambiguous call the renewal opened a new connection.
        assert_eq!(measured[9].traffic.connections, 1, "{:?}", measured[9]);
    });
}
