//! The firewall against nftables, differentially: a seeded random rule set (100 rules over two
//! interfaces, every action, IPv4 and IPv6 prefixes and family-less rules, protocols, port ranges,
//! ICMP and ICMPv6 types) is installed in vecswitch and, translated rule for rule, in a Linux
//! router namespace's nftables (an `inet` table); the same seeded random traffic of both families
//! (new TCP/UDP/ICMP-echo flows from both sides, their replies and continuations, ICMP errors
//! about them, unsolicited packets) goes through both, round after round; every packet's verdict
//! (forwarded or not) must be the same. 0 disagreements are required, and every kind of packet of
//! each family must meet both verdicts.
//!
//! The kernel's semantics the translation relies on: `ct state established,related ct mark 0
//! accept` first (a reflected connection's packets pass before the rules), then the interface's
//! chain; `deny` → `drop`, `permit` → `ct mark set 1 accept` (the kernel tracks the connection
//! anyway; mark 1 keeps its later packets going through the rules, as vecswitch's stateless
//! permit), `permit-reflect` → `ct mark set 0 accept`. `nf_conntrack_tcp_be_liberal=1` (no TCP
//! window checks: the segments carry made-up sequence numbers), `nf_conntrack_tcp_loose=1`.
//! The traffic keeps to what both define the same way: TCP segments are SYN, SYN-ACK (only as the
//! answer to a delivered SYN), or ACK; no FIN/RST; no fragments.
//!
//! The kernel side: a router namespace (eth0 10.79.1.1/24 and fd79:1::1/64 inside, eth1
//! 10.79.2.1/24 and fd79:2::1/64 outside, default routes via 10.79.2.2 and fd79:2::2, static
//! neighbours) whose veths' host ends are AF_PACKET ports of the test: frames are sent into the
//! router and what it forwards is received. vecswitch: the same addresses, routes and neighbours,
//! loopback ports. Each round's packets are independent (no two share a connection), so their
//! order within the round does not matter; a packet is known again by its index in the round
//! (IPv4: the identification; IPv6: the flow label). A round is complete when the kernel has
//! forwarded as many packets as vecswitch and nothing more arrives.
//!
//! Needs root, `ip`, `nft` (nftables), `sysctl`; scripts/setup.sh installs them. Names carry the
//! pid; the guard deletes the namespace and veths.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::process::Command;
use std::time::{Duration, Instant};

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_ports::loopback::{packet_from_bytes, pair, LoopbackPort};
use vecswitch_ports::{LinkState, Port};
use vecswitch_switch::firewall::{Acl, Action, PortRange, Proto, Rule};
use vecswitch_switch::ip::config::IpPrefix;
use vecswitch_switch::{Switch, SwitchConfig};
use vecswitch_wire::{checksum, EthernetAddress};

const SEED: u64 = 2026_1124;
const ROUNDS: usize = 200;
const PER_ROUND: usize = 500;
const RULES: usize = 100;

const ROUTER_IN_MAC: [u8; 6] = [0x02, 0xfe, 0, 0, 1, 0];
const ROUTER_OUT_MAC: [u8; 6] = [0x02, 0xfe, 0, 0, 1, 1];
const HOST_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const GW_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];
const GW4: &str = "10.79.2.2";
const GW6: &str = "fd79:2::2";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The inside hosts of each family (`[0]` IPv4, `[1]` IPv6).
fn inside_hosts() -> [Vec<IpAddr>; 2] {
    [
        (10..18).map(|i| ip(&format!("10.79.1.{i}"))).collect(),
        (10..18).map(|i| ip(&format!("fd79:1::{i}"))).collect(),
    ]
}

/// The remote hosts of each family.
fn remote_hosts() -> [Vec<IpAddr>; 2] {
    let mut v = [Vec::new(), Vec::new()];
    for (n, net) in ["203.0.113", "198.51.100", "192.0.2"].iter().enumerate() {
        for h in [5, 9, 77, 130, 200] {
            v[0].push(ip(&format!("{net}.{h}")));
            v[1].push(ip(&format!("2001:db8:{}::{h}", n + 1)));
        }
    }
    v
}

fn is6(a: IpAddr) -> bool {
    a.is_ipv6()
}

struct Rng(ChaCha8Rng);

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        self.0.next_u32() % n
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u32) as usize]
    }
    fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent
    }
}

// ----- rules ------------------------------------------------------------------------------------

