//! NAT44 against the kernel: the same probes through vecswitch's masquerade and through a Linux
//! router namespace whose nftables masquerades (the oracle), with the same addresses.
//!
//! Topology, twice: an inside namespace (10.78.1.2/24, default via 10.78.1.1) and an outside
//! namespace (10.78.2.2/24, no route back to the inside subnet). Between them either vecswitch
//! (AF_PACKET ports on the host ends of the two veths; `in` 10.78.1.1/24 inside, `out`
//! 10.78.2.1/24 outside) or a router namespace (the same two addresses, `ip_forward=1`, `nft add
//! rule ip nat post oifname "eth1" masquerade`).
//!
//! The probes (Python sockets, `busybox ping`): from inside, a TCP connection that fetches 256 KiB
//! from a server outside (a real kernel connection: handshake, data, FIN), a UDP request/reply
//! and 3 pings; from outside, a TCP connection attempt and a UDP datagram to the router's outside
//! address. Asserted, for vecswitch: every inside probe succeeds; the outside server saw only the
//! outside address, with the client's source port preserved; the unsolicited probes never reached
//! the inside host and were counted (`nat44-out2in no-session`); `show nat44 summary` holds the
//! TCP, UDP and ICMP sessions. Asserted against the kernel: the same outcome for every probe (the
//! peer address and port the outside server saw included). One difference is expected and not
//! compared: the kernel answers the unsolicited TCP SYN to its own address with a RST (refused),
//! vecswitch drops it (the client times out); neither reaches the inside host.
//!
//! A second test does the same for a pool of outside addresses (paired pooling, against the
//! kernel's `snat … persistent`).
//!
//! Needs root, `ip`, `nft` (nftables), `ethtool`, `busybox`, `python3`; scripts/setup.sh installs
//! them. TSO/GSO are turned off on the namespaces' veth ends (the AF_PACKET port's module doc: no
//! GSO super-frames), checksum offload stays on (the port completes partial checksums). Every name
//! carries the pid; the guards delete namespaces, veths and server processes when the test ends,
//! panics included.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_ports::{LinkState, Port};
use vecswitch_switch::nat44::Role;
use vecswitch_switch::{spawn, Switch, SwitchConfig};

const SERVER: &str = r#"
import socket, sys, threading
addr, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
N = 262144
def note(s):
    with open(log, 'a') as f:
        f.write(s + '\n')
t = socket.socket()
t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind((addr, port))
t.listen(16)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind((addr, port))
def udp():
    while True:
        d, p = u.recvfrom(2048)
        note('udp %s:%d' % p)
        u.sendto(('%s:%d' % p).encode(), p)
threading.Thread(target=udp, daemon=True).start()
note('ready')
while True:
    c, p = t.accept()
    note('tcp %s:%d' % p)
    c.sendall(('%s:%d\n' % p).encode() + b'x' * N)
    c.close()
"#;

const CLIENT: &str = r#"
import socket, sys
mode, dst, port, sport, wait = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
src = sys.argv[6] if len(sys.argv) > 6 else ''
try:
    if mode == 'tcp':
        s = socket.socket()
        s.settimeout(wait)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((src, sport))
        s.connect((dst, port))
        data = b''
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        line, _, rest = data.partition(b'\n')
        print('ok', line.decode(), len(rest))
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(wait)
        s.bind((src, sport))
        s.sendto(b'hello', (dst, port))
        d, _ = s.recvfrom(2048)
        print('ok', d.decode(), 0)
except socket.timeout:
    print('timeout')
except ConnectionRefusedError:
    print('refused')
except Exception as e:
    print('error', type(e).__name__, e)
"#;

fn run(cmd: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("`{cmd}` must be installed (scripts/setup.sh): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn must(cmd: &str, args: &[&str]) -> String {
    let (ok, text) = run(cmd, args);
    assert!(ok, "{cmd} {}: {text}", args.join(" "));
    text
}

fn ns_must(ns: &str, args: &[&str]) -> String {
    let mut a = vec!["netns", "exec", ns];
    a.extend_from_slice(args);
    must("ip", &a)
}

/// Namespaces, host-side links, server processes and files: all removed on drop.
#[derive(Default)]
struct Guard {
    ns: Vec<String>,
    links: Vec<String>,
    children: Vec<Child>,
    files: Vec<String>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for l in &self.links {
            let _ = Command::new("ip").args(["link", "del", l]).output();
        }
        for n in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
    }
}

