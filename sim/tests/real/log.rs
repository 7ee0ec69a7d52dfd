//! The real-mode history log: events stamped on the wall clock (calls) or
//! the database's clock (effects), sorted into one history at the end.
//!
//! Effects carry the database's clock at the moment it decided (the
//! adapters' `Applied::at_us`), so sorting by time orders them as the
//! database's locks did; calls carry the same machine's wall clock when
//! issued and answered, so each effect falls between its call's invoke and
//! return.

use std::sync::Mutex;

use retention_sim::model::{Actor, Event, EventKind, Header, History, LeaseRec};
use retention_worker::Lease;

/// Microseconds since the Unix epoch, on the clock PostgreSQL also reads.
pub fn wall_us() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(since.as_micros()).expect("fits")
}

/// The run's events, each with the microsecond it happened at.
pub struct Log {
    /// Whole milliseconds, so that history times and the database's
    /// millisecond expiries compare exactly.
    pub epoch_ms: i64,
    entries: Mutex<Vec<(i64, Event)>>,
}

impl Log {
    pub fn new() -> Self {
        Self {
            epoch_ms: wall_us() / 1_000,
            entries: Mutex::new(Vec::new()),
        }
    }

    pub fn record_at(&self, at_us: i64, actor: Actor, term: u32, kind: EventKind) {
        let event = Event {
            at_ms: at_us.div_euclid(1_000) - self.epoch_ms,
            actor,
            term,
            kind,
        };
        self.entries.lock().unwrap().push((at_us, event));
    }

    pub fn record(&self, actor: Actor, term: u32, kind: EventKind) {
        self.record_at(wall_us(), actor, term, kind);
    }

    pub fn lease(&self, lease: &Lease) -> LeaseRec {
        LeaseRec {
            owner: lease.owner_id.clone(),
            token: lease.fencing_token,
            expires_at_ms: lease.expires_at_ms - self.epoch_ms,
        }
    }

    /// The events so far, in time order (ties keep the order recorded).
    pub fn history(&self, header: Header) -> History {
        let mut entries = self.entries.lock().unwrap().clone();
        entries.sort_by_key(|(at_us, _)| *at_us);
        History {
            header,
            events: entries.into_iter().map(|(_, event)| event).collect(),
        }
    }
}
