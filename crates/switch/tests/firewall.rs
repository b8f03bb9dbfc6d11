//! The stateful firewall through loopback ports: what passes, what is dropped with which reason,
//! per-rule counters, conntrack (established, related, timeouts on the simulated clock, the
//! limit), malformed packets, and the firewall behind NAT44 on the same outside interface.
//!
//! Topology: `in` 10.0.0.1/24 and fd00:a::1/64 (host A 10.0.0.2, fd00:a::2), `out`
//! 198.51.100.1/24 and 2001:db8:51::1/64 (next hop B 198.51.100.2, 2001:db8:51::2), routes
//! 203.0.113.0/24 and 2001:db8:113::/64 via B; the remote server R is 203.0.113.9 and
//! 2001:db8:113::9. The policy
//! (seed 004's shape): inside may open TCP 80/443, UDP 53 and pings (permit-reflect), host
//! 10.0.0.66 may do nothing, everything else from inside is denied; outside denies every
//! connection attempt (default deny) — only replies and related errors come in.

mod common;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::LoopbackPort;
use vecswitch_switch::firewall::ips::IpsConfig;
use vecswitch_switch::firewall::{Acl, Action, FirewallSettings, Proto, Rule};
use vecswitch_switch::ip::Ipv4Prefix;
use vecswitch_switch::nat44::Role;
use vecswitch_switch::{Switch, SwitchConfig};
use vecswitch_wire::{checksum, EthernetAddress};

const MAC_R0: [u8; 6] = [0x02, 0xfe, 0, 0, 0, 0];
const MAC_R1: [u8; 6] = [0x02, 0xfe, 0, 0, 0, 1];
const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];
const A: [u8; 4] = [10, 0, 0, 2];
const BAD: [u8; 4] = [10, 0, 0, 66];
const OUT: [u8; 4] = [198, 51, 100, 1];
const B: [u8; 4] = [198, 51, 100, 2];
const R: [u8; 4] = [203, 0, 113, 9];
const A6: &str = "fd00:a::2";
const BAD6: &str = "fd00:a::66";
const B6: &str = "2001:db8:51::2";
const R6: &str = "2001:db8:113::9";

fn v6(a: &str) -> Ipv6Addr {
    a.parse().unwrap()
}

/// An IPv6 packet with an upper-layer header `l4` of protocol `nh` whose checksum (at `csum`)
/// is filled in over the pseudo header.
fn ipv6(src: &str, dst: &str, nh: u8, mut l4: Vec<u8>, csum: usize) -> Vec<u8> {
    let (s, d) = (v6(src), v6(dst));
    let ph = checksum::pseudo_header_v6(&s, &d, nh, l4.len() as u32);
    let c = !checksum::combine(&[ph, checksum::sum(&l4)]);
    l4[csum..csum + 2].copy_from_slice(&c.to_be_bytes());
    let mut h = vec![0x60, 0, 0, 0];
    h.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    h.extend_from_slice(&[nh, 64]);
    h.extend_from_slice(&s.octets());
    h.extend_from_slice(&d.octets());
    h.extend_from_slice(&l4);
    h
}

fn udp6(src: &str, dst: &str, sport: u16, dport: u16) -> Vec<u8> {
    let mut u = sport.to_be_bytes().to_vec();
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&[0, 12, 0, 0, 1, 2, 3, 4]);
    ipv6(src, dst, 17, u, 6)
}

fn tcp6(src: &str, dst: &str, sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    let mut t = sport.to_be_bytes().to_vec();
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    ipv6(src, dst, 6, t, 16)
}

fn icmp6(src: &str, dst: &str, t: u8, rest: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut m = vec![t, 0, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(data);
    ipv6(src, dst, 58, m, 2)
}

fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> Vec<u8> {
    let mut h = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, proto, 0, 0];
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let tl = (20 + l4.len()) as u16;
    h[2..4].copy_from_slice(&tl.to_be_bytes());
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(l4);
    h
}

fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    udp_with(src, dst, sport, dport, &[1, 2, 3, 4])
}

/// A UDP datagram carrying `payload` (checksum 0: none, RFC 768).
fn udp_with(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = sport.to_be_bytes().to_vec();
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    ipv4(src, dst, 17, &u)
}

/// A TCP segment (data offset 5) carrying `payload`.
fn tcp_with(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut t = tcp(src, dst, sport, dport, 0x18)[20..].to_vec();
    t.extend_from_slice(payload);
    ipv4(src, dst, 6, &t)
}

fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    let mut t = sport.to_be_bytes().to_vec();
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    ipv4(src, dst, 6, &t)
}

fn icmp(src: [u8; 4], dst: [u8; 4], t: u8, rest: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut m = vec![t, 0, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(data);
    let c = checksum::checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    ipv4(src, dst, 1, &m)
}

fn eth(dst: [u8; 6], src: [u8; 6], ip: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    let ethertype: u16 = if ip[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(ip);
    f
}

fn p(s: &str) -> Ipv4Prefix {
    s.parse().unwrap()
}

fn rule(proto: Option<&str>, dport: Option<&str>, action: Action) -> Rule {
    Rule {
        proto: proto.map(|p| p.parse::<Proto>().unwrap()),
        dport: dport.map(|d| d.parse().unwrap()),
        ..Rule::any(action)
    }
}

fn inside_acl() -> Acl {
    let mut deny_bad = Rule::any(Action::Deny);
    deny_bad.src = Some(p("10.0.0.66/32").into());
    let mut ping = rule(Some("icmp"), None, Action::PermitReflect);
    ping.icmp_type = Some(8);
    Acl {
        rules: vec![
            deny_bad,
            rule(Some("tcp"), Some("80"), Action::PermitReflect),
            rule(Some("tcp"), Some("443"), Action::PermitReflect),
            rule(Some("udp"), Some("53"), Action::PermitReflect),
            ping,
        ],
        default_action: Action::Deny,
    }
}

struct Lab {
    sw: Switch,
    inside: LoopbackPort,
    outside: LoopbackPort,
    pool: Pool,
}

impl Lab {
    fn new(nat: bool) -> Lab {
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
        for h in [A, BAD] {
            sw.ip_add_neighbor("in", h.into(), EthernetAddress(MAC_A))
                .unwrap();
        }
        sw.ip_add_neighbor("out", B.into(), EthernetAddress(MAC_B))
            .unwrap();
        sw.ip6_add_address("in", "fd00:a::1/64".parse().unwrap())
            .unwrap();
        sw.ip6_add_address("out", "2001:db8:51::1/64".parse().unwrap())
            .unwrap();
        sw.ip6_add_route(0, "2001:db8:113::/64".parse().unwrap(), &[v6(B6)])
            .unwrap();
        for h in [A6, BAD6] {
            sw.ip6_add_neighbor("in", v6(h), EthernetAddress(MAC_A))
                .unwrap();
        }
        sw.ip6_add_neighbor("out", v6(B6), EthernetAddress(MAC_B))
            .unwrap();
        sw.firewall_set_acl("in", Some(inside_acl())).unwrap();
        sw.firewall_set_acl(
            "out",
            Some(Acl {
                rules: vec![],
                default_action: Action::Deny,
            }),
        )
        .unwrap();
        if nat {
            sw.nat44_set_interface("in", Some(Role::Inside)).unwrap();
            sw.nat44_set_interface("out", Some(Role::Outside)).unwrap();
        }
        Lab {
            sw,
            inside,
            outside,
            pool: Pool::new(4096),
        }
    }

    /// Sends `ip` from inside (or outside) and returns how many frames left the other side.
    fn pass(&mut self, from_inside: bool, ip: &[u8]) -> usize {
        let (tx, rx, f) = if from_inside {
            (&mut self.inside, &mut self.outside, eth(MAC_R0, MAC_A, ip))
        } else {
            (&mut self.outside, &mut self.inside, eth(MAC_R1, MAC_B, ip))
        };
        send(tx, &mut self.pool, &[f]);
        while self.sw.poll_once() > 0 {}
        drain(rx, &mut self.pool).len()
    }

    fn count(&self, reason: &str) -> u64 {
        self.count_at("firewall-input", reason)
    }

    fn count_at(&self, node: &str, reason: &str) -> u64 {
        self.sw
            .show_errors()
            .iter()
            .find(|e| e.node == node && e.reason == reason)
            .map_or(0, |e| e.count)
    }
}

/// The same policy over IPv6: the family-less rules (TCP 80/443, UDP 53) apply to IPv6 too, an
/// IPv6 deny and an ICMPv6 echo rule are added; `firewall-input6` decides with the same ACL and
/// conntrack; the IPv4 rules (the denied host, ICMP echo) never match IPv6 packets.
#[test]
fn ipv6_inside_opens_what_the_policy_allows_and_outside_only_answers() {
    let mut lab = Lab::new(false);
    let mut acl = inside_acl();
    let mut deny6 = Rule::any(Action::Deny);
    deny6.src = Some("fd00:a::66/128".parse().unwrap());
    acl.rules.insert(1, deny6);
    let mut ping6 = rule(Some("icmpv6"), None, Action::PermitReflect);
    ping6.icmp_type = Some(128);
    acl.rules.push(ping6);
    lab.sw.firewall_set_acl("in", Some(acl)).unwrap();
    assert_eq!(
        lab.pass(true, &tcp6(A6, R6, 40000, 443, 0x02)),
        1,
        "SYN out"
    );
    assert_eq!(
        lab.pass(false, &tcp6(R6, A6, 443, 40000, 0x12)),
        1,
        "SYN-ACK in"
    );
    assert_eq!(
        lab.pass(false, &tcp6(R6, A6, 22, 40000, 0x02)),
        0,
        "attempt from outside"
    );
    assert_eq!(lab.pass(true, &tcp6(A6, R6, 40001, 22, 0x02)), 0, "ssh out");
    assert_eq!(lab.pass(true, &udp6(A6, R6, 5000, 53)), 1);
    assert_eq!(lab.pass(false, &udp6(R6, A6, 53, 5000)), 1);
    assert_eq!(lab.pass(false, &udp6(R6, A6, 53, 5001)), 0);
    assert_eq!(
        lab.pass(true, &icmp6(A6, R6, 128, [0, 9, 0, 1], b"ping")),
        1
    );
    assert_eq!(
        lab.pass(false, &icmp6(R6, A6, 129, [0, 9, 0, 1], b"ping")),
        1
    );
    assert_eq!(
        lab.pass(false, &icmp6(R6, A6, 128, [0, 9, 0, 1], b"ping")),
        0
    );
    assert_eq!(
        lab.pass(true, &udp6(BAD6, R6, 5000, 53)),
        0,
        "the denied host"
    );
    // Related: an ICMPv6 error about the DNS flow comes in, about an unknown flow it does not.
    let q = udp6(A6, R6, 5000, 53);
    assert_eq!(lab.pass(false, &icmp6(B6, A6, 1, [0; 4], &q[..48])), 1);
    let other = udp6(A6, R6, 5999, 53);
    assert_eq!(lab.pass(false, &icmp6(B6, A6, 1, [0; 4], &other[..48])), 0);

    let fw = lab.sw.show_firewall();
    let hits: Vec<u64> = fw.acls[0].rules.iter().map(|r| r.hits).collect();
    assert_eq!(
        hits,
        vec![0, 1, 0, 1, 1, 0, 1],
        "deny-bad (IPv4), deny-bad6, tcp/80, 443, dns, ping (IPv4), ping6"
    );
    assert_eq!(fw.acls[0].default_hits, 1, "ssh");
    assert_eq!(fw.acls[1].default_hits, 4, "every attempt from outside");
    assert_eq!((fw.connections, fw.reflected), (3, 3));
    let c = |r: &str| lab.count_at("firewall-input6", r);
    assert_eq!((c("rule-deny"), c("default-deny")), (1, 5));
    assert_eq!((c("established"), c("related")), (3, 1));
    assert_eq!(lab.count("default-deny"), 0, "nothing went the IPv4 way");
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn inside_opens_what_the_policy_allows_and_outside_only_answers() {
    let mut lab = Lab::new(false);
    assert_eq!(lab.pass(true, &tcp(A, R, 40000, 80, 0x02)), 1, "SYN out");
    assert_eq!(
        lab.pass(false, &tcp(R, A, 80, 40000, 0x12)),
        1,
        "SYN-ACK in"
    );
    assert_eq!(lab.pass(true, &tcp(A, R, 40000, 80, 0x10)), 1, "ACK out");
    assert_eq!(lab.pass(true, &tcp(A, R, 40001, 22, 0x02)), 0, "ssh out");
    assert_eq!(
        lab.pass(false, &tcp(R, A, 22, 40000, 0x02)),
        0,
        "attempt from outside"
    );
    assert_eq!(
        lab.pass(false, &tcp(R, A, 80, 40009, 0x12)),
        0,
        "stray SYN-ACK"
    );
    assert_eq!(lab.pass(true, &udp(A, R, 5000, 53)), 1);
    assert_eq!(lab.pass(false, &udp(R, A, 53, 5000)), 1);
    assert_eq!(lab.pass(false, &udp(R, A, 53, 5001)), 0);
    assert_eq!(lab.pass(true, &udp(A, R, 5000, 123)), 0);
    assert_eq!(lab.pass(true, &icmp(A, R, 8, [0, 9, 0, 1], b"ping")), 1);
    assert_eq!(lab.pass(false, &icmp(R, A, 0, [0, 9, 0, 1], b"ping")), 1);
    assert_eq!(lab.pass(false, &icmp(R, A, 0, [0, 8, 0, 1], b"ping")), 0);
    assert_eq!(lab.pass(false, &icmp(R, A, 8, [0, 9, 0, 1], b"ping")), 0);
    assert_eq!(lab.pass(true, &udp(BAD, R, 5000, 53)), 0, "the denied host");
    // Related: an error about the DNS flow comes in, about an unknown flow it does not.
    let q = udp(A, R, 5000, 53);
    assert_eq!(lab.pass(false, &icmp(B, A, 3, [0; 4], &q[..28])), 1);
    let other = udp(A, R, 5999, 53);
    assert_eq!(lab.pass(false, &icmp(B, A, 3, [0; 4], &other[..28])), 0);

    let fw = lab.sw.show_firewall();
    let hits: Vec<u64> = fw.acls[0].rules.iter().map(|r| r.hits).collect();
    assert_eq!(
        hits,
        vec![1, 1, 0, 1, 1],
        "deny-bad, tcp/80 (the SYN; the ACK is established), 443, dns, ping"
    );
    assert_eq!(fw.acls[0].default_hits, 2, "ssh and ntp");
    assert_eq!(fw.acls[1].default_hits, 6, "every attempt from outside");
    assert_eq!((fw.connections, fw.reflected), (3, 3));
    assert_eq!(lab.count("rule-deny"), 1);
    assert_eq!(lab.count("default-deny"), 8);
    let c = |name: &str| {
        lab.sw
            .show_errors()
            .iter()
            .find(|e| e.node == "firewall-input" && e.reason == name)
            .map_or(0, |e| e.count)
    };
    assert_eq!((c("established"), c("related")), (4, 1));
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn a_plain_permit_keeps_no_state_for_the_reply() {
    let mut lab = Lab::new(false);
    let mut acl = inside_acl();
    acl.rules[3].action = Action::Permit;
    lab.sw.firewall_set_acl("in", Some(acl)).unwrap();
    assert_eq!(lab.pass(true, &udp(A, R, 5000, 53)), 1);
    assert_eq!(lab.pass(false, &udp(R, A, 53, 5000)), 0);
    assert_eq!(lab.sw.show_firewall().reflected, 0);
}

#[test]
fn connections_time_out_and_the_table_is_bounded() {
    let mut lab = Lab::new(false);
    lab.sw
        .set_firewall_settings(FirewallSettings {
            udp_s: 10,
            max_connections: 2,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(lab.pass(true, &udp(A, R, 1, 53)), 1);
    assert_eq!(lab.pass(true, &udp(A, R, 2, 53)), 1);
    assert_eq!(lab.pass(true, &udp(A, R, 3, 53)), 0);
    assert_eq!(lab.count("conntrack-full"), 1);
    lab.sw.advance_clock(Duration::from_secs(11));
    lab.sw.run_timers();
    let fw = lab.sw.show_firewall();
    assert_eq!((fw.connections, fw.connections_expired), (0, 2));
    assert_eq!(lab.pass(false, &udp(R, A, 53, 1)), 0, "expired: no reply");
    assert_eq!(lab.pass(true, &udp(A, R, 3, 53)), 1);
}

#[test]
fn fragments_and_short_headers_are_named_drops() {
    let mut lab = Lab::new(false);
    let mut frag = udp(A, R, 5000, 53);
    frag[6..8].copy_from_slice(&0x0010u16.to_be_bytes()); // offset 128 bytes
    frag[10..12].copy_from_slice(&[0, 0]);
    let c = checksum::checksum(&frag[..20]);
    frag[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(lab.pass(true, &frag), 0);
    let mut short = tcp(A, R, 1, 80, 2);
    short.truncate(30);
    short[2..4].copy_from_slice(&30u16.to_be_bytes());
    short[10..12].copy_from_slice(&[0, 0]);
    let c = checksum::checksum(&short[..20]);
    short[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(lab.pass(true, &short), 0);
    assert_eq!((lab.count("fragment"), lab.count("bad-l4-header")), (1, 1));
    // Bad rules are refused with the reason.
    let mut r = Rule::any(Action::Deny);
    r.dport = Some("80".parse().unwrap());
    let e = lab
        .sw
        .firewall_set_acl(
            "in",
            Some(Acl {
                rules: vec![r],
                default_action: Action::Deny,
            }),
        )
        .unwrap_err();
    assert!(e.to_string().contains("proto tcp or udp"), "{e}");
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}

#[test]
fn behind_nat_the_outside_acl_sees_inside_addresses_and_replies_pass() {
    let mut lab = Lab::new(true);
    assert_eq!(lab.pass(true, &udp(A, R, 5000, 53)), 1);
    // The reply to the outside address: nat44-out2in first, then the firewall (established).
    assert_eq!(lab.pass(false, &udp(R, OUT, 53, 5000)), 1);
    assert_eq!(lab.pass(false, &udp(R, OUT, 53, 5001)), 0);
    assert_eq!(
        lab.sw
            .show_errors()
            .iter()
            .find(|e| e.node == "nat44-out2in" && e.reason == "no-session")
            .map_or(0, |e| e.count),
        1
    );
    // A direct attempt at the inside host, which NAT lets through, the firewall blocks.
    assert_eq!(
        lab.pass(false, &udp(R, A, 53, 5000)),
        1,
        "established: same tuple"
    );
    assert_eq!(lab.pass(false, &udp(R, A, 53, 7777)), 0);
    assert_eq!(lab.count("default-deny"), 1);
}

/// IPS mode: what the ACL lets through on `in` (new and established alike) is searched for the
/// patterns; a match is dropped as `ips-match` and counted on its pattern. Only the payload is
/// searched (the ports' bytes as a pattern match nothing); the outside interface, without IPS,
/// lets a reply with a pattern through; IPv6 payloads are searched too.
#[test]
fn ips_drops_permitted_packets_holding_a_pattern() {
    let mut lab = Lab::new(false);
    let ips = IpsConfig {
        patterns: vec![
            "/etc/passwd".into(),
            "hex:deadbeef".into(),
            // UDP ports 5000 → 53: header bytes, never searched.
            "hex:13880035".into(),
            "cmd.exe".into(),
        ],
        case_insensitive: true,
    };
    lab.sw.firewall_set_ips("in", Some(ips.clone())).unwrap();
    assert_eq!(
        lab.pass(true, &udp_with(A, R, 5000, 53, b"query example.org")),
        1
    );
    assert_eq!(
        lab.pass(true, &udp_with(A, R, 5000, 53, b"GET /etc/passwd")),
        0,
        "established, but the payload matches"
    );
    assert_eq!(
        lab.pass(true, &udp_with(A, R, 5001, 53, b"\x00\xde\xad\xbe\xef\x00")),
        0,
        "a new flow with binary bytes"
    );
    assert_eq!(
        lab.pass(true, &tcp_with(A, R, 40000, 80, b"run CMD.EXE /c")),
        0
    );
    assert_eq!(lab.pass(true, &tcp_with(A, R, 40000, 80, b"run cmd.ex")), 1);
    assert_eq!(
        lab.pass(false, &udp_with(R, A, 53, 5000, b"/etc/passwd")),
        1,
        "no IPS on the outside interface"
    );
    let q6 = {
        let mut u = 5000u16.to_be_bytes().to_vec();
        u.extend_from_slice(&53u16.to_be_bytes());
        u.extend_from_slice(&[0, 19, 0, 0]);
        u.extend_from_slice(b"/etc/passwd");
        ipv6(A6, R6, 17, u, 6)
    };
    assert_eq!(lab.pass(true, &q6), 0, "IPv6");
    assert_eq!(lab.count("ips-match"), 3);
    assert_eq!(lab.count_at("firewall-input6", "ips-match"), 1);
    assert_eq!(
        (
            lab.count("ips-scanned"),
            lab.count_at("firewall-input6", "ips-scanned")
        ),
        (5, 1)
    );
    let fw = lab.sw.show_firewall();
    let info = fw.acls[0].ips.as_ref().unwrap();
    let hits: Vec<u64> = info.patterns.iter().map(|p| p.1).collect();
    assert_eq!(hits, vec![2, 1, 0, 1]);
    assert_eq!(info.scanned, 6);
    assert!(fw.acls[1].ips.is_none());
    // A rejected change leaves the IPS as it was; an interface without an ACL has none.
    let bad = IpsConfig {
        patterns: vec!["ok".into(), "hex:xyz".into()],
        case_insensitive: false,
    };
    let e = lab.sw.firewall_set_ips("in", Some(bad)).unwrap_err();
    assert!(e.to_string().contains("ips.patterns[1]"), "{e}");
    assert_eq!(
        lab.sw.show_firewall().acls[0]
            .ips
            .as_ref()
            .unwrap()
            .patterns
            .len(),
        4
    );
    lab.sw.firewall_set_acl("out", None).unwrap();
    let e = lab.sw.firewall_set_ips("out", Some(ips)).unwrap_err();
    assert!(e.to_string().contains("firewall ACL"), "{e}");
    // Replacing the ACL keeps the IPS; IPS off lets the pattern through.
    lab.sw.firewall_set_acl("in", Some(inside_acl())).unwrap();
    assert_eq!(lab.pass(true, &udp_with(A, R, 5002, 53, b"/etc/passwd")), 0);
    lab.sw.firewall_set_ips("in", None).unwrap();
    assert_eq!(lab.pass(true, &udp_with(A, R, 5002, 53, b"/etc/passwd")), 1);
    assert_eq!(lab.sw.show_buffers().in_use, 0);
}
