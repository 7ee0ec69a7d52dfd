//! Call numbers, terms and per-operation counts of one replica.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::model::{Actor, EventKind, Invocation, OpKind, Outcome};

/// What one replica has called, across restarts of its process: its term
/// (a count of its acquires), and how many calls of each operation it made.
/// Call numbers are run-wide, shared by every replica's ledger.
#[derive(Debug)]
pub struct CallLedger {
    replica: u32,
    next_call: Arc<AtomicU64>,
    term: AtomicU32,
    calls_by_op: Mutex<BTreeMap<OpKind, u32>>,
}

/// One call as the ledger opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallTicket {
    /// Run-wide call number, from 1.
    pub call: u64,
    /// The operation.
    pub op: OpKind,
    /// Which call of `op` this replica is making, from 1.
    pub nth: u32,
    /// The replica's term.
    pub term: u32,
}

impl CallTicket {
    /// The `Return` event of this call, answered with `outcome`.
    pub fn returned(&self, outcome: Outcome) -> EventKind {
        EventKind::Return {
            call: self.call,
            op: self.op,
            outcome,
        }
    }
}

impl CallLedger {
    /// The ledger of replica `replica` (from 1), numbering calls from the
    /// run-wide counter `next_call`.
    pub fn new(replica: u32, next_call: Arc<AtomicU64>) -> Self {
        Self {
            replica,
            next_call,
            term: AtomicU32::new(0),
            calls_by_op: Mutex::default(),
        }
    }

    /// The replica, from 1.
    pub fn replica(&self) -> u32 {
        self.replica
    }

    /// The actor the replica's events are recorded as.
    pub fn actor(&self) -> Actor {
        Actor::Replica(self.replica)
    }

    /// The replica's current term (0 before its first acquire).
    pub fn term(&self) -> u32 {
        self.term.load(Ordering::SeqCst)
    }

    /// Opens a call of `invocation`: an acquire starts a new term; the call
    /// gets the next run-wide number and its count among calls of its
    /// operation. Returns the ticket and the `Invoke` event to record.
    pub fn open(&self, invocation: Invocation) -> (CallTicket, EventKind) {
        let op = invocation.kind();
        if op == OpKind::Acquire {
            self.term.fetch_add(1, Ordering::SeqCst);
        }
        let call = self.next_call.fetch_add(1, Ordering::SeqCst) + 1;
        let nth = {
            let mut counts = self.calls_by_op.lock().expect("call counts");
            let count = counts.entry(op).or_default();
            *count += 1;
            *count
        };
        let ticket = CallTicket {
            call,
            op,
            nth,
            term: self.term(),
        };
        (ticket, EventKind::Invoke { call, invocation })
    }
}
