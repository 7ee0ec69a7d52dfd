//! The messages between replicas and services on madsim's network, the
//! services' addresses, and leases as they travel.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use madsim::net::rpc::Request;
use retention_worker::Lease;
use serde::{Deserialize, Serialize};

use crate::model::LeaseRec;

/// Who is calling: the run-wide call number, the replica and its term,
/// and on which connection: the database knows a session by it, and serves
/// a connection's messages in the order they were sent (`seq`), as TCP
/// delivers them.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Caller {
    pub call: u64,
    pub replica: u32,
    pub term: u32,
    /// The connection, numbered run-wide; 0 before the call has one.
    pub session: u64,
    /// The message's place on its connection, from 0.
    pub seq: u64,
}

/// A message sent on a connection: the session numbers it.
pub(crate) trait OnConnection: Request {
    fn caller_mut(&mut self) -> &mut Caller;
}

/// A request from a caller, its fields, what it is answered with, and its
/// RPC id.
macro_rules! request {
    ($(#[$doc:meta])* $name:ident { $($field:ident: $ty:ty),* } -> $response:ty, $id:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Serialize, Deserialize)]
        pub(crate) struct $name {
            pub caller: Caller,
            $(pub $field: $ty,)*
        }

        impl Request for $name {
            type Response = $response;
            const ID: u64 = $id;
        }

        impl OnConnection for $name {
            fn caller_mut(&mut self) -> &mut Caller {
                &mut self.caller
            }
        }
    };
}

/// How the server failed a statement: with an error, nothing applied (and a
/// transaction it ran in aborted), or by ending the session, which closes
/// the connection under the client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum ServerError {
    Failed(String),
    Closed(String),
}

impl From<ServerError> for retention_worker::CallError {
    /// As the adapter maps them: an error the server raised applied
    /// nothing; a session the server ended closed the connection under the
    /// client, and what it ran may have applied.
    fn from(error: ServerError) -> Self {
        match error {
            ServerError::Failed(reason) => Self::rejected(format!("database: {reason}")),
            ServerError::Closed(reason) => Self::ambiguous(format!("connection closed: {reason}")),
        }
    }
}

// Lease statements fail (`Err`) by a server-side bound or a cancel, or
// find their session ended by the server.
request!(AcquireReq { owner: String } -> Result<Option<LeaseRec>, ServerError>, 0x5e_a1);
request!(
    /// `revoke` is the injected null-renewal fault: the service drops the
    /// lease and answers `None`, as if an operator or a failover had taken it.
    RenewReq { lease: LeaseRec, revoke: bool } -> Result<Option<LeaseRec>, ServerError>, 0x5e_a2
);
request!(ReleaseReq { lease: LeaseRec } -> Result<(), ServerError>, 0x5e_a3);
// The fenced delete is the adapter's conversation, one request per
// statement of `worker/src/pg/records.rs`: BEGIN, the fence, the DELETE,
// COMMIT (or ROLLBACK, pipelined when the adapter gives up or is fenced);
// prepares and start-up go as `ProtocolReq`.
request!(
    /// `BEGIN`: answered with the new transaction.
    BeginReq {} -> Result<u64, ServerError>, 0x5e_b1
);
request!(
    /// The fence's `SELECT ... FOR SHARE`: `Ok` with the lock taken, or why
    /// FEN-2 refused.
    FenceReq { txn: u64, token: u64 } -> Result<Result<(), String>, ServerError>, 0x5e_b2
);
request!(
    /// `DELETE_OLDEST`: answered with the rows the statement deleted (they
    /// go at `COMMIT`), or how the server failed it.
    DeleteReq { txn: u64, older_than_ms: i64, limit: u32 } -> Result<u64, ServerError>, 0x5e_b3
);
/// How the server answered a `COMMIT` that it did not fail.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Committed {
    /// Durable, with this many rows deleted.
    Rows(u64),
    /// The transaction was aborted: PostgreSQL rolled it back and answered
    /// with the tag `ROLLBACK`, not an error (tokio-postgres reports
    /// success).
    RolledBack,
}

request!(
    /// `COMMIT`: answered once durable, or how the server failed it.
    CommitReq { txn: u64 } -> Result<Committed, ServerError>, 0x5e_b4
);
request!(
    /// `ROLLBACK`.
    RollbackReq { txn: u64 } -> (), 0x5e_b5
);
request!(
    /// A cancel request for what connection `caller.session` runs, sent by
    /// the client when it gives up on a call, on a connection of its own.
    CancelReq {} -> (), 0x5e_b6
);
request!(
    /// A round trip of the conversation that touches no data: TCP's
    /// handshake, a start-up exchange, a `Parse`, the read of a refused
    /// fence's reason (`calls::RoundTrip`, by its debug name). The server
    /// answers at once (a session it ended answers nothing: the client
    /// finds the connection closed); one inside a transaction ends an idle
    /// stretch.
    ProtocolReq { trip: String } -> Result<(), ServerError>, 0x5e_b7
);
request!(
    /// The connection closes (a FIN after everything sent on it).
    CloseReq {} -> (), 0x5e_b8
);

/// The one database, holding the lease row and the records.
pub(crate) const DB_ADDR: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 700));

pub(crate) fn to_rec(lease: &Lease) -> LeaseRec {
    LeaseRec {
        owner: lease.owner_id.clone(),
        token: lease.fencing_token,
        expires_at_ms: lease.expires_at_ms,
    }
}

pub(crate) fn from_rec(lease: &LeaseRec) -> Lease {
    Lease {
        owner_id: lease.owner.clone(),
        fencing_token: lease.token,
        expires_at_ms: lease.expires_at_ms,
    }
}
