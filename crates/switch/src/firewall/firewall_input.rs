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
//! A packet let through meets the interface's IPS patterns when it has some ([`super::ips`]).
//!
//! Next: the `ip4-unicast` arc. Drops: `rule-deny`, `default-deny`, `fragment` (a non-first
//! fragment: no ports to match), `bad-l4-header` (shorter than the TCP, UDP or ICMP header),
//! `conntrack-full`, `ips-match` (the payload holds an IPS pattern). Counters: `established`,
//! `related`, `permitted`, `connections-tracked`, `ips-scanned` (packets whose payload IPS
//! searched).
//! Trace: `src S dst D ttl T len L`.

use std::net::Ipv4Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::acl::{Action, Hit, PacketKey};
use super::conntrack::Tuple;
use crate::interface::SwIfIdx;
use crate::ip::IP4_UNICAST_ARC;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "firewall-input";

const ON: Next = Next::arc(IP4_UNICAST_ARC);

named_enum! {
    /// Drop reasons of `firewall-input` (and `firewall-input6`).
    pub enum DropReason as drop {
        RuleDeny = "rule-deny",
        DefaultDeny = "default-deny",
        Fragment = "fragment",
        BadL4Header = "bad-l4-header",
        ConntrackFull = "conntrack-full",
        IpsMatch = "ips-match",
    }
}
named_enum! {
    /// Counters of `firewall-input` (and `firewall-input6`).
    pub enum Counter as counter {
        Established = "established",
        Related = "related",
        Permitted = "permitted",
        ConnectionsTracked = "connections-tracked",
        IpsScanned = "ips-scanned",
    }
}

/// A packet's rule fields and its conntrack tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    pub key: PacketKey,
    /// The tuple of the connection the packet would open or belongs to.
    pub tuple: Option<Tuple>,
    /// Whether it may open one.
    pub may_open: bool,
    /// For an ICMP error: the tuple of the embedded packet.
    pub related_to: Option<Tuple>,
    /// Where the payload is (after the L4 header, up to the IP length), as offsets from the
    /// start of the IP header: what IPS mode searches.
    pub payload: (usize, usize),
}

/// Where the payload of an L4 part `l4` of protocol `proto` starts in it (TCP: its data offset,
/// at most the part; UDP, ICMP, ICMPv6: 8; others: 0). `l4` holds the fixed header.
pub(crate) fn payload_at(proto: u8, l4: &[u8]) -> usize {
    match proto {
        6 => ((l4[12] >> 4) as usize * 4).clamp(20, l4.len()),
        17 | 1 | 58 => 8,
        _ => 0,
    }
}

pub(crate) fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