impl Guard {
    fn netns(&mut self, name: String) -> String {
        must("ip", &["netns", "add", &name]);
        self.ns.push(name.clone());
        ns_must(&name, &["ip", "link", "set", "lo", "up"]);
        ns_must(
            &name,
            &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
        );
        name
    }

    /// A veth pair `a`–`b`; `a` moves into `a_ns` (renamed `a_name`) unless `None`, `b` likewise.
    fn veth(&mut self, a: &str, a_ns: Option<(&str, &str)>, b: &str, b_ns: Option<(&str, &str)>) {
        must("ip", &["link", "add", a, "type", "veth", "peer", "name", b]);
        self.links.push(a.to_string());
        for (dev, place) in [(a, a_ns), (b, b_ns)] {
            match place {
                Some((ns, name)) => {
                    must("ip", &["link", "set", dev, "netns", ns]);
                    ns_must(ns, &["ip", "link", "set", dev, "name", name]);
                    ns_must(ns, &["ethtool", "-K", name, "tso", "off", "gso", "off"]);
                    ns_must(ns, &["ip", "link", "set", name, "up"]);
                }
                None => {
                    let _ =
                        std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1");
                    must("ip", &["link", "set", dev, "up"]);
                }
            }
        }
    }

    /// Starts the server in `ns` on `addr`:`port`, logging to a file; waits until it listens.
    fn server(&mut self, ns: &str, addr: &str, port: u16, log: String) -> String {
        let _ = std::fs::remove_file(&log);
        self.files.push(log.clone());
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                ns,
                "python3",
                "-c",
                SERVER,
                addr,
                &port.to_string(),
                &log,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 must be installed (scripts/setup.sh)");
        self.children.push(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("ready")
        {
            assert!(Instant::now() < deadline, "server in {ns} never started");
            std::thread::sleep(Duration::from_millis(50));
        }
        log
    }
}

/// The inside and outside hosts' side of a topology.
fn hosts(g: &mut Guard, tag: &str) -> (String, String) {
    let id = std::process::id() % 1_000_000;
    let inside = g.netns(format!("vsn{id}{tag}i"));
    let outside = g.netns(format!("vsn{id}{tag}o"));
    (inside, outside)
}

fn addr(ns: &str, a: &str, gw: Option<&str>) {
    ns_must(ns, &["ip", "addr", "add", a, "dev", "eth0"]);
    if let Some(gw) = gw {
        ns_must(ns, &["ip", "route", "add", "default", "via", gw]);
    }
}

/// What the probes saw.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reach {
    /// The TCP client's result: `ok PEER BYTES` (the peer the server saw, the bytes fetched).
    tcp: String,
    /// The UDP client's result: `ok PEER 0`.
    udp: String,
    /// Whether 3 pings from inside were answered.
    ping: bool,
    /// What the outside server logged (peers of every connection and datagram).
    server_saw: Vec<String>,
    /// Whether the unsolicited TCP attempt or UDP datagram reached the inside host's server.
    unsolicited_reached_inside: bool,
}

fn client(ns: &str, mode: &str, dst: &str, port: u16, sport: u16, wait: &str) -> String {
    let mut a = vec!["netns", "exec", ns, "python3", "-c", CLIENT, mode, dst];
    let (p, s) = (port.to_string(), sport.to_string());
    a.extend_from_slice(&[&p, &s, wait]);
    run("ip", &a).1.trim().to_string()
}

