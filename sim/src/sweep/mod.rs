//! Sweeps across machines: the versioned summary document a sweep writes
//! (`summary.rs`), built from what `explore` returned (`from_sweep.rs`),
//! read back with every count and plan checked (`load.rs`,
//! `plausible.rs`), merged across shards (`merge.rs`), triaged against a
//! baseline (`triage.rs`) with how many clean runs a fix needs
//! (`findability.rs`), the runs a sweep's hints replay
//! (`hint_plans.rs`), and the shard plan that splits one sweep
//! between machines (`shard_plan.rs`). Uses `model`, `checker`, `report`
//! and `search`; the command line prints, writes and signals.

mod findability;
mod from_sweep;
mod hint_plans;
mod load;
mod merge;
mod plausible;
mod shard_plan;
mod summary;
mod triage;

pub use crate::search::Shard;
pub use findability::{CONFIDENCE, Findability, clean_runs_needed, findability};
pub use hint_plans::HintPlans;
pub use load::SUMMARY_LIMIT_BYTES;
pub use merge::merge;
pub use plausible::file_name_part;
pub use shard_plan::{DEFAULT_SHRINK_MAX, PlannedSweep, SHARDS_MAX};
pub use summary::{
    Build, FORMAT, Failure, ShardPart, Shards, ShrunkPlan, Summary, Sweep, Token, VERSION,
};
pub use triage::{Credible, Triage, distinct, triage};
