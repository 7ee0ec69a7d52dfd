//! What `sim explain` and `sim replay --at` draw over a run's picture: the
//! failure's chance curve as a band under the lanes, with its jump
//! outlined, and an instant marked across the lanes. Drawn with inline
//! colours: the style sheet every other picture carries stays as it is.

use super::canvas::{Canvas, n};
use super::scale::Scale;

/// Extra marks on a picture.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    /// The chance curve, drawn as a band under the lanes.
    pub band: Option<ChanceBand>,
    /// An instant (run's time) marked with a line across the lanes.
    pub instant_ms: Option<i64>,
}

/// A failure's chance curve (`sim explain`).
#[derive(Debug, Clone)]
pub struct ChanceBand {
    /// The band's name, left of it.
    pub label: String,
    /// Instants in order, each with the chance that a branch from it fails.
    pub points: Vec<(i64, f64)>,
    /// The interval where the chance jumps, outlined.
    pub jump: (i64, i64),
}

/// The band's height, and the gap above it.
pub const BAND_HEIGHT: f64 = 34.0;
const BAND_GAP: f64 = 6.0;

impl Overlay {
    /// The height the overlay adds under the lanes.
    pub fn height(&self) -> f64 {
        if self.band.is_some() {
            BAND_HEIGHT + BAND_GAP
        } else {
            0.0
        }
    }

    /// Draws the band from `top` and the instant's line from `lanes_top`
    /// to `lanes_bottom`.
    pub fn draw(&self, canvas: &mut Canvas, scale: &Scale, lanes: (f64, f64), top: f64) {
        if let Some(band) = &self.band {
            draw_band(canvas, scale, band, top + BAND_GAP);
        }
        if let Some(at_ms) = self.instant_ms {
            let x = scale.x(at_ms);
            canvas.raw(&format!(
                "<g><title>the world at {at_ms} ms (sim replay --at)</title>\
                 <line x1=\"{x}\" y1=\"{y0}\" x2=\"{x}\" y2=\"{y1}\" stroke=\"#0a7d8c\" \
                 stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/></g>\n",
                x = n(x),
                y0 = n(lanes.0),
                y1 = n(lanes.1)
            ));
            canvas.text(
                x + 3.0,
                lanes.0 + 9.0,
                "clocktext",
                &format!("at {at_ms} ms"),
            );
        }
    }
}

fn draw_band(canvas: &mut Canvas, scale: &Scale, band: &ChanceBand, y: f64) {
    canvas.text(8.0, y + BAND_HEIGHT / 2.0 + 4.0, "lane", &band.label);
    for pair in band.points.windows(2) {
        let ((from_ms, chance), (to_ms, _)) = (pair[0], pair[1]);
        let (x0, x1) = (scale.x(from_ms), scale.x(to_ms));
        canvas.raw(&format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#d01010\" \
             fill-opacity=\"{:.2}\"><title>a fresh future from {from_ms} ms fails {:.0} % of \
             the time</title></rect>\n",
            n(x0),
            n(y),
            n((x1 - x0).max(0.8)),
            n(BAND_HEIGHT),
            chance.clamp(0.0, 1.0) * 0.85 + 0.03,
            chance * 100.0
        ));
    }
    let (x0, x1) = (scale.x(band.jump.0), scale.x(band.jump.1));
    canvas.raw(&format!(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#222\" \
         stroke-width=\"1.5\"><title>the chance jumps here: {} ms to {} ms</title></rect>\n",
        n(x0 - 1.0),
        n(y - 1.0),
        n((x1 - x0).max(0.8) + 2.0),
        n(BAND_HEIGHT + 2.0),
        band.jump.0,
        band.jump.1
    ));
}
