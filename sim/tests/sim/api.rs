//! The worker's API guards, exercised on madsim's clock: one `run()` or
//! `serve()` at a time, and `stop()` terminal for both.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join;
use madsim::runtime::Runtime;
use retention_sim::world::SimClock;
use retention_worker::memory::{InMemoryBackend, RecordTable};
use retention_worker::{
    CallError, Dependencies, Lease, LeaseService, RecordsRepository, RunError, SeededJitter,
    TermEnd, Worker, WorkerConfig,
};

/// A runtime that stops a run stuck for an hour of simulated time, so a
/// broken worker fails the test instead of hanging it.
fn runtime() -> Runtime {
    let mut runtime = Runtime::new();
    runtime.set_time_limit(Duration::from_secs(3_600));
    runtime
}

type Backend = Arc<InMemoryBackend<SimClock>>;
type MemoryWorker = Worker<SimClock, Backend, SlowRecords>;

/// The in-memory repository, taking 40 ms of simulated time per batch so
/// that a term is in progress long enough to be raced.
struct SlowRecords(Backend);

impl RecordsRepository for SlowRecords {
    async fn delete_batch(&self, cutoff_ms: i64, limit: u32, token: u64) -> Result<u64, CallError> {
        madsim::time::sleep(Duration::from_millis(40)).await;
        self.0.delete_batch(cutoff_ms, limit, token).await
    }
}

fn worker(rows: u32) -> Arc<MemoryWorker> {
    let clock = SimClock::new(0).spin_guarded();
    let mut table = RecordTable::new();
    for age in 0..rows {
        table.insert(-3_000_000_000 - i64::from(age));
    }
    let backend = Arc::new(InMemoryBackend::new(clock.clone(), 30_000, table));
    let deps = Dependencies {
        clock,
        leases: backend.clone(),
        records: SlowRecords(backend),
    };
    Arc::new(Worker::new("r1", WorkerConfig::default(), deps).unwrap())
}

#[test]
fn a_second_serve_is_refused_while_the_first_waits_between_terms() {
    runtime().block_on(async {
        let worker = worker(100);
        let serving = worker.clone();
        let first =
            madsim::task::spawn(
                async move { serving.serve(&mut SeededJitter::new(1), |_| {}).await },
            );
        madsim::time::sleep(Duration::from_millis(1_000)).await;
        let second = worker.serve(&mut SeededJitter::new(2), |_| {}).await;
        assert_eq!(second.unwrap_err(), RunError::AlreadyRunning);
        assert_eq!(
            worker.run().await.map(|r| r.end),
            Ok(TermEnd::Completed),
            "run between terms is allowed"
        );
        worker.stop().await;
        assert_eq!(first.await.unwrap().unwrap().terms, 1);
        assert_eq!(
            worker
                .serve(&mut SeededJitter::new(3), |_| {})
                .await
                .unwrap_err(),
            RunError::Stopped
        );
    });
}

#[test]
fn a_run_during_a_running_term_is_refused() {
    runtime().block_on(async {
        let worker = worker(5_000);
        let (first, second) = join(worker.run(), worker.run()).await;
        assert_eq!(first.unwrap().end, TermEnd::Capped);
        assert_eq!(second.unwrap_err(), RunError::AlreadyRunning);
    });
}

#[test]
fn accessors_debug_and_serve_totals_tell_the_truth() {
    runtime().block_on(async {
        let worker = worker(2_500);
        assert_eq!(worker.owner_id(), "r1");
        assert_eq!(worker.config(), &WorkerConfig::default());
        let debug = format!("{worker:?}");
        assert!(
            debug.starts_with("Worker {") && debug.contains("owner_id: \"r1\""),
            "{debug}"
        );

        let serving = worker.clone();
        let ends = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = ends.clone();
        let serve = madsim::task::spawn(async move {
            let record = move |report: &retention_worker::TermReport| {
                seen.lock()
                    .unwrap()
                    .push((report.end.clone(), report.rows_deleted))
            };
            serving.serve(&mut SeededJitter::new(5), record).await
        });
        madsim::time::sleep(Duration::from_secs(600)).await;
        worker.stop().await;
        let summary = serve.await.unwrap().unwrap();
        let ends = ends.lock().unwrap();
        assert!(ends.len() >= 4, "{ends:?}");
        assert_eq!(summary.terms as usize, ends.len());
        assert_eq!(
            summary.terms_led, summary.terms,
            "every term acquired: nobody else contends"
        );
        assert_eq!(summary.terms_lost, 0);
        assert_eq!(
            summary.rows_deleted,
            ends.iter().map(|(_, rows)| rows).sum::<u64>()
        );
        assert_eq!(summary.rows_deleted, 2_500);
    });
}

#[test]
fn errors_and_leases_read_well() {
    use retention_worker::{ConfigError, Lease};
    let cases = [
        (CallError::rejected("busy"), "rejected: busy"),
        (CallError::ambiguous("timeout"), "outcome unknown: timeout"),
        (CallError::fenced("stale token"), "fenced: stale token"),
        (
            CallError::protocol("bad reply"),
            "protocol violation: bad reply",
        ),
    ];
    for (error, text) in cases {
        assert_eq!(error.to_string(), text);
    }
    let lease = Lease {
        owner_id: "r2".into(),
        fencing_token: 7,
        expires_at_ms: 3_000,
    };
    assert_eq!(lease.to_string(), "r2#7 (expires 3000 ms)");
    assert!(RunError::Stopped.to_string().contains("STP-6"));
    assert!(RunError::AlreadyRunning.to_string().contains("in progress"));
    let error = ConfigError {
        field: "batch_size",
        value: "0".into(),
        rule: "must be in 1..=200",
    };
    assert_eq!(
        error.to_string(),
        "invalid worker config: batch_size = 0 must be in 1..=200"
    );
}

