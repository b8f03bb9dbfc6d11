//! The IP feature's control API: methods of [`Switch`] on the IP tables — interface addresses
//! (connected and local routes follow), static routes (ECMP), static neighbours, settings,
//! `show ip fib` and `show ip neighbors` (both paged: a count and one page of entries, never a
//! million lines). Every mutating call checks everything first and changes nothing when it
//! returns an error. Table 0 is the only table: a `table` argument other than 0 is refused.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use vecswitch_wire::EthernetAddress;

use super::neighbor::Neighbor;
use super::{AdjIdx, Adjacency, IpSettings, Ipv4Prefix, Route, RouteSource, MAX_PATHS};
use crate::error::SwitchError;
use crate::interface::{Service, SwIfIdx};
use crate::runtime::Switch;

/// Most entries in one page of `show ip fib` / `show ip neighbors`.
pub const MAX_PAGE: usize = 10_000;

/// One path of a route in `show ip fib` (`show ip6 fib`: `A` is `Ipv6Addr`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathInfo<A = Ipv4Addr> {
    #[serde(flatten)]
    pub adjacency: Adjacency<A>,
    /// The interface's name (none for `local` and `drop`).
    pub interface: Option<String>,
}

/// One route of `show ip fib`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FibEntry {
    pub prefix: Ipv4Prefix,
    pub source: RouteSource,
    pub paths: Vec<PathInfo>,
}

/// `show ip fib`: how many routes match, and one page of them in prefix order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FibInfo {
    pub table: u32,
    /// Routes in the table.
    pub routes: usize,
    /// Routes matching the filter.
    pub matched: usize,
    /// Index of the first entry shown among the matches.
    pub offset: usize,
    pub entries: Vec<FibEntry>,
    /// Adjacencies in use.
    pub adjacencies: usize,
    /// Bytes of the data-plane FIB.
    pub fib_memory_bytes: usize,
}

/// One neighbour of `show ip neighbors`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeighborInfo {
    pub interface: String,
    pub ip: Ipv4Addr,
    /// `None` while incomplete.
    pub mac: Option<String>,
    #[serde(rename = "static")]
    pub is_static: bool,
    /// Seconds since the last confirmation.
    pub age_s: u32,
    /// Packets waiting for the MAC.
    pub pending: usize,
}

/// `show ip neighbors`: counts, and one page of entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeighborsInfo {
    pub total: usize,
    pub statics: usize,
    pub learned: usize,
    pub incomplete: usize,
    pub pending: usize,
    pub limit: u32,
    /// Waiting packets freed by control calls (a neighbour removed or made static).
    pub pending_discarded: u64,
    pub offset: usize,
    pub entries: Vec<NeighborInfo>,
}

/// One interface's addresses in `show ip interfaces`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpInterfaceInfo {
    pub interface: String,
    pub addresses: Vec<Ipv4Prefix>,
}

pub(super) fn check_table(table: u32) -> Result<(), SwitchError> {
    if table == 0 {
        Ok(())
    } else {
        Err(SwitchError::InvalidValue {
            field: "table",
            value: table.to_string(),
            accepted: "0 (the only table until VRFs)",
        })
    }
}

/// A route the FIB refused although the control call checked it (a bug, reported as such).
pub(super) fn fib_error(e: vecswitch_fib::FibError) -> SwitchError {
    SwitchError::InvalidValue {
        field: "route",
        value: e.to_string(),
        accepted: "a route the FIB accepts",
    }
}

pub(super) fn bad(
    field: &'static str,
    value: impl ToString,
    accepted: &'static str,
) -> SwitchError {
    SwitchError::InvalidValue {
        field,
        value: value.to_string(),
        accepted,
    }
}

impl Switch {
    // ----- addresses -----------------------------------------------------------------------------