fn prefix(r: &mut Rng, hosts: &[IpAddr]) -> IpPrefix {
    let h = r.pick(hosts);
    let len = if is6(h) {
        r.pick(&[32u8, 48, 64, 64, 120, 128, 128, 128])
    } else {
        r.pick(&[16u8, 24, 24, 25, 30, 32, 32, 32])
    };
    format!("{h}/{len}").parse::<IpPrefix>().unwrap().network()
}

/// A random rule from hosts `from` to hosts `to`: of no family (20 %), IPv4 or IPv6.
fn random_rule(r: &mut Rng, from: &[Vec<IpAddr>; 2], to: &[Vec<IpAddr>; 2]) -> Rule {
    let action = match r.below(10) {
        0..=3 => Action::Deny,
        4..=5 => Action::Permit,
        _ => Action::PermitReflect,
    };
    let mut rule = Rule::any(action);
    // 0: IPv4, 1: IPv6, 2: no prefixes.
    let family = match r.below(10) {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    };
    if family < 2 {
        if r.chance(75) {
            rule.src = Some(prefix(r, &from[family]));
        }
        if r.chance(75) {
            rule.dst = Some(prefix(r, &to[family]));
        }
    }
    let six = match family {
        0 => false,
        1 => true,
        _ => r.chance(50),
    };
    let icmp = if six { 58u8 } else { 1 };
    let ranges = [
        "22",
        "53",
        "80",
        "443",
        "1-1023",
        "1024-65535",
        "5000-5100",
        "0-40000",
    ];
    match r.below(5) {
        0 => {}
        1 | 2 => {
            let p = r.pick(&["tcp", "udp"]);
            rule.proto = Some(p.parse::<Proto>().unwrap());
            if r.chance(70) {
                rule.dport = Some(r.pick(&ranges).parse::<PortRange>().unwrap());
            }
            if r.chance(25) {
                rule.sport = Some(r.pick(&ranges).parse::<PortRange>().unwrap());
            }
        }
        3 => {
            rule.proto = Some(Proto(icmp));
            if r.chance(60) {
                rule.icmp_type = Some(if six {
                    r.pick(&[1u8, 3, 128, 129, 200])
                } else {
                    r.pick(&[0u8, 3, 8, 9, 11])
                });
            }
        }
        _ => rule.proto = Some(Proto(r.pick(&[6u8, 17, icmp]))),
    }
    rule.validate(0).unwrap();
    rule
}

fn nft_rule(iif: &str, rule: &Rule) -> String {
    let mut s = format!("iifname \"{iif}\"");
    for (p, dir) in [(rule.src, "saddr"), (rule.dst, "daddr")] {
        match p {
            Some(IpPrefix::V4(p)) => s += &format!(" ip {dir} {p}"),
            Some(IpPrefix::V6(p)) => s += &format!(" ip6 {dir} {p}"),
            None => {}
        }
    }
    if let Some(p) = rule.proto {
        s += &format!(" meta l4proto {}", p.0);
        let name = match p.0 {
            6 => "tcp",
            17 => "udp",
            _ => "",
        };
        if let Some(r) = rule.sport {
            s += &format!(" {name} sport {r}");
        }
        if let Some(r) = rule.dport {
            s += &format!(" {name} dport {r}");
        }
    }
    if let Some(t) = rule.icmp_type {
        let name = if rule.proto.map(|p| p.0) == Some(58) {
            "icmpv6"
        } else {
            "icmp"
        };
        s += &format!(" {name} type {t}");
    }
    s + " " + verdict(rule.action)
}

fn verdict(a: Action) -> &'static str {
    match a {
        Action::Deny => "counter drop",
        Action::Permit => "counter ct mark set 1 accept",
        Action::PermitReflect => "counter ct mark set 0 accept",
    }
}

fn nft_ruleset(inside: &Acl, outside: &Acl) -> String {
    let mut s = String::from("table inet vsfw {\n");
    for (chain, iif, acl) in [("acl_in", "eth0", inside), ("acl_out", "eth1", outside)] {
        s += &format!("  chain {chain} {{\n");
        for r in &acl.rules {
            s += &format!("    {}\n", nft_rule(iif, r));
        }
        s += &format!("    {}\n  }}\n", verdict(acl.default_action));
    }
    s += "  chain filter_forward {\n    type filter hook forward priority 0; policy accept;\n";
    s += "    ct state established,related ct mark 0 accept\n";
    s += "    iifname \"eth0\" jump acl_in\n    iifname \"eth1\" jump acl_out\n  }\n}\n";
    s
}

// ----- packets ----------------------------------------------------------------------------------

