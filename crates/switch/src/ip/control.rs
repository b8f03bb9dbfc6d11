//! The IP feature's control API: methods of [`Switch`] on the IP tables — interface addresses
//! (connected and local routes follow), static routes (ECMP), static neighbours, settings,
//! `show ip fib` and `show ip neighbors` (both paged: a count and one page of entries, never a
//! million lines). Every mutating call checks everything first and changes nothing when it
//! returns an error. Table 0 is the only table: a `table` argument other than 0 is refused.
//!
//! The logic is written once, generic over the address family ([`IpFamily`]: the private
//! `*_family` methods below); the public IPv4 calls here and the IPv6 ones in
//! [`super::control6`] are thin instances of it.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use vecswitch_wire::EthernetAddress;

use super::family::{IfaceOps, IpFamily, PrefixOps, V4, V6};
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

/// One route of `show ip fib` (`show ip6 fib`: [`super::control6::Fib6Entry`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FibEntry<P = Ipv4Prefix, A = Ipv4Addr> {
    pub prefix: P,
    pub source: RouteSource,
    pub paths: Vec<PathInfo<A>>,
}

/// `show ip fib`: how many routes match, and one page of them in prefix order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FibInfo<P = Ipv4Prefix, A = Ipv4Addr> {
    pub table: u32,
    /// Routes in the table.
    pub routes: usize,
    /// Routes matching the filter.
    pub matched: usize,
    /// Index of the first entry shown among the matches.
    pub offset: usize,
    pub entries: Vec<FibEntry<P, A>>,
    /// Adjacencies in use.
    pub adjacencies: usize,
    /// Bytes of the data-plane FIB.
    pub fib_memory_bytes: usize,
    /// The whole process's resident memory when the show ran (`VmRSS`), bytes: with `routes`,
    /// the memory a route costs the process (the control-plane tables and config included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_rss_bytes: Option<u64>,
}

/// The process's resident set size (`VmRSS` of /proc/self/status: a kernel counter read from
/// procfs, never waiting for a device), bytes; `None` if it cannot be read.
pub(super) fn process_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// One neighbour of `show ip neighbors` (`show ip6 neighbors`: `A` is `Ipv6Addr`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeighborInfo<A = Ipv4Addr> {
    pub interface: String,
    pub ip: A,
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
pub struct NeighborsInfo<A = Ipv4Addr> {
    pub total: usize,
    pub statics: usize,
    pub learned: usize,
    pub incomplete: usize,
    pub pending: usize,
    pub limit: u32,
    /// Waiting packets freed by control calls (a neighbour removed or made static), both
    /// families; shown by `show ip neighbors` only (`None` in `show ip6 neighbors`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_discarded: Option<u64>,
    pub offset: usize,
    pub entries: Vec<NeighborInfo<A>>,
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

/// The logic of both families (see the module doc).
impl Switch {
    /// Adds address `prefix` of family `F` to interface `iface` (see [`Switch::ip_add_address`],
    /// [`Switch::ip6_add_address`]).
    pub(super) fn add_address_family<F: IpFamily>(
        &mut self,
        iface: &str,
        prefix: F::Prefix,
    ) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        F::check_address(prefix)?;
        if self.iface(idx).service != Service::None {
            return Err(SwitchError::PortHasService {
                port: iface.to_string(),
                service: self.describe_service(self.iface(idx).service),
            });
        }
        let a = prefix.addr();
        let net = prefix.net();
        let t = F::tables(&self.state.ip);
        for (i, f) in t.ifaces.iter().enumerate() {
            for p in f.addrs() {
                if p.addr() == a {
                    return Err(bad(
                        "address",
                        prefix,
                        "an address not already on an interface",
                    ));
                }
                let other = p.net();
                let overlap = other.holds(net.addr()) || net.holds(other.addr());
                if i != idx as usize && overlap {
                    return Err(bad(
                        "address",
                        prefix,
                        "a subnet that does not overlap another interface's",
                    ));
                }
            }
        }
        let key_local = (F::int(a), F::MAX_LEN);
        let key_net = net.route_key();
        for k in [key_local, key_net] {
            if matches!(t.routes.get(&k), Some(r) if r.source == RouteSource::Static) {
                return Err(bad("address", prefix, F::TEXTS.address_is_static));
            }
        }
        let mac = self.iface(idx).mac;
        let t = F::tables_mut(&mut self.state.ip);
        if t.ifaces.len() <= idx as usize {
            t.ifaces.resize_with(idx as usize + 1, Default::default);
        }
        if t.ifaces[idx as usize].addrs().is_empty() {
            F::first_address(t, idx, mac);
        }
        t.ifaces[idx as usize].addrs_mut().push(prefix);
        if !t.routes.contains_key(&key_net) && net.plen() < F::MAX_LEN {
            let adj = t.adjs.acquire(Adjacency::Glean { iface: idx });
            let r = Route {
                source: RouteSource::Connected,
                paths: vec![adj],
            };
            t.set_route(key_net, r).map_err(fib_error)?;
        }
        let adj = t.adjs.acquire(Adjacency::Local);
        let r = Route {
            source: RouteSource::Local,
            paths: vec![adj],
        };
        t.set_route(key_local, r).map_err(fib_error)?;
        Ok(())
    }

