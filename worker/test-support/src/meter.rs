//! A loopback proxy that holds every byte the server sends for a fixed time
//! and reads PostgreSQL's wire protocol as it passes, so a test can count a
//! call's round trips two ways: by its time over the delay, and by the
//! messages each side sent.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::cut::{Cut, SEGMENT_FIRST_RTO_MS, SYN_FIRST_RTO_MS};

/// What crossed the proxy so far; compare two readings around a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Connections the client opened (cancel requests included).
    pub connections: u64,
    /// `ReadyForQuery` from the server: one per `Sync` or simple query,
    /// and one at the end of each start-up.
    pub ready: u64,
    /// Authentication requests the client had to answer (password,
    /// SASL), each a round trip of its own during start-up.
    pub auth_challenges: u64,
    /// `Parse` messages: statements prepared (named or not).
    pub parses: u64,
    /// Simple queries (`BEGIN`, `COMMIT`, `ROLLBACK`).
    pub simple_queries: u64,
    /// Cancel requests.
    pub cancels: u64,
}

impl std::ops::Sub for Traffic {
    type Output = Traffic;
    fn sub(self, before: Traffic) -> Traffic {
        Traffic {
            connections: self.connections - before.connections,
            ready: self.ready - before.ready,
            auth_challenges: self.auth_challenges - before.auth_challenges,
            parses: self.parses - before.parses,
            simple_queries: self.simple_queries - before.simple_queries,
            cancels: self.cancels - before.cancels,
        }
    }
}

/// A running metered proxy to `127.0.0.1:target_port`; its threads live as
/// long as the test process.
#[derive(Clone)]
pub struct MeteredProxy {
    port: u16,
    traffic: Arc<Mutex<Traffic>>,
    cut: Cut,
    freeze: Freeze,
    /// The proxy's end of each client connection forwarded so far.
    clients: Clients,
    cancel_bound_ms: Arc<AtomicU64>,
}

impl MeteredProxy {
    /// Listens on a free loopback port; every chunk the server sends reaches
    /// the client `reply_delay` after it left the server, in order.
    pub fn start(target_port: u16, reply_delay: Duration) -> Self {
        Self::serve(target_port, move |_| {
            (Delay::None, Delay::Fixed(reply_delay))
        })
    }

