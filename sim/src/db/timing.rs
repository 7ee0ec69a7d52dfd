//! The server's clocks: each wait's `lock_timeout` (one per lock
//! acquisition attempt), each statement's `statement_timeout` (its whole
//! run, waits included, never the wait for a durable commit), a delete's
//! work, a commit's flush and standby acknowledgement, and
//! `idle_in_transaction_session_timeout`; fired in time order.

use super::database::{Database, Kind, Phase};
use super::emit;
use super::statement::{Effect, StatementId, Timed, TxnId};

/// Something due at an instant.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Due {
    LockTimeout(StatementId),
    StatementTimeout(StatementId),
    WorkDone(StatementId),
    Durable(StatementId),
    IdleTimeout(TxnId),
}

impl Database {
    /// The next instant at which the server acts on its own, if any.
    pub fn next_deadline(&self) -> Option<i64> {
        self.earliest().map(|(at_ms, _)| at_ms)
    }

    /// Runs everything due up to `now_ms`, each at its own instant.
    pub fn advance_to(&mut self, now_ms: i64) -> Vec<Timed> {
        assert!(now_ms >= self.now_ms, "the database's clock went back");
        let mut out = Vec::new();
        let mut fired = None;
        while let Some((at_ms, due)) = self.earliest() {
            if at_ms > now_ms {
                break;
            }
            // Firing a due retires it; one that stays due would fire forever.
            assert!(
                fired != Some((at_ms, due)),
                "{due:?} at {at_ms} ms is still due after it fired"
            );
            fired = Some((at_ms, due));
            let at_ms = at_ms.max(self.now_ms);
            self.now_ms = at_ms;
            self.fire(due, at_ms, &mut out);
            self.pump(at_ms, &mut out);
        }
        self.now_ms = now_ms;
        out
    }

    /// The earliest thing due; ties go to the lowest statement, then to
    /// transactions, so a run is the same every time.
    fn earliest(&self) -> Option<(i64, Due)> {
        let bounds = self.bounds;
        let after = |from: i64, ms: u64| (ms > 0).then(|| from.saturating_add_unsigned(ms));
        let mut best: Option<(i64, Due)> = None;
        let mut offer = |at: Option<i64>, due: Due| {
            if let Some(at) = at
                && best.is_none_or(|(best_at, _)| at < best_at)
            {
                best = Some((at, due));
            }
        };
        for (&id, running) in &self.statements {
            let statement_end = after(running.started_ms, bounds.statement_ms);
            match running.phase {
                Phase::Waiting { since_ms, .. } => {
                    let lock_end = after(since_ms, bounds.lock_ms);
                    match (lock_end, statement_end) {
                        (Some(lock), Some(statement)) if statement < lock => {
                            offer(Some(statement), Due::StatementTimeout(id));
                        }
                        (Some(lock), _) => offer(Some(lock), Due::LockTimeout(id)),
                        (None, statement) => offer(statement, Due::StatementTimeout(id)),
                    }
                }
                Phase::Working { until_ms } => match statement_end {
                    Some(cut) if cut < until_ms => offer(Some(cut), Due::StatementTimeout(id)),
                    _ => offer(Some(until_ms), Due::WorkDone(id)),
                },
                Phase::Committing { ready_ms, .. } if self.standby_answers => {
                    offer(Some(ready_ms), Due::Durable(id));
                }
                Phase::Committing { .. } => {}
            }
        }
        for (&txn, open) in &self.txns {
            if open.session.is_some() && open.busy.is_none() {
                let idle_end = after(open.idle_since_ms, bounds.idle_in_transaction_ms);
                offer(idle_end, Due::IdleTimeout(txn));
            }
        }
        best
    }

    fn fire(&mut self, due: Due, now_ms: i64, out: &mut Vec<Timed>) {
        let bounds = self.bounds;
        match due {
            Due::LockTimeout(id) => {
                let why = format!("lock timeout after {} ms", bounds.lock_ms);
                self.fail_waiting(id, now_ms, &why, out);
            }
            Due::StatementTimeout(id) => {
                let why = format!("statement timeout after {} ms", bounds.statement_ms);
                match self.statements[&id].phase {
                    Phase::Waiting { .. } => self.fail_waiting(id, now_ms, &why, out),
                    _ => self.cut_delete(id, now_ms, &why, out),
                }
            }
            Due::WorkDone(id) => {
                let running = self.statements.remove(&id).expect("a working delete");
                let Kind::Delete { txn, rows } = running.kind else {
                    unreachable!("only deletes work");
                };
                let answer = Ok(super::Answer::Deleted(rows));
                emit(out, now_ms, Effect::Done { id, answer });
                self.statement_ended(txn, now_ms, out);
            }
            Due::Durable(id) => self.finish_commit(id, now_ms, out),
            Due::IdleTimeout(txn) => {
                let reason = format!(
                    "idle in transaction for {} ms: the server ends the session",
                    bounds.idle_in_transaction_ms
                );
                emit(out, now_ms, Effect::SessionEnded { txn, reason });
                if let Some(session) = self.txns.get(&txn).and_then(|open| open.session) {
                    self.ended_sessions.insert(session);
                }
                self.end_txn(txn, now_ms, out);
            }
        }
    }
}
