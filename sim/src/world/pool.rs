//! A replica's connection pool as deadpool keeps it for the adapters:
//! idle connections taken oldest first, a new one opened (and its
//! round trips spent) when none is idle, and a connection lent to a call
//! handed back only if the call was answered.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use retention_worker::CallError;

use super::kernel::{Kernel, Session};
use super::wire::{Caller, ProtocolReq, RollbackReq};
use crate::calls::{Connection, RoundTrip, Sql};

/// A connection and what its client has prepared on it.
struct Pooled {
    session: Arc<Session>,
    connection: Connection,
}

/// The idle connections of one replica process (deadpool's default queue
/// mode: first in, first out). Calls never wait for a slot: the worker
/// makes at most two calls at once (its delete and its renewal) and the
/// runner's pool holds four.
#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<VecDeque<Pooled>>,
}

impl Pool {
    /// A connection for `caller`'s call: the oldest idle one, or a new one
    /// once its handshake and start-up round trips are spent.
    pub async fn lend(
        self: &Arc<Self>,
        kernel: &Arc<Kernel>,
        caller: Caller,
    ) -> Result<Lent, CallError> {
        // deadpool's fast recycle drops a connection its client saw close
        // (the server ended the session) and takes the next.
        let idle = loop {
            let idle = self.idle.lock().expect("pool").pop_front();
            match idle {
                Some(pooled) if kernel.session_ended(pooled.session.id()) => pooled.session.close(),
                idle => break idle,
            }
        };
        let (pooled, opening) = match idle {
            Some(pooled) => (pooled, Vec::new()),
            None => {
                let (connection, opening) = Connection::open();
                let session = kernel.connect();
                (
                    Pooled {
                        session,
                        connection,
                    },
                    opening,
                )
            }
        };
        let mut lent = Lent {
            pool: self.clone(),
            kernel: kernel.clone(),
            caller: Caller {
                session: pooled.session.id(),
                ..caller
            },
            pooled: Some(pooled),
            // Still starting up: nothing runs that a cancel could stop.
            started: opening.is_empty(),
            txn: None,
            ended: None,
        };
        lent.spend(&opening).await?;
        lent.started = true;
        Ok(lent)
    }
}

/// A connection lent to one call. Dropped once the call was answered, it
/// goes back to the pool; dropped otherwise (the call timed out, or ended
/// ambiguously), it is closed as the adapter closes it, after a cancel
/// request when the call timed out with a statement possibly running.
/// A transaction still open on it is rolled back first, without waiting,
/// as tokio-postgres does when its `Transaction` is dropped.
pub(crate) struct Lent {
    pool: Arc<Pool>,
    kernel: Arc<Kernel>,
    pooled: Option<Pooled>,
    caller: Caller,
    started: bool,
    txn: Option<u64>,
    /// How the call ended: answered (`true`) or ambiguously; `None` while
    /// it runs, so a drop then is the call's timeout.
    ended: Option<bool>,
}

impl Lent {
    /// The call, on this connection.
    pub fn caller(&self) -> Caller {
        self.caller
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.pooled.as_ref().expect("lent").session
    }

    /// Spends the round trips that come before `sql` can run on this
    /// connection (its prepare, the first time); the run itself is the
    /// caller's request.
    pub async fn prepare(&mut self, sql: Sql) -> Result<(), CallError> {
        let pooled = self.pooled.as_mut().expect("lent");
        let mut trips = pooled.connection.run(sql);
        trips.pop();
        self.spend(&trips).await
    }

    /// Runs `sql` as round trips that touch no data (the read of a refused
    /// fence's reason, whose answer the fence already gave).
    pub async fn run_protocol(&mut self, sql: Sql) -> Result<(), CallError> {
        let pooled = self.pooled.as_mut().expect("lent");
        let trips = pooled.connection.run(sql);
        self.spend(&trips).await
    }

    async fn spend(&self, trips: &[RoundTrip]) -> Result<(), CallError> {
        for trip in trips {
            let request = ProtocolReq {
                caller: self.caller,
                trip: format!("{trip:?}"),
            };
            let session = self.session();
            match trip {
                RoundTrip::Handshake => session.handshake(request).await??,
                _ => session.call(request).await??,
            }
        }
        Ok(())
    }

    /// `BEGIN` opened `txn` on this connection.
    pub fn opened(&mut self, txn: u64) {
        self.txn = Some(txn);
    }

    /// `COMMIT` was sent: no `ROLLBACK` follows it.
    pub fn closed(&mut self) {
        self.txn = None;
    }

    /// The call ended: with an answer, and the connection goes back to
    /// the pool, or ambiguously, and the connection is closed.
    pub fn ended(&mut self, answered: bool) {
        self.ended = Some(answered);
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let pooled = self.pooled.take().expect("lent once");
        if let Some(txn) = self.txn.take() {
            let caller = self.caller;
            pooled.session.send(RollbackReq { caller, txn });
        }
        match self.ended {
            Some(true) => self.pool.idle.lock().expect("pool").push_back(pooled),
            Some(false) => pooled.session.close(),
            None => {
                // A process that died sends nothing: its kernel closed the
                // connection already.
                if self.started && !pooled.session.is_closed() {
                    // As the adapter on a timeout: ask the server to stop
                    // what the connection runs, then close it.
                    self.kernel.cancel(self.caller);
                }
                pooled.session.close();
            }
        }
    }
}