    /// Adds IPv4 address `addr/len` to interface `iface`, which becomes routed: its local route
    /// (/32 to the switch) and its connected route (the subnet, glean) are added. The interface
    /// must have no L2 service.
    pub fn ip_add_address(&mut self, iface: &str, prefix: Ipv4Prefix) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
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
        if self.iface(idx).service != Service::None {
            return Err(SwitchError::PortHasService {
                port: iface.to_string(),
                service: self.describe_service(self.iface(idx).service),
            });
        }
        let net = prefix.network();
        for (i, f) in self.state.ip.ifaces.iter().enumerate() {
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
        let key_local = (u32::from(a), 32u8);
        let key_net = (u32::from(net.addr), net.len);
        for k in [key_local, key_net] {
            if matches!(self.state.ip.routes.get(&k), Some(r) if r.source == RouteSource::Static) {
                return Err(bad(
                    "address",
                    prefix,
                    "an address whose subnet or /32 is not a static route (remove the route first)",
                ));
            }
        }
        let ip = &mut self.state.ip;
        if ip.ifaces.len() <= idx as usize {
            ip.ifaces.resize_with(idx as usize + 1, Default::default);
        }
        ip.ifaces[idx as usize].addrs.push(prefix);
        if !ip.routes.contains_key(&key_net) && net.len < 32 {
            let adj = ip.adjs.acquire(Adjacency::Glean { iface: idx });
            let r = Route {
                source: RouteSource::Connected,
                paths: vec![adj],
            };
            ip.set_route(key_net, r).map_err(fib_error)?;
        }
        let adj = ip.adjs.acquire(Adjacency::Local);
        let r = Route {
            source: RouteSource::Local,
            paths: vec![adj],
        };
        ip.set_route(key_local, r).map_err(fib_error)?;
        Ok(())
    }

