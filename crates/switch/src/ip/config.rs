//! The IP feature's config: `[ip]` with `[[ip.address]]`, `[[ip.route]]` and `[[ip.neighbor]]`
//! (the same keys in control requests), its whole-config validation, and the [`ConfigObject`]s
//! it expands into for the control plane's generic diff/apply:
//!
//! | object | key | rank | depends on |
//! |---|---|---|---|
//! | [`AddressObj`] | `interface address/len` | 2 | the port |
//! | [`NeighborObj`] | `interface ip` | 3 | the interface's address whose subnet holds `ip` |
//! | [`RouteObj`] | `table prefix` | 3 | the addresses whose subnets hold the next hops |
//!
//! An interface with an address is routed: it takes the interface's receive side as a service
//! does (`Validation::claim`), so it cannot also be a bridge member or cross-connected.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use vecswitch_wire::EthernetAddress;

use super::{Ipv4Prefix, MAX_PATHS};
use crate::error::SwitchError;
use crate::l2::config::{mac_text, KIND_PORT};
use crate::object::{q, same_as, ApplyCx, ConfigObject, Obj, ObjectKey, Validation};
use crate::runtime::Switch;

/// Object kinds of this feature.
pub const KIND_ADDRESS: &str = "ip-address";
pub const KIND_ROUTE: &str = "ip-route";
pub const KIND_NEIGHBOR: &str = "ip-neighbor";

/// `[ip]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpConfig {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub address: Vec<AddressConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route: Vec<RouteConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub neighbor: Vec<NeighborConfig>,
}

/// `[[ip.address]]`: `interface = "p0"`, `address = "10.0.0.1/24"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddressConfig {
    pub interface: String,
    pub address: Ipv4Prefix,
}

/// `[[ip.route]]`: `prefix = "192.168.0.0/16"`, `via = ["10.1.0.2"]` (1 to 8: ECMP), `table = 0`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    pub prefix: Ipv4Prefix,
    pub via: Vec<Ipv4Addr>,
    #[serde(default)]
    pub table: u32,
}

/// `[[ip.neighbor]]`: a static neighbour, `interface`, `ip`, `mac`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborConfig {
    pub interface: String,
    pub ip: Ipv4Addr,
    #[serde(with = "mac_text")]
    pub mac: EthernetAddress,
}

/// The address of `addrs` on `iface` whose subnet holds `ip`.
fn covering<'a>(
    addrs: &'a [AddressConfig],
    iface: Option<&str>,
    ip: Ipv4Addr,
) -> Option<&'a AddressConfig> {
    addrs.iter().find(|a| {
        iface.is_none_or(|i| a.interface == i) && a.address.contains(ip) && a.address.addr != ip
    })
}

/// Whole-config validation of `[ip]`.
pub fn validate_ip(c: &IpConfig, v: &mut Validation) {
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
        let ad = a.address.addr;
        if ad.is_unspecified()
            || ad.is_multicast()
            || ad.is_broadcast()
            || ad.is_loopback()
            || a.address.len == 0
        {
            v.push(
                format!("{path}.address"),
                a.address,
                "a unicast address with a prefix length of 1 to 32",
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
            if b.interface != a.interface && (x.contains(y.addr) || y.contains(x.addr)) {
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
            if covering(&c.address, None, *nh).is_none() {
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

/// An interface address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressObj {
    pub interface: String,
    pub address: Ipv4Prefix,
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
        sw.ip_add_address(&self.interface, self.address)
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.ip_del_address(&self.interface, self.address)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A static neighbour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborObj {
    pub interface: String,
    pub ip: Ipv4Addr,
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
        sw.ip_add_neighbor(&self.interface, self.ip, self.mac)
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.ip_del_neighbor(&self.interface, self.ip)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A static route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteObj {
    pub table: u32,
    pub prefix: Ipv4Prefix,
    pub via: Vec<Ipv4Addr>,
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
        sw.ip_add_route(self.table, self.prefix, &self.via)
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.ip_del_route(self.table, self.prefix)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
