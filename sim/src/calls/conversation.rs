//! The adapters' conversation with PostgreSQL round trip by round trip, as
//! tokio-postgres and deadpool speak it: what a call costs on the pooled
//! connection it gets. The simulator's port spends exactly these round
//! trips; `sim/tests/real/round_trips.rs` measures them on a real server.

use std::collections::BTreeSet;

/// The statements the adapters send (`worker/src/pg/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sql {
    /// `ACQUIRE`, prepared once per connection.
    Acquire,
    /// `RENEW`, prepared once per connection.
    Renew,
    /// `RELEASE`, prepared once per connection.
    Release,
    /// `BEGIN`, a simple query.
    Begin,
    /// `FENCE`, prepared once per connection.
    Fence,
    /// `FENCE_STATE`, read after a refused fence: passed as text, so
    /// tokio-postgres prepares it anew every time.
    FenceState,
    /// `DELETE_OLDEST`, prepared once per connection.
    DeleteOldest,
    /// `COMMIT`, a simple query.
    Commit,
}

impl Sql {
    /// Sent as a simple query: no prepare, ever.
    fn simple(self) -> bool {
        matches!(self, Self::Begin | Self::Commit)
    }

    /// Kept prepared on the connection after its first use
    /// (`prepare_cached`).
    fn cached(self) -> bool {
        !self.simple() && self != Self::FenceState
    }
}

/// What one round trip carries: the client sends, then waits for the
/// server's answer before it sends again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundTrip {
    /// TCP's handshake opening a connection.
    Handshake,
    /// One exchange of PostgreSQL's start-up: the start-up message, then
    /// one per authentication challenge the client answers.
    StartUp,
    /// `Parse`, `Describe`, `Sync` of a statement not prepared on this
    /// connection.
    Prepare(Sql),
    /// The statement itself: `Bind`, `Execute`, `Sync`, or a simple query.
    Run(Sql),
}

/// Start-up exchanges with SCRAM-SHA-256 (PostgreSQL's default password
/// method since 14): the start-up message, the SASL initial response and
/// the SASL response; the server's last answer ends start-up.
pub const START_UP_ROUND_TRIPS: usize = 3;

/// A pooled connection as its client knows it: which statements it has
/// prepared. `ROLLBACK` after a refused fence and the `Close` of the
/// re-prepared `FENCE_STATE` are sent without waiting (pipelined ahead of
/// the connection's next statement), so they cost no round trip.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    prepared: BTreeSet<Sql>,
}

impl Connection {
    /// A new connection and the round trips that open it (deadpool opens
    /// one when no idle one is pooled).
    pub fn open() -> (Self, Vec<RoundTrip>) {
        let mut trips = vec![RoundTrip::Handshake];
        trips.extend([RoundTrip::StartUp; START_UP_ROUND_TRIPS]);
        (Self::default(), trips)
    }

    /// The round trips that run `sql` on this connection: its prepare
    /// first when the connection has not kept it, then the statement.
    pub fn run(&mut self, sql: Sql) -> Vec<RoundTrip> {
        let mut trips = Vec::with_capacity(2);
        if !sql.simple() && !self.prepared.contains(&sql) {
            trips.push(RoundTrip::Prepare(sql));
            if sql.cached() {
                self.prepared.insert(sql);
            }
        }
        trips.push(RoundTrip::Run(sql));
        trips
    }
}

/// A call as the adapters make it, with how it ends, for
/// [`round_trips_per_call`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdapterCall {
    /// `acquire`.
    Acquire,
    /// `renew`.
    Renew,
    /// `release`.
    Release,
    /// A fenced delete the fence let through, committed.
    Delete,
    /// A fenced delete the fence refused: the refusal's reason is read.
    DeleteFenced,
    /// A call that ended ambiguously (timed out, connection lost): the
    /// adapter closes its connection, so the next call opens another.
    Ambiguous,
}

impl AdapterCall {
    /// The statements it runs, in order.
    pub fn statements(self) -> &'static [Sql] {
        match self {
            Self::Acquire => &[Sql::Acquire],
            Self::Renew => &[Sql::Renew],
            Self::Release => &[Sql::Release],
            Self::Delete => &[Sql::Begin, Sql::Fence, Sql::DeleteOldest, Sql::Commit],
            Self::DeleteFenced => &[Sql::Begin, Sql::Fence, Sql::FenceState],
            Self::Ambiguous => &[],
        }
    }
}

/// The round trips each call of `script` costs when the calls are made one
/// after another through a pool of one connection, as the simulator spends
/// them (an [`AdapterCall::Ambiguous`] costs none here and discards the
/// connection).
pub fn round_trips_per_call(script: &[AdapterCall]) -> Vec<Vec<RoundTrip>> {
    let mut pooled: Option<Connection> = None;
    script
        .iter()
        .map(|&call| {
            let mut trips = Vec::new();
            if call == AdapterCall::Ambiguous {
                pooled = None;
                return trips;
            }
            let connection = pooled.get_or_insert_with(|| {
                let (connection, opening) = Connection::open();
                trips.extend(opening);
                connection
            });
            for &sql in call.statements() {
                trips.extend(connection.run(sql));
            }
            trips
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::AdapterCall::*;
    use super::round_trips_per_call;

    #[test]
    fn prepares_are_paid_once_per_connection_and_again_after_it_is_lost() {
        // Each call with the round trips it costs.
        let script_and_counts = [
            (Acquire, 6),
            (Renew, 2),
            (Renew, 1),
            (Delete, 6),
            (Delete, 4),
            (DeleteFenced, 4),
            (Ambiguous, 0),
            (Renew, 6),
        ];
        let (script, expected): (Vec<_>, Vec<usize>) = script_and_counts.into_iter().unzip();
        let counts: Vec<usize> = round_trips_per_call(&script).iter().map(Vec::len).collect();
        assert_eq!(counts, expected);
    }
}
