//! `firewall-input`: the firewall on the packets an interface receives (an `ip4-unicast` arc
//! feature, enabled on every interface with an ACL). Established and related packets pass first;
//! the others meet the interface's rules in order (see the module doc of `firewall`).
//!
//! What can be tracked follows Linux's conntrack, so that the verdicts equal nftables' with
//! `ct state established,related accept` in front of the same rules: TCP segments that may open a
//! connection (a SYN without ACK, or a plain ACK — picked up mid-stream as `nf_conntrack_tcp_loose`
//! allows; not a SYN-ACK, FIN or RST, which `tcp_new` calls invalid), UDP datagrams and ICMP echo
//! requests (the identifier plays the port). Every permitted connection is tracked, as the kernel
//! tracks every connection; only those a `permit-reflect` let through (or took over later) are
//! established, those of a plain `permit` meet the rules with every packet (nftables: `ct mark`
//! 1 for `permit`, 0 for `permit-reflect`, and `ct state established,related ct mark 0 accept`).
//! ICMP errors (destination unreachable, source quench, redirect, time exceeded,
//! parameter problem) are related when their embedded header belongs to a reflected connection.
//!
//! Next: the `ip4-unicast` arc. Drops: `rule-deny`, `default-deny`, `fragment` (a non-first
//! fragment: no ports to match), `bad-l4-header` (shorter than the TCP, UDP or ICMP header),
//! `conntrack-full`. Counters: `established`, `related`, `permitted`, `connections-tracked`.
//! Trace: `src S dst D ttl T len L`.

use std::net::Ipv4Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::acl::{Action, Hit, PacketKey};
use crate::ip::IP4_UNICAST_ARC;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "firewall-input";

const ON: Next = Next::arc(IP4_UNICAST_ARC);

named_enum! {
    /// Drop reasons of `firewall-input`.
    pub enum DropReason as drop {
        RuleDeny = "rule-deny",
        DefaultDeny = "default-deny",
        Fragment = "fragment",
        BadL4Header = "bad-l4-header",
        ConntrackFull = "conntrack-full",
    }
}
named_enum! {
    /// Counters of `firewall-input`.
    pub enum Counter as counter {
        Established = "established",
        Related = "related",
        Permitted = "permitted",
        ConnectionsTracked = "connections-tracked",
    }
}

/// A conntrack tuple: protocol, source, source port, destination, destination port.
pub type Tuple = (u8, Ipv4Addr, u16, Ipv4Addr, u16);

/// A packet's rule fields and its conntrack tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    pub key: PacketKey,
    /// (proto, src, sport, dst, dport) of the connection the packet would open or belongs to,
    /// and whether it may open one.
    pub tuple: Option<Tuple>,
    pub may_open: bool,
    /// For an ICMP error: the tuple of the embedded packet.
    pub related_to: Option<Tuple>,
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

/// The tuple of an IPv4 packet `ip` (header at the start) as conntrack keys it, and whether it
/// may open a connection; `embedded`: only the first 8 L4 bytes are required.
fn tuple(ip: &[u8], embedded: bool) -> Option<(Tuple, bool)> {
    let h = ip.get(..20)?;
    let ihl = (h[0] as usize & 0x0f) * 4;
    let proto = h[9];
    let src = Ipv4Addr::new(h[12], h[13], h[14], h[15]);
    let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
    let l4 = ip.get(ihl..)?;
    match proto {
        6 | 17 if l4.len() >= 8 => {
            let may_open = if proto == 6 {
                match l4.get(13) {
                    Some(&f) if !embedded => {
                        let (fin, syn, rst, ack) =
                            (f & 1 != 0, f & 2 != 0, f & 4 != 0, f & 16 != 0);
                        !rst && !fin && (syn != ack)
                    }
                    _ => false,
                }
            } else {
                true
            };
            Some(((proto, src, be16(l4, 0), dst, be16(l4, 2)), may_open))
        }
        1 if l4.len() >= 8 => match l4[0] {
            8 => Some(((1, src, be16(l4, 4), dst, 0), true)),
            0 => Some(((1, src, 0, dst, be16(l4, 4)), false)),
            _ => None,
        },
        _ => None,
    }
}

