//! `ip4-input`: checks the IPv4 header of every packet a routed interface receives (RFC 791 §3.1,
//! RFC 1812 §5.2.2 "IP Header Validation"), once, so that later nodes read it without checking.
//!
//! Next: the `ip4-unicast` arc (its features enabled on the receive interface, then
//! `ip4-lookup`), or — for a packet whose TTL is 1 or 0 and that is not for one of the switch's
//! own addresses — an ICMP time exceeded (RFC 1812 §5.3.1) sent to `ip4-lookup` while
//! the packet is dropped as `ttl-expired`.
//! Drops: `truncated` (frame shorter than the header it announces), `bad-version` (not 4),
//! `bad-header-length` (IHL < 5), `bad-checksum`, `bad-total-length` (shorter than the header or
//! longer than the frame), `options-not-allowed` (IHL > 5 while `allow_options` is off),
//! `ttl-expired`. Counters: `icmp-sent`, `icmp-suppressed`, `icmp-rate-limited`,
//! `icmp-no-buffer`. Trace: `src S dst D ttl T len L`.

use std::net::Ipv4Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::checksum;

use super::icmp::{self, IcmpError, Sent};
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "ip4-input";

named_enum! {
    /// Next edges of `ip4-input`.
    pub enum Edge as edge { Ip4Lookup = "ip4-lookup" }
}
named_enum! {
    /// Drop reasons of `ip4-input`.
    pub enum DropReason as drop {
        Truncated = "truncated",
        BadVersion = "bad-version",
        BadHeaderLength = "bad-header-length",
        BadChecksum = "bad-checksum",
        BadTotalLength = "bad-total-length",
        OptionsNotAllowed = "options-not-allowed",
        TtlExpired = "ttl-expired",
    }
}
named_enum! {
    /// Counters of the nodes that send ICMP errors.
    pub enum IcmpCounter as counter {
        Sent = "icmp-sent",
        Suppressed = "icmp-suppressed",
        RateLimited = "icmp-rate-limited",
        NoBuffer = "icmp-no-buffer",
    }
}

/// Counts the outcome of an ICMP error request on the node's counters (every node that sends
/// errors declares [`IcmpCounter`] first among its counters).
pub(crate) fn count_icmp(cx: &mut Cx<'_, SwitchState>, s: Sent) {
    let c = match s {
        Sent::Sent => IcmpCounter::Sent,
        Sent::Suppressed => IcmpCounter::Suppressed,
        Sent::RateLimited => IcmpCounter::RateLimited,
        Sent::NoBuffer => IcmpCounter::NoBuffer,
    };
    cx.counters.add(c.index(), 1);
}

/// The `ip4-input` node.
#[derive(Debug, Default)]
pub struct Ip4Input;

/// Whether an IPv4 header's checksum verifies (RFC 1071): the common 20-byte header as five
/// 32-bit words into a 64-bit sum (RFC 1071 §2(B) parallel summation), any other length through
/// `wire::checksum::verify`.
#[inline]
pub fn header_checksum_ok(h: &[u8]) -> bool {
    let Ok(w) = <&[u8; 20]>::try_from(h) else {
        return checksum::verify(h);
    };
    let word = |i: usize| u32::from_be_bytes([w[i], w[i + 1], w[i + 2], w[i + 3]]) as u64;
    let s = word(0) + word(4) + word(8) + word(12) + word(16);
    checksum::fold(s) == 0xffff
}

/// The header checks, in RFC 1812 §5.2.2's order; `Ok((destination, ttl))`.
#[inline]
pub fn check(pool: &Pool, h: u32, allow_options: bool) -> Result<(Ipv4Addr, u8), DropReason> {
    let hdr = pool.header(h);
    let off = hdr.l3_offset as usize;
    // The frame's L3 length (a chained packet's header is in its first buffer).
    let frame_l3 = (hdr.total_len as usize).saturating_sub(off);
    let ip = pool.data(h).get(off..).unwrap_or(&[]);
    if ip.len() < 20 {
        return Err(DropReason::Truncated);
    }
    if ip[0] >> 4 != 4 {
        return Err(DropReason::BadVersion);
    }
    let ihl = (ip[0] as usize & 0x0f) * 4;
    if ihl < 20 {
        return Err(DropReason::BadHeaderLength);
    }
    if ip.len() < ihl {
        return Err(DropReason::Truncated);
    }
    if !header_checksum_ok(&ip[..ihl]) {
        return Err(DropReason::BadChecksum);
    }
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    if total < ihl || total > frame_l3 {
        return Err(DropReason::BadTotalLength);
    }
    if ihl > 20 && !allow_options {
        return Err(DropReason::OptionsNotAllowed);
    }
    Ok((Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]), ip[8]))
}

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let (dst, ttl) = match check(cx.pool, h, cx.state.ip.settings.allow_options) {
        Ok(x) => x,
        Err(r) => return r.next(),
    };
    *cx.state.ip.meta_mut(h) = super::PktMeta::default();
    // A packet for the switch itself may arrive with TTL 1 (RFC 1812 §5.3.1: only forwarded
    // packets expire).
    if ttl <= 1 && !cx.state.ip.is_local(dst) {
        let s = icmp::send_error(cx, h, IcmpError::TimeExceeded, Edge::Ip4Lookup.next());
        count_icmp(cx, s);
        return DropReason::TtlExpired.next();
    }
    // Along `ip4-unicast` (its features enabled on the receive interface, then `ip4-lookup`).
    Next::arc(super::IP4_UNICAST_ARC)
}

impl Node<SwitchState> for Ip4Input {
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
        trace_ip4(pool, pkt)
    }
}

/// `src S dst D ttl T len L` of an IPv4 packet (for the nodes' traces).
pub(crate) fn trace_ip4(pool: &Pool, pkt: u32) -> String {
    match super::ip4_header(pool, pkt) {
        Some(ip) => format!(
            "src {} dst {} ttl {} len {}",
            Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
            Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
            ip[8],
            u16::from_be_bytes([ip[2], ip[3]])
        ),
        None => "not ipv4".to_string(),
    }
}
