//! The database node's main task: the adapters' statements served over
//! madsim's network (one handler per wire message), and rows arriving.

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
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: AcquireReq| {
        let n = n.clone();
        async move {
            let owner = req.owner.clone();
            lease_of(n.lease(req.caller, LeaseStatement::Acquire { owner }).await)
        }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: RenewReq| {
        let n = n.clone();
        async move {
            let lease = from_rec(&req.lease);
            let statement = if req.revoke {
                LeaseStatement::Revoke { lease }
            } else {
                LeaseStatement::Renew { lease }
            };
            lease_of(n.lease(req.caller, statement).await)
        }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: ReleaseReq| {
        let n = n.clone();
        async move {
            let lease = from_rec(&req.lease);
            n.lease(req.caller, LeaseStatement::Release { lease })
                .await
                .map(|_| ())
        }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: BeginReq| {
        let n = n.clone();
        async move { n.begin(req.caller).await }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: FenceReq| {
        let n = n.clone();
        async move { n.fence(req.caller, req.txn, req.token).await }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: DeleteReq| {
        let n = n.clone();
        async move {
            n.delete(req.caller, req.txn, req.older_than_ms, req.limit)
                .await
        }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: CommitReq| {
        let n = n.clone();
        async move { n.commit(req.caller, req.txn).await }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: RollbackReq| {
        let n = n.clone();
        async move { n.rollback(req.caller, req.txn).await }
    });
    serve_now(&endpoint, &node, |n, req: CancelReq| {
        n.cancel(req.caller.session)
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: ProtocolReq| {
        let n = n.clone();
        async move { n.protocol(req.caller).await }
    });
    let n = node.clone();
    endpoint.add_rpc_handler(move |req: CloseReq| {
        let n = n.clone();
        async move {
            n.connection_closed(req.caller.session, req.caller.seq)
                .await
        }
    });
    madsim::task::spawn(node.clone().keep_time());
    loop {
        madsim::time::sleep(Duration::from_secs(1)).await;
        node.insert_arrivals(arrivals_per_sec);
    }
}