/// Whether a TCP segment with flag byte `f` may open a connection, as Linux's `tcp_new` decides
/// (with `nf_conntrack_tcp_loose`): a SYN without ACK or a plain ACK, never with FIN or RST.
pub(crate) fn tcp_may_open(f: u8) -> bool {
    let (fin, syn, rst, ack) = (f & 1 != 0, f & 2 != 0, f & 4 != 0, f & 16 != 0);
    !rst && !fin && (syn != ack)
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
                    Some(&f) if !embedded => tcp_may_open(f),
                    _ => false,
                }
            } else {
                true
            };
            Some((
                Tuple::v4(proto, src, be16(l4, 0), dst, be16(l4, 2)),
                may_open,
            ))
        }
        1 if l4.len() >= 8 => match l4[0] {
            8 => Some((Tuple::v4(1, src, be16(l4, 4), dst, 0), true)),
            0 => Some((Tuple::v4(1, src, 0, dst, be16(l4, 4)), false)),
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
        payload: (ihl + payload_at(proto, l4), ihl + l4.len()),
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
                    .filter(|t| t.src == key.dst);
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

/// The firewall's decision on packet `h` (its IP header at `off`, parsed as `p`) received on
/// interface `rx` at `now` — the part after the parse, shared by `firewall-input` and
/// `firewall-input6`: `on` (the arc to go on along) or a drop. A packet the rules or conntrack
/// let through meets the interface's IPS patterns, if it has some ([`super::ips`]).
#[inline]
pub(crate) fn decide(
    cx: &mut Cx<'_, SwitchState>,
    h: u32,
    off: usize,
    p: &Parsed,
    on: Next,
) -> Next {
    let rx = cx.pool.header(h).rx_port;
    let now = cx.state.rx_ns;
    let created = match judge(cx, rx, now, p) {
        Ok(c) => c,
        Err(r) => return r.next(),
    };
    let fw = &mut cx.state.firewall;
    let Some(Some(acl)) = fw.acls.get_mut(rx as usize) else {
        return on;
    };
    let Some(ips) = acl.ips.as_mut() else {
        return on;
    };
    let (a, b) = p.payload;
    let payload = cx.pool.data(h).get(off + a..off + b).unwrap_or(&[]);
    ips.scanned += 1;
    cx.counters.add(Counter::IpsScanned.index(), 1);
    match ips.find(payload) {
        Some(i) => {
            ips.hits[i] += 1;
            // The connection this packet would have opened is not (the kernel confirms a
            // connection only when its first packet leaves).
            if let Some(c) = created {
                fw.conntrack.remove(c);
            }
            DropReason::IpsMatch.next()
        }
        None => on,
    }
}

/// The verdict of conntrack and the rules on `p` (received on `rx` at `now`): `Ok` to pass,
/// with the connection the packet made if it made one.
#[inline]
fn judge(
    cx: &mut Cx<'_, SwitchState>,
    rx: SwIfIdx,
    now: u64,
    p: &Parsed,
) -> Result<Option<u32>, DropReason> {
    let fw = &mut cx.state.firewall;
    let mut conn = None;
    if let Some(t) = p.tuple {
        if let Some((i, dir)) = fw.conntrack.find(t) {
            fw.conntrack.touch(i, dir, now);
            if fw.conntrack.get(i).is_some_and(|c| c.reflect) {
                cx.counters.add(Counter::Established.index(), 1);
                return Ok(None);
            }
            conn = Some(i);
        }
    }
    if let Some(t) = p.related_to {
        if let Some((i, _)) = fw.conntrack.find(t) {
            if fw.conntrack.get(i).is_some_and(|c| c.reflect) {
                cx.counters.add(Counter::Related.index(), 1);
                return Ok(None);
            }
            // Related to a connection a plain permit let through: the rules decide, and a
            // permit-reflect takes the connection over (nftables: `ct mark set 0` on a related
            // packet marks its master).
            conn = Some(i);
        }
    }
    let Some(Some(acl)) = fw.acls.get_mut(rx as usize) else {
        // Not enabled here (the arc only runs it where an ACL is).
        return Ok(None);
    };
    let hit = acl.classifier.classify(&acl.acl.rules, &p.key);
    match hit {
        Hit::Rule(i) => acl.hits[i as usize] += 1,
        Hit::Default => acl.default_hits += 1,
    }
    let reflect = match acl.acl.action(hit) {
        Action::Deny => {
            return Err(match hit {
                Hit::Rule(_) => DropReason::RuleDeny,
                Hit::Default => DropReason::DefaultDeny,
            })
        }
        Action::Permit => false,
        Action::PermitReflect => true,
    };
    cx.counters.add(Counter::Permitted.index(), 1);
    match (conn, p.tuple) {
        (Some(i), _) if reflect => fw.conntrack.set_reflect(i),
        (Some(_), _) => {}
        (None, Some(t)) if p.may_open => {
            let limit = fw.settings.max_connections;
            let Some(i) = fw.conntrack.insert(t, now, limit, reflect) else {
                return Err(DropReason::ConntrackFull);
            };
            cx.counters.add(Counter::ConnectionsTracked.index(), 1);
            return Ok(Some(i));
        }
        _ => {}
    }
    Ok(None)
}

/// The per-packet body of both nodes: `parse` the IP packet at the buffer's L3 offset, then
/// [`decide`] (`on`: the node's arc).
#[inline]
pub(crate) fn one(
    cx: &mut Cx<'_, SwitchState>,
    h: u32,
    parse: fn(&[u8]) -> Result<Parsed, DropReason>,
    on: Next,
) -> Next {
    let off = cx.pool.header(h).l3_offset as usize;
    let ip = cx.pool.data(h).get(off..).unwrap_or(&[]);
    match parse(ip) {
        Ok(p) => decide(cx, h, off, &p, on),
        Err(r) => r.next(),
    }
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
            *n = one(cx, h, parse, ON);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        crate::ip::ip4_input::trace_ip4(pool, pkt)
    }
}
