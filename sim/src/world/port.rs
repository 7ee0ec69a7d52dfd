//! A replica's view of the database: every call is recorded, meets its
//! drawn and chosen faults, and runs under a timeout on a connection from
//! the replica's pool, spending the round trips the adapter spends
//! (`calls::conversation`); a fenced delete is the adapter's whole
//! conversation.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use retention_worker::{CallError, CallErrorKind, Lease, LeaseService, RecordsRepository};

use super::kernel::Kernel;
use super::pool::{Lent, Pool};
use super::spin::Liveness;
use super::wire::{
    AcquireReq, BeginReq, Caller, CommitReq, Committed, DeleteReq, FenceReq, OnConnection,
    ReleaseReq, RenewReq, ServerError, from_rec, to_rec,
};
use crate::calls::{CallFaults, CallLedger, FaultDraws, Sql};
use crate::model::{EventKind, FailureKind, Invocation, LeaseRec, OpKind, Outcome};

/// What a port needs from the replica whose calls it makes: the replica
/// implements it, so that the port names no replica type.
pub(crate) trait CallingReplica: Liveness {
    /// The replica's number, from 1.
    fn replica(&self) -> u32;
    /// Numbers its calls and terms.
    fn ledger(&self) -> &CallLedger;
    /// The plan's call faults, drawn call by call.
    fn draws(&self) -> &FaultDraws;
    /// Its network stack: its connections to the database.
    fn kernel(&self) -> &Arc<Kernel>;
    /// How long a call waits for its reply.
    fn call_timeout_ms(&self) -> u64;
    /// Records an event of the replica, in its current term.
    fn record(&self, kind: EventKind);
    /// The replica issued its `nth` call of `op`: the plan's stops during
    /// that call strike.
    fn call_issued(self: Arc<Self>, op: OpKind, nth: u32);
}

/// The lease row and the records as one simulated replica reaches them:
/// every call is recorded, goes over madsim's network with a timeout on a
/// pooled connection, and may meet an injected fault. A restarted process
/// gets a new port, with an empty pool.
#[derive(Clone)]
pub struct SimPort {
    ctx: Arc<dyn CallingReplica>,
    pool: Arc<Pool>,
}

impl SimPort {
    pub(crate) fn new(ctx: Arc<dyn CallingReplica>) -> Self {
        Self {
            ctx,
            pool: Arc::new(Pool::default()),
        }
    }

    /// Records the call, draws its faults, runs `exchange` under the call
    /// timeout, and records the answer.
    async fn call<T, F>(
        &self,
        invocation: Invocation,
        exchange: impl FnOnce(Caller, CallFaults) -> F,
        outcome: impl FnOnce(&T) -> Outcome,
    ) -> Result<T, CallError>
    where
        F: Future<Output = Result<T, CallError>>,
    {
        let ctx = &self.ctx;
        ctx.step();
        let (ticket, invoke) = ctx.ledger().open(invocation);
        ctx.record(invoke);
        ctx.clone().call_issued(ticket.op, ticket.nth);
        let faults = ctx.draws().draw(ticket.op, ticket.nth);
        let caller = Caller {
            call: ticket.call,
            replica: ctx.replica(),
            term: ticket.term,
            session: 0,
            seq: 0,
        };
        let timeout = Duration::from_millis(ctx.call_timeout_ms());
        // On a timeout the exchange is dropped, and its connection with it:
        // `Lent` then cancels what runs there and closes it.
        let result = madsim::time::timeout(timeout, exchange(caller, faults))
            .await
            .unwrap_or_else(|_| {
                Err(CallError::ambiguous(format!(
                    "no reply within {} ms",
                    ctx.call_timeout_ms()
                )))
            });
        ctx.record(ticket.returned(Outcome::of(&result, outcome)));
        result
    }

    /// A connection for the call, after its request delay; an injected
    /// refusal sends nothing, as a pool that could not connect.
    async fn lend(&self, caller: Caller, faults: &CallFaults) -> Result<Lent, CallError> {
        sleep_ms(faults.request_delay_ms).await;
        if faults.reject {
            return Err(CallError::rejected("injected: refused before applying"));
        }
        self.pool.lend(self.ctx.kernel(), caller).await
    }

    /// A lease statement and its reply on a pooled connection, with the
    /// call's delays, refusal, lost reply and garbling.
    async fn exchange<T, R: OnConnection<Response = Result<T, ServerError>>>(
        &self,
        (caller, faults): (Caller, CallFaults),
        sql: Sql,
        request: impl FnOnce(Caller) -> R,
        garble: impl FnOnce(T) -> T,
    ) -> Result<T, CallError> {
        let mut lent = self.lend(caller, &faults).await?;
        let answer = async {
            lent.prepare(sql).await?;
            let answer = lent.session().call(request(lent.caller())).await?;
            // The server failed the statement (a bound, a cancel): nothing
            // applied, as the adapter reports an error the server raised;
            // a connection the server closed is ambiguous.
            answer.map_err(CallError::from)
        }
        .await;
        let answer = reply(answer, &faults).await;
        lent.ended(!is_ambiguous(&answer));
        Ok(if faults.corrupt {
            garble(answer?)
        } else {
            answer?
        })
    }

