//! A `vecswitch run` process for end-to-end tests of the binary: started with a config and a
//! control socket, waited for until the socket answers, killed on drop (also when the test
//! panics); `ctl` and `json` run `vecswitch ctl` against it. Its stderr goes to `<socket>.stderr`
//! (a file, so that a chatty switch never blocks on a full pipe) and is quoted when it exits early. The binary's path comes from the
//! test (`env!("CARGO_BIN_EXE_vecswitch")`), since only the cli crate's tests know it.
//! Besides `ctl`/`json`: `ok`/`fails` (a command that must succeed / fail), `port` (one port's
//! `show ports` entry), `terminate` (SIGTERM, the exit status and stderr) and `stop` (`kill -9`).

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running `vecswitch run --config <config> --socket <socket>`; killed on drop.
#[derive(Debug)]
pub struct RunningSwitch {
    bin: PathBuf,
    child: Option<Child>,
    socket: PathBuf,
}

impl RunningSwitch {
    /// Starts the switch and waits (up to 20 s) for its control socket; panics with its stderr
    /// if it exits first.
    pub fn start(bin: &str, config: &Path, socket: &Path) -> RunningSwitch {
        let log_path = PathBuf::from(format!("{}.stderr", socket.display()));
        let log = std::fs::File::create(&log_path)
            .unwrap_or_else(|e| panic!("create {}: {e}", log_path.display()));
        let child = Command::new(bin)
            .args(["run", "--config"])
            .arg(config)
            .arg("--socket")
            .arg(socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {bin} run: {e}"));
        let mut sw = RunningSwitch {
            bin: PathBuf::from(bin),
            child: Some(child),
            socket: socket.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(socket).is_err() {
            let child = sw.child.as_mut().expect("running");
            if let Some(st) = child.try_wait().expect("try_wait") {
                sw.child = None;
                let err = std::fs::read_to_string(&log_path).unwrap_or_default();
                panic!("vecswitch run exited with {st}: {err}");
            }
            assert!(
                Instant::now() < deadline,
                "control socket {} did not appear",
                socket.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        sw
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// `vecswitch ctl --socket <socket> <words…>` (split on white space).
    pub fn ctl(&self, words: &str) -> Output {
        Command::new(&self.bin)
            .arg("ctl")
            .arg("--socket")
            .arg(&self.socket)
            .args(words.split_whitespace())
            .output()
            .expect("run vecswitch ctl")
    }

    /// Runs a `ctl` command that must succeed; returns its stdout.
    pub fn ok(&self, words: &str) -> String {
        let out = self.ctl(words);
        assert!(
            out.status.success(),
            "`ctl {words}` failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("ctl prints UTF-8")
    }

    /// Runs a `ctl` command that must fail; returns its stderr.
    pub fn fails(&self, words: &str) -> String {
        let out = self.ctl(words);
        assert!(
            !out.status.success(),
            "`ctl {words}` should fail: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).expect("ctl prints UTF-8")
    }

    /// The `show ports` entry (JSON) of port `name`; panics if there is none.
    pub fn port(&self, name: &str) -> Value {
        self.json("show ports")
            .as_array()
            .expect("show ports is a list")
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no port {name}"))
            .clone()
    }

    /// What the switch wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        PathBuf::from(format!("{}.stderr", self.socket.display()))
    }

    /// Sends SIGTERM (with `kill`, procps) and waits up to 20 s for the exit; returns the exit
    /// status and everything the switch wrote to stderr. Panics (after a SIGKILL) if it does not
    /// exit.
    pub fn terminate(mut self) -> (ExitStatus, String) {
        let mut child = self.child.take().expect("running");
        let st = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("`kill` (procps) must be installed: scripts/setup.sh");
        assert!(st.success(), "kill -TERM {}", child.id());
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(st) = child.try_wait().expect("try_wait") {
                break st;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("vecswitch run did not exit on SIGTERM: {}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        (status, self.stderr())
    }

    /// `ctl --json <words>` → the answer's `data`; panics unless the answer is ok.
    pub fn json(&self, words: &str) -> Value {
        let out = self.ctl(&format!("--json {words}"));
        assert!(
            out.status.success(),
            "ctl {words}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("ctl {words}: not JSON ({e})"));
        assert_eq!(v["ok"], true, "ctl {words}: {v}");
        v["data"].clone()
    }

    /// Stops the switch now (SIGKILL, `kill -9`, and reap).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for RunningSwitch {
    fn drop(&mut self) {
        self.stop();
    }
}
