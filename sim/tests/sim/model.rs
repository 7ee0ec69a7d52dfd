//! The lease row and the records table the simulated database runs, at the
//! boundaries the checker relies on: a lease is held strictly before its
//! expiry, and a row is old strictly before the cutoff.

use retention_sim::db::Records;
use retention_worker::memory::{FenceRejection, LeaseTable};

#[test]
fn a_lease_lapses_exactly_at_its_expiry() {
    let mut leases = LeaseTable::new(1_000);
    let first = leases.acquire("r1", 0).unwrap();
    assert_eq!(leases.holder(999), Some(&first));
    assert_eq!(
        leases.holder(1_000),
        None,
        "held strictly before expires_at_ms"
    );
    assert_eq!(leases.check_fence(first.fencing_token, 999), Ok(()));
    assert_eq!(
        leases.check_fence(first.fencing_token, 1_000),
        Err(FenceRejection::Expired {
            expires_at_ms: 1_000
        })
    );
    assert_eq!(
        leases.renew(&first, 1_000),
        None,
        "no renewal at the instant of expiry"
    );
    assert!(leases.acquire("r2", 999).is_none());
    let second = leases
        .acquire("r2", 1_000)
        .expect("free at the instant of expiry");
    assert_eq!(second.fencing_token, first.fencing_token + 1);
}

#[test]
fn a_row_at_the_cutoff_is_not_old() {
    let mut rows = Records::new();
    for created_at_ms in [98, 99, 100, 101] {
        rows.insert(created_at_ms);
    }
    assert_eq!(rows.count_older_than(100), 2);
    let deleted: Vec<i64> = rows
        .lock_oldest(1, 100, 10)
        .iter()
        .map(|r| r.created_at_ms)
        .collect();
    assert_eq!(deleted, vec![98, 99]);
    assert_eq!(
        (rows.len(), rows.is_empty()),
        (4, false),
        "gone only at commit"
    );
    assert_eq!(
        rows.lock_oldest(2, 1_000, 1).len(),
        1,
        "the limit bounds a batch"
    );
}

/// The seeded table is built in one pass; it must be the table the same
/// inserts would make, ties in time ordered by id, at any span of times.
#[test]
fn a_table_built_at_once_is_the_table_inserts_make() {
    let wide = [i64::MIN / 2, 5, i64::MAX / 2, 5, -7];
    let narrow = [-3_600_500, 40, -3_600_500, -3_599_000, 40, 39];
    for times in [&wide[..], &narrow[..], &[][..]] {
        let mut inserted = Records::new();
        for &at in times {
            inserted.insert(at);
        }
        let mut built = Records::with_rows(times.iter().copied());
        let all = |rows: &mut Records| rows.lock_oldest(1, i64::MAX, u32::MAX);
        assert_eq!(all(&mut built), all(&mut inserted), "{times:?}");
        assert_eq!(
            built.insert(0),
            inserted.insert(0),
            "ids go on after the seed"
        );
    }
}
