//! `[nat44]`: NAT44 in the config file — interface roles and settings — its whole-config
//! validation and its config objects (for the control plane's generic diff/apply).
//!
//! ```toml
//! [nat44]
//! inside = ["lan0"]
//! outside = ["wan0"]          # masquerades to wan0's first IPv4 address
//! pool = ["198.51.100.8/30", "198.51.100.20-198.51.100.23"]   # optional: these instead
//! hairpinning = true          # optional (off by default)
//! [nat44.settings]            # optional; RFC 7857 defaults
//! udp_s = 300
//! max_sessions = 65536
//! ```
//!
//! | object | key | rank | depends on |
//! |---|---|---|---|
//! | [`Nat44SettingsObj`] | `nat44-settings` | 0 | nothing; changed in place (settings, pool, hairpinning) |
//! | [`Nat44InterfaceObj`] | `nat44-interface IFACE` | 3 | the port; an outside one also its first IPv4 address |

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::control::MAX_POOL;
use super::index::MAX_SLOTS;
use super::{Nat44Settings, Role};
use crate::error::SwitchError;
use crate::interface::KIND_PORT;
use crate::ip::config::{IpConfig, IpPrefix, KIND_ADDRESS};
use crate::ip::Ipv4Prefix;
use crate::object::{q, same_as, ApplyCx, ConfigObject, Obj, ObjectKey, Validation};
use crate::runtime::Switch;

/// Object kinds of this feature.
pub const KIND_INTERFACE: &str = "nat44-interface";
pub const KIND_SETTINGS: &str = "nat44-settings";

/// `[nat44]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nat44Config {
    /// Inside interfaces (their hosts are translated).
    #[serde(default)]
    pub inside: Vec<String>,
    /// Outside interfaces (each with an IPv4 address: its first is the outside address).
    #[serde(default)]
    pub outside: Vec<String>,
    /// Outside addresses (`a.b.c.d`, a prefix `a.b.c.d/NN` — every address of it — or a range
    /// `a.b.c.d-e.f.g.h`): sessions leave with their inside host's pool address (paired
    /// pooling, [`super::AddrPool::for_host`]) instead of the outside interface's. Empty: each
    /// outside interface masquerades to its own address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pool: Vec<String>,
    /// Hairpinning (RFC 4787 REQ-9): inside hosts reach each other through their outside
    /// addresses and ports ([`super::hairpin`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hairpinning: bool,
    #[serde(default)]
    pub settings: Nat44Settings,
}

/// What a `pool` entry may be (the validation's "accepted").
pub const POOL_ACCEPTED: &str = "an IPv4 address, a prefix a.b.c.d/NN with its host bits zero, or a range a.b.c.d-e.f.g.h whose first address is not above its last";

/// The range `(first, last)` of a `pool` entry, or `None` if it is none of [`POOL_ACCEPTED`]
/// (an empty range — last below first — included).
pub fn parse_pool_entry(e: &str) -> Option<(Ipv4Addr, Ipv4Addr)> {
    let e = e.trim();
    if let Some((a, b)) = e.split_once('-') {
        let (a, b): (Ipv4Addr, Ipv4Addr) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        return (a <= b).then_some((a, b));
    }
    if let Some((a, len)) = e.split_once('/') {
        let a: Ipv4Addr = a.parse().ok()?;
        let len: u8 = len.parse().ok().filter(|&l| l <= 32)?;
        let mask = Ipv4Prefix::mask(len);
        if u32::from(a) & !mask != 0 {
            return None;
        }
        return Some((a, Ipv4Addr::from(u32::from(a) | !mask)));
    }
    let a: Ipv4Addr = e.parse().ok()?;
    Some((a, a))
}

/// Checks `[nat44]`: interfaces defined, each with one role, outside ones with an address in
/// `[ip]`, settings the switch accepts.
pub fn validate(nat: &Nat44Config, ip: &IpConfig, v: &mut Validation) {
    let mut seen: HashMap<&str, String> = HashMap::new();
    for (list, items) in [("inside", &nat.inside), ("outside", &nat.outside)] {
        for (i, name) in items.iter().enumerate() {
            let path = format!("nat44.{list}[{i}]");
            if !v.check_interface_ref(path.clone(), name) {
                continue;
            }
            if let Some(first) = seen.insert(name, path.clone()) {
                v.push(
                    path.clone(),
                    q(name),
                    format!("an interface with one role ({first} has it)"),
                );
            }
            if list == "outside" && !ip.address.iter().any(|a| a.interface == *name) {
                v.push(
                    path,
                    q(name),
                    "an interface with an IPv4 address in [ip] (the outside address)",
                );
            }
        }
    }
    validate_pool(nat, ip, v);
    let s = nat.settings;
    for (field, val) in [
        ("tcp_established_s", s.tcp_established_s),
        ("tcp_transitory_s", s.tcp_transitory_s),
        ("udp_s", s.udp_s),
        ("icmp_s", s.icmp_s),
        ("max_sessions", s.max_sessions),
        ("max_sessions_per_host", s.max_sessions_per_host),
    ] {
        if val == 0 {
            v.push(format!("nat44.settings.{field}"), val, "1 or more");
        }
    }
    if s.max_sessions > MAX_SLOTS {
        v.push(
            "nat44.settings.max_sessions".to_string(),
            s.max_sessions,
            "1 to 16777215 (the session index's 24 bits)",
        );
    }
}

