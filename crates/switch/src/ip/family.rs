//! The address family as a type parameter, so that the logic IPv4 and IPv6 share — the tables of
//! one family ([`Tables`]: interface addresses, routes, FIB, adjacencies, neighbours), the control
//! calls on them, neighbour resolution with its pending queues and aging, ICMP error plumbing — is
//! written once and monomorphised per family (no dynamic dispatch on the packet path).
//!
//! The families are the `fib` crate's [`V4`] and [`V6`] (its `family.rs`: the FIB's key type and
//! bit layout); [`IpFamily`] adds what the switch needs on top: the address and its integer form,
//! the prefix and interface types, and the few truly family-specific rules (which addresses an
//! interface may hold, link-local addresses, the words of error messages). Header layouts and wire
//! formats (IPv4 checksum vs none, ARP vs Neighbor Discovery) stay in the nodes of each family.

use std::collections::BTreeMap;
use std::fmt::{Debug, Display};
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use vecswitch_fib::{Family, FibError};
pub use vecswitch_fib::{V4, V6};
use vecswitch_wire::EthernetAddress;

use super::fib::Fib;
use super::ip6::{is_link_local, link_local_from_mac, Ip6Interface, Ipv6Prefix};
use super::neighbor::{NeighborAddr, NeighborTable};
use super::{AdjTable, Adjacency, IpInterface, IpState, Ipv4Prefix, Route};
use crate::error::SwitchError;
use crate::interface::SwIfIdx;

/// The words of a family's control errors (field values and what is accepted differ by family;
/// the logic that refuses them does not).
#[derive(Debug, Clone, Copy)]
pub struct Texts {
    /// `add_address`: a subnet or host route of the address is a static route.
    pub address_is_static: &'static str,
    /// `del_address`: the address is not on the interface.
    pub not_an_address: &'static str,
    /// A static route's prefix with host bits set.
    pub not_a_network: &'static str,
    /// A static route's next hop outside every connected subnet.
    pub bad_next_hop: &'static str,
    /// `del_route`: not a static route.
    pub not_a_static_route: &'static str,
    /// `add_neighbor`: an address the interface cannot have as a neighbour.
    pub bad_neighbor: &'static str,
    /// `add_neighbor`: the table is full (`TooMany { what }`).
    pub neighbors: &'static str,
    /// `del_neighbor`: no such neighbour.
    pub not_a_neighbor: &'static str,
}

/// What the switch needs of an address family (implemented for [`V4`] and [`V6`]).
pub trait IpFamily: Family {
    /// The address (`Ipv4Addr`, `Ipv6Addr`).
    type Ip: NeighborAddr + Ord + Hash + Send + Sync + 'static + Into<IpAddr>;
    /// The address as an integer, host order (`u32`, `u128`): the key of the route map.
    type Int: Copy + Ord + Hash + Debug + Send + Sync + 'static;
    /// An address with a length (`Ipv4Prefix`, `Ipv6Prefix`).
    type Prefix: PrefixOps<Self>;
    /// The family's side of one interface (`IpInterface`, `Ip6Interface`).
    type Iface: IfaceOps<Self>;
    /// Address width in bits (the host route's length).
    const MAX_LEN: u8;
    /// The EtherType of the family's packets.
    const ETHERTYPE: u16;
    /// The words of its control errors.
    const TEXTS: Texts;

