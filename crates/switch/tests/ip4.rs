//! The IPv4 path and ARP, node by node, with exact bytes: frames built from byte arrays (and a
//! builder whose checksum is this file's own RFC 1071 sum, independent of `wire`) go in through a
//! loopback port; the exact frames that come out, the drop reasons in `show errors` and the
//! buffer pool returning to zero are checked.
//!
//! Topology: `p0` 10.0.0.1/24 (host A 10.0.0.2, MAC 02:00:00:00:00:0a), `p1` 10.1.0.1/24 (host B
//! 10.1.0.2, MAC 02:00:00:00:00:0b), route 192.168.0.0/16 via B.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_graph::testing::run;
use vecswitch_graph::Node;
use vecswitch_ports::loopback::LoopbackPort;
use vecswitch_switch::ip::{ip4_input, Ip4Input, IpInterface, IpSettings, Ipv4Prefix};
use vecswitch_switch::state::{PortSlot, SwitchState};
use vecswitch_switch::{Switch, SwitchConfig, SwitchError};
use vecswitch_wire::EthernetAddress;

const MAC_R0: [u8; 6] = [0x02, 0xfe, 0, 0, 0, 0];
const MAC_R1: [u8; 6] = [0x02, 0xfe, 0, 0, 0, 1];
const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];
const R0: [u8; 4] = [10, 0, 0, 1];
const R1: [u8; 4] = [10, 1, 0, 1];
const A: [u8; 4] = [10, 0, 0, 2];
const B: [u8; 4] = [10, 1, 0, 2];
const FAR: [u8; 4] = [192, 168, 1, 1];

