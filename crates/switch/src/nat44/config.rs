//! `[nat44]`: NAT44 in the config file — interface roles and settings — its whole-config
//! validation and its config objects (for the control plane's generic diff/apply).
//!
//! ```toml
//! [nat44]
//! inside = ["lan0"]
//! outside = ["wan0"]          # masquerades to wan0's first IPv4 address
//! [nat44.settings]            # optional; RFC 7857 defaults
//! udp_s = 300
//! max_sessions = 65536
//! ```
//!
//! | object | key | rank | depends on |
//! |---|---|---|---|
//! | [`Nat44SettingsObj`] | `nat44-settings` | 0 | nothing; changed in place |
//! | [`Nat44InterfaceObj`] | `nat44-interface IFACE` | 3 | the port; an outside one also its first IPv4 address |

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Nat44Settings, Role};
use crate::error::SwitchError;
use crate::ip::config::{IpConfig, KIND_ADDRESS};
use crate::l2::config::KIND_PORT;
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
    #[serde(default)]
    pub settings: Nat44Settings,
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
}

/// The objects of `[nat44]`.
pub fn objects(nat: &Nat44Config, ip: &IpConfig, out: &mut Vec<Obj>) {
    if nat.settings != Nat44Settings::default() {
        out.push(Arc::new(Nat44SettingsObj(nat.settings)));
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

/// The NAT44 settings as an object (changed in place; removal restores the defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nat44SettingsObj(pub Nat44Settings);

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
        "set nat44 settings".into()
    }
    fn describe_remove(&self) -> String {
        "set nat44 settings to their defaults".into()
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.set_nat44_settings(self.0)
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.set_nat44_settings(Nat44Settings::default())
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
            settings: Nat44Settings::default(),
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
}
