//! A replica's side of every call, on any runtime: how calls are numbered
//! and counted into terms, and which faults each one meets. Uses `model`;
//! the simulator's port and the real-mode tests' port both build on it.

mod draw;
mod ledger;

pub use draw::{CallFaults, ChosenFault, FaultDraws};
pub use ledger::{CallLedger, CallTicket};