    /// Listens on a free loopback port; every chunk, either way, reaches
    /// the other side after a delay drawn uniformly from
    /// `min_ms..=max_ms` (from `seed`), in order: a network whose every
    /// message takes a few milliseconds, as madsim's default (1-10 ms a
    /// message) is, where loopback takes microseconds.
    pub fn with_latency(target_port: u16, min_ms: u64, max_ms: u64, seed: u64) -> Self {
        Self::serve(target_port, move |n| {
            let stream = seed ^ (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let up = Delay::uniform(min_ms, max_ms, stream);
            (up, Delay::uniform(min_ms, max_ms, !stream))
        })
    }

    /// Listens on a free loopback port and forwards the `n`-th connection
    /// with the delays `delays(n)` gives (to the server, to the client).
    fn serve(target_port: u16, delays: impl Fn(usize) -> (Delay, Delay) + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let traffic = Arc::new(Mutex::new(Traffic::default()));
        let (counts, cut) = (traffic.clone(), Cut::default());
        let clients = Arc::new(Mutex::new(Vec::new()));
        let (link, open) = (cut.clone(), clients.clone());
        let freeze = Freeze::default();
        let frozen = freeze.clone();
        let cancel_bound_ms = Arc::new(AtomicU64::new(u64::MAX));
        let bound = cancel_bound_ms.clone();
        thread::spawn(move || {
            for (n, client) in listener.incoming().flatten().enumerate() {
                counts.lock().expect("traffic").connections += 1;
                let (up, down) = delays(n);
                let link = Link {
                    meter: counts.clone(),
                    cut: link.clone(),
                    freeze: frozen.clone(),
                    clients: open.clone(),
                    cancel_bound_ms: bound.clone(),
                    up,
                    down,
                };
                link.open(client, target_port);
            }
        });
        Self {
            port,
            traffic,
            cut,
            freeze,
            clients,
            cancel_bound_ms,
        }
    }

    /// A cancel request whose connection waits longer than `bound_ms` for
    /// its handshake across a cut never reaches the server: its client
    /// (the adapter, which bounds a cancel by the call's timeout) gave up
    /// first. Unbounded until set.
    pub fn cancels_give_up_after_ms(&self, bound_ms: u64) {
        self.cancel_bound_ms.store(bound_ms, Ordering::SeqCst);
    }

    /// Cuts the clients off from the server from now for `for_ms`: bytes
    /// either way are held as TCP's retransmissions would hold them
    /// ([`Cut`]), and a connection opened meanwhile reaches the server
    /// only when its SYN would have, or never if its client gave up first.
    /// Neither side sees the other close.
    pub fn cut(&self, for_ms: u64) {
        self.cut.start(for_ms);
    }

    /// Freezes the client's process, as SIGSTOP or a long GC pause would:
    /// until [`MeteredProxy::thaw`] nothing the server sends reaches it
    /// (its kernel buffers it; the process reads nothing), and what it
    /// sends meanwhile waits for the thaw too.
    pub fn freeze(&self) {
        self.freeze.set(true);
    }

    /// Ends [`MeteredProxy::freeze`]: what was held goes, in order.
    pub fn thaw(&self) {
        self.freeze.set(false);
    }

    /// Closes every connection as the kernel closes a dead process's
    /// sockets: what the proxy already took from a client still reaches
    /// the server, then the server sees the connection end; nothing the
    /// client sends afterwards gets through, and the client sees its
    /// connection closed.
    pub fn sever(&self) {
        for (client, severed) in self.clients.lock().expect("clients").drain(..) {
            // What a frozen process queued was never sent by a dead one:
            // dropped, not delivered at the thaw.
            severed.store(true, Ordering::SeqCst);
            // Wakes the thread reading this client with an end of stream,
            // which it passes on after the chunks queued ahead of it.
            let _ = client.shutdown(Shutdown::Both);
        }
        self.freeze.wake();
    }

    /// The port clients connect to instead of the server's.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Everything counted so far.
    pub fn traffic(&self) -> Traffic {
        *self.traffic.lock().expect("traffic")
    }
}

fn clone(stream: &TcpStream) -> TcpStream {
    stream.try_clone().expect("clone a socket")
}

/// One client connection's way to the server: its meter, the cut it
/// crosses and each direction's delay.
struct Link {
    meter: Arc<Mutex<Traffic>>,
    cut: Cut,
    freeze: Freeze,
    clients: Clients,
    cancel_bound_ms: Arc<AtomicU64>,
    up: Delay,
    down: Delay,
}

impl Link {
    /// Connects `client` to the server and forwards both ways, each on a
    /// thread of its own. Inside a cut, the connection waits on a thread
    /// for its handshake to get through, as a SYN would.
    fn open(self, client: TcpStream, target_port: u16) {
        let handshake_ms = self.cut.held_ms(Instant::now(), SYN_FIRST_RTO_MS);
        if handshake_ms == 0 {
            self.forward(client, Vec::new(), target_port);
            return;
        }
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(handshake_ms));
            // What the client wrote meanwhile (a real client could not
            // have: its connect had not returned) goes first; a client
            // that closed meanwhile had given up, and nothing reaches the
            // server, but for a cancel sent within its bound.
            match unread(&client) {
                Some((early, true)) => self.forward(client, early, target_port),
                // tokio-postgres writes a cancel request and closes at
                // once; a real client would have written it once its
                // connect returned, unless it gave up waiting first.
                Some((early, false))
                    if is_cancel_request(&early)
                        && handshake_ms <= self.cancel_bound_ms.load(Ordering::SeqCst) =>
                {
                    self.forward(client, early, target_port);
                }
                _ => {}
            }
        });
    }

    fn forward(self, client: TcpStream, early: Vec<u8>, target_port: u16) {
        let Ok(server) = TcpStream::connect(("127.0.0.1", target_port)) else {
            return;
        };
        let _ = (client.set_nodelay(true), server.set_nodelay(true));
        let (c, s) = (clone(&client), clone(&server));
        let Link {
            meter,
            cut,
            freeze,
            clients,
            up,
            down,
            ..
        } = self;
        let severed = Arc::new(AtomicBool::new(false));
        clients
            .lock()
            .expect("clients")
            .push((clone(&client), severed.clone()));
        let up_link = (cut.clone(), freeze.clone(), severed.clone());
        let up_meter = meter.clone();
        thread::spawn(move || {
            let ends = (c, s, Way::ToServer);
            forward(ends, early, Reader::frontend(up_meter), up, up_link)
        });
        thread::spawn(move || {
            let ends = (server, client, Way::ToClient);
            forward(
                ends,
                Vec::new(),
                Reader::backend(meter),
                down,
                (cut, freeze, severed),
            )
        });
    }
}

