//! `ip6-lookup`: longest-prefix match of every packet's destination in table 0's IPv6 FIB, a
//! vector at a time, as `ip4-lookup` does (the same [`LookupBatch`]): the keys (destination, flow
//! hash) of all packets, one [`super::fib::Fib::lookup_batch`] call, then the decisions.
//!
//! The flow hash (source, destination, flow label, next header and, for TCP/UDP right after the
//! fixed header, the ports) picks one of a route's equal-cost paths (RFC 6438 §2 for the flow
//! label's part); it is stored in the buffer header (`flow_hash`) for link aggregation. As in
//! `ip4-lookup`, it is computed only while the table has a route with more than one path.
//!
//! Link-local addresses are never routed (RFC 4291 §2.5.6): a packet the switch made for a
//! link-local destination (an echo reply, an ICMPv6 error) goes out of the interface it answers,
//! as to a connected host (the interface's glean adjacency), and a packet received from a
//! link-local source that would have to leave its link is dropped with an ICMPv6 "beyond scope of
//! source address" (RFC 4443 §3.1 code 2).
//!
//! Next: `ip6-rewrite` (the adjacency is kept in the packet's [`super::PktMeta`]), `ip6-local`
//! (the switch's own address), and `ip6-lookup` itself for the ICMPv6 errors it sends.
//! Drops: `no-route` (with an ICMPv6 no route to destination), `adj-drop`, `link-local-source`,
//! `link-local-destination` (a switch-made packet to a link-local address of an interface without
//! IPv6), `bad-adjacency` (a bug guard). Counters: the ICMP ones. Trace: as `ip6-input`'s.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::fib::LookupBatch;
use super::icmp6::{self, Icmp6Error};
use super::ip4_input::{count_icmp, IcmpCounter};
use super::ip6::is_link_local;
use super::ip6_input::addr_at;
use super::{AdjIdx, Adjacency, V6};
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "ip6-lookup";

named_enum! {
    /// Next edges of `ip6-lookup`.
    pub enum Edge as edge { Ip6Rewrite = "ip6-rewrite", Ip6Local = "ip6-local", Ip6Lookup = "ip6-lookup" }
}
named_enum! {
    /// Drop reasons of `ip6-lookup`.
    pub enum DropReason as drop {
        NoRoute = "no-route",
        AdjDrop = "adj-drop",
        LinkLocalSource = "link-local-source",
        LinkLocalDestination = "link-local-destination",
        BadAdjacency = "bad-adjacency",
    }
}

/// The `ip6-lookup` node, with its per-vector key arrays.
#[derive(Debug, Default)]
pub struct Ip6Lookup {
    batch: LookupBatch<V6>,
}

/// The flow hash of an IPv6 fixed header `ip` (40 bytes; the ports if they follow).
#[inline]
pub fn flow_hash(ip: &[u8], l4: Option<&[u8]>) -> u32 {
    let word = |i: usize| u64::from_be_bytes(ip[i..i + 8].try_into().unwrap_or([0; 8]));
    let flow = u32::from_be_bytes([0, ip[1] & 0x0f, ip[2], ip[3]]) as u64;
    let nh = ip[6] as u64;
    let ports = match (nh, l4) {
        (6 | 17, Some(p)) if p.len() >= 4 => u32::from_be_bytes([p[0], p[1], p[2], p[3]]) as u64,
        _ => 0,
    };
    // The same finaliser as `ip4-lookup`'s over the folded addresses.
    let mut x = word(8) ^ word(16).rotate_left(17) ^ word(24).rotate_left(31) ^ word(32);
    x ^= ports << 8 ^ nh ^ flow << 40;
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x = (x ^ (x >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    (x ^ (x >> 33)) as u32
}

/// Destination and flow hash of packet `h` (checked by `ip6-input` or made by the switch).
#[inline]
pub(crate) fn keys(pool: &Pool, h: u32) -> (u128, u32) {
    let off = pool.header(h).l3_offset as usize;
    let Some(ip) = pool.data(h).get(off..) else {
        return (0, 0);
    };
    let Some(fixed) = ip.get(..40) else {
        return (0, 0);
    };
    (
        u128::from_be_bytes(fixed[24..40].try_into().unwrap_or([0; 16])),
        flow_hash(fixed, ip.get(40..44)),
    )
}

/// Destination of packet `h` alone (when no flow hash is needed).
#[inline]
pub(crate) fn dst(pool: &Pool, h: u32) -> u128 {
    let off = pool.header(h).l3_offset as usize;
    pool.data(h)
        .get(off + 24..off + 40)
        .and_then(|d| <[u8; 16]>::try_from(d).ok())
        .map_or(0, u128::from_be_bytes)
}

impl Node<SwitchState> for Ip6Lookup {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            next_nodes: Edge::NAMES,
            drop_reasons: DropReason::NAMES,
            counters: IcmpCounter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        self.batch.run(cx, pkts);
        for (i, (&h, next)) in pkts.iter().zip(nexts.iter_mut()).enumerate() {
            *next = decide(cx, h, self.batch.dst[i], self.batch.adj[i]);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        super::ip6_input::trace_ip6(pool, pkt)
    }
}

#[inline]
fn decide(cx: &mut Cx<'_, SwitchState>, h: u32, dst: u128, adj: Option<AdjIdx>) -> Next {
    let local = cx.state.ip.meta(h).local;
    let v6 = &cx.state.ip.v6;
    if is_link_local(dst.into()) {
        // Only switch-made packets get here with a link-local destination (ip6-input sends
        // received ones to ip6-local or drops them): out of the interface they answer.
        let rx = cx.pool.header(h).rx_port;
        let glean = v6.adjs.find(Adjacency::Glean { iface: rx });
        return match glean {
            Some(a) if local => {
                cx.state.ip.meta_mut(h).adj = a;
                Edge::Ip6Rewrite.next()
            }
            _ => DropReason::LinkLocalDestination.next(),
        };
    }
    let Some(a) = adj else {
        let s = icmp6::send_error(cx, h, Icmp6Error::NoRoute, Edge::Ip6Lookup.next());
        count_icmp(cx, s);
        return DropReason::NoRoute.next();
    };
    match v6.adjs.get(a) {
        Some(Adjacency::Local) => Edge::Ip6Local.next(),
        Some(Adjacency::Glean { .. } | Adjacency::Neighbor { .. }) => {
            let src_ll =
                super::ip6_header(cx.pool, h).is_some_and(|ip| is_link_local(addr_at(ip, 8)));
            if src_ll && !local {
                let s = icmp6::send_error(cx, h, Icmp6Error::BeyondScope, Edge::Ip6Lookup.next());
                count_icmp(cx, s);
                return DropReason::LinkLocalSource.next();
            }
            cx.state.ip.meta_mut(h).adj = a;
            Edge::Ip6Rewrite.next()
        }
        Some(Adjacency::Drop) => DropReason::AdjDrop.next(),
        None => DropReason::BadAdjacency.next(),
    }
}
