//! Every subcommand with its output going nowhere: stdout into a pipe whose
//! reader has gone (`| head -1`), stdout or stderr on a full disk
//! (`/dev/full`). None may panic (exit 101) or exit 0 with its output lost:
//! a closed pipe gives 141 (128 + SIGPIPE), a failed write 74 and a line
//! that says so when stderr still works; a refusal keeps its 2, as
//! `retention-worker`'s does.

use std::fs::File;
use std::process::{Command, Stdio};

use super::cli::{refused, sim};

/// `sim` with `args`, stdout and stderr as given; its status and stderr.
fn sim_into(args: &[&str], stdout: Stdio, stderr: Stdio) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .stdout(stdout)
        .stderr(stderr)
        .output()
        .expect("run sim");
    let code = output.status.code().expect("an exit status, not a signal");
    (code, String::from_utf8_lossy(&output.stderr).into_owned())
}

/// `sim` with `args`, its stdout a stream nobody reads: the reading end
/// is closed before the command starts (a pipe's reader dropped after the
/// spawn could still lose the race to a quick command's first write).
fn sim_into_closed_pipe(args: &[&str]) -> (i32, String) {
    sim_into(args, closed_pipe(), Stdio::piped())
}

/// A stream whose reader is gone before the command starts.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
    drop(reader);
    Stdio::from(std::os::fd::OwnedFd::from(writer))
}

fn full() -> Stdio {
    Stdio::from(
        File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full"),
    )
}

#[test]
fn no_subcommand_panics_or_hides_an_output_it_could_not_write() {
    let dir = test_support::ScratchDir::new("sim-streams-");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    // Inputs for the commands that read files.
    let (code, _, err) = sim(&["run", "--seed", "3", "--jsonl", &path("h.jsonl"), "--force"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = sim(&[
        "explore",
        "--seeds",
        "3",
        "-q",
        "--summary",
        &path("s.json"),
        "--force",
    ]);
    assert_eq!(code, 0, "{err}");
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/stop-is-terminal.toml"
    );
    let (history, summary) = (path("h.jsonl"), path("s.json"));
    let commands: Vec<Vec<&str>> = vec![
        vec!["run", "--seed", "1"],
        vec!["replay", r#"{"seed":1}"#],
        vec!["shrink", crate::replay::STALE_RELEASE, "--budget", "3"],
        vec!["scenario", scenario],
        vec!["explore", "--seeds", "3", "--json", "-q"],
        vec!["merge", &summary],
        vec![
            "bench",
            "--rounds",
            "1",
            "--runs-per-round",
            "2",
            "--streams",
            "1",
            "--memory-runs",
            "1000",
        ],
        vec!["takeover", "--runs", "2", "--real-runs", "0"],
        vec!["check", &history],
        vec!["--version"],
        vec!["--help"],
    ];
    for args in &commands {
        let (code, err) = sim_into_closed_pipe(args);
        assert_eq!(code, 141, "{args:?} into a closed pipe: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // stderr's reader gone too is still a closed pipe, not a failed
        // write (bench and replay said 74).
        let (code, _) = sim_into(args, closed_pipe(), closed_pipe());
        assert_eq!(code, 141, "{args:?} with both streams into closed pipes");
        let (code, err) = sim_into(args, full(), Stdio::piped());
        assert_eq!(code, 74, "{args:?} onto a full disk: {err}");
        assert!(err.contains("cannot write the output"), "{args:?}: {err}");
        let (code, _) = sim_into(args, Stdio::null(), full());
        assert_ne!(code, 101, "{args:?} with stderr on a full disk");
        if writes_stderr(args) {
            assert_eq!(code, 74, "{args:?} with stderr on a full disk");
        }
    }
    // A refusal whose message cannot be written keeps its status, as
    // retention-worker's does: its cause outranks its message's fate.
    for args in [
        vec!["run", "--seed", "x"],
        vec!["check", "/no/such/file"],
        vec!["replay", "{"],
    ] {
        let (code, _) = sim_into(&args, Stdio::null(), full());
        assert_eq!(code, 2, "{args:?} with stderr on a full disk");
    }
}

/// Whether the command writes to stderr on success (its stages).
fn writes_stderr(args: &[&str]) -> bool {
    args.first() == Some(&"bench")
}

/// Colour as cargo and ripgrep do it: `--color always` paints a violation
/// red even into a pipe, `never` and the default into a pipe do not.
#[test]
fn colour_only_when_asked_for_or_on_a_terminal() {
    let token = crate::replay::STALE_RELEASE;
    let (code, out, _) = sim(&["replay", token, "--color", "always"]);
    assert_eq!(code, 1);
    assert!(out.contains("\u{1b}[31m"), "no red in:\n{out}");
    let painted = out
        .lines()
        .find(|l| l.contains("VIOLATED"))
        .expect("a violation");
    assert!(
        painted.starts_with("\u{1b}[31m") && painted.ends_with("\u{1b}[0m"),
        "{painted:?}"
    );
    for args in [
        vec!["replay", token, "--color", "never"],
        vec!["replay", token],
    ] {
        let (_, out, _) = sim(&args);
        assert!(!out.contains('\u{1b}'), "{args:?} painted a pipe");
    }
    refused(&["replay", token, "--color", "sometimes"], "sometimes");
}

/// On a terminal (a pseudo-terminal from util-linux's `script`), `auto`
/// colours unless `NO_COLOR` is set to something (no-color.org: an empty
/// one does not count; it used to turn colour off) or `TERM` is `dumb`
/// (which was coloured).
#[test]
fn colour_on_a_terminal_follows_no_color_and_term() {
    let token = crate::replay::STALE_RELEASE;
    let command = format!("{} replay '{token}'", env!("CARGO_BIN_EXE_sim"));
    let painted = |env: &[(&str, &str)]| {
        let output = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env_remove("NO_COLOR")
            .env("TERM", "xterm")
            .envs(env.iter().copied())
            .output()
            .expect("util-linux's script (Debian's bsdutils) runs the command on a terminal");
        String::from_utf8_lossy(&output.stdout).contains("\u{1b}[31m")
    };
    assert!(painted(&[]), "no colour on a terminal");
    assert!(
        painted(&[("NO_COLOR", "")]),
        "an empty NO_COLOR turned colour off"
    );
    assert!(!painted(&[("NO_COLOR", "1")]), "NO_COLOR=1 coloured");
    assert!(!painted(&[("TERM", "dumb")]), "TERM=dumb coloured");
}
