//! `vecswitch run` cross-connects a memif port and a vhost-user port (`type = "vhost_user"`):
//! DPDK testpmd's virtio-user frontend sits on the vhost-user side and echoes every frame back
//! (`io` forwarding), a memif client in this process sends numbered frames on the memif side and
//! reads them back. Both directions of the switch's vhost-user port carry exact counts, checked
//! in `show ports` and in testpmd's own statistics, and every frame comes back intact.
//!
//! The switch and testpmd are stopped by Drop guards and the temp dir removed, even when the
//! test fails. If `dpdk-testpmd` is missing the test fails and says so (`make setup`).

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use vecswitch_buffer::{Pool, DATA_SIZE};
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::{LinkState, Port};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("vsw-vhost-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `vecswitch run`; killed on drop.
struct Switch {
    child: Child,
    socket: PathBuf,
}

impl Switch {
    fn start(config: &Path, socket: &Path) -> Switch {
        let child = Command::new(BIN)
            .args(["run", "--config"])
            .arg(config)
            .arg("--socket")
            .arg(socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn vecswitch run");
        let mut sw = Switch {
            child,
            socket: socket.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::os::unix::net::UnixStream::connect(socket).is_err() {
            if let Some(status) = sw.child.try_wait().unwrap() {
                panic!("vecswitch run exited with {status}");
            }
            assert!(Instant::now() < deadline, "control socket did not appear");
            std::thread::sleep(Duration::from_millis(50));
        }
        sw
    }

    fn ctl(&self, words: &str) -> Output {
        Command::new(BIN)
            .arg("ctl")
            .arg("--socket")
            .arg(&self.socket)
            .args(words.split_whitespace())
            .output()
            .expect("run vecswitch ctl")
    }

    /// `ctl --json <words>` → the answer's `data`.
    fn json(&self, words: &str) -> Value {
        let out = self.ctl(&format!("--json {words}"));
        assert!(out.status.success(), "ctl {words}: {out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["ok"], true, "{v}");
        v["data"].clone()
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn testpmd_path() -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("dpdk-testpmd"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "dpdk-testpmd not found in PATH: the vhost-user interop tests need DPDK's testpmd \
                 and its virtio-user driver (Debian packages `dpdk` and `librte-net-virtio23`; \
                 `make setup` installs them)"
            )
        })
}

/// A running testpmd; killed (and its runtime dir removed) on drop.
struct TestPmd {
    child: Child,
    stdin: ChildStdin,
    out: Arc<Mutex<String>>,
    prefix: String,
}

impl TestPmd {
    fn spawn(vdev: &str, fwd: &str, extra: &[&str]) -> TestPmd {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let prefix = format!(
            "vsxcvh{}x{}",
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
                // --no-huge memory must reach the backend as a file descriptor: one memfd.
                "--single-file-segments",
            ])
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

    fn output(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    fn cmd(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to testpmd");
        self.stdin.flush().unwrap();
    }

    /// Panics with testpmd's output if it has exited.
    fn check_alive(&mut self) {
        if let Ok(Some(st)) = self.child.try_wait() {
            panic!("dpdk-testpmd exited ({st}):\n{}", self.output());
        }
    }

    /// Port 0's (RX-packets, RX-bytes, TX-packets, TX-bytes) as `show port stats all` prints them.
    fn port_stats(&mut self) -> (u64, u64, u64, u64) {
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

/// Frame `seq` of `len` bytes: unicast MACs, then the sequence number and a pattern.
fn frame(seq: u64, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len)
        .map(|i| (i as u64).wrapping_mul(7).wrapping_add(seq) as u8)
        .collect();
    v[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    v[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    v[12..14].copy_from_slice(&[0x08, 0x00]);
    v[14..22].copy_from_slice(&seq.to_le_bytes());
    v
}

const SIZES: [usize; 5] = [60, 64, 512, 1514, 4000];

fn stat(port: &Value, key: &str) -> u64 {
    port["stats"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {port}"))
}

#[test]
fn xconnect_memif_to_vhost_user_with_testpmd_echo_exact() {
    let d = TempDir::new("xc");
    let memif = d.path("memif.sock");
    let vhost = d.path("vhost.sock");
    let cfg = d.path("switch.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[switch]
buffers = 4096

[[port]]
name = "m0"
type = "memif"
socket = "{m}"
id = 0

[[port]]
name = "vh0"
type = "vhost_user"
socket = "{v}"
role = "server"

[[xconnect]]
ports = ["m0", "vh0"]
"#,
            m = memif.display(),
            v = vhost.display()
        ),
    )
    .unwrap();
    let sw = Switch::start(&cfg, &d.path("ctl.sock"));
    let mut pmd = TestPmd::spawn(
        &format!(
            "net_virtio_user0,path={},queues=1,server=0",
            vhost.display()
        ),
        "io",
        &["--no-flush-rx"],
    );
    let mut peer = MemifPort::new(MemifConfig::new(
        "peer",
        &memif.display().to_string(),
        0,
        Role::Client,
    ))
    .unwrap();
    let t0 = Instant::now();
    loop {
        peer.poll_control();
        let ports = sw.json("show ports");
        if peer.link() == LinkState::Up && ports[1]["link"] == "up" {
            break;
        }
        pmd.check_alive();
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "ports did not come up: {ports}\n{}",
            pmd.output()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let ports = sw.json("show ports");
    assert!(
        ports[1]["describe"]
            .as_str()
            .unwrap()
            .starts_with("vhost-user server"),
        "{ports}"
    );
    // virtio-user tells the backend DRIVER_OK (our link goes up) before testpmd's port start
    // posts its receive buffers; testpmd answers commands once its ports are started.
    let _ = pmd.port_stats();
    pmd.cmd("start");

    const N: u64 = 3_000;
    let mut pool = Pool::new(1024);
    let (mut sent, mut back) = (0u64, 0u64);
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let t0 = Instant::now();
    while back < N {
        // A window of frames in flight: the echo must never find a ring full.
        if sent < N && sent - back < 32 {
            let bytes = frame(sent, SIZES[(sent % SIZES.len() as u64) as usize]);
            let h = pool.alloc().unwrap();
            let first = bytes.len().min(DATA_SIZE);
            assert!(pool.write_packet(h, &bytes[..first]));
            for chunk in bytes[first..].chunks(DATA_SIZE) {
                assert!(pool.append_segment(h, chunk));
            }
            sent += peer.tx_burst(&mut pool, &[h]) as u64;
            pool.free(h);
        }
        out.clear();
        peer.rx_burst(&mut pool, &mut out, 64);
        for &h in &out {
            pool.copy_out(h, &mut buf);
            let want = frame(back, SIZES[(back % SIZES.len() as u64) as usize]);
            assert!(
                buf == want,
                "frame {back} came back different ({} bytes)",
                buf.len()
            );
            back += 1;
        }
        pool.free_bulk(&out);
        peer.poll_control();
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "echo stalled: sent {sent}, back {back}\n{}\n{}",
            sw.json("show ports"),
            pmd.output()
        );
    }
    let (rx, _, tx, _) = pmd.port_stats();
    assert_eq!((rx, tx), (N, N), "testpmd RX/TX-packets");
    let ports = sw.json("show ports");
    let (m0, vh0) = (&ports[0], &ports[1]);
    assert_eq!(
        (stat(m0, "rx_packets"), stat(m0, "tx_packets")),
        (N, N),
        "{m0}"
    );
    assert_eq!(
        (stat(vh0, "rx_packets"), stat(vh0, "tx_packets")),
        (N, N),
        "{vh0}"
    );
    assert_eq!(
        (stat(vh0, "rx_dropped"), stat(vh0, "tx_dropped")),
        (0, 0),
        "{vh0}"
    );
    assert_eq!(pool.in_use(), 0);
}
