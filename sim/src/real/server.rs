//! Where real runs happen: one throwaway PostgreSQL server and the
//! one-thread tokio runtime the production worker runs on, started once and
//! shared by every run of a command (each on a database of its own).

use std::future::Future;

use test_support::TempServer;

use super::run::{RealRun, run_plan};
use crate::model::RunSpec;

/// A throwaway server and the runtime that drives runs against it. One
/// thread, as in the simulator: a task runs undisturbed between its awaits,
/// so what a worker decides and what the log records about it are one
/// step; the database, a separate process, stays concurrent.
pub struct RealServer {
    server: TempServer,
    runtime: tokio::runtime::Runtime,
}

impl RealServer {
    /// Starts a server from PostgreSQL's installed binaries; the error
    /// names what is missing and the command that installs it.
    pub fn start_installed() -> Result<Self, String> {
        Self::on(TempServer::start_installed()?)
    }

    /// Starts a server, installing PostgreSQL's binaries if they are missing
    /// (the tests' way: a test starts what it needs).
    pub fn start() -> Self {
        Self::on(TempServer::start()).unwrap_or_else(|problem| panic!("{problem}"))
    }

    fn on(server: TempServer) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| format!("cannot start a tokio runtime: {error}"))?;
        Ok(Self { server, runtime })
    }

    /// Runs `spec` on a fresh database `name` and returns what it left.
    pub fn run(&self, spec: &RunSpec, name: &str) -> RealRun {
        self.runtime.block_on(run_plan(&self.server, spec, name))
    }

    /// Drives `work` on the runtime (several runs at once, say) to its end.
    pub fn block_on<T>(&self, work: impl Future<Output = T>) -> T {
        self.runtime.block_on(work)
    }

    /// The server itself.
    pub fn server(&self) -> &TempServer {
        &self.server
    }
}
