//! Simulated time to x, and the time axis with round-numbered ticks.

use super::canvas::Canvas;

/// A linear map from `[t0, t1]` ms to `[x0, x1]` pixels.
pub struct Scale {
    t0: i64,
    t1: i64,
    x0: f64,
    x1: f64,
}

impl Scale {
    /// The map; `t1 > t0` is the caller's to ensure.
    pub fn new(t0: i64, t1: i64, x0: f64, x1: f64) -> Self {
        assert!(t1 > t0, "an empty time range");
        Self { t0, t1, x0, x1 }
    }

    /// The x of time `at_ms`, clamped to the plot.
    pub fn x(&self, at_ms: i64) -> f64 {
        let at = at_ms.clamp(self.t0, self.t1);
        self.x0 + (at - self.t0) as f64 / (self.t1 - self.t0) as f64 * (self.x1 - self.x0)
    }

    /// The plot's right edge.
    pub fn right(&self) -> f64 {
        self.x1
    }

    /// Ticks every 1, 2 or 5 times a power of ten ms, about ten of them,
    /// labelled in seconds (or ms for a short run), with grid lines down
    /// to `bottom`.
    pub fn axis(&self, canvas: &mut Canvas, y: f64, bottom: f64) {
        let span = (self.t1 - self.t0) as f64;
        let raw = span / 10.0;
        let power = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * power)
            .find(|step| *step >= raw)
            .unwrap_or(10.0 * power)
            .max(1.0) as i64;
        let mut at = self.t0 - self.t0.rem_euclid(step);
        while at <= self.t1 {
            if at >= self.t0 {
                let x = self.x(at);
                canvas.line((x, y + 4.0), (x, bottom), "tick", None, None);
                let label = if step >= 1_000 {
                    format!("{} s", at / 1_000)
                } else if step >= 100 && at % 1_000 != 0 {
                    format!("{:.1} s", at as f64 / 1_000.0)
                } else if step >= 100 {
                    format!("{} s", at / 1_000)
                } else {
                    format!("{at} ms")
                };
                canvas.text(x - 8.0, y, "small", &label);
            }
            at += step;
        }
    }
}
