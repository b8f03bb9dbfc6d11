//! The IP feature: layer 3 interfaces, the IPv4 and IPv6 forwarding paths, ARP and Neighbor
//! Discovery.
//!
//! An interface with at least one IPv4 address is *routed*: `ethernet-input` hands its untagged
//! IPv4 and ARP frames addressed to the interface's MAC (or broadcast) to `ip4-input` and
//! `arp-input` instead of a service (an interface with an address has no L2 service); one with
//! an IPv6 address likewise hands its IPv6 frames to `ip6-input`.
//!
//! ```text
//! ethernet-input ─► ip4-input ─► ip4-lookup ─┬─► ip4-rewrite ─► (output arc) ─► interface-output
//!              │                    ▲        └─► ip4-local ──┐ (echo reply, ICMP errors)
//!              │                    └────────────────────────┘
//!              └─► arp-input ─► (reply, output arc)     pending packets released on resolution
//! ```
//!
//! ```text
//! ethernet-input ─► ip6-input ─► ip6-lookup ─┬─► ip6-rewrite ─► (output arc) ─► interface-output
//!                       │            ▲        └─► ip6-local ──┬─► ip6-nd ─► (advertisement, output arc)
//!                       └─ multicast, own link-local ─►┘      └─► echo reply, ICMPv6 errors
//! ```
//!
//! - IPv6 nodes: [`ip6_input`], [`ip6_lookup`], [`ip6_rewrite`] (hop limit, MACs, glean by
//!   neighbor solicitation), [`ip6_local`], [`nd_input`] (`ip6-nd`: RFC 4861 solicitations and
//!   advertisements); ICMPv6 errors (RFC 4443) built by [`icmp6`]; the IPv6 tables in [`ip6`]
//!   ([`ip6::Ip6State`], the `v6` field of [`IpState`]); the control calls in [`control6`].
//! - Nodes, one per file: [`ip4_input`] (`ip4-input`: header checks), [`ip4_lookup`]
//!   (`ip4-lookup`: batched longest-prefix match in the FIB), [`ip4_rewrite`] (`ip4-rewrite`: MTU,
//!   TTL with the RFC 1624 incremental checksum, MAC rewrite, glean), [`ip4_local`] (`ip4-local`:
//!   ICMP echo for the switch's own addresses), [`arp_input`] (`arp-input`: RFC 826). ICMP errors
//!   (RFC 792, RFC 1812 §4.3.2) are built by [`icmp`], rate-limited by a token bucket.
//! - One core for both families: [`family`] ([`IpFamily`] over the `fib` crate's [`V4`] / [`V6`],
//!   and [`Tables`], one family's table 0), [`resolve`] (neighbour resolution, glean, aging and
//!   the merge of ARP / ND answers, shared by the rewrite and ARP / ND nodes), the control logic
//!   written once in [`control`]; the nodes keep only what their family's headers and wire
//!   formats make different.
//! - Tables ([`IpState`], the `ip` field of [`SwitchState`]: a [`Tables`] per family, `v4` and
//!   `v6`, and what both share): per-interface addresses
//!   ([`IpInterface`]), the routes ([`Route`], the control-plane copy `show ip fib` reads), the
//!   data-plane FIB ([`fib::Fib4`], over the `fib` crate), the adjacencies ([`Adjacency`]: what a
//!   route's next hop means — local, glean on a connected subnet, a neighbour) and the neighbours
//!   ([`neighbor::NeighborTable`]: ARP entries, static or learned, with their pending queues).
//! - Control: [`control`] — `Switch` methods (addresses, routes, static neighbours, settings,
//!   `show ip fib`, `show ip neighbors`).
//! - [`config`]: `[ip]` in the config file (settings keys, addresses, routes, static
//!   neighbours) as config objects for the control plane; [`ctl`]: its registration — the
//!   section with the `ip …` verbs, and `show ip …` / `show ip6 …`.
//! - [`testing`]: the router setup of the benchmarks.
//! - [`IpSettings`]: the serde config of the feature (options, ICMP rate, neighbour limit, aging,
//!   pending queue length).
//!
//! Table 0 is the only FIB today; [`Route`] and the control calls carry a `table` (VRF id) that
//! must be 0, so that VRFs can come without changing the API.

