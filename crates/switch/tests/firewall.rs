//! The stateful firewall through loopback ports: what passes, what is dropped with which reason,
//! per-rule counters, conntrack (established, related, timeouts on the simulated clock, the
//! limit), malformed packets, and the firewall behind NAT44 on the same outside interface.
//!
//! Topology: `in` 10.0.0.1/24 (host A 10.0.0.2), `out` 198.51.100.1/24 (next hop B
//! 198.51.100.2), route 203.0.113.0/24 via B; the remote server R is 203.0.113.9. The policy
//! (seed 004's shape): inside may open TCP 80/443, UDP 53 and pings (permit-reflect), host
//! 10.0.0.66 may do nothing, everything else from inside is denied; outside denies every
//! connection attempt (default deny) — only replies and related errors come in.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::LoopbackPort;
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
    let mut u = sport.to_be_bytes().to_vec();
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&[0, 12, 0, 0, 1, 2, 3, 4]);
    ipv4(src, dst, 17, &u)
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
    f.extend_from_slice(&0x0800u16.to_be_bytes());
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
    deny_bad.src = p("10.0.0.66/32");
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
        self.sw
            .show_errors()
            .iter()
            .find(|e| e.node == "firewall-input" && e.reason == reason)
            .map_or(0, |e| e.count)
    }
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
