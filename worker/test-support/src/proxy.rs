//! A loopback TCP proxy that a test can partition: from then on it forwards
//! nothing in either direction and takes new connections without forwarding
//! them, yet closes nothing, as a network that silently drops every packet.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// A running proxy to `127.0.0.1:target_port`; its threads live as long as
/// the test process.
pub struct Proxy {
    port: u16,
    forwarding: Arc<AtomicBool>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards each connection to
    /// `target_port`.
    pub fn start(target_port: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let forwarding = Arc::new(AtomicBool::new(true));
        let flag = forwarding.clone();
        // Connections taken while partitioned: kept open, never answered.
        let parked = Arc::new(Mutex::new(Vec::new()));
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !flag.load(Ordering::SeqCst) {
                    parked.lock().expect("parked").push(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target_port)) else {
                    continue;
                };
                pipe(&client, &server, flag.clone());
                pipe(&server, &client, flag.clone());
            }
        });
        Self { port, forwarding }
    }

    /// The port clients connect to instead of the server's.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops forwarding, for good: bytes already in flight are dropped, and
    /// neither side sees its peer close.
    pub fn partition(&self) {
        self.forwarding.store(false, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` on a thread of its own while forwarding; an end of
/// stream is passed on only while forwarding.
fn pipe(from: &TcpStream, to: &TcpStream, forwarding: Arc<AtomicBool>) {
    let (mut from, mut to) = (
        from.try_clone().expect("clone a socket"),
        to.try_clone().expect("clone a socket"),
    );
    thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if forwarding.load(Ordering::SeqCst) && to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        if forwarding.load(Ordering::SeqCst) {
            let _ = to.shutdown(Shutdown::Write);
        } else {
            // Partitioned: hold both sockets open until the process ends.
            std::mem::forget((from, to));
        }
    });
}
