//! Test support for the workspace: [`TempServer`], a throwaway PostgreSQL
//! server for one test (`initdb` in a temporary folder, a free port on
//! 127.0.0.1, stopped and deleted on drop), and [`Proxy`] (`proxy.rs`), a
//! loopback TCP proxy a test can partition, and [`MeteredProxy`]
//! (`meter.rs`), which delays the server's bytes and counts the protocol's
//! messages, and can be cut off from the server for a while ([`Cut`],
//! `cut.rs`, the rule the simulator's kernel shares). A process ended by a
//! signal stops the servers it started with [`stop_every_server`]
//! (`live.rs`); one killed outright leaves them to the next start anywhere,
//! which stops and removes the servers whose owner process is gone
//! (`reap.rs`, [`reap_orphaned_servers`]). Tests that need a database
//! start their own; none is skipped because the server binaries are
//! missing.

mod cut;
mod live;
mod meter;
mod proxy;
mod reap;
mod tools;

pub use cut::{Cut, MAX_RTO_MS, SEGMENT_FIRST_RTO_MS, SYN_FIRST_RTO_MS, held_until_heal_ms};
pub use live::stop_every_server;
pub use meter::{MeteredProxy, Traffic};
pub use proxy::Proxy;

/// Stops and removes the throwaway servers in the temporary folder whose
/// owner process is gone (see `reap.rs`); every [`TempServer`] start does
/// this first. Returns the folders removed.
pub fn reap_orphaned_servers() -> Vec<PathBuf> {
    reap_orphaned_servers_in(&std::env::temp_dir())
}

/// [`reap_orphaned_servers`] in `parent` rather than the temporary folder.
pub fn reap_orphaned_servers_in(parent: &Path) -> Vec<PathBuf> {
    let Some(bin) = search_bin_dir() else {
        // No server could have been started here without the binaries.
        return Vec::new();
    };
    let run_as = server_user().unwrap_or_default();
    reap::reap_in(parent, &bin, run_as.as_deref())
}

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use retention_worker::pg::{PgOptions, Pool, connect_pool, migrate};
use tools::{INSTALL_HINT, run_tool};

/// What every throwaway server logs, and how: each line starts
/// `EPOCH_MS|PID|SQLSTATE|DATABASE|APPLICATION|`; connections and their
/// ends are logged, and a lock wait once it passes `deadlock_timeout`
/// (10 ms here, so that short waits show).
pub const SERVER_LOG_SETTINGS: &str = "
log_line_prefix = '%n|%p|%e|%d|%a|'
log_connections = on
log_disconnections = on
log_lock_waits = on
deadlock_timeout = '10ms'
log_statement = 'all'
";

/// A new temporary folder only its owner can enter, named `PREFIX` and
/// random characters (no guessable name another user could put a link
/// at first); removed when the value is dropped.
pub fn private_dir(prefix: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .expect("create a temporary folder")
}

