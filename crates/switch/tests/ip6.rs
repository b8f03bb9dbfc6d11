//! The IPv6 path and Neighbor Discovery, with exact bytes: frames built from byte arrays (and
//! builders whose ICMPv6 checksum is this file's own RFC 1071 sum over the RFC 8200 §8.1
//! pseudo-header, independent of `wire`) go in through a loopback port; the exact frames that come
//! out, the drop reasons in `show errors` and the buffer pool returning to zero are checked.
//! Also: `delete_port` clears the IP state (IPv4 and IPv6) of the port's interface.
//!
//! Topology: `p0` 2001:db8::1/64 (host A 2001:db8::2, MAC 02:00:00:00:00:0a), `p1`
//! 2001:db8:1::1/64 (host B 2001:db8:1::2, MAC 02:00:00:00:00:0b), route 2001:db8:ff::/48 via B.
//! The switch's MACs are 02:fe:00:00:00:00 and :01, so its link-local addresses are
//! fe80::fe:ff:fe00:0 and fe80::fe:ff:fe00:1 (modified EUI-64, RFC 4291 appendix A).

mod common;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::LoopbackPort;
use vecswitch_switch::ip::{IpSettings, Ipv4Prefix, Ipv6Prefix};
use vecswitch_switch::{Switch, SwitchConfig};
use vecswitch_wire::EthernetAddress;

const MAC_R0: [u8; 6] = [0x02, 0xfe, 0, 0, 0, 0];
const MAC_R1: [u8; 6] = [0x02, 0xfe, 0, 0, 0, 1];
const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn r0() -> Ipv6Addr {
    a6("2001:db8::1")
}
fn r1() -> Ipv6Addr {
    a6("2001:db8:1::1")
}
fn ha() -> Ipv6Addr {
    a6("2001:db8::2")
}
fn hb() -> Ipv6Addr {
    a6("2001:db8:1::2")
}
fn far() -> Ipv6Addr {
    a6("2001:db8:ff::5")
}
fn ll_r0() -> Ipv6Addr {
    a6("fe80::fe:ff:fe00:0")
}
fn ll_r1() -> Ipv6Addr {
    a6("fe80::fe:ff:fe00:1")
}
fn ll_a() -> Ipv6Addr {
    a6("fe80::aa")
}

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
    !(s as u16)
}

/// The ICMPv6 checksum of message `m` between `src` and `dst` (RFC 4443 §2.3).
fn icmp6_sum(src: Ipv6Addr, dst: Ipv6Addr, m: &[u8]) -> u16 {
    let mut ph = src.octets().to_vec();
    ph.extend_from_slice(&dst.octets());
    ph.extend_from_slice(&(m.len() as u32).to_be_bytes());
    ph.extend_from_slice(&[0, 0, 0, 58]);
    fold(sum(&ph) + sum(m))
}

