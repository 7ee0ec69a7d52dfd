//! Concurrent differential test: interleavings of the adapters' own SQL
//! (`retention_worker::pg::{ACQUIRE, RENEW, RELEASE, FENCE, DELETE_OLDEST}`)
//! over three PostgreSQL connections, each step run against a real server
//! and against the simulator's database model (`retention_sim::db`). After
//! every step both must agree on who waits (the server's view is
//! `pg_stat_activity`: a backend waiting on a `Lock`), on every answer, and
//! on the lease row. Scripted interleavings name the stories; seeded ones
//! mix the same steps at random.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retention_sim::db::{Answer as DbAnswer, Bounds, LeaseAnswer, LeaseStatement, Refusal};

use crate::db_driver::Driver;
use retention_worker::Lease;
use retention_worker::pg::{ACQUIRE, DELETE_OLDEST, FENCE, RELEASE, RENEW};
use tokio::task::JoinHandle;
use tokio_postgres::{Client, NoTls};

use crate::runtime;
use test_support::TempServer;

const TTL_MS: i64 = 1_000;
const CONNECTIONS: usize = 3;
const GENERATED: u64 = 24;
const STEPS: usize = 14;

/// One step of an interleaving, on connection `.0` where it has one.
#[derive(Debug, Clone)]
enum Step {
    Advance(i64),
    Begin(usize),
    Fence(usize, u64),
    Delete(usize, i64, i64),
    Commit(usize),
    Rollback(usize),
    /// The connection closes with its transaction open.
    Close(usize),
    Acquire(usize, &'static str),
    Renew(usize, Lease),
    Release(usize, Lease),
}

/// What a statement answered, as both sides can say it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Lease(Option<Lease>),
    Cleared(bool),
    Fenced(bool),
    Deleted(Vec<(i64, i64)>),
    Done,
}

fn lease_of(row: Option<&tokio_postgres::Row>) -> Option<Lease> {
    row.map(|row| Lease {
        owner_id: row.get(0),
        fencing_token: u64::try_from(row.get::<_, i64>(1)).expect("positive"),
        expires_at_ms: row.get(2),
    })
}

struct Server {
    url: String,
    observer: Client,
    clients: Vec<Option<(Arc<Client>, i32)>>,
    running: BTreeMap<usize, JoinHandle<Answer>>,
}

