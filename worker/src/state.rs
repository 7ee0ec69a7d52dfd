//! The one place a worker's shared state lives: stop requests, whether a term
//! runs, and that term's latest lease and loss.
//!
//! Everything sits in a single [`Watched`] value so that every change wakes
//! every waiter, in a fixed order, and no lock is held across an `.await`.

use crate::watched::Watched;

use crate::{Lease, LossCause, RunError};

/// The worker-lifetime state.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Set by the first `stop()`, never cleared (STP-6).
    pub stop_requested: bool,
    /// `Some` while a `run()` is in progress.
    pub term: Option<TermState>,
    /// A `serve()` loop is in progress.
    pub serving: bool,
}

/// The state of the running term.
#[derive(Debug, Default)]
pub(crate) struct TermState {
    /// The latest lease successfully stored (REN-2, FEN-1, REL-1); `None`
    /// before acquire and after the lease service said it is gone.
    pub lease: Option<Lease>,
    /// The newest fencing token this term has held, kept after `lease` is
    /// forgotten so that reports can name it.
    pub newest_token: Option<u64>,
    /// Renewals stored, on time or late.
    pub renewals: u32,
    /// The first loss of leadership (REN-3); later causes are not recorded.
    pub loss: Option<LossCause>,
    /// A renewal call is in flight: a delete refused for a stale token may
    /// have raced it, and waits for its answer before giving up.
    pub renewing: bool,
    /// The delete loop has finished; the renewal loop must wind down.
    pub deletes_done: bool,
}

impl State {
    pub fn term(&self) -> &TermState {
        self.term
            .as_ref()
            .expect("term state is only read while a term runs")
    }

    /// No new acquire, renew or delete may begin (STP-1, REN-3).
    pub fn winding_down(&self) -> bool {
        self.stop_requested || self.term().loss.is_some() || self.term().deletes_done
    }
}

/// Shared state plus its change notifications.
#[derive(Debug)]
pub(crate) struct Shared {
    tx: Watched<State>,
}

impl Shared {
    pub fn new() -> Self {
        Self {
            tx: Watched::new(State::default()),
        }
    }

    /// Marks a term as running, unless the worker is stopped (STP-6) or a
    /// term already runs. The check and the mark are one atomic step, so a
    /// concurrent `stop()` either sees the term or prevents it.
    pub fn begin_term(&self) -> Result<(), RunError> {
        let mut outcome = Ok(());
        self.tx.modify_if(|state| {
            outcome = if state.stop_requested {
                Err(RunError::Stopped)
            } else if state.term.is_some() {
                Err(RunError::AlreadyRunning)
            } else {
                state.term = Some(TermState::default());
                return true;
            };
            false
        });
        outcome
    }

    /// Marks the service loop as running, under the same rules as a term.
    pub fn begin_serving(&self) -> Result<(), RunError> {
        let mut outcome = Ok(());
        self.tx.modify_if(|state| {
            outcome = if state.stop_requested {
                Err(RunError::Stopped)
            } else if state.serving || state.term.is_some() {
                Err(RunError::AlreadyRunning)
            } else {
                state.serving = true;
                return true;
            };
            false
        });
        outcome
    }

    pub fn end_serving(&self) {
        self.tx.modify(|state| state.serving = false);
    }

    /// Marks the term as settled; wakes every `stop()` waiting for it (STP-5).
    pub fn end_term(&self) {
        self.tx.modify(|state| state.term = None);
    }

    pub fn request_stop(&self) {
        self.tx
            .modify_if(|state| !std::mem::replace(&mut state.stop_requested, true));
    }

    pub fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        self.tx.read(f)
    }

    /// A renewal call is about to be issued; storing its lease or declaring
    /// a loss clears the flag in the same step.
    pub fn begin_renewal(&self) {
        self.tx.modify(|state| {
            let term = state
                .term
                .as_mut()
                .expect("renewals run only during a term");
            term.renewing = true;
        });
    }

    /// Stores a lease that replaces the previous one. Callers have already
    /// checked that the token increased; a regression here is a worker bug.
    pub fn store_lease(&self, lease: Lease) {
        self.tx.modify(|state| {
            let term = state
                .term
                .as_mut()
                .expect("a lease is stored only during a term");
            if let Some(held) = &term.lease {
                term.renewals += 1;
                assert!(
                    lease.fencing_token > held.fencing_token,
                    "REN-2: stored lease {lease} would overwrite newer {held}"
                );
            }
            term.newest_token = Some(lease.fencing_token);
            term.lease = Some(lease);
            term.renewing = false;
        });
    }

    /// The one loss path (REN-3): the first cause wins and wakes both loops.
    /// `lease_gone` forgets the lease, so that no release is attempted.
    pub fn declare_loss(&self, cause: LossCause, lease_gone: bool) {
        self.tx.modify(|state| {
            let term = state
                .term
                .as_mut()
                .expect("loss is declared only during a term");
            if lease_gone {
                term.lease = None;
            }
            term.loss.get_or_insert(cause);
            term.renewing = false;
        });
    }

    pub fn finish_deletes(&self) {
        self.tx.modify(|state| {
            state
                .term
                .as_mut()
                .expect("deletes finish only during a term")
                .deletes_done = true;
        });
    }

    /// Waits until `done` holds for the state; checks it at once first.
    pub async fn wait_until(&self, done: impl FnMut(&State) -> bool) {
        self.tx.wait_until(done).await;
    }
}

/// Runs `settle` when dropped, so that `stop()` callers are released even if
/// a `run()` or `serve()` future unwinds or is dropped.
pub(crate) struct SettleGuard<'a> {
    pub shared: &'a Shared,
    pub settle: fn(&Shared),
}

impl Drop for SettleGuard<'_> {
    fn drop(&mut self) {
        (self.settle)(self.shared);
    }
}