fn icmp6(src: Ipv6Addr, dst: Ipv6Addr, t: u8, code: u8, rest: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut m = vec![t, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(data);
    let c = icmp6_sum(src, dst, &m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, hlim: u8, nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    h.extend_from_slice(&[nh, hlim]);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    h.extend_from_slice(payload);
    h
}

/// An ICMPv6 packet (next header 58) with a correct checksum.
fn icmp6_pkt(src: Ipv6Addr, dst: Ipv6Addr, hlim: u8, t: u8, rest: [u8; 4], data: &[u8]) -> Vec<u8> {
    ipv6(src, dst, hlim, 58, &icmp6(src, dst, t, 0, rest, data))
}

fn eth(dst: [u8; 6], src: [u8; 6], payload: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&0x86ddu16.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A UDP datagram's bytes (checksum left 0; the switch does not look at it) from 1000 to 2000.
fn udp(len: usize) -> Vec<u8> {
    let mut u = vec![0x03, 0xe8, 0x07, 0xd0, 0, 0, 0, 0];
    u[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    u.extend((0..len - 8).map(|i| i as u8));
    u
}

/// Solicited-node multicast address and MAC of `a` (RFC 4291 §2.7.1, RFC 2464 §7).
fn snm(a: Ipv6Addr) -> (Ipv6Addr, [u8; 6]) {
    let o = a.octets();
    let m = Ipv6Addr::from([
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, o[13], o[14], o[15],
    ]);
    (m, [0x33, 0x33, 0xff, o[13], o[14], o[15]])
}

/// NS body after the 8-byte header: target and, optionally, a source link-layer option.
fn ns_data(target: Ipv6Addr, slla: Option<[u8; 6]>) -> Vec<u8> {
    let mut d = target.octets().to_vec();
    if let Some(m) = slla {
        d.extend_from_slice(&[1, 1]);
        d.extend_from_slice(&m);
    }
    d
}

/// A neighbor solicitation frame from `src` (MAC `smac`) for `target` to its solicited-node
/// address.
fn ns_frame(smac: [u8; 6], src: Ipv6Addr, target: Ipv6Addr, slla: Option<[u8; 6]>) -> Vec<u8> {
    let (dst, dmac) = snm(target);
    eth(
        dmac,
        smac,
        &icmp6_pkt(src, dst, 255, 135, [0; 4], &ns_data(target, slla)),
    )
}

/// A neighbor advertisement body: target and the target link-layer option.
fn na_data(target: Ipv6Addr, tlla: [u8; 6]) -> Vec<u8> {
    let mut d = target.octets().to_vec();
    d.extend_from_slice(&[2, 1]);
    d.extend_from_slice(&tlla);
    d
}

fn p(s: &str) -> Ipv6Prefix {
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
        sw.ip6_add_address("p0", p("2001:db8::1/64")).unwrap();
        sw.ip6_add_address("p1", p("2001:db8:1::1/64")).unwrap();
        sw.ip6_add_route(0, p("2001:db8:ff::/48"), &[hb()]).unwrap();
        if static_neighbors {
            sw.ip6_add_neighbor("p0", ha(), EthernetAddress(MAC_A))
                .unwrap();
            sw.ip6_add_neighbor("p1", hb(), EthernetAddress(MAC_B))
                .unwrap();
        }
        Lab {
            sw,
            p0,
            p1,
            pool: Pool::new(4096),
        }
    }

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
/// byte (computed outside this code base, by a Python script with its own checksum).
#[test]
fn echo_request_to_the_switch_gets_the_exact_reply() {
    let req: Vec<u8> = vec![
        0x02, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x86, 0xdd, 0x60,
        0x00, 0x00, 0x00, 0x00, 0x18, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x80, 0x00, 0xd9, 0xc2, 0x12, 0x34,
        0x00, 0x01, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
        0x0d, 0x0e, 0x0f,
    ];
    let rep: Vec<u8> = vec![
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x02, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x86, 0xdd, 0x60,
        0x00, 0x00, 0x00, 0x00, 0x18, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x81, 0x00, 0xd8, 0xc2, 0x12, 0x34,
        0x00, 0x01, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
        0x0d, 0x0e, 0x0f,
    ];
    let mut lab = Lab::new(true);
    // With Ethernet padding after the packet: the reply carries the IPv6 packet only.
    let mut padded = req.clone();
    padded.extend_from_slice(&[0; 6]);
    lab.send(0, &[req, padded]);
    assert_eq!(lab.out(0), vec![rep.clone(), rep]);
    assert!(lab.out(1).is_empty());
    assert_eq!(lab.count("ip6-local", "echo-replies"), 2);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn echo_to_the_link_local_address_is_answered_on_the_link() {
    let mut lab = Lab::new(true);
    lab.sw
        .ip6_add_neighbor("p0", ll_a(), EthernetAddress(MAC_A))
        .unwrap();
    let req = eth(
        MAC_R0,
        MAC_A,
        &icmp6_pkt(ll_a(), ll_r0(), 64, 128, [0, 7, 0, 9], b"abcdefgh"),
    );
    // p1's link-local address is not reachable from p0's link.
    let other = eth(
        MAC_R0,
        MAC_A,
        &icmp6_pkt(ll_a(), ll_r1(), 64, 128, [0, 7, 0, 9], b"abcdefgh"),
    );
    lab.send(0, &[req, other]);
    let want = eth(
        MAC_A,
        MAC_R0,
        &icmp6_pkt(ll_r0(), ll_a(), 64, 129, [0, 7, 0, 9], b"abcdefgh"),
    );
    assert_eq!(lab.out(0), vec![want]);
    assert_eq!(lab.count("ip6-input", "link-local-not-ours"), 1);
    let ifs = lab.sw.show_ip6_interfaces();
    assert_eq!(ifs[0].link_local, Some(ll_r0()));
    assert_eq!(ifs[1].link_local, Some(ll_r1()));
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn forwarding_rewrites_macs_and_decrements_the_hop_limit() {
    let mut lab = Lab::new(true);
    for hlim in [64u8, 2, 255] {
        let body = udp(30);
        lab.send(
            0,
            &[eth(MAC_R0, MAC_A, &ipv6(ha(), far(), hlim, 17, &body))],
        );
        let want = eth(MAC_B, MAC_R1, &ipv6(ha(), far(), hlim - 1, 17, &body));
        assert_eq!(lab.out(1), vec![want], "hop limit {hlim}");
    }
    // To a connected host: the destination is the neighbour.
    lab.send(1, &[eth(MAC_R1, MAC_B, &ipv6(hb(), ha(), 9, 17, &udp(8)))]);
    assert_eq!(
        lab.out(0),
        vec![eth(MAC_A, MAC_R0, &ipv6(hb(), ha(), 8, 17, &udp(8)))]
    );
    assert!(lab.errors().is_empty(), "{:?}", lab.errors());
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn every_burst_size_is_forwarded_in_order() {
    let mut lab = Lab::new(true);
    for n in [1usize, 3, 4, 5, 255, 256, 257] {
        let frames: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let dst = Ipv6Addr::from(u128::from(far()) + ((i as u128) << 16));
                let mut u = udp(18);
                u[17] = i as u8;
                eth(MAC_R0, MAC_A, &ipv6(ha(), dst, 64, 17, &u))
            })
            .collect();
        lab.send(0, &frames);
        let out = lab.out(1);
        assert_eq!(out.len(), n, "burst {n}");
        for (i, f) in out.iter().enumerate() {
            assert_eq!(&f[..12], &[MAC_B, MAC_R1].concat()[..]);
            assert_eq!(f[21], 63);
            assert_eq!(f[14 + 40 + 17], i as u8, "order kept");
        }
    }
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

/// The ICMPv6 error frame the switch sends from `from` to `to` about `offending`.
fn error_frame(
    dmac: [u8; 6],
    smac: [u8; 6],
    from: Ipv6Addr,
    to: Ipv6Addr,
    (t, code): (u8, u8),
    rest: [u8; 4],
    offending: &[u8],
) -> Vec<u8> {
    eth(
        dmac,
        smac,
        &ipv6(from, to, 64, 58, &icmp6(from, to, t, code, rest, offending)),
    )
}

#[test]
fn ip6_input_drops_each_bad_header_with_its_reason() {
    let mut lab = Lab::new(true);
    let good = ipv6(ha(), far(), 64, 17, &udp(12));
    let mut cases: Vec<(&str, Vec<u8>)> = vec![("truncated", good[..39].to_vec())];
    let mut v4 = good.clone();
    v4[0] = 0x45;
    cases.push(("bad-version", v4));
    cases.push(("bad-payload-length", good.clone()));
    cases.push(("bad-source", ipv6(a6("ff02::1"), far(), 64, 17, &udp(12))));
    cases.push(("bad-source", ipv6(a6("::1"), far(), 64, 17, &udp(12))));
    cases.push(("bad-destination", ipv6(ha(), a6("::"), 64, 17, &udp(12))));
    cases.push(("bad-destination", ipv6(ha(), a6("::1"), 64, 17, &udp(12))));
    cases.push((
        "link-local-not-ours",
        ipv6(ha(), a6("fe80::77"), 64, 17, &udp(12)),
    ));
    for (reason, pkt) in &cases {
        lab.sw.clear_counters();
        // Not padded: "truncated" is the IPv6 header's, "bad-payload-length" one byte short.
        let mut f = eth(MAC_R0, MAC_A, pkt);
        if *reason == "bad-payload-length" {
            f.truncate(14 + pkt.len() - 1);
        }
        lab.send(0, &[f]);
        assert!(lab.out(1).is_empty(), "{reason}");
        assert_eq!(
            lab.count("ip6-input", reason),
            1,
            "{reason}: {:?}",
            lab.errors()
        );
    }
    // The good packet passes.
    lab.send(0, &[eth(MAC_R0, MAC_A, &good)]);
    assert_eq!(lab.out(1).len(), 1);

    // Hop-by-hop options refused when configured so (RFC 8200 §4.3 header: next header UDP,
    // length 0, a PadN option of 4 bytes).
    let mut hbh = vec![17, 0, 1, 4, 0, 0, 0, 0];
    hbh.extend_from_slice(&udp(12));
    let hbh = ipv6(ha(), far(), 64, 0, &hbh);
    lab.send(0, &[eth(MAC_R0, MAC_A, &hbh)]);
    assert_eq!(lab.out(1).len(), 1, "allowed by default");
    lab.sw
        .set_ip_settings(IpSettings {
            allow_hop_by_hop: false,
            ..Default::default()
        })
        .unwrap();
    lab.sw.clear_counters();
    lab.send(0, &[eth(MAC_R0, MAC_A, &hbh)]);
    assert!(lab.out(1).is_empty());
    assert_eq!(lab.count("ip6-input", "hop-by-hop-not-allowed"), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

/// `ip6-input` sends a packet to route along the `ip6-unicast` arc (features such as an IPv6
/// firewall sit there, then `ip6-lookup`), and what is for the switch itself straight to
/// `ip6-local`; the arc is declared under its name and ends at `ip6-lookup`.
#[test]
fn packets_to_route_take_the_ip6_unicast_arc() {
    use vecswitch_graph::testing::run;
    use vecswitch_switch::ip::{ip6_input, Ip6Input, IP6_UNICAST_ARC};
    use vecswitch_switch::state::SwitchState;

    let mut st = SwitchState::new(16);
    let mut pool = Pool::new(64);
    let cases = [
        (ipv6(ha(), far(), 64, 17, &udp(12)), true),
        (ipv6(ha(), hb(), 2, 17, &udp(12)), true),
        (icmp6_pkt(ha(), a6("ff02::1"), 255, 128, [0; 4], &[]), false),
    ];
    let pkts: Vec<u32> = cases
        .iter()
        .map(|(b, _)| {
            let h = packet(&mut pool, &eth(MAC_R0, MAC_A, b));
            pool.header_mut(h).l3_offset = 14;
            h
        })
        .collect();
    let r = run(&mut Ip6Input, &mut pool, &mut st, &pkts);
    for ((_, routed), got) in cases.iter().zip(&r.nexts) {
        let want = if *routed {
            vecswitch_graph::Next::arc(IP6_UNICAST_ARC)
        } else {
            ip6_input::Edge::Ip6Local.next()
        };
        assert_eq!(*got, want);
    }
    assert!(r.emitted.is_empty());

    let g = vecswitch_switch::feature::build_graph(vecswitch_switch::feature::FEATURES).unwrap();
    assert_eq!(g.arc_id("ip6-unicast"), Some(IP6_UNICAST_ARC));
    assert_eq!(
        g.arc_id("ip4-unicast"),
        Some(vecswitch_switch::ip::IP4_UNICAST_ARC)
    );
}

#[test]
fn hop_limit_expiry_and_no_route_send_the_exact_icmpv6_errors() {
    let mut lab = Lab::new(true);
    for hlim in [1u8, 0] {
        let pkt = ipv6(ha(), far(), hlim, 17, &udp(12));
        lab.send(0, &[eth(MAC_R0, MAC_A, &pkt)]);
        let want = error_frame(MAC_A, MAC_R0, r0(), ha(), (3, 0), [0; 4], &pkt);
        assert_eq!(lab.out(0), vec![want], "hop limit {hlim}");
    }
    assert!(lab.out(1).is_empty());
    assert_eq!(lab.count("ip6-input", "hop-limit-expired"), 2);
    // Hop limit 1 to the switch itself is delivered.
    let echo = icmp6_pkt(ha(), r1(), 1, 128, [0, 1, 0, 1], b"x");
    lab.send(0, &[eth(MAC_R0, MAC_A, &echo)]);
    assert_eq!(lab.out(0).len(), 1);
    // No route: destination unreachable code 0.
    let pkt = ipv6(ha(), a6("2001:db9::1"), 64, 17, &udp(12));
    lab.send(0, &[eth(MAC_R0, MAC_A, &pkt)]);
    let want = error_frame(MAC_A, MAC_R0, r0(), ha(), (1, 0), [0; 4], &pkt);
    assert_eq!(lab.out(0), vec![want]);
    assert_eq!(lab.count("ip6-lookup", "no-route"), 1);
    // UDP to the switch: port unreachable (code 4).
    let pkt = ipv6(ha(), r0(), 64, 17, &udp(12));
    lab.send(0, &[eth(MAC_R0, MAC_A, &pkt)]);
    let want = error_frame(MAC_A, MAC_R0, r0(), ha(), (1, 4), [0; 4], &pkt);
    assert_eq!(lab.out(0), vec![want]);
    // A long packet is quoted up to the 1280-byte minimum MTU (RFC 4443 §2.4(c)).
    let pkt = ipv6(ha(), far(), 1, 17, &udp(1400));
    lab.send(0, &[eth(MAC_R0, MAC_A, &pkt)]);
    let out = lab.out(0);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].len(), 14 + 1280);
    assert_eq!(
        out[0],
        error_frame(MAC_A, MAC_R0, r0(), ha(), (3, 0), [0; 4], &pkt[..1232])
    );
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn link_local_sources_are_not_forwarded_but_told_beyond_scope() {
    let mut lab = Lab::new(true);
    lab.sw
        .ip6_add_neighbor("p0", ll_a(), EthernetAddress(MAC_A))
        .unwrap();
    let pkt = ipv6(ll_a(), far(), 64, 17, &udp(12));
    lab.send(0, &[eth(MAC_R0, MAC_A, &pkt)]);
    assert!(lab.out(1).is_empty());
    // From p0's link-local address to A's, out of p0.
    let want = error_frame(MAC_A, MAC_R0, ll_r0(), ll_a(), (1, 2), [0; 4], &pkt);
    assert_eq!(lab.out(0), vec![want]);
    assert_eq!(lab.count("ip6-lookup", "link-local-source"), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn errors_are_not_sent_about_errors_or_multicast_and_are_rate_limited() {
    let mut lab = Lab::new(true);
    // About an ICMPv6 error: nothing.
    let err = icmp6_pkt(ha(), a6("2001:db9::1"), 64, 1, [0; 4], &[0; 48]);
    lab.send(0, &[eth(MAC_R0, MAC_A, &err)]);
    assert!(lab.out(0).is_empty());
    assert_eq!(lab.count("ip6-lookup", "icmp-suppressed"), 1);
    assert_eq!(lab.count("ip6-lookup", "no-route"), 1);
    // Over the rate: the bucket's burst, then nothing until time passes.
    lab.sw.clear_counters();
    let burst = IpSettings::default().icmp_burst as usize;
    let frames: Vec<Vec<u8>> = (0..25)
        .map(|_| {
            eth(
                MAC_R0,
                MAC_A,
                &ipv6(ha(), a6("2001:db9::1"), 64, 17, &udp(12)),
            )
        })
        .collect();
    lab.send(0, &frames);
    assert!(
        lab.out(0).len() <= burst + 1,
        "at most the burst (and a refill)"
    );
    assert!(lab.count("ip6-lookup", "icmp-rate-limited") >= 25 - burst as u64 - 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn too_big_sends_packet_too_big_with_the_mtu() {
    let mut lab = Lab::new(true);
    lab.sw.set_interface_mtu("p1", 1280).unwrap();
    let big = ipv6(ha(), far(), 64, 17, &udp(1300 - 40));
    let fits = ipv6(ha(), far(), 64, 17, &udp(1280 - 40));
    lab.send(0, &[eth(MAC_R0, MAC_A, &big), eth(MAC_R0, MAC_A, &fits)]);
    let quoted = &big[..1232];
    let want = error_frame(
        MAC_A,
        MAC_R0,
        r0(),
        ha(),
        (2, 0),
        [0, 0, 0x05, 0x00],
        quoted,
    );
    assert_eq!(lab.out(0), vec![want]);
    assert_eq!(lab.out(1).len(), 1);
    assert_eq!(lab.count("ip6-rewrite", "mtu-exceeded"), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn neighbor_solicitation_for_the_switch_is_answered_and_the_sender_learned() {
    let mut lab = Lab::new(false);
    // From A's global address, with its link-layer address.
    lab.send(0, &[ns_frame(MAC_A, ha(), r0(), Some(MAC_A))]);
    // Solicited advertisement: R, S, O flags; from the target; the target link-layer option.
    let want = eth(
        MAC_A,
        MAC_R0,
        &icmp6_pkt_hlim255(r0(), ha(), 136, [0xe0, 0, 0, 0], &na_data(r0(), MAC_R0)),
    );
    assert_eq!(lab.out(0), vec![want]);
    let n = lab.sw.show_ip6_neighbors(0, 10).unwrap();
    assert_eq!((n.total, n.learned), (1, 1));
    assert_eq!(n.entries[0].ip, ha());
    assert_eq!(n.entries[0].mac.as_deref(), Some("02:00:00:00:00:0a"));
    // For the link-local address, from A's link-local one.
    lab.send(0, &[ns_frame(MAC_A, ll_a(), ll_r0(), Some(MAC_A))]);
    let want = eth(
        MAC_A,
        MAC_R0,
        &icmp6_pkt_hlim255(
            ll_r0(),
            ll_a(),
            136,
            [0xe0, 0, 0, 0],
            &na_data(ll_r0(), MAC_R0),
        ),
    );
    assert_eq!(lab.out(0), vec![want]);
    assert_eq!(lab.sw.show_ip6_neighbors(0, 10).unwrap().learned, 2);
    // DAD (from ::, no option): to all-nodes, solicited flag clear.
    lab.send(0, &[ns_frame(MAC_A, a6("::"), r0(), None)]);
    let want = eth(
        [0x33, 0x33, 0, 0, 0, 1],
        MAC_R0,
        &icmp6_pkt_hlim255(
            r0(),
            a6("ff02::1"),
            136,
            [0xa0, 0, 0, 0],
            &na_data(r0(), MAC_R0),
        ),
    );
    assert_eq!(lab.out(0), vec![want]);
    assert_eq!(lab.count("ip6-nd", "dad-answered"), 1);
    assert_eq!(lab.count("ip6-nd", "solicitations-answered"), 2);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

/// An ICMPv6 packet with hop limit 255 (Neighbor Discovery).
fn icmp6_pkt_hlim255(src: Ipv6Addr, dst: Ipv6Addr, t: u8, rest: [u8; 4], data: &[u8]) -> Vec<u8> {
    icmp6_pkt(src, dst, 255, t, rest, data)
}

#[test]
fn invalid_neighbor_discovery_is_dropped_with_its_reason() {
    let mut lab = Lab::new(false);
    let (snm_r0, snm_mac) = snm(r0());
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    // Hop limit 64: forwarded, not from the link (RFC 4861 §7.1.1).
    cases.push((
        "bad-hop-limit",
        eth(
            snm_mac,
            MAC_A,
            &icmp6_pkt(ha(), snm_r0, 64, 135, [0; 4], &ns_data(r0(), Some(MAC_A))),
        ),
    ));
    let mut bad_sum = ns_frame(MAC_A, ha(), r0(), Some(MAC_A));
    bad_sum[14 + 40 + 2] ^= 0xff;
    cases.push(("bad-checksum", bad_sum));
    cases.push((
        "not-for-us",
        ns_frame(MAC_A, ha(), a6("2001:db8::99"), Some(MAC_A)),
    ));
    cases.push((
        "bad-target",
        eth(
            snm_mac,
            MAC_A,
            &icmp6_pkt(
                ha(),
                snm_r0,
                255,
                135,
                [0; 4],
                &ns_data(a6("ff02::1"), None),
            ),
        ),
    ));
    // DAD with a link-layer option (RFC 4861 §7.1.1).
    cases.push(("bad-source", ns_frame(MAC_A, a6("::"), r0(), Some(MAC_A))));
    // A zero-length option.
    let mut zero = ns_data(r0(), Some(MAC_A));
    zero[17] = 0;
    cases.push((
        "malformed",
        eth(
            snm_mac,
            MAC_A,
            &icmp6_pkt(ha(), snm_r0, 255, 135, [0; 4], &zero),
        ),
    ));
    // Someone else advertising our address.
    cases.push((
        "address-conflict",
        eth(
            MAC_R0,
            MAC_A,
            &icmp6_pkt(ha(), r0(), 255, 136, [0x20, 0, 0, 0], &na_data(r0(), MAC_A)),
        ),
    ));
    // A multicast advertisement with the solicited flag.
    cases.push((
        "bad-solicited-flag",
        eth(
            [0x33, 0x33, 0, 0, 0, 1],
            MAC_A,
            &icmp6_pkt(
                ha(),
                a6("ff02::1"),
                255,
                136,
                [0x40, 0, 0, 0],
                &na_data(ha(), MAC_A),
            ),
        ),
    ));
    // An advertisement without the target link-layer option.
    cases.push((
        "no-link-layer-address",
        eth(
            MAC_R0,
            MAC_A,
            &icmp6_pkt(ha(), r0(), 255, 136, [0x60, 0, 0, 0], &ha().octets()),
        ),
    ));
    for (reason, f) in cases {
        lab.sw.clear_counters();
        lab.send(0, &[f]);
        assert!(lab.out(0).is_empty(), "{reason}");
        assert_eq!(
            lab.count("ip6-nd", reason),
            1,
            "{reason}: {:?}",
            lab.errors()
        );
    }
    // Router solicitations and MLD reports (multicast, not ND) are not handled, and counted.
    lab.sw.clear_counters();
    let rs = eth(
        [0x33, 0x33, 0, 0, 0, 2],
        MAC_A,
        &icmp6_pkt(ll_a(), a6("ff02::2"), 255, 133, [0; 4], &[]),
    );
    lab.send(0, &[rs]);
    assert_eq!(lab.count("ip6-local", "multicast-not-handled"), 1);
    assert_eq!(lab.sw.show_ip6_neighbors(0, 10).unwrap().total, 0);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn resolution_solicits_holds_and_sends_on_the_advertisement() {
    let mut lab = Lab::new(false);
    let pkt = |i: usize| eth(MAC_R0, MAC_A, &ipv6(ha(), far(), 64, 17, &udp(10 + i)));
    let pending = IpSettings::default().arp_pending as usize;
    let frames: Vec<Vec<u8>> = (0..pending + 2).map(pkt).collect();
    lab.send(0, &frames);
    // One solicitation for the next hop B, from p1's address in B's subnet, to B's
    // solicited-node address.
    assert_eq!(lab.out(1), vec![ns_frame(MAC_R1, r1(), hb(), Some(MAC_R1))]);
    assert_eq!(lab.count("ip6-rewrite", "held-for-nd"), pending as u64);
    assert_eq!(lab.count("ip6-rewrite", "pending-full"), 2);
    assert_eq!(lab.count("ip6-rewrite", "solicitations-sent"), 1);
    let n = lab.sw.show_ip6_neighbors(0, 10).unwrap();
    assert_eq!((n.incomplete, n.pending), (1, pending));
    assert_eq!(lab.sw.show_buffers().in_use as usize, pending);
    // B advertises (solicited, override): the held packets leave, rewritten, in order.
    let na = eth(
        MAC_R1,
        MAC_B,
        &icmp6_pkt(hb(), r1(), 255, 136, [0x60, 0, 0, 0], &na_data(hb(), MAC_B)),
    );
    lab.send(1, &[na]);
    let out = lab.out(1);
    assert_eq!(out.len(), pending);
    for (i, f) in out.iter().enumerate() {
        assert_eq!(
            *f,
            eth(MAC_B, MAC_R1, &ipv6(ha(), far(), 63, 17, &udp(10 + i)))
        );
    }
    assert_eq!(lab.count("ip6-nd", "pending-sent"), pending as u64);
    assert_eq!(lab.count("ip6-nd", "advertisements-received"), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
    // From now on packets go straight through; an unsolicited advertisement without the override
    // flag does not move B (RFC 4861 §7.2.5), one with it does.
    lab.send(0, &[pkt(0)]);
    assert_eq!(lab.out(1).len(), 1);
    let moved = [2, 0, 0, 0, 0, 0x1b];
    for (flags, want) in [(0x00u8, "02:00:00:00:00:0b"), (0x20, "02:00:00:00:00:1b")] {
        let na = eth(
            MAC_R1,
            moved,
            &icmp6_pkt(
                hb(),
                r1(),
                255,
                136,
                [flags, 0, 0, 0],
                &na_data(hb(), moved),
            ),
        );
        lab.send(1, &[na]);
        let n = lab.sw.show_ip6_neighbors(0, 10).unwrap();
        let b = n.entries.iter().find(|e| e.ip == hb()).unwrap();
        assert_eq!(b.mac.as_deref(), Some(want), "flags {flags:#x}");
    }
    // An advertisement for an address nobody asked about creates nothing.
    let na = eth(
        MAC_R1,
        MAC_B,
        &icmp6_pkt(
            a6("2001:db8:1::7"),
            r1(),
            255,
            136,
            [0x20, 0, 0, 0],
            &na_data(a6("2001:db8:1::7"), MAC_B),
        ),
    );
    lab.send(1, &[na]);
    assert_eq!(lab.sw.show_ip6_neighbors(0, 10).unwrap().total, 1);
}

#[test]
fn unanswered_solicitations_are_retried_then_given_up_and_counted() {
    let mut lab = Lab::new(false);
    let pkt = eth(MAC_R0, MAC_A, &ipv6(ha(), far(), 64, 17, &udp(10)));
    let other = eth(
        MAC_R0,
        MAC_A,
        &ipv6(ha(), a6("2001:db8:1::99"), 64, 17, &udp(10)),
    );
    lab.send(0, std::slice::from_ref(&pkt));
    assert_eq!(lab.out(1).len(), 1, "first solicitation");
    let max = IpSettings::default().arp_max_requests;
    let mut solicitations = 1;
    for _ in 0..max + 1 {
        lab.sw.advance_clock(Duration::from_millis(1100));
        lab.send(0, std::slice::from_ref(&other));
        // The NS target is at bytes 14 + 40 + 8.
        solicitations += lab
            .out(1)
            .iter()
            .filter(|f| f[62..78] == hb().octets())
            .count();
    }
    assert_eq!(solicitations as u32, max, "one a second, {max} in all");
    assert_eq!(lab.count("ip6-rewrite", "pending-timed-out"), 1 + 3);
    assert_eq!(lab.count("ip6-rewrite", "neighbors-aged-out"), 2);
    assert_eq!(lab.sw.show_buffers().in_use, 1, "the last packet, held");
}

#[test]
fn fib_show_and_bad_control_input_name_field_value_and_accepted() {
    let mut lab = Lab::new(true);
    let routes: Vec<(Ipv6Prefix, Vec<Ipv6Addr>)> = (0..1000u128)
        .map(|i| {
            let net = Ipv6Addr::from(0x2001_0db8_1000u128 << 80 | i << 64);
            (Ipv6Prefix { addr: net, len: 64 }, vec![hb()])
        })
        .collect();
    lab.sw.ip6_add_routes(0, &routes).unwrap();
    let f = lab.sw.show_ip6_fib(0, None, 0, 10).unwrap();
    // 2 connected, 2 local, the /48 and the 1,000 /64s.
    assert_eq!((f.routes, f.entries.len()), (1005, 10));
    let one = lab
        .sw
        .show_ip6_fib(0, Some(p("2001:db8:ff::5/128")), 0, 10)
        .unwrap();
    assert_eq!(one.entries[0].prefix, p("2001:db8:ff::/48"));
    let inside = lab
        .sw
        .show_ip6_fib(0, Some(p("2001:db8:1000::/48")), 0, 10)
        .unwrap();
    assert_eq!(inside.matched, 1000);
    // Traffic to one of them goes through.
    let dst = Ipv6Addr::from(0x2001_0db8_1000u128 << 80 | 999u128 << 64 | 1);
    lab.send(0, &[eth(MAC_R0, MAC_A, &ipv6(ha(), dst, 64, 17, &udp(10)))]);
    assert_eq!(lab.out(1).len(), 1);
    let e = lab
        .sw
        .ip6_add_route(0, p("2001:db8:ff::1/48"), &[hb()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("2001:db8:ff::1/48") && e.contains("host bits"),
        "{e}"
    );
    let e = lab
        .sw
        .ip6_add_route(0, p("2001:db8:fe::/48"), &[a6("2001:db8:9::1")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("2001:db8:9::1") && e.contains("connected"),
        "{e}"
    );
    let e = lab
        .sw
        .ip6_add_address("p0", p("fe80::1/64"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("fe80::1/64"), "{e}");
    let e = lab
        .sw
        .ip6_add_route(1, p("::/0"), &[hb()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("table"), "{e}");
    lab.sw.ip6_del_route(0, p("2001:db8:ff::/48")).unwrap();
    assert!(lab.sw.ip6_del_route(0, p("2001:db8:ff::/48")).is_err());
}

#[test]
fn delete_port_clears_the_ip_state_of_its_interface() {
    let mut lab = Lab::new(false);
    // IPv4 beside IPv6 on both ports, a static route through p1 in each family, one ECMP route
    // over both ports, neighbours, and packets waiting for p1's next hop.
    let p4 = |s: &str| s.parse::<Ipv4Prefix>().unwrap();
    lab.sw.ip_add_address("p0", p4("10.0.0.1/24")).unwrap();
    lab.sw.ip_add_address("p1", p4("10.1.0.1/24")).unwrap();
    lab.sw
        .ip_add_route(0, p4("192.168.0.0/16"), &[Ipv4Addr::new(10, 1, 0, 2)])
        .unwrap();
    lab.sw
        .ip6_add_route(0, p("2001:db8:ee::/48"), &[hb(), a6("2001:db8::7")])
        .unwrap();
    lab.sw
        .ip_add_neighbor("p1", Ipv4Addr::new(10, 1, 0, 2), EthernetAddress(MAC_B))
        .unwrap();
    lab.sw
        .ip6_add_neighbor("p0", ha(), EthernetAddress(MAC_A))
        .unwrap();
    lab.send(
        0,
        &[eth(MAC_R0, MAC_A, &ipv6(ha(), far(), 64, 17, &udp(10)))],
    );
    assert_eq!(lab.sw.show_buffers().in_use, 1, "held for B");
    assert_eq!(lab.out(1).len(), 1, "the solicitation");

    lab.sw.delete_port("p1").unwrap();

    let f4 = lab.sw.show_ip_fib(0, None, 0, 100).unwrap();
    let left4: Vec<String> = f4.entries.iter().map(|e| e.prefix.to_string()).collect();
    assert_eq!(left4, ["10.0.0.0/24", "10.0.0.1/32"], "p1's routes gone");
    let f6 = lab.sw.show_ip6_fib(0, None, 0, 100).unwrap();
    let left6: Vec<String> = f6.entries.iter().map(|e| e.prefix.to_string()).collect();
    assert_eq!(
        left6,
        ["2001:db8::/64", "2001:db8::1/128", "2001:db8:ee::/48"],
        "the /48 via B gone, the ECMP route keeps its path through p0"
    );
    assert_eq!(f6.entries[2].paths.len(), 1);
    let n4 = lab.sw.show_ip_neighbors(0, 10).unwrap();
    assert_eq!(n4.total, 0);
    let n6 = lab.sw.show_ip6_neighbors(0, 10).unwrap();
    assert_eq!(n6.total, 1, "A on p0 stays");
    assert_eq!(n6.entries[0].ip, ha());
    assert_eq!(lab.sw.show_buffers().in_use, 0, "the held packet freed");
    assert_eq!(lab.sw.show_ip_interfaces().len(), 1);
    assert_eq!(lab.sw.show_ip6_interfaces().len(), 1);
    // Adjacencies went with their routes: the drop and local ones, p0's glean (v4); drop, local,
    // p0's glean and the neighbour path via 2001:db8::7 (v6).
    assert_eq!(f4.adjacencies, 3);
    assert_eq!(f6.adjacencies, 4);

    // A new port with the old name starts with no addresses, and p0 still routes.
    let (b, _p1) = wire("p1");
    lab.sw.add_port("p1", b).unwrap();
    assert!(lab
        .sw
        .show_ip6_interfaces()
        .iter()
        .all(|i| i.interface != "p1"));
    lab.send(
        0,
        &[eth(
            MAC_R0,
            MAC_A,
            &ipv6(a6("2001:db8::7"), ha(), 64, 17, &udp(10)),
        )],
    );
    assert_eq!(lab.out(0).len(), 1);
}

/// `[ip]` with IPv6 addresses, routes and neighbours beside IPv4 ones, and the settings keys:
/// validation names each bad field; the objects, applied in rank order, route as the control
/// calls do.
#[test]
fn ip_config_with_ipv6_and_settings_validates_and_applies() {
    use vecswitch_switch::ip::config::{ip_objects, validate_ip, IpConfig};
    use vecswitch_switch::object::{ApplyCx, Validation};
    let good: IpConfig = serde_json::from_str(
        r#"{"allow_options": false, "icmp_errors_per_s": 5, "allow_hop_by_hop": false,
            "address": [{"interface": "p0", "address": "2001:db8::1/64"},
                        {"interface": "p0", "address": "10.0.0.1/24"},
                        {"interface": "p1", "address": "2001:db8:1::1/64"}],
            "route": [{"prefix": "2001:db8:ff::/48", "via": ["2001:db8:1::2"]}],
            "neighbor": [{"interface": "p1", "ip": "2001:db8:1::2", "mac": "02:00:00:00:00:0b"},
                         {"interface": "p0", "ip": "fe80::aa", "mac": "02:00:00:00:00:0a"},
                         {"interface": "p0", "ip": "2001:db8::2", "mac": "02:00:00:00:00:0a"}]}"#,
    )
    .unwrap();
    let mut v = Validation::default();
    v.interfaces.extend(["p0".to_string(), "p1".to_string()]);
    validate_ip(&good, &mut v);
    assert!(v.errors.is_empty(), "{:?}", v.errors);
    let s = good.settings();
    assert!(!s.allow_options && !s.allow_hop_by_hop);
    assert_eq!(
        (s.icmp_errors_per_s, s.icmp_burst),
        (5, 10),
        "unset keys keep defaults"
    );

    let bad: IpConfig = serde_json::from_str(
        r#"{"neighbor_limit": 0, "arp_pending": 5000, "arp_max_requests": 0,
            "address": [{"interface": "p0", "address": "fe80::1/64"},
                        {"interface": "p1", "address": "2001:db8::9/48"},
                        {"interface": "p0", "address": "2001:db8::1/64"}],
            "route": [{"prefix": "2001:db8:ff::1/48", "via": ["10.1.0.2"]},
                      {"prefix": "2001:db8:fe::/48", "via": ["2001:db8:7::2"]}],
            "neighbor": [{"interface": "p1", "ip": "fe80::bb", "mac": "02:00:00:00:00:0b"}]}"#,
    )
    .unwrap();
    let mut v = Validation::default();
    v.interfaces.extend(["p0".to_string(), "p1".to_string()]);
    validate_ip(&bad, &mut v);
    let paths: Vec<&str> = v.errors.iter().map(|e| e.path.as_str()).collect();
    for p in [
        "ip.neighbor_limit",
        "ip.arp_pending",
        "ip.arp_max_requests",
        "ip.address[0].address",
        "ip.address[2].address",
        "ip.route[0].prefix",
        "ip.route[0].via[0]",
        "ip.route[1].via[0]",
    ] {
        assert!(paths.contains(&p), "{p} in {paths:?}");
    }
    let e = v
        .errors
        .iter()
        .find(|e| e.path == "ip.arp_pending")
        .unwrap();
    assert_eq!(
        (e.value.as_str(), e.expected.as_str()),
        ("5000", "0 to 1024 packets")
    );
    let typo = serde_json::from_str::<IpConfig>(r#"{"alow_options": true}"#).unwrap_err();
    assert!(typo.to_string().contains("alow_options"), "{typo}");
    let e = serde_json::from_str::<IpConfig>(
        r#"{"address": [{"interface": "p0", "address": "2001:db8::1/129"}]}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("0 to 128"), "{e}");

    // Apply in rank order to a switch with the ports, then forward one packet; remove in reverse.
    let mut lab = Lab::new(false);
    lab.sw.ip6_del_route(0, p("2001:db8:ff::/48")).unwrap();
    lab.sw.ip_clear_interface("p0").unwrap();
    lab.sw.ip_clear_interface("p1").unwrap();
    assert!(lab.sw.show_ip6_interfaces().is_empty());
    let mut objs = Vec::new();
    ip_objects(&good, &mut objs);
    objs.sort_by_key(|o| o.rank());
    let mut cx = ApplyCx::default();
    for o in &objs {
        o.add(&mut lab.sw, &mut cx).unwrap();
    }
    assert!(!lab.sw.ip_settings().allow_hop_by_hop);
    lab.send(
        0,
        &[eth(MAC_R0, MAC_A, &ipv6(ha(), far(), 64, 17, &udp(20)))],
    );
    assert_eq!(
        lab.out(1),
        vec![eth(MAC_B, MAC_R1, &ipv6(ha(), far(), 63, 17, &udp(20)))]
    );
    for o in objs.iter().rev() {
        o.remove(&mut lab.sw, &mut cx).unwrap();
    }
    assert_eq!(lab.sw.show_ip6_fib(0, None, 0, 10).unwrap().routes, 0);
    assert_eq!(lab.sw.show_ip6_neighbors(0, 10).unwrap().total, 0);
    assert_eq!(lab.sw.ip_settings(), IpSettings::default());
}

/// Bad input never crashes: 20,000 seeded mutations (bytes flipped, frames cut) of valid IPv6
/// frames of every kind the path handles go through the switch; every frame enters the graph
/// and every buffer comes back except those waiting for a neighbour.
#[test]
fn mutated_ipv6_frames_never_crash_and_every_buffer_is_accounted_for() {
    let mut lab = Lab::new(false);
    lab.sw
        .ip6_add_neighbor("p1", hb(), EthernetAddress(MAC_B))
        .unwrap();
    let mut hbh = vec![17, 0, 1, 4, 0, 0, 0, 0];
    hbh.extend_from_slice(&udp(12));
    let templates = [
        eth(MAC_R0, MAC_A, &ipv6(ha(), far(), 64, 17, &udp(30))),
        eth(MAC_R0, MAC_A, &ipv6(ha(), far(), 64, 0, &hbh)),
        eth(
            MAC_R0,
            MAC_A,
            &icmp6_pkt(ha(), r0(), 64, 128, [0, 1, 0, 1], b"abcd"),
        ),
        eth(
            MAC_R0,
            MAC_A,
            &icmp6_pkt(ll_a(), ll_r0(), 64, 128, [0, 1, 0, 1], b"abcd"),
        ),
        ns_frame(MAC_A, ha(), r0(), Some(MAC_A)),
        ns_frame(MAC_A, a6("::"), r0(), None),
        eth(
            MAC_R0,
            MAC_A,
            &icmp6_pkt(ha(), r0(), 255, 136, [0x60, 0, 0, 0], &na_data(ha(), MAC_A)),
        ),
        eth(
            MAC_R0,
            MAC_A,
            &ipv6(ha(), a6("2001:db8::77"), 64, 17, &udp(10)),
        ),
        eth(MAC_R0, MAC_A, &ipv6(ha(), far(), 1, 17, &udp(10))),
    ];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15; // xorshift64, fixed seed
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut sent = 0u64;
    for round in 0..200 {
        let frames: Vec<Vec<u8>> = (0..100)
            .map(|_| {
                let mut f = templates[next() as usize % templates.len()].clone();
                match next() % 4 {
                    0 => f.truncate(14 + next() as usize % (f.len() - 13)),
                    _ => {
                        for _ in 0..1 + next() % 4 {
                            // Never the Ethernet header: the frame must reach the IPv6 path.
                            let i = 14 + next() as usize % (f.len() - 14);
                            f[i] ^= 1 << (next() % 8);
                        }
                    }
                }
                f
            })
            .collect();
        sent += frames.len() as u64;
        lab.send(0, &frames);
        let _ = lab.out(0);
        let _ = lab.out(1);
        if round % 50 == 49 {
            lab.sw.advance_clock(Duration::from_millis(1100));
        }
    }
    assert_eq!(sent, 20_000);
    let held = lab.sw.show_ip6_neighbors(0, 10_000).unwrap().pending as u64;
    assert_eq!(lab.sw.show_buffers().in_use as u64, held);
    let received: u64 = lab
        .sw
        .show_interfaces()
        .iter()
        .filter(|i| i.name == "p0")
        .map(|i| i.counters.rx_packets)
        .sum();
    assert_eq!(received, sent, "every frame entered the graph");
}
