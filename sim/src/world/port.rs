//! A replica's view of the database: every call is recorded, meets its
//! drawn and chosen faults, and goes over a connection of its own with a
//! timeout; a fenced delete is the adapter's whole conversation.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::net::rpc::Request;
use retention_worker::{CallError, CallErrorKind, Lease, LeaseService, RecordsRepository};

use super::replica::ReplicaCtx;
use super::session::Session;
use super::wire::{
    AcquireReq, BeginReq, Caller, CommitReq, Committed, DeleteReq, FenceReq, ReleaseReq, RenewReq,
    RollbackReq, ServerError, from_rec, to_rec,
};
use crate::calls::CallFaults;
use crate::model::{FailureKind, Invocation, LeaseRec, Outcome};

/// The lease row and the records as one simulated replica reaches them:
/// every call is recorded, goes over madsim's network with a timeout, and may
/// meet an injected fault.
#[derive(Clone)]
pub struct SimPort {
    ctx: Arc<ReplicaCtx>,
}

impl SimPort {
    pub(crate) fn new(ctx: Arc<ReplicaCtx>) -> Self {
        Self { ctx }
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
        let (ticket, invoke) = ctx.ledger.open(invocation);
        ctx.record(invoke);
        ctx.fire_stop_triggers(ticket.op, ticket.nth);
        let faults = ctx.draws.draw(ticket.op, ticket.nth);
        let caller = Caller {
            call: ticket.call,
            replica: ctx.replica(),
            term: ticket.term,
        };
        let timeout = Duration::from_millis(ctx.rpc_timeout_ms);
        let result = match madsim::time::timeout(timeout, exchange(caller, faults)).await {
            Ok(result) => result,
            Err(_) => {
                // As the adapter: ask the server to cancel what it runs.
                ctx.kernel.cancel(caller);
                Err(CallError::ambiguous(format!(
                    "no reply within {} ms",
                    ctx.rpc_timeout_ms
                )))
            }
        };
        ctx.record(ticket.returned(Outcome::of(&result, outcome)));
        result
    }

    /// One request and its reply on a connection of its own, with the
    /// call's delays, refusal, lost reply and garbling.
    async fn exchange<T, R: Request<Response = Result<T, String>>>(
        &self,
        caller: Caller,
        faults: CallFaults,
        request: R,
        garble: impl FnOnce(T) -> T,
    ) -> Result<T, CallError> {
        sleep_ms(faults.request_delay_ms).await;
        if faults.reject {
            return Err(CallError::rejected("injected: refused before applying"));
        }
        let answer = self.ctx.kernel.connect(caller.call).call(request).await?;
        // The server failed the statement (a bound, a cancel): nothing
        // applied, as the adapter reports an error the server raised.
        let answer = answer.map_err(|reason| CallError::rejected(format!("database: {reason}")))?;
        sleep_ms(faults.reply_delay_ms).await;
        if faults.ambiguous {
            return Err(CallError::ambiguous("injected: applied, reply lost"));
        }
        Ok(if faults.corrupt {
            garble(answer)
        } else {
            answer
        })
    }

