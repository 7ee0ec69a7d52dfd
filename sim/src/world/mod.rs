//! The madsim boundary: simulated clock, network messages, the replicas'
//! port with its connection pool (`pool.rs`) and their TCP connections,
//! the database node, the replica process and the fault schedule, put
//! together into one world. Uses `model` and `calls`; the seam names what
//! it needs from a worker.

mod build;
mod clock;
mod db_node;
mod kernel;
mod panics;
mod pool;
mod port;
mod recorder;
mod replica_process;
mod seam;
mod services;
mod sim_target;
mod spin;
mod wire;

pub use crate::model::{BoxFuture, OnTerm, SimulatedWorker};
pub use build::{RunSlot, runtime, simulate};
pub use clock::SimClock;
pub use panics::{SpinDetected, WorkerPanicked};
pub use port::SimPort;
pub use recorder::Moment;
pub use seam::{SimDeps, WorkerFactory};
pub use spin::{SPIN_STEPS_MAX, SPIN_WINDOW_MS};
