//! `scripts/throwaway-postgres`, as README and `.ci/run` use it: two
//! servers started side by side on one host get folders and ports of their
//! own, `stop` finds each through the export line, and a start that fails
//! says why and where the server's log is.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::process::{Command, Output};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/throwaway-postgres");

/// Runs the script with `args`, the environment's own choices of folder
/// and port removed, and `env` set.
fn script(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(SCRIPT);
    command
        .args(args)
        .env_remove("RETENTION_PG_DIR")
        .env_remove("RETENTION_PG_PORT");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run the script")
}

/// The variables a start's export line sets.
fn exported(output: &Output) -> BTreeMap<String, String> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let line = stdout.trim();
    let assignments = line
        .strip_prefix("export ")
        .unwrap_or_else(|| panic!("{line}"));
    assignments
        .split(' ')
        .map(|pair| {
            let (key, value) = pair.split_once('=').expect("NAME=VALUE");
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

#[test]
fn two_servers_on_one_host_get_folders_and_ports_of_their_own() {
    let first = exported(&script(&["start"], &[]));
    let second = exported(&script(&["start"], &[]));
    for key in ["DATABASE_URL", "RETENTION_PG_DIR", "RETENTION_PG_PORT"] {
        assert!(first.contains_key(key), "{first:?}");
        assert_ne!(first[key], second[key], "both servers share {key}");
    }
    for server in [&first, &second] {
        let port: u16 = server["RETENTION_PG_PORT"].parse().expect("a port");
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "nothing listens on {port}"
        );
        let env = [
            ("RETENTION_PG_DIR", server["RETENTION_PG_DIR"].as_str()),
            ("RETENTION_PG_PORT", server["RETENTION_PG_PORT"].as_str()),
        ];
        let stopped = script(&["stop"], &env);
        assert!(stopped.status.success(), "{stopped:?}");
        assert!(
            !std::path::Path::new(&server["RETENTION_PG_DIR"]).exists(),
            "stop leaves the folder"
        );
    }
    let nothing = script(&["stop"], &[]);
    assert_eq!(nothing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&nothing.stderr).contains("RETENTION_PG_DIR is not set"));
}

#[test]
fn a_busy_port_or_a_failed_start_says_why_and_where_the_log_is() {
    let busy = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = busy.local_addr().expect("an address").port().to_string();
    let refused = script(&["start"], &[("RETENTION_PG_PORT", &port)]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("port {port} on 127.0.0.1 is in use")),
        "{stderr}"
    );
    assert!(refused.stdout.is_empty(), "nothing to eval after a failure");

    // Port 1 is free but privileged: the server cannot bind it, and the
    // error says where its log is and quotes it.
    let dir = test_support::private_dir("throwaway-test-").keep();
    let folder = dir.to_str().expect("a UTF-8 path");
    let failed = script(
        &["start"],
        &[("RETENTION_PG_PORT", "1"), ("RETENTION_PG_DIR", folder)],
    );
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the server did not start on port 1"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("{folder}/server.log")), "{stderr}");
    assert!(
        stderr.contains("Permission denied"),
        "the log's tail: {stderr}"
    );
    let _ = script(&["stop"], &[("RETENTION_PG_DIR", folder)]);
}

/// A test's server lives in a folder only its owner can enter, with a name
/// nobody can guess (a pid is easy to guess; another local user could put
/// a link there first and have the test write through it).
#[test]
fn a_tests_server_folder_is_private_and_unguessable() {
    use std::os::unix::fs::PermissionsExt;
    let server = test_support::TempServer::start();
    let folder = server.log_path().parent().expect("a folder").to_path_buf();
    let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        !name.contains(&std::process::id().to_string()),
        "the folder {name} is named after the pid"
    );
    let mode = std::fs::metadata(&folder).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o077,
        0,
        "{} is open to others: {mode:o}",
        folder.display()
    );
    drop(server);
    assert!(!folder.exists(), "the server's folder outlives it");
}