pub mod arp_input;
pub mod config;
pub mod control;
pub mod control6;
pub mod ctl;
pub mod family;
pub mod fib;
pub mod icmp;
pub mod icmp6;
pub mod ip4_input;
pub mod ip4_local;
pub mod ip4_lookup;
pub mod ip4_rewrite;
pub mod ip6;
pub mod ip6_input;
pub mod ip6_local;
pub mod ip6_lookup;
pub mod ip6_rewrite;
pub mod nd_input;
pub mod neighbor;
pub mod resolve;
pub mod testing;

use std::collections::HashMap;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use vecswitch_graph::{ArcId, ArcKey, Graph, GraphError};

use crate::feature::{Feature, Stage};
use crate::interface::{EthertypeInput, SwIfIdx};
use crate::state::SwitchState;

pub use arp_input::ArpInput;
use family::PrefixOps;
pub use family::{IpFamily, Tables, V4, V6};
pub use ip4_input::Ip4Input;
pub use ip4_local::Ip4Local;
pub use ip4_lookup::Ip4Lookup;
pub use ip4_rewrite::Ip4Rewrite;
pub use ip6::{Ip6Interface, Ipv6Prefix};
pub use ip6_input::Ip6Input;
pub use ip6_local::Ip6Local;
pub use ip6_lookup::Ip6Lookup;
pub use ip6_rewrite::Ip6Rewrite;
pub use nd_input::NdInput;

/// The `ip4-unicast` arc: features on checked IPv4 packets of a routed interface, between
/// `ip4-input` and `ip4-lookup` (per receive interface; VPP's `ip4-unicast` feature arc). NAT44's
/// `nat44-out2in` and the firewall sit on it.
pub const IP4_UNICAST_ARC: ArcId = 2;

/// The `ip6-unicast` arc: features on checked IPv6 packets of a routed interface that are to be
/// routed, between `ip6-input` and `ip6-lookup` (per receive interface; VPP's `ip6-unicast`
/// feature arc), declared like [`IP4_UNICAST_ARC`]. Packets `ip6-input` sends to `ip6-local`
/// (multicast, the receive interface's link-local address) do not take it.
pub const IP6_UNICAST_ARC: ArcId = 3;

/// The IP feature as registered in the graph: its ten forwarding nodes and the `ip4-unicast` and
/// `ip6-unicast` arcs.
#[derive(Debug, Clone, Copy)]
pub struct IpFeature;

impl Feature for IpFeature {
    fn name(&self) -> &'static str {
        "ip"
    }

    fn ethertypes(&self) -> &'static [EthertypeInput] {
        ETHERTYPES
    }

    fn register(&self, graph: &mut Graph<SwitchState>, stage: Stage) -> Result<(), GraphError> {
        if stage == Stage::Arcs {
            let a = graph.add_arc("ip4-unicast", ip4_lookup::NAME, ArcKey::Rx);
            if a != IP4_UNICAST_ARC {
                return Err(GraphError::UnknownArc(format!(
                    "ip4-unicast must be arc #{IP4_UNICAST_ARC}, got #{a}"
                )));
            }
            let a = graph.add_arc("ip6-unicast", ip6_lookup::NAME, ArcKey::Rx);
            if a != IP6_UNICAST_ARC {
                return Err(GraphError::UnknownArc(format!(
                    "ip6-unicast must be arc #{IP6_UNICAST_ARC}, got #{a}"
                )));
            }
        }
        if stage == Stage::Forward {
            graph.add(Box::new(Ip4Input));
            graph.add(Box::new(Ip4Lookup::default()));
            graph.add(Box::new(Ip4Rewrite));
            graph.add(Box::new(Ip4Local));
            graph.add(Box::new(ArpInput));
            graph.add(Box::new(Ip6Input));
            graph.add(Box::new(Ip6Lookup::default()));
            graph.add(Box::new(Ip6Rewrite));
            graph.add(Box::new(Ip6Local));
            graph.add(Box::new(NdInput));
        }
        Ok(())
    }

    fn shows(&self) -> &'static [crate::ctl::Show] {
        ctl::SHOWS
    }
}