/// An IPv4 packet (identification `id`) or an IPv6 one (flow label `id`) of protocol `proto`.
fn ip_packet(id: u16, src: IpAddr, dst: IpAddr, proto: u8, l4: &[u8]) -> Vec<u8> {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut h = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0];
            h[4..6].copy_from_slice(&id.to_be_bytes());
            h.extend_from_slice(&s.octets());
            h.extend_from_slice(&d.octets());
            let tl = (20 + l4.len()) as u16;
            h[2..4].copy_from_slice(&tl.to_be_bytes());
            let c = checksum::checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            h.extend_from_slice(l4);
            h
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let mut h = vec![0x60, 0];
            h.extend_from_slice(&id.to_be_bytes());
            h.extend_from_slice(&(l4.len() as u16).to_be_bytes());
            h.extend_from_slice(&[proto, 64]);
            h.extend_from_slice(&s.octets());
            h.extend_from_slice(&d.octets());
            h.extend_from_slice(l4);
            h
        }
        _ => panic!("{src} and {dst}: one family"),
    }
}

/// The L3 header length, the L4 protocol and the round index of packet `ip`.
fn l3(ip: &[u8]) -> (usize, u8, usize) {
    if ip[0] >> 4 == 6 {
        (40, ip[6], u16::from_be_bytes([ip[2], ip[3]]) as usize)
    } else {
        (20, ip[9], u16::from_be_bytes([ip[4], ip[5]]) as usize)
    }
}

fn l4_csum(src: IpAddr, dst: IpAddr, proto: u8, l4: &mut [u8], at: usize) {
    let ph = checksum::pseudo_header(&src, &dst, proto, l4.len() as u32);
    let c = !checksum::combine(&[ph, checksum::sum(l4)]);
    let c = if proto == 17 && c == 0 { 0xffff } else { c };
    l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// What a flow is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Tcp,
    Udp,
    Echo,
}

#[derive(Debug, Clone)]
struct Flow {
    kind: Kind,
    /// The initiator and the responder, with their ports (echo: the identifier as the
    /// initiator's port, 0 as the responder's).
    a: IpAddr,
    ap: u16,
    b: IpAddr,
    bp: u16,
    /// The initiator is inside.
    a_inside: bool,
    /// TCP: the SYN was delivered; the SYN-ACK was delivered.
    syn: bool,
    synack: bool,
    /// The last delivered packet of each direction (for ICMP errors about it).
    last_a: Option<Vec<u8>>,
    last_b: Option<Vec<u8>>,
}

/// One packet of a round: from inside or outside, its bytes, the flow it belongs to, and whether
/// it is an ICMP error.
struct Pkt {
    inside: bool,
    ip: Vec<u8>,
    flow: Option<(usize, bool)>,
    error: bool,
}

/// A packet of flow kind `kind`; `flags`: TCP flags, or for an echo 8 (request: identifier =
/// `sp`) or 0 (reply: identifier = `dp`) — ICMPv6's 128 and 129 for IPv6.
fn l4_packet(
    id: u16,
    kind: Kind,
    src: IpAddr,
    sp: u16,
    dst: IpAddr,
    dp: u16,
    flags: u8,
) -> Vec<u8> {
    match kind {
        Kind::Tcp => {
            let mut t = sp.to_be_bytes().to_vec();
            t.extend_from_slice(&dp.to_be_bytes());
            t.extend_from_slice(&[0, 0, 1, 0, 0, 0, 2, 0, 0x50, flags, 0x72, 0x10, 0, 0, 0, 0]);
            t.extend_from_slice(&id.to_be_bytes());
            l4_csum(src, dst, 6, &mut t, 16);
            ip_packet(id, src, dst, 6, &t)
        }
        Kind::Udp => {
            let mut u = sp.to_be_bytes().to_vec();
            u.extend_from_slice(&dp.to_be_bytes());
            u.extend_from_slice(&[0, 12, 0, 0]);
            u.extend_from_slice(&(id as u32).to_be_bytes());
            l4_csum(src, dst, 17, &mut u, 6);
            ip_packet(id, src, dst, 17, &u)
        }
        Kind::Echo => {
            let ident = if flags == 8 { sp } else { dp };
            let t = match (is6(src), flags) {
                (true, 8) => 128,
                (true, _) => 129,
                (false, t) => t,
            };
            icmp(
                id,
                src,
                dst,
                t,
                &[(ident >> 8) as u8, ident as u8, 0, 1],
                b"echodata",
            )
        }
    }
}

