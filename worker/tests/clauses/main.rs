//! Clause-by-clause tests of the worker against deterministic fakes.
//!
//! Time is tokio's paused clock: it jumps to the next timer whenever every
//! task waits, so a test of minutes of leases runs in milliseconds and the
//! same test always sees the same interleaving.

mod harness;
mod history;

mod acquire;
mod config;
mod cutoff_cap;
mod expiry;
mod fencing;
mod release;
mod renew;
mod serve;
mod stop;