/// Parses the IPv4 packet `ip` (its header checked by `ip4-input`) for the firewall.
pub fn parse(ip: &[u8]) -> Result<Parsed, DropReason> {
    let h = ip.get(..20).ok_or(DropReason::BadL4Header)?;
    let ihl = (h[0] as usize & 0x0f) * 4;
    let total = (be16(h, 2) as usize).min(ip.len());
    let proto = h[9];
    if be16(h, 6) & 0x1fff != 0 {
        return Err(DropReason::Fragment);
    }
    let mut key = PacketKey::new(
        Ipv4Addr::new(h[12], h[13], h[14], h[15]),
        Ipv4Addr::new(h[16], h[17], h[18], h[19]),
        proto,
    );
    let l4 = ip.get(ihl..total).unwrap_or(&[]);
    let need = match proto {
        6 => 20,
        17 | 1 => 8,
        _ => 0,
    };
    if l4.len() < need {
        return Err(DropReason::BadL4Header);
    }
    let mut p = Parsed {
        key,
        tuple: None,
        may_open: false,
        related_to: None,
    };
    match proto {
        6 | 17 => {
            key.has_ports = true;
            key.sport = be16(l4, 0);
            key.dport = be16(l4, 2);
        }
        1 => {
            key.icmp_type = l4[0];
            if matches!(l4[0], 3 | 4 | 5 | 11 | 12) {
                // Only an error sent back to the embedded packet's source is about it (as
                // Linux's nf_conntrack_inet_error checks: outer destination = inner source).
                p.related_to = l4
                    .get(8..)
                    .and_then(|inner| tuple(inner, true))
                    .map(|t| t.0)
                    .filter(|t| t.1 == key.dst);
            }
        }
        _ => {}
    }
    p.key = key;
    if let Some((t, may_open)) = tuple(&ip[..total.max(20)], false) {
        p.tuple = Some(t);
        p.may_open = may_open;
    }
    Ok(p)
}

/// The `firewall-input` node.
#[derive(Debug, Default)]
pub struct FirewallInput;

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let hdr = cx.pool.header(h);
    let (rx, off) = (hdr.rx_port, hdr.l3_offset as usize);
    let now = cx.state.rx_ns;
    let ip = cx.pool.data(h).get(off..).unwrap_or(&[]);
    let p = match parse(ip) {
        Ok(p) => p,
        Err(r) => return r.next(),
    };
    let fw = &mut cx.state.firewall;
    let mut conn = None;
    if let Some((proto, s, sp, d, dp)) = p.tuple {
        if let Some((i, dir)) = fw.conntrack.find(proto, s, sp, d, dp) {
            fw.conntrack.touch(i, dir, now);
            if fw.conntrack.get(i).is_some_and(|c| c.reflect) {
                cx.counters.add(Counter::Established.index(), 1);
                return ON;
            }
            conn = Some(i);
        }
    }
    if let Some((proto, s, sp, d, dp)) = p.related_to {
        if let Some((i, _)) = fw.conntrack.find(proto, s, sp, d, dp) {
            if fw.conntrack.get(i).is_some_and(|c| c.reflect) {
                cx.counters.add(Counter::Related.index(), 1);
                return ON;
            }
            // Related to a connection a plain permit let through: the rules decide, and a
            // permit-reflect takes the connection over (nftables: `ct mark set 0` on a related
            // packet marks its master).
            conn = Some(i);
        }
    }
    let Some(Some(acl)) = fw.acls.get_mut(rx as usize) else {
        // Not enabled here (the arc only runs it where an ACL is).
        return ON;
    };
    let hit = acl.classifier.classify(&acl.acl.rules, &p.key);
    match hit {
        Hit::Rule(i) => acl.hits[i as usize] += 1,
        Hit::Default => acl.default_hits += 1,
    }
    let reflect = match acl.acl.action(hit) {
        Action::Deny => {
            return match hit {
                Hit::Rule(_) => DropReason::RuleDeny.next(),
                Hit::Default => DropReason::DefaultDeny.next(),
            }
        }
        Action::Permit => false,
        Action::PermitReflect => true,
    };
    cx.counters.add(Counter::Permitted.index(), 1);
    match (conn, p.tuple) {
        (Some(i), _) if reflect => fw.conntrack.set_reflect(i),
        (Some(_), _) => {}
        (None, Some((proto, s, sp, d, dp))) if p.may_open => {
            let limit = fw.settings.max_connections;
            if !fw
                .conntrack
                .insert(proto, s, sp, d, dp, now, limit, reflect)
            {
                return DropReason::ConntrackFull.next();
            }
            cx.counters.add(Counter::ConnectionsTracked.index(), 1);
        }
        _ => {}
    }
    ON
}

impl Node<SwitchState> for FirewallInput {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            // None: it sends along the `ip4-unicast` arc.
            next_nodes: &[],
            drop_reasons: DropReason::NAMES,
            counters: Counter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            *n = one(cx, h);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        crate::ip::ip4_input::trace_ip4(pool, pkt)
    }
}
