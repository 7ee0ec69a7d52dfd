//! Each connection's messages served in the order they were sent, as TCP
//! delivers a stream: a message that overtook an earlier one on the
//! network waits at the server for it.

use std::sync::atomic::Ordering;

use super::DbNode;
use crate::world::wire::{Caller, ServerError};

impl DbNode {
    /// A new connection's number, run-wide.
    pub(crate) fn open_session(&self) -> u64 {
        self.next_session.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Waits until every message sent before `seq` on `session` was served.
    pub(super) async fn in_turn(&self, session: u64, seq: u64) {
        loop {
            let moved = self.turn_moved.notified();
            let next = {
                let turns = self.turns.lock().expect("turns");
                turns.sessions.get(&session).copied().unwrap_or(0)
            };
            assert!(
                next <= seq,
                "message {seq} of session {session} served twice"
            );
            if next == seq {
                return;
            }
            moved.await;
        }
    }

    /// Message `seq` of `session` was served: the next may go.
    pub(super) fn turn_taken(&self, session: u64, seq: u64) {
        {
            let mut turns = self.turns.lock().expect("turns");
            let next = turns.sessions.entry(session).or_default();
            // Every message reaches the server (`Kernel`'s network loses
            // none), and each is served only in its turn.
            assert_eq!(*next, seq, "session {session} served out of turn");
            *next += 1;
        }
        self.turn_moved.notify_waiters();
    }

    /// A round trip that touches no data (`calls::RoundTrip`): answered at
    /// once; inside a transaction it ends an idle stretch, as the server
    /// re-arms `idle_in_transaction_session_timeout` after each message.
    pub(crate) async fn protocol(&self, caller: Caller) -> Result<(), ServerError> {
        self.in_turn(caller.session, caller.seq).await;
        let now_ms = self.recorder.now_ms();
        let ended = self.read(|db| db.session_ended(caller.session));
        if !ended {
            self.with_db(|state| state.db.protocol_exchange(now_ms, caller.session));
        }
        self.turn_taken(caller.session, caller.seq);
        if ended {
            return Err(ServerError::Closed(
                "the server ended the session (idle in transaction)".into(),
            ));
        }
        Ok(())
    }

    /// Whether the server ended `session`: its client, having seen the
    /// connection close, no longer uses it.
    pub(crate) fn session_ended(&self, session: u64) -> bool {
        self.read(|db| db.session_ended(session))
    }

    /// `session`'s connection closed (its process died, or the call gave
    /// up on it), after message `seq - 1`; the close is its last turn.
    pub(crate) async fn connection_closed(&self, session: u64, seq: u64) {
        self.in_turn(session, seq).await;
        let now_ms = self.recorder.now_ms();
        self.with_db(|state| state.db.connection_closed(now_ms, session));
        // Nothing follows a close (a closed socket sends nothing), so a
        // later turn would be a message served twice.
        let mut turns = self.turns.lock().expect("turns");
        turns.sessions.insert(session, u64::MAX);
    }
}