/// Checks `pool`: entries that parse, none empty, none overlapping another or an inside
/// interface's prefix (its hosts would be unreachable), 65,536 addresses at most.
fn validate_pool(nat: &Nat44Config, ip: &IpConfig, v: &mut Validation) {
    let mut ok: Vec<(usize, u32, u32)> = Vec::new();
    let mut total = 0u64;
    for (i, e) in nat.pool.iter().enumerate() {
        let path = format!("nat44.pool[{i}]");
        let Some((a, b)) = parse_pool_entry(e) else {
            v.push(path, q(e), POOL_ACCEPTED);
            continue;
        };
        let (a, b) = (u32::from(a), u32::from(b));
        if let Some(&(j, _, _)) = ok.iter().find(|&&(_, x, y)| a <= y && x <= b) {
            v.push(
                path.clone(),
                q(e),
                format!(
                    "a range that overlaps no other (nat44.pool[{j}] {:?})",
                    nat.pool[j]
                ),
            );
        }
        for addr in &ip.address {
            let IpPrefix::V4(pfx) = &addr.address else {
                continue;
            };
            if !nat.inside.contains(&addr.interface) {
                continue;
            }
            let net = pfx.network();
            let (x, y) = (
                u32::from(net.addr),
                u32::from(net.addr) | !Ipv4Prefix::mask(net.len),
            );
            if a <= y && x <= b {
                v.push(
                    path.clone(),
                    q(e),
                    format!(
                        "addresses outside the inside interfaces' prefixes ({} has {})",
                        addr.interface, addr.address
                    ),
                );
            }
        }
        total += (b - a) as u64 + 1;
        ok.push((i, a, b));
    }
    if total > MAX_POOL {
        v.push(
            "nat44.pool".to_string(),
            format!("{total} addresses"),
            "at most 65536 addresses",
        );
    }
}

/// The objects of `[nat44]`.
pub fn objects(nat: &Nat44Config, ip: &IpConfig, out: &mut Vec<Obj>) {
    let settings = Nat44SettingsObj {
        settings: nat.settings,
        pool: nat
            .pool
            .iter()
            .filter_map(|e| parse_pool_entry(e))
            .collect(),
        hairpinning: nat.hairpinning,
    };
    if settings != Nat44SettingsObj::default() {
        out.push(Arc::new(settings));
    }
    for (role, items) in [(Role::Inside, &nat.inside), (Role::Outside, &nat.outside)] {
        for name in items {
            let address = (role == Role::Outside)
                .then(|| ip.address.iter().find(|a| a.interface == *name))
                .flatten()
                .map(|a| ObjectKey::new(KIND_ADDRESS, format!("{} {}", a.interface, a.address)));
            out.push(Arc::new(Nat44InterfaceObj {
                interface: name.clone(),
                role,
                address,
            }));
        }
    }
}

/// The NAT44 settings, the pool of outside addresses and hairpinning as one object (changed in
/// place; removal restores the defaults: RFC 7857 timeouts, no pool, no hairpinning).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Nat44SettingsObj {
    pub settings: Nat44Settings,
    /// Pool ranges `(first, last)`.
    pub pool: Vec<(Ipv4Addr, Ipv4Addr)>,
    pub hairpinning: bool,
}

impl ConfigObject for Nat44SettingsObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_SETTINGS, "")
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
        format!(
            "set nat44 settings, pool ({} ranges), hairpinning {}",
            self.pool.len(),
            if self.hairpinning { "on" } else { "off" }
        )
    }
    fn describe_remove(&self) -> String {
        "set nat44 settings to their defaults (no pool, no hairpinning)".into()
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.set_nat44_settings(self.settings)?;
        sw.set_nat44_pool(&self.pool)?;
        sw.set_nat44_hairpinning(self.hairpinning)
    }
    fn remove(&self, sw: &mut Switch, cx: &mut ApplyCx) -> Result<(), SwitchError> {
        Nat44SettingsObj::default().add(sw, cx)
    }
    fn modify(
        &self,
        _old: &dyn ConfigObject,
        sw: &mut Switch,
        cx: &mut ApplyCx,
    ) -> Result<(), SwitchError> {
        self.add(sw, cx)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// One interface's NAT44 role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nat44InterfaceObj {
    pub interface: String,
    pub role: Role,
    /// The address object an outside interface translates to.
    pub address: Option<ObjectKey>,
}

