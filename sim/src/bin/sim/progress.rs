//! How a sweep shows its progress on standard error: a bar with runs/s,
//! failures and the time left on a terminal; a plain line every tenth of
//! the runs (or every minute) in a log; nothing with `--quiet`.

use crate::output::tell;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use retention_sim::search::Progress;

/// A plain line at least this often, however slow the sweep.
const LINE_EVERY: Duration = Duration::from_secs(60);

/// The display a sweep reports to.
pub enum Watch {
    Bar(ProgressBar),
    Lines(Mutex<Lines>),
    Quiet,
}

/// When the last plain line was printed.
pub struct Lines {
    total: u64,
    started: Instant,
    last_at: Instant,
    last_tenth: u64,
}

impl Watch {
    /// The display for a sweep of `total` runs: a bar when standard error
    /// is a terminal, lines when it is not.
    pub fn new(total: u64, quiet: bool) -> Self {
        if quiet {
            return Self::Quiet;
        }
        if !std::io::stderr().is_terminal() {
            let now = Instant::now();
            return Self::Lines(Mutex::new(Lines {
                total,
                started: now,
                last_at: now,
                last_tenth: 0,
            }));
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{bar:30.cyan/blue} {human_pos}/{human_len} runs  {msg}  ETA {eta}",
        )
        .expect("a valid template")
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message("0 failed");
        Self::Bar(bar)
    }

    /// Hears of one finished run.
    pub fn update(&self, at: Progress) {
        match self {
            Self::Quiet => {}
            Self::Bar(bar) => {
                bar.set_position(at.done);
                bar.set_message(format!("{:.0} runs/s  {} failed", bar.per_sec(), at.failed));
            }
            Self::Lines(lines) => {
                let mut lines = lines.lock().unwrap_or_else(|e| e.into_inner());
                let tenth = at.done * 10 / lines.total.max(1);
                let now = Instant::now();
                if tenth > lines.last_tenth || now - lines.last_at >= LINE_EVERY {
                    lines.last_tenth = tenth;
                    lines.last_at = now;
                    tell!("{}", lines.line(at, now));
                }
            }
        }
    }

    /// Clears the bar, so the summary starts on a clean line.
    pub fn finish(&self) {
        if let Self::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

impl Lines {
    fn line(&self, at: Progress, now: Instant) -> String {
        let secs = (now - self.started).as_secs_f64().max(1e-3);
        let rate = at.done as f64 / secs;
        let left = self.total.saturating_sub(at.done);
        let eta = if rate > 0.0 {
            format_secs(left as f64 / rate)
        } else {
            "unknown".to_owned()
        };
        format!(
            "sim: {}/{} runs ({}%), {rate:.0} runs/s, {} failed, {eta} left",
            at.done,
            self.total,
            at.done * 100 / self.total.max(1),
            at.failed
        )
    }
}

/// `75` -> `1m15s`; `4000` -> `1h06m`.
fn format_secs(secs: f64) -> String {
    let secs = secs.round() as u64;
    match secs {
        0..60 => format!("{secs}s"),
        60..3_600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3_600, secs % 3_600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::format_secs;

    #[test]
    fn times_left_read_as_people_write_them() {
        assert_eq!(format_secs(4.4), "4s");
        assert_eq!(format_secs(75.0), "1m15s");
        assert_eq!(format_secs(4_000.0), "1h06m");
    }
}