    /// The address as an integer.
    fn int(a: Self::Ip) -> Self::Int;
    /// Back from the integer.
    fn ip(i: Self::Int) -> Self::Ip;
    /// `i` with the bits after `len` cleared.
    fn network_of(i: Self::Int, len: u8) -> Self::Int;
    /// `i` with the bits after `len` set (the last address of the prefix).
    fn broadcast_of(i: Self::Int, len: u8) -> Self::Int;
    /// The `fib` crate's form of an address.
    fn fib_addr(i: Self::Int) -> <Self as Family>::Addr;
    /// A link-local address (IPv6 fe80::/10; never for IPv4).
    fn is_link_local(a: Self::Ip) -> bool;
    /// Refuses an address an interface cannot hold (naming the field, value and what is
    /// accepted), its length included.
    fn check_address(p: Self::Prefix) -> Result<(), SwitchError>;
    /// Whether `a` may be a neighbour on an interface `f` (in one of its subnets; IPv6: or
    /// link-local), leaving out what [`Self::never_neighbor`] refuses.
    fn on_link(f: &Self::Iface, a: Self::Ip) -> bool;
    /// An address that is never a neighbour whatever the subnets (IPv6 multicast).
    fn never_neighbor(a: Self::Ip) -> bool;
    /// Called when interface `idx` (MAC `mac`) gets its first address of the family (IPv6: its
    /// link-local address and the glean adjacency its link-local destinations use).
    fn first_address(_t: &mut Tables<Self>, _idx: SwIfIdx, _mac: EthernetAddress) {}
    /// Called when interface `idx` lost its last address of the family.
    fn last_address(_t: &mut Tables<Self>, _idx: SwIfIdx) {}
    /// The family's tables in the IP state.
    fn tables(ip: &IpState) -> &Tables<Self>;
    /// The same, writable.
    fn tables_mut(ip: &mut IpState) -> &mut Tables<Self>;
}

/// What generic code reads of a prefix.
pub trait PrefixOps<F: IpFamily>:
    Copy + Eq + Ord + Hash + Debug + Display + Send + Sync + 'static
{
    /// The address (host bits kept).
    fn addr(self) -> F::Ip;
    /// The length.
    fn plen(self) -> u8;
    /// `addr/len`.
    fn of(addr: F::Ip, len: u8) -> Self;
    /// The prefix with its host bits cleared.
    fn net(self) -> Self {
        Self::of(
            F::ip(F::network_of(F::int(self.addr()), self.plen())),
            self.plen(),
        )
    }
    /// Whether `a` is inside the prefix.
    fn holds(self, a: F::Ip) -> bool {
        F::network_of(F::int(a), self.plen()) == F::network_of(F::int(self.addr()), self.plen())
    }
    /// Whether the host bits are zero.
    fn is_net(self) -> bool {
        F::network_of(F::int(self.addr()), self.plen()) == F::int(self.addr())
    }
    /// The route map's key, `(address, length)` (the host bits as they are).
    fn route_key(self) -> (F::Int, u8) {
        (F::int(self.addr()), self.plen())
    }
}

/// What generic code reads and changes of one interface's side of a family.
pub trait IfaceOps<F: IpFamily>:
    Default + Clone + Debug + PartialEq + Send + Sync + 'static
{
    /// Its addresses (with their subnet lengths), in the order added.
    fn addrs(&self) -> &[F::Prefix];
    /// The same, writable.
    fn addrs_mut(&mut self) -> &mut Vec<F::Prefix>;
    /// Whether `a` is one of its addresses (IPv6: the link-local one included).
    fn is_mine(&self, a: F::Ip) -> bool;
    /// The interface's address whose subnet holds `a`, if any.
    fn addr_in(&self, a: F::Ip) -> Option<F::Ip> {
        self.addrs().iter().find(|p| p.holds(a)).map(|p| p.addr())
    }
    /// Routed for the family: it has an address.
    fn has_any(&self) -> bool {
        !self.addrs().is_empty()
    }
}

/// Table 0 of one family: the family's side of each interface, the routes, the data-plane FIB,
/// the adjacencies and the neighbours.
#[derive(Debug)]
pub struct Tables<F: IpFamily> {
    /// The family's side of each interface, by interface index (missing: no address).
    pub ifaces: Vec<F::Iface>,
    /// Table 0's routes by (network, length) (the control-plane copy `show ip fib` reads).
    pub routes: BTreeMap<(F::Int, u8), Route>,
    /// The data-plane FIB of table 0, changed with `routes` by the control calls.
    pub fib: Fib<F>,
    pub adjs: AdjTable<F::Ip>,
    pub neighbors: NeighborTable<F::Ip>,
    /// The switch second of the last neighbour aging step.
    pub last_age_s: u32,
    /// Routes with more than one path (while 0 the lookup computes no flow hash).
    multipath: usize,
    /// While a bulk change runs ([`Tables::defer_fib`]): the route keys changed in `routes` but
    /// not yet in `fib`.
    deferred: Option<Vec<(F::Int, u8)>>,
}

