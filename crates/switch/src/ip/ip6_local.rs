//! `ip6-local`: IPv6 packets for the switch itself — to one of its addresses (global or the
//! receive interface's link-local) or to a multicast group. Neighbor solicitations and
//! advertisements go to `ip6-nd`. An ICMPv6 echo request to a unicast address of the switch is
//! answered in place (RFC 4443 §4.2: same identifier, sequence number and data; from the address it
//! was sent to) and the reply routed like any packet (`ip6-lookup`, no hop limit decrement). UDP
//! gets an ICMPv6 port unreachable (RFC 4443 §3.1 code 4); the switch has no TCP.
//!
//! Next: `ip6-nd`, `ip6-lookup`. Drops: `bad-icmp-checksum`, `fragment` (no reassembly),
//! `multicast-not-handled` (a multicast packet other than Neighbor Discovery: MLD reports, router
//! solicitations, a multicast echo request), `unhandled-icmp` (any other ICMPv6 message, or an
//! echo request behind extension headers), `unhandled-protocol`, `bad-extension-header` (extension
//! headers that run past the packet), `chained` (an echo request longer than one buffer).
//! Counters: the ICMP error ones, `echo-replies`. Trace: as `ip6-input`'s.

use vecswitch_buffer::{flags, Pool};
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::{checksum, IpProtocol, Ipv6Packet};

use super::icmp6::{self, Icmp6Error};
use super::ip4_input::count_icmp;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "ip6-local";

named_enum! {
    /// Next edges of `ip6-local`.
    pub enum Edge as edge { Ip6Nd = "ip6-nd", Ip6Lookup = "ip6-lookup" }
}
named_enum! {
    /// Drop reasons of `ip6-local`.
    pub enum DropReason as drop {
        BadIcmpChecksum = "bad-icmp-checksum",
        Fragment = "fragment",
        MulticastNotHandled = "multicast-not-handled",
        UnhandledIcmp = "unhandled-icmp",
        UnhandledProtocol = "unhandled-protocol",
        BadExtensionHeader = "bad-extension-header",
        Chained = "chained",
    }
}
named_enum! {
    /// Counters of `ip6-local` (the ICMP error ones first, as `ip4-input`'s).
    pub enum Counter as counter {
        IcmpSent = "icmp-sent",
        IcmpSuppressed = "icmp-suppressed",
        IcmpRateLimited = "icmp-rate-limited",
        IcmpNoBuffer = "icmp-no-buffer",
        EchoReplies = "echo-replies",
    }
}

/// The `ip6-local` node.
#[derive(Debug, Default)]
pub struct Ip6Local;

/// Turns the echo request `ip` (an IPv6 packet of exactly 40 + payload length bytes whose ICMPv6
/// message follows the fixed header) into its reply in place: addresses swapped (the pseudo-header
/// sum does not change), hop limit 64, type 129 with the checksum updated incrementally (RFC 1624).
/// Returns false if the ICMPv6 checksum does not verify.
pub fn echo_reply_in_place(ip: &mut [u8]) -> bool {
    if !icmp6_checksum_ok(ip) {
        return false;
    }
    let mut src = [0u8; 16];
    src.copy_from_slice(&ip[8..24]);
    ip.copy_within(24..40, 8);
    ip[24..40].copy_from_slice(&src);
    ip[7] = 64;
    let icmp = &mut ip[40..];
    let old = u16::from_be_bytes([icmp[0], icmp[1]]);
    icmp[0] = 129;
    let new = u16::from_be_bytes([icmp[0], icmp[1]]);
    let c = checksum::update16(u16::from_be_bytes([icmp[2], icmp[3]]), old, new);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    true
}

/// Whether the ICMPv6 message after the fixed header of `ip` (exactly the packet) verifies.
pub fn icmp6_checksum_ok(ip: &[u8]) -> bool {
    let (src, dst) = (
        super::ip6_input::addr_at(ip, 8),
        super::ip6_input::addr_at(ip, 24),
    );
    vecswitch_wire::Icmpv6Packet::new_unchecked(&ip[40..]).verify_checksum(&src, &dst)
}

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let off = cx.pool.header(h).l3_offset as usize;
    let Some(ip) = cx.pool.data(h).get(off..) else {
        return DropReason::UnhandledProtocol.next();
    };
    // ip6-input checked the fixed header and the payload length against the frame; the first
    // segment of a chained packet may hold less.
    let Ok(view) = Ipv6Packet::new_checked(ip) else {
        return DropReason::Chained.next();
    };
    let multicast = view.dst_addr().is_multicast();
    let total = 40 + view.payload_len() as usize;
    let Ok(up) = view.upper_layer() else {
        return DropReason::BadExtensionHeader.next();
    };
    if up.fragment.is_some() {
        return DropReason::Fragment.next();
    }
    let icmp_type = ip.get(up.offset).copied();
    match (up.protocol, icmp_type) {
        // RFC 4861 §7.1: Neighbor Discovery follows the fixed header (checked there).
        (IpProtocol::ICMPV6, Some(135 | 136)) => return Edge::Ip6Nd.next(),
        _ if multicast => return DropReason::MulticastNotHandled.next(),
        (IpProtocol::ICMPV6, Some(128)) if up.offset == 40 => {}
        (IpProtocol::ICMPV6, _) => return DropReason::UnhandledIcmp.next(),
        (IpProtocol::UDP, _) => {
            let s = icmp6::send_error(cx, h, Icmp6Error::PortUnreachable, Edge::Ip6Lookup.next());
            count_icmp(cx, s);
            return DropReason::UnhandledProtocol.next();
        }
        _ => return DropReason::UnhandledProtocol.next(),
    }
    if cx.pool.header(h).flags & flags::CHAINED != 0 {
        return DropReason::Chained.next();
    }
    let Some(ip) = cx.pool.data_mut(h).get_mut(off..off + total) else {
        return DropReason::Chained.next();
    };
    if total < 48 || !echo_reply_in_place(ip) {
        return DropReason::BadIcmpChecksum.next();
    }
    super::replied_in_place(cx, h, off + total, Counter::EchoReplies.index());
    Edge::Ip6Lookup.next()
}

impl Node<SwitchState> for Ip6Local {
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
        super::ip6_input::trace_ip6(pool, pkt)
    }
}