/// A test's own [`private_dir`], removed when dropped unless the thread is
/// panicking: a failing test leaves its files to read, a passing one
/// leaves nothing.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// A new private folder named `PREFIX` and random characters.
    pub fn new(prefix: &str) -> Self {
        Self(private_dir(prefix).keep())
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for ScratchDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            // A folder that cannot be removed is litter, not a failure.
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A running server; dropping it stops the server and removes its files.
pub struct TempServer {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    /// As root, the server runs as this user (initdb refuses root).
    run_as: Option<String>,
}

impl TempServer {
    /// Starts a fresh server (installing Debian's package if the binaries
    /// are missing), or panics saying what is missing and how to install
    /// it. Never skips.
    pub fn start() -> Self {
        Self::launch(find_bin_dir()).unwrap_or_else(|problem| panic!("{problem}"))
    }

    /// Starts a fresh server with the binaries already installed, for a
    /// command line that must not install packages behind its user's back:
    /// an error names what is missing and the command that installs it.
    pub fn start_installed() -> Result<Self, String> {
        let bin = search_bin_dir().ok_or_else(|| {
            format!("PostgreSQL's server binaries were not found: {INSTALL_HINT}")
        })?;
        Self::launch(bin)
    }

    fn launch(bin: PathBuf) -> Result<Self, String> {
        let run_as = server_user()?;
        // Servers a killed process left running are stopped here: nothing
        // else would.
        reap::reap_in(&std::env::temp_dir(), &bin, run_as.as_deref());
        // A signal handler stopping every server waits until this one has
        // started (or failed to), so it is never left half made.
        let _starting = live::starting();
        // A fresh folder of a name nobody can guess or plant a link at;
        // the server's drop removes it, or a signal handler does.
        let dir = private_dir(reap::SERVER_DIR_PREFIX).keep();
        reap::claim(&dir).map_err(|e| format!("mark the server's folder as ours: {e}"))?;
        let mut server = Self {
            dir,
            bin,
            port: 0,
            run_as,
        };
        live::register(server.files());
        if let Some(user) = &server.run_as {
            let uid = command_output("id", &["-u", user]).parse().expect("a uid");
            let gid = command_output("id", &["-g", user]).parse().expect("a gid");
            std::os::unix::fs::chown(&server.dir, Some(uid), Some(gid))
                .expect("hand the temporary folder to the postgres user");
        }
        let data = server.dir.join("data");
        server.run(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "-N",
            ],
        );
        // Each log line says when (Unix epoch, ms), which backend, the
        // SQLSTATE, the database and the client's application name, so a
        // test can read what the server did on its own (real mode's
        // server events). Written to the file, not the command line: `-o`
        // goes through a shell.
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .map_err(|e| format!("open postgresql.conf: {e}"))?;
        std::io::Write::write_all(&mut conf, SERVER_LOG_SETTINGS.as_bytes())
            .map_err(|e| format!("write postgresql.conf: {e}"))?;
        // A free port can be taken between our probe and the server's bind:
        // try a few.
        let mut last_error = String::new();
        for _ in 0..5 {
            server.port = free_port();
            let options = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
                 -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                server.port,
                path_str(&server.dir)
            );
            let log = server.dir.join("server.log");
            let started = server.try_run(
                "pg_ctl",
                &[
                    "-D",
                    path_str(&data),
                    "-l",
                    path_str(&log),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    &options,
                    "start",
                ],
            );
            match started {
                Ok(()) => return Ok(server),
                Err(error) => {
                    let tail = std::fs::read_to_string(&log).unwrap_or_default();
                    last_error = format!("{error}\nserver log:\n{tail}");
                }
            }
        }
        Err(format!("PostgreSQL did not start: {last_error}"))
    }

    /// The server's log ([`SERVER_LOG_SETTINGS`] says its format).
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A URL for database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates database `name`, applies the shipped migrations, and returns a
    /// pool of `pool_size` connections to it.
    pub async fn database(&self, name: &str, pool_size: usize) -> Pool {
        self.admin(&format!("CREATE DATABASE {name}"), "create a test database")
            .await;
        let pool = connect_pool(&self.url(name), pool_size, &PgOptions::default()).expect("pool");
        migrate(&pool).await.expect("migrate a fresh database");
        pool
    }

    /// Another pool to database `name` (created already), whose sessions
    /// carry `options`' server-side bounds (`statement_timeout`,
    /// `lock_timeout`, `idle_in_transaction_session_timeout`), as the
    /// runner's do.
    pub fn pool(&self, name: &str, pool_size: usize, options: &PgOptions) -> Pool {
        connect_pool(&self.url(name), pool_size, options).expect("pool")
    }

    /// As [`TempServer::pool`], through a proxy listening on loopback
    /// `port` that forwards to this server, its sessions named `client` in
    /// the server's log (`application_name`).
    pub fn pool_via(
        &self,
        port: u16,
        name: &str,
        client: &str,
        pool_size: usize,
        options: &PgOptions,
    ) -> Pool {
        let url = format!("postgres://postgres@127.0.0.1:{port}/{name}?application_name={client}");
        connect_pool(&url, pool_size, options).expect("pool")
    }

    /// From now on TCP connections must authenticate as production's do:
    /// SCRAM-SHA-256 (PostgreSQL's default since 14), as role `user` with
    /// `password`, created here. Returns a URL for database `name` with
    /// those credentials.
    pub async fn require_passwords(&self, name: &str, user: &str, password: &str) -> String {
        let role = format!(
            "SET password_encryption = 'scram-sha-256'; \
             CREATE ROLE {user} LOGIN SUPERUSER PASSWORD '{password}'"
        );
        self.admin(&role, "create a role with a password").await;
        let hba = self.dir.join("data").join("pg_hba.conf");
        std::fs::write(
            &hba,
            "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n",
        )
        .expect("write pg_hba.conf");
        let data = self.dir.join("data");
        self.run("pg_ctl", &["-D", path_str(&data), "reload"]);
        // A reload is asynchronous: wait until the server asks for passwords.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let pool = connect_pool(&self.url("postgres"), 1, &PgOptions::default()).expect("pool");
            if pool.get().await.is_err() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "pg_hba.conf not reloaded"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        format!(
            "postgres://{user}:{password}@127.0.0.1:{}/{name}",
            self.port
        )
    }

    /// Runs `sql` as the superuser on the `postgres` database; `what` names
    /// it if it fails.
    async fn admin(&self, sql: &str, what: &str) {
        let admin =
            connect_pool(&self.url("postgres"), 1, &PgOptions::default()).expect("admin pool");
        admin
            .get()
            .await
            .expect("connect to the test server")
            .batch_execute(sql)
            .await
            .unwrap_or_else(|error| panic!("{what}: {error}"));
    }

    fn run(&self, tool: &str, args: &[&str]) {
        if let Err(error) = self.try_run(tool, args) {
            panic!("{error}");
        }
    }

    fn try_run(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        run_tool(&self.bin, self.run_as.as_deref(), &self.dir, tool, args)
    }

    /// What stopping this server needs, apart from the value itself.
    fn files(&self) -> live::ServerFiles {
        live::ServerFiles {
            dir: self.dir.clone(),
            bin: self.bin.clone(),
            run_as: self.run_as.clone(),
        }
    }
}