impl<F: IpFamily> Default for Tables<F> {
    fn default() -> Self {
        Tables {
            ifaces: Vec::new(),
            routes: BTreeMap::new(),
            fib: Fib::default(),
            adjs: AdjTable::default(),
            neighbors: NeighborTable::default(),
            last_age_s: 0,
            multipath: 0,
            deferred: None,
        }
    }
}

impl<F: IpFamily> Tables<F> {
    /// The family's side of interface `i` (`None`: no address of the family).
    #[inline]
    pub fn iface(&self, i: SwIfIdx) -> Option<&F::Iface> {
        self.ifaces.get(i as usize).filter(|f| f.has_any())
    }

    /// Whether `a` is an address of any interface (IPv6: link-local ones included).
    pub fn is_local(&self, a: F::Ip) -> bool {
        self.ifaces.iter().any(|f| f.is_mine(a))
    }

    /// Routes with more than one path (ECMP); while there is none, no lookup needs a flow hash.
    #[inline]
    pub fn multipath_routes(&self) -> usize {
        self.multipath
    }

    /// Adds or replaces route `key` (network, length) in `routes` and in the FIB (in place),
    /// releasing the adjacencies of the route it replaces. On an error nothing changes but the
    /// new route's adjacencies are released.
    pub fn set_route(&mut self, key: (F::Int, u8), route: Route) -> Result<(), FibError> {
        if let Some(changed) = self.deferred.as_mut() {
            // The FIB catches up at the end of the bulk change; the checks it would make here
            // are the control calls' own (a network prefix, 1–8 paths).
            changed.push(key);
        } else if let Err(e) = self.fib.add(key.0, key.1, &route.paths) {
            route.paths.iter().for_each(|&a| self.adjs.release(a));
            return Err(e);
        }
        self.multipath += usize::from(route.paths.len() > 1);
        if let Some(old) = self.routes.insert(key, route) {
            self.multipath -= usize::from(old.paths.len() > 1);
            old.paths.iter().for_each(|&a| self.adjs.release(a));
        }
        Ok(())
    }

    /// Removes route `key` from `routes` and the FIB, releasing its adjacencies.
    pub fn remove_route(&mut self, key: (F::Int, u8)) -> Option<Route> {
        let r = self.routes.remove(&key)?;
        // The FIB holds exactly the routes of `routes` (or will, after a bulk change).
        match self.deferred.as_mut() {
            Some(changed) => changed.push(key),
            None => {
                let _ = self.fib.remove(key.0, key.1);
            }
        }
        self.multipath -= usize::from(r.paths.len() > 1);
        r.paths.iter().for_each(|&a| self.adjs.release(a));
        Some(r)
    }

    /// Starts a bulk change: route changes go to `routes` only until [`Tables::settle_fib`].
    /// Adding routes one by one updates the trie each time, and an update rebuilds the part of
    /// the trie under the route's top-level entry, so N routes there cost O(N²) (a config
    /// with 20,000 /32 routes took 128 s to load, 200,000 did not finish in 7 minutes;
    /// docs/BENCHMARKS.md §11). Nothing forwards during a bulk change (it runs as one control call
    /// on the worker), so the FIB may lag `routes` until it ends.
    pub fn defer_fib(&mut self) {
        self.deferred.get_or_insert_with(Vec::new);
    }

    /// Ends a bulk change: a few changes go into the FIB one by one, many rebuild it once.
    pub fn settle_fib(&mut self) {
        let Some(changed) = self.deferred.take() else {
            return;
        };
        if changed.len() <= SETTLE_ONE_BY_ONE {
            for key in changed {
                match self.routes.get(&key) {
                    Some(r) => {
                        // The route passed the control checks; the FIB's own are the same.
                        let _ = self.fib.add(key.0, key.1, &r.paths);
                    }
                    None => {
                        let _ = self.fib.remove(key.0, key.1);
                    }
                }
            }
        } else {
            self.rebuild_fib();
        }
    }

    /// Rebuilds the data-plane FIB from `routes` in one go (after a bulk load, which may have
    /// changed `routes` directly).
    pub fn rebuild_fib(&mut self) {
        self.fib = Fib::build(
            self.routes
                .iter()
                .map(|(&(net, len), r)| (net, len, r.paths.as_slice())),
        );
        self.multipath = self.routes.values().filter(|r| r.paths.len() > 1).count();
    }
}

