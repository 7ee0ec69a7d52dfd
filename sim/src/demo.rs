//! Replicas serving terms against the in-memory reference models, under one
//! seed: the runnable core that the networked simulation grows from.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use madsim::runtime::Runtime;
use retention_worker::memory::{InMemoryBackend, RecordTable};
use retention_worker::{Dependencies, SeededJitter, TermReport, Worker, WorkerConfig};

use crate::SimClock;

/// What a demo run simulates. Defaults: 3 replicas, 5,000 old rows and 500
/// recent ones, 10 simulated minutes.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// The seed of madsim's runtime and of every replica's jitter.
    pub seed: u64,
    /// Replicas serving at once, 1-5.
    pub replicas: u32,
    /// Rows older than any cutoff of the run.
    pub old_rows: u32,
    /// Rows younger than the first term's cutoff.
    pub recent_rows: u32,
    /// When every replica is stopped, in simulated milliseconds.
    pub stop_at_ms: u64,
    /// The worker configuration every replica uses.
    pub worker: WorkerConfig,
}

impl Default for DemoConfig {
    fn default() -> Self {
        let mut worker = WorkerConfig::default();
        worker.retention_ms = 3_600_000;
        Self {
            seed: 1,
            replicas: 3,
            old_rows: 5_000,
            recent_rows: 500,
            stop_at_ms: 600_000,
            worker,
        }
    }
}

/// The result of a demo run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoOutcome {
    /// One line per finished term, in simulated-time order.
    pub timeline: String,
    /// Rows deleted over all terms.
    pub rows_deleted: u64,
    /// Rows left in the table at the end.
    pub rows_left: usize,
    /// The largest number of rows any one term deleted.
    pub most_rows_in_a_term: u64,
}

/// Runs the demo in a fresh madsim runtime seeded with `config.seed`.
pub fn run_demo(config: &DemoConfig) -> DemoOutcome {
    assert!((1..=5).contains(&config.replicas), "replicas must be 1-5");
    let runtime = Runtime::with_seed_and_config(config.seed, madsim::Config::default());
    let config = config.clone();
    runtime.block_on(async move { simulate(config).await })
}

async fn simulate(config: DemoConfig) -> DemoOutcome {
    let clock = SimClock::new(0);
    let retention = i64::try_from(config.worker.retention_ms).expect("validated");
    let mut records = RecordTable::new();
    for i in 0..config.old_rows {
        records.insert(-retention - 1 - i64::from(i));
    }
    for i in 0..config.recent_rows {
        records.insert(-i64::from(i));
    }
    let backend = Arc::new(InMemoryBackend::new(
        clock,
        config.worker.lease_ttl_ms,
        records,
    ));
    let terms: Arc<Mutex<Vec<(i64, String, TermReport)>>> = Arc::default();

    let mut replicas = Vec::new();
    for index in 1..=config.replicas {
        let owner = format!("r{index}");
        let deps = Dependencies {
            clock,
            leases: backend.clone(),
            records: backend.clone(),
        };
        let worker = Arc::new(
            Worker::new(owner.clone(), config.worker.clone(), deps).expect("valid config"),
        );
        let (serving, terms) = (worker.clone(), terms.clone());
        let jitter_seed = config.seed ^ u64::from(index).wrapping_mul(0x9E37_79B9);
        let task = madsim::task::spawn(async move {
            let mut jitter = SeededJitter::new(jitter_seed);
            let record = |report: &TermReport| {
                let at_ms = retention_worker::Clock::now_ms(&clock);
                terms
                    .lock()
                    .unwrap()
                    .push((at_ms, owner.clone(), report.clone()));
            };
            serving.serve(&mut jitter, record).await
        });
        replicas.push((worker, task));
    }

    madsim::time::sleep(std::time::Duration::from_millis(config.stop_at_ms)).await;
    for (worker, task) in replicas {
        worker.stop().await;
        task.await.expect("replica task").expect("serve ran");
    }

    let terms = terms.lock().unwrap().clone();
    let mut timeline = String::new();
    for (at_ms, owner, report) in &terms {
        let token = report
            .last_fencing_token
            .map_or("-".into(), |t| t.to_string());
        let _ = writeln!(
            timeline,
            "{at_ms:>9} ms  {owner:<3} token {token:>3}  rows {:>5}  batches {:>2}  {:?}",
            report.rows_deleted, report.batches, report.end
        );
    }
    DemoOutcome {
        timeline,
        rows_deleted: terms.iter().map(|(_, _, r)| r.rows_deleted).sum(),
        rows_left: backend.with_tables(|_, records| records.len()),
        most_rows_in_a_term: terms
            .iter()
            .map(|(_, _, r)| r.rows_deleted)
            .max()
            .unwrap_or(0),
    }
}
