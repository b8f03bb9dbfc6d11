//! The generator against DPDK's testpmd over memif, with exact counts on both sides:
//!
//! - testpmd `txonly` → our receiver: we count exactly the frames testpmd's port statistics say it
//!   sent (they carry no signature of ours, so they are counted as foreign, by reason);
//! - our generator → testpmd `rxonly`: testpmd counts exactly the frames our report says we sent.
//!
//! testpmd runs interactively, driven through stdin; its statistics are read while the memif link is
//! still up (they reset when the peer disconnects). A guard kills testpmd and removes its socket and
//! runtime directory even when a test fails. The tests run one at a time (testpmd takes 1 GiB).
//! They fail with a message if `dpdk-testpmd` is missing (`make setup` installs the `dpdk` package).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vecswitch_gen::{Generator, Rate, SizeSpec, StreamSpec, TrialLength, TrialSpec};
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::Port;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// testpmd with a memif server port, plus its scratch directory; both cleaned up on drop.
struct Peer {
    child: Child,
    stdin: Arc<Mutex<ChildStdin>>,
    log: Arc<Mutex<String>>,
    prefix: String,
    dir: PathBuf,
}

impl Peer {
    fn start(tag: &str, extra: &[&str]) -> Peer {
        assert!(
            Command::new("dpdk-testpmd")
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok(),
            "dpdk-testpmd is not installed (Debian package `dpdk`; `make setup` installs it)"
        );
        let prefix = format!("vsgen{tag}{}", std::process::id());
        let dir = std::env::temp_dir().join(&prefix);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("memif.sock");
        let mut child = Command::new("stdbuf")
            .args([
                "-oL",
                "dpdk-testpmd",
                "-l",
                "0,1",
                "--no-huge",
                "-m",
                "1024",
                "--no-pci",
                "--iova-mode=va",
            ])
            .arg(format!("--file-prefix={prefix}"))
            .arg(format!(
                "--vdev=net_memif0,role=server,socket={},socket-abstract=no,id=0",
                sock.display()
            ))
            .args(["--", "--total-num-mbufs=32768", "-i"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn dpdk-testpmd");
        let log = Arc::new(Mutex::new(String::new()));
        for r in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in BufReader::new(r).lines().map_while(Result::ok) {
                    let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        let stdin = Arc::new(Mutex::new(child.stdin.take().unwrap()));
        let mut p = Peer {
            child,
            stdin,
            log,
            prefix,
            dir,
        };
        p.wait_for("Checking link statuses...\nDone", 0);
        p
    }

    fn socket(&self) -> String {
        self.dir.join("memif.sock").display().to_string()
    }

    fn log_len(&self) -> usize {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn send(&mut self, line: &str) -> usize {
        let mark = self.log_len();
        let mut s = self.stdin.lock().unwrap_or_else(|e| e.into_inner());
        writeln!(s, "{line}").unwrap();
        s.flush().unwrap();
        mark
    }

    /// Waits until `needle` appears in the output after byte `from`; returns that output.
    fn wait_for(&mut self, needle: &str, from: usize) -> String {
        let t0 = Instant::now();
        loop {
            let text = self.log.lock().unwrap_or_else(|e| e.into_inner())[from..].to_string();
            if text.contains(needle) {
                return text;
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("testpmd exited ({st}):\n{text}");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "no {needle:?} from testpmd:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Port 0's (RX-packets, TX-packets) from `show port stats all`.
    fn stats(&mut self) -> (u64, u64) {
        let mark = self.send("show port stats all");
        let text = self.wait_for("Tx-pps", mark);
        let num = |key: &str| -> u64 {
            let at = text
                .find(key)
                .unwrap_or_else(|| panic!("no {key} in {text}"));
            text[at + key.len()..]
                .split_whitespace()
                .next()
                .and_then(|w| w.parse().ok())
                .unwrap()
        };
        (num("RX-packets:"), num("TX-packets:"))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(mut s) = self.stdin.lock() {
            let _ = writeln!(s, "quit");
            let _ = s.flush();
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) && !matches!(self.child.try_wait(), Ok(Some(_)))
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{}", self.prefix));
    }
}

fn client(sock: &str) -> Box<dyn Port> {
    Box::new(MemifPort::new(MemifConfig::new("gen0", sock, 0, Role::Client)).unwrap())
}

#[test]
fn testpmd_txonly_to_our_receiver_counts_match_exactly() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 60 bytes on the link = 64-byte frames with FCS.
    let mut pmd = Peer::start("tx", &["--forward-mode=txonly", "--txpkts=60"]);
    let mut g = Generator::new(vec![client(&pmd.socket())]).unwrap();
    g.wait_link(Duration::from_secs(30)).unwrap();
    // testpmd sends for ~0.5 s, driven from a helper thread, while this thread receives; the receive
    // window ends once nothing has arrived for 300 ms after testpmd stopped.
    let stdin = Arc::clone(&pmd.stdin);
    let driver = std::thread::spawn(move || {
        let say = |l: &str| {
            let mut s = stdin.lock().unwrap_or_else(|e| e.into_inner());
            writeln!(s, "{l}").unwrap();
            s.flush().unwrap();
        };
        say("start");
        std::thread::sleep(Duration::from_millis(500));
        say("stop");
    });
    let ports = g.listen(
        Duration::from_millis(1500),
        Duration::from_millis(300),
        Duration::from_secs(30),
    );
    driver.join().unwrap();
    let (_, tx) = pmd.stats();
    assert!(tx > 1000, "testpmd sent {tx}");
    let p = &ports[0];
    assert_eq!(p.rx_all, tx, "we received exactly what testpmd sent");
    assert_eq!(p.rx_all_bytes, tx * 60);
    assert_eq!(p.rx_ours, 0);
    // testpmd's txonly frames are IPv4/UDP without our signature: foreign, with the reason.
    assert_eq!(p.foreign, tx);
    assert_eq!(p.foreign_reasons, vec![("no-signature".to_string(), tx)]);
    drop(g);
}

#[test]
fn our_generator_to_testpmd_rxonly_counts_match_exactly() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut pmd = Peer::start("rx", &["--forward-mode=rxonly"]);
    let mark = pmd.send("start");
    pmd.wait_for("packet forwarding", mark);
    let mut g = Generator::new(vec![client(&pmd.socket())]).unwrap();
    let mut s = StreamSpec::ipv4(0, 0);
    s.size = SizeSpec::imix();
    let mut spec = TrialSpec::new(vec![s], Rate::Pps(200_000.0), TrialLength::Count(60_000));
    spec.link_timeout = Duration::from_secs(30);
    spec.drain = Duration::from_millis(200);
    // Counts, not timing: no slot is dropped as late on a loaded machine.
    spec.late_threshold = Duration::from_secs(60);
    let r = g.run_trial(&spec).unwrap();
    // Every slot was offered once: sent, or refused by testpmd's full ring (never re-offered).
    assert_eq!(
        (r.tx + r.tx_refused, r.not_sent),
        (60_000, 0),
        "{:?}",
        r.tester_limited_reasons
    );
    // Give testpmd a moment to poll the last descriptors, then read its counters while connected.
    std::thread::sleep(Duration::from_millis(200));
    let (rx, _) = pmd.stats();
    assert_eq!(rx, r.tx, "testpmd received exactly what we sent");
    assert_eq!(r.ports[0].port_stats.tx_packets, r.tx);
    drop(g);
}
