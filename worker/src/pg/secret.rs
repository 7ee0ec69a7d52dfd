//! Database URLs and messages as they may be shown: the password a URL
//! carries is replaced wherever it would appear.

use std::borrow::Cow;

/// What stands in for a password.
const HIDDEN: &str = "***";

/// `database_url` as it may be printed or logged: its password (URL or
/// key=value form) replaced by `***`, everything else kept so an operator
/// can still tell which server and user it names.
pub fn redact_url(database_url: &str) -> String {
    redact(database_url, database_url)
}

/// `text` with every spelling of `database_url`'s password replaced by
/// `***`: as written in the URL (percent-encoded or quoted) and as the
/// driver decodes it. For error messages and logs that could quote the
/// URL or the password; a URL with no password leaves `text` unchanged.
pub fn redact(text: &str, database_url: &str) -> String {
    let mut spellings = written_passwords(database_url);
    if let Ok(config) = database_url.parse::<tokio_postgres::Config>() {
        if let Some(decoded) = config.get_password() {
            spellings.push(String::from_utf8_lossy(decoded).into_owned());
        }
    }
    // Longest first, so a spelling that contains another goes whole.
    spellings.retain(|password| !password.is_empty());
    spellings.sort_by_key(|password| std::cmp::Reverse(password.len()));
    let mut shown = Cow::Borrowed(text);
    for password in &spellings {
        if shown.contains(password.as_str()) {
            shown = Cow::Owned(shown.replace(password.as_str(), HIDDEN));
        }
    }
    shown.into_owned()
}

/// The password as it is written in `database_url`, found without the
/// driver's parser so that a URL it refuses is still redacted: the user
/// info's part after `:` in `scheme://user:password@host`, or the value of
/// `password=` in key=value form (quoted or bare).
fn written_passwords(database_url: &str) -> Vec<String> {
    let mut found = Vec::new();
    let url_form = database_url.contains("://");
    if let Some((_, rest)) = database_url.split_once("://") {
        // The user info ends at the last `@` before the path or query; a
        // password with an unencoded `/` or `?` is still found whole by
        // taking the last `@` anywhere as a second guess.
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        for userinfo in [
            rest[..authority_end].rsplit_once('@').map(|(info, _)| info),
            rest.rsplit_once('@').map(|(info, _)| info),
        ]
        .into_iter()
        .flatten()
        {
            if let Some((_, password)) = userinfo.split_once(':') {
                found.push(password.to_owned());
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
        found.push(password.to_owned());
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
    }

    #[test]
    fn every_spelling_of_the_password_goes() {
        // Percent-encoded in the URL, decoded by the driver: both hidden.
        let url = "postgresql://app:p%40ss%2Fw@db1,db2:5433/prod?sslmode=disable";
        let message = format!("{url}: user app, password p@ss/w rejected");
        let shown = redact(&message, url);
        assert!(
            !shown.contains("p%40ss") && !shown.contains("p@ss/w"),
            "{shown}"
        );
        assert!(shown.contains("db1,db2:5433/prod"), "{shown}");
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
}
