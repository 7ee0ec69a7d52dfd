//! The runner's flags, environment and connection failures as an operator
//! meets them: every flag checked before the database is touched, each
//! refusal naming the flag (or the variable) that set it, and each failure
//! to connect saying why (the server's words, the operating system's).

use std::process::{Command, Output};

use test_support::TempServer;

/// Nothing listens on port 1: a start that gets as far as connecting fails.
const NOWHERE: &str = "postgres://app@127.0.0.1:1/prod";

fn runner(url: &str, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_retention-worker"));
    command.env("DATABASE_URL", url).args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let Output { status, stderr, .. } = command.output().expect("start retention-worker");
    (status.code(), String::from_utf8_lossy(&stderr).into_owned())
}

#[test]
fn every_flag_is_checked_before_the_database_and_names_itself() {
    /// Flags, environment, and what the refusal says.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 8] = [
        // Passed validation, then every connection failed (Linux's limit).
        (
            &[
                "--lease-ttl-ms",
                "190000000",
                "--keepalive-idle-ms",
                "32768000",
            ],
            &[],
            "--keepalive-idle-ms = 32768000",
        ),
        // Was blamed on --idle-in-transaction-timeout-ms.
        (
            &["--commit-wait-ms-max", "18446744073709551615"],
            &[],
            "--commit-wait-ms-max = 18446744073709551615",
        ),
        // Was found after the migrations, or hidden by the connection error.
        (
            &["--owner-id", ""],
            &[],
            "--owner-id = \"\": must not be empty",
        ),
        // Was accepted: a lease row named ''.
        (
            &["--lease-name", ""],
            &[],
            "--lease-name = \"\": must not be empty",
        ),
        // Was used as 1 without a word.
        (
            &["--pool-size", "0"],
            &[],
            "--pool-size = 0: must be in 1..=1000",
        ),
        (
            &[
                "--statement-timeout-ms",
                "2147483648",
                "--lease-ttl-ms",
                "90000000000",
            ],
            &[],
            "--statement-timeout-ms = 2147483648: must be at most 2147483647",
        ),
        // clap names only the flag; the note names the variable.
        (
            &[],
            &[("RETENTION_BATCH_SIZE", "abc")],
            "note: the value came from RETENTION_BATCH_SIZE in the environment",
        ),
        (
            &[],
            &[("RETENTION_SKIP_MIGRATIONS", "maybe")],
            "note: the value came from RETENTION_SKIP_MIGRATIONS in the environment",
        ),
    ];
    for (args, env, expected) in cases {
        let mut all = vec!["--once"];
        all.extend_from_slice(args);
        let (status, stderr) = runner(NOWHERE, &all, env);
        assert_eq!(status, Some(2), "{args:?} {env:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?} {env:?}: {stderr}");
        assert!(
            !stderr.contains("no database connection"),
            "checked too late: {stderr}"
        );
    }
    // 1/0, yes/no, on/off from the environment, as operators write them;
    // this one gets as far as connecting, without the migrations.
    let (status, stderr) = runner(NOWHERE, &["--once"], &[("RETENTION_SKIP_MIGRATIONS", "1")]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(
        stderr.contains("no database connection") && !stderr.contains("migrate"),
        "{stderr}"
    );
    // A lease TTL whose sixth passes Linux's keepalive limit: the derived
    // keepalive stops at the limit, and the start reaches the network.
    let (_, stderr) = runner(NOWHERE, &["--once", "--lease-ttl-ms", "200000000"], &[]);
    assert!(stderr.contains("Connection refused"), "{stderr}");
}

#[test]
fn a_failed_connection_says_why() {
    let (_, stderr) = runner(NOWHERE, &["--once"], &[]);
    assert!(
        stderr.contains("error connecting to server: Connection refused"),
        "the operating system's reason: {stderr}"
    );
    let (_, stderr) = runner("", &["--once"], &[]);
    assert!(stderr.contains("DATABASE_URL is empty"), "{stderr}");
    let (_, stderr) = runner(&format!("{NOWHERE}?sslmode=require"), &["--once"], &[]);
    assert!(stderr.contains("connects without TLS"), "{stderr}");
    let server = TempServer::start();
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/no_such_database",
        server.port()
    );
    let (_, stderr) = runner(&url, &["--once"], &[]);
    assert!(
        stderr.contains("3D000") && stderr.contains("does not exist"),
        "the server's SQLSTATE and words: {stderr}"
    );
}

/// A password spelled like a word of the message: stars in its place
/// would tell it ("error connecting to ***" says the password is
/// "server"), so the part of the message holding it is withheld.
#[test]
fn a_password_that_is_a_word_of_the_message_is_not_spelled_out() {
    let (_, stderr) = runner("postgres://app:server@127.0.0.1:1/prod", &["--once"], &[]);
    assert!(!stderr.contains("***"), "{stderr}");
    assert!(
        stderr.contains("withheld") && stderr.contains("Connection refused"),
        "{stderr}"
    );
}
