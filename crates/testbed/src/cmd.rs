//! Running helper commands (`ip`, `bridge`, `ovs-vsctl`, `sysctl`) and waiting for conditions.
//!
//! [`run`] runs a command to completion and turns a non-zero exit into an [`Error::Command`] that
//! quotes the command line and its stderr; [`wait_for`] polls a condition until a deadline, and
//! gives up early when a stop was requested (see [`crate::signal`]).

use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::signal;

/// Renders a program and its arguments the way a shell user would type them.
pub fn render(program: &str, args: &[&str]) -> String {
    let mut s = program.to_string();
    for a in args {
        s.push(' ');
        if a.is_empty() || a.contains(char::is_whitespace) {
            s.push('\'');
            s.push_str(a);
            s.push('\'');
        } else {
            s.push_str(a);
        }
    }
    s
}

/// Runs `program args...` to completion; returns its stdout. Fails with the command line and
/// stderr when it cannot be started or exits non-zero.
pub fn run(program: &str, args: &[&str]) -> Result<String> {
    run_env(program, args, &[])
}

/// [`run`] with extra environment variables.
pub fn run_env(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<String> {
    let command = render(program, args);
    tracing::debug!(%command, "run");
    let out = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .map_err(|source| Error::Spawn {
            command: command.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(Error::Command {
            command,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a command and ignores its failure (teardown paths: the resource may already be gone).
/// Returns whether it succeeded.
pub fn run_quiet(program: &str, args: &[&str]) -> bool {
    match run(program, args) {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!("ignored during cleanup: {e}");
            false
        }
    }
}

/// Polls `cond` every few milliseconds until it returns true or `timeout` passes. `what` names the
/// condition in the timeout error ("socket /run/x.sock to appear"). Returns [`Error::Stopped`] as
/// soon as a stop was requested.
pub fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) -> Result<()> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        if cond() {
            return Ok(());
        }
        if signal::stop_requested() {
            return Err(Error::Stopped);
        }
        if start.elapsed() >= timeout {
            return Err(Error::Timeout {
                what: what.to_string(),
                timeout,
            });
        }
        thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Like [`wait_for`], for conditions that can fail hard (a process died while we waited): the
/// closure returns `Ok(true)` when done, `Ok(false)` to keep waiting, `Err` to give up now.
pub fn wait_for_result(
    what: &str,
    timeout: Duration,
    mut cond: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let mut failure = None;
    let r = wait_for(what, timeout, || match cond() {
        Ok(done) => done,
        Err(e) => {
            failure = Some(e);
            true
        }
    });
    match failure {
        Some(e) => Err(e),
        None => r,
    }
}

/// Whether `program` can be found on `PATH` (used to explain missing peers up front).
pub fn have(program: &str) -> bool {
    if program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_reports_command_and_stderr() {
        let e = run("sh", &["-c", "echo oops >&2; exit 3"]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("sh -c"), "{msg}");
        assert!(msg.contains("oops"), "{msg}");
        assert!(msg.contains('3'), "{msg}");
    }

    #[test]
    fn run_returns_stdout() {
        assert_eq!(run("echo", &["hello"]).unwrap(), "hello\n");
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let e = run("/nonexistent/vecswitch-nope", &[]).unwrap_err();
        assert!(matches!(e, Error::Spawn { .. }), "{e}");
    }

    #[test]
    fn wait_for_times_out_and_names_the_condition() {
        let e = wait_for("the moon to turn blue", Duration::from_millis(30), || false).unwrap_err();
        assert!(e.to_string().contains("the moon to turn blue"), "{e}");
        let mut n = 0;
        wait_for("three polls", Duration::from_secs(5), || {
            n += 1;
            n >= 3
        })
        .unwrap();
        assert_eq!(n, 3);
    }

    #[test]
    fn wait_for_result_propagates_hard_failure() {
        let e = wait_for_result("x", Duration::from_secs(5), || Err(Error::Stopped)).unwrap_err();
        assert!(matches!(e, Error::Stopped));
    }

    #[test]
    fn have_finds_sh() {
        assert!(have("sh"));
        assert!(!have("vecswitch-surely-not-a-program"));
    }
}
