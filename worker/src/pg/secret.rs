//! Database URLs and messages as they may be shown: the password a URL
//! carries is replaced wherever it would appear.

/// What stands in for a password.
const HIDDEN: &str = "***";

/// `database_url` as it may be printed or logged: its password (URL or
/// key=value form) replaced by `***`, everything else kept so an operator
/// can still tell which server and user it names.
pub fn redact_url(database_url: &str) -> String {
    // Each password where the URL holds it: (start, end) in bytes, the
    // overlapping guesses of one password merged.
    let base = database_url.as_ptr() as usize;
    let mut spans: Vec<(usize, usize)> = written_passwords(database_url)
        .into_iter()
        .filter(|password| !password.is_empty())
        .map(|password| {
            let start = password.as_ptr() as usize - base;
            (start, start + password.len())
        })
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let mut shown = database_url.to_owned();
    for (start, end) in merged.into_iter().rev() {
        shown.replace_range(start..end, HIDDEN);
    }
    shown
}

/// `text` with each password in `spellings` (longest first) replaced where
/// a form says it is one: `user:PASSWORD@` and `password=PASSWORD`
/// (quoted or bare); a host or database of the same letters is kept.
fn in_place(mut text: String, spellings: &[String]) -> String {
    for password in spellings {
        for (before, after) in [(":", "@"), ("password='", "'"), ("password=", "")] {
            let written = format!("{before}{password}{after}");
            if text.contains(&written) {
                text = text.replace(&written, &format!("{before}{HIDDEN}{after}"));
            }
        }
    }
    text
}

/// `text` as it may be shown when it could quote `database_url`: the URL,
/// and every `user:password@` or `password=value` spelling of its password
/// (as written, percent-encoded or quoted, and as the driver decodes it),
/// with the password replaced by `***`. Replacing the password wherever
/// its letters occur would tell it to anyone who knows the message (a
/// password `server` turned "error connecting to server" into "error
/// connecting to ***"), so a message that still holds the password's text
/// after that is withheld whole. A URL with no password leaves `text`
/// unchanged.
pub fn redact(text: &str, database_url: &str) -> String {
    let mut spellings: Vec<String> = written_passwords(database_url)
        .into_iter()
        .map(str::to_owned)
        .collect();
    if let Ok(config) = database_url.parse::<tokio_postgres::Config>() {
        if let Some(decoded) = config.get_password() {
            spellings.push(String::from_utf8_lossy(decoded).into_owned());
        }
    }
    spellings.retain(|password| !password.is_empty());
    if spellings.is_empty() {
        return text.to_owned();
    }
    // Longest first, so a spelling that contains another goes whole.
    spellings.sort_by_key(|password| std::cmp::Reverse(password.len()));
    let shown = in_place(
        text.replace(database_url, &redact_url(database_url)),
        &spellings,
    );
    let holds = |part: &str| {
        spellings
            .iter()
            .any(|password| part.contains(password.as_str()))
    };
    if !holds(&shown) {
        return shown;
    }
    // Messages are causes joined by ": ": each that holds the text goes.
    let parts: Vec<&str> = shown
        .split(": ")
        .map(|part| if holds(part) { WITHHELD } else { part })
        .collect();
    let joined = parts.join(": ");
    if holds(&joined) {
        // The password spans a separator: nothing of it can be shown.
        return WITHHELD.to_owned();
    }
    joined
}

/// What stands in for a part of a message that holds the password's text.
const WITHHELD: &str = "(withheld: holds the database password's text)";

