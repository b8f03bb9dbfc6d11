//! `ip6-rewrite`: sends a routed IPv6 packet to its next hop — the MTU check (RFC 8200 §5: a
//! router never fragments; an ICMPv6 packet too big with the next-hop MTU, RFC 4443 §3.2), the hop
//! limit decrement (RFC 8200 §3; not for packets the switch made; IPv6 has no header checksum) and
//! the MAC rewrite (destination: the neighbour's MAC, source: the interface's, EtherType IPv6; the
//! receive VLAN tags are removed).
//!
//! The next hop is the adjacency's (`Neighbor`) or, on a connected subnet (`Glean`), the
//! destination itself. When its MAC is not known the packet waits on the neighbour's bounded
//! pending queue (`arp_pending`) while a neighbor solicitation asks for it (RFC 4861 §7.2.2);
//! `ip6-nd` sends the queue on when the advertisement comes. Once a second this node also runs an
//! aging step of the IPv6 neighbour table (as `ip4-rewrite` does for ARP: solicitations repeated
//! once a second, given up after `arp_max_requests`, RFC 4861 §7.3.3's MAX_MULTICAST_SOLICIT).
//!
//! Next: the `interface-output` arc, `ip6-lookup` (ICMPv6 errors). Drops: `mtu-exceeded`,
//! `pending-full`, `neighbor-limit`, `no-interface`, `bad-adjacency`. Counters: the ICMP ones,
//! `held-for-nd`, `solicitations-sent`, `nd-no-buffer`, `pending-timed-out`,
//! `neighbors-aged-out`. Trace: `src S dst D hlim H plen L nh N tx-port P`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::EthernetAddress;

use super::icmp6::{self, Icmp6Error};
use super::ip4_input::count_icmp;
use super::ip4_rewrite::write_l2;
use super::ip6_input::addr_at;
use super::resolve::{self, HoldCounters, HoldDrops};
use super::{Adjacency, V6};
use crate::interface::SwIfIdx;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "ip6-rewrite";

named_enum! {
    /// Next edges of `ip6-rewrite`.
    pub enum Edge as edge { Ip6Lookup = "ip6-lookup" }
}
named_enum! {
    /// Drop reasons of `ip6-rewrite`.
    pub enum DropReason as drop {
        MtuExceeded = "mtu-exceeded",
        PendingFull = "pending-full",
        NeighborLimit = "neighbor-limit",
        NoInterface = "no-interface",
        BadAdjacency = "bad-adjacency",
    }
}
named_enum! {
    /// Counters of `ip6-rewrite` (the ICMP ones first, as `ip4-input`'s).
    pub enum Counter as counter {
        IcmpSent = "icmp-sent",
        IcmpSuppressed = "icmp-suppressed",
        IcmpRateLimited = "icmp-rate-limited",
        IcmpNoBuffer = "icmp-no-buffer",
        HeldForNd = "held-for-nd",
        SolicitationsSent = "solicitations-sent",
        NdNoBuffer = "nd-no-buffer",
        PendingTimedOut = "pending-timed-out",
        NeighborsAgedOut = "neighbors-aged-out",
    }
}

/// The `ip6-rewrite` node.
#[derive(Debug, Default)]
pub struct Ip6Rewrite;

/// Decrements the hop limit of the IPv6 header at the packet's L3 offset.
#[inline]
pub fn decrement_hop_limit(pool: &mut Pool, h: u32) {
    let off = pool.header(h).l3_offset as usize;
    if let Some(b) = pool.data_mut(h).get_mut(off + 7) {
        *b = b.saturating_sub(1);
    }
}

/// The whole rewrite of a routed packet: the hop limit (when `hop`) and the L2 header, in place
/// when the L2 header is already 14 bytes long (the common case).
#[inline]
pub fn rewrite(
    pool: &mut Pool,
    h: u32,
    dst: EthernetAddress,
    src: EthernetAddress,
    iface: SwIfIdx,
    hop: bool,
) -> bool {
    let (hdr, d) = pool.packet_mut(h);
    if hdr.l3_offset != 14 {
        if hop {
            decrement_hop_limit(pool, h);
        }
        return write_l2(pool, h, dst, src, iface, 0x86dd);
    }
    let Some(f) = d.get_mut(..54) else {
        return false;
    };
    hdr.vlan = 0;
    hdr.inner_vlan = 0;
    hdr.tx_port = iface;
    f[..6].copy_from_slice(&dst.0);
    f[6..12].copy_from_slice(&src.0);
    if hop {
        f[21] = f[21].saturating_sub(1);
    }
    true
}

/// The counters the shared neighbour resolution adds to, and its drop reasons.
const HOLD: (HoldCounters, HoldDrops) = (
    HoldCounters {
        held: Counter::HeldForNd.index(),
        asked: Counter::SolicitationsSent.index(),
        no_buffer: Counter::NdNoBuffer.index(),
        timed_out: Counter::PendingTimedOut.index(),
        aged_out: Counter::NeighborsAgedOut.index(),
    },
    HoldDrops {
        pending_full: DropReason::PendingFull.next(),
        neighbor_limit: DropReason::NeighborLimit.next(),
        no_room: DropReason::NoInterface.next(),
        bad_slot: DropReason::BadAdjacency.next(),
    },
);

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let meta = cx.state.ip.meta(h);
    let Some(ip) = super::ip6_header(cx.pool, h) else {
        return DropReason::BadAdjacency.next();
    };
    let dst = addr_at(ip, 24);
    let total = 40 + u16::from_be_bytes([ip[4], ip[5]]);
    let (iface, nh) = match cx.state.ip.v6.adjs.get(meta.adj) {
        Some(Adjacency::Glean { iface }) => (iface, dst),
        Some(Adjacency::Neighbor { iface, nh }) => (iface, nh),
        _ => return DropReason::BadAdjacency.next(),
    };
    let Some((mtu, src_mac)) = cx.state.interface(iface).map(|i| (i.mtu, i.mac)) else {
        return DropReason::NoInterface.next();
    };
    if total > mtu {
        let err = Icmp6Error::PacketTooBig { mtu: mtu as u32 };
        let s = icmp6::send_error(cx, h, err, Edge::Ip6Lookup.next());
        count_icmp(cx, s);
        return DropReason::MtuExceeded.next();
    }
    resolve::forward::<V6>(cx, h, meta.adj, iface, nh, src_mac, meta.local, HOLD)
}

impl Node<SwitchState> for Ip6Rewrite {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            next_nodes: Edge::NAMES,
            drop_reasons: DropReason::NAMES,
            counters: Counter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        resolve::age_step::<V6>(cx, HOLD.0);
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            *n = one(cx, h);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        format!(
            "{} tx-port {}",
            super::ip6_input::trace_ip6(pool, pkt),
            pool.header(pkt).tx_port
        )
    }
}
