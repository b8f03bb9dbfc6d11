//! The IP feature's config: `[ip]` with its settings keys ([`IpConfig::settings`]: options
//! policy, ICMP error rate, neighbour limits and timers), `[[ip.address]]`, `[[ip.route]]` and
//! `[[ip.neighbor]]` (the same keys in control requests; addresses, prefixes and next hops are
//! IPv4 or IPv6, [`IpPrefix`]), its whole-config validation, and the [`ConfigObject`]s it expands
//! into for the control plane's generic diff/apply:
//!
//! | object | key | rank | depends on |
//! |---|---|---|---|
//! | [`SettingsObj`] | `ip` | 0 | nothing (changed in place; removal restores the defaults) |
//! | [`AddressObj`] | `interface address/len` | 2 | the port |
//! | [`NeighborObj`] | `interface ip` | 3 | the interface's address whose subnet holds `ip` (for an IPv6 link-local neighbour: the interface's first IPv6 address) |
//! | [`RouteObj`] | `table prefix` | 3 | the addresses whose subnets hold the next hops |
//!
//! An interface with an address is routed: it takes the interface's receive side as a service
//! does (`Validation::claim`), so it cannot also be a bridge member or cross-connected.

use std::collections::HashSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use vecswitch_wire::EthernetAddress;

use super::ip6::{is_link_local, Ipv6Prefix, Prefix6Error};
use super::{IpSettings, Ipv4Prefix, PrefixError, MAX_PATHS};
use crate::error::SwitchError;
use crate::interface::KIND_PORT;
use crate::object::mac_text;
use crate::object::{q, same_as, ApplyCx, ConfigObject, Obj, ObjectKey, Validation};
use crate::runtime::Switch;

/// Object kinds of this feature.
pub const KIND_ADDRESS: &str = "ip-address";
pub const KIND_ROUTE: &str = "ip-route";
pub const KIND_NEIGHBOR: &str = "ip-neighbor";
pub const KIND_SETTINGS: &str = "ip-settings";

/// An IPv4 or IPv6 prefix as the config writes it (`10.0.0.1/24`, `2001:db8::1/64`; the family is
/// the address's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpPrefix {
    V4(Ipv4Prefix),
    V6(Ipv6Prefix),
}

/// Why an IPv4 or IPv6 prefix did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IpPrefixError {
    #[error(transparent)]
    V4(#[from] PrefixError),
    #[error(transparent)]
    V6(#[from] Prefix6Error),
}

impl IpPrefix {
    /// The address part.
    pub fn addr(self) -> IpAddr {
        match self {
            IpPrefix::V4(p) => p.addr.into(),
            IpPrefix::V6(p) => p.addr.into(),
        }
    }

    /// The prefix length.
    pub fn prefix_len(self) -> u8 {
        match self {
            IpPrefix::V4(p) => p.len,
            IpPrefix::V6(p) => p.len,
        }
    }

    /// Whether `a` (of the same family) is inside the prefix.
    pub fn contains(self, a: IpAddr) -> bool {
        match (self, a) {
            (IpPrefix::V4(p), IpAddr::V4(a)) => p.contains(a),
            (IpPrefix::V6(p), IpAddr::V6(a)) => p.contains(a),
            _ => false,
        }
    }

    /// The prefix with its host bits cleared.
    pub fn network(self) -> IpPrefix {
        match self {
            IpPrefix::V4(p) => IpPrefix::V4(p.network()),
            IpPrefix::V6(p) => IpPrefix::V6(p.network()),
        }
    }

    /// Whether the host bits are zero.
    pub fn is_network(self) -> bool {
        match self {
            IpPrefix::V4(p) => p.is_network(),
            IpPrefix::V6(p) => p.is_network(),
        }
    }

    /// Whether it is an IPv6 prefix.
    pub fn is_v6(self) -> bool {
        matches!(self, IpPrefix::V6(_))
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpPrefix::V4(p) => p.fmt(f),
            IpPrefix::V6(p) => p.fmt(f),
        }
    }
}

impl FromStr for IpPrefix {
    type Err = IpPrefixError;
    /// An IPv6 prefix if the address has a `:`, else an IPv4 one.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.contains(':') {
            Ok(IpPrefix::V6(s.parse()?))
        } else {
            Ok(IpPrefix::V4(s.parse()?))
        }
    }
}

impl Serialize for IpPrefix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for IpPrefix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl From<Ipv4Prefix> for IpPrefix {
    fn from(p: Ipv4Prefix) -> Self {
        IpPrefix::V4(p)
    }
}

impl From<Ipv6Prefix> for IpPrefix {
    fn from(p: Ipv6Prefix) -> Self {
        IpPrefix::V6(p)
    }
}