/// The proxy's end of each client connection forwarded so far, each with
/// the flag that says it was severed.
type Clients = Arc<Mutex<Vec<(TcpStream, Arc<AtomicBool>)>>>;

/// Whether the client's process is frozen, shared by its connections'
/// forwarding threads.
#[derive(Clone, Default)]
struct Freeze(Arc<(Mutex<bool>, Condvar)>);

impl Freeze {
    fn set(&self, frozen: bool) {
        let (state, changed) = &*self.0;
        *state.lock().expect("freeze") = frozen;
        changed.notify_all();
    }

    fn is_frozen(&self) -> bool {
        *self.0.0.lock().expect("freeze")
    }

    /// Waits for the thaw, or until `severed` is set.
    fn wait_for_thaw_unless(&self, severed: &AtomicBool) {
        let (state, changed) = &*self.0;
        let mut frozen = state.lock().expect("freeze");
        while *frozen && !severed.load(Ordering::SeqCst) {
            frozen = changed.wait(frozen).expect("freeze");
        }
    }

    /// Makes every waiter look again (a connection was severed).
    fn wake(&self) {
        let (state, changed) = &*self.0;
        drop(state.lock().expect("freeze"));
        changed.notify_all();
    }
}

/// What `client` sent and nobody read yet, and whether it is still open;
/// `None` if its socket failed.
fn unread(client: &TcpStream) -> Option<(Vec<u8>, bool)> {
    client.set_nonblocking(true).ok()?;
    let mut unread = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let open = loop {
        match (&*client).read(&mut buf) {
            Ok(0) => break false,
            Ok(n) => unread.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break true,
            Err(_) => break false,
        }
    };
    client.set_nonblocking(false).ok()?;
    Some((unread, open))
}

/// Whether `bytes` are exactly one `CancelRequest`: length 16, then the
/// request code 80877102.
fn is_cancel_request(bytes: &[u8]) -> bool {
    bytes.len() == 16
        && bytes[..4] == 16u32.to_be_bytes()
        && bytes[4..8] == 80_877_102u32.to_be_bytes()
}

/// How long each chunk waits in the proxy.
enum Delay {
    None,
    Fixed(Duration),
    /// Uniform in `min_ms..=max_ms`, from a SplitMix64 stream.
    Uniform {
        min_ms: u64,
        max_ms: u64,
        state: u64,
    },
}

impl Delay {
    fn uniform(min_ms: u64, max_ms: u64, seed: u64) -> Self {
        assert!(min_ms <= max_ms, "latency range {min_ms}..={max_ms}");
        Self::Uniform {
            min_ms,
            max_ms,
            state: seed,
        }
    }

    fn next(&mut self) -> Duration {
        match self {
            Self::None => Duration::ZERO,
            Self::Fixed(delay) => *delay,
            Self::Uniform {
                min_ms,
                max_ms,
                state,
            } => {
                *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = *state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                Duration::from_millis(*min_ms + z % (*max_ms - *min_ms + 1))
            }
        }
    }
}

/// Which way a forwarding thread copies, and so what a freeze of the
/// client's process holds: everything the client would read, and what the
/// client sent while frozen (a real frozen process sends nothing; one
/// whose timers still run in the test may).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    ToServer,
    ToClient,
}