/// Writes `count` rows created at 1..=count ms since the epoch: all far
/// older than any retention.
pub async fn insert_old_rows(pool: &Pool, count: i64) {
    pool.get()
        .await
        .expect("a connection")
        .execute(
            "INSERT INTO retention_records (created_at_ms)
             SELECT g FROM generate_series(1, $1::bigint) g",
            &[&count],
        )
        .await
        .expect("insert rows");
}

/// Rows left in `retention_records`.
pub async fn rows_left(pool: &Pool) -> i64 {
    let client = pool.get().await.expect("a connection");
    client
        .query_one("SELECT count(*) FROM retention_records", &[])
        .await
        .expect("count the rows")
        .get(0)
}

impl Drop for TempServer {
    fn drop(&mut self) {
        self.files().stop_and_remove();
        live::forget(&self.dir);
    }
}

/// The user the server runs as: `postgres` when this process is root
/// (initdb refuses root), else this process's own.
fn server_user() -> Result<Option<String>, String> {
    if command_output("id", &["-u"]) != "0" {
        return Ok(None);
    }
    let has_user = Command::new("id")
        .arg("-u")
        .arg("postgres")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_user {
        return Err(format!(
            "running as root, PostgreSQL needs an unprivileged user and there is no \
             `postgres` user: {INSTALL_HINT}"
        ));
    }
    Ok(Some("postgres".to_owned()))
}

/// The server binaries; on a machine without them, installs Debian's
/// `postgresql` package once (as root, or through passwordless sudo), so the
/// README's test command passes on a fresh machine. Fails loudly otherwise.
fn find_bin_dir() -> PathBuf {
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    if let Some(dir) = search_bin_dir() {
        return dir;
    }
    let _one_at_a_time = INSTALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(dir) = search_bin_dir() {
        return dir;
    }
    eprintln!("PostgreSQL server binaries not found: installing Debian's postgresql package");
    let as_root: &[&str] = if command_output("id", &["-u"]) == "0" {
        &[]
    } else {
        &["sudo", "-n"]
    };
    let apt = |args: &[&str]| {
        let mut command = Command::new(as_root.first().copied().unwrap_or("apt-get"));
        command.args(as_root.iter().skip(1));
        if !as_root.is_empty() {
            command.arg("apt-get");
        }
        command
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|status| status.success())
    };
    let installed = apt(&["update", "-qq"]) && apt(&["install", "-y", "-qq", "postgresql"]);
    match search_bin_dir() {
        Some(dir) => dir,
        None => panic!(
            "PostgreSQL server binaries not found and installing them {}: {INSTALL_HINT}",
            if installed {
                "did not provide them"
            } else {
                "failed"
            }
        ),
    }
}

/// `PG_BIN_DIR`, then Debian's versioned folders (newest first), then PATH.
fn search_bin_dir() -> Option<PathBuf> {
    let has_tools = |dir: &Path| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|t| dir.join(t).is_file())
    };
    if let Some(dir) = std::env::var_os("PG_BIN_DIR") {
        let dir = PathBuf::from(dir);
        assert!(
            has_tools(&dir),
            "PG_BIN_DIR={} lacks initdb, pg_ctl or postgres",
            dir.display()
        );
        return Some(dir);
    }
    let mut candidates: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    candidates.sort();
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    candidates
        .into_iter()
        .rev()
        .map(|(_, dir)| dir)
        .chain(on_path)
        .find(|dir| has_tools(dir))
}

fn free_port() -> u16 {
    let probe = TcpListener::bind("127.0.0.1:0").expect("bind a probe socket");
    probe.local_addr().expect("probe address").port()
}

fn command_output(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}
