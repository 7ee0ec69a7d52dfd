//! The worker under test: the production worker, the review's flawed
//! variant, and [`Sim`], which runs a world with one of them. Uses `model`
//! and `world`.

mod real;
mod sim;
mod variant;

pub use real::RealWorker;
pub use sim::Sim;
pub use variant::VariantFactory;