/// RFC 1071 checksum, written here so that the test does not trust the code under test.
fn csum(b: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in b.chunks(2) {
        s += (c[0] as u32) << 8 | *c.get(1).unwrap_or(&0) as u32;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

fn verifies(b: &[u8]) -> bool {
    csum(b) == 0
}

/// An IPv4 packet (DF set, ident 0x1234) with a correct header checksum.
fn ipv4(src: [u8; 4], dst: [u8; 4], ttl: u8, proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, ttl, proto, 0, 0];
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let tl = (20 + payload.len()) as u16;
    h[2..4].copy_from_slice(&tl.to_be_bytes());
    let c = csum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

fn icmp(t: u8, code: u8, rest: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut m = vec![t, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(data);
    let c = csum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A UDP datagram's bytes (checksum 0: none, RFC 768) from port 1000 to 2000.
fn udp(len: usize) -> Vec<u8> {
    let mut u = vec![0x03, 0xe8, 0x07, 0xd0, 0, 0, 0, 0];
    u[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    u.extend((0..len - 8).map(|i| i as u8));
    u
}

fn arp(op: u16, smac: [u8; 6], sip: [u8; 4], tmac: [u8; 6], tip: [u8; 4]) -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4];
    a.extend_from_slice(&op.to_be_bytes());
    a.extend_from_slice(&smac);
    a.extend_from_slice(&sip);
    a.extend_from_slice(&tmac);
    a.extend_from_slice(&tip);
    a
}

fn p(s: &str) -> Ipv4Prefix {
    s.parse().unwrap()
}

struct Lab {
    sw: Switch,
    p0: LoopbackPort,
    p1: LoopbackPort,
    pool: Pool,
}

impl Lab {
    /// The topology of the module doc; `static_neighbors`: A and B are static neighbours.
    fn new(static_neighbors: bool) -> Lab {
        let mut sw = Switch::new(SwitchConfig {
            buffers: 4096,
            mac_table_entries: 1024,
            ..Default::default()
        });
        let (a, p0) = wire("p0");
        let (b, p1) = wire("p1");
        sw.add_port("p0", a).unwrap();
        sw.add_port("p1", b).unwrap();
        sw.ip_add_address("p0", p("10.0.0.1/24")).unwrap();
        sw.ip_add_address("p1", p("10.1.0.1/24")).unwrap();
        sw.ip_add_route(0, p("192.168.0.0/16"), &[Ipv4Addr::from(B)])
            .unwrap();
        if static_neighbors {
            sw.ip_add_neighbor("p0", A.into(), EthernetAddress(MAC_A))
                .unwrap();
            sw.ip_add_neighbor("p1", B.into(), EthernetAddress(MAC_B))
                .unwrap();
        }
        Lab {
            sw,
            p0,
            p1,
            pool: Pool::new(4096),
        }
    }

    /// Sends frames into port 0 or 1 and runs the switch until it is idle.
    fn send(&mut self, port: usize, frames: &[Vec<u8>]) {
        let peer = if port == 0 {
            &mut self.p0
        } else {
            &mut self.p1
        };
        send(peer, &mut self.pool, frames);
        while self.sw.poll_once() > 0 {}
    }

    fn out(&mut self, port: usize) -> Vec<Vec<u8>> {
        let peer = if port == 0 {
            &mut self.p0
        } else {
            &mut self.p1
        };
        drain(peer, &mut self.pool)
    }

    fn errors(&self) -> Vec<(String, String, u64)> {
        self.sw
            .show_errors()
            .into_iter()
            .map(|e| (e.node, e.reason, e.count))
            .collect()
    }

    fn count(&self, node: &str, reason: &str) -> u64 {
        self.sw
            .show_errors()
            .iter()
            .find(|e| e.node == node && e.reason == reason)
            .map_or(0, |e| e.count)
    }
}

/// The one fully literal case: an echo request to the switch's address and its reply, byte for
/// byte (computed outside this code base).
#[test]
fn echo_request_to_the_switch_gets_the_exact_reply() {
    let req: Vec<u8> = vec![
        0x02, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x2c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01, 0x14, 0x9b, 0x0a, 0x00, 0x00, 0x02,
        0x0a, 0x00, 0x00, 0x01, 0x08, 0x00, 0xad, 0x8a, 0x12, 0x34, 0x00, 0x01, 0x00, 0x01, 0x02,
        0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    ];
    let rep: Vec<u8> = vec![
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x02, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x2c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01, 0x14, 0x9b, 0x0a, 0x00, 0x00, 0x01,
        0x0a, 0x00, 0x00, 0x02, 0x00, 0x00, 0xb5, 0x8a, 0x12, 0x34, 0x00, 0x01, 0x00, 0x01, 0x02,
        0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    ];
    let mut lab = Lab::new(true);
    // Padded to the Ethernet minimum: the reply carries the IP packet only.
    let mut padded = req.clone();
    padded.resize(60, 0);
    lab.send(0, &[req, padded]);
    assert_eq!(lab.out(0), vec![rep.clone(), rep]);
    assert!(lab.out(1).is_empty());
    assert_eq!(lab.count("ip4-local", "echo-replies"), 2);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn echo_to_the_other_interfaces_address_is_answered_from_it() {
    let mut lab = Lab::new(true);
    let req = eth(
        MAC_R0,
        MAC_A,
        0x0800,
        &ipv4(A, R1, 64, 1, &icmp(8, 0, [0, 7, 0, 9], b"abcdefgh")),
    );
    lab.send(0, &[req]);
    let want = eth(
        MAC_A,
        MAC_R0,
        0x0800,
        &ipv4(R1, A, 64, 1, &icmp(0, 0, [0, 7, 0, 9], b"abcdefgh")),
    );
    assert_eq!(lab.out(0), vec![want]);
}

#[test]
fn forwarding_rewrites_macs_and_decrements_ttl_incrementally() {
    let mut lab = Lab::new(true);
    // TTLs whose decrement carries through the checksum in different ways.
    for ttl in [64u8, 2, 255, 128] {
        let body = udp(30);
        let inp = eth(MAC_R0, MAC_A, 0x0800, &ipv4(A, FAR, ttl, 17, &body));
        lab.send(0, &[inp]);
        let want = eth(MAC_B, MAC_R1, 0x0800, &ipv4(A, FAR, ttl - 1, 17, &body));
        let out = lab.out(1);
        assert_eq!(out, vec![want], "ttl {ttl}");
        assert!(verifies(&out[0][14..34]), "header checksum verifies");
    }
    // To a connected host: the destination is the neighbour.
    let inp = eth(MAC_R1, MAC_B, 0x0800, &ipv4(B, A, 9, 17, &udp(8)));
    lab.send(1, &[inp]);
    assert_eq!(
        lab.out(0),
        vec![eth(MAC_A, MAC_R0, 0x0800, &ipv4(B, A, 8, 17, &udp(8)))]
    );
    assert!(lab.errors().is_empty(), "{:?}", lab.errors());
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn every_burst_size_is_forwarded() {
    let mut lab = Lab::new(true);
    for n in [1usize, 3, 4, 5, 255, 256, 257] {
        let frames: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let dst = [192, 168, (i >> 8) as u8, i as u8];
                eth(MAC_R0, MAC_A, 0x0800, &ipv4(A, dst, 64, 17, &udp(18)))
            })
            .collect();
        lab.send(0, &frames);
        let out = lab.out(1);
        assert_eq!(out.len(), n, "burst {n}");
        for (i, f) in out.iter().enumerate() {
            assert_eq!(&f[..12], &[MAC_B, MAC_R1].concat()[..]);
            assert_eq!(f[22], 63);
            assert_eq!(f[33], i as u8, "order kept");
            assert!(verifies(&f[14..34]));
        }
    }
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

/// `ip4-input` alone: every drop reason, from byte arrays.
#[test]
fn ip4_input_drops_each_bad_header_with_its_reason() {
    let mut st = SwitchState::new(16);
    st.insert_port(
        0,
        PortSlot::new(
            "p0",
            Box::new(
                vecswitch_ports::loopback::Replay::new("p0", vec![vec![0u8; 60]])
                    .unwrap()
                    .with_limit(0),
            ),
        ),
    );
    st.ip.v4.ifaces = vec![IpInterface {
        addrs: vec![p("10.0.0.1/24")],
    }];
    let good = ipv4(A, FAR, 64, 17, &udp(12));
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    cases.push(("ok", good.clone()));
    cases.push(("truncated", good[..19].to_vec()));
    let mut v6 = good.clone();
    v6[0] = 0x65;
    cases.push(("bad-version", v6));
    let mut ihl4 = good.clone();
    ihl4[0] = 0x44;
    cases.push(("bad-header-length", ihl4));
    let mut ihl15 = good.clone();
    ihl15[0] = 0x4f; // 60-byte header in a 40-byte packet
    cases.push(("truncated", ihl15));
    let mut sum = good.clone();
    sum[11] ^= 1;
    cases.push(("bad-checksum", sum));
    let mut long = good.clone();
    long[2..4].copy_from_slice(&41u16.to_be_bytes());
    let c = csum(&{
        let mut h = long[..20].to_vec();
        h[10] = 0;
        h[11] = 0;
        h
    });
    long[10..12].copy_from_slice(&c.to_be_bytes());
    cases.push(("bad-total-length", long.clone()));
    let mut short = long;
    short[2..4].copy_from_slice(&19u16.to_be_bytes());
    short[10] = 0;
    short[11] = 0;
    let c = csum(&short[..20]);
    short[10..12].copy_from_slice(&c.to_be_bytes());
    cases.push(("bad-total-length", short));
    // With options (IHL 6, one NOP + EOL word): forwarded by default, dropped when not allowed.
    let mut opt = vec![0x46, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0];
    opt.extend_from_slice(&A);
    opt.extend_from_slice(&FAR);
    opt.extend_from_slice(&[1, 0, 0, 0]);
    let tl = (24 + 20) as u16;
    opt[2..4].copy_from_slice(&tl.to_be_bytes());
    let c = csum(&opt);
    opt[10..12].copy_from_slice(&c.to_be_bytes());
    opt.extend_from_slice(&udp(20));
    cases.push(("ok", opt.clone()));
    // Padding after the packet is fine.
    let mut padded = good.clone();
    padded.extend_from_slice(&[0; 10]);
    cases.push(("ok", padded));
    cases.push(("ttl-expired", ipv4(A, FAR, 1, 17, &udp(12))));
    cases.push(("ttl-expired", ipv4(A, FAR, 0, 17, &udp(12))));
    // TTL 1 to the switch itself is delivered (only forwarded packets expire).
    cases.push(("ok", ipv4(A, R0, 1, 17, &udp(12))));

    let mut pool = Pool::new(256);
    let pkts: Vec<u32> = cases
        .iter()
        .map(|(_, b)| {
            let h = packet(&mut pool, &eth(MAC_R0, MAC_A, 0x0800, b));
            pool.header_mut(h).l3_offset = 14;
            h
        })
        .collect();
    let r = run(&mut Ip4Input, &mut pool, &mut st, &pkts);
    for ((want, _), got) in cases.iter().zip(&r.nexts) {
        let want = match *want {
            "ok" => vecswitch_graph::Next::arc(vecswitch_switch::ip::IP4_UNICAST_ARC),
            w => {
                let i = ip4_input::DropReason::NAMES
                    .iter()
                    .position(|n| *n == w)
                    .unwrap();
                vecswitch_graph::Next::drop(i as u16)
            }
        };
        assert_eq!(*got, want);
    }
    // Each expired packet made one ICMP time exceeded, to ip4-lookup.
    assert_eq!(r.emitted.len(), 2);
    assert_eq!(r.counters[0], 2, "icmp-sent");
    let mut bytes = Vec::new();
    pool.copy_out(r.emitted[0].0, &mut bytes);
    let want = eth(
        [0; 6],
        [0; 6],
        0x0800,
        &icmp_error_ip(11, 0, [0; 4], &ipv4(A, FAR, 1, 17, &udp(12))),
    );
    assert_eq!(bytes, want);

    // Options refused when configured so.
    st.ip.settings = IpSettings {
        allow_options: false,
        ..Default::default()
    };
    let h = packet(&mut pool, &eth(MAC_R0, MAC_A, 0x0800, &opt));
    pool.header_mut(h).l3_offset = 14;
    let r = run(&mut Ip4Input, &mut pool, &mut st, &[h]);
    assert_eq!(
        r.nexts,
        vec![ip4_input::DropReason::OptionsNotAllowed.next()]
    );
    assert_eq!(Ip4Input.info().name, "ip4-input");
}

/// The ICMP error about `offending` the test expects (RFC 792: the offending header and 8 bytes
/// of its data; TOS 0xc0, TTL 64, ident 0, DF clear), from R0 to A, in a frame from the switch.
fn icmp_error_frame(t: u8, code: u8, rest: [u8; 4], offending: &[u8]) -> Vec<u8> {
    eth(
        MAC_A,
        MAC_R0,
        0x0800,
        &icmp_error_ip(t, code, rest, offending),
    )
}

fn icmp_error_ip(t: u8, code: u8, rest: [u8; 4], offending: &[u8]) -> Vec<u8> {
    let ihl = (offending[0] & 0x0f) as usize * 4;
    let quoted = &offending[..(ihl + 8).min(offending.len())];
    let mut ip = ipv4(R0, A, 64, 1, &icmp(t, code, rest, quoted));
    ip[1] = 0xc0;
    ip[4..8].copy_from_slice(&[0, 0, 0, 0]);
    ip[10] = 0;
    ip[11] = 0;
    let c = csum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip
}

#[test]
fn ttl_expiry_sends_time_exceeded_to_the_sender() {
    let mut lab = Lab::new(true);
    let off = ipv4(A, FAR, 1, 17, &udp(30));
    lab.send(0, &[eth(MAC_R0, MAC_A, 0x0800, &off)]);
    assert_eq!(lab.out(0), vec![icmp_error_frame(11, 0, [0; 4], &off)]);
    assert!(lab.out(1).is_empty());
    assert_eq!(lab.count("ip4-input", "ttl-expired"), 1);
    assert_eq!(lab.count("ip4-input", "icmp-sent"), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn no_route_sends_net_unreachable_rate_limited() {
    let mut lab = Lab::new(true);
    let off = ipv4(A, [172, 16, 0, 1], 64, 17, &udp(30));
    let frames = vec![eth(MAC_R0, MAC_A, 0x0800, &off); 25];
    lab.send(0, &frames);
    let out = lab.out(0);
    let burst = IpSettings::default().icmp_burst as usize;
    assert_eq!(out.len(), burst, "the bucket's depth, then nothing");
    assert_eq!(out[0], icmp_error_frame(3, 0, [0; 4], &off));
    assert_eq!(lab.count("ip4-lookup", "no-route"), 25);
    assert_eq!(lab.count("ip4-lookup", "icmp-sent"), burst as u64);
    assert_eq!(
        lab.count("ip4-lookup", "icmp-rate-limited"),
        25 - burst as u64
    );
    // No error about an ICMP error, nor about a broadcast.
    lab.sw.clear_counters();
    let err = ipv4(A, [172, 16, 0, 1], 64, 1, &icmp(3, 1, [0; 4], &off[..28]));
    lab.send(0, &[eth(MAC_R0, MAC_A, 0x0800, &err)]);
    assert!(lab.out(0).is_empty());
    assert_eq!(lab.count("ip4-lookup", "icmp-suppressed"), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn too_big_with_df_sends_fragmentation_needed_without_df_is_dropped() {
    let mut lab = Lab::new(true);
    lab.sw.set_interface_mtu("p1", 100).unwrap();
    let df = ipv4(A, FAR, 64, 17, &udp(200));
    let mut nodf = df.clone();
    nodf[6] = 0;
    nodf[10] = 0;
    nodf[11] = 0;
    let c = csum(&nodf[..20]);
    nodf[10..12].copy_from_slice(&c.to_be_bytes());
    let fits = ipv4(A, FAR, 64, 17, &udp(80)); // 100 bytes: exactly the MTU
    lab.send(
        0,
        &[
            eth(MAC_R0, MAC_A, 0x0800, &df),
            eth(MAC_R0, MAC_A, 0x0800, &nodf),
            eth(MAC_R0, MAC_A, 0x0800, &fits),
        ],
    );
    assert_eq!(
        lab.out(0),
        vec![icmp_error_frame(3, 4, [0, 0, 0, 100], &df)]
    );
    assert_eq!(lab.out(1).len(), 1);
    assert_eq!(lab.count("ip4-rewrite", "mtu-exceeded"), 1);
    assert_eq!(lab.count("ip4-rewrite", "fragmentation-unsupported"), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn arp_request_for_the_switch_is_answered_and_the_sender_learned() {
    let mut lab = Lab::new(false);
    let req = eth([0xff; 6], MAC_A, 0x0806, &arp(1, MAC_A, A, [0; 6], R0));
    let mut padded = req.clone();
    padded.resize(60, 0);
    lab.send(0, &[padded]);
    let want = eth(MAC_A, MAC_R0, 0x0806, &arp(2, MAC_R0, R0, MAC_A, A));
    assert_eq!(lab.out(0), vec![want]);
    let n = lab.sw.show_ip_neighbors(0, 10).unwrap();
    assert_eq!((n.total, n.learned), (1, 1));
    assert_eq!(n.entries[0].mac.as_deref(), Some("02:00:00:00:00:0a"));
    assert_eq!(n.entries[0].ip, Ipv4Addr::from(A));
    // A request for another address: not for us (dropped, counted).
    let other = eth(
        [0xff; 6],
        MAC_A,
        0x0806,
        &arp(1, MAC_A, A, [0; 6], [10, 0, 0, 9]),
    );
    lab.send(0, &[other]);
    assert!(lab.out(0).is_empty());
    assert_eq!(lab.count("arp-input", "not-for-us"), 1);
    // A gratuitous ARP moves A to a new MAC.
    let new_mac = [2, 0, 0, 0, 0, 0x1a];
    let grat = eth(
        [0xff; 6],
        new_mac,
        0x0806,
        &arp(1, new_mac, A, [0xff; 6], A),
    );
    lab.send(0, &[grat]);
    assert_eq!(lab.count("arp-input", "gratuitous"), 1);
    assert_eq!(lab.count("arp-input", "updated"), 1);
    let n = lab.sw.show_ip_neighbors(0, 10).unwrap();
    assert_eq!(n.entries[0].mac.as_deref(), Some("02:00:00:00:00:1a"));
    // Someone claiming our address; a group sender MAC; a truncated ARP.
    let conflict = eth([0xff; 6], MAC_A, 0x0806, &arp(1, MAC_A, R0, [0; 6], R0));
    let group = eth([0xff; 6], MAC_A, 0x0806, &arp(1, [0xff; 6], A, [0; 6], R0));
    let short = eth(
        [0xff; 6],
        MAC_A,
        0x0806,
        &arp(1, MAC_A, A, [0; 6], R0)[..20],
    );
    lab.send(0, &[conflict, group, short]);
    assert!(lab.out(0).is_empty());
    assert_eq!(lab.count("arp-input", "address-conflict"), 1);
    assert_eq!(lab.count("arp-input", "bad-sender"), 1);
    assert_eq!(lab.count("arp-input", "malformed"), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn glean_asks_holds_and_sends_on_the_reply() {
    let mut lab = Lab::new(false);
    let pkt = |i: u8| {
        eth(
            MAC_R0,
            MAC_A,
            0x0800,
            &ipv4(A, FAR, 64, 17, &udp(10 + i as usize)),
        )
    };
    let pending = IpSettings::default().arp_pending as usize;
    let frames: Vec<Vec<u8>> = (0..pending as u8 + 2).map(pkt).collect();
    lab.send(0, &frames);
    // One request for the next hop B, from p1's address.
    let req = eth([0xff; 6], MAC_R1, 0x0806, &arp(1, MAC_R1, R1, [0; 6], B));
    assert_eq!(lab.out(1), vec![req]);
    assert_eq!(lab.count("ip4-rewrite", "held-for-arp"), pending as u64);
    assert_eq!(lab.count("ip4-rewrite", "pending-full"), 2);
    assert_eq!(lab.count("ip4-rewrite", "arp-requests-sent"), 1);
    let n = lab.sw.show_ip_neighbors(0, 10).unwrap();
    assert_eq!((n.incomplete, n.pending), (1, pending));
    assert_eq!(lab.sw.show_buffers().in_use as usize, pending);
    // B answers: the held packets leave, rewritten, in order.
    lab.send(
        1,
        &[eth(MAC_R1, MAC_B, 0x0806, &arp(2, MAC_B, B, MAC_R1, R1))],
    );
    let out = lab.out(1);
    assert_eq!(out.len(), pending);
    for (i, f) in out.iter().enumerate() {
        let want = eth(MAC_B, MAC_R1, 0x0800, &ipv4(A, FAR, 63, 17, &udp(10 + i)));
        assert_eq!(*f, want);
    }
    assert_eq!(lab.count("arp-input", "pending-sent"), pending as u64);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
    // From now on packets go straight through.
    lab.send(0, &[pkt(0)]);
    assert_eq!(lab.out(1).len(), 1);
}

#[test]
fn unanswered_arp_is_retried_then_given_up_and_its_packets_counted() {
    let mut lab = Lab::new(false);
    let pkt = eth(MAC_R0, MAC_A, 0x0800, &ipv4(A, FAR, 64, 17, &udp(10)));
    let other = eth(
        MAC_R0,
        MAC_A,
        0x0800,
        &ipv4(A, [10, 1, 0, 99], 64, 17, &udp(10)),
    );
    lab.send(0, std::slice::from_ref(&pkt));
    assert_eq!(lab.out(1).len(), 1, "first request");
    let max = IpSettings::default().arp_max_requests;
    // Each second a packet through ip4-rewrite runs an aging step: the request is repeated
    // until the last one is given up. (The packets to 10.1.0.99 only drive the clock.)
    let mut requests = 1;
    for _ in 0..max + 1 {
        lab.sw.advance_clock(Duration::from_millis(1100));
        lab.send(0, std::slice::from_ref(&other));
        requests += lab.out(1).iter().filter(|f| f[38..42] == B).count();
    }
    assert_eq!(requests as u32, max, "one request a second, {max} in all");
    // B's held packet, and the three held for 10.1.0.99 (given up on the last round, before the
    // last packet made a new entry).
    assert_eq!(lab.count("ip4-rewrite", "pending-timed-out"), 1 + 3);
    assert_eq!(lab.count("ip4-rewrite", "neighbors-aged-out"), 2);
    assert_eq!(lab.sw.show_buffers().in_use, 1, "the last packet, held");
    let n = lab.sw.show_ip_neighbors(0, 10).unwrap();
    assert!(
        n.entries.iter().all(|e| e.ip != Ipv4Addr::from(B)),
        "given up"
    );
}

#[test]
fn frames_for_another_mac_or_tagged_are_not_routed() {
    let mut lab = Lab::new(true);
    let ip = ipv4(A, FAR, 64, 17, &udp(10));
    let other_mac = eth([2, 0, 0, 0, 0, 0x77], MAC_A, 0x0800, &ip);
    let mut tagged = MAC_R0.to_vec();
    tagged.extend_from_slice(&MAC_A);
    tagged.extend_from_slice(&[0x81, 0, 0, 5, 0x08, 0]);
    tagged.extend_from_slice(&ip);
    lab.send(0, &[other_mac, tagged]);
    assert!(lab.out(1).is_empty());
    assert_eq!(lab.count("ethernet-input", "l3-mac-mismatch"), 1);
    assert_eq!(lab.count("ethernet-input", "no-service"), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

/// `ip4-lookup` computes the flow hash (and stores it in the buffer header) only while the table
/// has a route with more than one path: with single-path routes it would pick nothing, and the
/// header's `flow_hash` stays 0 ("not computed").
#[test]
fn the_flow_hash_is_computed_only_while_a_route_has_several_paths() {
    use vecswitch_switch::ip::{ip4_lookup, Adjacency, Ip4Lookup, Route, RouteSource};

    let mut st = SwitchState::new(16);
    let mut pool = Pool::new(64);
    let bytes = ipv4(A, FAR, 64, 17, &udp(12));
    let pkt = |pool: &mut Pool| {
        let h = packet(pool, &eth(MAC_R0, MAC_A, 0x0800, &bytes));
        pool.header_mut(h).l3_offset = 14;
        h
    };
    let t = &mut st.ip.v4;
    let b = t.adjs.acquire(Adjacency::Neighbor {
        iface: 1,
        nh: B.into(),
    });
    let single = Route {
        source: RouteSource::Static,
        paths: vec![b],
    };
    t.set_route((0, 0), single).unwrap();
    assert_eq!(t.multipath_routes(), 0);
    let h = pkt(&mut pool);
    let r = run(&mut Ip4Lookup::default(), &mut pool, &mut st, &[h]);
    assert_eq!(r.nexts, vec![ip4_lookup::Edge::Ip4Rewrite.next()]);
    assert_eq!(pool.header(h).flow_hash, 0, "not computed");

    let t = &mut st.ip.v4;
    let c = t.adjs.acquire(Adjacency::Neighbor {
        iface: 1,
        nh: Ipv4Addr::new(10, 1, 0, 3),
    });
    t.adjs.acquire(Adjacency::Neighbor {
        iface: 1,
        nh: B.into(),
    });
    let ecmp = Route {
        source: RouteSource::Static,
        paths: vec![b, c],
    };
    t.set_route((0, 0), ecmp).unwrap();
    assert_eq!(t.multipath_routes(), 1);
    let h2 = pkt(&mut pool);
    let r = run(&mut Ip4Lookup::default(), &mut pool, &mut st, &[h2]);
    assert_eq!(r.nexts, vec![ip4_lookup::Edge::Ip4Rewrite.next()]);
    let want = ip4_lookup::flow_hash(&bytes[..20], Some(&bytes[20..24]));
    assert_ne!(want, 0);
    assert_eq!(pool.header(h2).flow_hash, want);
    // Back to one path: no hash again.
    let t = &mut st.ip.v4;
    t.remove_route((0, 0)).unwrap();
    assert_eq!(t.multipath_routes(), 0);
    pool.free(h);
    pool.free(h2);
}

#[test]
fn ecmp_keeps_a_flow_on_one_path_and_uses_every_path() {
    let mut lab = Lab::new(false);
    let c = [10, 1, 0, 3];
    let mac_c = [2, 0, 0, 0, 0, 0x0c];
    lab.sw
        .ip_add_neighbor("p1", B.into(), EthernetAddress(MAC_B))
        .unwrap();
    lab.sw
        .ip_add_neighbor("p1", c.into(), EthernetAddress(mac_c))
        .unwrap();
    lab.sw
        .ip_add_route(0, p("172.16.0.0/12"), &[B.into(), c.into()])
        .unwrap();
    let frames: Vec<Vec<u8>> = (0..64u8)
        .flat_map(|i| {
            let f = eth(
                MAC_R0,
                MAC_A,
                0x0800,
                &ipv4(A, [172, 16, 1, i], 64, 17, &udp(10)),
            );
            [f.clone(), f]
        })
        .collect();
    lab.send(0, &frames);
    let out = lab.out(1);
    assert_eq!(out.len(), 128);
    let to_b = out.iter().filter(|f| f[..6] == MAC_B).count();
    assert!(
        to_b > 8 && to_b < 120,
        "both paths used: {to_b} of 128 to B"
    );
    for pair in out.chunks(2) {
        assert_eq!(pair[0][..6], pair[1][..6], "one flow, one path");
    }
}

#[test]
fn control_checks_and_show_ip_fib_pages() {
    let mut lab = Lab::new(true);
    let sw = &mut lab.sw;
    let e = sw
        .ip_add_route(1, p("10.9.0.0/16"), &[B.into()])
        .unwrap_err();
    assert!(e.to_string().contains("table"), "{e}");
    let e = sw
        .ip_add_route(0, p("10.9.0.1/16"), &[B.into()])
        .unwrap_err();
    assert!(e.to_string().contains("host bits"), "{e}");
    let e = sw
        .ip_add_route(0, p("10.9.0.0/16"), &[Ipv4Addr::new(10, 7, 0, 1)])
        .unwrap_err();
    assert!(e.to_string().contains("connected subnet"), "{e}");
    let e = sw.ip_add_address("p1", p("10.0.0.9/16")).unwrap_err();
    assert!(e.to_string().contains("overlap"), "{e}");
    let e = sw.ip_del_address("p1", p("10.1.0.1/24")).unwrap_err();
    assert!(e.to_string().contains("static route"), "{e}");
    assert!(matches!(
        "10.0.0.1/33".parse::<Ipv4Prefix>(),
        Err(vecswitch_switch::ip::PrefixError::Length(_))
    ));
    assert!(matches!(
        sw.ip_add_neighbor("p0", Ipv4Addr::new(10, 5, 0, 1), EthernetAddress(MAC_A)),
        Err(SwitchError::InvalidValue { .. })
    ));
    for i in 0..300u32 {
        let net = Ipv4Addr::from(0x0a40_0000 + (i << 8));
        sw.ip_add_route(0, Ipv4Prefix { addr: net, len: 24 }, &[B.into()])
            .unwrap();
    }
    let all = sw.show_ip_fib(0, None, 0, 10).unwrap();
    // 2 connected, 2 local, 1 + 300 static.
    assert_eq!((all.routes, all.matched, all.entries.len()), (305, 305, 10));
    let page = sw
        .show_ip_fib(0, Some(p("10.64.0.0/16")), 250, 100)
        .unwrap();
    assert_eq!((page.matched, page.entries.len()), (256, 6));
    let one = sw.show_ip_fib(0, Some(p("192.168.7.7")), 0, 10).unwrap();
    assert_eq!(one.entries.len(), 1);
    assert_eq!(one.entries[0].prefix, p("192.168.0.0/16"));
    let json = serde_json::to_string(&one.entries[0]).unwrap();
    assert!(
        json.contains("\"neighbor\"") && json.contains("10.1.0.2"),
        "{json}"
    );
    assert!(sw.show_ip_fib(0, None, 0, 10_001).is_err());
    sw.ip_del_route(0, p("192.168.0.0/16")).unwrap();
    assert!(sw.ip_del_route(0, p("192.168.0.0/16")).is_err());
}

/// `[ip]` of the config: validation names each bad field; the objects, applied in rank order,
/// route as the control calls do.
#[test]
fn ip_config_validates_and_its_objects_apply() {
    use vecswitch_switch::ip::config::{ip_objects, validate_ip, IpConfig};
    use vecswitch_switch::object::{ApplyCx, Validation};
    let good: IpConfig = serde_json::from_str(
        r#"{"address": [{"interface": "p0", "address": "10.0.0.1/24"},
                        {"interface": "p1", "address": "10.1.0.1/24"}],
            "route": [{"prefix": "192.168.0.0/16", "via": ["10.1.0.2"]}],
            "neighbor": [{"interface": "p1", "ip": "10.1.0.2", "mac": "02:00:00:00:00:0b"},
                         {"interface": "p0", "ip": "10.0.0.2", "mac": "02:00:00:00:00:0a"}]}"#,
    )
    .unwrap();
    let mut v = Validation::default();
    v.interfaces.extend(["p0".to_string(), "p1".to_string()]);
    validate_ip(&good, &mut v);
    assert!(v.errors.is_empty(), "{:?}", v.errors);

    let bad: IpConfig = serde_json::from_str(
        r#"{"address": [{"interface": "p9", "address": "10.0.0.1/24"},
                        {"interface": "p1", "address": "10.0.0.9/16"}],
            "route": [{"prefix": "192.168.0.1/16", "via": ["10.7.0.2"], "table": 3}],
            "neighbor": [{"interface": "p0", "ip": "10.5.0.2", "mac": "01:00:00:00:00:0b"}]}"#,
    )
    .unwrap();
    let mut v = Validation::default();
    v.interfaces.extend(["p0".to_string(), "p1".to_string()]);
    validate_ip(&bad, &mut v);
    let paths: Vec<&str> = v.errors.iter().map(|e| e.path.as_str()).collect();
    for p in [
        "ip.address[0].interface",
        "ip.route[0].table",
        "ip.route[0].prefix",
        "ip.route[0].via[0]",
        "ip.neighbor[0].ip",
        "ip.neighbor[0].mac",
    ] {
        assert!(paths.contains(&p), "{p} in {paths:?}");
    }
    assert!(serde_json::from_str::<IpConfig>(
        r#"{"address": [{"interface": "p0", "address": "10.0.0.1/33"}]}"#
    )
    .is_err());

    // Apply in rank order to a switch with the ports, then forward one packet.
    let mut lab = Lab::new(false);
    lab.sw.ip_clear_interface("p0").unwrap();
    lab.sw.ip_del_route(0, p("192.168.0.0/16")).unwrap();
    lab.sw.ip_clear_interface("p1").unwrap();
    assert!(lab.sw.show_ip_interfaces().is_empty());
    let mut objs = Vec::new();
    ip_objects(&good, &mut objs);
    objs.sort_by_key(|o| o.rank());
    let mut cx = ApplyCx::default();
    for o in &objs {
        o.add(&mut lab.sw, &mut cx).unwrap();
    }
    let inp = eth(MAC_R0, MAC_A, 0x0800, &ipv4(A, FAR, 64, 17, &udp(20)));
    lab.send(0, &[inp]);
    assert_eq!(
        lab.out(1),
        vec![eth(MAC_B, MAC_R1, 0x0800, &ipv4(A, FAR, 63, 17, &udp(20)))]
    );
    // And removed in reverse order, leaving nothing.
    for o in objs.iter().rev() {
        o.remove(&mut lab.sw, &mut cx).unwrap();
    }
    assert_eq!(lab.sw.show_ip_fib(0, None, 0, 10).unwrap().routes, 0);
    assert_eq!(lab.sw.show_ip_neighbors(0, 10).unwrap().total, 0);
}