/// An IPv4 prefix `addr/len`. As an interface address the host bits are kept (`10.0.0.1/24`); as
/// a route they must be zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ipv4Prefix {
    pub addr: Ipv4Addr,
    pub len: u8,
}

impl Ipv4Prefix {
    /// `addr/len`; `len` must be ≤ 32.
    pub fn new(addr: Ipv4Addr, len: u8) -> Result<Ipv4Prefix, PrefixError> {
        if len > 32 {
            return Err(PrefixError::Length(len.to_string()));
        }
        Ok(Ipv4Prefix { addr, len })
    }

    /// The netmask of a prefix length (`len` ≤ 32).
    #[inline]
    pub const fn mask(len: u8) -> u32 {
        if len == 0 {
            0
        } else {
            u32::MAX << (32 - len as u32)
        }
    }

    /// The prefix with its host bits cleared.
    pub fn network(self) -> Ipv4Prefix {
        PrefixOps::<V4>::net(self)
    }

    /// Whether `a` is inside the prefix.
    #[inline]
    pub fn contains(self, a: Ipv4Addr) -> bool {
        PrefixOps::<V4>::holds(self, a)
    }

    /// Whether the host bits are zero.
    pub fn is_network(self) -> bool {
        PrefixOps::<V4>::is_net(self)
    }
}

/// Why a prefix did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    #[error("invalid IPv4 address {0:?}: accepted a dotted quad such as 10.0.0.1")]
    Address(String),
    #[error("invalid prefix length {0:?}: accepted 0 to 32")]
    Length(String),
}

/// The text form of a prefix type `$ty` (fields `addr: $addr`, `len`; a checking `new`; an error
/// `$err` with `Address` and `Length` variants): `Display` as `addr/len`, `FromStr` from
/// `addr/len` or `addr` alone for a host prefix (`/$max`), and serde as that string.
macro_rules! prefix_text {
    ($ty:ident, $addr:ty, $max:literal, $err:ident) => {
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}/{}", self.addr, self.len)
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $err;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let (a, l) = s.split_once('/').unwrap_or((s, stringify!($max)));
                let addr = a
                    .parse::<$addr>()
                    .map_err(|_| $err::Address(a.to_string()))?;
                let len = l.parse::<u8>().map_err(|_| $err::Length(l.to_string()))?;
                $ty::new(addr, len)
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <String as serde::Deserialize>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use prefix_text;

prefix_text!(Ipv4Prefix, Ipv4Addr, 32, PrefixError);

/// The IPv4 side of one interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpInterface {
    /// Addresses with their subnet lengths, in the order added (the first is the source of the
    /// ICMP errors and ARP requests the interface sends when no address of the subnet fits).
    pub addrs: Vec<Ipv4Prefix>,
}

impl IpInterface {
    /// An interface with an address routes its IPv4/ARP frames.
    #[inline]
    pub fn routed(&self) -> bool {
        !self.addrs.is_empty()
    }

    /// Whether `a` is one of the interface's addresses.
    #[inline]
    pub fn has_addr(&self, a: Ipv4Addr) -> bool {
        self.addrs.iter().any(|p| p.addr == a)
    }

    /// The interface's address whose subnet holds `a`, if any.
    #[inline]
    pub fn addr_for(&self, a: Ipv4Addr) -> Option<Ipv4Addr> {
        self.addrs.iter().find(|p| p.contains(a)).map(|p| p.addr)
    }

    /// The first address, if any.
    #[inline]
    pub fn primary(&self) -> Option<Ipv4Addr> {
        self.addrs.first().map(|p| p.addr)
    }
}

/// Adjacency index: what a FIB lookup returns (the FIB's `NextHop`).
pub type AdjIdx = u32;

