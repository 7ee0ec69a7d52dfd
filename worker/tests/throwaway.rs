//! `scripts/throwaway-postgres`, as `worker/README.md` and `.ci/run` use it: two
//! servers started side by side on one host get folders and ports of their
//! own, `stop` finds each through the export line and unsets it, a server
//! asks every connection for its password, a port taken between the probe
//! and the start is not fatal, and a start that fails says why and where
//! the server's log is.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::process::{Command, Output};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/throwaway-postgres");

/// The script's starts on automatic ports, one at a time: a test that
/// holds a port must not see another test's start take it first.
static PORTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn ports() -> std::sync::MutexGuard<'static, ()> {
    PORTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

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
    let _ports = ports();
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
        assert_eq!(
            String::from_utf8_lossy(&stopped.stdout).trim(),
            "unset DATABASE_URL RETENTION_PG_DIR RETENTION_PG_PORT",
            "eval of stop's output leaves the shell ready for a fresh start"
        );
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
    let dir = test_support::ScratchDir::new("throwaway-test-");
    let folder = dir.to_str().expect("a UTF-8 path");
    let stderr = start_failing_on_port_1(folder);
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

/// The first message a server sends a client that asks to log in as
/// `postgres`: its authentication request code (0 lets it in, 10 asks for
/// SCRAM).
fn authentication_asked(port: u16) -> i32 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let mut body = 196_608_i32.to_be_bytes().to_vec(); // protocol 3.0
    body.extend_from_slice(b"user\0postgres\0database\0postgres\0\0");
    let length = i32::try_from(body.len() + 4).expect("a short message");
    stream.write_all(&length.to_be_bytes()).expect("send");
    stream.write_all(&body).expect("send");
    let mut reply = [0_u8; 9];
    stream.read_exact(&mut reply).expect("a reply");
    assert_eq!(reply[0], b'R', "an authentication request: {reply:?}");
    i32::from_be_bytes(reply[5..9].try_into().expect("four bytes"))
}

/// Another user of the host cannot log in as the server's superuser: the
/// server asks for a password, which only its folder (private) and the
/// export line hold.
#[test]
fn the_server_asks_every_connection_for_its_own_password() {
    use std::os::unix::fs::PermissionsExt;
    let _ports = ports();
    let server = exported(&script(&["start"], &[]));
    let port: u16 = server["RETENTION_PG_PORT"].parse().expect("a port");
    let asked = authentication_asked(port);
    let folder = std::path::Path::new(&server["RETENTION_PG_DIR"]);
    let password = std::fs::read_to_string(folder.join("password")).expect("the password file");
    let mode = std::fs::metadata(folder)
        .expect("the folder")
        .permissions()
        .mode();
    let env = [
        ("RETENTION_PG_DIR", server["RETENTION_PG_DIR"].as_str()),
        ("RETENTION_PG_PORT", server["RETENTION_PG_PORT"].as_str()),
    ];
    assert!(script(&["stop"], &env).status.success());
    assert_eq!(asked, 10, "the server let a client in without a password");
    assert!(
        password.trim().len() >= 24,
        "a short password: {password:?}"
    );
    assert!(
        server["DATABASE_URL"].contains(&format!("postgres:{}@", password.trim())),
        "{server:?}"
    );
    assert_eq!(mode & 0o077, 0, "the folder is open to others: {mode:o}");
}

/// A port the script found free but another program bound before the
/// server could: the script takes the next free one rather than failing.
#[test]
fn a_port_taken_between_the_probe_and_the_start_is_passed_over() {
    use socket2::{Domain, Socket, Type};
    let _ports = ports();
    // Bound but not listening: a connect is refused (the probe sees a free
    // port) while the server's bind fails (the port is taken).
    let holder = (54_329..55_329)
        .find_map(|port| {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return None;
            }
            let socket = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
            let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            socket.bind(&address.into()).ok()?;
            Some((port, socket))
        })
        .expect("a free port to hold");
    let started = script(&["start"], &[]);
    let stderr = String::from_utf8_lossy(&started.stderr).into_owned();
    let server = exported(&started);
    let env = [
        ("RETENTION_PG_DIR", server["RETENTION_PG_DIR"].as_str()),
        ("RETENTION_PG_PORT", server["RETENTION_PG_PORT"].as_str()),
    ];
    assert!(script(&["stop"], &env).status.success());
    drop(holder.1);
    assert_ne!(
        server["RETENTION_PG_PORT"],
        holder.0.to_string(),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "port {} was taken before the server bound it",
            holder.0
        )),
        "{stderr}"
    );
}