/// The password as it is written in `database_url`, found without the
/// driver's parser so that a URL it refuses is still redacted: the user
/// info's part after `:` in `scheme://user:password@host`, or the value of
/// `password=` in key=value form (quoted or bare).
fn written_passwords(database_url: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let url_form = database_url.contains("://");
    if let Some((_, rest)) = database_url.split_once("://") {
        // The user info ends at the last `@` before the path or query; a
        // password with an unencoded `/` or `?` is still found whole by
        // taking the last `@` anywhere as a second guess.
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let in_authority = rest[..authority_end].rsplit_once('@').map(|(info, _)| info);
        // The second guess only when the authority holds no `@`, and not
        // through a query (`?application_name=a:b@c` names no password).
        let anywhere = rest
            .rsplit_once('@')
            .map(|(info, _)| info)
            .filter(|info| in_authority.is_none() && !info.contains('?'));
        for userinfo in [in_authority, anywhere].into_iter().flatten() {
            if let Some((_, password)) = userinfo.split_once(':') {
                found.push(password);
            }
        }
    }
    let mut rest = database_url;
    while let Some(at) = rest.find("password") {
        let after = rest[at + "password".len()..].trim_start();
        rest = &rest[at + "password".len()..];
        let Some(value) = after.strip_prefix('=') else {
            continue;
        };
        let value = value.trim_start();
        let password = match value.strip_prefix('\'') {
            // A quoted value ends at the next unescaped quote.
            Some(quoted) => {
                let mut end = quoted.len();
                let mut escaped = false;
                for (index, ch) in quoted.char_indices() {
                    match ch {
                        '\\' if !escaped => escaped = true,
                        '\'' if !escaped => {
                            end = index;
                            break;
                        }
                        _ => escaped = false,
                    }
                }
                &quoted[..end]
            }
            // In a URL's query the value ends at the next parameter.
            None if url_form => value.split(['&', '#']).next().unwrap_or(""),
            None => value.split(char::is_whitespace).next().unwrap_or(""),
        };
        found.push(password);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{redact, redact_url};

    #[test]
    fn a_url_keeps_its_server_and_user_and_loses_its_password() {
        assert_eq!(
            redact_url("postgres://app:secret@db:5432/prod"),
            "postgres://app:***@db:5432/prod"
        );
        assert_eq!(
            redact_url("postgres://app@db/prod"),
            "postgres://app@db/prod"
        );
        assert_eq!(redact_url("postgres://db/prod"), "postgres://db/prod");
        // An `@` in the query is not the user info's.
        assert_eq!(
            redact_url("postgres://app:pw@db/prod?application_name=a@b"),
            "postgres://app:***@db/prod?application_name=a@b"
        );
        assert_eq!(
            redact_url("postgres://db/x?application_name=a:b@c"),
            "postgres://db/x?application_name=a:b@c"
        );
        // A host named like the password stays.
        assert_eq!(
            redact_url("postgres://app:db@db/prod"),
            "postgres://app:***@db/prod"
        );
    }

    #[test]
    fn every_spelling_of_the_password_goes() {
        // Percent-encoded in the URL, decoded by the driver: both hidden.
        let url = "postgresql://app:p%40ss%2Fw@db1,db2:5433/prod?sslmode=disable";
        let message = format!("{url}: cannot connect");
        let shown = redact(&message, url);
        assert!(!shown.contains("p%40ss"), "{shown}");
        assert!(shown.contains("db1,db2:5433/prod"), "{shown}");
        let shown = redact("user app:p@ss/w@db1 refused", url);
        assert_eq!(shown, "user app:***@db1 refused");
        // Quoted bare, where no form says it is the password: withheld.
        let shown = redact("user app, password p@ss/w rejected", url);
        assert!(
            !shown.contains("p@ss/w") && shown.contains("withheld"),
            "{shown}"
        );
        // An unencoded `/` and `@` in the password, which the driver refuses.
        let url = "postgres://app:a/b@c@db/prod";
        assert_eq!(redact_url(url), "postgres://app:***@db/prod");
        // The query form and the key=value form, quoted or not.
        let url = "postgres://db/prod?user=app&password=hunter2&sslmode=disable";
        assert_eq!(
            redact_url(url),
            "postgres://db/prod?user=app&password=***&sslmode=disable"
        );
        let url = "host=db user=app password = 'with \\'quoted\\' words' dbname=prod";
        assert!(!redact_url(url).contains("quoted"), "{}", redact_url(url));
        let url = "host=db password=bare dbname=prod";
        assert_eq!(redact_url(url), "host=db password=*** dbname=prod");
    }

    #[test]
    fn a_password_that_is_a_word_of_the_message_is_not_spelled_out_by_stars() {
        // Stars in place of "server" would tell the password to anyone who
        // knows the message; so would stars in place of each "e".
        let message = "migrate: error connecting to server: Connection refused (os error 111)";
        let url = "postgres://user:server@127.0.0.1:1/db";
        assert_eq!(
            redact(message, url),
            "migrate: (withheld: holds the database password's text): Connection refused (os \
             error 111)"
        );
        let url = "postgres://user:e@127.0.0.1:1/db";
        assert_eq!(
            redact(message, url),
            "(withheld: holds the database password's text)"
        );
        let url = "postgres://user:k7Qz9@127.0.0.1:1/db";
        assert_eq!(
            redact("migrate: error connecting to server", url),
            "migrate: error connecting to server",
            "a message without the password is shown as it is"
        );
    }
}
