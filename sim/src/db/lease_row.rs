//! The statements on the lease row: the lease `UPDATE`s and the fence's
//! `SELECT ... FOR SHARE`, who waits for whom, and each statement judged
//! at the instant its SQL judges it.

use retention_worker::memory::LeaseTable;

use super::database::{Database, Kind, Pending, Phase, SESSION_ENDED};
use super::statement::{
    Answer, Applied, Effect, LeaseAnswer, LeaseStatement, Refusal, SessionId, StatementId, Timed,
    TxnId,
};
use super::{emit, refuse};

impl Database {
    pub(super) fn submit_lease(
        &mut self,
        now_ms: i64,
        id: StatementId,
        session: SessionId,
        statement: LeaseStatement,
        commit_ms: u64,
        out: &mut Vec<Timed>,
    ) {
        if self.session_ended(session) {
            let answer = Err(Refusal::Closed(SESSION_ENDED.into()));
            emit(out, now_ms, Effect::Done { id, answer });
            return;
        }
        let clock_ms = self.clock_ms(now_ms);
        if !self.locks_row(&statement, clock_ms) {
            // Nothing matched in its snapshot: no lock, nothing written, so
            // no commit record to wait for.
            let answer = judge(&mut self.lease.clone(), &statement, clock_ms);
            let applied = Applied {
                id,
                statement,
                started_ms: clock_ms,
                applied_ms: now_ms,
                answer,
            };
            let answer = Ok(Answer::Lease(applied));
            emit(out, now_ms, Effect::Done { id, answer });
            return;
        }
        let free = self.lock.free_for_update();
        self.start(
            (id, session, now_ms),
            Kind::Lease {
                statement,
                commit_ms,
            },
            waiting(),
        );
        if free {
            self.take_row(id, now_ms, out);
        } else {
            self.wait(id, now_ms, out);
        }
    }

    /// Whether the statement must lock the row, and so wait for its holders.
    /// `INSERT ... ON CONFLICT DO UPDATE` locks the conflicting row before
    /// it evaluates its `WHERE`, so an acquire always waits. A plain
    /// `UPDATE` first reads the row from its statement-start snapshot (the
    /// committed row: a commit still waiting to be durable is not visible)
    /// and locks it only if its `WHERE` matches there.
    fn locks_row(&self, statement: &LeaseStatement, started_ms: i64) -> bool {
        match statement {
            LeaseStatement::Acquire { .. } => true,
            LeaseStatement::Renew { lease } | LeaseStatement::Revoke { lease } => {
                self.lease.holder(started_ms) == Some(lease)
            }
            LeaseStatement::Release { lease } => self.lease.stored() == Some(lease),
        }
    }

    /// The fence (`worker/src/pg/records.rs`): `SELECT ... FOR SHARE` of
    /// the lease row iff `token` is its current token, unexpired by the
    /// CTE's clock read at statement start. It waits only while an update
    /// holds the row (until that update's commit is durable), then checks
    /// the row as that commit left it, with its start's clock.
    pub(super) fn submit_fence(
        &mut self,
        now_ms: i64,
        id: StatementId,
        session: SessionId,
        txn: TxnId,
        token: u64,
        out: &mut Vec<Timed>,
    ) {
        if let Err(refusal) = self.begin_statement(txn, session, id) {
            return refuse(out, now_ms, id, refusal);
        }
        self.start((id, session, now_ms), Kind::Fence { txn, token }, waiting());
        if self.lock.free_for_share() {
            self.grant_fence(id, now_ms, out);
        } else {
            self.wait(id, now_ms, out);
        }
    }

    /// Queues `id` for the row: its first lock acquisition attempt.
    fn wait(&mut self, id: StatementId, now_ms: i64, out: &mut Vec<Timed>) {
        let head = self.lock.head().is_none();
        let update = self.is_update(id);
        self.lock.enqueue(id);
        let blocker = if head {
            self.lock.head_blocker(update)
        } else {
            None
        };
        let running = self.statements.get_mut(&id).expect("a running statement");
        running.phase = Phase::Waiting {
            attempt: 1,
            since_ms: now_ms,
            blocker,
        };
        let behind = self.lock.holders();
        emit(
            out,
            now_ms,
            Effect::Waits {
                id,
                attempt: 1,
                behind,
            },
        );
    }

    fn is_update(&self, id: StatementId) -> bool {
        matches!(self.statements[&id].kind, Kind::Lease { .. })
    }

