//! The real-mode world's instruments: one history log on the wall clock, and
//! each replica's view of PostgreSQL, with faults injected around the
//! production adapters and every call and database effect recorded in the
//! simulator's history format.
//!
//! Effects are stamped with the database's clock at the moment it decided
//! (the adapters' `Applied::at_us`), so sorting the log by time orders them
//! as the database's locks did; calls are stamped with the same machine's
//! wall clock when issued and answered.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retention_sim::{
    Actor, Event, EventKind, Header, History, Invocation, LeaseRec, OpKind, Outcome, RowRec,
    TermSummary,
};
use retention_worker::pg::{PgLeaseService, PgRecords, SystemClock};
use retention_worker::{
    CallError, CallErrorKind, Clock, Dependencies, Lease, LeaseService, RecordsRepository,
    SeededJitter, Worker, WorkerConfig,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Microseconds since the Unix epoch, on the clock PostgreSQL also reads.
pub fn wall_us() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(since.as_micros()).expect("fits")
}

/// The run's events, each with the microsecond it happened at.
pub struct Log {
    /// Whole milliseconds, so that history times and the database's
    /// millisecond expiries compare exactly.
    pub epoch_ms: i64,
    entries: Mutex<Vec<(i64, Event)>>,
}

impl Log {
    pub fn new() -> Self {
        Self {
            epoch_ms: wall_us() / 1_000,
            entries: Mutex::new(Vec::new()),
        }
    }

    pub fn record_at(&self, at_us: i64, actor: Actor, term: u32, kind: EventKind) {
        let event = Event {
            at_ms: at_us.div_euclid(1_000) - self.epoch_ms,
            actor,
            term,
            kind,
        };
        self.entries.lock().unwrap().push((at_us, event));
    }

    pub fn record(&self, actor: Actor, term: u32, kind: EventKind) {
        self.record_at(wall_us(), actor, term, kind);
    }

    pub fn lease(&self, lease: &Lease) -> LeaseRec {
        LeaseRec {
            owner: lease.owner_id.clone(),
            token: lease.fencing_token,
            expires_at_ms: lease.expires_at_ms - self.epoch_ms,
        }
    }

    /// The events so far, in time order (ties keep the order recorded).
    pub fn history(&self, header: Header) -> History {
        let mut entries = self.entries.lock().unwrap().clone();
        entries.sort_by_key(|(at_us, _)| *at_us);
        History {
            header,
            events: entries.into_iter().map(|(_, event)| event).collect(),
        }
    }
}

/// The fault knobs, per mille of calls; `enabled` turns them all off for
/// the drain phase.
pub struct Faults {
    pub enabled: AtomicBool,
    pub latency_ms_max: u64,
    pub reject_permille: u32,
    pub ambiguous_permille: u32,
    /// Renewals answered `None` after an operator-style revoke of the lease.
    pub revoke_permille: u32,
    /// Renewal replies held past the next renewal tick.
    pub late_renewal_permille: u32,
}

struct Drawn {
    request_delay_ms: u64,
    reply_delay_ms: u64,
    reject: bool,
    ambiguous: bool,
    revoke: bool,
}

/// A process freeze: while closed, nothing is sent, no reply is seen and no
/// timer fires; the wall clock runs on.
#[derive(Clone)]
pub struct Gate(watch::Sender<bool>);

impl Gate {
    fn new() -> Self {
        Self(watch::channel(false).0)
    }

    pub fn close(&self) {
        self.0.send_replace(true);
    }

    pub fn open(&self) {
        self.0.send_replace(false);
    }

    async fn pass(&self) {
        let mut paused = self.0.subscribe();
        while *paused.borrow_and_update() {
            if paused.changed().await.is_err() {
                return;
            }
        }
    }
}

/// The worker's clock: the wall clock, with timers frozen by the gate.
#[derive(Clone)]
pub struct GatedClock(Gate);

impl Clock for GatedClock {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms()
    }

    async fn sleep_ms(&self, duration_ms: u64) {
        tokio::time::sleep(Duration::from_millis(duration_ms)).await;
        self.0.pass().await;
    }
}

/// Counts database calls still running detached, so the run can wait for
/// their effects before it reads the final table.
#[derive(Default)]
pub struct InFlight(AtomicU64);

