//! A real kernel TCP flow through two AF_PACKET ports cross-connected (the switch's xconnect in
//! miniature): namespace A (192.0.2.1) — veth — port `sa` ⇄ port `sb` — veth — namespace B
//! (192.0.2.2); `sa` and `sb` sit in a third namespace S with no address (in the test's own
//! namespace the host kernel answered A's ARP for an address it happens to own, weak host model,
//! and the flow went to the host instead of through the ports). A sends 4 MiB of seeded random bytes with Python's socket module; B receives them
//! and reports their length and SHA-256. TSO and GSO are off on A's and B's veth ends, as the
//! ports' module doc asks of peers (`ethtool -K IF tso off gso off`; the port does not use
//! PACKET_VNET_HDR, so a GSO super-frame would not fit a slot), and transmit checksum offload stays
//! on, so A's segments reach `sa` with the TCP checksum left to offload
//! (`TP_STATUS_CSUMNOTREADY`): the port completes it in software (`rx_csum_completed`). Asserted:
//! the bytes arrive intact, B's kernel counted no TCP checksum error (`nstat` TcpInCsumErrors),
//! the ports truncated nothing and left no checksum incomplete, and completed at least one.
//!
//! Root (namespaces, veth, packet sockets); needs ethtool, nstat (iproute2) and python3
//! (scripts/setup.sh installs them). The guard deletes the namespaces and veth pairs, also when an
//! assert fails. Addresses are from TEST-NET-1 (RFC 5737) and exist only inside the test's
//! namespaces.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::{LinkState, Port};
use vecswitch_testsupport::{unique_name, Netns, Veth};

const BYTES: usize = 4 << 20;

/// Namespaces A and B, each with one veth end; the other ends (`sa`, `sb`) in namespace S. The
/// guards (crates/testsupport) delete the pairs, then the namespaces.
struct Lab {
    _veths: [Veth; 2],
    sa: String,
    sb: String,
    a: Netns,
    b: Netns,
    s: Netns,
}

impl Lab {
    fn new() -> Lab {
        let s = Netns::new("vstcs");
        let (a, b) = (Netns::new("vstca"), Netns::new("vstcb"));
        let (sa, sb) = (unique_name("vstsa"), unique_name("vstsb"));
        let mut veths = Vec::new();
        for (ns, sw, addr) in [(&a, &sa, "192.0.2.1/24"), (&b, &sb, "192.0.2.2/24")] {
            veths.push(Veth::create(sw, Some(&s), "eth0", Some(ns), None));
            ns.ip(&["addr", "add", addr, "dev", "eth0"]);
            ns.exec(&[
                "ethtool", "-K", "eth0", "tso", "off", "gso", "off", "gro", "off",
            ]);
        }
        let _veths = veths.try_into().expect("two pairs");
        Lab {
            _veths,
            sa,
            sb,
            a,
            b,
            s,
        }
    }

    fn exec(&self, ns: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, program]);
        c
    }
}

fn open(name: &str, ifname: &str, netns: &str) -> AfPacketPort {
    let p = AfPacketPort::open_in_netns(
        AfPacketConfig {
            rx_mode: RxMode::Frame,
            ..AfPacketConfig::new(name, ifname)
        },
        &format!("/run/netns/{netns}"),
    )
    .expect("open AF_PACKET port");
    let deadline = Instant::now() + Duration::from_secs(5);
    while p.link() != LinkState::Up {
        assert!(Instant::now() < deadline, "{ifname} never came up");
        std::thread::sleep(Duration::from_millis(10));
    }
    p
}

const SERVER: &str = r#"
import hashlib, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.0.2.2", 5001)); s.listen(1); s.settimeout(60)
print("listening", flush=True)
c, _ = s.accept(); c.settimeout(60); h = hashlib.sha256(); n = 0
while True:
    d = c.recv(65536)
    if not d: break
    h.update(d); n += len(d)
print(n, h.hexdigest(), flush=True)
"#;

const CLIENT: &str = r#"
import hashlib, random, socket, sys
data = random.Random(1).randbytes(int(sys.argv[1]))
c = socket.create_connection(("192.0.2.2", 5001), timeout=20); c.sendall(data); c.close()
print(len(data), hashlib.sha256(data).hexdigest(), flush=True)
"#;

