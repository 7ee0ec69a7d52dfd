//! A cancel request sent across a cut: tokio-postgres writes it and closes
//! at once, where a real client's connect would still be waiting for its
//! handshake. The metered proxy delivers it when the handshake would have
//! got through within the adapter's bound, as the simulator's kernel does,
//! and drops a start-up its client gave up on.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use test_support::MeteredProxy;

/// A `CancelRequest`: its length, the request code, a process id and key.
fn cancel() -> Vec<u8> {
    [16u32, 80_877_102, 4242, 7]
        .iter()
        .flat_map(|word| word.to_be_bytes())
        .collect()
}

/// A stand-in server that reports everything each connection sent.
fn server() -> (u16, mpsc::Receiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (sent, received) = mpsc::channel();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            let _ = sent.send(bytes);
        }
    });
    (port, received)
}

/// Connects through `proxy` during a cut, writes `bytes` and closes: what
/// the server got within `wait`, if anything.
fn write_and_close(bound_ms: u64, bytes: &[u8], wait: Duration) -> Option<Vec<u8>> {
    let (port, received) = server();
    let proxy = MeteredProxy::start(port, Duration::ZERO);
    proxy.cancels_give_up_after_ms(bound_ms);
    // A SYN sent 0.3 s before the heal gets through at its first
    // retransmission, a second later.
    proxy.cut(300);
    let mut client = TcpStream::connect(("127.0.0.1", proxy.port())).expect("connect");
    client.write_all(bytes).expect("write");
    drop(client);
    received.recv_timeout(wait).ok()
}

#[test]
fn a_cancel_within_its_bound_gets_through_once_the_handshake_does() {
    let got = write_and_close(1_500, &cancel(), Duration::from_secs(5));
    assert_eq!(got, Some(cancel()), "the cancel was lost");
}

#[test]
fn a_cancel_whose_handshake_outlasts_its_bound_never_arrives() {
    let got = write_and_close(500, &cancel(), Duration::from_secs(2));
    assert_eq!(
        got, None,
        "the client had given up before its connect returned"
    );
}

#[test]
fn a_start_up_its_client_gave_up_on_never_arrives() {
    // A start-up message: length, protocol 3.0, no parameters.
    let mut start_up = 9u32.to_be_bytes().to_vec();
    start_up.extend_from_slice(&196_608u32.to_be_bytes());
    start_up.push(0);
    let got = write_and_close(1_500, &start_up, Duration::from_secs(2));
    assert_eq!(
        got, None,
        "a client that closed was waiting for its answer, not done"
    );
}
