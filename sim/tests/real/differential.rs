//! Differential test: seeded sequences of lease and delete operations run
//! against the simulator's database model (`retention_sim::db::Database`,
//! one statement at a time) and against
//! PostgreSQL through the production adapters must agree on every answer:
//! tokens, expiries, grants and refusals, releases, fencing rejections (with
//! their reasons) and the exact rows deleted. Time is the one thing made
//! equal: the test database's `retention_now_us()` reads a clock the test
//! sets, so both sides see the same instant, boundaries included.

use std::fmt::Write as _;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retention_sim::db::{Bounds, LeaseAnswer, LeaseStatement};

use crate::db_driver::Driver;
use retention_worker::pg::{PgLeaseService, PgOptions, PgRecords, Pool};
use retention_worker::{CallErrorKind, Lease};

use crate::on_database;

const TTL_MS: u64 = 1_000;
const OWNERS: [&str; 3] = ["a", "b", "c"];
const SEQUENCES: u64 = 30;
const OPS_PER_SEQUENCE: usize = 80;

#[derive(Debug, Clone)]
enum Op {
    Advance(i64),
    Insert(i64),
    Acquire(usize),
    Renew(Lease),
    Release(Lease),
    Delete {
        older_than_ms: i64,
        limit: u32,
        token: u64,
        /// The second bound, on the database's own clock (0: none).
        retention_ms: u64,
    },
}

/// What either side answered, in a form both produce.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Nothing,
    Lease(Option<Lease>),
    Cleared(bool),
    Deleted(Vec<(i64, u64)>),
    Fenced(String),
}

struct Generator {
    rng: ChaCha8Rng,
    now_ms: i64,
    /// Every lease each owner was granted, newest last.
    granted: [Vec<Lease>; 3],
    last_token: u64,
}

impl Generator {
    fn lease_of(&mut self, owner: usize) -> Option<Lease> {
        let leases = &self.granted[owner];
        if leases.is_empty() {
            return None;
        }
        // Mostly the newest, sometimes a stale one.
        let index = if self.rng.gen_bool(0.7) {
            leases.len() - 1
        } else {
            self.rng.gen_range(0..leases.len())
        };
        Some(leases[index].clone())
    }

    fn next(&mut self) -> Op {
        let ttl = TTL_MS as i64;
        let owner = self.rng.gen_range(0..OWNERS.len());
        match self.rng.gen_range(0..100) {
            0..=14 => {
                // Land on the expiry boundary often: exactly, just before, after.
                let step = [0, 1, ttl - 1, ttl, ttl + 1, self.rng.gen_range(0..2 * ttl)];
                Op::Advance(step[self.rng.gen_range(0..step.len())])
            }
            // Now and then a row stamped ahead of the database's clock, as
            // after that clock stepped back.
            15..=24 if self.rng.gen_bool(0.4) => {
                Op::Insert(self.now_ms + self.rng.gen_range(0..ttl / 2))
            }
            15..=24 => Op::Insert(self.now_ms - self.rng.gen_range(0..3 * ttl)),
            25..=44 => Op::Acquire(owner),
            45..=59 => match self.lease_of(owner) {
                Some(lease) => Op::Renew(lease),
                None => Op::Acquire(owner),
            },
            60..=69 => match self.lease_of(owner) {
                Some(lease) => Op::Release(lease),
                None => Op::Acquire(owner),
            },
            _ => {
                let token = if self.rng.gen_bool(0.5) {
                    self.last_token
                } else {
                    self.rng.gen_range(1..=self.last_token + 1)
                };
                // A term's cutoff may be ahead of the database's clock (it
                // stepped back since the cutoff was fixed); the second bound
                // is what judges such a batch, and 0 turns it off.
                let older_than_ms = if self.rng.gen_bool(0.3) {
                    self.now_ms + self.rng.gen_range(ttl / 2..=ttl)
                } else {
                    self.now_ms - self.rng.gen_range(0..2 * ttl)
                };
                let retention_ms = [0, 0, 1, self.rng.gen_range(0..2 * TTL_MS)];
                Op::Delete {
                    older_than_ms,
                    limit: self.rng.gen_range(1..=8),
                    token,
                    retention_ms: retention_ms[self.rng.gen_range(0..retention_ms.len())],
                }
            }
        }
    }

