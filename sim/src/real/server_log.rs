//! PostgreSQL's log read back: its entries, which of the adapters'
//! statements each is about, the rows a delete locked and the lock waits
//! (`server_events.rs` turns them into history events).

use retention_worker::pg::{ACQUIRE, DELETE_OLDEST, FENCE, RELEASE, RENEW};

use super::db_clock::DELETE_LOG_TAG;
use crate::model::OpKind;

/// One message of the server's log, with the lines that belong to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// When, in microseconds since the Unix epoch.
    pub at_us: i64,
    /// The backend that wrote it.
    pub pid: u32,
    /// Its SQLSTATE (`00000` for a plain log line).
    pub sqlstate: String,
    /// The database the backend serves.
    pub database: String,
    /// The client's `application_name`.
    pub client: String,
    /// `LOG`, `ERROR`, `FATAL`...
    pub level: String,
    /// The message.
    pub message: String,
    /// Its `DETAIL` line, if any.
    pub detail: String,
    /// The statement it is about, if the server printed it.
    pub statement: String,
}

/// The entries of a log written with `test_support::SERVER_LOG_SETTINGS`.
/// A line without the prefix continues the line before it (a statement's
/// text spans lines); `DETAIL` and `STATEMENT` lines join their message.
pub fn parse(text: &str) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    // Which line a continuation line continues: the message (`None`),
    // the statement, or a line that is not kept (`CONTEXT`...).
    let mut continues: Option<&str> = None;
    for line in text.lines() {
        let Some((prefix, body)) = prefixed(line) else {
            let last = entries.last_mut();
            let field = match (last, continues) {
                (Some(last), None) => &mut last.message,
                (Some(last), Some("STATEMENT")) => &mut last.statement,
                (Some(last), Some("DETAIL")) => &mut last.detail,
                _ => continue,
            };
            field.push('\n');
            field.push_str(line);
            continue;
        };
        let (level, rest) = body.split_once(":  ").unwrap_or(("", body));
        let same_message = entries.last().is_some_and(|last| last.pid == prefix.pid);
        match level {
            "DETAIL" | "STATEMENT" | "HINT" | "CONTEXT" | "QUERY" | "LOCATION" if same_message => {
                let last = entries.last_mut().expect("checked");
                continues = Some(level);
                match level {
                    "DETAIL" => last.detail = rest.to_owned(),
                    "STATEMENT" => last.statement = rest.to_owned(),
                    _ => {}
                }
            }
            _ => {
                continues = None;
                entries.push(Entry {
                    level: level.to_owned(),
                    message: rest.to_owned(),
                    ..prefix
                });
            }
        }
    }
    entries
}

/// The prefix of a line (as an entry without its message) and the rest.
fn prefixed(line: &str) -> Option<(Entry, &str)> {
    let mut parts = line.splitn(6, '|');
    let epoch = parts.next()?;
    let (seconds, millis) = epoch.split_once('.')?;
    let at_us = seconds.parse::<i64>().ok()? * 1_000_000 + millis.parse::<i64>().ok()? * 1_000;
    let pid = parts.next()?.parse().ok()?;
    let sqlstate = parts.next()?.to_owned();
    let database = parts.next()?.to_owned();
    let client = parts.next()?.to_owned();
    let body = parts.next()?;
    let entry = Entry {
        at_us,
        pid,
        sqlstate,
        database,
        client,
        ..Entry::default()
    };
    Some((entry, body))
}

/// Which operation's statement `text` is, by the adapters' own SQL.
pub(super) fn operation(text: &str) -> Option<OpKind> {
    let words = |sql: &str| sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = words(text);
    [
        (ACQUIRE, OpKind::Acquire),
        (RENEW, OpKind::Renew),
        (RELEASE, OpKind::Release),
        (FENCE, OpKind::Delete),
        (DELETE_OLDEST, OpKind::Delete),
    ]
    .into_iter()
    .find(|(sql, _)| words(sql) == text)
    .map(|(_, op)| op)
}

/// A delete the trigger saw lock rows: its transaction and how many.
pub(super) struct Locked {
    pub pid: u32,
    pub at_us: i64,
    pub txn: i64,
    pub rows: u64,
}

/// The transactions whose deletes the trigger logged in `entries`, for
/// the caller to ask the server which committed.
pub fn delete_transactions(entries: &[Entry]) -> Vec<i64> {
    entries
        .iter()
        .filter_map(|e| locked(e).map(|l| l.txn))
        .collect()
}

/// The rows the delete `entry` logged it locked, if it is one.
pub(super) fn locked(entry: &Entry) -> Option<Locked> {
    let rest = entry.message.strip_prefix(DELETE_LOG_TAG)?;
    let (rows, txn) = rest.trim().split_once(" rows in transaction ")?;
    Some(Locked {
        pid: entry.pid,
        at_us: entry.at_us,
        txn: txn.trim().parse().ok()?,
        rows: rows.trim().parse().ok()?,
    })
}

/// How long the wait had lasted when it was logged, and who holds the lock.
pub(super) fn lock_wait(entry: &Entry) -> Option<(f64, Vec<u32>)> {
    let rest = entry.message.split(" still waiting for ").nth(1)?;
    let waited = rest.rsplit_once(" after ")?.1.strip_suffix(" ms")?;
    let holders = entry
        .detail
        .split(". ")
        .next()?
        .split_once(": ")?
        .1
        .split(", ")
        .filter_map(|pid| pid.trim_end_matches('.').parse().ok())
        .collect();
    Some((waited.parse().ok()?, holders))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
1764763200.123|4242|00000|runs|r1|LOG:  connection authorized: user=postgres database=runs application_name=r1
1764763200.500|4242|57014|runs|r1|ERROR:  canceling statement due to statement timeout
1764763200.500|4242|57014|runs|r1|CONTEXT:  SQL statement \"SELECT pg_sleep(1)
\t    \"
1764763200.500|4242|57014|runs|r1|STATEMENT:  
\t    DELETE FROM retention_records
\t    WHERE id IN (
1764763201.000|4343|00000|runs|r2|LOG:  process 4343 still waiting for ShareLock on transaction 771 after 10.042 ms
1764763201.000|4343|00000|runs|r2|DETAIL:  Process holding the lock: 4242. Wait queue: 4343.
1764763201.000|4343|00000|runs|r2|STATEMENT:  UPDATE x
";

    #[test]
    fn entries_gather_their_detail_and_statement_lines() {
        let entries = parse(LOG);
        assert_eq!(entries.len(), 3, "{entries:#?}");
        assert_eq!(entries[1].at_us, 1_764_763_200_500_000);
        assert_eq!(entries[1].sqlstate, "57014");
        assert_eq!(entries[1].level, "ERROR");
        assert_eq!(
            entries[1].message,
            "canceling statement due to statement timeout"
        );
        assert!(
            entries[1]
                .statement
                .contains("DELETE FROM retention_records")
        );
        assert!(entries[1].statement.contains("WHERE id IN ("));
        assert_eq!(lock_wait(&entries[2]), Some((10.042, vec![4242])));
    }

    #[test]
    fn the_adapters_statements_are_told_apart() {
        assert_eq!(operation(RENEW), Some(OpKind::Renew));
        assert_eq!(operation(RELEASE), Some(OpKind::Release));
        assert_eq!(operation(ACQUIRE), Some(OpKind::Acquire));
        assert_eq!(operation(FENCE), Some(OpKind::Delete));
        assert_eq!(
            operation(&format!("  {DELETE_OLDEST}\n")),
            Some(OpKind::Delete)
        );
        assert_eq!(operation("SELECT 1"), None);
    }
}
