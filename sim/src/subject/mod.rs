//! The worker under test: the production worker, the review's flawed
//! variant, and [`Sim`], which runs a world with one of them. Uses `model`
//! and `world`.

mod real;
mod sim;
mod variant;

/// A panic's message, as the simulator records it (LIVE-4).
pub(crate) use crate::world::message_of as panic_message;
/// The seam every worker under test plugs into, for real mode's replicas.
pub use crate::world::{BoxFuture, OnTerm, SimulatedWorker};
pub use real::RealWorker;
pub use sim::Sim;
pub use variant::{MadsimRuntime, Runtime, TokioRuntime, VariantFactory, variant_worker};
