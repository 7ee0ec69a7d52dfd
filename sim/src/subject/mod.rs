//! The worker under test: the production worker, the review's flawed
//! variant, and [`Sim`], which runs a world with one of them. Uses `model`
//! and `world`.

mod production;
mod sim;
mod variant;

/// The seam every worker under test plugs into, in either world.
pub use crate::model::{BoxFuture, OnTerm, SimulatedWorker};
pub use sim::Sim;
pub use variant::{MadsimRuntime, Runtime, TokioRuntime, variant_worker};
