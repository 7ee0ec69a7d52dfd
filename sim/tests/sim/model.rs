//! The lease row and the records table the simulated database runs, at the
//! boundaries the checker relies on: a lease is held strictly before its
//! expiry, and a row is old strictly before the cutoff.

use retention_sim::db::Records;
use retention_sim::model::deleted_young;
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
    // Thousands of rows over spans of one to four radix digits, with ties.
    let seeded: Vec<Vec<i64>> = [1_000_i64, 3_000_000, 1 << 33, (1 << 40) - 1]
        .iter()
        .map(|&span| {
            (0..3_000_i64)
                .map(|i| (i * 7_919 % 2_003) * (span / 2_003) - span / 2)
                .collect()
        })
        .collect();
    let cases = [&wide[..], &narrow[..], &[][..]]
        .into_iter()
        .chain(seeded.iter().map(Vec::as_slice));
    for times in cases {
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

/// The worker crate's reference records model (`memory::RecordTable`, what
/// `InMemoryBackend` deletes from) and the simulated database's table agree
/// under one seeded stream of inserts, counts and deletes: ids in insertion
/// order, "older" strictly before the cutoff, oldest first, the limit.
#[test]
fn the_reference_record_table_agrees_with_the_simulated_database() {
    use rand::{Rng, SeedableRng};
    use retention_worker::memory::RecordTable;

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
    let (mut reference, mut simulated) = (RecordTable::new(), Records::new());
    for step in 0..4_000u64 {
        let at = rng.gen_range(0..50);
        match rng.gen_range(0..4) {
            0 | 1 => {
                let (row, rec) = (reference.insert(at), simulated.insert(at));
                assert_eq!((row.id, row.created_at_ms), (rec.id, rec.created_at_ms));
            }
            2 => assert_eq!(
                reference.count_older_than(at),
                simulated.count_older_than(at),
                "step {step}: rows older than {at}"
            ),
            _ => {
                let limit = rng.gen_range(0..6);
                let deleted: Vec<(u64, i64)> = reference
                    .delete_older_than(at, limit)
                    .iter()
                    .map(|row| (row.id, row.created_at_ms))
                    .collect();
                let locked = simulated.lock_oldest(step + 1, at, limit);
                simulated.remove_locked(step + 1, &locked);
                let expected: Vec<(u64, i64)> =
                    locked.iter().map(|r| (r.id, r.created_at_ms)).collect();
                assert_eq!(
                    deleted, expected,
                    "step {step}: delete older than {at}, {limit}"
                );
            }
        }
        assert_eq!(reference.len(), simulated.len(), "step {step}");
    }
    assert!(!reference.is_empty(), "the stream leaves rows to compare");
}

/// The audits' rule, DATA-4's bound: a row exactly its retention old may
/// go, one a millisecond younger went early.
#[test]
fn a_row_exactly_its_retention_old_is_not_deleted_young() {
    assert!(!deleted_young(1_000, 4_000, 3_000));
    assert!(deleted_young(1_001, 4_000, 3_000));
    assert!(!deleted_young(999, 4_000, 3_000));
}