#[test]
fn kernel_tcp_flow_crosses_two_afpacket_ports_with_correct_checksums() {
    let lab = Lab::new();
    let mut sa = open("sa", &lab.sa, lab.s.name());
    let mut sb = open("sb", &lab.sb, lab.s.name());

    // The cross-connect: everything from one port to the other, until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let fwd = std::thread::spawn(move || {
        let mut pool = Pool::new(4096);
        let mut v = Vec::with_capacity(256);
        let mut unsent = 0u64;
        while !stop2.load(Ordering::Relaxed) {
            let moved = pass(&mut sa, &mut sb, &mut pool, &mut v, &mut unsent)
                + pass(&mut sb, &mut sa, &mut pool, &mut v, &mut unsent);
            if moved == 0 {
                // As the switch's worker does when idle: housekeeping and the TX flush.
                sa.poll_control();
                sb.poll_control();
                sa.flush();
                sb.flush();
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        (sa, sb, unsent)
    });

    let before = nstat_csum_errors(&lab, lab.b.name());
    let mut server = lab
        .exec(lab.b.name(), "python3")
        .args(["-c", SERVER])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 must be installed (scripts/setup.sh)");
    // Wait for "listening" before connecting.
    let mut out = server.stdout.take().unwrap();
    let mut first = [0u8; 10];
    std::io::Read::read_exact(&mut out, &mut first).expect("server started");
    let client = lab
        .exec(lab.a.name(), "python3")
        .args(["-c", CLIENT, &BYTES.to_string()])
        .output()
        .expect("python3");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let _ = server.wait();
    stop.store(true, Ordering::Relaxed);
    let (sa, sb, unsent) = fwd.join().expect("forwarding thread");
    let after = nstat_csum_errors(&lab, lab.b.name());

    let sent = String::from_utf8_lossy(&client.stdout).trim().to_string();
    assert!(
        client.status.success(),
        "client: {}\nB's TcpInCsumErrors +{}\nsa {:?} {:?}\nsb {:?} {:?}",
        String::from_utf8_lossy(&client.stderr),
        after - before,
        sa.stats(),
        sa.af_packet_stats(),
        sb.stats(),
        sb.af_packet_stats()
    );
    let got = rest.trim().to_string();
    assert_eq!(got, sent, "bytes received (len sha256) = bytes sent");
    assert!(sent.starts_with(&format!("{BYTES} ")), "{sent}");
    assert_eq!(after - before, 0, "TCP checksum errors counted in B");

    let (a, b) = (sa.af_packet_stats(), sb.af_packet_stats());
    for (name, s) in [("sa", &a), ("sb", &b)] {
        assert_eq!(
            (s.rx_truncated, s.rx_csum_incomplete, s.kernel_drops),
            (0, 0, 0),
            "{name}: {s:?}"
        );
    }
    assert!(
        a.rx_csum_completed > 0,
        "A's segments should arrive with the checksum left to offload: {a:?}"
    );
    // Frames a full TX ring refused would be retransmitted by TCP, and are counted here.
    assert_eq!(unsent, sa.stats().tx_dropped + sb.stats().tx_dropped);
}

/// One burst from `rx` to `tx`; returns the frames received, adds those `tx` refused to `unsent`.
fn pass(
    rx: &mut AfPacketPort,
    tx: &mut AfPacketPort,
    pool: &mut Pool,
    v: &mut Vec<u32>,
    unsent: &mut u64,
) -> usize {
    v.clear();
    let n = rx.rx_burst(pool, v, 256);
    if n > 0 {
        *unsent += (n - tx.tx_burst(pool, v)) as u64;
        pool.free_bulk(v);
    }
    n
}

/// TcpInCsumErrors of namespace `ns` (absolute, `nstat -az`).
fn nstat_csum_errors(lab: &Lab, ns: &str) -> u64 {
    let out = lab
        .exec(ns, "nstat")
        .args(["-az", "TcpInCsumErrors"])
        .output()
        .expect("nstat (iproute2) must be installed");
    assert!(out.status.success(), "nstat failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with("TcpInCsumErrors"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or_else(|| panic!("no TcpInCsumErrors in nstat output"))
}