/// A folder this script did not make is never changed or removed: a start
/// refuses one that holds files (before it changes the folder's owner or
/// mode), and a stop refuses one without the start's marker, even if it
/// holds a `data` folder.
#[test]
fn a_folder_the_script_did_not_make_is_never_changed_or_removed() {
    use std::os::unix::fs::PermissionsExt;
    let _ports = ports();
    let dir = test_support::ScratchDir::new("throwaway-kept-");
    std::fs::create_dir(dir.join("data")).expect("mkdir");
    std::fs::write(dir.join("data").join("important.txt"), "precious").expect("write");
    std::fs::write(dir.join("notes.txt"), "mine").expect("write");
    let mode_before = std::fs::metadata(&dir).expect("stat").permissions().mode();
    let folder = dir.to_str().expect("a UTF-8 path");
    let started = script(&["start"], &[("RETENTION_PG_DIR", folder)]);
    assert_eq!(started.status.code(), Some(2), "{started:?}");
    assert!(
        String::from_utf8_lossy(&started.stderr).contains("holds files this script did not make")
    );
    assert!(started.stdout.is_empty());
    let mode_after = std::fs::metadata(&dir).expect("stat").permissions().mode();
    assert_eq!(
        mode_before, mode_after,
        "a refused start changed the folder"
    );
    let stopped = script(&["stop"], &[("RETENTION_PG_DIR", folder)]);
    assert_eq!(stopped.status.code(), Some(2), "{stopped:?}");
    assert!(String::from_utf8_lossy(&stopped.stderr).contains("not a folder this script made"));
    assert_eq!(
        std::fs::read_to_string(dir.join("data").join("important.txt")).expect("kept"),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).expect("kept"),
        "mine"
    );
    // A file named as the folder: stop removed it.
    let file = dir.join("notes.txt");
    let stopped = script(
        &["stop"],
        &[("RETENTION_PG_DIR", file.to_str().expect("UTF-8"))],
    );
    assert_eq!(stopped.status.code(), Some(2), "{stopped:?}");
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), "mine");
}

/// A folder named with a space, or relative to the caller: the export
/// line, eval'd, gives its absolute name back, and stop finds it. A name
/// the server cannot be given is refused up front; a failed start says
/// how to remove the folder it keeps for its log.
#[test]
fn odd_folder_names_work_or_are_refused_and_a_failed_start_says_how_to_clean_up() {
    let _ports = ports();
    use std::os::unix::fs::PermissionsExt;
    let dir = test_support::ScratchDir::new("throwaway-names-");
    // The server's user must pass through it (as root, the server runs as
    // `postgres`); nobody else may list it.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711)).expect("chmod");
    // `eval "$(false)"` is a success: the start's output is taken first.
    let cycle = "out=$(\"$0\") && eval \"$out\" && printf '%s' \"$RETENTION_PG_DIR\" \
                 && eval \"$(\"$0\" stop)\"";
    for (name, cwd) in [
        ("with space", dir.to_path_buf()),
        ("relative", dir.to_path_buf()),
    ] {
        let given = if name == "relative" {
            name.to_owned()
        } else {
            dir.join(name).to_str().expect("UTF-8").to_owned()
        };
        let output = Command::new("bash")
            .args(["-c", cycle, SCRIPT])
            .current_dir(&cwd)
            .env("RETENTION_PG_DIR", &given)
            .env_remove("RETENTION_PG_PORT")
            .output()
            .expect("run bash");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{name}: {stderr}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            dir.join(name).to_str().expect("UTF-8"),
            "{name}: the exported folder is the absolute one"
        );
        assert!(!dir.join(name).exists(), "{name}: stop left it");
    }
    if running_as_root() {
        let closed = test_support::ScratchDir::new("throwaway-closed-");
        let inside = closed.join("pg");
        let refused = script(
            &["start"],
            &[("RETENTION_PG_DIR", inside.to_str().expect("UTF-8"))],
        );
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("cannot reach"), "{stderr}");
    }
    let quoted = dir.join("it's").to_str().expect("UTF-8").to_owned();
    let refused = script(&["start"], &[("RETENTION_PG_DIR", &quoted)]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("a quote, backslash or newline"));

    let failed_dir = dir.join("failed");
    let failed_dir = failed_dir.to_str().expect("UTF-8");
    let stderr = start_failing_on_port_1(failed_dir);
    assert!(
        stderr.contains(&format!("RETENTION_PG_DIR='{failed_dir}' {SCRIPT} stop")),
        "{stderr}"
    );
    let _ = script(&["stop"], &[("RETENTION_PG_DIR", failed_dir)]);
}

/// `start` in `folder` on port 1, which is free but privileged: the server
/// cannot bind it, and the script fails (exit 1); its standard error.
fn start_failing_on_port_1(folder: &str) -> String {
    let env = [("RETENTION_PG_PORT", "1"), ("RETENTION_PG_DIR", folder)];
    let failed = script(&["start"], &env);
    let stderr = String::from_utf8_lossy(&failed.stderr).into_owned();
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    stderr
}

/// Whether this process is root, so that the script runs the server as
/// another user (who cannot enter a folder private to root).
fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}
