//! NAT44 masquerade with exact bytes: frames built by this file's own builders (RFC 1071 sums
//! and pseudo headers computed here, not by `wire`) go in through loopback ports; the frames that
//! come out must equal the frames built with the translated addresses and ports — so every
//! incrementally updated checksum (IPv4, TCP, UDP, ICMP, the embedded header of ICMP errors)
//! equals a full recomputation. Drop reasons, session counts, the simulated clock (timeouts) and
//! the buffer pool returning to zero are checked too.
//!
//! Topology: `in` 10.0.0.1/24 (inside; hosts A 10.0.0.2 and C 10.0.0.3, static neighbours),
//! `out` 198.51.100.1/24 (outside; next hop B 198.51.100.2), route 203.0.113.0/24 via B; the
//! remote server R is 203.0.113.9.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::LoopbackPort;
use vecswitch_switch::ip::Ipv4Prefix;
use vecswitch_switch::nat44::{AddrPool, Nat44Settings, Role, TcpState};
use vecswitch_switch::{Switch, SwitchConfig};
use vecswitch_wire::EthernetAddress;

const MAC_R0: [u8; 6] = [0x02, 0xfe, 0, 0, 0, 0];
const MAC_R1: [u8; 6] = [0x02, 0xfe, 0, 0, 0, 1];
const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const MAC_C: [u8; 6] = [2, 0, 0, 0, 0, 0x0c];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];
const A: [u8; 4] = [10, 0, 0, 2];
const C: [u8; 4] = [10, 0, 0, 3];
const OUT: [u8; 4] = [198, 51, 100, 1];
const B: [u8; 4] = [198, 51, 100, 2];
const R: [u8; 4] = [203, 0, 113, 9];

/// RFC 1071 sum (not complemented), written here so that the test does not trust the code under
/// test.
fn sum(b: &[u8]) -> u32 {
    let mut s: u32 = 0;
    for c in b.chunks(2) {
        s += (c[0] as u32) << 8 | *c.get(1).unwrap_or(&0) as u32;
    }
    s
}

fn fold(mut s: u32) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn csum(b: &[u8]) -> u16 {
    !fold(sum(b))
}

/// An IPv4 packet (ident 0x1234, DF) around `l4`, header checksum included.
fn ipv4(src: [u8; 4], dst: [u8; 4], ttl: u8, proto: u8, l4: &[u8]) -> Vec<u8> {
    let mut h = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, ttl, proto, 0, 0];
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let tl = (20 + l4.len()) as u16;
    h[2..4].copy_from_slice(&tl.to_be_bytes());
    let c = csum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(l4);
    h
}

/// The TCP/UDP checksum of `l4` (its checksum field zero) with the IPv4 pseudo header.
fn l4_csum(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> u16 {
    let pseudo = sum(&src) + sum(&dst) + proto as u32 + l4.len() as u32;
    let c = !fold(pseudo + sum(l4));
    if proto == 17 && c == 0 {
        0xffff
    } else {
        c
    }
}

fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = sport.to_be_bytes().to_vec();
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    let c = l4_csum(src, dst, 17, &u);
    u[6..8].copy_from_slice(&c.to_be_bytes());
    ipv4(src, dst, 64, 17, &u)
}

fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8, ttl: u8) -> Vec<u8> {
    let mut t = sport.to_be_bytes().to_vec();
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0x10, 0, 0, 0, 0x20, 0]); // seq, ack
    t.extend_from_slice(&[0x50, flags, 0xfa, 0xf0, 0, 0, 0, 0]);
    t.extend_from_slice(b"data");
    let c = l4_csum(src, dst, 6, &t);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    ipv4(src, dst, ttl, 6, &t)
}