    /// The fenced delete as the adapter runs it: `BEGIN`, the fence (and
    /// the read of its reason when it refuses), the `DELETE`, `COMMIT`,
    /// each prepared on first use. A transaction left open (the fence
    /// refused, a statement failed, or the call gave up) is rolled back by
    /// [`Lent`].
    async fn delete_conversation(
        &self,
        lent: &mut Lent,
        (older_than_ms, limit, token): (i64, u32, u64),
    ) -> Result<Result<u64, String>, CallError> {
        let caller = lent.caller();
        let txn = lent.session().call(BeginReq { caller }).await??;
        lent.opened(txn);
        lent.prepare(Sql::Fence).await?;
        let fenced = lent.session().call(FenceReq { caller, txn, token }).await?;
        if let Err(reason) = fenced? {
            // The adapter reads why; the model's fence already said.
            lent.run_protocol(Sql::FenceState).await?;
            return Ok(Err(reason));
        }
        lent.prepare(Sql::DeleteOldest).await?;
        let request = DeleteReq {
            caller,
            txn,
            older_than_ms,
            limit,
        };
        lent.session().call(request).await??;
        // As tokio-postgres: once COMMIT is sent, no ROLLBACK follows it.
        lent.closed();
        let committed = lent.session().call(CommitReq { caller, txn }).await?;
        match committed? {
            Committed::Rows(rows) => Ok(Ok(rows)),
            // tokio-postgres reports this as success: the adapter must never
            // send COMMIT after a statement of the transaction failed, and
            // it does not (every failure above returns before COMMIT).
            Committed::RolledBack => {
                panic!(
                    "COMMIT of call {} found its transaction aborted",
                    caller.call
                )
            }
        }
    }
}

/// The reply's delay and an injected lost reply (applied, not heard).
async fn reply<T>(answer: Result<T, CallError>, faults: &CallFaults) -> Result<T, CallError> {
    let answer = answer?;
    sleep_ms(faults.reply_delay_ms).await;
    if faults.ambiguous {
        return Err(CallError::ambiguous("injected: applied, reply lost"));
    }
    Ok(answer)
}

fn is_ambiguous<T>(answer: &Result<T, CallError>) -> bool {
    matches!(answer, Err(error) if error.kind == CallErrorKind::Ambiguous)
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        madsim::time::sleep(Duration::from_millis(ms)).await;
    }
}

fn lease_outcome(answer: &Option<LeaseRec>) -> Outcome {
    Outcome::Lease(answer.clone())
}

impl LeaseService for SimPort {
    async fn acquire(&self, owner_id: &str) -> Result<Option<Lease>, CallError> {
        let owner = owner_id.to_owned();
        let exchange = |caller, faults| {
            let garble = |answer: Option<LeaseRec>| {
                answer.map(|lease| LeaseRec {
                    owner: "intruder".into(),
                    ..lease
                })
            };
            let request = move |caller| AcquireReq { caller, owner };
            self.exchange((caller, faults), Sql::Acquire, request, garble)
        };
        let answer = self
            .call(Invocation::Acquire, exchange, lease_outcome)
            .await?;
        Ok(answer.as_ref().map(from_rec))
    }

    async fn renew(&self, lease: &Lease) -> Result<Option<Lease>, CallError> {
        let lease = to_rec(lease);
        let sent_token = lease.token;
        let invocation = Invocation::Renew {
            lease: lease.clone(),
        };
        let exchange = |caller, faults: CallFaults| {
            let garble = move |answer: Option<LeaseRec>| {
                answer.map(|lease| LeaseRec {
                    token: sent_token,
                    ..lease
                })
            };
            let revoke = faults.revoke;
            let request = move |caller| RenewReq {
                caller,
                lease,
                revoke,
            };
            self.exchange((caller, faults), Sql::Renew, request, garble)
        };
        let answer = self.call(invocation, exchange, lease_outcome).await?;
        Ok(answer.as_ref().map(from_rec))
    }

    async fn release(&self, lease: &Lease) -> Result<(), CallError> {
        let lease = to_rec(lease);
        let invocation = Invocation::Release {
            lease: lease.clone(),
        };
        let exchange = |caller, faults| {
            let request = move |caller| ReleaseReq { caller, lease };
            self.exchange((caller, faults), Sql::Release, request, |answer| answer)
        };
        self.call(invocation, exchange, |_| Outcome::Done).await
    }
}

impl RecordsRepository for SimPort {
    async fn delete_batch(&self, cutoff_ms: i64, limit: u32, token: u64) -> Result<u64, CallError> {
        let invocation = Invocation::Delete {
            older_than_ms: cutoff_ms,
            limit,
            token,
        };
        let exchange = |caller: Caller, faults: CallFaults| async move {
            let mut lent = self.lend(caller, &faults).await?;
            let args = (cutoff_ms, limit, token);
            let answer = self.delete_conversation(&mut lent, args).await;
            let answer = reply(answer, &faults).await;
            lent.ended(!is_ambiguous(&answer));
            answer
        };
        let outcome = |answer: &Result<u64, String>| match answer {
            Ok(rows) => Outcome::Deleted(*rows),
            Err(reason) => Outcome::Failed {
                kind: FailureKind::Fenced,
                detail: reason.clone(),
            },
        };
        self.call(invocation, exchange, outcome)
            .await?
            .map_err(CallError::fenced)
    }
}