/// Runs every probe between `inside` and `outside` through a router whose outside address is
/// 10.78.2.1.
fn probe(g: &mut Guard, inside: &str, outside: &str, tag: &str) -> Reach {
    let pid = std::process::id();
    let out_log = g.server(
        outside,
        "10.78.2.2",
        8080,
        format!("/tmp/vsnat{pid}{tag}o.log"),
    );
    let in_log = g.server(
        inside,
        "10.78.1.2",
        9999,
        format!("/tmp/vsnat{pid}{tag}i.log"),
    );
    let (ping, ping_out) = run(
        "ip",
        &[
            "netns",
            "exec",
            inside,
            "busybox",
            "ping",
            "-c",
            "3",
            "-W",
            "5",
            "10.78.2.2",
        ],
    );
    let ping = ping && ping_out.contains("3 packets received");
    let tcp = client(inside, "tcp", "10.78.2.2", 8080, 40001, "10");
    let udp = client(inside, "udp", "10.78.2.2", 8080, 40002, "5");
    let _ = client(outside, "tcp", "10.78.2.1", 9999, 40003, "2");
    let _ = client(outside, "udp", "10.78.2.1", 9999, 40004, "2");
    let saw = std::fs::read_to_string(&out_log).unwrap_or_default();
    let inside_saw = std::fs::read_to_string(&in_log).unwrap_or_default();
    Reach {
        tcp,
        udp,
        ping,
        server_saw: saw
            .lines()
            .filter(|l| *l != "ready")
            .map(str::to_string)
            .collect(),
        unsolicited_reached_inside: inside_saw.lines().any(|l| l != "ready"),
    }
}

fn port(name: &str, ifname: &str) -> Box<dyn Port> {
    let p = AfPacketPort::open(AfPacketConfig::new(name, ifname)).expect("open AF_PACKET port");
    let deadline = Instant::now() + Duration::from_secs(5);
    while p.link() != LinkState::Up {
        assert!(Instant::now() < deadline, "{ifname} never came up");
        std::thread::sleep(Duration::from_millis(10));
    }
    Box::new(p)
}

/// vecswitch between `inside` and `outside` (tag `tag` in the veth names): AF_PACKET ports on
/// the host ends of two veths whose other ends are the namespaces' `eth0`; `in` 10.78.1.1/24
/// inside, `out` 10.78.2.1/24 outside.
fn vecswitch_router(g: &mut Guard, tag: &str, inside: &str, outside: &str) -> Switch {
    let id = std::process::id() % 1_000_000;
    let (li, lo) = (format!("vsn{id}{tag}I"), format!("vsn{id}{tag}O"));
    g.veth(&li, None, &format!("{li}p"), Some((inside, "eth0")));
    g.veth(&lo, None, &format!("{lo}p"), Some((outside, "eth0")));
    let mut sw = Switch::new(SwitchConfig {
        buffers: 8192,
        mac_table_entries: 1024,
        ..Default::default()
    });
    sw.add_port("in", port("in", &li)).unwrap();
    sw.add_port("out", port("out", &lo)).unwrap();
    sw.ip_add_address("in", "10.78.1.1/24".parse().unwrap())
        .unwrap();
    sw.ip_add_address("out", "10.78.2.1/24".parse().unwrap())
        .unwrap();
    sw.nat44_set_interface("in", Some(Role::Inside)).unwrap();
    sw.nat44_set_interface("out", Some(Role::Outside)).unwrap();
    sw
}