async fn connect(url: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

impl Server {
    async fn new(url: String) -> Self {
        let observer = connect(&url).await;
        observer
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS concurrent_clock (now_us bigint NOT NULL);
                 CREATE OR REPLACE FUNCTION retention_now_us() RETURNS bigint
                     LANGUAGE sql VOLATILE AS $$ SELECT now_us FROM concurrent_clock $$;",
            )
            .await
            .expect("install the test clock");
        Self {
            url,
            observer,
            clients: Vec::new(),
            running: BTreeMap::new(),
        }
    }

    async fn reset(&mut self, now_ms: i64, rows: &[i64]) {
        self.running.clear();
        self.clients.clear();
        self.observer
            .batch_execute(
                "TRUNCATE retention_lease; TRUNCATE retention_records RESTART IDENTITY;
                 TRUNCATE concurrent_clock;",
            )
            .await
            .expect("reset");
        self.set_clock(now_ms).await;
        for &at in rows {
            self.observer
                .execute(
                    "INSERT INTO retention_records (created_at_ms) VALUES ($1)",
                    &[&at],
                )
                .await
                .expect("insert");
        }
        for _ in 0..CONNECTIONS {
            let client = connect(&self.url).await;
            let pid: i32 = client
                .query_one("SELECT pg_backend_pid()", &[])
                .await
                .unwrap()
                .get(0);
            self.clients.push(Some((Arc::new(client), pid)));
        }
    }

    async fn set_clock(&self, now_ms: i64) {
        self.observer
            .batch_execute(&format!(
                "DELETE FROM concurrent_clock; INSERT INTO concurrent_clock VALUES ({})",
                now_ms * 1_000
            ))
            .await
            .expect("set the clock");
    }

    /// Starts `step`'s statement on its connection.
    fn start(&mut self, step: &Step) {
        let (c, sql, params): (usize, String, Vec<Param>) = match step {
            Step::Begin(c) => (*c, "BEGIN".into(), vec![]),
            Step::Commit(c) => (*c, "COMMIT".into(), vec![]),
            Step::Rollback(c) => (*c, "ROLLBACK".into(), vec![]),
            Step::Fence(c, token) => (
                *c,
                FENCE.into(),
                vec![Param::Text("retention".into()), Param::Int(*token as i64)],
            ),
            Step::Delete(c, cutoff, limit) => (
                *c,
                DELETE_OLDEST.into(),
                vec![Param::Int(*cutoff), Param::Int(*limit), Param::Int(0)],
            ),
            Step::Acquire(c, owner) => (
                *c,
                ACQUIRE.into(),
                vec![
                    Param::Text("retention".into()),
                    Param::Text((*owner).into()),
                    Param::Int(TTL_MS),
                ],
            ),
            Step::Renew(c, lease) => (*c, RENEW.into(), lease_params(lease, true)),
            Step::Release(c, lease) => (*c, RELEASE.into(), lease_params(lease, false)),
            Step::Advance(_) | Step::Close(_) => unreachable!("not a statement"),
        };
        let (client, _) = self.clients[c].clone().expect("an open connection");
        let kind = step.clone();
        let task = tokio::spawn(async move {
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                params.iter().map(Param::as_sql).collect();
            let rows = client
                .query(sql.as_str(), &params)
                .await
                .expect("a statement");
            match kind {
                Step::Fence(..) => Answer::Fenced(rows.is_empty()),
                Step::Delete(..) => {
                    Answer::Deleted(rows.iter().map(|r| (r.get(1), r.get(0))).collect())
                }
                Step::Acquire(..) | Step::Renew(..) => Answer::Lease(lease_of(rows.first())),
                Step::Release(..) => Answer::Cleared(!rows.is_empty()),
                _ => Answer::Done,
            }
        });
        self.running.insert(c, task);
    }

    /// Whether connection `c`'s backend waits for a lock.
    async fn waits(&self, c: usize) -> bool {
        let Some((_, pid)) = self.clients[c] else {
            return false;
        };
        let row = self
            .observer
            .query_opt(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1",
                &[&pid],
            )
            .await
            .expect("read pg_stat_activity");
        row.and_then(|row| row.get::<_, Option<String>>(0))
            .as_deref()
            == Some("Lock")
    }

    /// Lets the server settle, then returns the connections still waiting
    /// and the answers of the statements that finished.
    async fn settle(&mut self) -> (Vec<usize>, BTreeMap<usize, Answer>) {
        let mut done = BTreeMap::new();
        for _ in 0..200 {
            let mut undecided = false;
            for c in self.running.keys().copied().collect::<Vec<_>>() {
                if self.running[&c].is_finished() {
                    let answer = self.running.remove(&c).unwrap().await.expect("no panic");
                    done.insert(c, answer);
                } else if !self.waits(c).await {
                    undecided = true;
                }
            }
            if !undecided {
                // Seen waiting (or finished) twice in a row: settled.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let still: Vec<usize> = self.running.keys().copied().collect();
                let mut stable = true;
                for &c in &still {
                    stable &= self.running[&c].is_finished() || self.waits(c).await;
                }
                if stable && still.iter().all(|c| !self.running[c].is_finished()) {
                    return (still, done);
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!(
            "the server did not settle: {:?} still running",
            self.running.keys()
        );
    }

    async fn close(&mut self, c: usize) {
        let (client, pid) = self.clients[c].take().expect("an open connection");
        drop(client);
        // The backend ends and rolls back once it sees the socket close.
        for _ in 0..400 {
            let gone = self
                .observer
                .query_opt("SELECT 1 FROM pg_stat_activity WHERE pid = $1", &[&pid])
                .await
                .unwrap()
                .is_none();
            if gone {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("backend {pid} outlived its connection");
    }

    async fn row(&self) -> Option<(Option<String>, i64, i64)> {
        self.observer
            .query_opt(
                "SELECT owner, token, expires_at_ms FROM retention_lease WHERE name = 'retention'",
                &[],
            )
            .await
            .unwrap()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
    }
}

#[derive(Debug, Clone)]
enum Param {
    Int(i64),
    Text(String),
}

impl Param {
    fn as_sql(&self) -> &(dyn tokio_postgres::types::ToSql + Sync) {
        match self {
            Self::Int(value) => value,
            Self::Text(value) => value,
        }
    }
}

fn lease_params(lease: &Lease, with_ttl: bool) -> Vec<Param> {
    let mut params = vec![
        Param::Text("retention".into()),
        Param::Text(lease.owner_id.clone()),
        Param::Int(lease.fencing_token as i64),
        Param::Int(lease.expires_at_ms),
    ];
    if with_ttl {
        params.push(Param::Int(TTL_MS));
    }
    params
}

/// The simulator's database, stepped the same way: connection `c` is
/// session `c + 1`.
struct Model {
    db: Driver,
    now_ms: i64,
    txns: [Option<u64>; CONNECTIONS],
    /// Statements sent and not answered yet, by connection.
    pending: BTreeMap<usize, (u64, Step)>,
}

impl Model {
    fn new(now_ms: i64, rows: &[i64]) -> Self {
        let mut db = Driver::new(TTL_MS as u64, rows, Bounds::default());
        db.advance(now_ms);
        Self {
            db,
            now_ms,
            txns: [None; CONNECTIONS],
            pending: BTreeMap::new(),
        }
    }

    fn answer(&self, step: &Step, answer: &Result<DbAnswer, Refusal>) -> Answer {
        match (step, answer) {
            (_, Ok(DbAnswer::Lease(applied))) => match &applied.answer {
                LeaseAnswer::Granted(lease) => Answer::Lease(Some(lease.clone())),
                LeaseAnswer::Refused => Answer::Lease(None),
                LeaseAnswer::Cleared { cleared } => Answer::Cleared(*cleared),
            },
            (_, Ok(DbAnswer::Fence(checked))) => Answer::Fenced(checked.is_err()),
            (Step::Delete(..), Ok(DbAnswer::Deleted(rows))) => Answer::Deleted(
                rows.iter()
                    .map(|r| (r.created_at_ms, r.id as i64))
                    .collect(),
            ),
            (_, Ok(_)) => Answer::Done,
            (_, Err(refusal)) => panic!("{step:?} failed in the model: {refusal:?}"),
        }
    }

    fn txn(&self, c: usize) -> u64 {
        self.txns[c].expect("a transaction is open")
    }

    /// Runs `step`; returns who waits and what finished.
    fn step(&mut self, step: &Step) -> (Vec<usize>, BTreeMap<usize, Answer>) {
        let now = self.now_ms;
        let session = |c: &usize| *c as u64 + 1;
        let sent = match step {
            Step::Advance(ms) => {
                self.now_ms += ms;
                self.db.advance(self.now_ms);
                None
            }
            Step::Begin(c) => {
                self.txns[*c] = Some(self.db.begin(now, session(c)));
                None
            }
            Step::Fence(c, token) => Some(self.db.fence(now, session(c), self.txn(*c), *token)),
            Step::Delete(c, cutoff, limit) => {
                let limit = u32::try_from(*limit).expect("small");
                let txn = self.txn(*c);
                Some(self.db.delete(now, session(c), txn, (*cutoff, limit, 0)))
            }
            Step::Commit(c) => {
                let txn = self.txns[*c].take().expect("open");
                Some(self.db.commit(now, session(c), txn))
            }
            Step::Rollback(c) => {
                let txn = self.txns[*c].take().expect("open");
                Some(self.db.rollback(now, session(c), txn))
            }
            Step::Close(c) => {
                self.txns[*c] = None;
                self.db.close(now, session(c));
                None
            }
            Step::Acquire(c, owner) => {
                let owner = (*owner).to_owned();
                Some(
                    self.db
                        .lease(now, session(c), LeaseStatement::Acquire { owner }),
                )
            }
            Step::Renew(c, lease) => {
                let lease = lease.clone();
                Some(
                    self.db
                        .lease(now, session(c), LeaseStatement::Renew { lease }),
                )
            }
            Step::Release(c, lease) => {
                let lease = lease.clone();
                Some(
                    self.db
                        .lease(now, session(c), LeaseStatement::Release { lease }),
                )
            }
        };
        let mut done = BTreeMap::new();
        if let Step::Begin(c) = step {
            done.insert(*c, Answer::Done);
        }
        if let (
            Some(id),
            Step::Begin(c)
            | Step::Fence(c, _)
            | Step::Delete(c, ..)
            | Step::Commit(c)
            | Step::Rollback(c)
            | Step::Acquire(c, _)
            | Step::Renew(c, _)
            | Step::Release(c, _),
        ) = (sent, step)
        {
            self.pending.insert(*c, (id, step.clone()));
        }
        let answered: Vec<usize> = self
            .pending
            .iter()
            .filter(|(_, (id, _))| self.db.answer(*id).is_some())
            .map(|(c, _)| *c)
            .collect();
        for c in answered {
            let (id, step) = self.pending.remove(&c).expect("listed");
            let (_, answer) = self.db.answer(id).expect("answered").clone();
            done.insert(c, self.answer(&step, &answer));
        }
        let waiting: Vec<usize> = self.pending.keys().copied().collect();
        (waiting, done)
    }
}

fn sorted(mut done: BTreeMap<usize, Answer>) -> BTreeMap<usize, Answer> {
    for answer in done.values_mut() {
        if let Answer::Deleted(rows) = answer {
            rows.sort_unstable();
        }
    }
    done
}

/// Runs `steps` on both sides, comparing after every step; returns how
/// many steps made a statement wait.
async fn compare(server: &mut Server, name: &str, steps: &[Step]) -> usize {
    let rows: Vec<i64> = (1..=8).collect();
    let start_ms = 1_000_000;
    server.reset(start_ms, &rows).await;
    let mut model = Model::new(start_ms, &rows);
    let mut waits = 0;
    let mut listing = String::new();
    for (index, step) in steps.iter().enumerate() {
        listing.push_str(&format!("  {index:>2}: {step:?}\n"));
        match step {
            Step::Advance(_) => {}
            Step::Close(c) => server.close(*c).await,
            _ => server.start(step),
        }
        let (expected_waiting, expected_done) = model.step(step);
        if let Step::Advance(_) = step {
            server.set_clock(model.now_ms).await;
        }
        let (waiting, done) = server.settle().await;
        let context = format!("{name}, after step {index}:\n{listing}");
        assert_eq!(waiting, expected_waiting, "who waits, {context}");
        assert_eq!(sorted(done), sorted(expected_done), "answers, {context}");
        let stored = model.db.db.lease().stored().cloned();
        let row = server.row().await;
        match (&row, &stored) {
            (Some((Some(owner), token, expires)), Some(lease)) => assert_eq!(
                (owner.as_str(), *token as u64, *expires),
                (
                    lease.owner_id.as_str(),
                    lease.fencing_token,
                    lease.expires_at_ms
                ),
                "the lease row, {context}"
            ),
            (None | Some((None, ..)), None) => {}
            _ => panic!("the lease row: server {row:?}, model {stored:?}, {context}"),
        }
        waits += waiting.len();
    }
    waits
}

/// A seeded interleaving that only takes steps a client could: a waiting
/// connection does nothing, a delete follows a fence that passed, a
/// refused fence is rolled back.
fn generate(seed: u64) -> Vec<Step> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut model = Model::new(1_000_000, &(1..=8).collect::<Vec<_>>());
    let mut leases: Vec<Lease> = Vec::new();
    let mut fenced = [None::<bool>; CONNECTIONS];
    let mut steps = Vec::new();
    while steps.len() < STEPS {
        let (waiting, _) = model.step(&Step::Advance(0));
        let free: Vec<usize> = (0..CONNECTIONS).filter(|c| !waiting.contains(c)).collect();
        let step = if free.is_empty() || rng.gen_ratio(1, 6) {
            Step::Advance(rng.gen_range(100..=700))
        } else {
            let c = free[rng.gen_range(0..free.len())];
            let pick = |rng: &mut ChaCha8Rng, leases: &[Lease]| {
                leases.get(rng.gen_range(0..leases.len().max(1))).cloned()
            };
            match (model.txns[c], fenced[c]) {
                (None, _) => match rng.gen_range(0..4) {
                    0 => Step::Begin(c),
                    1 => Step::Acquire(c, ["a", "b", "c"][c]),
                    choice => match pick(&mut rng, &leases) {
                        Some(lease) if choice == 2 => Step::Renew(c, lease),
                        Some(lease) => Step::Release(c, lease),
                        None => Step::Acquire(c, ["a", "b", "c"][c]),
                    },
                },
                (Some(_), None) => {
                    let token = leases.last().map_or(1, |l| l.fencing_token);
                    let token = if rng.gen_ratio(1, 4) {
                        token.saturating_sub(1).max(1)
                    } else {
                        token
                    };
                    Step::Fence(c, token)
                }
                (Some(_), Some(true)) => Step::Rollback(c),
                (Some(_), Some(false)) => match rng.gen_range(0..5) {
                    0 | 1 => Step::Delete(c, rng.gen_range(3..=9), rng.gen_range(1..=4)),
                    2 => Step::Commit(c),
                    3 => Step::Rollback(c),
                    _ => Step::Close(c),
                },
            }
        };
        let (_, done) = model.step(&step);
        if let Step::Fence(c, _) = step {
            fenced[c] = match done.get(&c) {
                Some(Answer::Fenced(refused)) => Some(*refused),
                _ => None,
            };
        }
        if let Step::Commit(c) | Step::Rollback(c) | Step::Close(c) = step {
            fenced[c] = None;
        }
        for answer in done.values() {
            if let Answer::Lease(Some(lease)) = answer {
                leases.push(lease.clone());
            }
        }
        if let Step::Close(_) = step {
            // A closed connection is not reused: stop before it would be.
            steps.push(step);
            break;
        }
        steps.push(step);
    }
    steps
}

fn lease(owner: &str, token: u64, expires_at_ms: i64) -> Lease {
    Lease {
        owner_id: owner.into(),
        fencing_token: token,
        expires_at_ms,
    }
}

/// The named stories: (name, steps). Leases are known in advance: the first
/// acquire at 1,000,000 ms grants token 1, expiring a TTL later.
fn scripted() -> Vec<(&'static str, Vec<Step>)> {
    use Step::*;
    let first = lease("a", 1, 1_001_000);
    vec![
        (
            "a renewal waits for the open delete and is judged at its start",
            vec![
                Acquire(0, "a"),
                Begin(1),
                Fence(1, 1),
                Delete(1, 9, 3),
                Advance(200),
                Renew(0, first.clone()),
                Advance(900),
                Commit(1),
            ],
        ),
        (
            "a successor waits behind an open transaction past the lease's expiry",
            vec![
                Acquire(0, "a"),
                Begin(1),
                Fence(1, 1),
                Advance(1_500),
                Acquire(2, "b"),
                Advance(300),
                Rollback(1),
            ],
        ),
        (
            "statements naming another lease do not wait; an acquire always does",
            vec![
                Acquire(0, "a"),
                Begin(1),
                Fence(1, 1),
                Renew(0, lease("a", 7, 1_001_000)),
                Release(2, lease("a", 7, 1_001_000)),
                Release(2, first.clone()),
                Acquire(0, "c"),
                Commit(1),
            ],
        ),
        (
            "a second fence passes a queued renewal",
            vec![
                Acquire(0, "a"),
                Begin(1),
                Fence(1, 1),
                Renew(2, first.clone()),
                Begin(0),
                Fence(0, 1),
                Commit(1),
                Delete(0, 9, 2),
                Commit(0),
            ],
        ),
        (
            "a connection closed mid-transaction rolls back and wakes the waiter",
            vec![
                Acquire(0, "a"),
                Begin(1),
                Fence(1, 1),
                Delete(1, 9, 8),
                Advance(1_200),
                Acquire(2, "b"),
                Close(1),
            ],
        ),
        (
            "SKIP LOCKED leaves another transaction's rows: a short batch",
            vec![
                Acquire(0, "a"),
                Begin(1),
                Fence(1, 1),
                Delete(1, 9, 5),
                Begin(2),
                Fence(2, 1),
                Delete(2, 9, 5),
                Rollback(1),
                Commit(2),
            ],
        ),
    ]
}

#[test]
fn interleavings_agree_with_postgresql() {
    let server = TempServer::start();
    let url = server.url("concurrent");
    runtime().block_on(async {
        drop(server.database("concurrent", 1).await);
        let mut pg = Server::new(url).await;
        let mut waited = 0;
        for (name, steps) in scripted() {
            waited += compare(&mut pg, name, &steps).await;
        }
        let mut generated_waits = 0;
        for seed in 0..GENERATED {
            let steps = generate(seed);
            generated_waits += compare(&mut pg, &format!("generated seed {seed}"), &steps).await;
        }
        eprintln!(
            "concurrent differential: {} scripted and {GENERATED} generated interleavings agreed; \
             {waited} scripted and {generated_waits} generated step-ends with a statement waiting",
            scripted().len()
        );
        assert!(
            generated_waits > 0,
            "the generated interleavings never made anything wait"
        );
    });
}
