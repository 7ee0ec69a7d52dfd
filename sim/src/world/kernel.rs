//! A replica's connections to the database as TCP streams: a session's
//! messages reach the database in order, and one the network loses is
//! retransmitted, late but never lost. The streams live in the replica's
//! kernel, a node of its own, so what a process sent still arrives after it
//! froze or died, and the database sees a dead process's connection close
//! only after that. A cut between the replica and the database holds every
//! segment until the first retransmission after it heals.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use madsim::time::Instant;

use madsim::net::Endpoint;
use madsim::runtime::NodeHandle;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retention_worker::CallError;
use test_support::{SEGMENT_FIRST_RTO_MS, SYN_FIRST_RTO_MS, held_until_heal_ms};
use tokio::sync::{OnceCell, oneshot};

use super::db_node::DbNode;
use super::wire::{Caller, CancelReq, CloseReq, DB_ADDR, OnConnection};

/// TCP's first retransmission timeout; it doubles on every loss in a row.
const FIRST_RTO_MS: u64 = SEGMENT_FIRST_RTO_MS;

/// One replica's network stack.
pub(crate) struct Kernel {
    node: NodeHandle,
    db: Arc<DbNode>,
    loss_permille: u32,
    rng: Mutex<ChaCha8Rng>,
    sessions: Mutex<Vec<Weak<Session>>>,
    /// The kernel's socket, bound on first use; connections share it.
    socket: Arc<OnceCell<Arc<Endpoint>>>,
    /// The latest cut from the database: when it started and when it heals.
    cut: Mutex<Option<(Instant, Instant)>>,
    /// How long the adapter waits for a cancel request's connection before
    /// it gives the cancel up (its call timeout).
    cancel_bound_ms: u64,
    /// A branch has stirred the loss draws.
    stirred: AtomicBool,
}

/// One connection: pooled by its replica's port and used by one call at a
/// time. Its messages are numbered as they are sent; the database serves
/// them in that order whatever the network's delays, as TCP delivers them.
pub(crate) struct Session {
    kernel: Arc<Kernel>,
    /// The database's name for it.
    id: u64,
    next_seq: AtomicU64,
    closed: AtomicBool,
}

impl Kernel {
    /// The kernel of a replica on `node`; each message is lost (once, then
    /// again...) with `loss_permille`, drawn from `rng`; a cancel request
    /// not connected within `cancel_bound_ms` is given up.
    pub fn new(
        node: NodeHandle,
        db: Arc<DbNode>,
        loss_permille: u32,
        rng: ChaCha8Rng,
        cancel_bound_ms: u64,
    ) -> Self {
        Self {
            node,
            db,
            loss_permille,
            rng: Mutex::new(rng),
            sessions: Mutex::new(Vec::new()),
            socket: Arc::new(OnceCell::new()),
            cut: Mutex::new(None),
            cancel_bound_ms,
            stirred: AtomicBool::new(false),
        }
    }

    /// Cuts the network between this replica and the database from now
    /// for `for_ms`.
    pub fn cut(&self, for_ms: u64) {
        let now = Instant::now();
        *self.cut.lock().expect("cut") = Some((now, now + Duration::from_millis(for_ms)));
    }

    /// How long a segment sent now waits for the cut to heal (the rule
    /// real mode's proxy applies too).
    fn held_ms(&self, first_rto_ms: u64) -> u64 {
        let Some((from, heal)) = *self.cut.lock().expect("cut") else {
            return 0;
        };
        let now = Instant::now();
        if now < from || now >= heal {
            return 0;
        }
        let heal_in_ms = u64::try_from((heal - now).as_millis()).unwrap_or(u64::MAX);
        held_until_heal_ms(heal_in_ms, first_rto_ms)
    }

    /// The delay TCP adds to one message: a retransmission timeout for
    /// every time in a row the network loses it.
    fn retransmission_ms(&self, first_rto_ms: u64) -> u64 {
        if self.loss_permille == 0 {
            return 0;
        }
        let mut rng = self.rng.lock().expect("net rng");
        if let Some(salt) = self.db.branch_salt()
            && !self.stirred.swap(true, Ordering::Relaxed)
        {
            // A branch of the run (`sim explain`): a fresh future of losses.
            let next: u64 = rng.r#gen();
            *rng = ChaCha8Rng::seed_from_u64(next ^ salt);
        }
        let (mut delay_ms, mut rto_ms) = (0, first_rto_ms);
        while rng.gen_range(0..1_000) < self.loss_permille && rto_ms <= 64 * first_rto_ms {
            delay_ms += rto_ms;
            rto_ms *= 2;
        }
        delay_ms
    }

