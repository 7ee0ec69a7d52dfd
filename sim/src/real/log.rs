//! The real-mode history log: events stamped on the wall clock (calls) or
//! the database's clock (effects), sorted into one history at the end.
//!
//! Effects carry the database's clock at the moment it decided (the
//! adapters' `Applied::at_us`), so sorting by time orders them as the
//! database's locks did; calls carry the same machine's wall clock when
//! issued and answered, so each effect falls between its call's invoke and
//! return. The database's clock is the wall clock plus the offset its
//! steps (`db_clock.rs`) put in, which the log takes back out.

use std::sync::Mutex;

use crate::model::{Actor, Event, EventKind, Header, History, LeaseRec};
use retention_worker::Lease;

/// Microseconds since the Unix epoch, on the clock PostgreSQL also reads.
pub fn wall_us() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(since.as_micros()).expect("fits")
}

/// The run's events, each with the microsecond it happened at.
pub struct RealRecorder {
    /// Whole milliseconds, so that history times and the database's
    /// millisecond expiries compare exactly.
    pub epoch_ms: i64,
    entries: Mutex<Vec<(i64, Event)>>,
    /// The database clock's offsets from the wall clock, each with the
    /// wall-clock microsecond it took effect at, oldest first.
    db_offsets_us: Mutex<Vec<(i64, i64)>>,
    /// The longest a database reading can precede its recording.
    reading_age_us_max: i64,
}

/// The longest a database reading can precede its recording by default:
/// a call's bound in the real-mode test, with room to spare.
const READING_AGE_US_MAX: i64 = 3_000_000;

impl Default for RealRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl RealRecorder {
    /// An empty log whose epoch (time 0 of the history) is now.
    pub fn new() -> Self {
        Self {
            epoch_ms: wall_us() / 1_000,
            entries: Mutex::new(Vec::new()),
            db_offsets_us: Mutex::new(vec![(i64::MIN, 0)]),
            reading_age_us_max: READING_AGE_US_MAX,
        }
    }

    /// An empty log for calls that may take up to `call_ms_max` (a call's
    /// timeout, and the database's work inside it).
    pub fn for_calls_up_to(call_ms_max: u64) -> Self {
        let age_ms = i64::try_from(call_ms_max).unwrap_or(i64::MAX / 2_000) + 3_000;
        Self {
            reading_age_us_max: age_ms.saturating_mul(1_000).max(READING_AGE_US_MAX),
            ..Self::new()
        }
    }

    /// The database's clock was stepped by `delta_ms` at wall-clock
    /// `at_us` (a whole millisecond): recorded as `DbClockStepped`.
    pub fn db_clock_stepped(&self, at_us: i64, delta_ms: i64) {
        let mut offsets = self.db_offsets_us.lock().unwrap();
        let before_us = offsets.last().expect("a first offset").1;
        let after_us = before_us + delta_ms * 1_000;
        offsets.push((at_us, after_us));
        drop(offsets);
        let at_ms = at_us.div_euclid(1_000) - self.epoch_ms;
        let kind = EventKind::DbClockStepped {
            from_ms: at_ms + before_us / 1_000,
            to_ms: at_ms + after_us / 1_000,
        };
        self.record_at(at_us, Actor::Db, 0, kind);
    }

    /// The wall-clock instant at which the database's clock read
    /// `reading_us`, a reading taken moments ago. After a step back two
    /// instants read the same; the later one that is not in the future is
    /// it, as a call is far shorter than any step.
    pub fn db_to_wall_us(&self, reading_us: i64) -> i64 {
        let offsets = self.db_offsets_us.lock().unwrap();
        let now_us = wall_us();
        let found = offsets
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, &(from_us, offset_us))| {
                let at_us = reading_us - offset_us;
                let until_us = offsets.get(i + 1).map_or(i64::MAX, |next| next.0);
                (from_us <= at_us && at_us < until_us && at_us <= now_us + 1_000).then_some(at_us)
            });
        let at_us = found.unwrap_or_else(|| {
            panic!("the database's clock read {reading_us} us at no instant so far: {offsets:?}")
        });
        assert!(
            at_us >= now_us - self.reading_age_us_max,
            "a database reading of {reading_us} us is older than any call: {offsets:?}"
        );
        at_us
    }

    /// Records an effect the database decided when its clock read
    /// `reading_us`.
    pub fn record_db(&self, reading_us: i64, actor: Actor, term: u32, kind: EventKind) {
        self.record_at(self.db_to_wall_us(reading_us), actor, term, kind);
    }

    /// The database's clock as the history counts it (ms since the run's
    /// epoch).
    pub fn db_ms(&self, reading_us: i64) -> i64 {
        reading_us.div_euclid(1_000) - self.epoch_ms
    }

    /// Records an event at wall-clock microsecond `at_us`.
    pub fn record_at(&self, at_us: i64, actor: Actor, term: u32, kind: EventKind) {
        let event = Event {
            at_ms: at_us.div_euclid(1_000) - self.epoch_ms,
            actor,
            term,
            kind,
        };
        self.entries.lock().unwrap().push((at_us, event));
    }

    /// Records an event now, by the wall clock.
    pub fn record(&self, actor: Actor, term: u32, kind: EventKind) {
        self.record_at(wall_us(), actor, term, kind);
    }

    /// A lease as the history records it, on the run's clock.
    pub fn lease(&self, lease: &Lease) -> LeaseRec {
        LeaseRec {
            owner: lease.owner_id.clone(),
            token: lease.fencing_token,
            expires_at_ms: lease.expires_at_ms - self.epoch_ms,
        }
    }

    /// The events so far, in time order (ties keep the order recorded).
    pub fn events(&self) -> Vec<Event> {
        let mut entries = self.entries.lock().unwrap().clone();
        entries.sort_by_key(|(at_us, _)| *at_us);
        entries.into_iter().map(|(_, event)| event).collect()
    }

    /// The events so far as a history under `header`.
    pub fn history(&self, header: Header) -> History {
        History {
            header,
            events: self.events(),
        }
    }
}
