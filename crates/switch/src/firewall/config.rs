//! `[[firewall]]`: one ACL per interface in the config file, its validation and its config
//! object.
//!
//! ```toml
//! [[firewall]]
//! interface = "wan0"
//! default-action = "deny"            # every connection attempt from outside
//!
//! [[firewall]]
//! interface = "lan0"
//! default-action = "deny"
//! rules = [
//!   { src = "10.0.0.66/32", action = "deny" },
//!   { proto = "tcp", dport = "80", action = "permit-reflect" },
//!   { proto = "udp", dport = "53", action = "permit-reflect" },
//!   { proto = "icmp", icmp-type = 8, action = "permit-reflect" },
//! ]
//! ips = { patterns = ["/etc/passwd", "hex:4d5a90"] }   # optional: IPS mode (see `ips`)
//! ```
//!
//! | object | key | rank | depends on |
//! |---|---|---|---|
//! | [`FirewallObj`] | `firewall IFACE` | 1 | the port; replaced in place (hit counters restart) |

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::acl::{Acl, Action, Rule};
use super::ips::IpsConfig;
use crate::error::SwitchError;
use crate::interface::KIND_PORT;
use crate::object::{q, same_as, ApplyCx, ConfigObject, Obj, ObjectKey, Validation};
use crate::runtime::Switch;

/// Object kind of this feature.
pub const KIND_FIREWALL: &str = "firewall";

/// `[[firewall]]`: the ACL of one interface's received packets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FirewallConfig {
    pub interface: String,
    #[serde(default)]
    pub rules: Vec<Rule>,
    pub default_action: Action,
    /// IPS mode: byte patterns searched in what the ACL lets through (see [`super::ips`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ips: Option<IpsConfig>,
}

impl FirewallConfig {
    /// The ACL.
    pub fn acl(&self) -> Acl {
        Acl {
            rules: self.rules.clone(),
            default_action: self.default_action,
        }
    }
}

/// Checks `[[firewall]]`: interfaces defined and listed once, every rule well formed.
pub fn validate(items: &[FirewallConfig], v: &mut Validation) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, f) in items.iter().enumerate() {
        let path = format!("firewall[{i}]");
        if v.check_interface_ref(format!("{path}.interface"), &f.interface) {
            if let Some(first) = seen.insert(f.interface.as_str(), i) {
                v.push(
                    format!("{path}.interface"),
                    q(&f.interface),
                    format!("an interface with one ACL (firewall[{first}] has it)"),
                );
            }
        }
        for (j, r) in f.rules.iter().enumerate() {
            if let Err(e) = r.validate(j) {
                v.push(
                    format!("{path}.rules[{j}]"),
                    q(&format!("{r:?}")),
                    e.to_string(),
                );
            }
        }
        if let Some(Err(e)) = f.ips.as_ref().map(IpsConfig::validate) {
            v.push(
                format!("{path}.ips"),
                q(&format!("{:?}", f.ips)),
                e.to_string(),
            );
        }
    }
}

/// The objects of `[[firewall]]`: one per interface.
pub fn objects(items: &[FirewallConfig], out: &mut Vec<Obj>) {
    for f in items {
        out.push(Arc::new(FirewallObj(f.clone())));
    }
}

/// One interface's ACL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirewallObj(pub FirewallConfig);

impl ConfigObject for FirewallObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_FIREWALL, &self.0.interface)
    }
    fn rank(&self) -> u8 {
        1
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        vec![ObjectKey::new(KIND_PORT, &self.0.interface)]
    }
    fn modifiable_from(&self, _old: &dyn ConfigObject) -> bool {
        true
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!(
            "set firewall on {} ({} rules)",
            self.0.interface,
            self.0.rules.len()
        )
    }
    fn describe_remove(&self) -> String {
        format!("remove the firewall from {}", self.0.interface)
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.firewall_set_acl(&self.0.interface, Some(self.0.acl()))?;
        sw.firewall_set_ips(&self.0.interface, self.0.ips.clone())
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.firewall_set_acl(&self.0.interface, None)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The module doc's example, as JSON (the switch crate has no TOML parser; the serde type
    /// is the same): it parses and validates, and two mistakes are reported with their paths.
    #[test]
    fn the_documented_example_parses_and_validates() {
        let json = serde_json::json!([
            { "interface": "wan0", "default-action": "deny" },
            { "interface": "lan0", "default-action": "deny", "rules": [
                { "src": "10.0.0.66/32", "action": "deny" },
                { "proto": "tcp", "dport": "80", "action": "permit-reflect" },
                { "proto": "udp", "dport": "53", "action": "permit-reflect" },
                { "proto": "icmp", "icmp-type": 8, "action": "permit-reflect" }
            ]}
        ]);
        let items: Vec<FirewallConfig> = serde_json::from_value(json).unwrap();
        let defined = |v: &mut Validation| {
            v.interfaces.insert("wan0".into());
            v.interfaces.insert("lan0".into());
        };
        let mut v = Validation::default();
        defined(&mut v);
        validate(&items, &mut v);
        assert!(v.errors.is_empty(), "{:?}", v.errors);
        assert_eq!(items[1].rules.len(), 4);
        let mut bad = items.clone();
        bad[0].rules.push(Rule {
            dport: Some("80".parse().unwrap()),
            ..Rule::any(Action::Deny)
        });
        bad.push(bad[1].clone());
        let mut v = Validation::default();
        defined(&mut v);
        validate(&bad, &mut v);
        let paths: Vec<&str> = v.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, vec!["firewall[0].rules[0]", "firewall[2].interface"]);
    }
}
