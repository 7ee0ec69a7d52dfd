//! A replica's lease service and repository: the production PostgreSQL
//! adapters with faults injected around them, every call and every database
//! effect recorded in the simulator's history format.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::model::{Actor, EventKind, Invocation, OpKind, Outcome, RowRec};
use retention_worker::{CallError, CallErrorKind, Lease, LeaseService, RecordsRepository};

use retention_worker::pg::{PgLeaseService, PgRecords};

use super::gate::{Gate, InFlight};
use super::log::RealRecorder;
use crate::calls::{CallFaults, CallLedger, CallTicket};

/// What a port needs from the replica whose calls it makes: the replica
/// implements it, so that the port names no replica type.
pub trait CallingReplica: Send + Sync {
    /// The run's log.
    fn log(&self) -> &Arc<RealRecorder>;
    /// Numbers the replica's calls and terms.
    fn ledger(&self) -> &CallLedger;
    /// Records an event of the replica, in its current term.
    fn record(&self, kind: EventKind);
    /// The replica issued the call `ticket`: the plan's stops during it
    /// strike.
    fn call_issued(self: Arc<Self>, ticket: &CallTicket);
    /// The faults the plan draws for the call `ticket`.
    fn draw(&self, ticket: &CallTicket) -> CallFaults;
    /// Database calls in flight, all replicas'.
    fn in_flight(&self) -> &Arc<InFlight>;
    /// How long a call waits for its answer, from the call.
    fn call_timeout_ms(&self) -> u64;
    /// Set between a granted acquire and the term's end.
    fn leading(&self) -> &std::sync::atomic::AtomicBool;
    /// The production lease adapter.
    fn leases(&self) -> &PgLeaseService;
    /// The production records adapter.
    fn records(&self) -> &PgRecords;
}

/// A replica's lease service and repository: the production adapters, with
/// faults around them and every call recorded.
#[derive(Clone)]
pub struct RealPort {
    /// The replica whose calls these are.
    pub replica: Arc<dyn CallingReplica>,
    /// The freeze of the process this port belongs to.
    pub gate: Gate,
}

/// The database side of one call: runs detached (a killed process's request
/// is already on the wire) and records what the database did.
type Exec<T> = Box<
    dyn FnOnce(
            Arc<dyn CallingReplica>,
            u64,
            u32,
            bool,
        ) -> futures_util::future::BoxFuture<'static, Result<T, CallError>>
        + Send,
>;

impl RealPort {
    /// One call: its delays, refusal and lost reply as drawn, and a reply
    /// `garble`d when the draw (or the plan) corrupts it.
    async fn call<T: Send + 'static>(
        &self,
        invocation: Invocation,
        exec: Exec<T>,
        outcome: impl FnOnce(&T) -> Outcome,
        garble: impl FnOnce(T) -> T,
    ) -> Result<T, CallError> {
        let replica = &self.replica;
        self.gate.pass().await;
        let (ticket, invoke) = replica.ledger().open(invocation);
        let (call, term) = (ticket.call, ticket.term);
        replica.record(invoke);
        replica.clone().call_issued(&ticket);
        let drawn = replica.draw(&ticket);
        // The client's timer runs from the call, as the simulator's does:
        // a request or reply held in the network counts against it.
        let exchange = async {
            sleep_ms(drawn.request_delay_ms).await;
            // Frozen while the request was delayed: it leaves after the thaw.
            self.gate.pass().await;
            if drawn.reject {
                return Err(CallError::rejected("injected: refused before sending"));
            }
            replica.in_flight().0.fetch_add(1, Ordering::SeqCst);
            let task = exec(replica.clone(), call, term, drawn.revoke);
            let in_flight = replica.in_flight().clone();
            // Detached: a call the client gave up on still reaches the
            // database, and finishes there.
            let answer = tokio::spawn(async move {
                let result = task.await;
                in_flight.0.fetch_sub(1, Ordering::SeqCst);
                result
            })
            .await
            .expect("a database call panicked")?;
            sleep_ms(drawn.reply_delay_ms).await;
            self.gate.pass().await;
            if drawn.ambiguous {
                return Err(CallError::ambiguous("injected: applied, reply lost"));
            }
            Ok(if drawn.corrupt {
                garble(answer)
            } else {
                answer
            })
        };
        let timeout_ms = replica.call_timeout_ms();
        let result = match tokio::time::timeout(Duration::from_millis(timeout_ms), exchange).await {
            Ok(result) => result,
            Err(_) => {
                self.gate.pass().await;
                Err(CallError::ambiguous(format!(
                    "no reply within {timeout_ms} ms"
                )))
            }
        };
        replica.record(ticket.returned(Outcome::of(&result, outcome)));
        result
    }
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

fn record_grant(
    r: &dyn CallingReplica,
    call: u64,
    term: u32,
    op: OpKind,
    got: &Option<retention_worker::pg::Applied<Lease>>,
) {
    match got {
        Some(applied) => {
            let lease = r.log().lease(&applied.value);
            r.log().record_db(
                applied.at_us,
                Actor::Lease,
                term,
                EventKind::Granted { call, lease },
            );
        }
        None => r
            .log()
            .record(Actor::Lease, term, EventKind::Refused { call, op }),
    }
}