/// `[ip]`. The settings keys are optional; a missing one keeps [`IpSettings`]'s default.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpConfig {
    /// Forward IPv4 packets with options (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_options: Option<bool>,
    /// Forward IPv6 packets with a hop-by-hop options header (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_hop_by_hop: Option<bool>,
    /// ICMP and ICMPv6 errors per second (default 100; 0: none after the burst).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp_errors_per_s: Option<u32>,
    /// ICMP errors back to back (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp_burst: Option<u32>,
    /// Most neighbour entries per family (default 65,536).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbor_limit: Option<u32>,
    /// Seconds before an unconfirmed learned neighbour is removed (default 300; 0: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbor_age_s: Option<u32>,
    /// Packets held per unresolved neighbour (default 8, at most 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arp_pending: Option<u32>,
    /// ARP requests / neighbor solicitations before giving up (default 3, at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arp_max_requests: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub address: Vec<AddressConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route: Vec<RouteConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub neighbor: Vec<NeighborConfig>,
}

impl IpConfig {
    /// The settings the keys make (defaults for the keys not given).
    pub fn settings(&self) -> IpSettings {
        let d = IpSettings::default();
        IpSettings {
            allow_options: self.allow_options.unwrap_or(d.allow_options),
            allow_hop_by_hop: self.allow_hop_by_hop.unwrap_or(d.allow_hop_by_hop),
            icmp_errors_per_s: self.icmp_errors_per_s.unwrap_or(d.icmp_errors_per_s),
            icmp_burst: self.icmp_burst.unwrap_or(d.icmp_burst),
            neighbor_limit: self.neighbor_limit.unwrap_or(d.neighbor_limit),
            neighbor_age_s: self.neighbor_age_s.unwrap_or(d.neighbor_age_s),
            arp_pending: self.arp_pending.unwrap_or(d.arp_pending),
            arp_max_requests: self.arp_max_requests.unwrap_or(d.arp_max_requests),
        }
    }
}

/// `[[ip.address]]`: `interface = "p0"`, `address = "10.0.0.1/24"` or `"2001:db8::1/64"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddressConfig {
    pub interface: String,
    pub address: IpPrefix,
}

/// `[[ip.route]]`: `prefix = "192.168.0.0/16"`, `via = ["10.1.0.2"]` (1 to 8: ECMP, of the
/// prefix's family), `table = 0`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    pub prefix: IpPrefix,
    pub via: Vec<IpAddr>,
    #[serde(default)]
    pub table: u32,
}

/// `[[ip.neighbor]]`: a static neighbour, `interface`, `ip` (IPv4 or IPv6), `mac`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborConfig {
    pub interface: String,
    pub ip: IpAddr,
    #[serde(with = "mac_text")]
    pub mac: EthernetAddress,
}

/// The address of `addrs` on `iface` whose subnet holds `ip`; for an IPv6 link-local `ip` (which
/// needs `iface`), the interface's first IPv6 address (its link-local address comes with it).
fn covering<'a>(
    addrs: &'a [AddressConfig],
    iface: Option<&str>,
    ip: IpAddr,
) -> Option<&'a AddressConfig> {
    let on = |a: &&AddressConfig| iface.is_none_or(|i| a.interface == i);
    match ip {
        IpAddr::V6(l) if is_link_local(l) => {
            iface?;
            addrs.iter().filter(on).find(|a| a.address.is_v6())
        }
        _ => addrs
            .iter()
            .filter(on)
            .find(|a| a.address.contains(ip) && a.address.addr() != ip),
    }
}

/// Whether `a` may be an interface address (unicast; IPv6 link-local addresses are automatic).
fn unicast(a: IpPrefix) -> bool {
    match a {
        IpPrefix::V4(p) => {
            let ad = p.addr;
            !(ad.is_unspecified()
                || ad.is_multicast()
                || ad.is_broadcast()
                || ad.is_loopback()
                || p.len == 0)
        }
        IpPrefix::V6(p) => {
            let ad = p.addr;
            !(ad.is_unspecified()
                || ad.is_multicast()
                || ad.is_loopback()
                || is_link_local(ad)
                || p.len == 0)
        }
    }
}

/// Validation of `[ip]`'s settings keys (the checks of `Switch::set_ip_settings`).
fn validate_settings(c: &IpConfig, v: &mut Validation) {
    if c.neighbor_limit == Some(0) {
        v.push("ip.neighbor_limit".into(), 0, "at least 1 entry");
    }
    if let Some(n) = c.arp_pending.filter(|&n| n > 1024) {
        v.push("ip.arp_pending".into(), n, "0 to 1024 packets");
    }
    if c.arp_max_requests == Some(0) {
        v.push("ip.arp_max_requests".into(), 0, "at least 1 request");
    }
}

