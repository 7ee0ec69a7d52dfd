//! What the database node keeps between messages: the model, the
//! statements not yet answered, each transaction's record-keeping, and
//! where each connection's stream of messages has got to.

use std::collections::BTreeMap;

use rand_chacha::ChaCha8Rng;
use tokio::sync::oneshot;

use crate::db::{Answer, Database, Refusal, StatementId, TxnId};
use crate::model::OpKind;
use crate::world::wire::Caller;

/// What a transaction's statements need to be recorded.
#[derive(Debug, Clone, Copy)]
pub(super) struct TxnInfo {
    pub(super) caller: Caller,
    pub(super) token: u64,
    /// The instant its fence judged the token (the CTE's clock), once it
    /// passed.
    pub(super) fenced_at_ms: Option<i64>,
    pub(super) older_than_ms: i64,
    /// The database's clock its `DELETE` read, once sent.
    pub(super) deleted_clock_ms: Option<i64>,
    /// The database's clock its fence read, once it passed.
    pub(super) fenced_clock_ms: Option<i64>,
}

/// A statement the database has not answered yet.
pub(super) struct Waiter {
    pub(super) caller: Caller,
    pub(super) op: OpKind,
    /// When it arrived (a fence's judging instant), on the run's time: the
    /// checker reads the database's clock from it, steps included.
    pub(super) started_ms: i64,
    /// The database's clock then: what its CTE read.
    pub(super) clock_ms: i64,
    /// The fence's token, for its refusal.
    pub(super) token: u64,
    /// The transaction it runs in.
    pub(super) txn: Option<TxnId>,
    pub(super) reply: oneshot::Sender<Result<Answer, Refusal>>,
}

/// The model and the node's record-keeping, behind the node's lock.
pub(super) struct State {
    pub(super) db: Database,
    pub(super) waiters: BTreeMap<StatementId, Waiter>,
    pub(super) txns: BTreeMap<TxnId, TxnInfo>,
    pub(super) next_statement: StatementId,
    /// Each delete's work time.
    pub(super) work: ChaCha8Rng,
    /// Each commit's time to be durable.
    pub(super) commits: ChaCha8Rng,
}

/// Per connection: the number of the next message to serve.
#[derive(Default)]
pub(super) struct Turns {
    pub(super) sessions: BTreeMap<u64, u64>,
}
