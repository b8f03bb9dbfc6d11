//! A bond's configuration: the serde type *is* the config (`[[bond]]` in the TOML file), applied
//! whole by [`Switch::add_bond`] — checked completely first, so a bad bond changes nothing.
//!
//! ```toml
//! [[bond]]
//! name = "lag0"
//! mode = "lacp"          # active-backup | xor | broadcast | lacp
//! hash = "l34"           # l2 (default) | l23 | l34 — xor and lacp modes
//! lacp_rate = "fast"     # fast (default: partner sends every 1 s, 3 s timeout) | slow (30 s, 90 s)
//! members = ["eth0", "eth1"]
//! ```

use serde::{Deserialize, Serialize};

use super::{BondMode, BondSettings, HashPolicy, LacpRate, MAX_MEMBERS};
use crate::error::SwitchError;
use crate::interface::{InterfaceKind, Service};
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
            if !matches!(self.iface(idx).kind, InterfaceKind::Main { .. }) {
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
}
