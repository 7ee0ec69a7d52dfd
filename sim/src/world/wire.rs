//! The messages between replicas and services on madsim's network, the
//! services' addresses, and leases as they travel.

use std::net::SocketAddr;

use madsim::net::rpc::Request;
use retention_worker::Lease;
use serde::{Deserialize, Serialize};

use crate::model::LeaseRec;

/// Who is calling: the run-wide call number, the replica and its term.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Caller {
    pub call: u64,
    pub replica: u32,
    pub term: u32,
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
    };
}

request!(AcquireReq { owner: String } -> Option<LeaseRec>, 0x5e_a1);
request!(
    /// `revoke` is the injected null-renewal fault: the service drops the
    /// lease and answers `None`, as if an operator or a failover had taken it.
    RenewReq { lease: LeaseRec, revoke: bool } -> Option<LeaseRec>, 0x5e_a2
);
request!(ReleaseReq { lease: LeaseRec } -> (), 0x5e_a3);
request!(
    /// Answered with the rows deleted, or why FEN-2 refused.
    DeleteReq { older_than_ms: i64, limit: u32, token: u64 } -> Result<u64, String>, 0x5e_a4
);

pub(crate) const LEASE_ADDR: &str = "10.0.0.1:700";
pub(crate) const DB_ADDR: &str = "10.0.0.2:700";

pub(crate) fn addr(text: &str) -> SocketAddr {
    text.parse().expect("a literal address")
}

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