/// Whole-config validation of `[ip]`.
pub fn validate_ip(c: &IpConfig, v: &mut Validation) {
    validate_settings(c, v);
    let mut claimed = HashSet::new();
    let mut seen = HashSet::new();
    for (i, a) in c.address.iter().enumerate() {
        let path = format!("ip.address[{i}]");
        if !v.check_interface_ref(format!("{path}.interface"), &a.interface) {
            continue;
        }
        if claimed.insert(a.interface.clone()) {
            v.claim(format!("{path}.interface"), &a.interface, &path);
        }
        let ad = a.address.addr();
        if !unicast(a.address) {
            v.push(
                format!("{path}.address"),
                a.address,
                "a unicast address with a prefix length of at least 1 (IPv6: global or \
                 unique-local; link-local addresses are automatic)",
            );
        }
        if !seen.insert(ad) {
            v.push(
                format!("{path}.address"),
                a.address,
                "an address not given twice",
            );
        }
        for (j, b) in c.address.iter().enumerate().take(i) {
            let (x, y) = (a.address.network(), b.address.network());
            if b.interface != a.interface && (x.contains(y.addr()) || y.contains(x.addr())) {
                v.push(
                    format!("{path}.address"),
                    a.address,
                    format!("a subnet that does not overlap ip.address[{j}]'s"),
                );
            }
        }
    }
    let mut prefixes = HashSet::new();
    for (i, r) in c.route.iter().enumerate() {
        let path = format!("ip.route[{i}]");
        if r.table != 0 {
            v.push(
                format!("{path}.table"),
                r.table,
                "0 (the only table until VRFs)",
            );
        }
        if !r.prefix.is_network() {
            v.push(
                format!("{path}.prefix"),
                r.prefix,
                "a prefix with its host bits zero",
            );
        }
        if !prefixes.insert((r.table, r.prefix)) {
            v.push(
                format!("{path}.prefix"),
                r.prefix,
                "a prefix not given twice",
            );
        }
        if r.via.is_empty() || r.via.len() > MAX_PATHS {
            v.push(format!("{path}.via"), r.via.len(), "1 to 8 next hops");
        }
        for (j, nh) in r.via.iter().enumerate() {
            if nh.is_ipv6() != r.prefix.is_v6() {
                v.push(
                    format!("{path}.via[{j}]"),
                    nh,
                    "a next hop of the prefix's address family",
                );
            } else if covering(&c.address, None, *nh).is_none() {
                v.push(
                    format!("{path}.via[{j}]"),
                    nh,
                    "an address in the subnet of an [[ip.address]], not the address itself",
                );
            }
        }
    }
    for (i, n) in c.neighbor.iter().enumerate() {
        let path = format!("ip.neighbor[{i}]");
        if covering(&c.address, Some(&n.interface), n.ip).is_none() {
            v.push(
                format!("{path}.ip"),
                n.ip,
                format!(
                    "an address in a subnet of {}'s [[ip.address]]",
                    q(&n.interface)
                ),
            );
        }
        if !n.mac.is_unicast() {
            v.push(format!("{path}.mac"), n.mac, "a unicast MAC");
        }
    }
}

/// The objects of `[ip]`.
pub fn ip_objects(c: &IpConfig, out: &mut Vec<Obj>) {
    let s = c.settings();
    if s != IpSettings::default() {
        out.push(Arc::new(SettingsObj(s)));
    }
    for a in &c.address {
        out.push(Arc::new(AddressObj {
            interface: a.interface.clone(),
            address: a.address,
        }));
    }
    for n in &c.neighbor {
        let dep = covering(&c.address, Some(&n.interface), n.ip).map(AddressObj::key_of);
        out.push(Arc::new(NeighborObj {
            interface: n.interface.clone(),
            ip: n.ip,
            mac: n.mac,
            depends: dep.into_iter().collect(),
        }));
    }
    for r in &c.route {
        let depends = r
            .via
            .iter()
            .filter_map(|nh| covering(&c.address, None, *nh).map(AddressObj::key_of))
            .collect();
        out.push(Arc::new(RouteObj {
            table: r.table,
            prefix: r.prefix,
            via: r.via.clone(),
            depends,
        }));
    }
}

/// `[ip]`'s settings keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsObj(pub IpSettings);

