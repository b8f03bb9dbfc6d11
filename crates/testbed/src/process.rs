//! Child processes (DUTs, VNFs, OVS daemons) with logs, core placement and guaranteed cleanup.
//!
//! [`ProcessSpec`] says what to run, in which namespace (`ip netns exec`) and on which CPUs
//! (`taskset -c`); both wrappers `exec` the next program, so the pid we hold is the real process.
//! [`ChildGuard::spawn`] starts it in its own process group with stdout and stderr appended to
//! `<run dir>/<name>.log`, and registers the group for the abort path ([`crate::signal`]).
//! Stopping ([`ChildGuard::stop`], also on `Drop`) closes its stdin (testpmd exits cleanly and
//! prints its statistics on end of input), then sends SIGTERM to the group, then SIGKILL, and
//! always reaps it.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::cmd::{render, wait_for_result};
use crate::error::{Error, Result};
use crate::signal;

/// What to run and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSpec {
    /// Short name: log file name and the name in placement records (`dut`, `vnf`, `ovs-vswitchd`).
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    /// Network namespace to run in, if any.
    pub netns: Option<String>,
    /// CPUs to pin the process (and all its threads) to, if any.
    pub cpus: Option<Vec<usize>>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Give the process a pipe as stdin that stays open until it is stopped (testpmd's
    /// non-interactive mode exits at end of input).
    pub stdin_pipe: bool,
}

impl ProcessSpec {
    pub fn new(name: &str, program: &str) -> ProcessSpec {
        ProcessSpec {
            name: name.to_string(),
            program: program.to_string(),
            args: Vec::new(),
            netns: None,
            cpus: None,
            env: Vec::new(),
            stdin_pipe: false,
        }
    }

    pub fn arg(mut self, a: impl Into<String>) -> Self {
        self.args.push(a.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn netns(mut self, ns: Option<&str>) -> Self {
        self.netns = ns.map(str::to_string);
        self
    }

    pub fn cpus(mut self, cpus: Option<Vec<usize>>) -> Self {
        self.cpus = cpus;
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.to_string(), v.to_string()));
        self
    }

    pub fn stdin_pipe(mut self, yes: bool) -> Self {
        self.stdin_pipe = yes;
        self
    }

    /// The full command line, wrappers included.
    pub fn argv(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(cpus) = &self.cpus {
            v.push("taskset".to_string());
            v.push("-c".to_string());
            v.push(cpu_list(cpus));
        }
        if let Some(ns) = &self.netns {
            v.extend(["ip", "netns", "exec"].map(String::from));
            v.push(ns.clone());
        }
        v.push(self.program.clone());
        v.extend(self.args.iter().cloned());
        v
    }
}

/// `[0, 1, 3]` → `"0,1,3"` (taskset / DPDK `-l` syntax).
pub fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A running child process; stopped and reaped on `Drop`.
#[derive(Debug)]
pub struct ChildGuard {
    name: String,
    command: String,
    child: Child,
    stdin: Option<ChildStdin>,
    /// [`ChildGuard::ask_to_stop`] closed stdin already: [`ChildGuard::stop`] still gives the
    /// process its grace to exit on it.
    asked: bool,
    log: PathBuf,
    exit: Option<ExitStatus>,
}