    /// Removes address `prefix` of family `F` from interface `iface` (see
    /// [`Switch::ip_del_address`], [`Switch::ip6_del_address`]).
    pub(super) fn del_address_family<F: IpFamily>(
        &mut self,
        iface: &str,
        prefix: F::Prefix,
    ) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        let t = F::tables(&self.state.ip);
        let Some(pos) = t
            .ifaces
            .get(idx as usize)
            .and_then(|f| f.addrs().iter().position(|&p| p == prefix))
        else {
            return Err(bad("address", prefix, F::TEXTS.not_an_address));
        };
        let net = prefix.net();
        let shared = t.ifaces[idx as usize]
            .addrs()
            .iter()
            .enumerate()
            .any(|(i, p)| i != pos && p.net() == net);
        if !shared {
            let used = t.routes.values().any(|r| {
                r.source == RouteSource::Static
                    && r.paths.iter().any(|&a| {
                        matches!(t.adjs.get(a), Some(Adjacency::Neighbor { iface, nh }) if iface == idx && net.holds(nh))
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
        let t = F::tables_mut(&mut self.state.ip);
        t.ifaces[idx as usize].addrs_mut().remove(pos);
        t.remove_route((F::int(prefix.addr()), F::MAX_LEN));
        if !shared && net.plen() < F::MAX_LEN {
            t.remove_route(net.route_key());
        }
        let last = t.ifaces[idx as usize].addrs().is_empty();
        if last {
            F::last_address(t, idx);
        }
        // Neighbours no longer on-link go (IPv6's link-local ones while an address is left).
        let f = &t.ifaces[idx as usize];
        let gone: Vec<u32> = t
            .neighbors
            .iter()
            .filter(|n| {
                n.iface == idx && (last || (!F::is_link_local(n.ip) && f.addr_in(n.ip).is_none()))
            })
            .filter_map(|n| t.neighbors.find(n.iface, n.ip))
            .collect();
        for i in gone {
            let t = F::tables_mut(&mut self.state.ip);
            if let Some(n) = t.neighbors.remove(i) {
                self.state.ip.pending_discarded += n.pending.len() as u64;
                self.pool.free_bulk(&n.pending);
            }
        }
        Ok(())
    }

    /// Removes every address of family `F` of interface `iface`.
    fn clear_family<F: IpFamily>(&mut self, iface: &str, idx: SwIfIdx) -> Result<(), SwitchError> {
        let addrs = F::tables(&self.state.ip)
            .ifaces
            .get(idx as usize)
            .map(|f| f.addrs().to_vec())
            .unwrap_or_default();
        for p in addrs.into_iter().rev() {
            self.del_address_family::<F>(iface, p)?;
        }
        Ok(())
    }

    /// Static routes of family `F` lose their paths through interface `idx` (a route left with
    /// none is removed). Returns the routes removed.
    fn forget_routes_via<F: IpFamily>(&mut self, idx: SwIfIdx) -> usize {
        let t = F::tables_mut(&mut self.state.ip);
        let on = |a: Option<Adjacency<F::Ip>>| matches!(a, Some(Adjacency::Neighbor { iface, .. }) if iface == idx);
        let keys: Vec<(F::Int, u8)> = t
            .routes
            .iter()
            .filter(|(_, r)| r.source == RouteSource::Static)
            .filter(|(_, r)| r.paths.iter().any(|&a| on(t.adjs.get(a))))
            .map(|(&k, _)| k)
            .collect();
        let mut removed = 0;
        for k in keys {
            let Some(old) = t.routes.get(&k).cloned() else {
                continue;
            };
            let keep: Vec<AdjIdx> = old
                .paths
                .iter()
                .copied()
                .filter(|&a| !on(t.adjs.get(a)))
                .collect();
            if keep.is_empty() {
                t.remove_route(k);
                removed += 1;
                continue;
            }
            for &a in &keep {
                if let Some(adj) = t.adjs.get(a) {
                    t.adjs.acquire(adj);
                }
            }
            let r = Route {
                source: RouteSource::Static,
                paths: keep,
            };
            // Fewer paths of a route the FIB holds: it accepts them.
            let _ = t.set_route(k, r);
        }
        removed
    }

    /// The adjacencies of static route `prefix` over `next_hops`, checked (no change made).
    fn static_route<F: IpFamily>(
        &self,
        table: u32,
        prefix: F::Prefix,
        next_hops: &[F::Ip],
    ) -> Result<Vec<Adjacency<F::Ip>>, SwitchError> {
        check_table(table)?;
        if !prefix.is_net() {
            return Err(bad("prefix", prefix, F::TEXTS.not_a_network));
        }
        if next_hops.is_empty() || next_hops.len() > MAX_PATHS {
            return Err(bad("next hops", next_hops.len(), "1 to 8 next hops (ECMP)"));
        }
        let t = F::tables(&self.state.ip);
        if matches!(t.routes.get(&prefix.route_key()), Some(r) if r.source != RouteSource::Static) {
            return Err(bad(
                "prefix",
                prefix,
                "a prefix that is not an interface's connected or local route",
            ));
        }
        next_hops
            .iter()
            .map(|&nh| {
                let iface = t
                    .ifaces
                    .iter()
                    .position(|f| f.addr_in(nh).is_some() && !f.is_mine(nh));
                match iface {
                    Some(i) => Ok(Adjacency::Neighbor {
                        iface: i as SwIfIdx,
                        nh,
                    }),
                    None => Err(bad("next hop", nh, F::TEXTS.bad_next_hop)),
                }
            })
            .collect()
    }

    /// Adds (or replaces) one static route of family `F`.
    pub(super) fn add_route_family<F: IpFamily>(
        &mut self,
        table: u32,
        prefix: F::Prefix,
        next_hops: &[F::Ip],
    ) -> Result<(), SwitchError> {
        let adjs = self.static_route::<F>(table, prefix, next_hops)?;
        let t = F::tables_mut(&mut self.state.ip);
        let paths: Vec<AdjIdx> = adjs.into_iter().map(|a| t.adjs.acquire(a)).collect();
        let r = Route {
            source: RouteSource::Static,
            paths,
        };
        t.set_route(prefix.route_key(), r).map_err(fib_error)
    }

    /// Adds (or replaces) many static routes of family `F`, all checked first, the FIB compiled
    /// once.
    pub(super) fn add_routes_family<F: IpFamily>(
        &mut self,
        table: u32,
        routes: &[(F::Prefix, Vec<F::Ip>)],
    ) -> Result<(), SwitchError> {
        let mut checked = Vec::with_capacity(routes.len());
        for (prefix, nhs) in routes {
            checked.push((*prefix, self.static_route::<F>(table, *prefix, nhs)?));
        }
        let t = F::tables_mut(&mut self.state.ip);
        for (prefix, adjs) in checked {
            let paths: Vec<AdjIdx> = adjs.into_iter().map(|a| t.adjs.acquire(a)).collect();
            let r = Route {
                source: RouteSource::Static,
                paths,
            };
            if let Some(old) = t.routes.insert(prefix.route_key(), r) {
                old.paths.iter().for_each(|&a| t.adjs.release(a));
            }
        }
        t.rebuild_fib();
        Ok(())
    }

    /// Starts a bulk change of the IP tables: until [`Switch::end_bulk`], route changes update
    /// the control-plane tables only and the FIBs catch up once at the end (one build instead of
    /// one trie update per route). The config apply brackets every apply with the two; nothing
    /// forwards in between (an apply is one control call on the worker).
    pub fn begin_bulk(&mut self) {
        self.state.ip.v4.defer_fib();
        self.state.ip.v6.defer_fib();
    }

    /// Ends a bulk change ([`Switch::begin_bulk`]): the FIBs hold exactly the routes again.
    pub fn end_bulk(&mut self) {
        self.state.ip.v4.settle_fib();
        self.state.ip.v6.settle_fib();
    }

    /// Removes static route `prefix` of family `F`.
    pub(super) fn del_route_family<F: IpFamily>(
        &mut self,
        table: u32,
        prefix: F::Prefix,
    ) -> Result<(), SwitchError> {
        check_table(table)?;
        let key = prefix.route_key();
        let t = F::tables_mut(&mut self.state.ip);
        match t.routes.get(&key) {
            Some(r) if r.source == RouteSource::Static && prefix.is_net() => {}
            _ => return Err(bad("prefix", prefix, F::TEXTS.not_a_static_route)),
        }
        t.remove_route(key);
        Ok(())
    }

    /// `show ip fib` / `show ip6 fib` (see [`Switch::show_ip_fib`]).
    pub(super) fn show_fib_family<F: IpFamily>(
        &self,
        table: u32,
        filter: Option<F::Prefix>,
        offset: usize,
        limit: usize,
    ) -> Result<FibInfo<F::Prefix, F::Ip>, SwitchError> {
        check_table(table)?;
        if limit > MAX_PAGE {
            return Err(bad("limit", limit, "at most 10000 entries per page"));
        }
        let t = F::tables(&self.state.ip);
        let entry = |(&(net, len), r): (&(F::Int, u8), &Route)| FibEntry {
            prefix: <F::Prefix as PrefixOps<F>>::of(F::ip(net), len),
            source: r.source,
            paths: r
                .paths
                .iter()
                .filter_map(|&a| t.adjs.get(a))
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
                t.routes.len(),
                t.routes
                    .iter()
                    .skip(offset)
                    .take(limit)
                    .map(entry)
                    .collect(),
            ),
            Some(p) if p.plen() == F::MAX_LEN && !t.routes.contains_key(&p.route_key()) => {
                let a = F::int(p.addr());
                let best = (0..=F::MAX_LEN)
                    .rev()
                    .find_map(|l| t.routes.get_key_value(&(F::network_of(a, l), l)));
                let v: Vec<FibEntry<F::Prefix, F::Ip>> = best.into_iter().map(entry).collect();
                (v.len(), v.into_iter().skip(offset).take(limit).collect())
            }
            Some(p) => {
                let net = p.net();
                let lo = F::int(net.addr());
                let hi = F::broadcast_of(lo, net.plen());
                let inside = t
                    .routes
                    .range((lo, 0)..=(hi, F::MAX_LEN))
                    .filter(|(&(_, l), _)| l >= net.plen());
                let matched = inside.clone().count();
                (
                    matched,
                    inside.skip(offset).take(limit).map(entry).collect(),
                )
            }
        };
        Ok(FibInfo {
            table,
            routes: t.routes.len(),
            matched,
            offset,
            entries,
            adjacencies: t.adjs.len(),
            fib_memory_bytes: t.fib.memory_bytes(),
            process_rss_bytes: process_rss_bytes(),
        })
    }

    /// Adds (or makes static) neighbour `ip` of family `F` (see [`Switch::ip_add_neighbor`]).
    pub(super) fn add_neighbor_family<F: IpFamily>(
        &mut self,
        iface: &str,
        ip: F::Ip,
        mac: EthernetAddress,
    ) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        if !mac.is_unicast() {
            return Err(SwitchError::GroupMac {
                mac: mac.to_string(),
            });
        }
        let t = F::tables(&self.state.ip);
        let on_link = t.iface(idx).is_some_and(|f| F::on_link(f, ip));
        if !on_link || t.is_local(ip) || F::never_neighbor(ip) {
            return Err(bad("neighbor address", ip, F::TEXTS.bad_neighbor));
        }
        let now = self.state.now_s;
        let limit = self.state.ip.settings.neighbor_limit;
        let t = F::tables_mut(&mut self.state.ip);
        let waiting = match t.neighbors.find(idx, ip) {
            Some(i) => {
                let Some(n) = t.neighbors.get_mut(i) else {
                    return Ok(());
                };
                n.mac = Some(mac);
                n.is_static = true;
                n.updated_s = now;
                std::mem::take(&mut n.pending)
            }
            None => {
                let n = Neighbor::new(idx, ip, Some(mac), true, now);
                t.neighbors
                    .insert(n, limit)
                    .map_err(|_| SwitchError::TooMany {
                        what: F::TEXTS.neighbors,
                        max: limit as usize,
                    })?;
                Vec::new()
            }
        };
        self.state.ip.pending_discarded += waiting.len() as u64;
        self.pool.free_bulk(&waiting);
        Ok(())
    }

    /// Removes neighbour `ip` of family `F` on `iface` (static or learned).
    pub(super) fn del_neighbor_family<F: IpFamily>(
        &mut self,
        iface: &str,
        ip: F::Ip,
    ) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        let t = F::tables_mut(&mut self.state.ip);
        let Some(i) = t.neighbors.find(idx, ip) else {
            return Err(bad("neighbor address", ip, F::TEXTS.not_a_neighbor));
        };
        if let Some(n) = t.neighbors.remove(i) {
            self.state.ip.pending_discarded += n.pending.len() as u64;
            self.pool.free_bulk(&n.pending);
        }
        Ok(())
    }

    /// `show ip neighbors` / `show ip6 neighbors`: counts, then `limit` (≤ 10,000) entries from
    /// `offset`.
    pub(super) fn show_neighbors_family<F: IpFamily>(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<NeighborsInfo<F::Ip>, SwitchError> {
        if limit > MAX_PAGE {
            return Err(bad("limit", limit, "at most 10000 entries per page"));
        }
        let t = &F::tables(&self.state.ip).neighbors;
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
            pending_discarded: Some(self.state.ip.pending_discarded),
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
}

impl Switch {
    // ----- addresses -----------------------------------------------------------------------------

    /// Adds IPv4 address `addr/len` to interface `iface`, which becomes routed: its local route
    /// (/32 to the switch) and its connected route (the subnet, glean) are added. The interface
    /// must have no L2 service.
    pub fn ip_add_address(&mut self, iface: &str, prefix: Ipv4Prefix) -> Result<(), SwitchError> {
        self.add_address_family::<V4>(iface, prefix)
    }

    /// Removes address `addr/len` from interface `iface` with its local route, and its connected
    /// route if no other address of the interface is in that subnet (refused while a static route
    /// goes through a next hop there). Neighbours no longer in a subnet of the interface go, their
    /// pending packets freed.
    pub fn ip_del_address(&mut self, iface: &str, prefix: Ipv4Prefix) -> Result<(), SwitchError> {
        self.del_address_family::<V4>(iface, prefix)
    }

    /// Removes every address (IPv4 and IPv6), and so every connected route and neighbour, of
    /// interface `iface`; refused while a static route goes through it.
    pub fn ip_clear_interface(&mut self, iface: &str) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        self.clear_family::<V4>(iface, idx)?;
        self.clear_family::<V6>(iface, idx)
    }

    /// Forgets everything the IP feature holds about interface `idx` (called by `delete_port`
    /// before the interface goes): static routes lose their paths through it (a route left with
    /// none is removed), then its IPv4 and IPv6 addresses go with their connected and local
    /// routes, its neighbours and their waiting packets. Returns the static routes removed.
    pub(crate) fn ip_forget_interface(&mut self, idx: SwIfIdx) -> usize {
        let removed = self.forget_routes_via::<V4>(idx) + self.forget_routes_via::<V6>(idx);
        let name = self.iface_name(idx);
        // No static route goes through the interface any more: nothing refuses the removal.
        let _ = self.ip_clear_interface(&name);
        removed
    }

    /// `show ip interfaces`: the addresses of every routed interface.
    pub fn show_ip_interfaces(&self) -> Vec<IpInterfaceInfo> {
        self.state
            .ip
            .v4
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

    /// Adds (or replaces) static route `prefix` in `table` over `next_hops` (1 to 8, ECMP), each in
    /// a connected subnet of some interface. The FIB changes in place.
    pub fn ip_add_route(
        &mut self,
        table: u32,
        prefix: Ipv4Prefix,
        next_hops: &[Ipv4Addr],
    ) -> Result<(), SwitchError> {
        self.add_route_family::<V4>(table, prefix, next_hops)
    }

    /// Adds (or replaces) many static routes at once: all are checked first (nothing changes on
    /// an error), then the FIB is compiled once — the way to load a large table.
    pub fn ip_add_routes(
        &mut self,
        table: u32,
        routes: &[(Ipv4Prefix, Vec<Ipv4Addr>)],
    ) -> Result<(), SwitchError> {
        self.add_routes_family::<V4>(table, routes)
    }

    /// Removes static route `prefix` from `table`.
    pub fn ip_del_route(&mut self, table: u32, prefix: Ipv4Prefix) -> Result<(), SwitchError> {
        self.del_route_family::<V4>(table, prefix)
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
        self.show_fib_family::<V4>(table, filter, offset, limit)
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
        self.add_neighbor_family::<V4>(iface, ip, mac)
    }

    /// Removes neighbour `ip` on `iface` (static or learned).
    pub fn ip_del_neighbor(&mut self, iface: &str, ip: Ipv4Addr) -> Result<(), SwitchError> {
        self.del_neighbor_family::<V4>(iface, ip)
    }

    /// `show ip neighbors`: counts, then `limit` (≤ 10,000) entries from `offset`.
    pub fn show_ip_neighbors(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<NeighborsInfo, SwitchError> {
        self.show_neighbors_family::<V4>(offset, limit)
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

#[cfg(test)]
mod bulk_tests {
    use super::*;

    /// A switch with one routed interface (10.1.0.1/24) and `n` /32 routes via 10.1.0.2, added
    /// one by one, inside a bulk change or not.
    fn routed(n: u32, bulk: bool) -> Switch {
        let mut sw = Switch::default();
        let (a, _peer) = vecswitch_ports::loopback::pair("a", "a-peer");
        sw.add_port("a", Box::new(a)).unwrap();
        sw.ip_add_address(
            "a",
            Ipv4Prefix {
                addr: Ipv4Addr::new(10, 1, 0, 1),
                len: 24,
            },
        )
        .unwrap();
        if bulk {
            sw.begin_bulk();
        }
        for i in 0..n {
            let p = Ipv4Prefix {
                addr: Ipv4Addr::from(0x1000_0000 + i),
                len: 32,
            };
            sw.ip_add_route(0, p, &[Ipv4Addr::new(10, 1, 0, 2)])
                .unwrap();
        }
        if bulk {
            sw.end_bulk();
        }
        sw
    }

    fn lookups(sw: &Switch, n: u32) -> Vec<Option<vecswitch_fib::NextHop>> {
        (0..n + 8)
            .map(|i| sw.state.ip.v4.fib.lookup(0x1000_0000 + i, 0))
            .collect()
    }

    /// Routes added in a bulk change reach the FIB when it ends — one by one for a few changes,
    /// by one build for many — and the FIB answers exactly as with routes added outside one;
    /// routes removed in a bulk change leave it the same way.
    #[test]
    fn a_bulk_change_leaves_the_fib_as_one_by_one_changes_do() {
        for n in [10, 3000] {
            let (mut one, mut bulk) = (routed(n, false), routed(n, true));
            assert_eq!(lookups(&bulk, n), lookups(&one, n), "{n} routes added");
            assert!(lookups(&bulk, n)[..n as usize].iter().all(Option::is_some));
            bulk.begin_bulk();
            for sw in [&mut one, &mut bulk] {
                for i in (0..n).step_by(2) {
                    let p = Ipv4Prefix {
                        addr: Ipv4Addr::from(0x1000_0000 + i),
                        len: 32,
                    };
                    sw.ip_del_route(0, p).unwrap();
                }
            }
            // Before the end the FIB still has the removed routes; after it, it does not.
            assert!(bulk.state.ip.v4.fib.lookup(0x1000_0000, 0).is_some());
            bulk.end_bulk();
            assert_eq!(
                lookups(&bulk, n),
                lookups(&one, n),
                "{n} routes, half removed"
            );
            assert!(bulk.state.ip.v4.fib.lookup(0x1000_0000, 0).is_none());
        }
    }
}
