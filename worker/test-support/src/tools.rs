//! Running the server's own tools (initdb, pg_ctl) as the server's user,
//! and what to say when they are missing.

use std::path::Path;
use std::process::Command;

/// How to get the server's binaries, for every error that lacks them.
pub(crate) const INSTALL_HINT: &str = "install the server with `apt-get install -y postgresql` \
     (Debian/Ubuntu; .ci/run does this), or set PG_BIN_DIR to the folder holding \
     initdb, pg_ctl and postgres";

/// Runs the server tool `tool` (as the server's user, in its folder).
pub(crate) fn run_tool(
    bin: &Path,
    run_as: Option<&str>,
    dir: &Path,
    tool: &str,
    args: &[&str],
) -> Result<(), String> {
    let program = bin.join(tool);
    let mut command = match run_as {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.args(["-u", user, "--"]).arg(&program);
            c
        }
        None => Command::new(&program),
    };
    let output = command
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}; {INSTALL_HINT}", program.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{tool} {args:?} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