impl InFlight {
    pub async fn drained(&self) {
        while self.0.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

type RealWorker = Worker<GatedClock, Port, Port>;

/// One replica: identity, fault draws, term count, and its current worker.
pub struct Replica {
    pub index: u32,
    log: Arc<Log>,
    faults: Arc<Faults>,
    rng: Mutex<ChaCha8Rng>,
    next_call: Arc<AtomicU64>,
    in_flight: Arc<InFlight>,
    term: AtomicU32,
    stop_callers: AtomicU32,
    pub gate: Gate,
    /// Between a granted acquire and the term's end.
    pub leading: AtomicBool,
    leases: PgLeaseService,
    records: PgRecords,
    running: Mutex<Option<(Arc<RealWorker>, JoinHandle<()>)>>,
}

/// What the replicas share.
pub struct Shared {
    pub log: Arc<Log>,
    pub faults: Arc<Faults>,
    pub next_call: Arc<AtomicU64>,
    pub in_flight: Arc<InFlight>,
    pub leases: PgLeaseService,
    pub records: PgRecords,
}

impl Replica {
    pub fn new(index: u32, seed: u64, shared: &Shared) -> Arc<Self> {
        Arc::new(Self {
            index,
            log: shared.log.clone(),
            faults: shared.faults.clone(),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed ^ u64::from(index) << 32)),
            next_call: shared.next_call.clone(),
            in_flight: shared.in_flight.clone(),
            term: AtomicU32::new(0),
            stop_callers: AtomicU32::new(0),
            gate: Gate::new(),
            leading: AtomicBool::new(false),
            leases: shared.leases.clone(),
            records: shared.records.clone(),
            running: Mutex::new(None),
        })
    }

    fn record(&self, kind: EventKind) {
        let term = self.term.load(Ordering::SeqCst);
        self.log.record(Actor::Replica(self.index), term, kind);
    }

    /// Starts a fresh worker serving terms.
    pub fn start(self: &Arc<Self>, config: WorkerConfig, jitter_seed: u64) {
        let port = Port(self.clone());
        let deps = Dependencies {
            clock: GatedClock(self.gate.clone()),
            leases: port.clone(),
            records: port,
        };
        let worker =
            Arc::new(Worker::new(format!("r{}", self.index), config, deps).expect("valid config"));
        let (me, serving) = (self.clone(), worker.clone());
        let task = tokio::spawn(async move {
            let on_term = |report: &retention_worker::TermReport| {
                me.leading.store(false, Ordering::SeqCst);
                let TermSummary {
                    end,
                    rows,
                    batches,
                    renewals,
                    release,
                } = report.into();
                me.record(EventKind::TermEnded {
                    end,
                    rows,
                    batches,
                    renewals,
                    release,
                });
            };
            let _ = serving
                .serve(&mut SeededJitter::new(jitter_seed), on_term)
                .await;
        });
        *self.running.lock().unwrap() = Some((worker, task));
    }

    /// Kills the process: its tasks are dropped wherever they are; calls
    /// already sent still reach the database.
    pub async fn kill(&self) {
        let running = self.running.lock().unwrap().take();
        self.record(EventKind::Crashed);
        self.leading.store(false, Ordering::SeqCst);
        if let Some((_, task)) = running {
            task.abort();
            let _ = task.await;
        }
    }

    pub fn record_restart(&self) {
        self.record(EventKind::Restarted);
    }

    pub async fn pause(&self, for_ms: u64) {
        self.freeze(for_ms);
        tokio::time::sleep(Duration::from_millis(for_ms)).await;
        self.thaw();
    }

    /// The first half of [`Replica::pause`], for callers that decide when
    /// the thaw comes; `for_ms` is what the history says it will last.
    pub fn freeze(&self, for_ms: u64) {
        self.gate.close();
        self.record(EventKind::Paused { for_ms });
    }

    pub fn thaw(&self) {
        self.record(EventKind::Resumed);
        self.gate.open();
    }

    /// `callers` concurrent `stop()` calls; resolves when all have.
    pub async fn stop(self: &Arc<Self>, callers: u32) {
        let Some(worker) = self
            .running
            .lock()
            .unwrap()
            .as_ref()
            .map(|(w, _)| w.clone())
        else {
            return;
        };
        let calls: Vec<_> = (0..callers)
            .map(|_| {
                let (me, worker) = (self.clone(), worker.clone());
                tokio::spawn(async move {
                    // A frozen process calls nothing until it thaws.
                    me.gate.pass().await;
                    let caller = me.stop_callers.fetch_add(1, Ordering::SeqCst) + 1;
                    me.record(EventKind::StopCalled { caller });
                    worker.stop().await;
                    me.record(EventKind::StopResolved { caller });
                })
            })
            .collect();
        for call in calls {
            call.await.expect("a stop caller panicked");
        }
        // stop() resolved, so serve() has settled: its task ends at once.
        let running = self.running.lock().unwrap().take();
        if let Some((_, task)) = running {
            task.await.expect("the serve task panicked");
        }
    }

