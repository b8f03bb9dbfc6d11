//! Driving DPDK's `dpdk-testpmd` from the interop tests (memif_testpmd.rs, vhost_user_testpmd.rs):
//! testpmd runs interactively (`-i`) under `stdbuf -oL`, driven through its stdin, its output
//! collected line by line; the [`TestPmd`] guard quits or kills it and removes its runtime dir even
//! when a test fails. [`serial`] runs such tests one at a time (testpmd takes 1 GiB and both cores).
// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn testpmd_path() -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("dpdk-testpmd"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "dpdk-testpmd not found in PATH: the interop tests need DPDK's testpmd and its \
                 memif and virtio-user drivers (Debian packages `dpdk`, `librte-net-memif23`, \
                 `librte-net-virtio23`; `make setup` installs them)"
            )
        })
}

/// A running testpmd; killed (and its runtime dir removed) on drop.
pub struct TestPmd {
    child: Child,
    stdin: ChildStdin,
    out: Arc<Mutex<String>>,
    prefix: String,
}

impl TestPmd {
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
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let prefix = format!(
            "{tag}{}x{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let mut child = Command::new("stdbuf")
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
                    let mut o = out.lock().unwrap();
                    o.push_str(&line);
                    o.push('\n');
                }
            });
        };
        pump(Box::new(child.stdout.take().unwrap()), out.clone());
        pump(Box::new(child.stderr.take().unwrap()), out.clone());
        let stdin = child.stdin.take().unwrap();
        TestPmd {
            child,
            stdin,
            out,
            prefix,
        }
    }

    pub fn output(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    pub fn cmd(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to testpmd");
        self.stdin.flush().unwrap();
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

    /// Port 0's (RX-packets, RX-bytes, TX-packets, TX-bytes) as `show port stats all` prints them.
    pub fn port_stats(&mut self) -> (u64, u64, u64, u64) {
        let mark = self.out.lock().unwrap().len();
        self.cmd("show port stats all");
        let t0 = Instant::now();
        loop {
            let text = self.out.lock().unwrap()[mark..].to_string();
            if let Some(block) = text.split("NIC statistics for port 0").nth(1) {
                if block.contains("Tx-pps") {
                    let num = |key: &str| -> u64 {
                        let at = block
                            .find(key)
                            .unwrap_or_else(|| panic!("no {key} in {block}"));
                        block[at + key.len()..]
                            .split_whitespace()
                            .next()
                            .and_then(|w| w.parse().ok())
                            .unwrap_or_else(|| panic!("bad {key} in {block}"))
                    };
                    return (
                        num("RX-packets:"),
                        num("RX-bytes:"),
                        num("TX-packets:"),
                        num("TX-bytes:"),
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

impl Drop for TestPmd {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
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
