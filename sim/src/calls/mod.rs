//! A replica's side of every call, on any runtime: how calls are numbered
//! and counted into terms, and which faults each one meets. Uses `model`;
//! the simulator's port and the real-mode tests' port both build on it;
//! `conversation.rs` is the adapters' round trips, which the simulator's
//! port spends.

mod conversation;
mod draw;
mod ledger;

pub use conversation::{
    AdapterCall, Connection, RoundTrip, START_UP_ROUND_TRIPS, Sql, round_trips_per_call,
};
pub use draw::{CallFaults, ChosenFault, FaultDraws};
pub use ledger::{CallLedger, CallTicket};
