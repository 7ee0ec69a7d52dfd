//! A history as an SVG swimlane picture: one lane per replica, one for the
//! lease service, one for the database, simulated time along x. Its parts:
//! `scale.rs` maps time to x and picks the ticks, `canvas.rs` writes the
//! elements (every mark with a `<title>`: the timeline line it stands for),
//! `layout.rs` lays out the lanes, `lanes.rs` draws them, `calls.rs` draws believed leases and
//! call arrows, `markers.rs` stops, term ends and violations, `services.rs`
//! the lease service's and the database's lanes, `legend.rs` explains the
//! marks, `overlay.rs` draws `sim explain`'s chance band and an instant.
//! The output is a pure function of the history and verdict: byte-identical
//! for the same seed.

mod calls;
mod canvas;
mod lanes;
mod layout;
mod legend;
mod markers;
mod overlay;
mod scale;
mod services;

use crate::checker::Verdict;
use crate::model::History;

pub use overlay::{ChanceBand, Overlay};

use canvas::Canvas;
use layout::Layout;
use scale::Scale;

/// The picture's width in pixels (it scales when zoomed: it is vector).
const WIDTH: f64 = 1200.0;
/// Where the plot starts, after the lane names.
const PLOT_LEFT: f64 = 120.0;
/// Space right of the plot.
const PLOT_RIGHT_MARGIN: f64 = 30.0;
/// Space above the first lane: the title and the time axis.
const TOP: f64 = 54.0;

/// The most events a picture is drawn for: a hundred times the 400 a
/// zoomed-in reader can use; a run with more (an hour of 1 ms timers has
/// millions) would draw a picture of hundreds of megabytes.
pub const MAX_PICTURE_EVENTS: usize = 40_000;

/// The swimlane picture of `history`, with `verdict`'s violations marked
/// (callers refuse histories of more than [`MAX_PICTURE_EVENTS`]).
pub fn swimlanes(history: &History, verdict: &Verdict) -> String {
    swimlanes_with(history, verdict, &Overlay::default())
}

/// [`swimlanes`] with `overlay`'s marks: a chance band under the lanes, an
/// instant marked across them.
pub fn swimlanes_with(history: &History, verdict: &Verdict, overlay: &Overlay) -> String {
    let times: Vec<i64> = history.events.iter().map(|e| e.at_ms).collect();
    let scale = Scale::new(&times, PLOT_LEFT, WIDTH - PLOT_RIGHT_MARGIN);
    let layout = Layout::new(history.header.replicas, TOP);
    let height = layout.bottom() + overlay.height() + legend::HEIGHT;
    let mut canvas = Canvas::new(WIDTH, height);
    let title = format!(
        "seed {} - {} replicas - {} events - {}",
        history.header.seed,
        history.header.replicas,
        history.events.len(),
        if verdict.passed() {
            "every clause kept".to_owned()
        } else {
            let mut clauses: Vec<&str> = verdict.violations.iter().map(|v| v.clause).collect();
            clauses.dedup();
            format!("VIOLATED: {}", clauses.join(", "))
        }
    );
    let class = if verdict.passed() {
        "title"
    } else {
        "title failing"
    };
    canvas.text(PLOT_LEFT, 18.0, class, &title);
    lanes::backgrounds(&mut canvas, history, &scale, &layout);
    scale.axis(&mut canvas, TOP - 8.0, layout.bottom());
    lanes::draw(&mut canvas, history, &scale, &layout);
    markers::violations(&mut canvas, history, verdict, &scale, &layout);
    overlay.draw(&mut canvas, &scale, (TOP, layout.bottom()), layout.bottom());
    legend::draw(&mut canvas, layout.bottom() + overlay.height() + 8.0);
    canvas.finish()
}