/// What a route's next hop means for the packet (VPP's `ip_adjacency_t`, reduced to what IP over
/// Ethernet needs); `A` is the family's address (`Ipv4Addr`, `Ipv6Addr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Adjacency<A = Ipv4Addr> {
    /// Drop the packet (`adj-drop`); adjacency [`ADJ_DROP`].
    Drop,
    /// One of the switch's own addresses: `ip4-local` / `ip6-local`; adjacency [`ADJ_LOCAL`].
    Local,
    /// A connected subnet of `iface`: the packet's destination is the neighbour (ARP or neighbor
    /// solicitation for it on a miss, "glean").
    Glean { iface: SwIfIdx },
    /// A next hop `nh` on `iface`.
    Neighbor { iface: SwIfIdx, nh: A },
}

/// The drop adjacency (always present).
pub const ADJ_DROP: AdjIdx = 0;
/// The local adjacency (always present).
pub const ADJ_LOCAL: AdjIdx = 1;

/// The adjacency table of one family: adjacencies by index, shared by the routes that use them.
#[derive(Debug, Clone)]
pub struct AdjTable<A = Ipv4Addr> {
    slots: Vec<Option<(Adjacency<A>, u32)>>,
    index: HashMap<Adjacency<A>, AdjIdx>,
    /// Per adjacency, the neighbour slot last found for its next hop (a hint `ip4-rewrite`
    /// checks before use; `u32::MAX`: none).
    nbr_hint: Vec<u32>,
}

impl<A: Copy + Eq + std::hash::Hash> Default for AdjTable<A> {
    fn default() -> Self {
        let mut t = AdjTable {
            slots: Vec::new(),
            index: HashMap::new(),
            nbr_hint: Vec::new(),
        };
        // The first two are permanent: their reference count never reaches zero.
        t.acquire(Adjacency::Drop);
        t.acquire(Adjacency::Local);
        t
    }
}

impl<A: Copy + Eq + std::hash::Hash> AdjTable<A> {
    /// The adjacency at `i`, if it exists.
    #[inline]
    pub fn get(&self, i: AdjIdx) -> Option<Adjacency<A>> {
        self.slots
            .get(i as usize)
            .copied()
            .flatten()
            .map(|(a, _)| a)
    }

    /// The index of `adj` if it exists (no reference taken).
    #[inline]
    pub fn find(&self, adj: Adjacency<A>) -> Option<AdjIdx> {
        self.index.get(&adj).copied()
    }

    /// The index of `adj`, made if new; one more reference.
    pub fn acquire(&mut self, adj: Adjacency<A>) -> AdjIdx {
        if let Some(&i) = self.index.get(&adj) {
            if let Some((_, refs)) = self.slots[i as usize].as_mut() {
                *refs += 1;
            }
            return i;
        }
        let i = match self.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        } as AdjIdx;
        self.slots[i as usize] = Some((adj, 1));
        self.index.insert(adj, i);
        if self.nbr_hint.len() <= i as usize {
            self.nbr_hint.resize(i as usize + 1, u32::MAX);
        }
        self.nbr_hint[i as usize] = u32::MAX;
        i
    }

    /// The neighbour slot hint of adjacency `i` (checked by the user: it may be stale).
    #[inline]
    pub fn nbr_hint(&self, i: AdjIdx) -> u32 {
        self.nbr_hint.get(i as usize).copied().unwrap_or(u32::MAX)
    }

    /// Remembers neighbour slot `slot` for adjacency `i`.
    #[inline]
    pub fn set_nbr_hint(&mut self, i: AdjIdx, slot: u32) {
        if let Some(h) = self.nbr_hint.get_mut(i as usize) {
            *h = slot;
        }
    }

    /// One reference fewer to adjacency `i`; removed at zero.
    pub fn release(&mut self, i: AdjIdx) {
        let Some(Some((adj, refs))) = self.slots.get_mut(i as usize) else {
            return;
        };
        *refs -= 1;
        if *refs == 0 {
            let adj = *adj;
            self.index.remove(&adj);
            self.slots[i as usize] = None;
        }
    }

    /// Adjacencies in use.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Never: the drop and local adjacencies are permanent.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

/// Where a route came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteSource {
    /// The subnet of an interface address.
    Connected,
    /// An interface address itself (/32, delivered locally).
    Local,
    /// Configured.
    Static,
}

