//! A bond's configuration: the serde type *is* the config (`[[bond]]` in the TOML file), its
//! whole-config validation ([`validate_bonds`]) and the config objects it expands into for the
//! control plane's generic diff/apply ([`BondObj`], rank 1, kind `port` since services name it like
//! a port; [`BondMemberObj`], rank 2). [`Switch::add_bond`] applies one whole, checked first.
//!
//! ```toml
//! [[bond]]
//! name = "lag0"
//! mode = "lacp"          # active-backup | xor | broadcast | lacp
//! hash = "l34"           # l2 (default) | l23 | l34 — xor and lacp modes
//! lacp_rate = "fast"     # fast (default: partner sends every 1 s, 3 s timeout) | slow (30 s, 90 s)
//! members = ["eth0", "eth1"]
//! ```

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{BondMode, BondSettings, HashPolicy, LacpRate, MAX_MEMBERS};
use crate::error::SwitchError;
use crate::interface::Service;
use crate::interface::KIND_PORT;
use crate::object::{check_name, q, same_as, ApplyCx, ConfigObject, Obj, ObjectKey, Validation};
use crate::runtime::Switch;

/// One bond in the config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BondConfig {
    pub name: String,
    pub mode: BondMode,
    #[serde(default)]
    pub hash: HashPolicy,
    #[serde(default)]
    pub lacp_rate: LacpRate,
    /// Member ports, by name (their main interfaces).
    #[serde(default)]
    pub members: Vec<String>,
}

impl BondConfig {
    /// The bond's settings (everything but name and members).
    pub fn settings(&self) -> BondSettings {
        BondSettings {
            mode: self.mode,
            hash: self.hash,
            lacp_rate: self.lacp_rate,
        }
    }
}

impl Switch {
    /// Creates bond `c.name` with its members, or changes nothing and says why: the name must be
    /// free, each member a port (main interface) with no service, in no other bond, listed once,
    /// at most [`MAX_MEMBERS`].
    pub fn add_bond(&mut self, c: &BondConfig) -> Result<(), SwitchError> {
        Self::check_name("bond", &c.name)?;
        if self.state.interface_index(&c.name).is_some() || self.state.port_index(&c.name).is_some()
        {
            return Err(SwitchError::InvalidValue {
                field: "bond name",
                value: format!("{:?}", c.name),
                accepted: "a name no port, interface or bond has yet",
            });
        }
        if c.members.len() > MAX_MEMBERS {
            return Err(SwitchError::TooMany {
                what: "bond members",
                max: MAX_MEMBERS,
            });
        }
        for (i, m) in c.members.iter().enumerate() {
            if c.members[..i].contains(m) {
                return Err(SwitchError::InvalidValue {
                    field: "bond members",
                    value: format!("{m:?} twice"),
                    accepted: "each port once",
                });
            }
            let idx = self.iface_idx(m)?;
            if self.iface(idx).kind.main_port().is_none() {
                return Err(SwitchError::InvalidValue {
                    field: "bond member",
                    value: format!("{m:?}"),
                    accepted: "a port (its main interface), not a bond or sub-interface",
                });
            }
            if let Some((other, _)) = self.state.bonds.member(idx) {
                return Err(SwitchError::PortHasService {
                    port: m.clone(),
                    service: format!("member of bond `{}`", other.name),
                });
            }
            let s = self.iface(idx).service;
            if s != Service::None {
                return Err(SwitchError::PortHasService {
                    port: m.clone(),
                    service: self.describe_service(s),
                });
            }
        }
        self.create_bond(&c.name, c.settings())?;
        for m in &c.members {
            if let Err(e) = self.add_bond_member(&c.name, m) {
                // Checked above; should anything still fail, undo the whole bond.
                let _ = self.delete_bond(&c.name);
                return Err(e);
            }
        }
        Ok(())
    }

    /// The running bonds as config (for `ctl save` and diffs).
    pub fn bond_configs(&self) -> Vec<BondConfig> {
        self.state
            .bonds
            .bonds
            .iter()
            .flatten()
            .map(|b| BondConfig {
                name: b.name.clone(),
                mode: b.settings.mode,
                hash: b.settings.hash,
                lacp_rate: b.settings.lacp_rate,
                members: b.members.iter().map(|m| self.iface_name(m.iface)).collect(),
            })
            .collect()
    }
}

/// Object kind of a bond member.
pub const KIND_BOND_MEMBER: &str = "bond-member";

