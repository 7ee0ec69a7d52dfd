//! The simulated PostgreSQL: the lease row and the records in one database,
//! the row locks the adapters' SQL takes, transactions, and every statement
//! judged at the instant its SQL judges it. A runtime-agnostic state
//! machine (the world's database node drives it); uses `model`.
//!
//! Each statement below names the adapter SQL it stands for
//! (`worker/src/pg/lease.rs`, `worker/src/pg/records.rs`) and says which
//! instant it reads the clock at. What is not modelled is listed in
//! `README.md` (the database model).

mod database;
mod records;
mod row_lock;

pub use database::{Applied, Database, LeaseAnswer, LeaseStatement, StatementId, TxnId};
pub use records::Records;