/// One route of table 0 (the control-plane copy `show ip fib` reads; the FIB holds the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub source: RouteSource,
    /// Up to [`MAX_PATHS`] adjacencies (ECMP over them by flow hash).
    pub paths: Vec<AdjIdx>,
}

/// Most next hops of one route (ECMP).
pub const MAX_PATHS: usize = 8;

/// What the IP feature does, configurable (the feature's config type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IpSettings {
    /// Forward packets with IPv4 options (RFC 791 §3.1); when false `ip4-input` drops them
    /// (`options-not-allowed`), as many routers do (RFC 7126 §4).
    pub allow_options: bool,
    /// ICMP errors sent per second at most (token bucket refill; RFC 1812 §4.3.2.8).
    pub icmp_errors_per_s: u32,
    /// ICMP errors sent back to back at most (token bucket depth).
    pub icmp_burst: u32,
    /// Most neighbour entries (static, learned and incomplete); beyond it nothing is learned and
    /// packets needing a new entry are dropped (`neighbor-limit`).
    pub neighbor_limit: u32,
    /// Seconds after which a learned neighbour not confirmed by ARP is removed (0: never).
    pub neighbor_age_s: u32,
    /// Packets held per unresolved neighbour while ARP asks for it; more are dropped
    /// (`pending-full`).
    pub arp_pending: u32,
    /// ARP requests (IPv6: neighbor solicitations) sent for an unresolved neighbour before it is
    /// given up (its pending packets dropped as `pending-timed-out`), one per second.
    pub arp_max_requests: u32,
    /// Forward IPv6 packets with a hop-by-hop options header (RFC 8200 §4.3); when false
    /// `ip6-input` drops them (`hop-by-hop-not-allowed`), as many routers do (RFC 9098 §5.1).
    pub allow_hop_by_hop: bool,
}

impl Default for IpSettings {
    fn default() -> Self {
        IpSettings {
            allow_options: true,
            icmp_errors_per_s: 100,
            icmp_burst: 10,
            neighbor_limit: 65_536,
            neighbor_age_s: 300,
            arp_pending: 8,
            arp_max_requests: 3,
            allow_hop_by_hop: true,
        }
    }
}

/// Per-packet IP metadata kept beside the buffer header (indexed by buffer handle): the
/// adjacency `ip4-lookup` chose for `ip4-rewrite`, and whether the switch made the packet (no
/// TTL decrement).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PktMeta {
    pub adj: AdjIdx,
    pub local: bool,
}

/// Everything the IP nodes read and write.
#[derive(Debug)]
pub struct IpState {
    pub settings: IpSettings,
    /// The IPv4 addresses, routes, FIB, adjacencies and neighbours.
    pub v4: Tables<V4>,
    /// The IPv6 addresses, routes, FIB, adjacencies and neighbours.
    pub v6: Tables<V6>,
    /// Per-packet metadata by buffer handle.
    pub meta: Vec<PktMeta>,
    /// ICMP error token bucket: tokens (scaled by 1e9 per token) and last refill.
    icmp_tokens_ns: u64,
    icmp_last_ns: u64,
    /// Waiting packets freed by control calls (a neighbour removed or made static).
    pub pending_discarded: u64,
}

impl Default for IpState {
    fn default() -> Self {
        IpState::new(IpSettings::default())
    }
}

impl IpState {
    /// No addresses, no routes.
    pub fn new(settings: IpSettings) -> IpState {
        IpState {
            settings,
            v4: Tables::default(),
            v6: Tables::default(),
            meta: Vec::new(),
            icmp_tokens_ns: settings.icmp_burst as u64 * 1_000_000_000,
            icmp_last_ns: 0,
            pending_discarded: 0,
        }
    }

    /// The IPv4 side of interface `i` (`None`: no address).
    #[inline]
    pub fn iface(&self, i: SwIfIdx) -> Option<&IpInterface> {
        self.v4.iface(i)
    }

    /// Whether interface `i` is routed: it has an IPv4 or an IPv6 address.
    #[inline]
    pub fn routed(&self, i: SwIfIdx) -> bool {
        self.iface(i).is_some() || self.v6.iface(i).is_some()
    }

