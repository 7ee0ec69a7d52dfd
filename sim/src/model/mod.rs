//! What a run is, as plain data: its spec and fault plan, the names it is
//! described with, and its history; serde and the worker's types only.

mod faults;
mod history;
mod jsonl;
pub(crate) mod names;
mod spec;
mod term;

pub use faults::{CallOutcome, FaultConfig, FaultEvent};
pub use history::{
    Actor, Event, EventKind, Header, History, Invocation, LeaseRec, Outcome, RowRec,
};
pub use jsonl::HISTORY_FORMAT_VERSION;
pub use names::{FaultKnob, Flaw, Named, OpKind, UnknownName};
pub use spec::{RunSpec, SpecError, WorkerSpec};
pub use term::{CallFailure, FailureKind, LossRec, ReleaseRec, TermEndRec, TermSummary};
