//! The testbed's error type: one variant per kind of failure site, each naming what was tried.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while building a topology or driving a DUT.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A helper command (`ip`, `ovs-vsctl`, ...) could not be started at all.
    #[error("could not start `{command}`: {source} (is the package that provides it installed? `make setup`)")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// A helper command ran and failed.
    #[error("`{command}` failed with {status}: {stderr}")]
    Command {
        command: String,
        status: String,
        stderr: String,
    },
    /// A file or directory operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A system call made through `nix` failed.
    #[error("{what}: {source}")]
    Sys {
        what: String,
        #[source]
        source: nix::Error,
    },
    /// A condition awaited with [`crate::wait_for`] did not become true in time.
    #[error("timed out after {timeout:?} waiting for {what}")]
    Timeout { what: String, timeout: Duration },
    /// A child process exited while it was expected to keep running.
    #[error("process `{name}` exited early with {status}; see its log {log}")]
    Exited {
        name: String,
        status: String,
        log: PathBuf,
    },
    /// The DUT cannot be set up on this topology (or at all on this machine); the message says why.
    #[error("DUT `{dut}` does not support {what}: {why}")]
    Unsupported {
        dut: String,
        what: String,
        why: String,
    },
    /// A caller-supplied value is not acceptable.
    #[error("invalid {field} `{value}`: expected {expected}")]
    Invalid {
        field: &'static str,
        value: String,
        expected: String,
    },
    /// A vecswitch config file the switch's own parser refused (`vecswitch_control::config`).
    #[error("reading vecswitch config {path}: {source}")]
    Config {
        path: PathBuf,
        #[source]
        source: vecswitch_control::config::ParseError,
    },
    /// A generator port could not be opened.
    #[error("opening generator port {port}: {source}")]
    Port {
        port: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A stop was requested (Ctrl-C / SIGTERM) while waiting; the caller should unwind and clean up.
    #[error("stop requested (signal received); tearing down")]
    Stopped,
}

/// Short alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