impl ConfigObject for Nat44InterfaceObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_INTERFACE, &self.interface)
    }
    fn rank(&self) -> u8 {
        3
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        let mut d = vec![ObjectKey::new(KIND_PORT, &self.interface)];
        d.extend(self.address.clone());
        d
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        let r = match self.role {
            Role::Inside => "inside",
            Role::Outside => "outside",
        };
        format!("set nat44 {r} on {}", self.interface)
    }
    fn describe_remove(&self) -> String {
        format!("remove nat44 from {}", self.interface)
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.nat44_set_interface(&self.interface, Some(self.role))
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.nat44_set_interface(&self.interface, None)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::config::AddressConfig;

    #[test]
    fn roles_need_defined_interfaces_an_outside_address_and_one_role_each() {
        let ip = IpConfig {
            address: vec![AddressConfig {
                interface: "wan0".into(),
                address: "198.51.100.1/24".parse().unwrap(),
            }],
            ..Default::default()
        };
        let good = Nat44Config {
            inside: vec!["lan0".into()],
            outside: vec!["wan0".into()],
            ..Default::default()
        };
        let mut v = Validation::default();
        v.interfaces
            .extend(["lan0".to_string(), "wan0".to_string()]);
        validate(&good, &ip, &mut v);
        assert!(v.errors.is_empty(), "{:?}", v.errors);
        let mut objs = Vec::new();
        objects(&good, &ip, &mut objs);
        assert_eq!(objs.len(), 2, "default settings make no object");
        let deps = objs[1].depends_on();
        assert!(
            deps.contains(&ObjectKey::new(KIND_ADDRESS, "wan0 198.51.100.1/24")),
            "{deps:?}"
        );

        let bad = Nat44Config {
            inside: vec!["lan0".into(), "wan0".into()],
            outside: vec!["lan0".into(), "nope".into()],
            settings: Nat44Settings {
                udp_s: 0,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut v = Validation::default();
        v.interfaces
            .extend(["lan0".to_string(), "wan0".to_string()]);
        validate(&bad, &ip, &mut v);
        let paths: Vec<&str> = v.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "nat44.outside[0]",
                "nat44.outside[0]",
                "nat44.outside[1]",
                "nat44.settings.udp_s"
            ]
        );
    }

    #[test]
    fn pool_entries_parse_as_address_prefix_or_range() {
        let a = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert_eq!(
            parse_pool_entry("198.51.100.7"),
            Some((a("198.51.100.7"), a("198.51.100.7")))
        );
        assert_eq!(
            parse_pool_entry("198.51.100.8/30"),
            Some((a("198.51.100.8"), a("198.51.100.11")))
        );
        assert_eq!(
            parse_pool_entry(" 198.51.100.20 - 198.51.100.23 "),
            Some((a("198.51.100.20"), a("198.51.100.23")))
        );
        for bad in [
            "198.51.100.9/30",
            "198.51.100.8/33",
            "198.51.100.9-198.51.100.8",
            "wan0",
            "",
            "198.51.100.8-",
        ] {
            assert_eq!(parse_pool_entry(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_pool_is_refused_when_empty_overlapping_or_on_the_inside() {
        let ip = IpConfig {
            address: vec![
                AddressConfig {
                    interface: "wan0".into(),
                    address: "198.51.100.1/24".parse().unwrap(),
                },
                AddressConfig {
                    interface: "lan0".into(),
                    address: "10.0.0.1/24".parse().unwrap(),
                },
            ],
            ..Default::default()
        };
        let mut nat = Nat44Config {
            inside: vec!["lan0".into()],
            outside: vec!["wan0".into()],
            pool: vec![
                "198.51.100.8/30".into(),
                "198.51.100.20-198.51.100.23".into(),
            ],
            hairpinning: true,
            ..Default::default()
        };
        let check = |nat: &Nat44Config| {
            let mut v = Validation::default();
            v.interfaces
                .extend(["lan0".to_string(), "wan0".to_string()]);
            validate(nat, &ip, &mut v);
            v.errors
        };
        assert!(check(&nat).is_empty(), "{:?}", check(&nat));
        let mut objs = Vec::new();
        objects(&nat, &ip, &mut objs);
        let settings = objs
            .iter()
            .find_map(|o| o.as_any().downcast_ref::<Nat44SettingsObj>())
            .expect("a pool makes the settings object");
        assert_eq!(settings.pool.len(), 2);
        assert!(settings.hairpinning);

        nat.pool = vec![
            "198.51.100.9-198.51.100.8".into(),
            "10.0.0.128/25".into(),
            "198.51.100.0/24".into(),
            "198.51.100.5".into(),
            "lan0".into(),
        ];
        let errors = check(&nat);
        let got: Vec<(&str, &str)> = errors
            .iter()
            .map(|e| (e.path.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("nat44.pool[0]", "\"198.51.100.9-198.51.100.8\""),
                ("nat44.pool[1]", "\"10.0.0.128/25\""),
                ("nat44.pool[3]", "\"198.51.100.5\""),
                ("nat44.pool[4]", "\"lan0\""),
            ],
            "{errors:?}"
        );
        assert!(errors[0].expected.contains("not above its last"));
        assert!(errors[1].expected.contains("lan0 has 10.0.0.1/24"));
        assert!(errors[2].expected.contains("nat44.pool[2]"));

        nat.pool = vec!["100.64.0.0/15".into()];
        let errors = check(&nat);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path, "nat44.pool");
        assert_eq!(errors[0].value, "131072 addresses");
    }
}