impl LeaseService for RealPort {
    async fn acquire(&self, owner_id: &str) -> Result<Option<Lease>, CallError> {
        let owner = owner_id.to_owned();
        let exec: Exec<Option<Lease>> = Box::new(move |r, call, term, _| {
            Box::pin(async move {
                let got = r.leases().acquire_applied(&owner).await?;
                record_grant(&*r, call, term, OpKind::Acquire, &got);
                Ok(got.map(|applied| applied.value))
            })
        });
        let log = self.replica.log();
        // A lying service: the lease it grants names someone else.
        let garble = |answer: Option<Lease>| {
            answer.map(|lease| Lease {
                owner_id: "intruder".into(),
                ..lease
            })
        };
        let answer = self
            .call(
                Invocation::Acquire,
                exec,
                |a| Outcome::Lease(a.as_ref().map(|l| log.lease(l))),
                garble,
            )
            .await?;
        if answer.is_some() {
            self.replica.leading().store(true, Ordering::SeqCst);
        }
        Ok(answer)
    }

    async fn renew(&self, lease: &Lease) -> Result<Option<Lease>, CallError> {
        let sent = lease.clone();
        let invocation = Invocation::Renew {
            lease: self.replica.log().lease(lease),
        };
        let exec: Exec<Option<Lease>> = Box::new(move |r, call, term, revoke| {
            Box::pin(async move {
                if revoke {
                    // An operator (or a failover) takes the lease; the
                    // renewal is answered with no lease.
                    match r.leases().release_applied(&sent).await? {
                        Some(at_us) => {
                            let lease = r.log().lease(&sent);
                            r.log().record_db(
                                at_us,
                                Actor::Lease,
                                term,
                                EventKind::Revoked { call, lease },
                            );
                        }
                        None => r.log().record(
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
                let got = r.leases().renew_applied(&sent).await?;
                record_grant(&*r, call, term, OpKind::Renew, &got);
                Ok(got.map(|applied| applied.value))
            })
        });
        let log = self.replica.log();
        // A lying service: the renewal hands back the token it was sent.
        let sent_token = lease.fencing_token;
        let garble = move |answer: Option<Lease>| {
            answer.map(|lease| Lease {
                fencing_token: sent_token,
                ..lease
            })
        };
        self.call(
            invocation,
            exec,
            |a| Outcome::Lease(a.as_ref().map(|l| log.lease(l))),
            garble,
        )
        .await
    }

    async fn release(&self, lease: &Lease) -> Result<(), CallError> {
        let sent = lease.clone();
        let invocation = Invocation::Release {
            lease: self.replica.log().lease(lease),
        };
        let exec: Exec<()> = Box::new(move |r, call, term, _| {
            Box::pin(async move {
                let cleared = r.leases().release_applied(&sent).await?;
                let kind = EventKind::Released {
                    call,
                    lease: r.log().lease(&sent),
                    cleared: cleared.is_some(),
                };
                match cleared {
                    Some(at_us) => r.log().record_db(at_us, Actor::Lease, term, kind),
                    None => r.log().record(Actor::Lease, term, kind),
                }
                Ok(())
            })
        });
        self.call(invocation, exec, |()| Outcome::Done, |answer| answer)
            .await
    }
}

impl RecordsRepository for RealPort {
    async fn delete_batch(&self, cutoff_ms: i64, limit: u32, token: u64) -> Result<u64, CallError> {
        let epoch_ms = self.replica.log().epoch_ms;
        let invocation = Invocation::Delete {
            older_than_ms: cutoff_ms - epoch_ms,
            limit,
            token,
        };
        let exec: Exec<u64> = Box::new(move |r, call, term, _| {
            Box::pin(async move {
                match r.records().delete_applied(cutoff_ms, limit, token).await {
                    Ok(applied) => {
                        let rows = applied
                            .value
                            .rows
                            .iter()
                            .map(|row| RowRec {
                                id: row.id,
                                created_at_ms: row.created_at_ms - epoch_ms,
                            })
                            .collect::<Vec<_>>();
                        let count = rows.len() as u64;
                        // Stamped with the database's clock at the delete,
                        // just before COMMIT: lease changes it waited out
                        // sort after it, as the checker's FEN-2 expects.
                        // No clock step lands inside the transaction
                        // (`db_clock::step`), so the last row's reading is
                        // the clock the statement read too.
                        let deleted_us = applied.value.deleted_at_us;
                        let kind = EventKind::Deleted {
                            call,
                            token,
                            fenced_at_ms: r.log().db_to_wall_us(applied.at_us).div_euclid(1_000)
                                - epoch_ms,
                            older_than_ms: cutoff_ms - epoch_ms,
                            rows,
                            deleted_clock_ms: Some(r.log().db_ms(deleted_us)),
                            fenced_clock_ms: Some(r.log().db_ms(applied.at_us)),
                        };
                        r.log().record_db(deleted_us, Actor::Db, term, kind);
                        Ok(count)
                    }
                    Err(error) if error.kind == CallErrorKind::Fenced => {
                        let kind = EventKind::Fenced {
                            call,
                            token,
                            reason: fence_reason(&error.detail, epoch_ms),
                        };
                        r.log().record(Actor::Db, term, kind);
                        Err(error)
                    }
                    Err(error) => Err(error),
                }
            })
        });
        let outcome = |rows: &u64| Outcome::Deleted(*rows);
        self.call(invocation, exec, outcome, |answer| answer).await
    }
}

/// The adapter's refusal (`token 1: lease expired at 1796292949276 ms`) in
/// the simulator's words and on the run's clock (`lease expired at 3077
/// ms`), so that both timelines read alike.
fn fence_reason(detail: &str, epoch_ms: i64) -> String {
    let reason = detail
        .split_once(": ")
        .filter(|(prefix, _)| prefix.starts_with("token "))
        .map_or(detail, |(_, reason)| reason);
    let expiry = reason
        .strip_prefix("lease expired at ")
        .and_then(|rest| rest.strip_suffix(" ms"))
        .and_then(|ms| ms.parse::<i64>().ok());
    match expiry {
        Some(expires_at_ms) => format!("lease expired at {} ms", expires_at_ms - epoch_ms),
        None => reason.to_owned(),
    }
}
