//! What a plan owes and allows, whatever runs it: the header a run of a
//! [`RunSpec`] records (its fault-free flag, whether it must drain, how
//! long a `stop()` may take), shared by the simulator and real mode.

use super::history::Header;
use super::spec::RunSpec;

/// Round trips and scheduling around one batch's database work, at most.
const BATCH_SLACK_MS: u64 = 100;

/// What the database's work-time stream is seeded with, beside the seed.
const DB_WORK_SALT: u64 = 0xDB;

impl RunSpec {
    /// The seed of the database's work times (each `DELETE`'s, drawn from
    /// `db_batch_ms` in the order statements arrive), the same whoever
    /// runs the plan.
    pub fn db_work_seed(&self) -> u64 {
        self.seed ^ DB_WORK_SALT
    }

    /// The header of a run of this plan, with the skew each replica's
    /// clock was given and the rows the database held at the start.
    pub fn header(&self, skews_ms: Vec<i64>, initial_rows: u64) -> Header {
        Header {
            seed: self.seed,
            replicas: self.replicas,
            retention_ms: self.worker.retention_ms,
            batch_size: self.worker.batch_size,
            term_row_cap: self.worker.term_row_cap,
            skews_ms,
            initial_rows,
            faults_off: self.faults_off(),
            drain_owed: self.drain_owed(),
            stop_bound_ms: self.stop_bound_ms(),
            lock_timeout_ms: self.lock_timeout_ms,
            plan: None,
        }
    }

    /// The retention the database's own bound on deletes enforces, by its
    /// clock: the worker's, or 0 (no bound) for the flaws that stand for
    /// the reviewed design, which had none. The simulated database and
    /// real mode's adapters both take it from here.
    pub fn database_retention_ms(&self) -> u64 {
        if self
            .flaw
            .is_some_and(super::names::Flaw::drops_database_bound)
        {
            0
        } else {
            self.worker.retention_ms
        }
    }

    /// The longest a `stop()` may take: two calls in flight that run into
    /// their timeout (a delete and a renewal), the release, the longest
    /// pause, slack.
    pub fn stop_bound_ms(&self) -> u64 {
        // Overlapping pauses hold the process for their merged window.
        let pause_ms = self
            .effective_events()
            .iter()
            .map(|event| event.frozen_ms().unwrap_or(0))
            .max()
            .unwrap_or(0);
        3 * self.rpc_timeout_ms + pause_ms + 1_000
    }

    /// No fault of any kind: no knob, no event, no skew.
    pub fn faults_off(&self) -> bool {
        !self.faults.any() && self.events.is_empty() && self.skews_ms.iter().all(|skew| *skew == 0)
    }

    /// Whether a fault-free run can and must clear its backlog (LIVE-1):
    /// each batch's work fits inside the bounds that would cut it (the call
    /// timeout, and the statement timeout when on) and inside the lease a
    /// renewal queued behind it renews, and the run is long enough for one
    /// term per `term_interval + jitter` plus its batches' average work to
    /// clear `term_row_cap` rows each time.
    pub fn drain_owed(&self) -> bool {
        let w = &self.worker;
        let cut_ms = match self.statement_timeout_ms {
            0 => self.rpc_timeout_ms,
            statement_ms => statement_ms.min(self.rpc_timeout_ms),
        };
        // A renewal sent while a batch works waits for its commit (the
        // share lock): it must still land before the lease it renews
        // expires. It also waits for that commit to be durable, then for
        // its own.
        let commit_ms = self.db_commit_ms_max;
        let renewal_fits =
            w.renew_interval_ms + self.db_batch_ms_max + 2 * commit_ms + BATCH_SLACK_MS
                < w.lease_ttl_ms;
        let work_fits = self.db_batch_ms_max + commit_ms + BATCH_SLACK_MS < cut_ms && renewal_fits;
        let rows = u64::from(self.backlog_rows) + u64::from(self.boundary_rows);
        let terms = rows.div_ceil(u64::from(w.term_row_cap)) + 1;
        let batches = u64::from(w.term_row_cap).div_ceil(u64::from(w.batch_size));
        let batch_ms =
            (self.db_batch_ms_min + self.db_batch_ms_max) / 2 + commit_ms + BATCH_SLACK_MS;
        let term_ms = w.term_interval_ms + w.term_jitter_ms_max + batches * batch_ms;
        let needed_ms = terms.saturating_mul(term_ms).saturating_add(w.lease_ttl_ms);
        self.faults_off() && work_fits && self.duration_ms >= needed_ms
    }
}