/// An ICMP (IPv4) or ICMPv6 (IPv6, checksum over the pseudo header) message.
fn icmp(id: u16, src: IpAddr, dst: IpAddr, t: u8, rest: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut m = vec![t, 0, 0, 0];
    m.extend_from_slice(rest);
    m.extend_from_slice(data);
    if is6(src) {
        l4_csum(src, dst, 58, &mut m, 2);
        ip_packet(id, src, dst, 58, &m)
    } else {
        let c = checksum::checksum(&m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        ip_packet(id, src, dst, 1, &m)
    }
}

/// A connection: kind, one endpoint, the other.
type ConnKey = (Kind, IpAddr, u16, IpAddr, u16);

/// A canonical key of the connection a packet belongs to (both directions the same).
fn conn_key(kind: Kind, a: IpAddr, ap: u16, b: IpAddr, bp: u16) -> ConnKey {
    if (a, ap) <= (b, bp) {
        (kind, a, ap, b, bp)
    } else {
        (kind, b, bp, a, ap)
    }
}

struct Traffic {
    rng: Rng,
    flows: Vec<Flow>,
    known: HashSet<ConnKey>,
    inside: [Vec<IpAddr>; 2],
    remote: [Vec<IpAddr>; 2],
}

impl Traffic {
    fn port(&mut self) -> u16 {
        let well_known = [22u16, 53, 80, 443, 5050, 1000, 8080];
        if self.rng.chance(50) {
            self.rng.pick(&well_known)
        } else {
            1 + self.rng.below(65535) as u16
        }
    }

    /// A new flow from a random side with fresh ports.
    fn new_flow(&mut self) -> usize {
        loop {
            let kind = match self.rng.below(3) {
                0 => Kind::Tcp,
                1 => Kind::Udp,
                _ => Kind::Echo,
            };
            let a_inside = self.rng.chance(60);
            let f = self.rng.below(2) as usize;
            let (ins, rem) = (
                self.rng.pick(&self.inside[f].clone()),
                self.rng.pick(&self.remote[f].clone()),
            );
            let (a, b) = if a_inside { (ins, rem) } else { (rem, ins) };
            let ap = 1024 + self.rng.below(64000) as u16;
            let bp = if kind == Kind::Echo { 0 } else { self.port() };
            let k = conn_key(kind, a, ap, b, bp);
            if self.known.insert(k) {
                self.flows.push(Flow {
                    kind,
                    a,
                    ap,
                    b,
                    bp,
                    a_inside,
                    syn: false,
                    synack: false,
                    last_a: None,
                    last_b: None,
                });
                return self.flows.len() - 1;
            }
        }
    }

    /// One round's packets: each touches a different connection.
    fn round(&mut self, n: usize) -> Vec<Pkt> {
        let mut used: HashSet<usize> = HashSet::new();
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let id = out.len() as u16;
            let roll = self.rng.below(100);
            if roll < 35 || self.flows.is_empty() {
                // A new flow's first packet (TCP: a SYN, or an ACK picked up mid-stream).
                let f = self.new_flow();
                used.insert(f);
                let fl = self.flows[f].clone();
                let flags = if fl.kind == Kind::Tcp {
                    if self.rng.chance(80) {
                        0x02
                    } else {
                        0x10
                    }
                } else {
                    8
                };
                let ip = l4_packet(id, fl.kind, fl.a, fl.ap, fl.b, fl.bp, flags);
                out.push(Pkt {
                    inside: fl.a_inside,
                    ip,
                    flow: Some((f, true)),
                    error: false,
                });
            } else if roll < 80 {
                // A later packet of a known flow, either way.
                let f = self.rng.below(self.flows.len() as u32) as usize;
                if !used.insert(f) {
                    continue;
                }
                let fl = self.flows[f].clone();
                let from_a = self.rng.chance(40);
                let (flags, from_a) = match fl.kind {
                    Kind::Tcp if fl.syn && !fl.synack => (0x12, false),
                    Kind::Tcp if fl.synack => (0x10, from_a),
                    Kind::Tcp => (0x02, true),
                    Kind::Udp => (0, from_a),
                    Kind::Echo => (if from_a { 8 } else { 0 }, from_a),
                };
                let ip = if from_a {
                    l4_packet(id, fl.kind, fl.a, fl.ap, fl.b, fl.bp, flags)
                } else {
                    l4_packet(id, fl.kind, fl.b, fl.bp, fl.a, fl.ap, flags)
                };
                let inside = fl.a_inside == from_a;
                out.push(Pkt {
                    inside,
                    ip,
                    flow: Some((f, from_a)),
                    error: false,
                });
            } else if roll < 90 {
                // An ICMP error about a delivered packet, back to its source.
                let f = self.rng.below(self.flows.len() as u32) as usize;
                if !used.insert(f) {
                    continue;
                }
                let fl = self.flows[f].clone();
                let (about, to_a) = match (&fl.last_a, &fl.last_b) {
                    (Some(p), _) if self.rng.chance(70) => (p.clone(), true),
                    (_, Some(p)) => (p.clone(), false),
                    (Some(p), None) => (p.clone(), true),
                    _ => continue,
                };
                let (from, to) = if to_a { (fl.b, fl.a) } else { (fl.a, fl.b) };
                // Destination unreachable or time exceeded, with the header and 8 bytes.
                let (t, quoted) = if is6(from) {
                    (self.rng.pick(&[1u8, 3]), 48)
                } else {
                    (self.rng.pick(&[3u8, 11]), 28)
                };
                let ip = icmp(id, from, to, t, &[0; 4], &about[..quoted.min(about.len())]);
                // Sent by the side the erroring packet went to.
                let inside = fl.a_inside != to_a;
                out.push(Pkt {
                    inside,
                    ip,
                    flow: None,
                    error: true,
                });
            } else {
                // Unsolicited: a random packet with a random tuple, or an ICMP type no one tracks.
                let inside = self.rng.chance(30);
                let f = self.rng.below(2) as usize;
                let (ins, rem) = (
                    self.rng.pick(&self.inside[f].clone()),
                    self.rng.pick(&self.remote[f].clone()),
                );
                let (s, d) = if inside { (ins, rem) } else { (rem, ins) };
                let (sp, dp) = (self.port(), self.port());
                if self.known.contains(&conn_key(Kind::Tcp, s, sp, d, dp))
                    || self.known.contains(&conn_key(Kind::Udp, s, sp, d, dp))
                {
                    continue;
                }
                let ip = match self.rng.below(4) {
                    0 => l4_packet(id, Kind::Tcp, s, sp, d, dp, 0x02),
                    1 => l4_packet(id, Kind::Udp, s, sp, d, dp, 0),
                    // A router advertisement (IPv4), a private-experimentation type (ICMPv6
                    // 200, RFC 4443 §2.1): no one tracks either.
                    2 => icmp(id, s, d, if f == 1 { 200 } else { 9 }, &[0; 4], b"advert"),
                    _ => {
                        // An echo reply no request asked for (its identifier unused).
                        if self.known.contains(&conn_key(Kind::Echo, d, sp, s, 0)) {
                            continue;
                        }
                        l4_packet(id, Kind::Echo, s, 0, d, sp, 0)
                    }
                };
                out.push(Pkt {
                    inside,
                    ip,
                    flow: None,
                    error: false,
                });
            }
        }
        out
    }

    /// Notes what was delivered (vecswitch's verdicts; the kernel's are compared to them).
    fn delivered(&mut self, pkts: &[Pkt], passed: &[bool]) {
        for (p, &ok) in pkts.iter().zip(passed) {
            let (Some((f, from_a)), true) = (p.flow, ok) else {
                continue;
            };
            let fl = &mut self.flows[f];
            if fl.kind == Kind::Tcp {
                let flags = p.ip[l3(&p.ip).0 + 13];
                if flags == 0x02 {
                    fl.syn = true;
                } else if flags == 0x12 {
                    fl.synack = true;
                } else if !fl.syn {
                    // An ACK picked up mid-stream: the connection is as good as open.
                    fl.syn = true;
                    fl.synack = true;
                }
            }
            if from_a {
                fl.last_a = Some(p.ip.clone());
            } else {
                fl.last_b = Some(p.ip.clone());
            }
        }
    }
}

