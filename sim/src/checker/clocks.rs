//! A host's clock as a history tells it: a replica's wall clock (the
//! header's skew, then every step and rate change it recorded) or the
//! database's (every step it recorded), so the checker can ask what it
//! read at an instant, or whether it read a value during an interval.

use crate::model::{Actor, EventKind, History};

/// Piecewise: from each segment's start (true time) the clock reads its
/// reading there plus the true time since, scaled by its rate.
#[derive(Debug, Clone)]
pub(super) struct HostClock {
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    start_ms: i64,
    reading_ms: i64,
    rate_permille: u64,
}

impl Segment {
    fn reading_at(&self, at_ms: i64) -> i64 {
        let passed = i128::from(at_ms - self.start_ms) * i128::from(self.rate_permille) / 1_000;
        self.reading_ms
            .saturating_add(i64::try_from(passed).unwrap_or(i64::MAX))
    }

    fn keeps_time(&self) -> bool {
        self.rate_permille == 1_000
    }
}

impl HostClock {
    /// A clock `skew_ms` ahead of true time from the start.
    pub fn new(skew_ms: i64) -> Self {
        Self {
            segments: vec![Segment {
                start_ms: 0,
                reading_ms: skew_ms,
                rate_permille: 1_000,
            }],
        }
    }

    /// The database's clock over the whole of `history`.
    pub fn of_database(history: &History) -> Self {
        let mut clock = Self::new(0);
        for event in &history.events {
            if event.actor == Actor::Db {
                clock.observe(event.at_ms, &event.kind);
            }
        }
        clock
    }

    /// What the clock read at `at_ms` of the run's time (after any step at
    /// that instant that it has observed).
    pub fn reading_at(&self, at_ms: i64) -> i64 {
        let segment = self
            .segments
            .iter()
            .rev()
            .find(|segment| segment.start_ms <= at_ms)
            .unwrap_or(&self.segments[0]);
        segment.reading_at(at_ms)
    }

    /// Takes in one of the host's events, at `at_ms`.
    pub fn observe(&mut self, at_ms: i64, kind: &EventKind) {
        let current = *self.segments.last().expect("a first segment");
        let next = match *kind {
            EventKind::ClockStepped { to_ms, .. } | EventKind::DbClockStepped { to_ms, .. } => {
                Segment {
                    start_ms: at_ms,
                    reading_ms: to_ms,
                    ..current
                }
            }
            EventKind::ClockRateSet {
                rate_permille,
                reading_ms,
            } => Segment {
                start_ms: at_ms,
                reading_ms,
                rate_permille,
            },
            _ => return,
        };
        self.segments.push(next);
    }

    /// Whether the clock read `reading_ms` at some instant of
    /// `from_ms..=to_ms`. A clock that keeps true time is judged to the
    /// millisecond; one running at another rate within a few milliseconds
    /// either side, as the history rounds its readings and instants to
    /// whole milliseconds.
    pub fn read_within(&self, reading_ms: i64, from_ms: i64, to_ms: i64) -> bool {
        if from_ms > to_ms {
            return false;
        }
        self.segments.iter().enumerate().any(|(index, segment)| {
            let end_ms = self
                .segments
                .get(index + 1)
                .map_or(i64::MAX, |next| next.start_ms);
            let (a, b) = (from_ms.max(segment.start_ms), to_ms.min(end_ms));
            if a > b {
                return false;
            }
            // The history floors the reading at the segment's start and
            // the instants to whole milliseconds; scaled by the rate, each
            // loses up to a millisecond's worth.
            let slack = if segment.keeps_time() {
                0
            } else {
                2 + i64::try_from(segment.rate_permille.div_ceil(1_000)).unwrap_or(i64::MAX)
            };
            (segment.reading_at(a) - slack..=segment.reading_at(b) + slack).contains(&reading_ms)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::HostClock;
    use crate::model::EventKind;

    #[test]
    fn steps_and_rates_map_readings_back_to_true_time() {
        let mut clock = HostClock::new(100);
        assert!(clock.read_within(150, 0, 50) && !clock.read_within(151, 0, 50));
        clock.observe(
            1_000,
            &EventKind::ClockStepped {
                from_ms: 1_100,
                to_ms: 600,
            },
        );
        // Back 500 ms at 1000: it read 600..1100 twice.
        assert!(clock.read_within(700, 1_050, 1_100));
        assert!(clock.read_within(700, 550, 650));
        assert!(!clock.read_within(1_200, 1_000, 1_500));
        let half = EventKind::ClockRateSet {
            rate_permille: 500,
            reading_ms: 1_600,
        };
        clock.observe(2_000, &half);
        assert!(clock.read_within(1_700, 2_150, 2_250) && !clock.read_within(1_800, 2_000, 2_100));
    }
}
