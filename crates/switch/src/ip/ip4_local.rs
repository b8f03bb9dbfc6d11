//! `ip4-local`: packets for one of the switch's own addresses. An ICMP echo request is answered in
//! place (RFC 792 "Echo or Echo Reply Message", RFC 1122 §3.2.2.6: same identifier, sequence
//! number and data; from the address it was sent to) and the reply routed like any packet
//! (`ip4-lookup`, no TTL decrement). UDP gets an ICMP port unreachable, other protocols but TCP a
//! protocol unreachable (RFC 1122 §3.2.2.1); the switch has no TCP.
//!
//! Next: `ip4-lookup`. Drops: `bad-icmp-checksum`, `fragment` (no reassembly), `unhandled-icmp`
//! (any ICMP but an echo request), `unhandled-protocol`, `chained` (an echo request longer than one
//! buffer). Counters: the ICMP error ones, `echo-replies`. Trace: `src S dst D ttl T len L`.

use vecswitch_buffer::{flags, Pool};
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::checksum;

use super::icmp::{self, IcmpError};
use super::ip4_input::count_icmp;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "ip4-local";

named_enum! {
    /// Next edges of `ip4-local`.
    pub enum Edge as edge { Ip4Lookup = "ip4-lookup" }
}
named_enum! {
    /// Drop reasons of `ip4-local`.
    pub enum DropReason as drop {
        BadIcmpChecksum = "bad-icmp-checksum",
        Fragment = "fragment",
        UnhandledIcmp = "unhandled-icmp",
        UnhandledProtocol = "unhandled-protocol",
        Chained = "chained",
    }
}
named_enum! {
    /// Counters of `ip4-local` (the ICMP error ones first, as `ip4-input`'s).
    pub enum Counter as counter {
        IcmpSent = "icmp-sent",
        IcmpSuppressed = "icmp-suppressed",
        IcmpRateLimited = "icmp-rate-limited",
        IcmpNoBuffer = "icmp-no-buffer",
        EchoReplies = "echo-replies",
    }
}

/// The `ip4-local` node.
#[derive(Debug, Default)]
pub struct Ip4Local;

/// Turns the echo request at `off` (IPv4 header length `ihl`, total length `total`) into its reply
/// in place: addresses swapped, TTL 64, header checksum recomputed, type 0 with the ICMP checksum
/// updated incrementally (RFC 1624). Returns false if the ICMP checksum does not verify.
pub fn echo_reply_in_place(ip: &mut [u8], ihl: usize, total: usize) -> bool {
    if !checksum::verify(&ip[ihl..total]) {
        return false;
    }
    let (src, dst) = (
        [ip[12], ip[13], ip[14], ip[15]],
        [ip[16], ip[17], ip[18], ip[19]],
    );
    ip[12..16].copy_from_slice(&dst);
    ip[16..20].copy_from_slice(&src);
    ip[8] = 64;
    ip[10..12].fill(0);
    let c = checksum::checksum(&ip[..ihl]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let icmp = &mut ip[ihl..total];
    let old = u16::from_be_bytes([icmp[0], icmp[1]]);
    icmp[0] = 0;
    let new = u16::from_be_bytes([icmp[0], icmp[1]]);
    let c = checksum::update16(u16::from_be_bytes([icmp[2], icmp[3]]), old, new);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    true
}

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let Some(ip) = super::ip4_header(cx.pool, h) else {
        return DropReason::UnhandledProtocol.next();
    };
    let ihl = ip.len();
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
    let proto = ip[9];
    let err = match proto {
        1 => None,
        6 => return DropReason::UnhandledProtocol.next(),
        17 => Some(IcmpError::PortUnreachable),
        _ => Some(IcmpError::ProtocolUnreachable),
    };
    if let Some(e) = err {
        let s = icmp::send_error(cx, h, e, Edge::Ip4Lookup.next());
        count_icmp(cx, s);
        return DropReason::UnhandledProtocol.next();
    }
    if fragment {
        return DropReason::Fragment.next();
    }
    if cx.pool.header(h).flags & flags::CHAINED != 0 {
        return DropReason::Chained.next();
    }
    let off = cx.pool.header(h).l3_offset as usize;
    // ip4-input checked that the total length fits the frame; the frame may be longer (padding).
    let Some(ip) = cx.pool.data_mut(h).get_mut(off..off + total) else {
        return DropReason::Chained.next();
    };
    if total < ihl + 8 || ip[ihl] != 8 || ip[ihl + 1] != 0 {
        return if total >= ihl + 8 && !checksum::verify(&ip[ihl..]) {
            DropReason::BadIcmpChecksum.next()
        } else {
            DropReason::UnhandledIcmp.next()
        };
    }
    if !echo_reply_in_place(ip, ihl, total) {
        return DropReason::BadIcmpChecksum.next();
    }
    super::replied_in_place(cx, h, off + total, Counter::EchoReplies.index());
    Edge::Ip4Lookup.next()
}

impl Node<SwitchState> for Ip4Local {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            next_nodes: Edge::NAMES,
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
        super::ip4_input::trace_ip4(pool, pkt)
    }
}
