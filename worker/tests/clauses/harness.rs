//! A deterministic test world: tokio's paused clock, the in-memory reference
//! models, scripted faults per call, and a log of every call and reply.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use retention_worker::memory::{InMemoryBackend, RecordTable};
use retention_worker::{
    CallError, Clock, Dependencies, Lease, LeaseService, RecordsRepository, TermReport, Worker,
    WorkerConfig,
};
use tokio::time::Instant;

/// The operations a replica performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    Acquire,
    Renew,
    Release,
    Delete,
}

/// One call or reply, as the replica saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at_ms: i64,
    pub owner: String,
    pub op: Op,
    pub what: What,
}

#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// The call was issued; for renew and release, with this lease.
    Call(Option<Lease>, Option<DeleteArgs>),
    /// A lease-service reply (acquire, renew).
    Lease(Option<Lease>),
    /// A delete reply: rows deleted.
    Deleted(u64),
    /// A release reply.
    Released,
    /// Any failed reply.
    Failed(CallError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteArgs {
    pub older_than_ms: i64,
    pub limit: u32,
    pub token: u64,
}

/// What a scripted call does instead of answering at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fault {
    /// Wait this long before the service applies the call.
    pub delay_before_ms: u64,
    /// Wait this long after it applied the call, before replying.
    pub delay_after_ms: u64,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Outcome {
    #[default]
    Normal,
    /// Fail without applying.
    Reject,
    /// Apply, then fail as if the reply was lost.
    LoseReply,
    /// Do not apply; answer `None` (acquire and renew only).
    Null,
}

pub fn delay(before_ms: u64, after_ms: u64) -> Fault {
    Fault {
        delay_before_ms: before_ms,
        delay_after_ms: after_ms,
        outcome: Outcome::Normal,
    }
}

pub fn fail(outcome: Outcome) -> Fault {
    Fault {
        outcome,
        ..Fault::default()
    }
}

/// Shared state of one test.
pub struct World {
    origin: Instant,
    pub backend: InMemoryBackend<ServerClock>,
    log: Mutex<Vec<Event>>,
    /// (owner, op, nth call counted from 1) -> fault.
    script: Mutex<BTreeMap<(String, Op, u32), Fault>>,
    calls: Mutex<BTreeMap<(String, Op), u32>>,
    latency_ms: Mutex<BTreeMap<Op, u64>>,
}

/// The lease service's clock: milliseconds since the world began.
#[derive(Clone)]
pub struct ServerClock(Instant);

impl Clock for ServerClock {
    fn now_ms(&self) -> i64 {
        i64::try_from(self.0.elapsed().as_millis()).unwrap()
    }

    async fn sleep_ms(&self, duration_ms: u64) {
        tokio::time::sleep(Duration::from_millis(duration_ms)).await;
    }
}

/// A replica's clock, possibly skewed against the server's.
#[derive(Clone)]
pub struct ReplicaClock {
    server: ServerClock,
    skew_ms: i64,
}

impl Clock for ReplicaClock {
    fn now_ms(&self) -> i64 {
        self.server.now_ms() + self.skew_ms
    }

    async fn sleep_ms(&self, duration_ms: u64) {
        self.server.sleep_ms(duration_ms).await;
    }
}

/// The lease service and repository as one replica reaches them.
#[derive(Clone)]
pub struct Port {
    world: Arc<World>,
    owner: String,
}

pub type TestWorker = Worker<ReplicaClock, Port, Port>;

/// The configuration most tests use: TTL 3 s, renew every 1 s.
pub fn config() -> WorkerConfig {
    let mut config = WorkerConfig::default();
    config.lease_ttl_ms = 3_000;
    config.renew_interval_ms = 1_000;
    config.expiry_margin_ms = 200;
    config.retention_ms = 10_000;
    config.term_interval_ms = 5_000;
    config.loss_backoff_ms = 8_000;
    config.term_jitter_ms_max = 1_000;
    config
}

impl World {
    /// A world whose table holds `old_rows` rows older than any cutoff a term
    /// starting in the first minute computes, plus `new_rows` recent ones.
    pub fn new(old_rows: usize, new_rows: usize) -> Arc<Self> {
        let origin = Instant::now();
        let mut records = RecordTable::new();
        for i in 0..old_rows {
            records.insert(-100_000 - i as i64);
        }
        for i in 0..new_rows {
            records.insert(-5_000 + i as i64);
        }
        Arc::new(Self {
            origin,
            backend: InMemoryBackend::new(ServerClock(origin), config().lease_ttl_ms, records),
            log: Mutex::default(),
            script: Mutex::default(),
            calls: Mutex::default(),
            latency_ms: Mutex::default(),
        })
    }

    pub fn now_ms(&self) -> i64 {
        ServerClock(self.origin).now_ms()
    }

    /// Every call of `op` answers after `ms`, unless scripted otherwise.
    pub fn latency(&self, op: Op, ms: u64) {
        self.latency_ms.lock().unwrap().insert(op, ms);
    }

    /// This world, with every `op` call taking `ms` (see [`World::latency`]).
    pub fn with_latency(self: Arc<Self>, op: Op, ms: u64) -> Arc<Self> {
        self.latency(op, ms);
        self
    }

    /// The `nth` call (from 1) of `op` by `owner` behaves as `fault`.
    pub fn script(&self, owner: &str, op: Op, nth: u32, fault: Fault) {
        let key = (owner.to_owned(), op, nth);
        self.script.lock().unwrap().insert(key, fault);
    }

    pub fn worker(self: &Arc<Self>, owner: &str, config: WorkerConfig) -> Arc<TestWorker> {
        self.skewed_worker(owner, config, 0)
    }

    /// One term of a fresh worker for `owner`, run to its end.
    pub async fn term(self: &Arc<Self>, owner: &str, config: WorkerConfig) -> TermReport {
        let worker = self.worker(owner, config);
        worker.run().await.expect("the term ran")
    }

    pub fn skewed_worker(
        self: &Arc<Self>,
        owner: &str,
        config: WorkerConfig,
        skew_ms: i64,
    ) -> Arc<TestWorker> {
        let deps = self.deps(owner, skew_ms);
        Arc::new(Worker::new(owner, config, deps).expect("test config is valid"))
    }

    /// The dependencies replica `owner` reaches, its clock `skew_ms` ahead.
    pub fn deps(
        self: &Arc<Self>,
        owner: &str,
        skew_ms: i64,
    ) -> Dependencies<ReplicaClock, Port, Port> {
        let port = Port {
            world: self.clone(),
            owner: owner.to_owned(),
        };
        let clock = ReplicaClock {
            server: ServerClock(self.origin),
            skew_ms,
        };
        Dependencies {
            clock,
            leases: port.clone(),
            records: port,
        }
    }

    pub fn log(&self) -> Vec<Event> {
        self.log.lock().unwrap().clone()
    }

    pub fn holder(&self) -> Option<Lease> {
        let now_ms = self.now_ms();
        self.backend
            .with_tables(|leases, _| leases.holder(now_ms).cloned())
    }

    pub fn rows_left(&self) -> usize {
        self.backend.with_tables(|_, records| records.len())
    }

    fn record(&self, owner: &str, op: Op, what: What) {
        let event = Event {
            at_ms: self.now_ms(),
            owner: owner.to_owned(),
            op,
            what,
        };
        self.log.lock().unwrap().push(event);
    }

    fn fault_for(&self, owner: &str, op: Op) -> Fault {
        let mut calls = self.calls.lock().unwrap();
        let nth = calls.entry((owner.to_owned(), op)).or_default();
        *nth += 1;
        let key = (owner.to_owned(), op, *nth);
        let scripted = self.script.lock().unwrap().get(&key).copied();
        scripted.unwrap_or_else(|| {
            delay(
                0,
                self.latency_ms
                    .lock()
                    .unwrap()
                    .get(&op)
                    .copied()
                    .unwrap_or(0),
            )
        })
    }
}

impl Port {
    /// Runs `apply` (a lazy future: nothing happens unless it is awaited)
    /// against the backend under this call's scripted fault,
    /// logging the call and its reply.
    async fn call<T>(
        &self,
        op: Op,
        call: What,
        apply: impl Future<Output = Result<T, CallError>>,
        null: impl FnOnce() -> Result<T, CallError>,
        reply: impl FnOnce(&T) -> What,
    ) -> Result<T, CallError> {
        let world = &self.world;
        world.record(&self.owner, op, call);
        let fault = world.fault_for(&self.owner, op);
        pause(fault.delay_before_ms).await;
        let result = match fault.outcome {
            Outcome::Normal => apply.await,
            Outcome::Reject => Err(CallError::rejected("scripted rejection")),
            Outcome::Null => null(),
            Outcome::LoseReply => {
                let _ = apply.await;
                Err(CallError::ambiguous("scripted lost reply"))
            }
        };
        pause(fault.delay_after_ms).await;
        let logged = match &result {
            Ok(value) => reply(value),
            Err(error) => What::Failed(error.clone()),
        };
        world.record(&self.owner, op, logged);
        result
    }
}

impl Port {
    /// A call that answers with a lease or none (acquire, renew), sent with
    /// `lease` (renew's) and applied by `apply`.
    async fn lease_call(
        &self,
        op: Op,
        lease: Option<Lease>,
        apply: impl Future<Output = Result<Option<Lease>, CallError>>,
    ) -> Result<Option<Lease>, CallError> {
        let call = What::Call(lease, None);
        self.call(op, call, apply, || Ok(None), |l| What::Lease(l.clone()))
            .await
    }
}

async fn pause(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

impl LeaseService for Port {
    async fn acquire(&self, owner_id: &str) -> Result<Option<Lease>, CallError> {
        let apply = self.world.backend.acquire(owner_id);
        self.lease_call(Op::Acquire, None, apply).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Option<Lease>, CallError> {
        let apply = self.world.backend.renew(lease);
        self.lease_call(Op::Renew, Some(lease.clone()), apply).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), CallError> {
        let backend = &self.world.backend;
        let call = What::Call(Some(lease.clone()), None);
        let apply = backend.release(lease);
        self.call(Op::Release, call, apply, || Ok(()), |_| What::Released)
            .await
    }
}

impl RecordsRepository for Port {
    async fn delete_batch(&self, cutoff_ms: i64, limit: u32, token: u64) -> Result<u64, CallError> {
        let backend = &self.world.backend;
        let args = DeleteArgs {
            older_than_ms: cutoff_ms,
            limit,
            token,
        };
        let call = What::Call(None, Some(args));
        let apply = backend.delete_batch(cutoff_ms, limit, token);
        self.call(Op::Delete, call, apply, || Ok(0), |n| What::Deleted(*n))
            .await
    }
}
