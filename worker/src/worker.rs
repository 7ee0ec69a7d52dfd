//! The worker handle: construction, `run()`, `stop()` and the `serve()` loop.

use std::fmt;

use tracing::info;

use crate::state::{SettleGuard, Shared};
use crate::{
    Clock, ConfigError, Jitter, LeaseService, RecordsRepository, RunError, ServeSummary, TermEnd,
    TermReport, WorkerConfig,
};

/// The dependencies a worker is built from.
#[derive(Debug, Clone)]
pub struct Dependencies<C, L, R> {
    /// The worker's clock (may be skewed against the lease service's).
    pub clock: C,
    /// The lease service.
    pub leases: L,
    /// The records repository.
    pub records: R,
}

/// One replica's retention worker.
///
/// Share it (`Arc<Worker<…>>`) between the task that calls [`Worker::run`] or
/// [`Worker::serve`] and the tasks that may call [`Worker::stop`].
///
/// Do not drop a `run()` future before it completes: the term could not
/// release its lease and it would stay held until it expires. Call `stop()`
/// and let `run()` finish instead.
pub struct Worker<C, L, R> {
    pub(crate) owner_id: String,
    pub(crate) config: WorkerConfig,
    pub(crate) retention_ms: i64,
    pub(crate) deps: Dependencies<C, L, R>,
    pub(crate) shared: Shared,
}

impl<C, L, R> fmt::Debug for Worker<C, L, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("owner_id", &self.owner_id)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<C: Clock, L: LeaseService, R: RecordsRepository> Worker<C, L, R> {
    /// Builds a worker for the replica `owner_id`, after validating `config`.
    pub fn new(
        owner_id: impl Into<String>,
        config: WorkerConfig,
        deps: Dependencies<C, L, R>,
    ) -> Result<Self, ConfigError> {
        let owner_id = owner_id.into();
        if owner_id.is_empty() {
            return Err(ConfigError {
                field: "owner_id",
                value: "\"\"".into(),
                rule: "must not be empty",
            });
        }
        config.validate()?;
        let retention_ms = i64::try_from(config.retention_ms).expect("validated to fit in i64");
        Ok(Self {
            owner_id,
            config,
            retention_ms,
            deps,
            shared: Shared::new(),
        })
    }

    /// The replica this worker acts for.
    pub fn owner_id(&self) -> &str {
        &self.owner_id
    }

    /// The validated configuration.
    pub fn config(&self) -> &WorkerConfig {
        &self.config
    }

    /// Runs one leadership term: acquire, delete in batches of at most
    /// `batch_size` rows older than one cutoff while renewing the lease,
    /// stop at `term_row_cap` rows, a short batch, a loss or a stop, and
    /// release the latest lease on the way out.
    ///
    /// Returns [`RunError::Stopped`] at once, calling nothing, if `stop()`
    /// came first (STP-6).
    pub async fn run(&self) -> Result<TermReport, RunError> {
        self.shared.begin_term()?;
        let _settle = SettleGuard {
            shared: &self.shared,
            settle: Shared::end_term,
        };
        let report = self.term().await;
        info!(
            owner = %self.owner_id,
            end = ?report.end,
            rows = report.rows_deleted,
            batches = report.batches,
            token = ?report.last_fencing_token,
            release = ?report.release,
            "term ended"
        );
        Ok(report)
    }

    /// Stops the worker for good (STP-6).
    ///
    /// No new acquire, renew or delete begins after it is called (STP-1) and
    /// renewal scheduling ends (STP-2). A call already in flight is awaited,
    /// never abandoned (STP-3), and held leadership is released, also when an
    /// acquire was in flight and succeeds afterwards (STP-4). It resolves once
    /// any `run()` and `serve()` of this worker have settled; every caller, and
    /// every repeated call, waits the same way (STP-5).
    pub async fn stop(&self) {
        self.shared.request_stop();
        self.shared
            .wait_until(|state| state.term.is_none() && !state.serving)
            .await;
    }

    /// Runs terms until stopped: after each term it pauses `term_interval_ms`
    /// (or `loss_backoff_ms` after a lost term) plus a jitter drawn from
    /// `jitter` in `0..=term_jitter_ms_max`, then runs the next.
    /// `on_term` sees each report as the term ends.
    pub async fn serve(
        &self,
        jitter: &mut impl Jitter,
        mut on_term: impl FnMut(&TermReport),
    ) -> Result<ServeSummary, RunError> {
        self.shared.begin_serving()?;
        let _settle = SettleGuard {
            shared: &self.shared,
            settle: Shared::end_serving,
        };
        let mut summary = ServeSummary::default();
        loop {
            let report = match self.run().await {
                Ok(report) => report,
                Err(RunError::Stopped) => return Ok(summary),
                Err(error) => return Err(error),
            };
            on_term(&report);
            summary.terms += 1;
            summary.rows_deleted += report.rows_deleted;
            summary.terms_led += u32::from(report.last_fencing_token.is_some());
            let lost = matches!(report.end, TermEnd::LeadershipLost(_));
            summary.terms_lost += u32::from(lost);
            let base_ms = if lost {
                self.config.loss_backoff_ms
            } else {
                self.config.term_interval_ms
            };
            let pause_ms = base_ms.saturating_add(jitter.jitter_ms(self.config.term_jitter_ms_max));
            if !self
                .sleep_unless(pause_ms, |state| state.stop_requested)
                .await
            {
                return Ok(summary);
            }
        }
    }
}
