//! A replica's view of the services: every call is recorded, meets its
//! drawn and chosen faults, and goes over madsim's network with a timeout.

use std::sync::Arc;
use std::time::Duration;

use madsim::net::Endpoint;
use madsim::net::rpc::Request;
use retention_worker::{CallError, Lease, LeaseService, RecordsRepository};

use super::replica::ReplicaCtx;
use super::wire::{
    AcquireReq, Caller, DB_ADDR, DeleteReq, LEASE_ADDR, ReleaseReq, RenewReq, addr, from_rec,
    to_rec,
};
use crate::model::{FailureKind, Invocation, LeaseRec, Outcome};

/// The lease service and database as one simulated replica reaches them:
/// every call is recorded, goes over madsim's network with a timeout, and may
/// meet an injected fault.
#[derive(Clone)]
pub struct SimPort {
    ctx: Arc<ReplicaCtx>,
    endpoint: Arc<Endpoint>,
}

impl SimPort {
    pub(crate) fn new(ctx: Arc<ReplicaCtx>, endpoint: Arc<Endpoint>) -> Self {
        Self { ctx, endpoint }
    }

    /// Records the call, injects its faults, sends it with a timeout, and
    /// records the answer. A lost message surfaces as an ambiguous error.
    async fn call<R: Request>(
        &self,
        invocation: Invocation,
        to: &str,
        request: impl FnOnce(Caller, bool) -> R,
        outcome: impl FnOnce(&R::Response) -> Outcome,
        garble: impl FnOnce(R::Response) -> R::Response,
    ) -> Result<R::Response, CallError> {
        let ctx = &self.ctx;
        let (ticket, invoke) = ctx.ledger.open(invocation);
        let (call, op) = (ticket.call, ticket.op);
        ctx.record(invoke);
        ctx.fire_stop_triggers(op, ticket.nth);
        let faults = ctx.draws.draw(op, ticket.nth);
        let caller = Caller {
            call,
            replica: ctx.replica(),
            term: ticket.term,
        };
        let request = request(caller, faults.revoke);
        let exchange = async {
            sleep_ms(faults.request_delay_ms).await;
            if faults.reject {
                return Err(CallError::rejected("injected: refused before applying"));
            }
            let answer = self
                .endpoint
                .call(addr(to), request)
                .await
                .map_err(|error| CallError::ambiguous(format!("network: {error}")))?;
            sleep_ms(faults.reply_delay_ms).await;
            if faults.ambiguous {
                return Err(CallError::ambiguous("injected: applied, reply lost"));
            }
            Ok(if faults.corrupt {
                garble(answer)
            } else {
                answer
            })
        };
        let timeout = Duration::from_millis(ctx.rpc_timeout_ms);
        let result = match madsim::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(CallError::ambiguous(format!(
                "no reply within {} ms",
                ctx.rpc_timeout_ms
            ))),
        };
        ctx.record(ticket.returned(Outcome::of(&result, outcome)));
        result
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
        let request = |caller, _| AcquireReq { caller, owner };
        let answer = self
            .call(
                Invocation::Acquire,
                LEASE_ADDR,
                request,
                lease_outcome,
                |answer| {
                    answer.map(|lease| LeaseRec {
                        owner: "intruder".into(),
                        ..lease
                    })
                },
            )
            .await?;
        Ok(answer.as_ref().map(from_rec))
    }

    async fn renew(&self, lease: &Lease) -> Result<Option<Lease>, CallError> {
        let lease = to_rec(lease);
        let sent_token = lease.token;
        let invocation = Invocation::Renew {
            lease: lease.clone(),
        };
        let request = |caller, revoke| RenewReq {
            caller,
            lease,
            revoke,
        };
        let answer = self
            .call(invocation, LEASE_ADDR, request, lease_outcome, |answer| {
                answer.map(|lease| LeaseRec {
                    token: sent_token,
                    ..lease
                })
            })
            .await?;
        Ok(answer.as_ref().map(from_rec))
    }

    async fn release(&self, lease: &Lease) -> Result<(), CallError> {
        let lease = to_rec(lease);
        let invocation = Invocation::Release {
            lease: lease.clone(),
        };
        let request = |caller, _| ReleaseReq { caller, lease };
        self.call(
            invocation,
            LEASE_ADDR,
            request,
            |_| Outcome::Done,
            |answer| answer,
        )
        .await
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
        let request = |caller, _| DeleteReq {
            caller,
            older_than_ms,
            limit,
            token,
        };
        let outcome = |answer: &Result<u64, String>| match answer {
            Ok(rows) => Outcome::Deleted(*rows),
            Err(reason) => Outcome::Failed {
                kind: FailureKind::Fenced,
                detail: reason.clone(),
            },
        };
        self.call(invocation, DB_ADDR, request, outcome, |answer| answer)
            .await?
            .map_err(CallError::fenced)
    }
}