/// Copies `early` and then `from` to `to`, metering what passes; with a
/// delay, a writer thread sends each chunk once its time has come, never
/// before the chunk ahead of it (TCP keeps order); a chunk read inside a
/// cut waits for the heal as its retransmissions would, and a freeze of
/// the client holds what it applies to until the thaw.
fn forward(
    (mut from, to, way): (TcpStream, TcpStream, Way),
    early: Vec<u8>,
    mut reader: Reader,
    mut delay: Delay,
    (cut, freeze, severed): (Cut, Freeze, Arc<AtomicBool>),
) {
    let queue = Arc::new((
        Mutex::new(VecDeque::<(Instant, bool, Vec<u8>)>::new()),
        Condvar::new(),
    ));
    let writer = {
        let (queue, mut to) = (queue.clone(), clone(&to));
        let (freeze, severed) = (freeze.clone(), severed.clone());
        thread::spawn(move || {
            let (chunks, ready) = &*queue;
            loop {
                let mut pending = chunks.lock().expect("chunks");
                while pending.is_empty() {
                    pending = ready.wait(pending).expect("chunks");
                }
                let (due, sent_frozen, chunk) = pending.pop_front().expect("a chunk");
                drop(pending);
                thread::sleep(due.saturating_duration_since(Instant::now()));
                if way == Way::ToClient || sent_frozen {
                    freeze.wait_for_thaw_unless(&severed);
                }
                if sent_frozen && severed.load(Ordering::SeqCst) {
                    continue;
                }
                if chunk.is_empty() {
                    let _ = to.shutdown(Shutdown::Write);
                    return;
                }
                if to.write_all(&chunk).is_err() {
                    return;
                }
            }
        })
    };
    let mut buf = [0u8; 16 * 1024];
    let mut last_due = Instant::now();
    let mut early = Some(early).filter(|bytes| !bytes.is_empty());
    loop {
        let chunk = match early.take() {
            Some(bytes) => bytes,
            None => {
                let n = from.read(&mut buf).unwrap_or(0);
                buf[..n].to_vec()
            }
        };
        reader.feed(&chunk);
        let now = Instant::now();
        let held = Duration::from_millis(cut.held_ms(now, SEGMENT_FIRST_RTO_MS));
        let due = (now + delay.next() + held).max(last_due);
        last_due = due;
        let end = chunk.is_empty();
        let (chunks, ready) = &*queue;
        let sent_frozen = freeze.is_frozen();
        chunks
            .lock()
            .expect("chunks")
            .push_back((due, sent_frozen, chunk));
        ready.notify_one();
        if end {
            break;
        }
    }
    let _ = writer.join();
}

/// Splits one direction of the protocol into messages and counts them.
struct Reader {
    frontend: bool,
    /// The client's first message (start-up or cancel) has no type byte.
    untyped_first: bool,
    pending: Vec<u8>,
    traffic: Arc<Mutex<Traffic>>,
}

impl Reader {
    fn frontend(traffic: Arc<Mutex<Traffic>>) -> Self {
        Self {
            frontend: true,
            untyped_first: true,
            pending: Vec::new(),
            traffic,
        }
    }

    fn backend(traffic: Arc<Mutex<Traffic>>) -> Self {
        Self {
            frontend: false,
            untyped_first: false,
            pending: Vec::new(),
            traffic,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        loop {
            let header = if self.untyped_first { 4 } else { 5 };
            if self.pending.len() < header {
                return;
            }
            let at = header - 4;
            let length = u32::from_be_bytes(self.pending[at..at + 4].try_into().expect("4 bytes"));
            let total = at + length as usize;
            if self.pending.len() < total {
                return;
            }
            let message: Vec<u8> = self.pending.drain(..total).collect();
            self.count(&message);
        }
    }

    fn count(&mut self, message: &[u8]) {
        let mut traffic = self.traffic.lock().expect("traffic");
        if self.untyped_first {
            self.untyped_first = false;
            // CancelRequest carries the code 80877102 where a start-up
            // message carries the protocol version.
            if message.get(4..8) == Some(&80_877_102u32.to_be_bytes()) {
                traffic.cancels += 1;
            }
            return;
        }
        match (self.frontend, message[0]) {
            (true, b'P') => traffic.parses += 1,
            (true, b'Q') => traffic.simple_queries += 1,
            (false, b'Z') => traffic.ready += 1,
            // AuthenticationOk (0) and SASLFinal (12) need no answer; every
            // other authentication request does.
            (false, b'R')
                if message.get(5..9) != Some(&[0, 0, 0, 0])
                    && message.get(5..9) != Some(&12u32.to_be_bytes()) =>
            {
                traffic.auth_challenges += 1;
            }
            _ => {}
        }
    }
}
