//! `ip6-input`: checks the IPv6 header of every packet a routed interface receives (RFC 8200 §3,
//! RFC 4291 §2.5.2, §2.5.3, §2.7), once, so that later nodes read it without checking, and sends
//! what is not to be routed to `ip6-local`: multicast destinations (the switch routes no multicast;
//! Neighbor Discovery arrives this way) and the receive interface's own link-local address
//! (link-local destinations are never routed, RFC 4291 §2.5.6).
//!
//! Next: the `ip6-unicast` arc (its features enabled on the receive interface, then `ip6-lookup`)
//! for a packet to route, `ip6-local`, or — for a packet whose hop limit is 1 or 0 and that is not
//! for the switch — an ICMPv6 time exceeded (RFC 4443 §3.3) sent to `ip6-lookup` while the packet
//! is dropped as `hop-limit-expired`.
//! Drops: `truncated` (less than the 40-byte header), `bad-version` (not 6), `bad-payload-length`
//! (longer than the frame), `bad-source` (multicast or loopback, RFC 4291 §2.7 and §2.5.3),
//! `bad-destination` (unspecified or loopback), `hop-by-hop-not-allowed` (a hop-by-hop options
//! header while `allow_hop_by_hop` is off), `link-local-not-ours` (a link-local destination that is
//! not the receive interface's), `hop-limit-expired`. Counters: `icmp-sent`, `icmp-suppressed`,
//! `icmp-rate-limited`, `icmp-no-buffer`. Trace: `src S dst D hlim H plen L nh N`.

use std::net::Ipv6Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::icmp6::{self, Icmp6Error};
use super::ip4_input::{count_icmp, IcmpCounter};
use super::ip6::is_link_local;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "ip6-input";

named_enum! {
    /// Next edges of `ip6-input`.
    pub enum Edge as edge { Ip6Lookup = "ip6-lookup", Ip6Local = "ip6-local" }
}
named_enum! {
    /// Drop reasons of `ip6-input`.
    pub enum DropReason as drop {
        Truncated = "truncated",
        BadVersion = "bad-version",
        BadPayloadLength = "bad-payload-length",
        BadSource = "bad-source",
        BadDestination = "bad-destination",
        HopByHopNotAllowed = "hop-by-hop-not-allowed",
        LinkLocalNotOurs = "link-local-not-ours",
        HopLimitExpired = "hop-limit-expired",
    }
}

/// The `ip6-input` node.
#[derive(Debug, Default)]
pub struct Ip6Input;

/// The 16 bytes at `at` as an address (callers checked the length).
#[inline]
pub(crate) fn addr_at(b: &[u8], at: usize) -> Ipv6Addr {
    let mut o = [0u8; 16];
    o.copy_from_slice(&b[at..at + 16]);
    Ipv6Addr::from(o)
}

/// What the header checks decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Route it: destination, hop limit.
    Route(Ipv6Addr, u8),
    /// For the switch itself without a lookup (multicast, the receive interface's link-local).
    Local,
}

/// The header checks, in the order of the module doc.
#[inline]
pub fn check(
    pool: &Pool,
    h: u32,
    allow_hop_by_hop: bool,
    rx_link_local: Option<Ipv6Addr>,
) -> Result<Verdict, DropReason> {
    let hdr = pool.header(h);
    let off = hdr.l3_offset as usize;
    let frame_l3 = (hdr.total_len as usize).saturating_sub(off);
    let ip = pool.data(h).get(off..).unwrap_or(&[]);
    if ip.len() < 40 {
        return Err(DropReason::Truncated);
    }
    if ip[0] >> 4 != 6 {
        return Err(DropReason::BadVersion);
    }
    let plen = u16::from_be_bytes([ip[4], ip[5]]) as usize;
    if 40 + plen > frame_l3 {
        return Err(DropReason::BadPayloadLength);
    }
    let (src, dst) = (addr_at(ip, 8), addr_at(ip, 24));
    if src.is_multicast() || src.is_loopback() {
        return Err(DropReason::BadSource);
    }
    if dst.is_unspecified() || dst.is_loopback() {
        return Err(DropReason::BadDestination);
    }
    if ip[6] == 0 && !allow_hop_by_hop {
        return Err(DropReason::HopByHopNotAllowed);
    }
    if dst.is_multicast() {
        return Ok(Verdict::Local);
    }
    if is_link_local(dst) {
        return if rx_link_local == Some(dst) {
            Ok(Verdict::Local)
        } else {
            Err(DropReason::LinkLocalNotOurs)
        };
    }
    Ok(Verdict::Route(dst, ip[7]))
}

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let rx = cx.pool.header(h).rx_port;
    let ll = cx.state.ip.v6.iface(rx).and_then(|f| f.link_local);
    let allow = cx.state.ip.settings.allow_hop_by_hop;
    let verdict = match check(cx.pool, h, allow, ll) {
        Ok(v) => v,
        Err(r) => return r.next(),
    };
    *cx.state.ip.meta_mut(h) = super::PktMeta::default();
    match verdict {
        Verdict::Local => Edge::Ip6Local.next(),
        // Only forwarded packets expire (RFC 8200 §3: decremented by each node that forwards).
        Verdict::Route(dst, hlim) if hlim <= 1 && !cx.state.ip.v6.is_local(dst) => {
            let s = icmp6::send_error(cx, h, Icmp6Error::TimeExceeded, Edge::Ip6Lookup.next());
            count_icmp(cx, s);
            DropReason::HopLimitExpired.next()
        }
        // Along `ip6-unicast` (its features enabled on the receive interface, then `ip6-lookup`).
        Verdict::Route(..) => Next::arc(super::IP6_UNICAST_ARC),
    }
}

impl Node<SwitchState> for Ip6Input {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            next_nodes: Edge::NAMES,
            drop_reasons: DropReason::NAMES,
            counters: IcmpCounter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            *n = one(cx, h);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        trace_ip6(pool, pkt)
    }
}

/// `src S dst D hlim H plen L nh N` of an IPv6 packet (for the nodes' traces).
pub(crate) fn trace_ip6(pool: &Pool, pkt: u32) -> String {
    match super::ip6_header(pool, pkt) {
        Some(ip) => format!(
            "src {} dst {} hlim {} plen {} nh {}",
            addr_at(ip, 8),
            addr_at(ip, 24),
            ip[7],
            u16::from_be_bytes([ip[4], ip[5]]),
            ip[6]
        ),
        None => "not ipv6".to_string(),
    }
}
