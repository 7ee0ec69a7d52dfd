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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct AcquireReq {
    pub caller: Caller,
    pub owner: String,
}

impl Request for AcquireReq {
    type Response = Option<LeaseRec>;
    const ID: u64 = 0x5e_a1;
}

/// `revoke` is the injected null-renewal fault: the service drops the lease
/// and answers `None`, as if an operator or a failover had taken it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RenewReq {
    pub caller: Caller,
    pub lease: LeaseRec,
    pub revoke: bool,
}

impl Request for RenewReq {
    type Response = Option<LeaseRec>;
    const ID: u64 = 0x5e_a2;
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ReleaseReq {
    pub caller: Caller,
    pub lease: LeaseRec,
}

impl Request for ReleaseReq {
    type Response = ();
    const ID: u64 = 0x5e_a3;
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DeleteReq {
    pub caller: Caller,
    pub older_than_ms: i64,
    pub limit: u32,
    pub token: u64,
}

impl Request for DeleteReq {
    /// Rows deleted, or why FEN-2 refused.
    type Response = Result<u64, String>;
    const ID: u64 = 0x5e_a4;
}

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