/// Validates `[[bond]]` (after the ports, before the services: a bond's name becomes an interface
/// services may refer to; its members are claimed, so a member also in a bridge-domain or
/// cross-connect, or in two bonds, is an error naming both).
pub fn validate_bonds(bonds: &[BondConfig], v: &mut Validation) {
    let ports: HashSet<String> = v.interfaces.clone();
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (i, b) in bonds.iter().enumerate() {
        let svc = format!("bond[{i}]");
        if let Err(why) = check_name(&b.name) {
            v.push(format!("{svc}.name"), q(&b.name), why);
        } else if ports.contains(&b.name) {
            v.push(
                format!("{svc}.name"),
                q(&b.name),
                "a name no port has (a bond is an interface, named like no other)",
            );
        } else if let Some(first) = names.insert(b.name.as_str(), i) {
            v.push(
                format!("{svc}.name"),
                q(&b.name),
                format!("a unique name (bond[{first}] has it already)"),
            );
        }
        if b.members.len() > MAX_MEMBERS {
            v.push(
                format!("{svc}.members"),
                b.members.len(),
                format!("at most {MAX_MEMBERS} members"),
            );
        }
        let mut seen = HashSet::new();
        for (j, m) in b.members.iter().enumerate() {
            let path = format!("{svc}.members[{j}]");
            if names.contains_key(m.as_str()) && !ports.contains(m) {
                v.push(path, q(m), "a port (a bond cannot be a member of a bond)");
                continue;
            }
            if !v.check_interface_ref(path.clone(), m) {
                continue;
            }
            if !seen.insert(m.as_str()) {
                v.push(path, q(m), "each member listed once");
                continue;
            }
            v.claim(path, m, &svc);
        }
    }
    v.interfaces.extend(names.into_keys().map(str::to_string));
}

/// The objects of `[[bond]]`: the bond, then one per member.
pub fn bond_objects(bonds: &[BondConfig], out: &mut Vec<Obj>) {
    for b in bonds {
        out.push(Arc::new(BondObj {
            name: b.name.clone(),
            settings: b.settings(),
        }));
        for m in &b.members {
            out.push(Arc::new(BondMemberObj {
                bond: b.name.clone(),
                port: m.clone(),
            }));
        }
    }
}

/// A bond (without its members). Its kind is `port` (`KIND_PORT`): a bond is an interface that
/// services (bridge members, cross-connects) refer to by name exactly as they refer to ports, and
/// their objects depend on `(port, name)` — so re-creating a bond re-creates what uses it. Rank 1:
/// after the ports, before the members and services. A change of mode, hash or LACP rate
/// re-creates it (with its members and services).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BondObj {
    pub name: String,
    pub settings: BondSettings,
}