    /// Whether `a` is an IPv4 address of any interface.
    pub fn is_local(&self, a: Ipv4Addr) -> bool {
        self.v4.is_local(a)
    }

    /// The metadata of packet `h`, writable (grown on first use of a handle).
    #[inline]
    pub fn meta_mut(&mut self, h: u32) -> &mut PktMeta {
        let i = h as usize;
        if self.meta.len() <= i {
            self.meta.resize(i + 1, PktMeta::default());
        }
        &mut self.meta[i]
    }

    /// The metadata of packet `h`.
    #[inline]
    pub fn meta(&self, h: u32) -> PktMeta {
        self.meta.get(h as usize).copied().unwrap_or_default()
    }

    /// Takes one ICMP error token at time `now_ns`; false when the rate is exceeded.
    pub fn icmp_token(&mut self, now_ns: u64) -> bool {
        const TOKEN: u64 = 1_000_000_000;
        let s = self.settings;
        let elapsed = now_ns.saturating_sub(self.icmp_last_ns);
        self.icmp_last_ns = now_ns.max(self.icmp_last_ns);
        let cap = s.icmp_burst as u64 * TOKEN;
        self.icmp_tokens_ns = self
            .icmp_tokens_ns
            .saturating_add(elapsed.saturating_mul(s.icmp_errors_per_s as u64))
            .min(cap);
        if self.icmp_tokens_ns >= TOKEN {
            self.icmp_tokens_ns -= TOKEN;
            true
        } else {
            false
        }
    }
}

/// What the IP feature takes from `ethernet-input` ([`Feature::ethertypes`]): IPv4 and ARP on an
/// interface with an IPv4 address, IPv6 on one with an IPv6 address (untagged, for the interface's
/// MAC or a group address: `ethernet-input` checks that; unicast to another MAC is its
/// `l3-mac-mismatch`).
pub static ETHERTYPES: &[EthertypeInput] = &[
    EthertypeInput {
        ethertype: 0x0800,
        node: ip4_input::NAME,
        enabled: has_v4,
    },
    EthertypeInput {
        ethertype: 0x0806,
        node: arp_input::NAME,
        enabled: has_v4,
    },
    EthertypeInput {
        ethertype: 0x86dd,
        node: ip6_input::NAME,
        enabled: has_v6,
    },
];

/// Whether interface `rx` has an IPv4 address.
fn has_v4(st: &SwitchState, rx: SwIfIdx) -> bool {
    st.ip.iface(rx).is_some()
}

/// Whether interface `rx` has an IPv6 address.
fn has_v6(st: &SwitchState, rx: SwIfIdx) -> bool {
    st.ip.v6.iface(rx).is_some()
}

/// Packet `h`, turned into a reply in place (an echo reply of `ip4-local` or `ip6-local`), is
/// routed like a packet the switch made: any Ethernet padding after the `len` bytes of the frame
/// cut, no TTL / hop limit decrement, no adjacency yet; counted on the node's `counter`.
pub(crate) fn replied_in_place(
    cx: &mut vecswitch_graph::Cx<'_, SwitchState>,
    h: u32,
    len: usize,
    counter: u16,
) {
    cx.pool.set_len(h, len);
    *cx.state.ip.meta_mut(h) = PktMeta {
        adj: ADJ_DROP,
        local: true,
    };
    cx.counters.add(counter, 1);
}

/// The IPv6 fixed header of packet `h` (40 bytes), if the first segment holds it.
#[inline]
pub(crate) fn ip6_header(pool: &vecswitch_buffer::Pool, h: u32) -> Option<&[u8]> {
    let off = pool.header(h).l3_offset as usize;
    pool.data(h).get(off..off + 40)
}

/// The IPv4 header of packet `h` (its first 20 bytes at least, options included), if the first
/// segment holds it.
#[inline]
pub(crate) fn ip4_header(pool: &vecswitch_buffer::Pool, h: u32) -> Option<&[u8]> {
    let off = pool.header(h).l3_offset as usize;
    let d = pool.data(h).get(off..)?;
    let ihl = (*d.first()? as usize & 0x0f) * 4;
    d.get(..ihl.max(20))
}
