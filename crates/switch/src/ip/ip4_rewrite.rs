//! `ip4-rewrite`: sends a routed packet to its next hop — the MTU check (RFC 791 §3.2; RFC 1191 §4:
//! an ICMP fragmentation needed with the next-hop MTU when DF is set), the TTL decrement with the
//! RFC 1624 incremental checksum update (RFC 1812 §5.3.1; not for packets the switch made), and the
//! MAC rewrite (destination: the neighbour's MAC, source: the interface's, EtherType IPv4; the
//! receive VLAN tags are removed) — VPP's `ip4-rewrite`.
//!
//! The next hop is the adjacency's (`Neighbor`) or, on a connected subnet (`Glean`), the
//! destination itself. When its MAC is not known the packet waits on the neighbour's pending queue
//! (bounded, `arp_pending`) while an ARP request asks for it ("glean"); `arp-input` sends the queue
//! on when the reply comes. Once a second this node also runs an aging step of the neighbour table
//! (learned entries not confirmed for `neighbor_age_s`; incomplete ones asked again once a second
//! and given up after `arp_max_requests`: their packets are counted as `pending-timed-out`).
//!
//! Next: the `interface-output` arc, `ip4-lookup` (ICMP errors). Drops: `mtu-exceeded` (DF set:
//! an ICMP fragmentation needed is sent), `fragmentation-unsupported` (too big, DF clear: the
//! switch does not fragment), `pending-full`, `neighbor-limit`, `no-interface`, `bad-adjacency`.
//! Counters: the ICMP ones, `held-for-arp`, `arp-requests-sent`, `arp-no-buffer`,
//! `pending-timed-out`, `neighbors-aged-out`. Trace: `src S dst D ttl T len L tx-port N`.

use std::net::Ipv4Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::{checksum, EthernetAddress};

use super::icmp::{self, IcmpError};
use super::ip4_input::count_icmp;
use super::resolve::{self, HoldCounters, HoldDrops};
use super::{Adjacency, V4};
use crate::interface::{SwIfIdx, TO_OUTPUT};
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "ip4-rewrite";

named_enum! {
    /// Next edges of `ip4-rewrite`.
    pub enum Edge as edge { Ip4Lookup = "ip4-lookup" }
}
named_enum! {
    /// Drop reasons of `ip4-rewrite`.
    pub enum DropReason as drop {
        MtuExceeded = "mtu-exceeded",
        FragmentationUnsupported = "fragmentation-unsupported",
        PendingFull = "pending-full",
        NeighborLimit = "neighbor-limit",
        NoInterface = "no-interface",
        BadAdjacency = "bad-adjacency",
    }
}
named_enum! {
    /// Counters of `ip4-rewrite` (the ICMP ones first, as `ip4-input`'s).
    pub enum Counter as counter {
        IcmpSent = "icmp-sent",
        IcmpSuppressed = "icmp-suppressed",
        IcmpRateLimited = "icmp-rate-limited",
        IcmpNoBuffer = "icmp-no-buffer",
        HeldForArp = "held-for-arp",
        ArpRequestsSent = "arp-requests-sent",
        ArpNoBuffer = "arp-no-buffer",
        PendingTimedOut = "pending-timed-out",
        NeighborsAgedOut = "neighbors-aged-out",
    }
}

/// The `ip4-rewrite` node.
#[derive(Debug, Default)]
pub struct Ip4Rewrite;

/// Makes the packet's L2 header exactly 14 bytes in front of its L3 header (removing tags) and
/// writes `dst`, `src`, `ethertype` (IPv4 or IPv6); sets `tx_port` to `iface`. False if the
/// buffer has no room (never for a packet `ethernet-input` accepted).
#[inline]
pub fn write_l2(
    pool: &mut Pool,
    h: u32,
    dst: EthernetAddress,
    src: EthernetAddress,
    iface: SwIfIdx,
    ethertype: u16,
) -> bool {
    let off = pool.header(h).l3_offset as usize;
    let ok = match off {
        14 => true,
        o if o > 14 => pool.pull_front(h, o - 14),
        o => pool.push_front(h, 14 - o).is_some(),
    };
    if !ok {
        return false;
    }
    let (hdr, d) = pool.packet_mut(h);
    hdr.l3_offset = 14;
    hdr.vlan = 0;
    hdr.inner_vlan = 0;
    hdr.ethertype = ethertype;
    hdr.tx_port = iface;
    let Some(l2) = d.get_mut(..14) else {
        return false;
    };
    l2[..6].copy_from_slice(&dst.0);
    l2[6..12].copy_from_slice(&src.0);
    l2[12..14].copy_from_slice(&ethertype.to_be_bytes());
    true
}