/// Route changes in one bulk change up to which [`Tables::settle_fib`] updates the FIB route by
/// route; above it, one full build is cheaper (an update rebuilds the part of the trie under the
/// route's top-level entry; a full build of 1M routes takes seconds).
const SETTLE_ONE_BY_ONE: usize = 64;

fn bad(field: &'static str, value: impl ToString, accepted: &'static str) -> SwitchError {
    SwitchError::InvalidValue {
        field,
        value: value.to_string(),
        accepted,
    }
}

impl IpFamily for V4 {
    type Ip = Ipv4Addr;
    type Int = u32;
    type Prefix = Ipv4Prefix;
    type Iface = IpInterface;
    const MAX_LEN: u8 = 32;
    const ETHERTYPE: u16 = 0x0800;
    const TEXTS: Texts = Texts {
        address_is_static:
            "an address whose subnet or /32 is not a static route (remove the route first)",
        not_an_address: "an address of the interface (see show ip interfaces)",
        not_a_network: "a prefix with its host bits zero (e.g. 10.1.0.0/16)",
        bad_next_hop: "an address in a connected subnet of an interface, not the switch's own",
        not_a_static_route: "a static route of the table (see show ip fib)",
        bad_neighbor: "an address in a subnet of the interface, not the switch's own",
        neighbors: "neighbors",
        not_a_neighbor: "a neighbour of the interface (see show ip neighbors)",
    };

    #[inline(always)]
    fn int(a: Ipv4Addr) -> u32 {
        u32::from(a)
    }
    #[inline(always)]
    fn ip(i: u32) -> Ipv4Addr {
        Ipv4Addr::from(i)
    }
    #[inline]
    fn network_of(i: u32, len: u8) -> u32 {
        i & Ipv4Prefix::mask(len)
    }
    #[inline]
    fn broadcast_of(i: u32, len: u8) -> u32 {
        i | !Ipv4Prefix::mask(len)
    }
    #[inline(always)]
    fn fib_addr(i: u32) -> Ipv4Addr {
        Ipv4Addr::from(i)
    }
    #[inline(always)]
    fn is_link_local(_: Ipv4Addr) -> bool {
        false
    }
    fn check_address(prefix: Ipv4Prefix) -> Result<(), SwitchError> {
        let a = prefix.addr;
        if a.is_unspecified() || a.is_multicast() || a.is_broadcast() || a.is_loopback() {
            return Err(bad(
                "address",
                prefix,
                "a unicast address (not 0.0.0.0, 127/8, multicast or broadcast)",
            ));
        }
        if prefix.len == 0 || prefix.len > 32 {
            return Err(bad("prefix length", prefix.len, "1 to 32"));
        }
        Ok(())
    }
    fn on_link(f: &IpInterface, a: Ipv4Addr) -> bool {
        f.addr_for(a).is_some()
    }
    fn never_neighbor(_: Ipv4Addr) -> bool {
        false
    }
    #[inline(always)]
    fn tables(ip: &IpState) -> &Tables<V4> {
        &ip.v4
    }
    #[inline(always)]
    fn tables_mut(ip: &mut IpState) -> &mut Tables<V4> {
        &mut ip.v4
    }
}

impl IpFamily for V6 {
    type Ip = Ipv6Addr;
    type Int = u128;
    type Prefix = Ipv6Prefix;
    type Iface = Ip6Interface;
    const MAX_LEN: u8 = 128;
    const ETHERTYPE: u16 = 0x86dd;
    const TEXTS: Texts = Texts {
        address_is_static:
            "an address whose subnet or /128 is not a static route (remove the route first)",
        not_an_address: "an IPv6 address of the interface (see show ip6 interfaces)",
        not_a_network: "a prefix with its host bits zero (e.g. 2001:db8::/32)",
        bad_next_hop: "an address in a connected IPv6 subnet of an interface, not the switch's own",
        not_a_static_route: "a static route of the table (see show ip6 fib)",
        bad_neighbor:
            "a link-local address or one in an IPv6 subnet of the interface, not the switch's own",
        neighbors: "IPv6 neighbors",
        not_a_neighbor: "an IPv6 neighbour of the interface (see show ip6 neighbors)",
    };