// ----- the two devices --------------------------------------------------------------------------

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("`{cmd}` must be installed (scripts/setup.sh): {e}"));
    assert!(
        out.status.success(),
        "{cmd} {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn nsx(ns: &str, args: &[&str]) -> String {
    let mut a = vec!["netns", "exec", ns];
    a.extend_from_slice(args);
    run("ip", &a)
}

struct Guard {
    ns: String,
    links: [String; 2],
    file: String,
}

impl Drop for Guard {
    fn drop(&mut self) {
        for l in &self.links {
            let _ = Command::new("ip").args(["link", "del", l]).output();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
        let _ = std::fs::remove_file(&self.file);
    }
}

fn af_port(name: &str, ifname: &str) -> AfPacketPort {
    let p = AfPacketPort::open(AfPacketConfig::new(name, ifname)).expect("open AF_PACKET port");
    let deadline = Instant::now() + Duration::from_secs(5);
    while p.link() != LinkState::Up {
        assert!(Instant::now() < deadline, "{ifname} never came up");
        std::thread::sleep(Duration::from_millis(10));
    }
    p
}

/// The kernel router with `ruleset`; returns the guard and the two host-side ports.
fn kernel_router(ruleset: &str, inside: &[IpAddr]) -> (Guard, AfPacketPort, AfPacketPort) {
    let id = std::process::id() % 1_000_000;
    let g = Guard {
        ns: format!("vsf{id}r"),
        links: [format!("vsf{id}I"), format!("vsf{id}O")],
        file: format!("/tmp/vsf{id}.nft"),
    };
    run("ip", &["netns", "add", &g.ns]);
    for (i, (host, inner, mac)) in [
        (&g.links[0], "eth0", ROUTER_IN_MAC),
        (&g.links[1], "eth1", ROUTER_OUT_MAC),
    ]
    .into_iter()
    .enumerate()
    {
        let peer = format!("{host}p");
        run(
            "ip",
            &["link", "add", host, "type", "veth", "peer", "name", &peer],
        );
        let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{host}/disable_ipv6"), "1");
        run("ip", &["link", "set", &peer, "netns", &g.ns]);
        nsx(&g.ns, &["ip", "link", "set", &peer, "name", inner]);
        let m = EthernetAddress(mac).to_string();
        nsx(&g.ns, &["ip", "link", "set", inner, "address", &m]);
        nsx(&g.ns, &["ip", "link", "set", inner, "up"]);
        run("ip", &["link", "set", host, "up"]);
        let a = format!("10.79.{}.1/24", i + 1);
        nsx(&g.ns, &["ip", "addr", "add", &a, "dev", inner]);
        nsx(
            &g.ns,
            &[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{inner}.disable_ipv6=0"),
            ],
        );
        let a6 = format!("fd79:{}::1/64", i + 1);
        nsx(&g.ns, &["ip", "addr", "add", &a6, "dev", inner, "nodad"]);
    }
    for s in [
        "net.ipv6.conf.all.forwarding=1",
        "net.ipv4.ip_forward=1",
        "net.ipv4.conf.all.rp_filter=0",
        "net.ipv4.conf.default.rp_filter=0",
        "net.ipv4.conf.all.send_redirects=0",
        "net.netfilter.nf_conntrack_tcp_be_liberal=1",
        "net.netfilter.nf_conntrack_tcp_loose=1",
    ] {
        nsx(&g.ns, &["sysctl", "-qw", s]);
    }
    let host_mac = EthernetAddress(HOST_MAC).to_string();
    for h in inside {
        let a = h.to_string();
        nsx(
            &g.ns,
            &[
                "ip",
                "neigh",
                "add",
                &a,
                "lladdr",
                &host_mac,
                "dev",
                "eth0",
                "nud",
                "permanent",
            ],
        );
    }
    let gw_mac = EthernetAddress(GW_MAC).to_string();
    for gw in [GW4, GW6] {
        nsx(
            &g.ns,
            &[
                "ip",
                "neigh",
                "add",
                gw,
                "lladdr",
                &gw_mac,
                "dev",
                "eth1",
                "nud",
                "permanent",
            ],
        );
    }
    nsx(&g.ns, &["ip", "route", "add", "default", "via", GW4]);
    nsx(&g.ns, &["ip", "-6", "route", "add", "default", "via", GW6]);
    std::fs::write(&g.file, ruleset).unwrap();
    nsx(&g.ns, &["nft", "-f", &g.file]);
    let pin = af_port("kin", &g.links[0]);
    let pout = af_port("kout", &g.links[1]);
    (g, pin, pout)
}

fn vecswitch(inside: &[IpAddr], acl_in: Acl, acl_out: Acl) -> (Switch, LoopbackPort, LoopbackPort) {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 8192,
        mac_table_entries: 1024,
        ..Default::default()
    });
    let (a, pin) = pair("in", "in-peer");
    let (b, pout) = pair("out", "out-peer");
    sw.add_port("in", Box::new(a)).unwrap();
    sw.add_port("out", Box::new(b)).unwrap();
    for (iface, n) in [("in", 1), ("out", 2)] {
        sw.ip_add_address(iface, format!("10.79.{n}.1/24").parse().unwrap())
            .unwrap();
        sw.ip6_add_address(iface, format!("fd79:{n}::1/64").parse().unwrap())
            .unwrap();
    }
    for h in inside {
        let added = match *h {
            IpAddr::V4(a) => sw.ip_add_neighbor("in", a, EthernetAddress(HOST_MAC)),
            IpAddr::V6(a) => sw.ip6_add_neighbor("in", a, EthernetAddress(HOST_MAC)),
        };
        added.unwrap();
    }
    let (gw4, gw6): (Ipv4Addr, Ipv6Addr) = (GW4.parse().unwrap(), GW6.parse().unwrap());
    sw.ip_add_neighbor("out", gw4, EthernetAddress(GW_MAC))
        .unwrap();
    sw.ip6_add_neighbor("out", gw6, EthernetAddress(GW_MAC))
        .unwrap();
    sw.ip_add_route(0, "0.0.0.0/0".parse().unwrap(), &[gw4])
        .unwrap();
    sw.ip6_add_route(0, "::/0".parse().unwrap(), &[gw6])
        .unwrap();
    sw.firewall_set_acl("in", Some(acl_in)).unwrap();
    sw.firewall_set_acl("out", Some(acl_out)).unwrap();
    (sw, pin, pout)
}