    fn observe(&mut self, op: &Op, answer: &Answer) {
        if let Op::Advance(ms) = op {
            self.now_ms += ms;
        }
        if let (Op::Acquire(_) | Op::Renew(_), Answer::Lease(Some(lease))) = (op, answer) {
            let owner = OWNERS
                .iter()
                .position(|o| *o == lease.owner_id)
                .expect("a known owner");
            self.granted[owner].push(lease.clone());
            self.last_token = lease.fencing_token;
        }
    }
}

struct Model {
    db: Driver,
    now_ms: i64,
}

impl Model {
    fn apply(&mut self, op: &Op) -> Answer {
        let now = self.now_ms;
        match op {
            Op::Advance(ms) => {
                self.now_ms += ms;
                Answer::Nothing
            }
            Op::Insert(at) => {
                self.db.db.insert(*at);
                Answer::Nothing
            }
            Op::Acquire(owner) => {
                let owner = OWNERS[*owner].to_owned();
                self.lease(LeaseStatement::Acquire { owner })
            }
            Op::Renew(lease) => self.lease(LeaseStatement::Renew {
                lease: lease.clone(),
            }),
            Op::Release(lease) => self.lease(LeaseStatement::Release {
                lease: lease.clone(),
            }),
            Op::Delete {
                older_than_ms,
                limit,
                token,
                retention_ms,
            } => {
                // The adapter's conversation: BEGIN, the fence, the delete,
                // COMMIT (ROLLBACK when fenced).
                let txn = self.db.begin(now, 1);
                let fence = self.db.fence(now, 1, txn, *token);
                if let Some(Err(why)) = self.db.fence_answer(fence) {
                    self.db.rollback(now, 1, txn);
                    return Answer::Fenced(format!("token {token}: {why}"));
                }
                let work = (*older_than_ms, *limit, 0);
                self.db.delete_judged(now, 1, txn, work, *retention_ms);
                let commit = self.db.commit(now, 1, txn);
                let rows = self.db.rows(commit);
                assert!(
                    self.db.db.waiting().is_empty(),
                    "nothing waits one statement at a time"
                );
                Answer::Deleted(rows.iter().map(|row| (row.created_at_ms, row.id)).collect())
            }
        }
    }

    /// A lease statement alone: nothing holds the row, so it applies now.
    fn lease(&mut self, statement: LeaseStatement) -> Answer {
        let id = self.db.lease(self.now_ms, 1, statement);
        let (_, answer) = self
            .db
            .lease_answer(id)
            .expect("no open transaction to wait for");
        match answer.expect("no bound is set") {
            LeaseAnswer::Granted(lease) => Answer::Lease(Some(lease)),
            LeaseAnswer::Refused => Answer::Lease(None),
            LeaseAnswer::Cleared { cleared } => Answer::Cleared(cleared),
        }
    }
}

struct Postgres {
    pool: Pool,
    options: PgOptions,
    leases: PgLeaseService,
}

/// Sets the test clock that `retention_now_us()` reads.
async fn set_clock(client: &tokio_postgres::Client, now_ms: i64) {
    client
        .execute(
            "UPDATE differential_clock SET now_us = $1",
            &[&(now_ms * 1_000)],
        )
        .await
        .expect("set the clock");
}

impl Postgres {
    async fn new(pool: Pool, start_ms: i64) -> Self {
        let client = pool.get().await.expect("connect");
        client
            .batch_execute(
                "CREATE TABLE differential_clock (now_us bigint NOT NULL);
                 INSERT INTO differential_clock VALUES (0);
                 CREATE OR REPLACE FUNCTION retention_now_us() RETURNS bigint
                     LANGUAGE sql VOLATILE AS $$ SELECT now_us FROM differential_clock $$;",
            )
            .await
            .expect("install the test clock");
        set_clock(&client, start_ms).await;
        drop(client);
        let options = PgOptions {
            lease_ttl_ms: TTL_MS,
            ..PgOptions::default()
        };
        Self {
            leases: PgLeaseService::new(pool.clone(), options.clone()),
            options,
            pool,
        }
    }

    async fn reset(&self, start_ms: i64) {
        let client = self.pool.get().await.expect("connect");
        client
            .batch_execute("TRUNCATE retention_lease; TRUNCATE retention_records RESTART IDENTITY;")
            .await
            .expect("reset");
        set_clock(&client, start_ms).await;
    }