/// The whole rewrite of a forwarded packet: [`decrement_ttl`] (when `ttl`) and [`write_l2`], in
/// one pass over the bytes when the L2 header is already 14 bytes long (the common case).
#[inline]
pub fn rewrite(
    pool: &mut Pool,
    h: u32,
    dst: EthernetAddress,
    src: EthernetAddress,
    iface: SwIfIdx,
    ttl: bool,
) -> bool {
    let (hdr, d) = pool.packet_mut(h);
    if hdr.l3_offset != 14 {
        if ttl {
            decrement_ttl(pool, h);
        }
        return write_l2(pool, h, dst, src, iface, 0x0800);
    }
    let Some(f) = d.get_mut(..34) else {
        return false;
    };
    hdr.vlan = 0;
    hdr.inner_vlan = 0;
    hdr.tx_port = iface;
    f[..6].copy_from_slice(&dst.0);
    f[6..12].copy_from_slice(&src.0);
    if ttl {
        // RFC 1624 eqn. 3 on the TTL/protocol word (bytes 8-9 of the IPv4 header).
        let old = u16::from_be_bytes([f[22], f[23]]);
        let new = old.wrapping_sub(0x100);
        let c = checksum::update16(u16::from_be_bytes([f[24], f[25]]), old, new);
        f[22] = f[22].wrapping_sub(1);
        f[24..26].copy_from_slice(&c.to_be_bytes());
    }
    true
}

/// Decrements the TTL of the IPv4 header at the packet's L3 offset and updates its checksum
/// incrementally (RFC 1624 eqn. 3 on the TTL/protocol word).
#[inline]
pub fn decrement_ttl(pool: &mut Pool, h: u32) {
    let off = pool.header(h).l3_offset as usize;
    let Some(ip) = pool.data_mut(h).get_mut(off..off + 20) else {
        return;
    };
    let old = u16::from_be_bytes([ip[8], ip[9]]);
    let ttl = ip[8].saturating_sub(1);
    let new = u16::from_be_bytes([ttl, ip[9]]);
    let c = checksum::update16(u16::from_be_bytes([ip[10], ip[11]]), old, new);
    ip[8] = ttl;
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

/// Sends an ARP request for `target` out of `iface` (from the interface's address in the
/// target's subnet) as a new packet on the output arc. False without a buffer or address.
pub(crate) fn send_arp_request(
    cx: &mut Cx<'_, SwitchState>,
    iface: SwIfIdx,
    target: Ipv4Addr,
) -> bool {
    let Some(mac) = cx.state.interface(iface).map(|i| i.mac) else {
        return false;
    };
    let Some(src_ip) = cx
        .state
        .ip
        .iface(iface)
        .and_then(|f| f.addr_for(target).or(f.primary()))
    else {
        return false;
    };
    let Some(p) = cx.pool.alloc() else {
        return false;
    };
    let bytes = super::arp_input::arp_frame(
        vecswitch_wire::ArpOperation::REQUEST,
        mac,
        src_ip,
        EthernetAddress::BROADCAST,
        EthernetAddress::ZERO,
        target,
    );
    cx.pool.write_packet(p, &bytes);
    let hdr = cx.pool.header_mut(p);
    hdr.l3_offset = 14;
    hdr.ethertype = 0x0806;
    hdr.tx_port = iface;
    hdr.rx_port = iface;
    cx.emit.push(p, TO_OUTPUT);
    true
}

/// The counters the shared neighbour resolution adds to, and its drop reasons.
const HOLD: (HoldCounters, HoldDrops) = (
    HoldCounters {
        held: Counter::HeldForArp.index(),
        asked: Counter::ArpRequestsSent.index(),
        no_buffer: Counter::ArpNoBuffer.index(),
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
    let off = cx.pool.header(h).l3_offset as usize;
    let Some(ip) = cx.pool.data(h).get(off..off + 20) else {
        return DropReason::BadAdjacency.next();
    };
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let total = u16::from_be_bytes([ip[2], ip[3]]);
    let df = ip[6] & 0x40 != 0;
    let (iface, nh) = match cx.state.ip.v4.adjs.get(meta.adj) {
        Some(Adjacency::Glean { iface }) => (iface, dst),
        Some(Adjacency::Neighbor { iface, nh }) => (iface, nh),
        _ => return DropReason::BadAdjacency.next(),
    };
    let Some((mtu, src_mac)) = cx.state.interface(iface).map(|i| (i.mtu, i.mac)) else {
        return DropReason::NoInterface.next();
    };
    if total > mtu {
        if !df {
            return DropReason::FragmentationUnsupported.next();
        }
        let s = icmp::send_error(
            cx,
            h,
            IcmpError::FragmentationNeeded { mtu },
            Edge::Ip4Lookup.next(),
        );
        count_icmp(cx, s);
        return DropReason::MtuExceeded.next();
    }
    resolve::forward::<V4>(cx, h, meta.adj, iface, nh, src_mac, meta.local, HOLD)
}

impl Node<SwitchState> for Ip4Rewrite {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            next_nodes: Edge::NAMES,
            drop_reasons: DropReason::NAMES,
            counters: Counter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        resolve::age_step::<V4>(cx, HOLD.0);
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            *n = one(cx, h);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        format!(
            "{} tx-port {}",
            super::ip4_input::trace_ip4(pool, pkt),
            pool.header(pkt).tx_port
        )
    }
}