/// A router namespace (tag `tag`) between `inside` and `outside` with the same addresses as
/// [`vecswitch_router`], forwarding, and nftables rule `nat` in its postrouting NAT chain.
fn kernel_router(g: &mut Guard, tag: &str, inside: &str, outside: &str, nat: &str) {
    let id = std::process::id() % 1_000_000;
    let kr = g.netns(format!("vsn{id}{tag}r"));
    g.veth(
        &format!("vsn{id}{tag}I"),
        Some((&kr, "eth0")),
        &format!("vsn{id}{tag}Ip"),
        Some((inside, "eth0")),
    );
    g.veth(
        &format!("vsn{id}{tag}O"),
        Some((&kr, "eth1")),
        &format!("vsn{id}{tag}Op"),
        Some((outside, "eth0")),
    );
    ns_must(&kr, &["ip", "addr", "add", "10.78.1.1/24", "dev", "eth0"]);
    ns_must(&kr, &["ip", "addr", "add", "10.78.2.1/24", "dev", "eth1"]);
    ns_must(&kr, &["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    ns_must(&kr, &["nft", "add", "table", "ip", "nat"]);
    ns_must(
        &kr,
        &[
            "nft",
            "add chain ip nat post { type nat hook postrouting priority 100 ; }",
        ],
    );
    ns_must(&kr, &["nft", &format!("add rule ip nat post {nat}")]);
}

#[test]
fn masquerade_matches_the_kernels_nftables_masquerade() {
    let mut g = Guard::default();

    // --- vecswitch between the two hosts.
    let (vi, vo) = hosts(&mut g, "v");
    let sw = vecswitch_router(&mut g, "v", &vi, &vo);
    addr(&vi, "10.78.1.2/24", Some("10.78.1.1"));
    addr(&vo, "10.78.2.2/24", None);
    let h = spawn(sw).expect("worker thread");
    let ours = probe(&mut g, &vi, &vo, "v");
    let summary = h.call(|sw| sw.show_nat44_summary()).unwrap();
    let errors = h.call(|sw| sw.show_errors()).unwrap();
    h.stop().expect("worker stops");

    assert_eq!(ours.tcp, "ok 10.78.2.1:40001 262144", "{ours:?}");
    assert_eq!(ours.udp, "ok 10.78.2.1:40002 0", "{ours:?}");
    assert!(ours.ping, "{ours:?}");
    assert!(
        ours.server_saw.iter().all(|l| l.contains(" 10.78.2.1:")),
        "the outside sees only the outside address: {ours:?}"
    );
    assert!(!ours.unsolicited_reached_inside, "{ours:?}");
    let no_session = errors
        .iter()
        .find(|e| e.node == "nat44-out2in" && e.reason == "no-session")
        .map_or(0, |e| e.count);
    assert!(
        no_session >= 2,
        "unsolicited TCP SYN and UDP counted: {errors:?}"
    );
    assert!(
        summary.tcp >= 1 && summary.udp >= 1 && summary.icmp >= 1,
        "{summary:?}"
    );

    // --- The kernel: a router namespace with nftables masquerade, the same addresses.
    let (ki, ko) = hosts(&mut g, "k");
    kernel_router(&mut g, "k", &ki, &ko, "oifname \"eth1\" masquerade");
    addr(&ki, "10.78.1.2/24", Some("10.78.1.1"));
    addr(&ko, "10.78.2.2/24", None);
    let kernel = probe(&mut g, &ki, &ko, "k");

    assert_eq!(
        ours, kernel,
        "vecswitch (left) and the kernel (right) differ"
    );
}

/// Inside hosts of the pool test: 10.78.1.10 to 10.78.1.17.
const POOL_HOSTS: u8 = 8;

/// From every inside host (`10.78.1.10`…, secondary addresses of the inside namespace), a UDP
/// request to each of two outside servers (10.78.2.2:8080 and 10.78.2.3:8081); returns, per
/// host, the set of outside addresses the servers saw it from and whether every reply came
/// back with the source port kept.
fn pool_probe(
    g: &mut Guard,
    inside: &str,
    outside: &str,
    tag: &str,
) -> Vec<(String, Vec<String>, bool)> {
    let pid = std::process::id();
    let logs = [
        g.server(
            outside,
            "10.78.2.2",
            8080,
            format!("/tmp/vsnat{pid}{tag}p1.log"),
        ),
        g.server(
            outside,
            "10.78.2.3",
            8081,
            format!("/tmp/vsnat{pid}{tag}p2.log"),
        ),
    ];
    let mut per_host = Vec::new();
    for h in 0..POOL_HOSTS {
        let host = format!("10.78.1.{}", 10 + h);
        let mut seen = Vec::new();
        let mut kept = true;
        for (dst, port) in [("10.78.2.2", 8080), ("10.78.2.3", 8081)] {
            let sport = 41000 + h as u16;
            let mut a = vec!["netns", "exec", inside, "python3", "-c", CLIENT, "udp", dst];
            let (p, sp) = (port.to_string(), sport.to_string());
            a.extend_from_slice(&[&p, &sp, "5", &host]);
            let r = run("ip", &a).1.trim().to_string();
            // `ok ADDR:PORT 0`: the peer the server saw.
            let peer = r.strip_prefix("ok ").and_then(|r| r.split(' ').next());
            match peer.and_then(|p| p.split_once(':')) {
                Some((addr, p)) => {
                    seen.push(addr.to_string());
                    kept &= p == sport.to_string();
                }
                None => panic!("{tag}: UDP from {host} to {dst}: {r}"),
            }
        }
        seen.sort();
        seen.dedup();
        per_host.push((host, seen, kept));
    }
    let saw: usize = logs
        .iter()
        .map(|l| {
            std::fs::read_to_string(l)
                .unwrap_or_default()
                .lines()
                .filter(|l| l.starts_with("udp "))
                .count()
        })
        .sum();
    assert_eq!(
        saw,
        2 * POOL_HOSTS as usize,
        "{tag}: every datagram reached its server"
    );
    per_host
}

/// Paired pooling against the kernel: with a pool of 8 outside addresses (10.78.3.0/29, routed
/// to the router by the outside host), every inside host's datagrams to two servers leave from
/// one pool address (RFC 4787 REQ-2 "paired"), their source ports kept, through vecswitch
/// (`set_nat44_pool`, the address chosen by a hash of the host's) and through the kernel (`snat
/// to 10.78.3.0-10.78.3.7 persistent`: nf_nat hashes the source only). Which address a host gets
/// is each one's own hash and is not compared; that there is one per host, in the pool, is.
#[test]
fn a_pool_pairs_each_inside_host_with_one_address_as_the_kernels_persistent_snat() {
    let mut g = Guard::default();
    let in_pool = |a: &str| {
        a.strip_prefix("10.78.3.")
            .and_then(|n| n.parse::<u8>().ok())
            .is_some_and(|n| n < 8)
    };
    let address_hosts = |i: &str, o: &str| {
        addr(i, "10.78.1.2/24", Some("10.78.1.1"));
        for h in 0..POOL_HOSTS {
            ns_must(
                i,
                &[
                    "ip",
                    "addr",
                    "add",
                    &format!("10.78.1.{}/24", 10 + h),
                    "dev",
                    "eth0",
                ],
            );
        }
        addr(o, "10.78.2.2/24", None);
        ns_must(o, &["ip", "addr", "add", "10.78.2.3/24", "dev", "eth0"]);
        ns_must(
            o,
            &["ip", "route", "add", "10.78.3.0/29", "via", "10.78.2.1"],
        );
    };

    // --- vecswitch.
    let (vi, vo) = hosts(&mut g, "w");
    let mut sw = vecswitch_router(&mut g, "w", &vi, &vo);
    address_hosts(&vi, &vo);
    sw.set_nat44_pool(&[("10.78.3.0".parse().unwrap(), "10.78.3.7".parse().unwrap())])
        .unwrap();
    let h = spawn(sw).expect("worker thread");
    let ours = pool_probe(&mut g, &vi, &vo, "w");
    let summary = h.call(|sw| sw.show_nat44_summary()).unwrap();
    h.stop().expect("worker stops");

    // --- The kernel: snat to the same pool, persistent.
    let (ki, ko) = hosts(&mut g, "q");
    kernel_router(
        &mut g,
        "q",
        &ki,
        &ko,
        "oifname \"eth1\" snat to 10.78.3.0-10.78.3.7 persistent",
    );
    address_hosts(&ki, &ko);
    let kernel = pool_probe(&mut g, &ki, &ko, "q");

    for (who, res) in [("vecswitch", &ours), ("kernel", &kernel)] {
        for (host, seen, kept) in res {
            assert_eq!(
                seen.len(),
                1,
                "{who}: {host} left from one address: {res:?}"
            );
            assert!(
                in_pool(&seen[0]),
                "{who}: {host} from a pool address: {res:?}"
            );
            assert!(*kept, "{who}: {host} kept its source port: {res:?}");
        }
    }
    // The same shape: per host, one address in the pool with the port kept, in both.
    let shape = |r: &[(String, Vec<String>, bool)]| -> Vec<(String, usize, bool)> {
        r.iter().map(|(h, s, k)| (h.clone(), s.len(), *k)).collect()
    };
    assert_eq!(shape(&ours), shape(&kernel));
    assert_eq!(
        (summary.sessions, summary.inside_hosts),
        (2 * POOL_HOSTS as usize, POOL_HOSTS as usize),
        "{summary:?}"
    );
}
