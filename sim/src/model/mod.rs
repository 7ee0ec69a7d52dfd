//! What a run is, as plain data: its spec and fault plan (what each kind
//! of fault event is, with its fields' ranges, in `faults.rs`; the spec's
//! own ranges in `ranges.rs`), the names it is described with, and its
//! history, and the command line's short syntax for events and knobs with
//! each event's one-line description (`fault_text.rs`); serde and the
//! worker's types only.

mod event_edits;
mod fault_knobs;
mod fault_text;
mod faults;
mod history;
mod history_rules;
mod jsonl;
mod limits;
pub(crate) mod names;
mod obligations;
mod overlap;
mod ranges;
mod semantics;
mod spec;
mod spec_checks;
pub(crate) mod strict_json;
mod term;
mod validate;
mod worker_seam;

pub use fault_knobs::FaultConfig;
pub use fault_text::{EventFlag, set_fault_flag};
pub use faults::{CallOutcome, FaultEvent};
pub use history::{
    Actor, Event, EventKind, Header, History, Invocation, LeaseRec, Outcome, RowRec, deleted_young,
};
pub use jsonl::HISTORY_FORMAT_VERSION;
pub use limits::{DAY_MS, HOUR_MS, MAX_ROWS, REPLICAS, replicas_problem};
pub use names::{FaultKnob, Flaw, Named, OpKind, UnknownName};
pub use overlap::first_per_call;
pub use spec::{Branch, EventEdit, RunSpec, SpecError, WorkerSpec};
pub use term::{CallFailure, FailureKind, LossRec, ReleaseRec, TermEndRec, TermSummary};
pub use worker_seam::{BoxFuture, OnTerm, SimulatedWorker, WorkerUnderTest, panic_message};