    #[inline(always)]
    fn int(a: Ipv6Addr) -> u128 {
        u128::from(a)
    }
    #[inline(always)]
    fn ip(i: u128) -> Ipv6Addr {
        Ipv6Addr::from(i)
    }
    #[inline]
    fn network_of(i: u128, len: u8) -> u128 {
        i & Ipv6Prefix::mask(len)
    }
    #[inline]
    fn broadcast_of(i: u128, len: u8) -> u128 {
        i | !Ipv6Prefix::mask(len)
    }
    #[inline(always)]
    fn fib_addr(i: u128) -> Ipv6Addr {
        Ipv6Addr::from(i)
    }
    #[inline]
    fn is_link_local(a: Ipv6Addr) -> bool {
        is_link_local(a)
    }
    fn check_address(prefix: Ipv6Prefix) -> Result<(), SwitchError> {
        let a = prefix.addr;
        if a.is_unspecified() || a.is_multicast() || a.is_loopback() || is_link_local(a) {
            return Err(bad(
                "address",
                prefix,
                "a global or unique-local unicast IPv6 address (not ::, ::1, ff00::/8 or the \
                 automatic fe80::/10)",
            ));
        }
        if prefix.len == 0 || prefix.len > 128 {
            return Err(bad("prefix length", prefix.len, "1 to 128"));
        }
        Ok(())
    }
    fn on_link(f: &Ip6Interface, a: Ipv6Addr) -> bool {
        is_link_local(a) || f.addr_for(a).is_some()
    }
    fn never_neighbor(a: Ipv6Addr) -> bool {
        a.is_multicast()
    }
    fn first_address(t: &mut Tables<V6>, idx: SwIfIdx, mac: EthernetAddress) {
        if let Some(f) = t.ifaces.get_mut(idx as usize) {
            f.link_local = Some(link_local_from_mac(mac));
        }
        // Held while the interface has IPv6: the adjacency of its link-local destinations.
        t.adjs.acquire(Adjacency::Glean { iface: idx });
    }
    fn last_address(t: &mut Tables<V6>, idx: SwIfIdx) {
        if let Some(f) = t.ifaces.get_mut(idx as usize) {
            f.link_local = None;
        }
        if let Some(g) = t.adjs.find(Adjacency::Glean { iface: idx }) {
            t.adjs.release(g);
        }
    }
    #[inline(always)]
    fn tables(ip: &IpState) -> &Tables<V6> {
        &ip.v6
    }
    #[inline(always)]
    fn tables_mut(ip: &mut IpState) -> &mut Tables<V6> {
        &mut ip.v6
    }
}

impl PrefixOps<V4> for Ipv4Prefix {
    #[inline]
    fn addr(self) -> Ipv4Addr {
        self.addr
    }
    #[inline]
    fn plen(self) -> u8 {
        self.len
    }
    #[inline]
    fn of(addr: Ipv4Addr, len: u8) -> Self {
        Ipv4Prefix { addr, len }
    }
}

impl PrefixOps<V6> for Ipv6Prefix {
    #[inline]
    fn addr(self) -> Ipv6Addr {
        self.addr
    }
    #[inline]
    fn plen(self) -> u8 {
        self.len
    }
    #[inline]
    fn of(addr: Ipv6Addr, len: u8) -> Self {
        Ipv6Prefix { addr, len }
    }
}

impl IfaceOps<V4> for IpInterface {
    #[inline]
    fn addrs(&self) -> &[Ipv4Prefix] {
        &self.addrs
    }
    fn addrs_mut(&mut self) -> &mut Vec<Ipv4Prefix> {
        &mut self.addrs
    }
    #[inline]
    fn is_mine(&self, a: Ipv4Addr) -> bool {
        self.has_addr(a)
    }
}

impl IfaceOps<V6> for Ip6Interface {
    #[inline]
    fn addrs(&self) -> &[Ipv6Prefix] {
        &self.addrs
    }
    fn addrs_mut(&mut self) -> &mut Vec<Ipv6Prefix> {
        &mut self.addrs
    }
    #[inline]
    fn is_mine(&self, a: Ipv6Addr) -> bool {
        self.has_addr(a)
    }
}