impl ChildGuard {
    /// Starts `spec`, logging to `<log_dir>/<name>.log`.
    pub fn spawn(spec: &ProcessSpec, log_dir: &Path) -> Result<ChildGuard> {
        let argv = spec.argv();
        let argv_ref: Vec<&str> = argv.iter().map(String::as_str).collect();
        let command = render(argv_ref[0], &argv_ref[1..]);
        let log = log_dir.join(format!("{}.log", spec.name));
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|source| Error::Io {
                what: "opening log",
                path: log.clone(),
                source,
            })?;
        let err = out.try_clone().map_err(|source| Error::Io {
            what: "opening log",
            path: log.clone(),
            source,
        })?;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .stdin(if spec.stdin_pipe {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .process_group(0);
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
        tracing::info!(%command, log = %log.display(), "spawn");
        let mut child = cmd.spawn().map_err(|source| Error::Spawn {
            command: command.clone(),
            source,
        })?;
        signal::register_process_group(child.id() as i32);
        signal::break_kernel_livelocks();
        let stdin = child.stdin.take();
        Ok(ChildGuard {
            name: spec.name.clone(),
            command,
            child,
            stdin,
            asked: false,
            log,
            exit: None,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The command line it was started with.
    pub fn command(&self) -> &str {
        &self.command
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The log's contents so far (lossy UTF-8).
    pub fn log(&self) -> String {
        let mut s = Vec::new();
        if let Ok(mut f) = File::open(&self.log) {
            let _ = f.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    }

    /// Whether the process is still running (reaps it if it exited).
    pub fn is_running(&mut self) -> bool {
        if self.exit.is_some() {
            return false;
        }
        match self.child.try_wait() {
            Ok(Some(st)) => {
                self.exit = Some(st);
                signal::unregister_process_group(self.child.id() as i32);
                false
            }
            Ok(None) => true,
            Err(_) => false,
        }
    }

    /// `Ok` while running; [`Error::Exited`] (naming the log) once it has exited.
    pub fn check_alive(&mut self) -> Result<()> {
        if self.is_running() {
            return Ok(());
        }
        Err(Error::Exited {
            name: self.name.clone(),
            status: self
                .exit
                .map(|s| s.to_string())
                .unwrap_or_else(|| "unknown status".into()),
            log: self.log.clone(),
        })
    }

    /// Waits until `path` exists (a socket the process creates), failing early if it exits.
    pub fn wait_for_path(&mut self, path: &Path, timeout: Duration) -> Result<()> {
        let what = format!("{} to create {}", self.name, path.display());
        wait_for_result(&what, timeout, || {
            self.check_alive()?;
            Ok(path.exists())
        })
    }

    /// Waits until the log contains `needle`, failing early if the process exits.
    pub fn wait_for_log(&mut self, needle: &str, timeout: Duration) -> Result<()> {
        let what = format!("{} to log {needle:?}", self.name);
        wait_for_result(&what, timeout, || {
            let found = self.log().contains(needle);
            if found {
                return Ok(true);
            }
            self.check_alive()?;
            Ok(false)
        })
    }

    /// CPUs the process's threads may run on, from `/proc/<pid>/task/*/status`
    /// (`Cpus_allowed_list`), deduplicated; empty if it is gone.
    pub fn cpus_allowed(&self) -> Vec<String> {
        cpus_allowed_of(self.pid())
    }

    /// Writes `text` to the process's stdin pipe (a command to an interactive program such as
    /// `testpmd -i`). Fails if it was started without [`ProcessSpec::stdin_pipe`] or exited.
    pub fn write_stdin(&mut self, text: &str) -> Result<()> {
        use std::io::Write as _;
        let log = self.log.clone();
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Error::Invalid {
                field: "process stdin",
                value: self.name.clone(),
                expected: "a process started with stdin_pipe(true) that is still running".into(),
            });
        };
        stdin
            .write_all(text.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|source| Error::Io {
                what: "writing to the stdin of the process logging to",
                path: log,
                source,
            })
    }

    /// Starts the process's way out without waiting: closes its stdin, or, without one, sends
    /// SIGTERM to its group. [`crate::Testbed::stop`] asks every VNF before it reaps the first:
    /// a busy-polling VNF left running beside one being reaped can starve the per-CPU kernel
    /// work the reaping waits for (docs/TESTBED.md, "Stopping VNFs").
    pub fn ask_to_stop(&mut self) {
        if self.exit.is_some() || self.asked {
            return;
        }
        self.asked = true;
        if self.stdin.take().is_none() {
            let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM);
        }
    }

    /// Stops the process: closes stdin and waits up to `grace`, then SIGTERM to its group and
    /// waits up to `grace`, then SIGKILL. Always reaps. Returns the exit status.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Some(st) = self.exit {
            return Some(st);
        }
        let pgid = Pid::from_raw(self.child.id() as i32);
        if self.stdin.take().is_some() || std::mem::take(&mut self.asked) {
            // Dropping the pipe's write end is end-of-input for the child.
            if let Some(st) = self.wait_timeout(grace) {
                return Some(st);
            }
        }
        let _ = killpg(pgid, Signal::SIGTERM);
        if let Some(st) = self.wait_timeout(grace) {
            let _ = killpg(pgid, Signal::SIGKILL); // stragglers the leader forked
            return Some(st);
        }
        let _ = killpg(pgid, Signal::SIGKILL);
        let st = self.child.wait().ok();
        self.exit = st;
        signal::unregister_process_group(pgid.as_raw());
        st
    }

    fn wait_timeout(&mut self, t: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        loop {
            if !self.is_running() {
                return self.exit;
            }
            if start.elapsed() >= t {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
    }
}

/// CPUs the threads of `pid` may run on (deduplicated `Cpus_allowed_list` values).
pub fn cpus_allowed_of(pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let Ok(status) = std::fs::read_to_string(t.path().join("status")) else {
            continue;
        };
        if let Some(l) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        {
            let l = l.trim().to_string();
            if !out.contains(&l) {
                out.push(l);
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run directory for one test's logs (removed on drop, kept if the test panics).
    fn tmp() -> crate::rundir::RunDir {
        crate::rundir::RunDir::create().unwrap()
    }

    #[test]
    fn argv_wraps_taskset_then_netns() {
        let s = ProcessSpec::new("dut", "vecswitch")
            .args(["run", "--config", "x.toml"])
            .netns(Some("vtb1-0-dut"))
            .cpus(Some(vec![1]));
        assert_eq!(
            s.argv(),
            [
                "taskset",
                "-c",
                "1",
                "ip",
                "netns",
                "exec",
                "vtb1-0-dut",
                "vecswitch",
                "run",
                "--config",
                "x.toml"
            ]
        );
    }

    #[test]
    fn guard_kills_on_drop_and_logs_output() {
        let dir = tmp();
        let spec = ProcessSpec::new("sleeper", "sh").args(["-c", "echo started; exec sleep 600"]);
        let mut g = ChildGuard::spawn(&spec, dir.path()).unwrap();
        g.wait_for_log("started", Duration::from_secs(10)).unwrap();
        let pid = g.pid();
        assert!(g.is_running());
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        drop(g);
        // Reaped, so the pid is gone (or reused by an unrelated process, which would not be a
        // zombie of ours: check it is not our `sleep`).
        let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(
            !cmdline.contains("sleep"),
            "process {pid} still alive: {cmdline}"
        );
    }

    #[test]
    fn stdin_pipe_close_ends_a_reader() {
        let dir = tmp();
        let spec = ProcessSpec::new("reader", "sh")
            .args(["-c", "read x; echo got-eof"])
            .stdin_pipe(true);
        let mut g = ChildGuard::spawn(&spec, dir.path()).unwrap();
        let st = g.stop(Duration::from_secs(5)).unwrap();
        assert!(st.success(), "{st}");
        assert!(g.log().contains("got-eof"));
    }

    #[test]
    fn early_exit_is_reported_with_log_path() {
        let dir = tmp();
        let spec = ProcessSpec::new("quitter", "sh").args(["-c", "exit 7"]);
        let mut g = ChildGuard::spawn(&spec, dir.path()).unwrap();
        let e = g
            .wait_for_path(&dir.file("never.sock"), Duration::from_secs(10))
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("quitter") && msg.contains("quitter.log"),
            "{msg}"
        );
    }

    #[test]
    fn taskset_pins_the_process() {
        let dir = tmp();
        let spec = ProcessSpec::new("pinned", "sleep")
            .arg("600")
            .cpus(Some(vec![0]));
        let mut g = ChildGuard::spawn(&spec, dir.path()).unwrap();
        wait_for_result("sleep to be exec'd", Duration::from_secs(5), || {
            Ok(std::fs::read_to_string(format!("/proc/{}/comm", g.pid()))
                .is_ok_and(|c| c.trim() == "sleep"))
        })
        .unwrap();
        assert_eq!(g.cpus_allowed(), vec!["0".to_string()]);
        g.stop(Duration::from_secs(1));
        assert!(!g.is_running());
    }
}
