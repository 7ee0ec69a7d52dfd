//! [`WorldAt`] in words: the database as `pg_locks` and `pg_stat_activity`
//! would show it, then each replica, one block each.

use std::fmt::{self, Display, Write as _};

use super::instant::{ReplicaAt, WorldAt};
use crate::db::{CallRef, DbView, StatementView, TxnView};
use crate::model::Invocation;

fn call_words(caller: Option<CallRef>) -> String {
    caller.map_or("another client".to_owned(), |c| {
        format!("r{} term {} call {}", c.replica, c.term, c.call)
    })
}

fn txn_line(txn: &TxnView) -> String {
    let mut parts = vec![call_words(txn.caller)];
    if txn.holds_lease_share {
        parts.push("holds the lease row FOR SHARE (its fence)".to_owned());
    }
    if txn.rows_deleted > 0 {
        parts.push(format!(
            "its DELETE locked {} rows (gone at COMMIT)",
            txn.rows_deleted
        ));
    }
    if txn.rows_held > 0 {
        parts.push(format!("holds {} rows FOR UPDATE", txn.rows_held));
    }
    if txn.aborted {
        parts.push("aborted, waiting for ROLLBACK".to_owned());
    }
    match (txn.statement, txn.idle_since_ms) {
        (Some(statement), _) => parts.push(format!("running statement {statement}")),
        (None, Some(since_ms)) => parts.push(format!("idle in transaction since {since_ms} ms")),
        (None, None) => {}
    }
    format!("txn {}: {}", txn.txn, parts.join("; "))
}

fn statement_line(statement: &StatementView) -> String {
    let txn = statement
        .txn
        .map_or(String::new(), |txn| format!(" in txn {txn}"));
    let phase = match statement.phase {
        "waiting" => format!(
            "waiting for the lease row since {} ms, behind {}",
            statement.phase_ms,
            statement.waits_for.as_deref().unwrap_or("the queue's head")
        ),
        "working" => format!("working until {} ms", statement.phase_ms),
        _ => format!(
            "committing, durable at {} ms (its locks held until then)",
            statement.phase_ms
        ),
    };
    format!(
        "statement {} {}{txn} ({}), started {} ms: {phase}",
        statement.statement,
        statement.kind,
        call_words(statement.caller),
        statement.started_ms
    )
}

fn database_block(out: &mut String, at_ms: i64, db: &DbView) -> fmt::Result {
    writeln!(
        out,
        "database   clock {} ms ({:+} ms from true time)",
        db.clock_ms,
        db.clock_ms - at_ms
    )?;
    match &db.lease {
        Some(lease) => writeln!(
            out,
            "  lease row    {} #{}, expires {} ms by the database's clock ({})",
            lease.owner,
            lease.token,
            lease.expires_at_ms,
            if lease.expired {
                format!("expired {} ms ago", db.clock_ms - lease.expires_at_ms)
            } else {
                format!("in {} ms", lease.expires_at_ms - db.clock_ms)
            }
        )?,
        None => writeln!(out, "  lease row    released (no holder)")?,
    }
    let shared: Vec<String> = db
        .lease_shared_by
        .iter()
        .map(|t| format!("txn {t}"))
        .collect();
    writeln!(
        out,
        "  row lock     FOR SHARE: {}; update holding it: {}; queue: {}",
        if shared.is_empty() {
            "none".to_owned()
        } else {
            shared.join(", ")
        },
        db.lease_updating
            .map_or("none".to_owned(), |id| format!("statement {id}")),
        if db.lease_queue.is_empty() {
            "empty".to_owned()
        } else {
            let queue: Vec<String> = db
                .lease_queue
                .iter()
                .map(|id| format!("statement {id}"))
                .collect();
            queue.join(", ")
        }
    )?;
    if db.transactions.is_empty() {
        writeln!(out, "  transactions none open")?;
    }
    for txn in &db.transactions {
        writeln!(out, "  {}", txn_line(txn))?;
    }
    if db.statements.is_empty() {
        writeln!(out, "  statements   none in flight")?;
    }
    for statement in &db.statements {
        writeln!(out, "  {}", statement_line(statement))?;
    }
    writeln!(
        out,
        "  records      {} rows: {} older than the retention by the database's clock, {} locked{}",
        db.rows,
        db.rows_past_retention,
        db.rows_locked,
        db.oldest_row_ms.map_or(String::new(), |ms| format!(
            "; the oldest written at {ms} ms"
        ))
    )
}

fn invocation_words(invocation: &Invocation) -> String {
    match invocation {
        Invocation::Acquire => "acquire".to_owned(),
        Invocation::Renew { lease } => format!("renew {}#{}", lease.owner, lease.token),
        Invocation::Release { lease } => format!("release {}#{}", lease.owner, lease.token),
        Invocation::Delete { token, limit, .. } => format!("delete #{token} limit {limit}"),
    }
}

fn replica_block(out: &mut String, replica: &ReplicaAt) -> fmt::Result {
    let term = match (replica.term, replica.in_term) {
        (0, _) => "before its first term".to_owned(),
        (term, true) => format!("term {term}"),
        (term, false) => format!("between terms (term {term} ended)"),
    };
    let process = match replica.process_since_ms {
        Some(since_ms) => format!("{} since {since_ms} ms", replica.process.to_uppercase()),
        None => replica.process.to_owned(),
    };
    writeln!(
        out,
        "  r{}  {term}; {process}; its clock reads {} ms{}",
        replica.replica,
        replica.clock_ms,
        if replica.stop_called {
            "; stop() called"
        } else {
            ""
        }
    )?;
    if replica.in_term {
        let lease = replica
            .lease
            .as_ref()
            .map_or("none yet".to_owned(), |given| {
                let lease = &given.lease;
                format!(
                    "{}#{} expiring {} ms (given at {} ms)",
                    lease.owner, lease.token, lease.expires_at_ms, given.given_ms
                )
            });
        let token = replica
            .last_delete_token
            .map_or("no delete yet".to_owned(), |token| format!("#{token}"));
        writeln!(
            out,
            "      last lease given: {lease}; last delete's token: {token}; {} rows deleted this term",
            replica.rows_this_term
        )?;
    }
    if replica.in_flight.is_empty() {
        return writeln!(out, "      in flight: nothing");
    }
    let calls: Vec<String> = replica
        .in_flight
        .iter()
        .map(|f| {
            format!(
                "call {} {} (sent at {} ms)",
                f.call,
                invocation_words(&f.invocation),
                f.sent_ms
            )
        })
        .collect();
    writeln!(out, "      in flight: {}", calls.join(", "))
}

impl Display for WorldAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        match (&self.seq, &self.event) {
            (Some(seq), Some(event)) => {
                writeln!(out, "the world at {} ms, after event {seq}:", self.at_ms)?;
                writeln!(out, "  {event}")?;
            }
            _ => writeln!(
                out,
                "the world at {} ms, before the first event:",
                self.at_ms
            )?,
        }
        database_block(&mut out, self.at_ms, &self.database)?;
        writeln!(out, "replicas (as the history shows them)")?;
        for replica in &self.replicas {
            replica_block(&mut out, replica)?;
        }
        f.write_str(&out)
    }
}
