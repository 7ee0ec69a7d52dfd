//! The database node's main task: the adapters' statements served over
//! madsim's network (one handler per wire message), and rows arriving.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use madsim::net::Endpoint;
use madsim::net::rpc::Request;

use super::db_node::DbNode;
use super::wire::{
    AcquireReq, BeginReq, CancelReq, CloseReq, CommitReq, DB_ADDR, DeleteReq, FenceReq,
    ProtocolReq, ReleaseReq, RenewReq, RollbackReq, ServerError, from_rec, to_rec,
};
use crate::db::{LeaseAnswer, LeaseStatement};
use crate::model::LeaseRec;

/// Answers each `R` with the future `answer` makes of it and the node.
fn serve<R: Request, Answer>(
    endpoint: &Endpoint,
    node: &Arc<DbNode>,
    answer: impl Fn(Arc<DbNode>, R) -> Answer + Send + 'static,
) where
    Answer: Future<Output = R::Response> + Send + 'static,
{
    let node = node.clone();
    endpoint.add_rpc_handler(move |req: R| answer(node.clone(), req));
}

/// Answers `R` at once with what `answer` computes.
fn serve_now<R: Request>(
    endpoint: &Endpoint,
    node: &Arc<DbNode>,
    answer: impl Fn(&Arc<DbNode>, R) -> R::Response + Send + Sync + 'static,
) {
    let node = node.clone();
    endpoint.add_rpc_handler(move |req: R| {
        let answered = answer(&node, req);
        async move { answered }
    });
}

fn lease_of(answer: Result<LeaseAnswer, ServerError>) -> Result<Option<LeaseRec>, ServerError> {
    Ok(match answer? {
        LeaseAnswer::Granted(lease) => Some(to_rec(&lease)),
        _ => None,
    })
}

/// The database node's main task: serves the statements and keeps rows
/// arriving, `arrivals_per_sec` every second.
pub(crate) async fn database(node: Arc<DbNode>, arrivals_per_sec: u32) {
    let endpoint = Endpoint::bind(DB_ADDR).await.expect("bind the database");
    // One handler task per message, registered in this order: madsim
    // schedules tasks by the seed, so the order is part of every history.
    serve(&endpoint, &node, |n, req: AcquireReq| async move {
        let owner = req.owner.clone();
        lease_of(n.lease(req.caller, LeaseStatement::Acquire { owner }).await)
    });
    serve(&endpoint, &node, |n, req: RenewReq| async move {
        let lease = from_rec(&req.lease);
        let statement = if req.revoke {
            LeaseStatement::Revoke { lease }
        } else {
            LeaseStatement::Renew { lease }
        };
        lease_of(n.lease(req.caller, statement).await)
    });
    serve(&endpoint, &node, |n, req: ReleaseReq| async move {
        let lease = from_rec(&req.lease);
        let released = n.lease(req.caller, LeaseStatement::Release { lease });
        released.await.map(|_| ())
    });
    serve(&endpoint, &node, |n, req: BeginReq| async move {
        n.begin(req.caller).await
    });
    serve(&endpoint, &node, |n, req: FenceReq| async move {
        n.fence(req.caller, req.txn, req.token).await
    });
    serve(&endpoint, &node, |n, req: DeleteReq| async move {
        let (txn, older_than_ms, limit) = (req.txn, req.older_than_ms, req.limit);
        n.delete(req.caller, txn, older_than_ms, limit).await
    });
    serve(&endpoint, &node, |n, req: CommitReq| async move {
        n.commit(req.caller, req.txn).await
    });
    serve(&endpoint, &node, |n, req: RollbackReq| async move {
        n.rollback(req.caller, req.txn).await
    });
    serve_now(&endpoint, &node, |n, req: CancelReq| {
        n.cancel(req.caller.session)
    });
    serve(&endpoint, &node, |n, req: ProtocolReq| async move {
        n.protocol(req.caller).await
    });
    serve(&endpoint, &node, |n, req: CloseReq| async move {
        let (session, seq) = (req.caller.session, req.caller.seq);
        n.connection_closed(session, seq).await
    });
    madsim::task::spawn(node.clone().keep_time());
    loop {
        madsim::time::sleep(Duration::from_secs(1)).await;
        node.insert_arrivals(arrivals_per_sec);
    }
}
