//! `sim replay TOKEN --at MS | --at-seq N [--json]`: the world at one
//! instant of the run, in words or as JSON.

use std::path::Path;

use retention_sim::model::RunSpec;
use retention_sim::report::Overlay;
use retention_sim::report::replay_command;
use retention_sim::search::world_at;
use retention_sim::world::Moment;
use retention_sim::{Sim, check};

use crate::commands::{picture_with, write_picture};
use crate::output::say;

/// Prints the world just after event `at_seq`, or at instant `at_ms`.
/// With `svg`, also draws the run with the instant marked.
pub fn run(
    spec: &RunSpec,
    (at_ms, at_seq): (Option<i64>, Option<usize>),
    json: bool,
    (svg, force): (Option<&Path>, bool),
) -> Result<bool, String> {
    let (flag, moment) = match (at_seq, at_ms) {
        (Some(seq), _) => (format!("--at-seq {seq}"), Moment::AfterEvent(seq)),
        (None, Some(at_ms)) => (format!("--at {at_ms}"), Moment::AtMs(at_ms)),
        (None, None) => unreachable!("called with --at or --at-seq"),
    };
    let world = world_at(spec, moment).map_err(|problem| format!("{flag}: {problem}"))?;
    if json {
        say!(
            "{}",
            serde_json::to_string(&world).map_err(|error| error.to_string())?
        );
    } else {
        say!("{world}");
        say!("replay: {}", replay_command(spec));
    }
    if let Some(path) = svg {
        let history = Sim::new(spec).run().map_err(|error| error.to_string())?;
        let overlay = Overlay {
            band: None,
            instant_ms: Some(world.at_ms),
        };
        let picture = picture_with(&history, &check(&history), &overlay)
            .map_err(|problem| format!("--svg {}: {problem}", path.display()))?;
        write_picture(path, &picture, force)?;
    }
    Ok(true)
}
