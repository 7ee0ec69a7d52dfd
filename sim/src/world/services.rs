//! The lease service and the records database as simulated nodes, answering
//! RPCs exactly as the contract's model says.
//!
//! Both share one [`LeaseTable`], as a database holding the lease row would:
//! the database checks FEN-2 against it in the same step as the delete.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use madsim::net::Endpoint;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retention_worker::memory::{LeaseTable, RecordTable};

use super::recorder::Recorder;
use super::wire::{
    AcquireReq, Caller, DB_ADDR, DeleteReq, LEASE_ADDR, ReleaseReq, RenewReq, addr, from_rec,
    to_rec,
};
use crate::model::{Actor, EventKind, OpKind, RowRec};

/// The lease service node's main task.
pub(crate) async fn lease_service(table: Arc<Mutex<LeaseTable>>, recorder: Arc<Recorder>) {
    let endpoint = Endpoint::bind(addr(LEASE_ADDR))
        .await
        .expect("bind the lease service");
    let record = move |recorder: &Recorder, caller: Caller, kind| {
        recorder.record(Actor::Lease, caller.term, kind);
    };
    let (t, r) = (table.clone(), recorder.clone());
    endpoint.add_rpc_handler(move |req: AcquireReq| {
        let now_ms = r.now_ms();
        let granted = t.lock().expect("lease table").acquire(&req.owner, now_ms);
        let answer = granted.as_ref().map(to_rec);
        let call = req.caller.call;
        record(
            &r,
            req.caller,
            match &answer {
                Some(lease) => EventKind::Granted {
                    call,
                    lease: lease.clone(),
                },
                None => EventKind::Refused {
                    call,
                    op: OpKind::Acquire,
                },
            },
        );
        async move { answer }
    });
    let (t, r) = (table.clone(), recorder.clone());
    endpoint.add_rpc_handler(move |req: RenewReq| {
        let now_ms = r.now_ms();
        let mut table = t.lock().expect("lease table");
        let lease = from_rec(&req.lease);
        let call = req.caller.call;
        let answer = if req.revoke {
            if table.holder(now_ms) == Some(&lease) {
                table.release(&lease);
                record(
                    &r,
                    req.caller,
                    EventKind::Revoked {
                        call,
                        lease: req.lease.clone(),
                    },
                );
            } else {
                record(
                    &r,
                    req.caller,
                    EventKind::Refused {
                        call,
                        op: OpKind::Renew,
                    },
                );
            }
            None
        } else {
            let renewed = table.renew(&lease, now_ms).as_ref().map(to_rec);
            record(
                &r,
                req.caller,
                match &renewed {
                    Some(lease) => EventKind::Granted {
                        call,
                        lease: lease.clone(),
                    },
                    None => EventKind::Refused {
                        call,
                        op: OpKind::Renew,
                    },
                },
            );
            renewed
        };
        async move { answer }
    });
    let (t, r) = (table, recorder);
    endpoint.add_rpc_handler(move |req: ReleaseReq| {
        let cleared = t
            .lock()
            .expect("lease table")
            .release(&from_rec(&req.lease));
        let call = req.caller.call;
        record(
            &r,
            req.caller,
            EventKind::Released {
                call,
                lease: req.lease.clone(),
                cleared,
            },
        );
        async move {}
    });
    std::future::pending::<()>().await;
}

/// The database node's main task: answers deletes and keeps rows arriving.
pub(crate) async fn database(
    leases: Arc<Mutex<LeaseTable>>,
    rows: Arc<Mutex<RecordTable>>,
    recorder: Arc<Recorder>,
    arrivals_per_sec: u32,
    inserted: Arc<AtomicU64>,
    batch_ms: std::ops::RangeInclusive<u64>,
    work_seed: u64,
) {
    let endpoint = Endpoint::bind(addr(DB_ADDR))
        .await
        .expect("bind the database");
    let (t, r) = (rows.clone(), recorder.clone());
    let mut work = ChaCha8Rng::seed_from_u64(work_seed);
    endpoint.add_rpc_handler(move |req: DeleteReq| {
        let work_ms = work.gen_range(batch_ms.clone());
        let (leases, rows, recorder) = (leases.clone(), t.clone(), r.clone());
        async move {
            // The batch takes time; it commits, fence check and delete in
            // one step, at the end.
            madsim::time::sleep(std::time::Duration::from_millis(work_ms)).await;
            apply_delete(&req, &leases, &rows, &recorder)
        }
    });
    loop {
        madsim::time::sleep(std::time::Duration::from_secs(1)).await;
        let now_ms = recorder.now_ms();
        let mut table = rows.lock().expect("rows");
        for _ in 0..arrivals_per_sec {
            table.insert(now_ms);
        }
        inserted.fetch_add(u64::from(arrivals_per_sec), Ordering::Relaxed);
    }
}

/// FEN-2 and the delete, atomically: nothing else runs in between.
fn apply_delete(
    req: &DeleteReq,
    leases: &Mutex<LeaseTable>,
    rows: &Mutex<RecordTable>,
    recorder: &Recorder,
) -> Result<u64, String> {
    let (call, term) = (req.caller.call, req.caller.term);
    let fence = leases
        .lock()
        .expect("lease table")
        .check_fence(req.token, recorder.now_ms());
    if let Err(rejection) = fence {
        let reason = rejection.to_string();
        let kind = EventKind::Fenced {
            call,
            token: req.token,
            reason: reason.clone(),
        };
        recorder.record(Actor::Db, term, kind);
        return Err(reason);
    }
    let deleted = rows
        .lock()
        .expect("rows")
        .delete_older_than(req.older_than_ms, req.limit);
    if !recorder.enabled() {
        return Ok(deleted.len() as u64);
    }
    let rows: Vec<RowRec> = deleted
        .iter()
        .map(|row| RowRec {
            id: row.id,
            created_at_ms: row.created_at_ms,
        })
        .collect();
    let count = rows.len() as u64;
    let kind = EventKind::Deleted {
        call,
        token: req.token,
        older_than_ms: req.older_than_ms,
        rows,
    };
    recorder.record(Actor::Db, term, kind);
    Ok(count)
}
