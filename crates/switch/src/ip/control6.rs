//! The IPv6 half of the IP feature's control API: methods of [`Switch`] on the IPv6 tables —
//! interface addresses (the link-local address, the connected and local routes follow), static
//! routes (ECMP), static neighbours, `show ip6 fib`, `show ip6 neighbors` and
//! `show ip6 interfaces` (paged like their IPv4 twins in [`super::control`]). Every mutating call
//! checks everything first and changes nothing when it returns an error. Table 0 is the only
//! table.

use std::net::Ipv6Addr;

use serde::{Deserialize, Serialize};
use vecswitch_wire::EthernetAddress;

use super::control::{bad, check_table, fib_error, PathInfo, MAX_PAGE};
use super::ip6::{is_link_local, link_local_from_mac, Ipv6Prefix};
use super::neighbor::Neighbor;
use super::{AdjIdx, Adjacency, Route, RouteSource, MAX_PATHS};
use crate::error::SwitchError;
use crate::interface::{Service, SwIfIdx};
use crate::runtime::Switch;

/// One route of `show ip6 fib`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fib6Entry {
    pub prefix: Ipv6Prefix,
    pub source: RouteSource,
    pub paths: Vec<PathInfo<Ipv6Addr>>,
}

/// `show ip6 fib`: how many routes match, and one page of them in prefix order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fib6Info {
    pub table: u32,
    pub routes: usize,
    pub matched: usize,
    pub offset: usize,
    pub entries: Vec<Fib6Entry>,
    pub adjacencies: usize,
    pub fib_memory_bytes: usize,
}

/// One neighbour of `show ip6 neighbors`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbor6Info {
    pub interface: String,
    pub ip: Ipv6Addr,
    /// `None` while incomplete.
    pub mac: Option<String>,
    #[serde(rename = "static")]
    pub is_static: bool,
    pub age_s: u32,
    pub pending: usize,
}

