//! A `vecswitch run` process for end-to-end tests of the binary: started with a config and a
//! control socket, waited for until the socket answers, killed on drop (also when the test
//! panics); `ctl` and `json` run `vecswitch ctl` against it. Its stderr goes to `<socket>.stderr`
//! (a file, so that a chatty switch never blocks on a full pipe) and is quoted when it exits early. The binary's path comes from the
//! test (`env!("CARGO_BIN_EXE_vecswitch")`), since only the cli crate's tests know it.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
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

    /// Stops the switch now (kill and reap).
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
