//! Real mode: the production worker and its PostgreSQL adapters on tokio,
//! against a real server, with the simulator's faults injected around the
//! adapters and every call and database effect recorded as a [`History`]
//! the checker judges.
//!
//! Time here is the wall clock, so two runs of one plan interleave
//! differently; what a plan fixes (fault draws, event instants, call
//! numbers, settings) is applied exactly, and what the machine decides
//! (database work time, network delays, scheduling) is not.
//!
//! Map: `log` stamps and sorts the events, `gate` freezes a process and
//! steps its clock, `db_clock` makes the database's clock steppable and
//! audits every row deleted and every lease change, `unheard` records the
//! effects that committed though no reply said so, `port` is a replica's faulty, recording view
//! of the adapters, `replica` a replica's lifecycle (start, kill, pause,
//! stop), `staging` what of a plan real mode can apply, `strike` real mode as the target of the plan's one fault
//! interpreter, `run` one plan from start to history, `server` the
//! throwaway server and runtime every command's runs share
//! ([`RealServer`]), `judge` real runs judged as the commands need them (a
//! replay's attempts, a scenario beside its simulated run), and
//! `server_log` what the server did on its own (bounds, cancels,
//! rollbacks, lock waits), read back from its log.
//!
//! [`History`]: crate::History

pub mod db_clock;
mod gate;
mod judge;
pub mod log;
mod port;
mod real_target;
mod replica_lifecycle;
mod run;
mod server;
mod server_events;
mod server_log;
mod staging;
mod unheard;

pub use judge::{
    Attempt, Comparison, attempt_until_violated, compare_scenario, takeover_batch, verdict_text,
};
pub use run::{RealRun, not_applied, refusal, run_plan};
pub use server::RealServer;
pub use unheard::record_unheard;