    async fn apply(&self, op: &Op, now_ms: i64) -> Answer {
        let client = self.pool.get().await.expect("connect");
        match op {
            Op::Advance(ms) => {
                set_clock(&client, now_ms + ms).await;
                Answer::Nothing
            }
            Op::Insert(at) => {
                client
                    .execute(
                        "INSERT INTO retention_records (created_at_ms) VALUES ($1)",
                        &[at],
                    )
                    .await
                    .expect("insert");
                Answer::Nothing
            }
            Op::Acquire(owner) => {
                let got = self
                    .leases
                    .acquire_applied(OWNERS[*owner])
                    .await
                    .expect("acquire");
                Answer::Lease(got.map(|applied| applied.value))
            }
            Op::Renew(lease) => {
                let got = self.leases.renew_applied(lease).await.expect("renew");
                Answer::Lease(got.map(|applied| applied.value))
            }
            Op::Release(lease) => Answer::Cleared(
                self.leases
                    .release_applied(lease)
                    .await
                    .expect("release")
                    .is_some(),
            ),
            Op::Delete {
                older_than_ms,
                limit,
                token,
                retention_ms,
            } => match PgRecords::new(
                self.pool.clone(),
                PgOptions {
                    retention_ms: *retention_ms,
                    ..self.options.clone()
                },
            )
            .delete_applied(*older_than_ms, *limit, *token)
            .await
            {
                Ok(applied) => Answer::Deleted(
                    applied
                        .value
                        .rows
                        .iter()
                        .map(|row| (row.created_at_ms, row.id))
                        .collect(),
                ),
                Err(error) if error.kind == CallErrorKind::Fenced => Answer::Fenced(error.detail),
                Err(error) => panic!("delete failed outright: {error}"),
            },
        }
    }
}

#[test]
fn the_models_and_postgresql_give_the_same_answers() {
    on_database("differential", 2, async |_, pool| {
        let start_ms = 1_000_000;
        let pg = Postgres::new(pool, start_ms).await;
        let mut compared = 0usize;
        let mut kinds = [0usize; 4]; // grants, refusals, deletes, fenced
        // Deletes that took a row ahead of the database's clock; deletes
        // that the database's own clock bounded tighter than the cutoff.
        let mut edges = [0usize; 2];
        for seed in 0..SEQUENCES {
            pg.reset(start_ms).await;
            let mut model = Model {
                db: Driver::new(TTL_MS, &[], Bounds::default()),
                now_ms: start_ms,
            };
            model.db.advance(start_ms);
            let mut generator = Generator {
                rng: ChaCha8Rng::seed_from_u64(seed),
                now_ms: start_ms,
                granted: Default::default(),
                last_token: 0,
            };
            let mut listing = String::new();
            for index in 0..OPS_PER_SEQUENCE {
                let op = generator.next();
                let on_pg = pg.apply(&op, model.now_ms).await;
                let on_model = model.apply(&op);
                let _ = writeln!(listing, "  {index:>3}: {op:?} -> {on_model:?}");
                assert_eq!(
                    on_model, on_pg,
                    "seed {seed}, op {index}: the model and PostgreSQL disagree on {op:?}\n\
                     sequence so far (model's answers):\n{listing}"
                );
                match &on_model {
                    Answer::Lease(Some(_)) => kinds[0] += 1,
                    Answer::Lease(None) => kinds[1] += 1,
                    Answer::Deleted(rows) if !rows.is_empty() => kinds[2] += 1,
                    Answer::Fenced(_) => kinds[3] += 1,
                    _ => {}
                }
                if let (
                    Op::Delete {
                        older_than_ms,
                        retention_ms,
                        ..
                    },
                    Answer::Deleted(rows),
                ) = (&op, &on_model)
                {
                    // Only a delete with no second bound may take a row
                    // stamped at or after the database's clock.
                    edges[0] += usize::from(rows.iter().any(|&(at, _)| at >= model.now_ms));
                    // The second bound is the tighter one.
                    let own_ms = model.now_ms - *retention_ms as i64;
                    edges[1] += usize::from(*retention_ms > 0 && own_ms < *older_than_ms);
                }
                generator.observe(&op, &on_model);
                compared += 1;
            }
        }
        println!(
            "differential: {compared} operations over {SEQUENCES} sequences agreed \
             ({} grants, {} refusals, {} deletes that removed rows, {} fenced)",
            kinds[0], kinds[1], kinds[2], kinds[3]
        );
        println!(
            "differential: {} deletes took a row ahead of the database's clock, \
             {} were bounded by its own clock",
            edges[0], edges[1]
        );
        // The sequences must reach every kind of answer, or agreeing proves little.
        assert!(kinds.iter().all(|&count| count >= 20), "{kinds:?}");
        assert!(edges.iter().all(|&count| count >= 10), "{edges:?}");
    });
}
