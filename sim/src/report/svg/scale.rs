//! Simulated time to x, and the time axis with round-numbered ticks. A long
//! stretch in which nothing happens (a story told in the first half second
//! of a six-second run) is folded to a narrow break marked on the axis with
//! the time it skips, so the picture spends its width where events are.

use super::canvas::{Canvas, n};

/// The width a folded stretch takes.
const FOLD_PX: f64 = 26.0;

/// A monotonic, piecewise-linear map from simulated ms to pixels.
pub struct Scale {
    /// (from_ms, to_ms) of each folded stretch, in order.
    folds: Vec<(i64, i64)>,
    t0: i64,
    t1: i64,
    x0: f64,
    x1: f64,
    /// Pixels per unfolded millisecond.
    px_per_ms: f64,
}

impl Scale {
    /// The map for events at `times_ms` (any order) onto `[x0, x1]`; a gap
    /// between consecutive events longer than an eighth of the run (and a
    /// second) is folded.
    pub fn new(times_ms: &[i64], x0: f64, x1: f64) -> Self {
        let mut times: Vec<i64> = times_ms.to_vec();
        times.sort_unstable();
        times.dedup();
        let t0 = times.first().copied().unwrap_or(0).min(0);
        let t1 = times.last().copied().unwrap_or(1).max(t0 + 1);
        let fold_over = ((t1 - t0) / 8).max(1_000);
        let folds: Vec<(i64, i64)> = times
            .windows(2)
            .filter(|pair| pair[1] - pair[0] > fold_over)
            .map(|pair| (pair[0] + fold_over / 8, pair[1] - fold_over / 8))
            .collect();
        let folded_ms: i64 = folds.iter().map(|(a, b)| b - a).sum();
        let live_ms = (t1 - t0 - folded_ms).max(1) as f64;
        let live_px = (x1 - x0 - FOLD_PX * folds.len() as f64).max(1.0);
        Self {
            folds,
            t0,
            t1,
            x0,
            x1,
            px_per_ms: live_px / live_ms,
        }
    }

    /// The x of time `at_ms`, clamped to the plot.
    pub fn x(&self, at_ms: i64) -> f64 {
        let at = at_ms.clamp(self.t0, self.t1);
        let mut x = self.x0;
        let mut from = self.t0;
        for &(a, b) in &self.folds {
            if at <= a {
                break;
            }
            x += (a - from) as f64 * self.px_per_ms;
            if at < b {
                return x + (at - a) as f64 / (b - a) as f64 * FOLD_PX;
            }
            x += FOLD_PX;
            from = b;
        }
        (x + (at - from) as f64 * self.px_per_ms).min(self.x1)
    }

    /// The plot's right edge.
    pub fn right(&self) -> f64 {
        self.x1
    }

    /// Ticks every 1, 2 or 5 times a power of ten ms, about ten over the
    /// unfolded time, labelled in seconds (ms for a short run), grid lines
    /// down to `bottom`; each fold drawn as a break with the time it skips.
    pub fn axis(&self, canvas: &mut Canvas, y: f64, bottom: f64) {
        let live_ms = (self.x1 - self.x0) / self.px_per_ms;
        let raw = live_ms / 10.0;
        let power = 10f64.powf(raw.max(1.0).log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * power)
            .find(|step| *step >= raw)
            .unwrap_or(10.0 * power)
            .max(1.0) as i64;
        let folded = |at: i64| self.folds.iter().any(|&(a, b)| at > a && at < b);
        let mut at = self.t0 - self.t0.rem_euclid(step);
        let mut last_x = f64::MIN;
        while at <= self.t1 {
            let x = self.x(at);
            if at >= self.t0 && !folded(at) && x - last_x > 28.0 {
                canvas.line((x, y + 4.0), (x, bottom), "tick", None, None);
                canvas.text(x - 8.0, y, "small", &label(at, step));
                last_x = x;
            }
            // Far past any run's length a step could overflow.
            let Some(next) = at.checked_add(step) else {
                break;
            };
            at = next;
        }
        for &(a, b) in &self.folds {
            let (xa, xb) = (self.x(a), self.x(b));
            let d = format!(
                "M{},{}l4,-4l4,8l4,-8l4,8l4,-4",
                n(xa + (xb - xa - 20.0) / 2.0),
                n(y + 2.0)
            );
            let skipped = format!("{} folded: nothing happens", seconds(b - a));
            canvas.path(&d, "fold", Some(&skipped));
            canvas.rect(
                (xa, y + 8.0, xb - xa, bottom - y - 8.0),
                "folded",
                Some(&skipped),
            );
            canvas.text(xa, y - 8.0, "small", &format!("+{}", seconds(b - a)));
        }
    }
}

fn label(at_ms: i64, step_ms: i64) -> String {
    if step_ms >= 1_000 || at_ms % 1_000 == 0 {
        format!("{} s", at_ms / 1_000)
    } else if step_ms >= 100 {
        format!("{:.1} s", at_ms as f64 / 1_000.0)
    } else {
        format!("{at_ms} ms")
    }
}

fn seconds(ms: i64) -> String {
    if ms >= 10_000 {
        format!("{} s", ms / 1_000)
    } else {
        format!("{:.1} s", ms as f64 / 1_000.0)
    }
}
