//! What people read and write: the text timeline and its swimlane picture
//! (`svg/`), the one failure formatter and its replay token, scenario files
//! (read bounded, `input.rs`), the scenario report that snapshots hold, and
//! the takeover-time stories and their reading (`takeover.rs`).
//! Uses `model` and `checker`.

mod failure;
mod input;
mod scenario;
mod scenario_report;
mod svg;
mod takeover;
mod timeline;
mod toml_location;

pub use failure::{excerpt, format_failure, parse_token, replay_command, replay_token};
pub use input::{
    HISTORY_LIMIT_BYTES, InputError, SCENARIO_LIMIT_BYTES, read_text, read_text_cut_short,
};
pub use scenario::{Expect, Scenario, ScenarioError, scenario_files};
pub use scenario_report::{describe_run, scenario_report, term_footers};
pub use svg::{ChanceBand, MAX_PICTURE_EVENTS, Overlay, swimlanes, swimlanes_with};
pub use takeover::{Story, Takeover, TakeoverTally, bound_ms, spread, story_plan, takeover};
pub use timeline::TIMELINE_COLUMNS;
