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
    let cases: [Case; 9] = [
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
        // A bound derived from the TTL, named as derived (the operator
        // never gave --statement-timeout-ms).
        (
            &["--lease-ttl-ms", "18446744073709551615"],
            &[],
            "--statement-timeout-ms (not given: a sixth of --lease-ttl-ms 18446744073709551615)",
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

/// clap says only "invalid UTF-8 was detected in one or more arguments";
/// a variable set by a script in another encoding was blamed on the
/// command line. A word that is not UTF-8 is refused, never a panic (the
/// note for environment values once read the arguments with `args()`,
/// which panics on one).
#[test]
fn a_value_that_is_not_utf8_is_named() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let latin1 = OsStr::from_bytes(b"postgres://app@127.0.0.1:1/caf\xe9");
    let nowhere = OsStr::new(NOWHERE);
    /// Environment, flags after `--once`, and the note expected.
    type Case<'a> = (Vec<(&'a str, &'a OsStr)>, Vec<&'a OsStr>, &'a str);
    let cases: [Case; 3] = [
        (
            vec![("DATABASE_URL", latin1), ("RETENTION_LEASE_NAME", latin1)],
            vec![],
            "note: DATABASE_URL and RETENTION_LEASE_NAME in the environment are not UTF-8",
        ),
        (
            vec![("DATABASE_URL", nowhere), ("RETENTION_OWNER_ID", latin1)],
            vec![],
            "note: RETENTION_OWNER_ID in the environment is not UTF-8",
        ),
        (
            vec![("DATABASE_URL", nowhere)],
            vec![OsStr::new("--owner-id"), latin1],
            "note: word 3 of the command line",
        ),
    ];
    for (env, args, expected) in cases {
        let output = Command::new(env!("CARGO_BIN_EXE_retention-worker"))
            .envs(env)
            .arg("--once")
            .args(args)
            .output()
            .expect("start retention-worker");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
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

/// Help that cannot be written is a failure, not a silent success.
#[test]
fn lost_help_never_passes_silently() {
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let status = Command::new(env!("CARGO_BIN_EXE_retention-worker"))
        .arg("--help")
        .stdout(full)
        .status()
        .expect("start retention-worker");
    assert_eq!(
        status.code(),
        Some(74),
        "help lost on a full disk passed as success"
    );
}

/// A server that accepts connections and never answers (a hung server, a
/// stuck pooler): the start gives up within the lease TTL, saying so,
/// where it waited for ever without a word.
#[test]
fn a_server_that_never_answers_fails_the_start_within_the_lease_ttl() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let url = format!("postgres://app:pw@127.0.0.1:{port}/prod");
    let started = std::time::Instant::now();
    let flags = [
        "--once",
        "--lease-ttl-ms",
        "3000",
        "--renew-interval-ms",
        "1000",
        "--expiry-margin-ms",
        "500",
    ];
    let (status, stderr) = runner(&url, &flags, &[]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(
        stderr.contains("no answer from PostgreSQL within 3000 ms"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{stderr}"
    );
}
