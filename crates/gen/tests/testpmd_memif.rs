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

use std::time::Duration;

use vecswitch_gen::{Generator, Rate, SizeSpec, StreamSpec, TrialLength, TrialSpec};
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::Port;
use vecswitch_testsupport::{serial, TempDir, TestPmd};

/// testpmd (crates/testsupport) with a memif server port, then its scratch directory; both
/// cleaned up on drop, in that order.
struct Peer {
    pmd: TestPmd,
    dir: TempDir,
}

impl Peer {
    fn start(tag: &str, fwd: &str, extra: &[&str]) -> Peer {
        let dir = TempDir::new(&format!("gen-pmd-{tag}"));
        let vdev = format!(
            "net_memif0,role=server,socket={},socket-abstract=no,id=0",
            dir.sock("memif.sock")
        );
        let mut pmd = TestPmd::memif(&format!("vsgen{tag}"), &vdev, fwd, extra);
        pmd.wait_for("Checking link statuses...\nDone", 0);
        Peer { pmd, dir }
    }

    fn socket(&self) -> String {
        self.dir.sock("memif.sock")
    }

    /// Sends `line`; returns the output mark from which its answer can be awaited.
    fn send(&mut self, line: &str) -> usize {
        let mark = self.pmd.mark();
        self.pmd.cmd(line);
        mark
    }

    /// Port 0's (RX-packets, TX-packets).
    fn stats(&mut self) -> (u64, u64) {
        let (rx, _, tx, _) = self.pmd.port_stats();
        (rx, tx)
    }
}

fn client(sock: &str) -> Box<dyn Port> {
    Box::new(MemifPort::new(MemifConfig::new("gen0", sock, 0, Role::Client)).unwrap())
}

#[test]
fn testpmd_txonly_to_our_receiver_counts_match_exactly() {
    let _one = serial();
    // 60 bytes on the link = 64-byte frames with FCS.
    let mut pmd = Peer::start("tx", "txonly", &["--txpkts=60"]);
    let mut g = Generator::new(vec![client(&pmd.socket())]).unwrap();
    g.wait_link(Duration::from_secs(30)).unwrap();
    // testpmd sends for ~0.5 s, driven from a helper thread, while this thread receives; the receive
    // window ends once nothing has arrived for 300 ms after testpmd stopped.
    let say = pmd.pmd.commander();
    let driver = std::thread::spawn(move || {
        say.cmd("start");
        std::thread::sleep(Duration::from_millis(500));
        say.cmd("stop");
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
    let _one = serial();
    let mut pmd = Peer::start("rx", "rxonly", &[]);
    let mark = pmd.send("start");
    pmd.pmd.wait_for("packet forwarding", mark);
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