    fn draw(&self, op: OpKind) -> Drawn {
        let f = &self.faults;
        let mut rng = self.rng.lock().unwrap();
        let rolls: [u32; 4] = std::array::from_fn(|_| rng.gen_range(0..1_000));
        let delays: [u64; 3] = std::array::from_fn(|_| rng.gen_range(0..=f.latency_ms_max));
        let late = rng.gen_range(0..600);
        if !f.enabled.load(Ordering::SeqCst) {
            return Drawn {
                request_delay_ms: 0,
                reply_delay_ms: 0,
                reject: false,
                ambiguous: false,
                revoke: false,
            };
        }
        let late_renewal = op == OpKind::Renew && rolls[3] < f.late_renewal_permille;
        let reject = rolls[0] < f.reject_permille;
        Drawn {
            request_delay_ms: delays[0],
            reply_delay_ms: delays[1] + if late_renewal { 400 + late } else { 0 },
            reject,
            ambiguous: !reject && rolls[1] < f.ambiguous_permille,
            revoke: op == OpKind::Renew && !reject && rolls[2] < f.revoke_permille,
        }
    }
}

/// A replica's lease service and repository: the production adapters, with
/// faults around them and every call recorded.
#[derive(Clone)]
pub struct Port(Arc<Replica>);

/// The database side of one call: runs detached (a killed process's request
/// is already on the wire) and records what the database did.
type Exec<T> = Box<
    dyn FnOnce(
            Arc<Replica>,
            u64,
            u32,
            bool,
        ) -> futures_util::future::BoxFuture<'static, Result<T, CallError>>
        + Send,
>;

impl Port {
    async fn call<T: Send + 'static>(
        &self,
        invocation: Invocation,
        exec: Exec<T>,
        outcome: impl FnOnce(&T) -> Outcome,
    ) -> Result<T, CallError> {
        let replica = &self.0;
        replica.gate.pass().await;
        let op = invocation.kind();
        if op == OpKind::Acquire {
            replica.term.fetch_add(1, Ordering::SeqCst);
        }
        let term = replica.term.load(Ordering::SeqCst);
        let call = replica.next_call.fetch_add(1, Ordering::SeqCst) + 1;
        replica.record(EventKind::Invoke { call, invocation });
        let drawn = replica.draw(op);
        sleep_ms(drawn.request_delay_ms).await;
        // Frozen while the request was delayed: it leaves after the thaw.
        replica.gate.pass().await;
        let mut result = if drawn.reject {
            Err(CallError::rejected("injected: refused before sending"))
        } else {
            replica.in_flight.0.fetch_add(1, Ordering::SeqCst);
            let task = exec(replica.clone(), call, term, drawn.revoke);
            let in_flight = replica.in_flight.clone();
            tokio::spawn(async move {
                let result = task.await;
                in_flight.0.fetch_sub(1, Ordering::SeqCst);
                result
            })
            .await
            .expect("a database call panicked")
        };
        sleep_ms(drawn.reply_delay_ms).await;
        replica.gate.pass().await;
        if drawn.ambiguous {
            result = Err(CallError::ambiguous("injected: applied, reply lost"));
        }
        let recorded = match &result {
            Ok(answer) => outcome(answer),
            Err(error) => failed(error),
        };
        replica.record(EventKind::Return {
            call,
            op,
            outcome: recorded,
        });
        result
    }
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

fn failed(error: &CallError) -> Outcome {
    let kind = match error.kind {
        CallErrorKind::Rejected => "rejected",
        CallErrorKind::Ambiguous => "ambiguous",
        CallErrorKind::Fenced => "fenced",
        _ => "protocol",
    };
    Outcome::Failed {
        kind: kind.into(),
        detail: error.detail.clone(),
    }
}

fn record_grant(
    r: &Replica,
    call: u64,
    term: u32,
    op: OpKind,
    got: &Option<retention_worker::pg::Applied<Lease>>,
) {
    match got {
        Some(applied) => {
            let lease = r.log.lease(&applied.value);
            r.log.record_at(
                applied.at_us,
                Actor::Lease,
                term,
                EventKind::Granted { call, lease },
            );
        }
        None => r
            .log
            .record(Actor::Lease, term, EventKind::Refused { call, op }),
    }
}

