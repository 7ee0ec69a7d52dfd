//! The simulated PostgreSQL: the lease row and the records in one database,
//! the row locks the adapters' SQL takes, transactions, PostgreSQL's timing
//! rules (per-attempt `lock_timeout`, `statement_timeout`, the idle bound,
//! commits held until durable) and every statement judged at the instant
//! its SQL judges it. A runtime-agnostic state machine driven by its
//! caller's clock (the world's database node, and the differential tests
//! against a real server); uses `model`.
//!
//! Map of the module:
//! - `statement.rs`: requests, answers and effects.
//! - `database.rs`: [`Database`], its state and entry points.
//! - `lease_row.rs`: the lease `UPDATE`s and the fence, and the row's queue.
//! - `txn.rs`: the delete's transaction, aborts, cancels, closed sessions.
//! - `timing.rs`: the server-side bounds and commit durability, in time order.
//! - `row_lock.rs`: who holds the lease row and who waits for it.
//! - `records.rs`: [`Records`], the table and its row locks.
//! - `view.rs`: [`DbView`], the database as a reader queries it at an
//!   instant (`sim replay --at`).
//!
//! Each statement names the adapter SQL it stands for
//! (`worker/src/pg/lease.rs`, `worker/src/pg/records.rs`) and says which
//! instant it reads the clock at. The model is described in
//! `sim/docs/database-model.md`; what it leaves out is listed in
//! `sim/docs/not-modelled.md`.

mod database;
mod lease_row;
mod records;
mod row_lock;
mod statement;
mod timing;
mod txn;
mod view;

pub use database::{Bounds, Database};
pub use records::Records;
pub use statement::{
    Answer, Applied, Effect, Holder, LeaseAnswer, LeaseStatement, Refusal, Request, SessionId,
    StatementId, Timed, TxnId,
};
pub use view::{CallRef, DbView, LeaseRowView, StatementView, TxnView};

fn emit(out: &mut Vec<Timed>, at_ms: i64, effect: Effect) {
    out.push(Timed { at_ms, effect });
}

/// Answers statement `id` at once with `refusal`: it never ran.
fn refuse(out: &mut Vec<Timed>, at_ms: i64, id: StatementId, refusal: Refusal) {
    let answer = Err(refusal);
    emit(out, at_ms, Effect::Done { id, answer });
}
