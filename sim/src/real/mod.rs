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
//! audits every row deleted, `port` is a replica's faulty, recording view
//! of the adapters, `replica` a replica's lifecycle (start, kill, pause,
//! stop), `run` one plan from start to history, `server` the throwaway
//! server and runtime every command's runs share ([`RealServer`]), and
//! `server_log` what the server did on its own (bounds, cancels,
//! rollbacks, lock waits), read back from its log.
//!
//! [`History`]: crate::History

pub mod db_clock;
pub mod gate;
pub mod log;
pub mod port;
pub mod replica;
pub mod run;
mod server;
pub mod server_log;

pub use server::RealServer;