impl LeaseService for Port {
    async fn acquire(&self, owner_id: &str) -> Result<Option<Lease>, CallError> {
        let owner = owner_id.to_owned();
        let exec: Exec<Option<Lease>> = Box::new(move |r, call, term, _| {
            Box::pin(async move {
                let got = r.leases.acquire_applied(&owner).await?;
                record_grant(&r, call, term, OpKind::Acquire, &got);
                Ok(got.map(|applied| applied.value))
            })
        });
        let log = &self.0.log;
        let answer = self
            .call(Invocation::Acquire, exec, |a| {
                Outcome::Lease(a.as_ref().map(|l| log.lease(l)))
            })
            .await?;
        if answer.is_some() {
            self.0.leading.store(true, Ordering::SeqCst);
        }
        Ok(answer)
    }

    async fn renew(&self, lease: &Lease) -> Result<Option<Lease>, CallError> {
        let sent = lease.clone();
        let invocation = Invocation::Renew {
            lease: self.0.log.lease(lease),
        };
        let exec: Exec<Option<Lease>> = Box::new(move |r, call, term, revoke| {
            Box::pin(async move {
                if revoke {
                    // An operator (or a failover) takes the lease; the
                    // renewal is answered with no lease.
                    match r.leases.release_applied(&sent).await? {
                        Some(at_us) => {
                            let lease = r.log.lease(&sent);
                            r.log.record_at(
                                at_us,
                                Actor::Lease,
                                term,
                                EventKind::Revoked { call, lease },
                            );
                        }
                        None => r.log.record(
                            Actor::Lease,
                            term,
                            EventKind::Refused {
                                call,
                                op: OpKind::Renew,
                            },
                        ),
                    }
                    return Ok(None);
                }
                let got = r.leases.renew_applied(&sent).await?;
                record_grant(&r, call, term, OpKind::Renew, &got);
                Ok(got.map(|applied| applied.value))
            })
        });
        let log = &self.0.log;
        self.call(invocation, exec, |a| {
            Outcome::Lease(a.as_ref().map(|l| log.lease(l)))
        })
        .await
    }

    async fn release(&self, lease: &Lease) -> Result<(), CallError> {
        let sent = lease.clone();
        let invocation = Invocation::Release {
            lease: self.0.log.lease(lease),
        };
        let exec: Exec<()> = Box::new(move |r, call, term, _| {
            Box::pin(async move {
                let cleared = r.leases.release_applied(&sent).await?;
                let kind = EventKind::Released {
                    call,
                    lease: r.log.lease(&sent),
                    cleared: cleared.is_some(),
                };
                match cleared {
                    Some(at_us) => r.log.record_at(at_us, Actor::Lease, term, kind),
                    None => r.log.record(Actor::Lease, term, kind),
                }
                Ok(())
            })
        });
        self.call(invocation, exec, |()| Outcome::Done).await
    }
}

impl RecordsRepository for Port {
    async fn delete_batch(
        &self,
        older_than_ms: i64,
        limit: u32,
        token: u64,
    ) -> Result<u64, CallError> {
        let epoch_ms = self.0.log.epoch_ms;
        let invocation = Invocation::Delete {
            older_than_ms: older_than_ms - epoch_ms,
            limit,
            token,
        };
        let exec: Exec<u64> = Box::new(move |r, call, term, _| {
            Box::pin(async move {
                match r.records.delete_applied(older_than_ms, limit, token).await {
                    Ok(applied) => {
                        let rows = applied
                            .value
                            .iter()
                            .map(|row| RowRec {
                                id: row.id,
                                created_at_ms: row.created_at_ms - epoch_ms,
                            })
                            .collect::<Vec<_>>();
                        let count = rows.len() as u64;
                        let kind = EventKind::Deleted {
                            call,
                            token,
                            older_than_ms: older_than_ms - epoch_ms,
                            rows,
                        };
                        r.log.record_at(applied.at_us, Actor::Db, term, kind);
                        Ok(count)
                    }
                    Err(error) if error.kind == CallErrorKind::Fenced => {
                        let kind = EventKind::Fenced {
                            call,
                            token,
                            reason: error.detail.clone(),
                        };
                        r.log.record(Actor::Db, term, kind);
                        Err(error)
                    }
                    Err(error) => Err(error),
                }
            })
        });
        self.call(invocation, exec, |rows| Outcome::Deleted(*rows))
            .await
    }
}