    /// The fenced delete as the adapter runs it: `BEGIN`, the fence, the
    /// `DELETE`, `COMMIT`, one round trip each. A transaction left open (the
    /// fence refused, or the call gave up) is rolled back by [`Rollback`].
    async fn delete_conversation(
        &self,
        session: &Session,
        caller: Caller,
        faults: CallFaults,
        (older_than_ms, limit, token): (i64, u32, u64),
        open: &Rollback,
    ) -> Result<Result<u64, String>, CallError> {
        sleep_ms(faults.request_delay_ms).await;
        if faults.reject {
            return Err(CallError::rejected("injected: refused before applying"));
        }
        let txn = session.call(BeginReq { caller }).await?;
        open.opened(txn);
        let fenced = session.call(FenceReq { caller, txn, token }).await?;
        if let Err(reason) = fenced.map_err(server_error)? {
            return Ok(Err(reason));
        }
        let request = DeleteReq {
            caller,
            txn,
            older_than_ms,
            limit,
        };
        session.call(request).await?.map_err(server_error)?;
        // As tokio-postgres: once COMMIT is sent, no ROLLBACK follows it.
        open.closed();
        let committed = session.call(CommitReq { caller, txn }).await?;
        let rows = match committed.map_err(server_error)? {
            Committed::Rows(rows) => rows,
            // tokio-postgres reports this as success: the adapter must never
            // send COMMIT after a statement of the transaction failed, and
            // it does not (every failure above returns before COMMIT).
            Committed::RolledBack => {
                panic!(
                    "COMMIT of call {} found its transaction aborted",
                    caller.call
                )
            }
        };
        sleep_ms(faults.reply_delay_ms).await;
        if faults.ambiguous {
            return Err(CallError::ambiguous("injected: applied, reply lost"));
        }
        Ok(Ok(rows))
    }
}

/// A delete call's connection and the transaction it has open. Dropped
/// while one is open (the fence refused it, or the call timed out and its
/// future was dropped), it sends `ROLLBACK` after whatever the call had
/// already sent, as tokio-postgres does. Dropped before the call answered
/// (a timeout, a lost connection), it then closes the connection, as the
/// adapter does, and the server rolls back whatever is still open on it,
/// even a transaction whose `BEGIN` was answered too late to be known.
struct Rollback {
    session: Arc<Session>,
    caller: Caller,
    txn: Mutex<Option<u64>>,
    answered: Mutex<bool>,
}

impl Rollback {
    fn new(session: Arc<Session>, caller: Caller) -> Self {
        Self {
            session,
            caller,
            txn: Mutex::new(None),
            answered: Mutex::new(false),
        }
    }

    fn opened(&self, txn: u64) {
        *self.txn.lock().expect("txn slot") = Some(txn);
    }

    fn closed(&self) {
        self.txn.lock().expect("txn slot").take();
    }

    /// The call has its answer: the connection goes back to the pool.
    fn answered(&self) {
        *self.answered.lock().expect("answered flag") = true;
    }
}

impl Drop for Rollback {
    fn drop(&mut self) {
        if let Some(txn) = self.txn.lock().expect("txn slot").take() {
            let caller = self.caller;
            self.session.send(RollbackReq { caller, txn });
        }
        if !*self.answered.lock().expect("answered flag") {
            self.session.close();
        }
    }
}

/// As the adapter maps them: an error the server raised applied nothing;
/// a session the server ended closed the connection under the client.
fn server_error(error: ServerError) -> CallError {
    match error {
        ServerError::Failed(reason) => CallError::rejected(format!("database: {reason}")),
        ServerError::Closed(reason) => CallError::ambiguous(format!("connection closed: {reason}")),
    }
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
            self.exchange(caller, faults, AcquireReq { caller, owner }, garble)
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
            let request = RenewReq {
                caller,
                lease,
                revoke,
            };
            self.exchange(caller, faults, request, garble)
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
            self.exchange(caller, faults, ReleaseReq { caller, lease }, |answer| {
                answer
            })
        };
        self.call(invocation, exchange, |_| Outcome::Done).await
    }
}

impl RecordsRepository for SimPort {
    async fn delete_batch(
        &self,
        older_than_ms: i64,
        limit: u32,
        token: u64,
    ) -> Result<u64, CallError> {
        let invocation = Invocation::Delete {
            older_than_ms,
            limit,
            token,
        };
        let exchange = |caller: Caller, faults| async move {
            let session = self.ctx.kernel.connect(caller.call);
            let open = Rollback::new(session.clone(), caller);
            let args = (older_than_ms, limit, token);
            let answer = self
                .delete_conversation(&session, caller, faults, args, &open)
                .await;
            if !matches!(&answer, Err(error) if error.kind == CallErrorKind::Ambiguous) {
                open.answered();
            }
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