    /// Removes address `addr/len` from interface `iface` with its local route, and its connected
    /// route if no other address of the interface is in that subnet (refused while a static route
    /// goes through a next hop there). Neighbours no longer in a subnet of the interface go, their
    /// pending packets freed.
    pub fn ip_del_address(&mut self, iface: &str, prefix: Ipv4Prefix) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        let ip = &self.state.ip;
        let Some(pos) = ip
            .ifaces
            .get(idx as usize)
            .and_then(|f| f.addrs.iter().position(|&p| p == prefix))
        else {
            return Err(bad(
                "address",
                prefix,
                "an address of the interface (see show ip interfaces)",
            ));
        };
        let net = prefix.network();
        let shared = ip.ifaces[idx as usize]
            .addrs
            .iter()
            .enumerate()
            .any(|(i, p)| i != pos && p.network() == net);
        if !shared {
            let used = ip.routes.iter().any(|(_, r)| {
                r.source == RouteSource::Static
                    && r.paths.iter().any(|&a| {
                        matches!(ip.adjs.get(a), Some(Adjacency::Neighbor { iface, nh }) if iface == idx && net.contains(nh))
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
        let ip = &mut self.state.ip;
        ip.ifaces[idx as usize].addrs.remove(pos);
        ip.remove_route((u32::from(prefix.addr), 32));
        if !shared && net.len < 32 {
            ip.remove_route((u32::from(net.addr), net.len));
        }
        let still: Vec<u32> = ip
            .neighbors
            .iter()
            .filter(|n| n.iface == idx && ip.ifaces[idx as usize].addr_for(n.ip).is_none())
            .filter_map(|n| ip.neighbors.find(n.iface, n.ip))
            .collect();
        for i in still {
            if let Some(n) = ip.neighbors.remove(i) {
                ip.pending_discarded += n.pending.len() as u64;
                self.pool.free_bulk(&n.pending);
            }
        }
        Ok(())
    }

    /// Removes every address (IPv4 and IPv6), and so every connected route and neighbour, of
    /// interface `iface`; refused while a static route goes through it.
    pub fn ip_clear_interface(&mut self, iface: &str) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        let addrs = self
            .state
            .ip
            .ifaces
            .get(idx as usize)
            .map(|f| f.addrs.clone())
            .unwrap_or_default();
        for p in addrs.into_iter().rev() {
            self.ip_del_address(iface, p)?;
        }
        let addrs6 = self
            .state
            .ip
            .v6
            .ifaces
            .get(idx as usize)
            .map(|f| f.addrs.clone())
            .unwrap_or_default();
        for p in addrs6.into_iter().rev() {
            self.ip6_del_address(iface, p)?;
        }
        Ok(())
    }

    /// Forgets everything the IP feature holds about interface `idx` (called by `delete_port`
    /// before the interface goes): static routes lose their paths through it (a route left with
    /// none is removed), then its IPv4 and IPv6 addresses go with their connected and local
    /// routes, its neighbours and their waiting packets. Returns the static routes removed.
    pub(crate) fn ip_forget_interface(&mut self, idx: SwIfIdx) -> usize {
        let mut removed = 0;
        let ip = &mut self.state.ip;
        let on4 = |a: Option<Adjacency>| matches!(a, Some(Adjacency::Neighbor { iface, .. }) if iface == idx);
        let keys: Vec<(u32, u8)> = ip
            .routes
            .iter()
            .filter(|(_, r)| r.source == RouteSource::Static)
            .filter(|(_, r)| r.paths.iter().any(|&a| on4(ip.adjs.get(a))))
            .map(|(&k, _)| k)
            .collect();
        for k in keys {
            let Some(old) = ip.routes.get(&k).cloned() else {
                continue;
            };
            let keep: Vec<AdjIdx> = old
                .paths
                .iter()
                .copied()
                .filter(|&a| !on4(ip.adjs.get(a)))
                .collect();
            if keep.is_empty() {
                ip.remove_route(k);
                removed += 1;
                continue;
            }
            for &a in &keep {
                if let Some(adj) = ip.adjs.get(a) {
                    ip.adjs.acquire(adj);
                }
            }
            let r = Route {
                source: RouteSource::Static,
                paths: keep,
            };
            // Fewer paths of a route the FIB holds: it accepts them.
            let _ = ip.set_route(k, r);
        }
        let v6 = &mut ip.v6;
        let on6 = |a: Option<Adjacency<std::net::Ipv6Addr>>| matches!(a, Some(Adjacency::Neighbor { iface, .. }) if iface == idx);
        let keys: Vec<(u128, u8)> = v6
            .routes
            .iter()
            .filter(|(_, r)| r.source == RouteSource::Static)
            .filter(|(_, r)| r.paths.iter().any(|&a| on6(v6.adjs.get(a))))
            .map(|(&k, _)| k)
            .collect();
        for k in keys {
            let Some(old) = v6.routes.get(&k).cloned() else {
                continue;
            };
            let keep: Vec<AdjIdx> = old
                .paths
                .iter()
                .copied()
                .filter(|&a| !on6(v6.adjs.get(a)))
                .collect();
            if keep.is_empty() {
                v6.remove_route(k);
                removed += 1;
                continue;
            }
            for &a in &keep {
                if let Some(adj) = v6.adjs.get(a) {
                    v6.adjs.acquire(adj);
                }
            }
            let r = Route {
                source: RouteSource::Static,
                paths: keep,
            };
            let _ = v6.set_route(k, r);
        }
        let name = self.iface_name(idx);
        // No static route goes through the interface any more: nothing refuses the removal.
        let _ = self.ip_clear_interface(&name);
        removed
    }

    /// `show ip interfaces`: the addresses of every routed interface.
    pub fn show_ip_interfaces(&self) -> Vec<IpInterfaceInfo> {
        self.state
            .ip
            .ifaces
            .iter()
            .enumerate()
            .filter(|(_, f)| f.routed())
            .map(|(i, f)| IpInterfaceInfo {
                interface: self.iface_name(i as SwIfIdx),
                addresses: f.addrs.clone(),
            })
            .collect()
    }

    // ----- routes --------------------------------------------------------------------------------

    /// The adjacencies of static route `prefix` over `next_hops`, checked (no change made).
    fn static_route(
        &self,
        table: u32,
        prefix: Ipv4Prefix,
        next_hops: &[Ipv4Addr],
    ) -> Result<Vec<Adjacency>, SwitchError> {
        check_table(table)?;
        if !prefix.is_network() {
            return Err(bad(
                "prefix",
                prefix,
                "a prefix with its host bits zero (e.g. 10.1.0.0/16)",
            ));
        }
        if next_hops.is_empty() || next_hops.len() > MAX_PATHS {
            return Err(bad("next hops", next_hops.len(), "1 to 8 next hops (ECMP)"));
        }
        let key = (u32::from(prefix.addr), prefix.len);
        if matches!(self.state.ip.routes.get(&key), Some(r) if r.source != RouteSource::Static) {
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
                        "an address in a connected subnet of an interface, not the switch's own",
                    )),
                }
            })
            .collect()
    }

    /// Adds (or replaces) static route `prefix` in `table` over `next_hops` (1 to 8, ECMP), each in
    /// a connected subnet of some interface. The FIB changes in place.
    pub fn ip_add_route(
        &mut self,
        table: u32,
        prefix: Ipv4Prefix,
        next_hops: &[Ipv4Addr],
    ) -> Result<(), SwitchError> {
        let adjs = self.static_route(table, prefix, next_hops)?;
        let ip = &mut self.state.ip;
        let paths: Vec<AdjIdx> = adjs.into_iter().map(|a| ip.adjs.acquire(a)).collect();
        let r = Route {
            source: RouteSource::Static,
            paths,
        };
        ip.set_route((u32::from(prefix.addr), prefix.len), r)
            .map_err(fib_error)
    }

    /// Adds (or replaces) many static routes at once: all are checked first (nothing changes on
    /// an error), then the FIB is compiled once — the way to load a large table.
    pub fn ip_add_routes(
        &mut self,
        table: u32,
        routes: &[(Ipv4Prefix, Vec<Ipv4Addr>)],
    ) -> Result<(), SwitchError> {
        let mut checked = Vec::with_capacity(routes.len());
        for (prefix, nhs) in routes {
            checked.push((*prefix, self.static_route(table, *prefix, nhs)?));
        }
        let ip = &mut self.state.ip;
        for (prefix, adjs) in checked {
            let paths: Vec<AdjIdx> = adjs.into_iter().map(|a| ip.adjs.acquire(a)).collect();
            let r = Route {
                source: RouteSource::Static,
                paths,
            };
            if let Some(old) = ip.routes.insert((u32::from(prefix.addr), prefix.len), r) {
                old.paths.iter().for_each(|&a| ip.adjs.release(a));
            }
        }
        ip.rebuild_fib();
        Ok(())
    }

    /// Removes static route `prefix` from `table`.
    pub fn ip_del_route(&mut self, table: u32, prefix: Ipv4Prefix) -> Result<(), SwitchError> {
        check_table(table)?;
        let key = (u32::from(prefix.addr), prefix.len);
        let ip = &mut self.state.ip;
        match ip.routes.get(&key) {
            Some(r) if r.source == RouteSource::Static => {}
            _ => {
                return Err(bad(
                    "prefix",
                    prefix,
                    "a static route of the table (see show ip fib)",
                ))
            }
        }
        ip.remove_route(key);
        Ok(())
    }

    /// `show ip fib [prefix]`: routes of `table` in prefix order, `limit` (≤ 10,000) from `offset`.
    /// With a filter `a.b.c.d/len`, the routes inside that prefix; with `a.b.c.d/32` that is not a
    /// route, the route a packet to that address takes (longest match).
    pub fn show_ip_fib(
        &self,
        table: u32,
        filter: Option<Ipv4Prefix>,
        offset: usize,
        limit: usize,
    ) -> Result<FibInfo, SwitchError> {
        check_table(table)?;
        if limit > MAX_PAGE {
            return Err(bad("limit", limit, "at most 10000 entries per page"));
        }
        let ip = &self.state.ip;
        let entry = |(&(net, len), r): (&(u32, u8), &Route)| FibEntry {
            prefix: Ipv4Prefix {
                addr: Ipv4Addr::from(net),
                len,
            },
            source: r.source,
            paths: r
                .paths
                .iter()
                .filter_map(|&a| ip.adjs.get(a))
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
                ip.routes.len(),
                ip.routes
                    .iter()
                    .skip(offset)
                    .take(limit)
                    .map(entry)
                    .collect(),
            ),
            Some(p) if p.len == 32 && !ip.routes.contains_key(&(u32::from(p.addr), 32)) => {
                let best = (0..=32u8).rev().find_map(|l| {
                    let k = (u32::from(p.addr) & Ipv4Prefix::mask(l), l);
                    ip.routes.get_key_value(&k)
                });
                let v: Vec<FibEntry> = best.into_iter().map(entry).collect();
                (v.len(), v.into_iter().skip(offset).take(limit).collect())
            }
            Some(p) => {
                let net = p.network();
                let lo = u32::from(net.addr);
                let hi = lo | !Ipv4Prefix::mask(net.len);
                let inside = ip
                    .routes
                    .range((lo, 0)..=(hi, 32))
                    .filter(|(&(_, l), _)| l >= net.len);
                let matched = inside.clone().count();
                (
                    matched,
                    inside.skip(offset).take(limit).map(entry).collect(),
                )
            }
        };
        Ok(FibInfo {
            table,
            routes: ip.routes.len(),
            matched,
            offset,
            entries,
            adjacencies: ip.adjs.len(),
            fib_memory_bytes: ip.fib.memory_bytes(),
        })
    }

    // ----- neighbours ----------------------------------------------------------------------------

    /// Adds (or makes static) neighbour `ip` at `mac` on `iface`; `ip` must be in one of the
    /// interface's subnets. Packets that were waiting for an incomplete entry are freed and
    /// counted (`pending_discarded` in `show ip neighbors`).
    pub fn ip_add_neighbor(
        &mut self,
        iface: &str,
        ip: Ipv4Addr,
        mac: EthernetAddress,
    ) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        if !mac.is_unicast() {
            return Err(SwitchError::GroupMac {
                mac: mac.to_string(),
            });
        }
        let st = &self.state.ip;
        let in_subnet = st.iface(idx).is_some_and(|f| f.addr_for(ip).is_some());
        if !in_subnet || st.is_local(ip) {
            return Err(bad(
                "neighbor address",
                ip,
                "an address in a subnet of the interface, not the switch's own",
            ));
        }
        let now = self.state.now_s;
        let st = &mut self.state.ip;
        match st.neighbors.find(idx, ip) {
            Some(i) => {
                let Some(n) = st.neighbors.get_mut(i) else {
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
                st.neighbors
                    .insert(n, st.settings.neighbor_limit)
                    .map_err(|_| SwitchError::TooMany {
                        what: "neighbors",
                        max: st.settings.neighbor_limit as usize,
                    })?;
            }
        }
        Ok(())
    }

    /// Removes neighbour `ip` on `iface` (static or learned).
    pub fn ip_del_neighbor(&mut self, iface: &str, ip: Ipv4Addr) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        let st = &mut self.state.ip;
        let Some(i) = st.neighbors.find(idx, ip) else {
            return Err(bad(
                "neighbor address",
                ip,
                "a neighbour of the interface (see show ip neighbors)",
            ));
        };
        if let Some(n) = st.neighbors.remove(i) {
            st.pending_discarded += n.pending.len() as u64;
            self.pool.free_bulk(&n.pending);
        }
        Ok(())
    }

    /// `show ip neighbors`: counts, then `limit` (≤ 10,000) entries from `offset`.
    pub fn show_ip_neighbors(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<NeighborsInfo, SwitchError> {
        if limit > MAX_PAGE {
            return Err(bad("limit", limit, "at most 10000 entries per page"));
        }
        let t = &self.state.ip.neighbors;
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
        Ok(NeighborsInfo {
            total: t.len(),
            statics,
            learned,
            incomplete,
            pending,
            limit: self.state.ip.settings.neighbor_limit,
            pending_discarded: self.state.ip.pending_discarded,
            offset,
            entries: t
                .iter()
                .skip(offset)
                .take(limit)
                .map(|n| NeighborInfo {
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

    // ----- settings ------------------------------------------------------------------------------

    /// The IP feature's settings.
    pub fn ip_settings(&self) -> IpSettings {
        self.state.ip.settings
    }

    /// Changes the IP feature's settings.
    pub fn set_ip_settings(&mut self, s: IpSettings) -> Result<(), SwitchError> {
        if s.neighbor_limit == 0 {
            return Err(bad("neighbor_limit", 0, "at least 1"));
        }
        if s.arp_pending > 1024 {
            return Err(bad("arp_pending", s.arp_pending, "0 to 1024 packets"));
        }
        if s.arp_max_requests == 0 {
            return Err(bad("arp_max_requests", 0, "at least 1"));
        }
        self.state.ip.settings = s;
        Ok(())
    }
}