impl ConfigObject for BondObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_PORT, &self.name)
    }
    fn rank(&self) -> u8 {
        1
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        Vec::new()
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        let s = &self.settings;
        format!(
            "add bond {} mode {:?} hash {:?} lacp-rate {:?}",
            self.name, s.mode, s.hash, s.lacp_rate
        )
    }
    fn describe_remove(&self) -> String {
        format!("delete bond {}", self.name)
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.create_bond(&self.name, self.settings).map(|_| ())
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.delete_bond(&self.name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// One member of a bond: rank 2, depends on the bond and the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BondMemberObj {
    pub bond: String,
    pub port: String,
}

impl ConfigObject for BondMemberObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_BOND_MEMBER, format!("{} {}", self.bond, self.port))
    }
    fn rank(&self) -> u8 {
        2
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        vec![
            ObjectKey::new(KIND_PORT, &self.bond),
            ObjectKey::new(KIND_PORT, &self.port),
        ]
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!("add port {} to bond {}", self.port, self.bond)
    }
    fn describe_remove(&self) -> String {
        format!("remove port {} from bond {}", self.port, self.bond)
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.add_bond_member(&self.bond, &self.port)
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.remove_bond_member(&self.bond, &self.port)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vecswitch_ports::loopback::pair;

    fn sw() -> Switch {
        let mut sw = Switch::default();
        for p in ["p0", "p1", "p2"] {
            let (a, _b) = pair(p, "peer");
            sw.add_port(p, Box::new(a)).unwrap();
        }
        sw
    }

    fn cfg(members: &[&str]) -> BondConfig {
        BondConfig {
            name: "lag".into(),
            mode: BondMode::Lacp,
            hash: HashPolicy::L34,
            lacp_rate: LacpRate::Slow,
            members: members.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_bond_config_applies_whole_and_reads_back() {
        let mut s = sw();
        s.add_bond(&cfg(&["p0", "p1"])).unwrap();
        assert_eq!(s.bond_configs(), vec![cfg(&["p0", "p1"])]);
        assert_eq!(s.show_lacp().len(), 2);
    }

    #[test]
    fn bad_bond_configs_change_nothing() {
        let mut s = sw();
        s.add_xconnect("p2", "p0").unwrap();
        let before = s.show_interfaces();
        for (c, says) in [
            (cfg(&["p0", "p2"]), "xconnect to `p0`"),
            (cfg(&["p0", "p0"]), "each port once"),
            (cfg(&["p0", "nope"]), "nope"),
        ] {
            let e = s.add_bond(&c).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
            assert_eq!(s.show_interfaces(), before);
            assert!(s.show_bond().is_empty());
        }
        s.add_bond(&cfg(&["p0"])).unwrap();
        let e = s
            .add_bond(&BondConfig {
                name: "lag2".into(),
                ..cfg(&["p0"])
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("member of bond `lag`"), "{e}");
    }

    #[test]
    fn the_toml_form_parses_with_defaults_and_rejects_unknown_fields() {
        let c: BondConfig =
            serde_json::from_str(r#"{"name":"lag0","mode":"active-backup","members":["a","b"]}"#)
                .unwrap();
        assert_eq!(c.hash, HashPolicy::L2);
        assert_eq!(c.lacp_rate, LacpRate::Fast);
        let e = serde_json::from_str::<BondConfig>(r#"{"name":"x","mode":"lacp","speed":1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("speed"), "{e}");
        let e = serde_json::from_str::<BondConfig>(r#"{"name":"x","mode":"round-robin"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("active-backup"), "{e}");
    }

    /// Runs the sections as the control plane does: ports, then bonds, then bridges.
    fn validate(bonds: &[BondConfig], bridges: &[crate::l2::config::BridgeConfig]) -> Vec<String> {
        let mut v = Validation::default();
        v.interfaces
            .extend(["p0", "p1", "p2"].iter().map(|s| s.to_string()));
        validate_bonds(bonds, &mut v);
        crate::l2::config::validate_bridges(bridges, &mut v);
        v.errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn config_validation_rejects_shared_members_and_bad_names() {
        let mut br = crate::l2::config::BridgeConfig::new("br");
        br.ports = vec!["lag".into(), "p2".into()];
        assert_eq!(
            validate(&[cfg(&["p0", "p1"])], std::slice::from_ref(&br)),
            Vec::<String>::new()
        );
        // A member also in a bridge-domain.
        br.ports = vec!["p1".into()];
        let e = validate(&[cfg(&["p0", "p1"])], std::slice::from_ref(&br));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].contains("bridge[0].ports[0]") && e[0].contains("bond[0] has it"),
            "{e:?}"
        );
        // A member in two bonds, a bond named like a port, a bond as a member, an unknown port.
        let two = BondConfig {
            name: "lag2".into(),
            ..cfg(&["p0"])
        };
        let e = validate(&[cfg(&["p0", "p1"]), two], &[]);
        assert!(
            e.iter()
                .any(|e| e.contains("bond[1].members[0]") && e.contains("bond[0] has it")),
            "{e:?}"
        );
        let e = validate(
            &[BondConfig {
                name: "p2".into(),
                ..cfg(&[])
            }],
            &[],
        );
        assert!(
            e[0].contains("bond[0].name") && e[0].contains("no port has"),
            "{e:?}"
        );
        let nested = BondConfig {
            name: "outer".into(),
            ..cfg(&["lag"])
        };
        let e = validate(&[cfg(&["p0"]), nested], &[]);
        assert!(
            e[0].contains("bond[1].members[0]") && e[0].contains("bond cannot be a member"),
            "{e:?}"
        );
        let e = validate(&[cfg(&["p9"])], &[]);
        assert!(e[0].contains("bond[0].members[0]"), "{e:?}");
        let e = validate(&[cfg(&["p0", "p0"])], &[]);
        assert!(e[0].contains("listed once"), "{e:?}");
    }

    #[test]
    fn config_objects_add_and_remove_the_bond_and_its_members() {
        let mut s = sw();
        let mut objs = Vec::new();
        bond_objects(&[cfg(&["p0", "p1"])], &mut objs);
        assert_eq!(objs.len(), 3);
        assert_eq!(objs[0].key(), ObjectKey::new(KIND_PORT, "lag"));
        assert_eq!(objs[1].depends_on()[0], objs[0].key());
        assert!(objs.windows(2).all(|w| w[0].rank() <= w[1].rank()));
        let mut cx = ApplyCx::default();
        for o in &objs {
            o.add(&mut s, &mut cx).unwrap();
        }
        assert_eq!(s.bond_configs(), vec![cfg(&["p0", "p1"])]);
        for o in objs.iter().rev() {
            o.remove(&mut s, &mut cx).unwrap();
        }
        assert!(s.show_bond().is_empty());
        assert!(objs[0].same(&*objs[0]) && !objs[0].same(&*objs[1]));
        assert_eq!(objs[1].describe_add(), "add port p0 to bond lag");
    }
}