    /// Opens a connection (its round trips are the port's to spend).
    pub fn connect(self: &Arc<Self>) -> Arc<Session> {
        let id = self.db.open_session();
        // Session 0 is a call not yet on a connection (the port's caller).
        assert_ne!(id, 0, "connections are numbered from 1");
        let session = Arc::new(Session {
            kernel: self.clone(),
            id,
            next_seq: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        });
        let mut sessions = self.sessions.lock().expect("sessions");
        sessions.retain(|session| session.strong_count() > 0);
        sessions.push(Arc::downgrade(&session));
        session
    }

    /// Sends a cancel request for `caller`'s statement on a connection of
    /// its own: not ordered behind the call's session, and still sent if
    /// the process freezes right after. Across a cut its handshake waits
    /// for the heal, and past the adapter's bound the cancel is given up.
    pub fn cancel(&self, caller: Caller) {
        let socket = self.socket.clone();
        let handshake_ms = self.held_ms(SYN_FIRST_RTO_MS);
        if handshake_ms > self.cancel_bound_ms {
            return;
        }
        self.node.spawn(async move {
            sleep_ms(handshake_ms).await;
            let _ = bound(&socket)
                .await
                .call(DB_ADDR, CancelReq { caller })
                .await;
        });
    }

    /// Whether the server ended connection `session` (its FIN and the
    /// error before it are taken as seen at once).
    pub fn session_ended(&self, session: u64) -> bool {
        self.db.session_ended(session)
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
    /// The database's name for this connection.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `request` as the next message of this connection.
    fn numbered<R: OnConnection>(&self, mut request: R) -> R {
        let caller = request.caller_mut();
        caller.session = self.id;
        caller.seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        request
    }

    /// Puts `request` on the wire from the kernel: delayed by TCP's
    /// retransmissions (the first after `first_rto_ms`), answered to
    /// `answer` (if anyone still listens).
    fn transmit<R: OnConnection>(
        &self,
        request: R,
        answer: Option<oneshot::Sender<R::Response>>,
        first_rto_ms: u64,
    ) {
        if self.closed.load(Ordering::Relaxed) {
            // A closed socket sends nothing; a waiting caller hears so.
            return;
        }
        let mut request = self.numbered(request);
        let Caller { session, seq, .. } = *request.caller_mut();
        let kernel = self.kernel.clone();
        self.kernel.node.spawn(async move {
            let endpoint = bound(&kernel.socket).await;
            sleep_ms(kernel.retransmission_ms(first_rto_ms)).await;
            sleep_ms(kernel.held_ms(first_rto_ms)).await;
            // madsim's network here drops nothing (TCP's losses are the
            // delays above; a cut holds segments until it heals), so every
            // message reaches the server and takes its turn there.
            let reply = endpoint
                .call(DB_ADDR, request)
                .await
                .unwrap_or_else(|error| {
                    panic!("message {seq} of session {session} never reached the database: {error}")
                });
            if let Some(answer) = answer {
                sleep_ms(kernel.retransmission_ms(first_rto_ms)).await;
                sleep_ms(kernel.held_ms(first_rto_ms)).await;
                // The caller may have given up; the statement ran anyway.
                let _ = answer.send(reply);
            }
        });
    }

    /// Sends `request` and waits for its answer; retransmissions delay it.
    pub async fn call<R: OnConnection>(&self, request: R) -> Result<R::Response, CallError> {
        self.exchange(request, FIRST_RTO_MS).await
    }

    /// The connection's opening handshake: a SYN and its SYN-ACK, each
    /// first sent again after a second rather than 200 ms (Linux's
    /// `TCP_TIMEOUT_INIT`), as real mode's proxy holds them across a cut.
    pub async fn handshake<R: OnConnection>(&self, request: R) -> Result<R::Response, CallError> {
        self.exchange(request, SYN_FIRST_RTO_MS).await
    }

    async fn exchange<R: OnConnection>(
        &self,
        request: R,
        first_rto_ms: u64,
    ) -> Result<R::Response, CallError> {
        let (answer, answered) = oneshot::channel();
        self.transmit(request, Some(answer), first_rto_ms);
        match answered.await {
            Ok(reply) => Ok(reply),
            Err(_) => Err(CallError::ambiguous("connection closed")),
        }
    }

    /// Sends `request` after everything sent before it, without waiting
    /// for its answer (pipelined, as tokio-postgres sends a `ROLLBACK`).
    pub fn send<R: OnConnection>(&self, request: R) {
        self.transmit(request, None, FIRST_RTO_MS);
    }

    /// Closes the connection after what was sent: the database sees it
    /// close once those messages reached it, and then rolls back its open
    /// transaction (once the statement running, if any, ends). Closing
    /// twice is closing once.
    pub fn close(&self) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        // The FIN crosses the network like any segment.
        let caller = Caller {
            call: 0,
            replica: 0,
            term: 0,
            session: self.id,
            seq: 0,
        };
        self.transmit(CloseReq { caller }, None, FIRST_RTO_MS);
        self.closed.store(true, Ordering::Relaxed);
    }

    /// Closed by its client (or its process's death): nothing more goes.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
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
