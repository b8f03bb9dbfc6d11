//! `ip4-lookup`: longest-prefix match of every packet's destination in table 0's FIB, a vector at
//! a time: first the keys (destination, flow hash) of all packets, then one
//! [`super::fib::Fib::lookup_batch`] call (the FIB stages its own memory accesses over the
//! batch) — both in [`LookupBatch`], shared with `ip6-lookup` — then the decisions, as VPP's
//! `ip4-lookup` node does with its mtrie.
//!
//! The flow hash (source, destination, protocol and, for unfragmented TCP/UDP, the ports) picks
//! one of a route's equal-cost paths, so that a flow stays on one path; it is also stored in the
//! buffer header (`flow_hash`) for link aggregation. It is computed only while the table has a
//! route with more than one path (otherwise it would pick nothing, and `flow_hash` stays 0, "not
//! computed").
//!
//! Next: `ip4-rewrite` (the adjacency is kept in the packet's [`super::PktMeta`]), `ip4-local`
//! (the switch's own address), and `ip4-lookup` itself for the ICMP errors it sends.
//! Drops: `no-route` (with an ICMP network unreachable, RFC 1812 §5.2.7.1), `adj-drop` (a route to
//! the drop adjacency), `bad-adjacency` (a bug guard). Counters: the ICMP ones
//! (`icmp-sent`, …). Trace: `src S dst D ttl T len L`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::fib::LookupBatch;
use super::icmp::{self, IcmpError};
use super::ip4_input::{count_icmp, IcmpCounter};
use super::{Adjacency, V4};
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "ip4-lookup";

named_enum! {
    /// Next edges of `ip4-lookup`.
    pub enum Edge as edge { Ip4Rewrite = "ip4-rewrite", Ip4Local = "ip4-local", Ip4Lookup = "ip4-lookup" }
}
named_enum! {
    /// Drop reasons of `ip4-lookup`.
    pub enum DropReason as drop {
        NoRoute = "no-route",
        AdjDrop = "adj-drop",
        BadAdjacency = "bad-adjacency",
    }
}

/// The `ip4-lookup` node, with its per-vector key arrays.
#[derive(Debug, Default)]
pub struct Ip4Lookup {
    batch: LookupBatch<V4>,
}

/// The flow hash of an IPv4 header `ip` (at least 20 bytes; the ports if they follow).
#[inline]
pub fn flow_hash(ip: &[u8], l4: Option<&[u8]>) -> u32 {
    let src = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
    let dst = u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]);
    let proto = ip[9] as u32;
    let ports = match (proto, l4) {
        (6 | 17, Some(p)) if p.len() >= 4 => u32::from_be_bytes([p[0], p[1], p[2], p[3]]),
        _ => 0,
    };
    // A multiplicative mix (constants from splitmix64/murmur3's finaliser): cheap, and every
    // input bit reaches the top bits, which pick the path.
    let mut x = (src as u64) << 32 | dst as u64;
    x ^= (ports as u64) << 8 ^ proto as u64;
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x = (x ^ (x >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    (x ^ (x >> 33)) as u32
}

/// Destination and flow hash of packet `h` (checked by `ip4-input` or made by the switch): one
/// read of the first segment.
#[inline]
pub(crate) fn keys(pool: &Pool, h: u32) -> (u32, u32) {
    let off = pool.header(h).l3_offset as usize;
    let Some(ip) = pool.data(h).get(off..) else {
        return (0, 0);
    };
    let Some(fixed) = ip.get(..20) else {
        return (0, 0);
    };
    let ihl = (fixed[0] as usize & 0x0f) * 4;
    let unfragmented = u16::from_be_bytes([fixed[6], fixed[7]]) & 0x3fff == 0;
    let l4 = if unfragmented {
        ip.get(ihl..ihl + 4)
    } else {
        None
    };
    (
        u32::from_be_bytes([fixed[16], fixed[17], fixed[18], fixed[19]]),
        flow_hash(fixed, l4),
    )
}

/// Destination of packet `h` alone (when no flow hash is needed).
#[inline]
pub(crate) fn dst(pool: &Pool, h: u32) -> u32 {
    let off = pool.header(h).l3_offset as usize;
    pool.data(h)
        .get(off + 16..off + 20)
        .map_or(0, |d| u32::from_be_bytes([d[0], d[1], d[2], d[3]]))
}

impl Node<SwitchState> for Ip4Lookup {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            next_nodes: Edge::NAMES,
            drop_reasons: DropReason::NAMES,
            counters: IcmpCounter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        // Stages 1 and 2: the keys of the whole vector, the FIB's batched lookup.
        self.batch.run(cx, pkts);
        // Stage 3: the decisions.
        for (i, (&h, next)) in pkts.iter().zip(nexts.iter_mut()).enumerate() {
            *next = match self.batch.adj[i] {
                None => {
                    let s =
                        icmp::send_error(cx, h, IcmpError::NetUnreachable, Edge::Ip4Lookup.next());
                    count_icmp(cx, s);
                    DropReason::NoRoute.next()
                }
                Some(a) => match cx.state.ip.v4.adjs.get(a) {
                    Some(Adjacency::Local) => Edge::Ip4Local.next(),
                    Some(Adjacency::Glean { .. } | Adjacency::Neighbor { .. }) => {
                        cx.state.ip.meta_mut(h).adj = a;
                        Edge::Ip4Rewrite.next()
                    }
                    Some(Adjacency::Drop) => DropReason::AdjDrop.next(),
                    None => DropReason::BadAdjacency.next(),
                },
            };
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        super::ip4_input::trace_ip4(pool, pkt)
    }
}