fn frame(dst: [u8; 6], src: [u8; 6], ip: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    let ethertype: u16 = if ip[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(ip);
    f
}

/// The round indices (IPv4 identification, IPv6 flow label) of the IP frames in `hs` that match
/// a packet of `pkts` (same addresses and protocol), freeing the buffers.
fn collect(pool: &mut Pool, hs: &[u32], pkts: &[Pkt], got: &mut HashSet<usize>) {
    let mut v = Vec::new();
    for &h in hs {
        v.clear();
        pool.copy_out(h, &mut v);
        let addrs = match v.get(12..14) {
            Some([0x08, 0x00]) if v.len() >= 34 => 12..20,
            Some([0x86, 0xdd]) if v.len() >= 54 => 8..40,
            _ => continue,
        };
        let ip = &v[14..];
        let (_, proto, i) = l3(ip);
        if let Some(p) = pkts.get(i) {
            if l3(&p.ip).1 == proto
                && p.ip[..1] == ip[..1]
                && p.ip[addrs.clone()] == ip[addrs.clone()]
            {
                got.insert(i);
            }
        }
    }
    pool.free_bulk(hs);
}

#[test]
fn verdicts_equal_nftables_on_random_rules_and_traffic() {
    let mut rng = Rng(ChaCha8Rng::seed_from_u64(SEED));
    let inside = inside_hosts();
    let remote = remote_hosts();
    // 100 rules: 60 on the inside interface, 40 on the outside one.
    let acl_in = Acl {
        rules: (0..RULES * 3 / 5)
            .map(|_| random_rule(&mut rng, &inside, &remote))
            .collect(),
        default_action: Action::Deny,
    };
    let acl_out = Acl {
        rules: (0..RULES * 2 / 5)
            .map(|_| random_rule(&mut rng, &remote, &inside))
            .collect(),
        default_action: Action::Deny,
    };
    let ruleset = nft_ruleset(&acl_in, &acl_out);
    let all_inside: Vec<IpAddr> = inside.concat();
    let (_guard, mut kin, mut kout) = kernel_router(&ruleset, &all_inside);
    let (mut sw, mut vin, mut vout) = vecswitch(&all_inside, acl_in, acl_out);
    let mut traffic = Traffic {
        rng,
        flows: Vec::new(),
        known: HashSet::new(),
        inside: inside.clone(),
        remote,
    };
    let mut pool = Pool::new(8192);
    let mut hs = Vec::new();
    let mut disagreements = Vec::new();
    let (mut total, mut passed_total, mut disagreeing) = (0usize, 0usize, 0usize);
    // vecswitch's interfaces' own MACs (the frames to it are addressed to them).
    let sw_macs: Vec<[u8; 6]> = sw
        .show_interfaces()
        .iter()
        .map(|i| {
            let b: Vec<u8> = i
                .mac
                .split(':')
                .map(|x| u8::from_str_radix(x, 16).unwrap())
                .collect();
            [b[0], b[1], b[2], b[3], b[4], b[5]]
        })
        .collect();
    let mut by_kind: HashMap<&str, (usize, usize)> = HashMap::new();
    for round in 0..ROUNDS {
        let pkts = traffic.round(PER_ROUND);
        // vecswitch.
        for (port, side) in [(&mut vin, true), (&mut vout, false)] {
            let mac = if side { sw_macs[0] } else { sw_macs[1] };
            let src = if side { HOST_MAC } else { GW_MAC };
            let frames: Vec<u32> = pkts
                .iter()
                .filter(|p| p.inside == side)
                .map(|p| packet_from_bytes(&mut pool, &frame(mac, src, &p.ip)).unwrap())
                .collect();
            for chunk in frames.chunks(256) {
                assert_eq!(port.tx_burst(&mut pool, chunk), chunk.len());
            }
            pool.free_bulk(&frames);
        }
        while sw.poll_once() > 0 {}
        let mut ours = HashSet::new();
        for port in [&mut vin, &mut vout] {
            loop {
                hs.clear();
                if port.rx_burst(&mut pool, &mut hs, 256) == 0 {
                    break;
                }
                collect(&mut pool, &hs, &pkts, &mut ours);
            }
        }
        // The kernel.
        for (port, side) in [(&mut kin, true), (&mut kout, false)] {
            let mac = if side { ROUTER_IN_MAC } else { ROUTER_OUT_MAC };
            let src = if side { HOST_MAC } else { GW_MAC };
            let frames: Vec<u32> = pkts
                .iter()
                .filter(|p| p.inside == side)
                .map(|p| packet_from_bytes(&mut pool, &frame(mac, src, &p.ip)).unwrap())
                .collect();
            for chunk in frames.chunks(64) {
                assert_eq!(port.tx_burst(&mut pool, chunk), chunk.len(), "kernel tx");
            }
            pool.free_bulk(&frames);
        }
        let mut theirs = HashSet::new();
        let mut last = Instant::now();
        let start = Instant::now();
        loop {
            let mut n = 0;
            for port in [&mut kin, &mut kout] {
                hs.clear();
                n += port.rx_burst(&mut pool, &mut hs, 256);
                collect(&mut pool, &hs, &pkts, &mut theirs);
            }
            if n > 0 {
                last = Instant::now();
            }
            let quiet = last.elapsed();
            if (theirs.len() >= ours.len() && quiet > Duration::from_millis(30))
                || quiet > Duration::from_secs(2)
                || start.elapsed() > Duration::from_secs(20)
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let passed: Vec<bool> = (0..pkts.len()).map(|i| ours.contains(&i)).collect();
        for (i, p) in pkts.iter().enumerate() {
            let v6 = p.ip[0] >> 4 == 6;
            let kind = match (p.error, p.flow, v6) {
                (true, _, false) => "icmp-error/v4",
                (true, _, true) => "icmp-error/v6",
                (_, None, false) => "unsolicited/v4",
                (_, None, true) => "unsolicited/v6",
                (_, Some((_, true)), false) => "from-initiator/v4",
                (_, Some((_, true)), true) => "from-initiator/v6",
                (_, Some((_, false)), false) => "from-responder/v4",
                (_, Some((_, false)), true) => "from-responder/v6",
            };
            let e = by_kind.entry(kind).or_default();
            e.0 += 1;
            e.1 += passed[i] as usize;
            if passed[i] != theirs.contains(&i) && disagreements.len() < 20 {
                disagreements.push(format!(
                    "round {round} packet {i} ({kind}, from {}): vecswitch {} kernel {}: {:02x?}",
                    if p.inside { "inside" } else { "outside" },
                    passed[i],
                    theirs.contains(&i),
                    &p.ip[..p.ip.len().min(64)]
                ));
            }
            if passed[i] != theirs.contains(&i) {
                disagreeing += 1;
            }
        }
        passed_total += passed.iter().filter(|&&b| b).count();
        total += pkts.len();
        traffic.delivered(&pkts, &passed);
    }
    let sent = total;
    let fw = sw.show_firewall();
    eprintln!(
        "{sent} packets, {passed_total} forwarded, {disagreeing} disagreements; by kind (sent, forwarded): {by_kind:?}; connections {} reflected {}",
        fw.connections, fw.reflected
    );
    assert_eq!(disagreeing, 0, "{}", disagreements.join("\n"));
    assert_eq!(sent, ROUNDS * PER_ROUND);
    // The traffic exercised every outcome.
    for kind in [
        "from-initiator",
        "from-responder",
        "icmp-error",
        "unsolicited",
    ] {
        for family in ["v4", "v6"] {
            let (s, p) = by_kind[format!("{kind}/{family}").as_str()];
            assert!(
                p > 0 && p < s,
                "{kind}/{family}: {p} of {s} forwarded: both verdicts must occur"
            );
        }
    }
    for kind in ["v4", "v6"] {
        let (s, p): (usize, usize) = by_kind
            .iter()
            .filter(|(k, _)| k.ends_with(kind))
            .fold((0, 0), |a, (_, v)| (a.0 + v.0, a.1 + v.1));
        assert!(
            p > 0 && p < s,
            "{kind}: {p} of {s} forwarded: both verdicts must occur"
        );
        assert!(s > ROUNDS * PER_ROUND / 3, "{kind}: {s} packets");
    }
    let hits: u64 = fw
        .acls
        .iter()
        .flat_map(|a| a.rules.iter().map(|r| r.hits))
        .sum();
    assert!(hits > 0);
}