    /// Lets the head of the queue through while the row allows it. A head
    /// that must wait for someone new (it just reached the head, or the
    /// holder it waited for left and another holds the row) begins a new
    /// lock acquisition attempt, with a fresh `lock_timeout`, as
    /// PostgreSQL's waits on the tuple lock and then on each locker's
    /// transaction are separate acquisitions.
    pub(super) fn pump(&mut self, now_ms: i64, out: &mut Vec<Timed>) {
        while let Some(id) = self.lock.head() {
            let update = self.is_update(id);
            let Some(blocker) = self.lock.head_blocker(update) else {
                self.lock.dequeue(id);
                if update {
                    self.take_row(id, now_ms, out);
                } else {
                    self.grant_fence(id, now_ms, out);
                }
                continue;
            };
            let running = self.statements.get_mut(&id).expect("a waiting statement");
            let Phase::Waiting {
                attempt,
                since_ms,
                blocker: current,
            } = &mut running.phase
            else {
                unreachable!("a queued statement is waiting");
            };
            if *current != Some(blocker) {
                *attempt += 1;
                *since_ms = now_ms;
                *current = Some(blocker);
                let attempt = *attempt;
                let behind = vec![blocker];
                emit(
                    out,
                    now_ms,
                    Effect::Waits {
                        id,
                        attempt,
                        behind,
                    },
                );
            }
            break;
        }
    }

    /// Update `id` takes the row: judged with its start's clock against the
    /// row as it is now, then holding the row until its commit is durable
    /// (even when its `WHERE` no longer matched: the row is locked all the
    /// same, and the transaction has a commit record to flush).
    fn take_row(&mut self, id: StatementId, now_ms: i64, out: &mut Vec<Timed>) {
        let running = self.statements.get_mut(&id).expect("a running statement");
        let Kind::Lease {
            statement,
            commit_ms,
        } = &running.kind
        else {
            unreachable!("only lease statements update the row");
        };
        let mut table = self.lease.clone();
        let answer = judge(&mut table, statement, running.clock_ms);
        let applied = Applied {
            id,
            statement: statement.clone(),
            started_ms: running.clock_ms,
            applied_ms: now_ms,
            answer,
        };
        let ready_ms = now_ms.saturating_add_unsigned(*commit_ms);
        running.phase = Phase::Committing {
            ready_ms,
            pending: Box::new(Pending::Lease { applied, table }),
        };
        self.lock.hold_exclusive(id);
        self.durable_if_ready(id, now_ms, out);
    }

    /// The fence `id` checks the row and, if it passes, takes the share lock.
    fn grant_fence(&mut self, id: StatementId, now_ms: i64, out: &mut Vec<Timed>) {
        let running = self.statements.remove(&id).expect("a running fence");
        let Kind::Fence { txn, token } = running.kind else {
            unreachable!("a share request is a fence");
        };
        let checked = self.lease.check_fence(token, running.clock_ms);
        // A fence that waited locked the row's newest version before its
        // re-check, and keeps that lock even when the re-check fails
        // (observed on PostgreSQL 15: the refused fence's transaction then
        // holds a share lock until it ends).
        let waited = matches!(running.phase, Phase::Waiting { attempt, .. } if attempt > 0);
        if checked.is_ok() || waited {
            self.lock.share(txn);
            self.txns.get_mut(&txn).expect("an open txn").fenced = true;
        }
        let answer = Ok(Answer::Fence(checked));
        emit(out, now_ms, Effect::Done { id, answer });
        self.statement_ended(txn, now_ms, out);
    }

    /// Waiting statement `id` fails at `now_ms` (`why`: the bound or the
    /// cancel): a lease statement with nothing applied, a fence with its
    /// transaction aborted.
    pub(super) fn fail_waiting(
        &mut self,
        id: StatementId,
        now_ms: i64,
        why: &str,
        out: &mut Vec<Timed>,
    ) {
        assert!(self.lock.dequeue(id), "statement {id} was not waiting");
        let running = self.statements.remove(&id).expect("a waiting statement");
        match running.kind {
            Kind::Lease { .. } => {
                let answer = Err(Refusal::Cut(format!("{why}: not applied")));
                emit(out, now_ms, Effect::Done { id, answer });
            }
            Kind::Fence { txn, .. } => {
                let reason = format!("{why}: its transaction aborted");
                self.cut_with_txn(id, txn, reason, now_ms, out);
            }
            Kind::Delete { .. } | Kind::Commit { .. } => {
                unreachable!("only the row's lockers wait")
            }
        }
    }
}

fn waiting() -> Phase {
    Phase::Waiting {
        attempt: 0,
        since_ms: 0,
        blocker: None,
    }
}

/// What `statement`, started at `started_ms`, does to `table`.
fn judge(table: &mut LeaseTable, statement: &LeaseStatement, started_ms: i64) -> LeaseAnswer {
    let granted = |lease: Option<_>| lease.map_or(LeaseAnswer::Refused, LeaseAnswer::Granted);
    match statement {
        LeaseStatement::Acquire { owner } => granted(table.acquire(owner, started_ms)),
        LeaseStatement::Renew { lease } => granted(table.renew(lease, started_ms)),
        LeaseStatement::Release { lease } => LeaseAnswer::Cleared {
            cleared: table.release(lease),
        },
        LeaseStatement::Revoke { lease } => {
            let current = table.holder(started_ms) == Some(lease);
            LeaseAnswer::Cleared {
                cleared: current && table.release(lease),
            }
        }
    }
}