impl ConfigObject for SettingsObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_SETTINGS, "ip")
    }
    fn rank(&self) -> u8 {
        0
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        Vec::new()
    }
    fn modifiable_from(&self, _old: &dyn ConfigObject) -> bool {
        true
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!("set ip settings {:?}", self.0)
    }
    fn describe_remove(&self) -> String {
        "set ip settings to their defaults".to_string()
    }
    fn describe_modify(&self, _old: &dyn ConfigObject) -> String {
        self.describe_add()
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.set_ip_settings(self.0)
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.set_ip_settings(IpSettings::default())
    }
    fn modify(
        &self,
        _old: &dyn ConfigObject,
        sw: &mut Switch,
        _cx: &mut ApplyCx,
    ) -> Result<(), SwitchError> {
        sw.set_ip_settings(self.0)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// An interface address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressObj {
    pub interface: String,
    pub address: IpPrefix,
}

impl AddressObj {
    fn key_of(a: &AddressConfig) -> ObjectKey {
        ObjectKey::new(KIND_ADDRESS, format!("{} {}", a.interface, a.address))
    }
}

impl ConfigObject for AddressObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_ADDRESS, format!("{} {}", self.interface, self.address))
    }
    fn rank(&self) -> u8 {
        2
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        vec![ObjectKey::new(KIND_PORT, &self.interface)]
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!("add address {} to {}", self.address, self.interface)
    }
    fn describe_remove(&self) -> String {
        format!("remove address {} from {}", self.address, self.interface)
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        match self.address {
            IpPrefix::V4(p) => sw.ip_add_address(&self.interface, p),
            IpPrefix::V6(p) => sw.ip6_add_address(&self.interface, p),
        }
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        match self.address {
            IpPrefix::V4(p) => sw.ip_del_address(&self.interface, p),
            IpPrefix::V6(p) => sw.ip6_del_address(&self.interface, p),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A static neighbour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborObj {
    pub interface: String,
    pub ip: IpAddr,
    pub mac: EthernetAddress,
    depends: Vec<ObjectKey>,
}

impl ConfigObject for NeighborObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_NEIGHBOR, format!("{} {}", self.interface, self.ip))
    }
    fn rank(&self) -> u8 {
        3
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        self.depends.clone()
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!(
            "add neighbor {} at {} on {}",
            self.ip, self.mac, self.interface
        )
    }
    fn describe_remove(&self) -> String {
        format!("remove neighbor {} on {}", self.ip, self.interface)
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        match self.ip {
            IpAddr::V4(a) => sw.ip_add_neighbor(&self.interface, a, self.mac),
            IpAddr::V6(a) => sw.ip6_add_neighbor(&self.interface, a, self.mac),
        }
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        match self.ip {
            IpAddr::V4(a) => sw.ip_del_neighbor(&self.interface, a),
            IpAddr::V6(a) => sw.ip6_del_neighbor(&self.interface, a),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A static route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteObj {
    pub table: u32,
    pub prefix: IpPrefix,
    pub via: Vec<IpAddr>,
    depends: Vec<ObjectKey>,
}

impl ConfigObject for RouteObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_ROUTE, format!("{} {}", self.table, self.prefix))
    }
    fn rank(&self) -> u8 {
        3
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        self.depends.clone()
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        let via: Vec<String> = self.via.iter().map(|a| a.to_string()).collect();
        format!("add route {} via {}", self.prefix, via.join(", "))
    }
    fn describe_remove(&self) -> String {
        format!("remove route {}", self.prefix)
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        match self.prefix {
            IpPrefix::V4(p) => {
                let via: Vec<Ipv4Addr> = self
                    .via
                    .iter()
                    .filter_map(|a| match a {
                        IpAddr::V4(a) => Some(*a),
                        IpAddr::V6(_) => None,
                    })
                    .collect();
                family_checked(via.len(), self.via.len())?;
                sw.ip_add_route(self.table, p, &via)
            }
            IpPrefix::V6(p) => {
                let via: Vec<Ipv6Addr> = self
                    .via
                    .iter()
                    .filter_map(|a| match a {
                        IpAddr::V6(a) => Some(*a),
                        IpAddr::V4(_) => None,
                    })
                    .collect();
                family_checked(via.len(), self.via.len())?;
                sw.ip6_add_route(self.table, p, &via)
            }
        }
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        match self.prefix {
            IpPrefix::V4(p) => sw.ip_del_route(self.table, p),
            IpPrefix::V6(p) => sw.ip6_del_route(self.table, p),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Refuses a route whose next hops are not all of its prefix's family (validation catches it
/// first; this guards objects made without it).
fn family_checked(same: usize, all: usize) -> Result<(), SwitchError> {
    if same == all {
        Ok(())
    } else {
        Err(SwitchError::InvalidValue {
            field: "via",
            value: format!("{} of {all} next hops of the other family", all - same),
            accepted: "next hops of the prefix's address family",
        })
    }
}
