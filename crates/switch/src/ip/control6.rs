//! The IPv6 half of the IP feature's control API: methods of [`Switch`] on the IPv6 tables —
//! interface addresses (the link-local address, the connected and local routes follow), static
//! routes (ECMP), static neighbours, `show ip6 fib`, `show ip6 neighbors` and
//! `show ip6 interfaces` (paged like their IPv4 twins in [`super::control`]). Every mutating call
//! checks everything first and changes nothing when it returns an error. Table 0 is the only
//! table. The logic is the family-generic one of [`super::control`].

use std::net::Ipv6Addr;

use serde::{Deserialize, Serialize};
use vecswitch_wire::EthernetAddress;

use super::control::{FibEntry, FibInfo, NeighborInfo, NeighborsInfo};
use super::family::V6;
use super::ip6::Ipv6Prefix;
use crate::error::SwitchError;
use crate::interface::SwIfIdx;
use crate::runtime::Switch;

/// One route of `show ip6 fib`.
pub type Fib6Entry = FibEntry<Ipv6Prefix, Ipv6Addr>;

/// `show ip6 fib`: how many routes match, and one page of them in prefix order.
pub type Fib6Info = FibInfo<Ipv6Prefix, Ipv6Addr>;

/// One neighbour of `show ip6 neighbors`.
pub type Neighbor6Info = NeighborInfo<Ipv6Addr>;

/// `show ip6 neighbors`: counts, and one page of entries.
pub type Neighbors6Info = NeighborsInfo<Ipv6Addr>;

/// One interface's IPv6 addresses in `show ip6 interfaces`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ip6InterfaceInfo {
    pub interface: String,
    pub link_local: Option<Ipv6Addr>,
    pub addresses: Vec<Ipv6Prefix>,
}

impl Switch {
    // ----- addresses -----------------------------------------------------------------------------

    /// Adds IPv6 address `addr/len` to interface `iface`, which becomes routed for IPv6: with the
    /// first address its link-local address (fe80::EUI-64 of its MAC, RFC 4291 §2.5.1) is set;
    /// each address adds a local route (/128 to the switch) and a connected route (the subnet,
    /// glean). The interface must have no L2 service. Link-local addresses are not configured:
    /// they come with the interface.
    pub fn ip6_add_address(&mut self, iface: &str, prefix: Ipv6Prefix) -> Result<(), SwitchError> {
        self.add_address_family::<V6>(iface, prefix)
    }

    /// Removes IPv6 address `addr/len` from interface `iface` with its local route, and its
    /// connected route if no other address of the interface is in that subnet (refused while a
    /// static route goes through a next hop there). Neighbours no longer on-link go, their pending
    /// packets freed; with the last address the link-local address and every neighbour go.
    pub fn ip6_del_address(&mut self, iface: &str, prefix: Ipv6Prefix) -> Result<(), SwitchError> {
        self.del_address_family::<V6>(iface, prefix)
    }

    /// `show ip6 interfaces`: the IPv6 addresses of every interface routed for IPv6.
    pub fn show_ip6_interfaces(&self) -> Vec<Ip6InterfaceInfo> {
        self.state
            .ip
            .v6
            .ifaces
            .iter()
            .enumerate()
            .filter(|(_, f)| f.routed())
            .map(|(i, f)| Ip6InterfaceInfo {
                interface: self.iface_name(i as SwIfIdx),
                link_local: f.link_local,
                addresses: f.addrs.clone(),
            })
            .collect()
    }

    // ----- routes --------------------------------------------------------------------------------

    /// Adds (or replaces) static IPv6 route `prefix` in `table` over `next_hops` (1 to 8, ECMP),
    /// each in a connected subnet of some interface. The FIB changes in place.
    pub fn ip6_add_route(
        &mut self,
        table: u32,
        prefix: Ipv6Prefix,
        next_hops: &[Ipv6Addr],
    ) -> Result<(), SwitchError> {
        self.add_route_family::<V6>(table, prefix, next_hops)
    }

    /// Adds (or replaces) many static IPv6 routes at once: all are checked first (nothing changes
    /// on an error), then the FIB is compiled once.
    pub fn ip6_add_routes(
        &mut self,
        table: u32,
        routes: &[(Ipv6Prefix, Vec<Ipv6Addr>)],
    ) -> Result<(), SwitchError> {
        self.add_routes_family::<V6>(table, routes)
    }

    /// Removes static IPv6 route `prefix` from `table`.
    pub fn ip6_del_route(&mut self, table: u32, prefix: Ipv6Prefix) -> Result<(), SwitchError> {
        self.del_route_family::<V6>(table, prefix)
    }

    /// `show ip6 fib [prefix]`: routes of `table` in prefix order, `limit` (≤ 10,000) from
    /// `offset`. With a filter `addr/len`, the routes inside that prefix; with `addr/128` that is
    /// not a route, the route a packet to that address takes (longest match).
    pub fn show_ip6_fib(
        &self,
        table: u32,
        filter: Option<Ipv6Prefix>,
        offset: usize,
        limit: usize,
    ) -> Result<Fib6Info, SwitchError> {
        self.show_fib_family::<V6>(table, filter, offset, limit)
    }

    // ----- neighbours ----------------------------------------------------------------------------

    /// Adds (or makes static) IPv6 neighbour `ip` at `mac` on `iface`; `ip` must be link-local or
    /// in one of the interface's subnets. Packets waiting for an incomplete entry are freed and
    /// counted (`pending_discarded` of `show ip neighbors`).
    pub fn ip6_add_neighbor(
        &mut self,
        iface: &str,
        ip: Ipv6Addr,
        mac: EthernetAddress,
    ) -> Result<(), SwitchError> {
        self.add_neighbor_family::<V6>(iface, ip, mac)
    }

    /// Removes IPv6 neighbour `ip` on `iface` (static or learned).
    pub fn ip6_del_neighbor(&mut self, iface: &str, ip: Ipv6Addr) -> Result<(), SwitchError> {
        self.del_neighbor_family::<V6>(iface, ip)
    }

    /// `show ip6 neighbors`: counts, then `limit` (≤ 10,000) entries from `offset` (the count of
    /// waiting packets freed by control calls is `show ip neighbors`'s).
    pub fn show_ip6_neighbors(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Neighbors6Info, SwitchError> {
        let mut n = self.show_neighbors_family::<V6>(offset, limit)?;
        n.pending_discarded = None;
        Ok(n)
    }
}
