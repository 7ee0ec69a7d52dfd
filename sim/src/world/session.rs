//! A replica's connections to the database as TCP streams: a session's
//! messages reach the database in order, and one the network loses is
//! retransmitted, late but never lost. The streams live in the replica's
//! kernel, a node of its own, so what a process sent still arrives after it
//! froze or died, and the database sees a dead process's connection close
//! only after that.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::future::BoxFuture;
use madsim::net::Endpoint;
use madsim::net::rpc::Request;
use madsim::runtime::NodeHandle;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use retention_worker::CallError;
use tokio::sync::{OnceCell, mpsc, oneshot};

use super::db_node::DbNode;
use super::wire::{Caller, CancelReq, DB_ADDR};

/// TCP's first retransmission timeout; it doubles on every loss in a row.
const FIRST_RTO_MS: u64 = 200;

type Job = Box<dyn FnOnce(Arc<Endpoint>) -> BoxFuture<'static, ()> + Send>;

/// One replica's network stack.
pub(crate) struct Kernel {
    node: NodeHandle,
    db: Arc<DbNode>,
    loss_permille: u32,
    rng: Mutex<ChaCha8Rng>,
    sessions: Mutex<Vec<Weak<Session>>>,
    /// The kernel's socket, bound on first use; connections share it.
    socket: Arc<OnceCell<Arc<Endpoint>>>,
}

/// One connection, used by one call: jobs run in order on the kernel's
/// node.
pub(crate) struct Session {
    kernel: Arc<Kernel>,
    jobs: mpsc::UnboundedSender<Job>,
    /// The call using it: the database knows its transaction by it.
    call: u64,
}

impl Kernel {
    /// The kernel of a replica on `node`; each message is lost (once, then
    /// again...) with `loss_permille`, drawn from `rng`.
    pub fn new(node: NodeHandle, db: Arc<DbNode>, loss_permille: u32, rng: ChaCha8Rng) -> Self {
        Self {
            node,
            db,
            loss_permille,
            rng: Mutex::new(rng),
            sessions: Mutex::new(Vec::new()),
            socket: Arc::new(OnceCell::new()),
        }
    }

    /// The delay TCP adds to one message: a retransmission timeout for
    /// every time in a row the network loses it.
    fn retransmission_ms(&self) -> u64 {
        if self.loss_permille == 0 {
            return 0;
        }
        let mut rng = self.rng.lock().expect("net rng");
        let (mut delay_ms, mut rto_ms) = (0, FIRST_RTO_MS);
        while rng.gen_range(0..1_000) < self.loss_permille && rto_ms <= 64 * FIRST_RTO_MS {
            delay_ms += rto_ms;
            rto_ms *= 2;
        }
        delay_ms
    }

    /// Opens a connection for call `call`.
    pub fn connect(self: &Arc<Self>, call: u64) -> Arc<Session> {
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        let socket = self.socket.clone();
        self.node.spawn(async move {
            let endpoint = bound(&socket).await;
            while let Some(job) = queue.recv().await {
                job(endpoint.clone()).await;
            }
        });
        let session = Arc::new(Session {
            kernel: self.clone(),
            jobs,
            call,
        });
        let mut sessions = self.sessions.lock().expect("sessions");
        sessions.retain(|session| session.strong_count() > 0);
        sessions.push(Arc::downgrade(&session));
        session
    }

    /// Sends a cancel request for `caller`'s statement on a connection of
    /// its own: not ordered behind the call's session, and still sent if
    /// the process freezes right after.
    pub fn cancel(&self, caller: Caller) {
        let socket = self.socket.clone();
        self.node.spawn(async move {
            let _ = bound(&socket)
                .await
                .call(DB_ADDR, CancelReq { caller })
                .await;
        });
    }

    /// The process died: each open connection closes after what it had
    /// already sent, and the database rolls back its transaction then.
    pub fn process_died(&self) {
        let sessions: Vec<Arc<Session>> = self
            .sessions
            .lock()
            .expect("sessions")
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for session in sessions {
            session.close();
        }
    }
}

impl Session {
    fn enqueue(&self, job: Job) {
        // The queue outlives every handle's use of it; a send fails only
        // once the kernel's task is gone at the end of the run.
        let _ = self.jobs.send(job);
    }

    /// Sends `request` and waits for its answer; retransmissions delay it.
    pub async fn call<R: Request>(&self, request: R) -> Result<R::Response, CallError> {
        let (answer, answered) = oneshot::channel();
        let kernel = self.kernel.clone();
        self.enqueue(Box::new(move |endpoint| {
            Box::pin(async move {
                sleep_ms(kernel.retransmission_ms()).await;
                let reply = endpoint.call(DB_ADDR, request).await;
                sleep_ms(kernel.retransmission_ms()).await;
                // The caller may have given up; the statement ran anyway.
                let _ = answer.send(reply);
            })
        }));
        match answered.await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(error)) => Err(CallError::ambiguous(format!("network: {error}"))),
            Err(_) => Err(CallError::ambiguous("connection closed")),
        }
    }

    /// Sends `request` after everything sent before it, without waiting.
    pub fn send<R: Request>(&self, request: R) {
        let kernel = self.kernel.clone();
        self.enqueue(Box::new(move |endpoint| {
            Box::pin(async move {
                sleep_ms(kernel.retransmission_ms()).await;
                let _ = endpoint.call(DB_ADDR, request).await;
            })
        }));
    }

    /// Closes the connection after what was sent: the database then rolls
    /// back its open transaction (once the statement running, if any, ends).
    pub fn close(&self) {
        let (db, call) = (self.kernel.db.clone(), self.call);
        self.enqueue(Box::new(move |_| {
            Box::pin(async move { db.connection_closed(call) })
        }));
    }
}

/// The kernel's socket, bound on first use (on the kernel's node).
async fn bound(socket: &OnceCell<Arc<Endpoint>>) -> Arc<Endpoint> {
    socket
        .get_or_init(|| async {
            Arc::new(Endpoint::bind("0.0.0.0:0").await.expect("bind a socket"))
        })
        .await
        .clone()
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        madsim::time::sleep(Duration::from_millis(ms)).await;
    }
}