fn icmp(t: u8, code: u8, rest: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut m = vec![t, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(data);
    let c = csum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

fn echo(src: [u8; 4], dst: [u8; 4], t: u8, id: u16, ttl: u8) -> Vec<u8> {
    let id = id.to_be_bytes();
    ipv4(
        src,
        dst,
        ttl,
        1,
        &icmp(t, 0, [id[0], id[1], 0, 7], b"pingdata"),
    )
}

fn eth(dst: [u8; 6], src: [u8; 6], ip: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    f.extend_from_slice(ip);
    f
}

/// `ip` with its TTL one lower (header checksum recomputed): what a router forwards.
fn hop(ip: &[u8]) -> Vec<u8> {
    let mut v = ip.to_vec();
    v[8] -= 1;
    v[10..12].copy_from_slice(&[0, 0]);
    let c = csum(&v[..20]);
    v[10..12].copy_from_slice(&c.to_be_bytes());
    v
}

fn p(s: &str) -> Ipv4Prefix {
    s.parse().unwrap()
}

struct Lab {
    sw: Switch,
    inside: LoopbackPort,
    outside: LoopbackPort,
    pool: Pool,
}

impl Lab {
    fn new() -> Lab {
        let mut sw = Switch::new(SwitchConfig {
            buffers: 4096,
            mac_table_entries: 1024,
            ..Default::default()
        });
        let (a, inside) = wire("in");
        let (b, outside) = wire("out");
        sw.add_port("in", a).unwrap();
        sw.add_port("out", b).unwrap();
        sw.ip_add_address("in", p("10.0.0.1/24")).unwrap();
        sw.ip_add_address("out", p("198.51.100.1/24")).unwrap();
        sw.ip_add_route(0, p("203.0.113.0/24"), &[Ipv4Addr::from(B)])
            .unwrap();
        sw.ip_add_neighbor("in", A.into(), EthernetAddress(MAC_A))
            .unwrap();
        sw.ip_add_neighbor("in", C.into(), EthernetAddress(MAC_C))
            .unwrap();
        sw.ip_add_neighbor("out", B.into(), EthernetAddress(MAC_B))
            .unwrap();
        sw.nat44_set_interface("in", Some(Role::Inside)).unwrap();
        sw.nat44_set_interface("out", Some(Role::Outside)).unwrap();
        Lab {
            sw,
            inside,
            outside,
            pool: Pool::new(4096),
        }
    }

    /// Sends IPv4 packets from inside host A (or C: `from_c`) and returns what leaves outside.
    fn send_inside(&mut self, from_c: bool, ips: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mac = if from_c { MAC_C } else { MAC_A };
        let frames: Vec<Vec<u8>> = ips.iter().map(|ip| eth(MAC_R0, mac, ip)).collect();
        send(&mut self.inside, &mut self.pool, &frames);
        while self.sw.poll_once() > 0 {}
        drain(&mut self.outside, &mut self.pool)
    }

    /// Sends IPv4 packets from the next hop B and returns what leaves inside.
    fn send_outside(&mut self, ips: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let frames: Vec<Vec<u8>> = ips.iter().map(|ip| eth(MAC_R1, MAC_B, ip)).collect();
        send(&mut self.outside, &mut self.pool, &frames);
        while self.sw.poll_once() > 0 {}
        drain(&mut self.inside, &mut self.pool)
    }

    /// Sends IPv4 packets from inside host A (or C) and returns what leaves inside (hairpinned)
    /// and outside.
    fn send_inside_both(&mut self, from_c: bool, ips: &[Vec<u8>]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let out = self.send_inside(from_c, ips);
        (drain(&mut self.inside, &mut self.pool), out)
    }

    fn count(&self, node: &str, reason: &str) -> u64 {
        self.sw
            .show_errors()
            .iter()
            .find(|e| e.node == node && e.reason == reason)
            .map_or(0, |e| e.count)
    }
}

#[test]
fn udp_is_masqueraded_and_the_reply_translated_back_with_exact_checksums() {
    let mut lab = Lab::new();
    let q = udp(A, R, 5000, 53, b"query");
    let out = lab.send_inside(false, std::slice::from_ref(&q));
    // Port preserved (free), source the outside address, TTL one lower; every checksum as a full
    // recomputation gives it.
    let want = eth(MAC_B, MAC_R1, &hop(&udp(OUT, R, 5000, 53, b"query")));
    assert_eq!(out, vec![want]);
    let back = lab.send_outside(&[udp(R, OUT, 53, 5000, b"answer")]);
    assert_eq!(
        back,
        vec![eth(MAC_A, MAC_R0, &hop(&udp(R, A, 53, 5000, b"answer")))]
    );
    let s = lab.sw.show_nat44_summary();
    assert_eq!((s.sessions, s.udp, s.inside_hosts), (1, 1, 1));
    let list = lab.sw.show_nat44_sessions(0, 10);
    assert_eq!(list.sessions[0].inside, "10.0.0.2:5000");
    assert_eq!(list.sessions[0].outside, "198.51.100.1:5000");
    assert_eq!(list.sessions[0].remote, "203.0.113.9:53");
    assert_eq!(
        (
            list.sessions[0].packets_in2out,
            list.sessions[0].packets_out2in
        ),
        (1, 1)
    );
    assert_eq!(list.sessions[0].timeout_s, 300);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn a_udp_checksum_of_zero_stays_zero() {
    let mut lab = Lab::new();
    let mut q = udp(A, R, 7000, 9, b"x");
    q[26..28].copy_from_slice(&[0, 0]);
    let out = lab.send_inside(false, &[q]);
    let mut want = hop(&udp(OUT, R, 7000, 9, b"x"));
    want[26..28].copy_from_slice(&[0, 0]);
    assert_eq!(out, vec![eth(MAC_B, MAC_R1, &want)]);
}

#[test]
fn two_hosts_with_the_same_port_get_different_outside_ports_and_their_own_replies() {
    let mut lab = Lab::new();
    let a = lab.send_inside(false, &[udp(A, R, 4444, 53, b"a")]);
    let c = lab.send_inside(true, &[udp(C, R, 4444, 53, b"c")]);
    let port = |f: &Vec<u8>| u16::from_be_bytes([f[34], f[35]]);
    assert_eq!(port(&a[0]), 4444);
    let pc = port(&c[0]);
    assert_ne!(pc, 4444, "the second host's mapping moved");
    assert!(pc >= 1024);
    assert_eq!(
        c,
        vec![eth(MAC_B, MAC_R1, &hop(&udp(OUT, R, pc, 53, b"c")))]
    );
    // The same inside endpoint to another remote port keeps its mapping (endpoint-dependent
    // mapping reuses the port when the outside tuple is free).
    let c2 = lab.send_inside(true, &[udp(C, R, 4444, 54, b"c")]);
    assert_eq!(port(&c2[0]), 4444);
    let back = lab.send_outside(&[udp(R, OUT, 53, pc, b"to-c"), udp(R, OUT, 53, 4444, b"to-a")]);
    assert_eq!(
        back,
        vec![
            eth(MAC_C, MAC_R0, &hop(&udp(R, C, 53, 4444, b"to-c"))),
            eth(MAC_A, MAC_R0, &hop(&udp(R, A, 53, 4444, b"to-a"))),
        ]
    );
    assert_eq!(lab.sw.show_nat44_summary().inside_hosts, 2);
}

#[test]
fn tcp_state_follows_the_connection_and_sets_the_timeout() {
    let mut lab = Lab::new();
    let syn = lab.send_inside(false, &[tcp(A, R, 40000, 80, 0x02, 64)]);
    assert_eq!(
        syn,
        vec![eth(MAC_B, MAC_R1, &hop(&tcp(OUT, R, 40000, 80, 0x02, 64)))]
    );
    let state = |lab: &Lab| lab.sw.show_nat44_sessions(0, 1).sessions[0].clone();
    assert_eq!(state(&lab).tcp_state, TcpState::SynSent);
    assert_eq!(state(&lab).timeout_s, 240);
    let synack = lab.send_outside(&[tcp(R, OUT, 80, 40000, 0x12, 64)]);
    assert_eq!(
        synack,
        vec![eth(MAC_A, MAC_R0, &hop(&tcp(R, A, 80, 40000, 0x12, 64)))]
    );
    lab.send_inside(false, &[tcp(A, R, 40000, 80, 0x10, 64)]);
    assert_eq!(state(&lab).tcp_state, TcpState::Established);
    assert_eq!(state(&lab).timeout_s, 7440, "RFC 7857: 2 h 4 min");
    lab.send_inside(false, &[tcp(A, R, 40000, 80, 0x11, 64)]);
    lab.send_outside(&[tcp(R, OUT, 80, 40000, 0x11, 64)]);
    assert_eq!(state(&lab).tcp_state, TcpState::Closing);
    assert_eq!(state(&lab).timeout_s, 240);
    let s = lab.sw.show_nat44_summary();
    assert_eq!((s.tcp, s.tcp_transitory, s.tcp_established), (1, 1, 0));
}

#[test]
fn sessions_time_out_on_the_simulated_clock() {
    let mut lab = Lab::new();
    lab.sw
        .set_nat44_settings(Nat44Settings {
            udp_s: 30,
            ..Default::default()
        })
        .unwrap();
    lab.send_inside(false, &[udp(A, R, 5000, 53, b"q")]);
    lab.sw.advance_clock(Duration::from_secs(29));
    assert_eq!(lab.send_outside(&[udp(R, OUT, 53, 5000, b"r")]).len(), 1);
    // The reply refreshed it: 29 s more is still inside the timeout.
    lab.sw.advance_clock(Duration::from_secs(29));
    lab.sw.run_timers();
    assert_eq!(lab.sw.show_nat44_summary().sessions, 1);
    lab.sw.advance_clock(Duration::from_secs(2));
    // The reply comes too late: dropped, and the lookup removes the session.
    assert!(lab.send_outside(&[udp(R, OUT, 53, 5000, b"r")]).is_empty());
    assert_eq!(lab.count("nat44-out2in", "no-session"), 1);
    assert_eq!(lab.sw.show_nat44_summary().sessions, 0);
    // The sweep removes idle sessions nobody looks up.
    lab.send_inside(false, &[udp(A, R, 5001, 53, b"q")]);
    lab.sw.advance_clock(Duration::from_secs(31));
    lab.sw.run_timers();
    let s = lab.sw.show_nat44_summary();
    assert_eq!((s.sessions, s.sessions_expired), (0, 2));
}

#[test]
fn echo_identifier_is_translated_both_ways() {
    let mut lab = Lab::new();
    let out = lab.send_inside(false, &[echo(A, R, 8, 0x1234, 64)]);
    assert_eq!(
        out,
        vec![eth(MAC_B, MAC_R1, &hop(&echo(OUT, R, 8, 0x1234, 64)))]
    );
    // C pings R with the same identifier: it gets another one.
    let out = lab.send_inside(true, &[echo(C, R, 8, 0x1234, 64)]);
    let id = u16::from_be_bytes([out[0][38], out[0][39]]);
    assert_ne!(id, 0x1234);
    assert_eq!(
        out,
        vec![eth(MAC_B, MAC_R1, &hop(&echo(OUT, R, 8, id, 64)))]
    );
    let back = lab.send_outside(&[echo(R, OUT, 0, id, 64), echo(R, OUT, 0, 0x1234, 64)]);
    assert_eq!(
        back,
        vec![
            eth(MAC_C, MAC_R0, &hop(&echo(R, C, 0, 0x1234, 64))),
            eth(MAC_A, MAC_R0, &hop(&echo(R, A, 0, 0x1234, 64))),
        ]
    );
    assert_eq!(lab.sw.show_nat44_sessions(0, 1).sessions[0].timeout_s, 60);
}

#[test]
fn icmp_errors_from_outside_reach_the_inside_host_with_the_embedded_header_translated() {
    let mut lab = Lab::new();
    let c = lab.send_inside(true, &[udp(C, R, 4444, 53, b"c")]);
    let pc = u16::from_be_bytes([c[0][34], c[0][35]]);
    lab.send_inside(false, &[udp(A, R, 4444, 53, b"a")]);
    // R answers C's datagram (as it left the switch) with a port unreachable (RFC 792: the
    // header and at least 8 bytes; Linux sends more).
    let sent = hop(&udp(OUT, R, pc, 53, b"c"));
    let err = |embedded: &[u8], to: [u8; 4]| ipv4(R, to, 64, 1, &icmp(3, 3, [0; 4], embedded));
    let back = lab.send_outside(&[err(&sent, OUT)]);
    let want_inner = hop(&udp(C, R, 4444, 53, b"c"));
    assert_eq!(back, vec![eth(MAC_C, MAC_R0, &hop(&err(&want_inner, C)))]);
    // Cut to the header and 8 bytes (the UDP checksum is still in it).
    let back = lab.send_outside(&[err(&sent[..28], OUT)]);
    assert_eq!(
        back,
        vec![eth(MAC_C, MAC_R0, &hop(&err(&want_inner[..28], C)))]
    );
    // A time exceeded about a TCP segment, cut before the TCP checksum.
    lab.send_inside(false, &[tcp(A, R, 40000, 80, 0x02, 64)]);
    let seg = hop(&tcp(OUT, R, 40000, 80, 0x02, 64));
    let te = |embedded: &[u8], to: [u8; 4]| ipv4(B, to, 64, 1, &icmp(11, 0, [0; 4], embedded));
    let back = lab.send_outside(&[te(&seg[..28], OUT)]);
    let want = hop(&tcp(A, R, 40000, 80, 0x02, 64));
    assert_eq!(back, vec![eth(MAC_A, MAC_R0, &hop(&te(&want[..28], A)))]);
    // About an unknown flow: dropped.
    let unknown = hop(&udp(OUT, R, 999, 53, b"c"));
    assert!(lab.send_outside(&[err(&unknown, OUT)]).is_empty());
    assert_eq!(lab.count("nat44-out2in", "no-session"), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn icmp_errors_from_an_inside_host_leave_with_the_outside_address() {
    let mut lab = Lab::new();
    lab.send_inside(false, &[udp(A, R, 5000, 53, b"q")]);
    let came = udp(R, OUT, 53, 5000, b"late");
    let delivered = lab.send_outside(std::slice::from_ref(&came));
    assert_eq!(delivered.len(), 1);
    // A's kernel answers with a port unreachable quoting the datagram it received.
    let quoted = &delivered[0][14..];
    let err = ipv4(A, R, 64, 1, &icmp(3, 3, [0; 4], quoted));
    let out = lab.send_inside(false, &[err]);
    // Outside: from the outside address, quoting the datagram as R sent it (TTL as it arrived).
    let want_inner = hop(&came);
    let want = hop(&ipv4(OUT, R, 64, 1, &icmp(3, 3, [0; 4], &want_inner)));
    assert_eq!(out, vec![eth(MAC_B, MAC_R1, &want)]);
    assert_eq!(
        lab.sw
            .show_errors()
            .iter()
            .find(|e| e.node == "nat44-in2out" && e.reason == "icmp-errors-translated")
            .map(|e| e.count),
        Some(1)
    );
}

#[test]
fn unsolicited_outside_traffic_is_dropped_and_counted_but_pings_to_the_switch_answered() {
    let mut lab = Lab::new();
    let inside = lab.send_outside(&[
        udp(R, OUT, 53, 5000, b"x"),
        tcp(R, OUT, 80, 22, 0x02, 64),
        echo(R, OUT, 0, 77, 64),
    ]);
    assert!(inside.is_empty());
    assert_eq!(lab.count("nat44-out2in", "no-session"), 3);
    // An echo request to the outside address is the switch's: answered on the outside.
    send(
        &mut lab.outside,
        &mut lab.pool,
        &[eth(MAC_R1, MAC_B, &echo(B, OUT, 8, 9, 64))],
    );
    while lab.sw.poll_once() > 0 {}
    let answer = drain(&mut lab.outside, &mut lab.pool);
    assert_eq!(answer, vec![eth(MAC_B, MAC_R1, &echo(OUT, B, 0, 9, 64))]);
    assert_eq!(lab.sw.show_nat44_summary().sessions, 0);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn limits_fragments_and_malformed_headers_are_named_drops() {
    let mut lab = Lab::new();
    lab.sw
        .set_nat44_settings(Nat44Settings {
            max_sessions: 3,
            max_sessions_per_host: 2,
            ..Default::default()
        })
        .unwrap();
    let out = lab.send_inside(
        false,
        &[
            udp(A, R, 1, 53, b"1"),
            udp(A, R, 2, 53, b"2"),
            udp(A, R, 3, 53, b"3"),
        ],
    );
    assert_eq!(out.len(), 2);
    assert_eq!(lab.count("nat44-in2out", "host-session-limit"), 1);
    let out = lab.send_inside(true, &[udp(C, R, 1, 53, b"1"), udp(C, R, 2, 53, b"2")]);
    assert_eq!(out.len(), 1);
    assert_eq!(lab.count("nat44-in2out", "session-limit"), 1);
    // Existing sessions still pass.
    assert_eq!(lab.send_inside(false, &[udp(A, R, 1, 53, b"1")]).len(), 1);
    // A TCP header cut at 10 bytes; a fragment; GRE.
    let mut short = tcp(A, R, 9, 80, 0x02, 64);
    short.truncate(30);
    short[2..4].copy_from_slice(&30u16.to_be_bytes());
    short[10..12].copy_from_slice(&[0, 0]);
    let c = csum(&short[..20]);
    short[10..12].copy_from_slice(&c.to_be_bytes());
    let mut frag = udp(A, R, 9, 53, b"frag");
    frag[6] = 0x20; // MF
    frag[10..12].copy_from_slice(&[0, 0]);
    let c = csum(&frag[..20]);
    frag[10..12].copy_from_slice(&c.to_be_bytes());
    let gre = ipv4(A, R, 64, 47, &[0; 8]);
    let ping_reply = echo(A, R, 0, 5, 64);
    assert!(lab
        .send_inside(false, &[short, frag, gre, ping_reply])
        .is_empty());
    for reason in [
        "bad-l4-header",
        "fragment",
        "unsupported-protocol",
        "unsupported-icmp",
    ] {
        assert_eq!(lab.count("nat44-in2out", reason), 1, "{reason}");
    }
    assert_eq!(lab.sw.show_nat44_summary().sessions, 3);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn traffic_between_two_inside_interfaces_or_not_leaving_outside_is_untouched() {
    let mut lab = Lab::new();
    // From the outside next hop to the inside host directly (routed, no NAT address): NAT lets
    // it through unchanged (blocking it is the firewall's job, as with the kernel's masquerade).
    let back = lab.send_outside(&[udp(B, A, 1, 2, b"direct")]);
    assert_eq!(
        back,
        vec![eth(MAC_A, MAC_R0, &hop(&udp(B, A, 1, 2, b"direct")))]
    );
    assert_eq!(lab.sw.show_nat44_summary().sessions, 0);
    // Turning NAT off on the outside interface: forwarded untranslated.
    lab.sw.nat44_set_interface("out", None).unwrap();
    let out = lab.send_inside(false, &[udp(A, R, 5, 6, b"plain")]);
    assert_eq!(
        out,
        vec![eth(MAC_B, MAC_R1, &hop(&udp(A, R, 5, 6, b"plain")))]
    );
    // An outside interface needs an address.
    let (x, _peer) = wire("bare");
    lab.sw.add_port("bare", x).unwrap();
    let e = lab
        .sw
        .nat44_set_interface("bare", Some(Role::Outside))
        .unwrap_err();
    assert!(e.to_string().contains("IPv4 address"), "{e}");
}

#[test]
fn every_burst_size_is_translated() {
    let mut lab = Lab::new();
    for n in BURSTS {
        let ips: Vec<Vec<u8>> = (0..n)
            .map(|i| udp(A, R, 10_000 + i as u16, 53, b"burst"))
            .collect();
        let out = lab.send_inside(false, &ips);
        assert_eq!(out.len(), n, "burst {n}");
        let back: Vec<Vec<u8>> = (0..n)
            .map(|i| udp(R, OUT, 53, 10_000 + i as u16, b"back"))
            .collect();
        assert_eq!(lab.send_outside(&back).len(), n, "burst {n} back");
    }
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

/// The nodes look a vector's sessions up in stages (every bucket and session loaded before the
/// first packet is translated): a session that an earlier packet of the same vector made, or
/// removed as expired, is seen by the packets after it. 3 new flows, 40 packets each,
/// interleaved in one vector of 120 (two stage groups) make 3 sessions and leave with one port
/// each; after their timeout, one vector of them again removes each once and makes it again.
#[test]
fn sessions_made_or_removed_earlier_in_the_same_vector_are_seen() {
    let mut lab = Lab::new();
    lab.sw
        .set_nat44_settings(Nat44Settings {
            udp_s: 30,
            ..Default::default()
        })
        .unwrap();
    let ips: Vec<Vec<u8>> = (0..120)
        .map(|i| udp(A, R, 20_000 + (i % 3) as u16, 53, b"same"))
        .collect();
    for round in 0..2 {
        let out = lab.send_inside(false, &ips);
        assert_eq!(out.len(), 120, "round {round}");
        for (i, f) in out.iter().enumerate() {
            let want = udp(OUT, R, 20_000 + (i % 3) as u16, 53, b"same");
            assert_eq!(&f[14..], &hop(&want)[..], "round {round} packet {i}");
        }
        let s = lab.sw.show_nat44_summary();
        assert_eq!(
            (s.sessions, s.sessions_created, s.sessions_expired),
            (3, 3 + 3 * round, 3 * round),
            "round {round}"
        );
        lab.sw.advance_clock(Duration::from_secs(31));
    }
    assert_eq!(lab.count("nat44-in2out", "no-session"), 0);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

/// A pool of outside addresses: every session of an inside host leaves with the same pool
/// address (paired pooling, RFC 4787 REQ-2), the one `AddrPool::for_host` names, whatever the
/// destination; replies to it come back translated; echo requests to a pool address (not the
/// switch's own) are dropped; a pool change removes the sessions of addresses it took away.
#[test]
fn a_pool_gives_every_session_of_a_host_the_same_outside_address() {
    let mut lab = Lab::new();
    let range = (
        Ipv4Addr::new(198, 51, 100, 8),
        Ipv4Addr::new(198, 51, 100, 11),
    );
    lab.sw.set_nat44_pool(&[range]).unwrap();
    let pool = AddrPool::new(&[range]);
    // Other source ports for C: the two hosts may share a pool address.
    for (host, from_c, base) in [(A, false, 5000), (C, true, 6000)] {
        let mine = pool.for_host(host.into()).unwrap().octets();
        assert!(pool.contains(mine.into()));
        for (sport, dport) in [(base, 53), (base + 1, 80), (base + 2, 53)] {
            let out = lab.send_inside(from_c, &[udp(host, R, sport, dport, b"q")]);
            let want = eth(MAC_B, MAC_R1, &hop(&udp(mine, R, sport, dport, b"q")));
            assert_eq!(out, vec![want], "host {host:?} port {sport}");
            let back = lab.send_outside(&[udp(R, mine, dport, sport, b"r")]);
            let mac = if from_c { MAC_C } else { MAC_A };
            assert_eq!(
                back,
                vec![eth(mac, MAC_R0, &hop(&udp(R, host, dport, sport, b"r")))]
            );
        }
    }
    let s = lab.sw.show_nat44_summary();
    assert_eq!((s.sessions, s.inside_hosts), (6, 2));
    assert_eq!(s.pool, vec!["198.51.100.8-198.51.100.11".to_string()]);
    // A ping to a pool address: not the switch's own, no session.
    let before = lab.count("nat44-out2in", "no-session");
    let pool_a = pool.for_host(A.into()).unwrap().octets();
    assert!(lab.send_outside(&[echo(R, pool_a, 8, 7, 64)]).is_empty());
    assert_eq!(lab.count("nat44-out2in", "no-session"), before + 1);
    // Back to masquerade: the pool's sessions go.
    lab.sw.set_nat44_pool(&[]).unwrap();
    assert_eq!(lab.sw.show_nat44_summary().sessions, 0);
    let out = lab.send_inside(false, &[udp(A, R, 5000, 53, b"q")]);
    assert_eq!(
        out,
        vec![eth(MAC_B, MAC_R1, &hop(&udp(OUT, R, 5000, 53, b"q")))]
    );
    // Refused: reversed and overlapping ranges, and the pool stays as it was.
    let r2 = (
        Ipv4Addr::new(198, 51, 100, 10),
        Ipv4Addr::new(198, 51, 100, 12),
    );
    assert!(lab.sw.set_nat44_pool(&[range, r2]).is_err());
    assert!(lab.sw.set_nat44_pool(&[(range.1, range.0)]).is_err());
    assert!(lab.sw.nat44_pool().is_empty());
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

/// Hairpinning (RFC 4787 REQ-9): inside host A sends to C's outside endpoint. The source leaves
/// as A's own outside endpoint ("external source IP address and port"), and endpoint-dependent
/// filtering applies as to a packet from outside: A's first packet reaches C only after C has
/// sent to A's outside endpoint (as in UDP hole punching). Off, nothing is hairpinned.
#[test]
fn hairpinning_reaches_an_inside_host_through_its_outside_endpoint() {
    let mut lab = Lab::new();
    // C talks to R: its outside endpoint OUT:7000.
    lab.send_inside(true, &[udp(C, R, 7000, 53, b"q")]);
    // Off: A's packet to OUT:7000 is the switch's own business, never C's.
    let (inside, _) = lab.send_inside_both(false, &[udp(A, OUT, 6000, 7000, b"a1")]);
    assert!(inside.iter().all(|f| f[..6] != MAC_C), "{inside:?}");
    lab.sw.set_nat44_hairpinning(true).unwrap();
    // A → OUT:7000: A gets a session toward it (OUT:6000), but C's session is for R: dropped.
    let (inside, outside) = lab.send_inside_both(false, &[udp(A, OUT, 6000, 7000, b"a2")]);
    assert!(inside.is_empty() && outside.is_empty());
    assert_eq!(lab.count("nat44-hairpin", "no-session"), 1);
    // C → OUT:6000 (A's outside endpoint toward C): reaches A, from C's outside endpoint.
    let (inside, outside) = lab.send_inside_both(true, &[udp(C, OUT, 7000, 6000, b"c1")]);
    assert!(outside.is_empty());
    assert_eq!(
        inside,
        vec![eth(MAC_A, MAC_R0, &hop(&udp(OUT, A, 7000, 6000, b"c1")))]
    );
    // Now A → OUT:7000 reaches C, from A's outside endpoint; TCP too once both sides opened.
    let (inside, _) = lab.send_inside_both(false, &[udp(A, OUT, 6000, 7000, b"a3")]);
    assert_eq!(
        inside,
        vec![eth(MAC_C, MAC_R0, &hop(&udp(OUT, C, 6000, 7000, b"a3")))]
    );
    let (inside, _) = lab.send_inside_both(true, &[tcp(C, OUT, 7001, 6001, 0x02, 64)]);
    assert!(
        inside.is_empty(),
        "C's SYN to a TCP endpoint A never opened"
    );
    let (inside, _) = lab.send_inside_both(false, &[tcp(A, OUT, 6001, 7001, 0x02, 64)]);
    assert_eq!(
        inside,
        vec![eth(MAC_C, MAC_R0, &hop(&tcp(OUT, C, 6001, 7001, 0x02, 64)))]
    );
    let (inside, _) = lab.send_inside_both(true, &[tcp(C, OUT, 7001, 6001, 0x12, 64)]);
    assert_eq!(
        inside,
        vec![eth(MAC_A, MAC_R0, &hop(&tcp(OUT, A, 7001, 6001, 0x12, 64)))]
    );
    assert_eq!(lab.count("nat44-hairpin", "hairpinned"), 4);
    assert_eq!(lab.count("nat44-hairpin", "no-session"), 2);
    // Off again: the feature leaves the inside interface.
    lab.sw.set_nat44_hairpinning(false).unwrap();
    let (inside, _) = lab.send_inside_both(false, &[udp(A, OUT, 6000, 7000, b"a4")]);
    assert!(inside.iter().all(|f| f[..6] != MAC_C), "{inside:?}");
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}
