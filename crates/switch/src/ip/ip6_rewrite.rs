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

use std::net::Ipv6Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::EthernetAddress;

use super::icmp6::{self, Icmp6Error};
use super::ip4_input::count_icmp;
use super::ip4_rewrite::write_l2;
use super::ip6_input::addr_at;
use super::nd_input::send_solicitation;
use super::neighbor::Neighbor;
use super::Adjacency;
use crate::interface::{SwIfIdx, TO_OUTPUT};
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

/// One aging step of the IPv6 neighbour table, at most once per switch second.
fn age_step(cx: &mut Cx<'_, SwitchState>) {
    let now = cx.state.now_s;
    if now == cx.state.ip.v6.last_age_s {
        return;
    }
    cx.state.ip.v6.last_age_s = now;
    let s = cx.state.ip.settings;
    let mut retry = Vec::new();
    let gone = cx.state.ip.v6.neighbors.age(
        now,
        s.neighbor_age_s,
        s.arp_max_requests,
        super::ip4_rewrite::AGE_SLOTS_PER_STEP,
        &mut retry,
    );
    for n in gone {
        cx.counters.add(Counter::NeighborsAgedOut.index(), 1);
        cx.counters
            .add(Counter::PendingTimedOut.index(), n.pending.len() as u64);
        for p in n.pending {
            cx.pool.free(p);
        }
    }
    for i in retry {
        let Some((iface, ip)) = cx.state.ip.v6.neighbors.get(i).map(|n| (n.iface, n.ip)) else {
            continue;
        };
        solicit(cx, iface, ip);
        if let Some(n) = cx.state.ip.v6.neighbors.get_mut(i) {
            n.requests += 1;
            n.last_request_s = now;
        }
    }
}

/// Sends a neighbor solicitation for `target` out of `iface`, counted.
fn solicit(cx: &mut Cx<'_, SwitchState>, iface: SwIfIdx, target: Ipv6Addr) {
    let c = if send_solicitation(cx, iface, target) {
        Counter::SolicitationsSent
    } else {
        Counter::NdNoBuffer
    };
    cx.counters.add(c.index(), 1);
}

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let meta = cx.state.ip.meta(h);
    let Some(ip) = super::ip6_header(cx.pool, h) else {
        return DropReason::BadAdjacency.next();
    };
    let dst = addr_at(ip, 24);
    let total = 40 + u16::from_be_bytes([ip[4], ip[5]]);
    let v6 = &cx.state.ip.v6;
    let (iface, nh) = match v6.adjs.get(meta.adj) {
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
    let ip = &mut cx.state.ip;
    let v6 = &mut ip.v6;
    let hint = v6.adjs.nbr_hint(meta.adj);
    if let Some(n) = v6.neighbors.get(hint) {
        if let (true, Some(mac)) = (n.iface == iface && n.ip == nh, n.mac) {
            return if rewrite(cx.pool, h, mac, src_mac, iface, !meta.local) {
                TO_OUTPUT
            } else {
                DropReason::NoInterface.next()
            };
        }
    }
    let slot = match v6.neighbors.find_hinted(hint, iface, nh) {
        Some(i) => {
            if i != hint {
                v6.adjs.set_nbr_hint(meta.adj, i);
            }
            i
        }
        None => {
            let n = Neighbor {
                iface,
                ip: nh,
                mac: None,
                is_static: false,
                updated_s: cx.state.now_s,
                requests: 0,
                last_request_s: cx.state.now_s,
                pending: Vec::new(),
            };
            match v6.neighbors.insert(n, ip.settings.neighbor_limit) {
                Ok(i) => i,
                Err(_) => return DropReason::NeighborLimit.next(),
            }
        }
    };
    let limit = ip.settings.arp_pending as usize;
    let Some(n) = v6.neighbors.get_mut(slot) else {
        return DropReason::BadAdjacency.next();
    };
    if let Some(mac) = n.mac {
        return if rewrite(cx.pool, h, mac, src_mac, iface, !meta.local) {
            TO_OUTPUT
        } else {
            DropReason::NoInterface.next()
        };
    }
    if n.pending.len() >= limit {
        return DropReason::PendingFull.next();
    }
    if !meta.local {
        decrement_hop_limit(cx.pool, h);
    }
    n.pending.push(h);
    cx.pool.header_mut(h).tx_port = iface;
    let ask = n.requests == 0;
    if ask {
        n.requests = 1;
        n.last_request_s = cx.state.now_s;
    }
    cx.counters.add(Counter::HeldForNd.index(), 1);
    if ask {
        solicit(cx, iface, nh);
    }
    Next::CONSUMED
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
        age_step(cx);
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
