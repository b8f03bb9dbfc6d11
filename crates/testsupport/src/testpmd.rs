//! Driving DPDK's `dpdk-testpmd` from interop tests (memif and virtio-user): testpmd runs
//! interactively (`-i`) under `stdbuf -oL`, driven through its stdin, its output collected line by
//! line; the [`TestPmd`] guard quits or kills it and removes its runtime dir even when a test
//! fails. [`serial`] runs such tests one at a time (testpmd takes 1 GiB and both cores).
//!
//! EAL arguments are the ones this machine needs (docs/TESTBED.md, shared DESIGN.md pitfalls):
//! `--no-huge -m 1024 --no-pci --iova-mode=va`, a unique `--file-prefix`, and
//! `--total-num-mbufs=32768`. A vhost-user peer (virtio-user) also needs `--single-file-segments`
//! so that its memory reaches the backend as one memfd ([`TestPmd::virtio_user`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::tool::require;

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the process-wide testpmd lock: tests that start testpmd run one at a time.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `dpdk-testpmd`'s path; panics naming the packages when it is missing.
pub fn testpmd_path() -> std::path::PathBuf {
    require("dpdk-testpmd")
}

/// A running testpmd; told to quit, then killed, and its runtime dir removed on drop.
#[derive(Debug)]
pub struct TestPmd {
    child: Child,
    stdin: Commander,
    out: Arc<Mutex<String>>,
    prefix: String,
}

impl TestPmd {
    /// A memif peer: `vdev` is a `net_memif…` device string.
    pub fn memif(tag: &str, vdev: &str, fwd: &str, extra: &[&str]) -> TestPmd {
        TestPmd::spawn_tagged(tag, &[], vdev, fwd, extra)
    }

    /// A virtio-user peer of a vhost-user backend: all memory in one memfd.
    pub fn virtio_user(tag: &str, vdev: &str, fwd: &str, extra: &[&str]) -> TestPmd {
        TestPmd::spawn_tagged(tag, &["--single-file-segments"], vdev, fwd, extra)
    }

    /// Starts `dpdk-testpmd -i` on CPUs 0–1 without hugepages, with `vdev`, forwarding mode
    /// `fwd` and testpmd arguments `extra`; `tag` starts its `--file-prefix` (with this
    /// process's pid, unique per call) and `eal_extra` are further EAL arguments.
    pub fn spawn_tagged(
        tag: &str,
        eal_extra: &[&str],
        vdev: &str,
        fwd: &str,
        extra: &[&str],
    ) -> TestPmd {
        static N: AtomicU32 = AtomicU32::new(0);
        let prefix = format!(
            "{tag}{}x{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let mut child = Command::new(require("stdbuf"))
            .arg("-oL")
            .arg(testpmd_path())
            .args([
                "-l",
                "0,1",
                "--no-huge",
                "-m",
                "1024",
                "--no-pci",
                "--iova-mode=va",
            ])
            .args(eal_extra)
            .arg(format!("--file-prefix={prefix}"))
            .arg(format!("--vdev={vdev}"))
            .args(["--", "-i", "--total-num-mbufs=32768"])
            .arg(format!("--forward-mode={fwd}"))
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start stdbuf dpdk-testpmd");
        let out = Arc::new(Mutex::new(String::new()));
        let pump = |r: Box<dyn Read + Send>, out: Arc<Mutex<String>>| {
            std::thread::spawn(move || {
                for line in BufReader::new(r).lines() {
                    let Ok(line) = line else { break };
                    let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
                    o.push_str(&line);
                    o.push('\n');
                }
            });
        };
        pump(Box::new(child.stdout.take().expect("piped")), out.clone());
        pump(Box::new(child.stderr.take().expect("piped")), out.clone());
        let stdin = Commander(Arc::new(Mutex::new(child.stdin.take().expect("piped"))));
        TestPmd {
            child,
            stdin,
            out,
            prefix,
        }
    }

    /// Everything testpmd printed so far (stdout and stderr).
    pub fn output(&self) -> String {
        self.out.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Sends one command line to testpmd's prompt.
    pub fn cmd(&mut self, line: &str) {
        self.stdin.cmd(line);
    }

    /// A handle that sends commands from another thread (start/stop testpmd while this thread
    /// receives).
    pub fn commander(&self) -> Commander {
        self.stdin.clone()
    }

    /// Kills testpmd at once (no clean shutdown), as a crashed peer would go.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
    }

    /// Panics with testpmd's output if it has exited.
    pub fn check_alive(&mut self) {
        if let Ok(Some(st)) = self.child.try_wait() {
            panic!("dpdk-testpmd exited ({st}):\n{}", self.output());
        }
    }

    /// Waits (up to 30 s) until testpmd's output after byte `mark` contains `needle`; returns
    /// that output. Panics with the output if testpmd exits or the time runs out.
    pub fn wait_for(&mut self, needle: &str, mark: usize) -> String {
        let t0 = Instant::now();
        loop {
            let text = self.output()[mark..].to_string();
            if text.contains(needle) {
                return text;
            }
            self.check_alive();
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "no {needle:?} from testpmd:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The length of the output so far, to pass to [`TestPmd::wait_for`] after a command.
    pub fn mark(&self) -> usize {
        self.out.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Port 0's (RX-packets, RX-bytes, TX-packets, TX-bytes) as `show port stats all` prints them.
    pub fn port_stats(&mut self) -> (u64, u64, u64, u64) {
        let mark = self.mark();
        self.cmd("show port stats all");
        let t0 = Instant::now();
        loop {
            let text = self.output()[mark..].to_string();
            if let Some(block) = text.split("NIC statistics for port 0").nth(1) {
                if block.contains("Tx-pps") {
                    return (
                        stat(block, "RX-packets:"),
                        stat(block, "RX-bytes:"),
                        stat(block, "TX-packets:"),
                        stat(block, "TX-bytes:"),
                    );
                }
            }
            self.check_alive();
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no stats from testpmd:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The number after `key` in a testpmd statistics block.
fn stat(block: &str, key: &str) -> u64 {
    let at = block
        .find(key)
        .unwrap_or_else(|| panic!("no {key} in {block}"));
    block[at + key.len()..]
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("bad {key} in {block}"))
}

/// Writes command lines to a testpmd's prompt; cloneable, usable from any thread.
#[derive(Debug, Clone)]
pub struct Commander(Arc<Mutex<ChildStdin>>);

impl Commander {
    /// Sends one command line; panics if testpmd's stdin is gone.
    pub fn cmd(&self, line: &str) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        writeln!(s, "{line}").expect("write to testpmd");
        s.flush().expect("flush testpmd's stdin");
    }

    /// Sends one command line, ignoring a testpmd that has already gone.
    fn try_cmd(&self, line: &str) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(s, "{line}");
        let _ = s.flush();
    }
}

impl Drop for TestPmd {
    fn drop(&mut self) {
        self.stdin.try_cmd("quit");
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{}", self.prefix));
    }
}

#[cfg(test)]
mod tests {
    use super::stat;

    #[test]
    fn stats_are_read_from_testpmds_block() {
        let block = "  RX-packets: 12  RX-missed: 0  RX-bytes:  720\n  TX-packets: 3 TX-errors: 0 \
                     TX-bytes:  180\n Tx-pps: 0";
        assert_eq!(stat(block, "RX-packets:"), 12);
        assert_eq!(stat(block, "RX-bytes:"), 720);
        assert_eq!(stat(block, "TX-packets:"), 3);
        assert_eq!(stat(block, "TX-bytes:"), 180);
    }
}