#[test]
fn a_worker_on_shared_dependencies_renews_through_them() {
    // Clock and lease service shared through `Arc`, short leases so that a
    // term spans renewals.
    runtime().block_on(async {
        let clock = Arc::new(SimClock::new(0).spin_guarded());
        let mut table = RecordTable::new();
        assert!(table.is_empty());
        for age in 0..1_000 {
            table.insert(-3_000_000_000 - age);
        }
        assert!(!table.is_empty());
        let backend = Arc::new(InMemoryBackend::new(SimClock::clone(&clock), 300, table));
        let mut config = WorkerConfig::default();
        config.lease_ttl_ms = 300;
        config.renew_interval_ms = 100;
        config.expiry_margin_ms = 50;
        config.batch_size = 50;
        let records = SlowRecords(backend.clone());
        let deps = Dependencies {
            clock: clock.clone(),
            leases: backend.clone(),
            records,
        };
        let worker = Worker::new("r1", config, deps).unwrap();
        assert_eq!(
            (worker.config().batch_size, worker.config().lease_ttl_ms),
            (50, 300)
        );
        madsim::time::sleep(Duration::from_secs(5)).await;
        let (shared, own) = (
            retention_worker::Clock::now_ms(&clock),
            retention_worker::Clock::now_ms(&*clock),
        );
        assert!(
            shared == own && own >= 5_000,
            "the Arc reads its clock: {shared} vs {own}"
        );
        let report = worker.run().await.unwrap();
        assert_eq!(report.end, TermEnd::Capped);
        let retention_ms = i64::try_from(WorkerConfig::default().retention_ms).unwrap();
        assert_eq!(
            report.cutoff_ms,
            Some(5_000 - retention_ms),
            "read through the shared clock"
        );
        assert!(report.renewals >= 3, "{report:?}");
        assert_eq!(
            report.last_fencing_token,
            Some(u64::from(report.renewals) + 1)
        );
        let now_ms = retention_worker::Clock::now_ms(&clock);
        assert_eq!(
            backend.with_tables(|leases, _| leases.holder(now_ms).cloned()),
            None,
            "released"
        );
    });
}

/// A lease service that revokes every lease at its first renewal.
struct Revoking(Backend);

impl LeaseService for Revoking {
    async fn acquire(&self, owner_id: &str) -> Result<Option<Lease>, CallError> {
        self.0.acquire(owner_id).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Option<Lease>, CallError> {
        self.0.release(lease).await?;
        Ok(None)
    }

    async fn release(&self, lease: &Lease) -> Result<(), CallError> {
        self.0.release(lease).await
    }
}

#[test]
fn serve_counts_the_terms_that_lost_leadership() {
    runtime().block_on(async {
        let clock = SimClock::new(0).spin_guarded();
        let mut table = RecordTable::new();
        for age in 0..100_000 {
            table.insert(-3_000_000_000 - age);
        }
        let backend = Arc::new(InMemoryBackend::new(clock.clone(), 300, table));
        let mut config = WorkerConfig::default();
        (
            config.lease_ttl_ms,
            config.renew_interval_ms,
            config.expiry_margin_ms,
        ) = (300, 100, 50);
        config.batch_size = 50;
        let deps = Dependencies {
            clock,
            leases: Revoking(backend.clone()),
            records: SlowRecords(backend),
        };
        let worker = Arc::new(Worker::new("r1", config, deps).unwrap());
        let serving = worker.clone();
        let serve =
            madsim::task::spawn(
                async move { serving.serve(&mut SeededJitter::new(9), |_| {}).await },
            );
        madsim::time::sleep(Duration::from_secs(600)).await;
        worker.stop().await;
        let summary = serve.await.unwrap().unwrap();
        assert!(summary.terms >= 3, "{summary:?}");
        assert_eq!(
            (summary.terms_lost, summary.terms_led),
            (summary.terms, summary.terms),
            "{summary:?}"
        );
        assert!(
            summary.rows_deleted > 0 && summary.rows_deleted < 1_000 * u64::from(summary.terms)
        );
    });
}

/// The simulator's ranges (`sim/src/model/ranges.rs`) start at 1 ms, so a
/// run never reaches the worker's own refusal of zero; the worker embedded
/// elsewhere has only that refusal, naming the field.
#[test]
fn the_worker_refuses_a_zero_retention_ttl_or_renew_interval() {
    type Zero = fn(&mut WorkerConfig);
    let zeroed: [(&str, Zero); 3] = [
        ("retention_ms", |c| c.retention_ms = 0),
        ("lease_ttl_ms", |c| c.lease_ttl_ms = 0),
        ("renew_interval_ms", |c| c.renew_interval_ms = 0),
    ];
    for (field, zero) in zeroed {
        let mut config = WorkerConfig::default();
        zero(&mut config);
        let error = config.validate().expect_err(field);
        assert_eq!((error.field, error.rule), (field, "must be > 0"));
    }
}