/// `show ip6 neighbors`: counts, and one page of entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbors6Info {
    pub total: usize,
    pub statics: usize,
    pub learned: usize,
    pub incomplete: usize,
    pub pending: usize,
    pub limit: u32,
    pub offset: usize,
    pub entries: Vec<Neighbor6Info>,
}

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
        let idx = self.iface_idx(iface)?;
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
        if self.iface(idx).service != Service::None {
            return Err(SwitchError::PortHasService {
                port: iface.to_string(),
                service: self.describe_service(self.iface(idx).service),
            });
        }
        let net = prefix.network();
        for (i, f) in self.state.ip.v6.ifaces.iter().enumerate() {
            for p in &f.addrs {
                if p.addr == a {
                    return Err(bad(
                        "address",
                        prefix,
                        "an address not already on an interface",
                    ));
                }
                let other = p.network();
                let overlap = other.contains(net.addr) || net.contains(other.addr);
                if i != idx as usize && overlap {
                    return Err(bad(
                        "address",
                        prefix,
                        "a subnet that does not overlap another interface's",
                    ));
                }
            }
        }
        let key_local = (u128::from(a), 128u8);
        let key_net = net.key();
        let v6 = &self.state.ip.v6;
        for k in [key_local, key_net] {
            if matches!(v6.routes.get(&k), Some(r) if r.source == RouteSource::Static) {
                return Err(bad(
                    "address",
                    prefix,
                    "an address whose subnet or /128 is not a static route (remove the route first)",
                ));
            }
        }
        let mac = self.iface(idx).mac;
        let v6 = &mut self.state.ip.v6;
        if v6.ifaces.len() <= idx as usize {
            v6.ifaces.resize_with(idx as usize + 1, Default::default);
        }
        let f = &mut v6.ifaces[idx as usize];
        if f.addrs.is_empty() {
            f.link_local = Some(link_local_from_mac(mac));
            // Held while the interface has IPv6: the adjacency of its link-local destinations.
            v6.adjs.acquire(Adjacency::Glean { iface: idx });
        }
        v6.ifaces[idx as usize].addrs.push(prefix);
        if !v6.routes.contains_key(&key_net) && net.len < 128 {
            let adj = v6.adjs.acquire(Adjacency::Glean { iface: idx });
            let r = Route {
                source: RouteSource::Connected,
                paths: vec![adj],
            };
            v6.set_route(key_net, r).map_err(fib_error)?;
        }
        let adj = v6.adjs.acquire(Adjacency::Local);
        let r = Route {
            source: RouteSource::Local,
            paths: vec![adj],
        };
        v6.set_route(key_local, r).map_err(fib_error)?;
        Ok(())
    }

    /// Removes IPv6 address `addr/len` from interface `iface` with its local route, and its
    /// connected route if no other address of the interface is in that subnet (refused while a
    /// static route goes through a next hop there). Neighbours no longer on-link go, their pending
    /// packets freed; with the last address the link-local address and every neighbour go.
    pub fn ip6_del_address(&mut self, iface: &str, prefix: Ipv6Prefix) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        let v6 = &self.state.ip.v6;
        let Some(pos) = v6
            .ifaces
            .get(idx as usize)
            .and_then(|f| f.addrs.iter().position(|&p| p == prefix))
        else {
            return Err(bad(
                "address",
                prefix,
                "an IPv6 address of the interface (see show ip6 interfaces)",
            ));
        };
        let net = prefix.network();
        let shared = v6.ifaces[idx as usize]
            .addrs
            .iter()
            .enumerate()
            .any(|(i, p)| i != pos && p.network() == net);
        if !shared {
            let used = v6.routes.values().any(|r| {
                r.source == RouteSource::Static
                    && r.paths.iter().any(|&a| {
                        matches!(v6.adjs.get(a), Some(Adjacency::Neighbor { iface, nh }) if iface == idx && net.contains(nh))
                    })
            });
            if used {
                return Err(bad(
                    "address",
                    prefix,
                    "an address whose subnet no static route's next hop is in (remove those routes first)",
                ));
            }
        }
        let v6 = &mut self.state.ip.v6;
        v6.ifaces[idx as usize].addrs.remove(pos);
        v6.remove_route((u128::from(prefix.addr), 128));
        if !shared && net.len < 128 {
            v6.remove_route(net.key());
        }
        let last = v6.ifaces[idx as usize].addrs.is_empty();
        if last {
            v6.ifaces[idx as usize].link_local = None;
            if let Some(g) = v6.adjs.find(Adjacency::Glean { iface: idx }) {
                v6.adjs.release(g);
            }
        }
        let f = &v6.ifaces[idx as usize];
        let gone: Vec<u32> = v6
            .neighbors
            .iter()
            .filter(|n| {
                n.iface == idx && (last || (!is_link_local(n.ip) && f.addr_for(n.ip).is_none()))
            })
            .filter_map(|n| v6.neighbors.find(n.iface, n.ip))
            .collect();
        for i in gone {
            if let Some(n) = v6.neighbors.remove(i) {
                self.state.ip.pending_discarded += n.pending.len() as u64;
                self.pool.free_bulk(&n.pending);
            }
        }
        Ok(())
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

    /// The adjacencies of static route `prefix` over `next_hops`, checked (no change made).
    fn static_route6(
        &self,
        table: u32,
        prefix: Ipv6Prefix,
        next_hops: &[Ipv6Addr],
    ) -> Result<Vec<Adjacency<Ipv6Addr>>, SwitchError> {
        check_table(table)?;
        if !prefix.is_network() {
            return Err(bad(
                "prefix",
                prefix,
                "a prefix with its host bits zero (e.g. 2001:db8::/32)",
            ));
        }
        if next_hops.is_empty() || next_hops.len() > MAX_PATHS {
            return Err(bad("next hops", next_hops.len(), "1 to 8 next hops (ECMP)"));
        }
        if matches!(self.state.ip.v6.routes.get(&prefix.key()), Some(r) if r.source != RouteSource::Static)
        {
            return Err(bad(
                "prefix",
                prefix,
                "a prefix that is not an interface's connected or local route",
            ));
        }
        next_hops
            .iter()
            .map(|&nh| {
                let iface = self
                    .state
                    .ip
                    .v6
                    .ifaces
                    .iter()
                    .position(|f| f.addr_for(nh).is_some() && !f.has_addr(nh));
                match iface {
                    Some(i) => Ok(Adjacency::Neighbor {
                        iface: i as SwIfIdx,
                        nh,
                    }),
                    None => Err(bad(
                        "next hop",
                        nh,
                        "an address in a connected IPv6 subnet of an interface, not the switch's own",
                    )),
                }
            })
            .collect()
    }

    /// Adds (or replaces) static IPv6 route `prefix` in `table` over `next_hops` (1 to 8, ECMP),
    /// each in a connected subnet of some interface. The FIB changes in place.
    pub fn ip6_add_route(
        &mut self,
        table: u32,
        prefix: Ipv6Prefix,
        next_hops: &[Ipv6Addr],
    ) -> Result<(), SwitchError> {
        let adjs = self.static_route6(table, prefix, next_hops)?;
        let v6 = &mut self.state.ip.v6;
        let paths: Vec<AdjIdx> = adjs.into_iter().map(|a| v6.adjs.acquire(a)).collect();
        let r = Route {
            source: RouteSource::Static,
            paths,
        };
        v6.set_route(prefix.key(), r).map_err(fib_error)
    }

    /// Adds (or replaces) many static IPv6 routes at once: all are checked first (nothing changes
    /// on an error), then the FIB is compiled once.
    pub fn ip6_add_routes(
        &mut self,
        table: u32,
        routes: &[(Ipv6Prefix, Vec<Ipv6Addr>)],
    ) -> Result<(), SwitchError> {
        let mut checked = Vec::with_capacity(routes.len());
        for (prefix, nhs) in routes {
            checked.push((*prefix, self.static_route6(table, *prefix, nhs)?));
        }
        let v6 = &mut self.state.ip.v6;
        for (prefix, adjs) in checked {
            let paths: Vec<AdjIdx> = adjs.into_iter().map(|a| v6.adjs.acquire(a)).collect();
            let r = Route {
                source: RouteSource::Static,
                paths,
            };
            if let Some(old) = v6.routes.insert(prefix.key(), r) {
                old.paths.iter().for_each(|&a| v6.adjs.release(a));
            }
        }
        v6.rebuild_fib();
        Ok(())
    }

    /// Removes static IPv6 route `prefix` from `table`.
    pub fn ip6_del_route(&mut self, table: u32, prefix: Ipv6Prefix) -> Result<(), SwitchError> {
        check_table(table)?;
        let key = prefix.key();
        let v6 = &mut self.state.ip.v6;
        match v6.routes.get(&key) {
            Some(r) if r.source == RouteSource::Static && prefix.is_network() => {}
            _ => {
                return Err(bad(
                    "prefix",
                    prefix,
                    "a static route of the table (see show ip6 fib)",
                ))
            }
        }
        v6.remove_route(key);
        Ok(())
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
        check_table(table)?;
        if limit > MAX_PAGE {
            return Err(bad("limit", limit, "at most 10000 entries per page"));
        }
        let v6 = &self.state.ip.v6;
        let entry = |(&(net, len), r): (&(u128, u8), &Route)| Fib6Entry {
            prefix: Ipv6Prefix {
                addr: Ipv6Addr::from(net),
                len,
            },
            source: r.source,
            paths: r
                .paths
                .iter()
                .filter_map(|&a| v6.adjs.get(a))
                .map(|a| PathInfo {
                    adjacency: a,
                    interface: match a {
                        Adjacency::Glean { iface } | Adjacency::Neighbor { iface, .. } => {
                            Some(self.iface_name(iface))
                        }
                        _ => None,
                    },
                })
                .collect(),
        };
        let (matched, entries) = match filter {
            None => (
                v6.routes.len(),
                v6.routes
                    .iter()
                    .skip(offset)
                    .take(limit)
                    .map(entry)
                    .collect(),
            ),
            Some(p) if p.len == 128 && !v6.routes.contains_key(&p.key()) => {
                let a = u128::from(p.addr);
                let best = (0..=128u8).rev().find_map(|l| {
                    let k = (a & Ipv6Prefix::mask(l), l);
                    v6.routes.get_key_value(&k)
                });
                let v: Vec<Fib6Entry> = best.into_iter().map(entry).collect();
                (v.len(), v.into_iter().skip(offset).take(limit).collect())
            }
            Some(p) => {
                let (lo, plen) = p.key();
                let hi = lo | !Ipv6Prefix::mask(plen);
                let inside = v6
                    .routes
                    .range((lo, 0)..=(hi, 128))
                    .filter(|(&(_, l), _)| l >= plen);
                let matched = inside.clone().count();
                (
                    matched,
                    inside.skip(offset).take(limit).map(entry).collect(),
                )
            }
        };
        Ok(Fib6Info {
            table,
            routes: v6.routes.len(),
            matched,
            offset,
            entries,
            adjacencies: v6.adjs.len(),
            fib_memory_bytes: v6.fib.memory_bytes(),
        })
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
        let idx = self.iface_idx(iface)?;
        if !mac.is_unicast() {
            return Err(SwitchError::GroupMac {
                mac: mac.to_string(),
            });
        }
        let v6 = &self.state.ip.v6;
        let on_link = v6
            .iface(idx)
            .is_some_and(|f| is_link_local(ip) || f.addr_for(ip).is_some());
        if !on_link || v6.is_local(ip) || ip.is_multicast() {
            return Err(bad(
                "neighbor address",
                ip,
                "a link-local address or one in an IPv6 subnet of the interface, not the switch's own",
            ));
        }
        let now = self.state.now_s;
        let limit = self.state.ip.settings.neighbor_limit;
        let st = &mut self.state.ip;
        match st.v6.neighbors.find(idx, ip) {
            Some(i) => {
                let Some(n) = st.v6.neighbors.get_mut(i) else {
                    return Ok(());
                };
                n.mac = Some(mac);
                n.is_static = true;
                n.updated_s = now;
                let p = std::mem::take(&mut n.pending);
                st.pending_discarded += p.len() as u64;
                self.pool.free_bulk(&p);
            }
            None => {
                let n = Neighbor {
                    iface: idx,
                    ip,
                    mac: Some(mac),
                    is_static: true,
                    updated_s: now,
                    requests: 0,
                    last_request_s: now,
                    pending: Vec::new(),
                };
                st.v6
                    .neighbors
                    .insert(n, limit)
                    .map_err(|_| SwitchError::TooMany {
                        what: "IPv6 neighbors",
                        max: limit as usize,
                    })?;
            }
        }
        Ok(())
    }

    /// Removes IPv6 neighbour `ip` on `iface` (static or learned).
    pub fn ip6_del_neighbor(&mut self, iface: &str, ip: Ipv6Addr) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        let st = &mut self.state.ip;
        let Some(i) = st.v6.neighbors.find(idx, ip) else {
            return Err(bad(
                "neighbor address",
                ip,
                "an IPv6 neighbour of the interface (see show ip6 neighbors)",
            ));
        };
        if let Some(n) = st.v6.neighbors.remove(i) {
            st.pending_discarded += n.pending.len() as u64;
            self.pool.free_bulk(&n.pending);
        }
        Ok(())
    }

    /// `show ip6 neighbors`: counts, then `limit` (≤ 10,000) entries from `offset`.
    pub fn show_ip6_neighbors(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Neighbors6Info, SwitchError> {
        if limit > MAX_PAGE {
            return Err(bad("limit", limit, "at most 10000 entries per page"));
        }
        let t = &self.state.ip.v6.neighbors;
        let now = self.state.now_s;
        let (mut statics, mut learned, mut incomplete, mut pending) = (0, 0, 0, 0);
        for n in t.iter() {
            pending += n.pending.len();
            match (n.is_static, n.mac) {
                (true, _) => statics += 1,
                (false, Some(_)) => learned += 1,
                (false, None) => incomplete += 1,
            }
        }
        Ok(Neighbors6Info {
            total: t.len(),
            statics,
            learned,
            incomplete,
            pending,
            limit: self.state.ip.settings.neighbor_limit,
            offset,
            entries: t
                .iter()
                .skip(offset)
                .take(limit)
                .map(|n| Neighbor6Info {
                    interface: self.iface_name(n.iface),
                    ip: n.ip,
                    mac: n.mac.map(|m| m.to_string()),
                    is_static: n.is_static,
                    age_s: now.saturating_sub(n.updated_s),
                    pending: n.pending.len(),
                })
                .collect(),
        })
    }
}
