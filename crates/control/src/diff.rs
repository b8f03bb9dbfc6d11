//! Config diff: [`diff`] turns (running config, new config) into an ordered list of [`Change`]s
//! that takes a running switch from one to the other while touching nothing that did not change:
//! a port whose backend settings are equal is not re-created (it keeps its counters and its memif
//! connection), a bridge-domain whose name survives keeps its MAC table.
//!
//! The list is ordered in phases so that every step is legal on the switch at the time it runs:
//! first everything that refers to a port or bridge-domain about to go is detached (xconnects,
//! static MACs, members), then bridge-domains and ports are deleted, then ports are created, then
//! bridge-domains, members, static MACs and xconnects are added. A port whose backend settings
//! changed is deleted and re-created, and everything that referred to it is detached and re-attached.
//!
//! [`check_reloadable`] rejects changes to `[switch]`, which are fixed for the life of the process.

use crate::config::{BridgeConfig, Config, PortConfig};
use crate::validate::{format_mac, parse_mac, ValidationError, ValidationErrors};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Settings of a bridge-domain apart from its members and static MACs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BridgeSettingsConfig {
    pub learn: bool,
    pub forward: bool,
    pub flood: bool,
    pub uu_flood: bool,
    pub mac_age: u32,
    pub mac_limit: u32,
}

impl From<&BridgeConfig> for BridgeSettingsConfig {
    fn from(b: &BridgeConfig) -> Self {
        BridgeSettingsConfig {
            learn: b.learn,
            forward: b.forward,
            flood: b.flood,
            uu_flood: b.uu_flood,
            mac_age: b.mac_age,
            mac_limit: b.mac_limit,
        }
    }
}

/// One step of a reload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    RemoveXconnect {
        from: String,
        to: String,
    },
    RemoveStaticMac {
        bridge: String,
        mac: String,
    },
    RemoveBridgeMember {
        bridge: String,
        port: String,
    },
    DeleteBridge {
        name: String,
    },
    DeletePort {
        name: String,
    },
    AddPort {
        port: PortConfig,
    },
    SetPortAdmin {
        name: String,
        up: bool,
    },
    AddBridge {
        name: String,
        settings: BridgeSettingsConfig,
    },
    SetBridgeSettings {
        name: String,
        settings: BridgeSettingsConfig,
    },
    AddBridgeMember {
        bridge: String,
        port: String,
    },
    AddStaticMac {
        bridge: String,
        mac: String,
        port: String,
    },
    AddXconnect {
        from: String,
        to: String,
    },
}

/// Rejects a new config whose `[switch]` section differs from the running one's.
pub fn check_reloadable(old: &Config, new: &Config) -> Result<(), ValidationErrors> {
    let mut errs = Vec::new();
    let (o, n) = (&old.switch, &new.switch);
    let restart = |field: &str, running: String| {
        format!("the running value ({running}); `{field}` changes need a restart")
    };
    if o.buffers != n.buffers {
        errs.push(ValidationError {
            path: "switch.buffers".into(),
            value: n.buffers.to_string(),
            expected: restart("switch.buffers", o.buffers.to_string()),
        });
    }
    if o.control_socket != n.control_socket {
        errs.push(ValidationError {
            path: "switch.control_socket".into(),
            value: format!("{:?}", n.control_socket),
            expected: restart("switch.control_socket", format!("{:?}", o.control_socket)),
        });
    }
    if o.mac_table_entries != n.mac_table_entries {
        errs.push(ValidationError {
            path: "switch.mac_table_entries".into(),
            value: n.mac_table_entries.to_string(),
            expected: restart("switch.mac_table_entries", o.mac_table_entries.to_string()),
        });
    }
    if o.worker_cpu != n.worker_cpu {
        errs.push(ValidationError {
            path: "switch.worker_cpu".into(),
            value: format!("{:?}", n.worker_cpu),
            expected: restart("switch.worker_cpu", format!("{:?}", o.worker_cpu)),
        });
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ValidationErrors(errs))
    }
}

fn norm_mac(m: &str) -> String {
    parse_mac(m)
        .map(format_mac)
        .unwrap_or_else(|| m.to_ascii_lowercase())
}

/// static MACs of a bridge: normalized MAC → port.
fn static_macs(b: &BridgeConfig) -> BTreeMap<String, String> {
    b.static_mac
        .iter()
        .map(|s| (norm_mac(&s.mac), s.port.clone()))
        .collect()
}

/// The changes that take a switch running `old` to `new`. Both configs must be valid.
pub fn diff(old: &Config, new: &Config) -> Vec<Change> {
    let old_ports: BTreeMap<&str, &PortConfig> = old.ports.iter().map(|p| (p.name(), p)).collect();
    let new_ports: BTreeMap<&str, &PortConfig> = new.ports.iter().map(|p| (p.name(), p)).collect();
    // Ports re-created (backend changed) and ports going away.
    let replaced: HashSet<&str> = new_ports
        .iter()
        .filter(|(n, p)| old_ports.get(*n).is_some_and(|o| !o.same_backend(p)))
        .map(|(n, _)| *n)
        .collect();
    let gone = |n: &str| replaced.contains(n) || !new_ports.contains_key(n);
    let fresh = |n: &str| replaced.contains(n) || !old_ports.contains_key(n);

    let mut detach = Vec::new();
    let mut delete = Vec::new();
    let mut create = Vec::new();
    let mut xc_add = Vec::new();

    // Cross-connects, by direction.
    let old_x: BTreeSet<(String, String)> = old.xconnect_directions().into_iter().collect();
    let new_x: BTreeSet<(String, String)> = new.xconnect_directions().into_iter().collect();
    for (f, t) in &old_x {
        if !new_x.contains(&(f.clone(), t.clone())) || gone(f) || gone(t) {
            detach.push(Change::RemoveXconnect {
                from: f.clone(),
                to: t.clone(),
            });
        }
    }
    for (f, t) in new.xconnect_directions() {
        if !old_x.contains(&(f.clone(), t.clone())) || fresh(&f) || fresh(&t) {
            xc_add.push(Change::AddXconnect { from: f, to: t });
        }
    }

    // Bridge-domains.
    let mut macs_detach = Vec::new();
    let mut macs_attach = Vec::new();
    let mut members_attach = Vec::new();
    for ob in &old.bridges {
        let nb = new.bridge(&ob.name);
        let old_macs = static_macs(ob);
        let new_macs = nb.map(static_macs).unwrap_or_default();
        for (mac, port) in &old_macs {
            if nb.is_none() || new_macs.get(mac) != Some(port) || gone(port) {
                macs_detach.push(Change::RemoveStaticMac {
                    bridge: ob.name.clone(),
                    mac: mac.clone(),
                });
            }
        }
        for p in &ob.ports {
            if !nb.is_some_and(|nb| nb.ports.contains(p)) || gone(p) {
                detach.push(Change::RemoveBridgeMember {
                    bridge: ob.name.clone(),
                    port: p.clone(),
                });
            }
        }
        match nb {
            None => delete.push(Change::DeleteBridge {
                name: ob.name.clone(),
            }),
            Some(nb) => {
                if !ob.same_settings(nb) {
                    create.push(Change::SetBridgeSettings {
                        name: nb.name.clone(),
                        settings: nb.into(),
                    });
                }
            }
        }
    }
    for nb in &new.bridges {
        let ob = old.bridge(&nb.name);
        if ob.is_none() {
            create.push(Change::AddBridge {
                name: nb.name.clone(),
                settings: nb.into(),
            });
        }
        for p in &nb.ports {
            if !ob.is_some_and(|ob| ob.ports.contains(p)) || fresh(p) {
                members_attach.push(Change::AddBridgeMember {
                    bridge: nb.name.clone(),
                    port: p.clone(),
                });
            }
        }
        let old_macs = ob.map(static_macs).unwrap_or_default();
        for (mac, port) in static_macs(nb) {
            if old_macs.get(&mac) != Some(&port) || fresh(&port) {
                macs_attach.push(Change::AddStaticMac {
                    bridge: nb.name.clone(),
                    mac,
                    port,
                });
            }
        }
    }

    // Ports.
    let mut port_delete = Vec::new();
    let mut port_create = Vec::new();
    for p in &old.ports {
        if gone(p.name()) {
            port_delete.push(Change::DeletePort {
                name: p.name().to_string(),
            });
        }
    }
    for p in &new.ports {
        if fresh(p.name()) {
            port_create.push(Change::AddPort { port: p.clone() });
        } else if old_ports
            .get(p.name())
            .is_some_and(|o| o.admin() != p.admin())
        {
            port_create.push(Change::SetPortAdmin {
                name: p.name().to_string(),
                up: p.admin().is_up(),
            });
        }
    }

    let mut out = Vec::new();
    // Phase 1: detach what refers to things that change or go (static MACs before their members).
    out.extend(macs_detach);
    out.extend(detach);
    // Phase 2: delete bridge-domains, then ports.
    out.extend(delete);
    out.extend(port_delete);
    // Phase 3: create ports, then bridge-domains (and settings changes).
    out.extend(port_create);
    out.extend(create);
    // Phase 4: attach members, static MACs, cross-connects.
    out.extend(members_attach);
    out.extend(macs_attach);
    out.extend(xc_add);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AdminState, StaticMacConfig, XconnectConfig};
    use crate::validate::validate;

    fn cfg(extra: &str) -> Config {
        let text = format!(
            r#"
[[port]]
name = "p0"
type = "memif"
socket = "/tmp/m.sock"
id = 0
[[port]]
name = "p1"
type = "memif"
socket = "/tmp/m.sock"
id = 1
[[port]]
name = "v0"
type = "af_packet"
interface = "veth0"
[[port]]
name = "v1"
type = "af_packet"
interface = "veth1"
{extra}"#
        );
        let c = Config::from_toml(&text, "t").unwrap();
        validate(&c).unwrap();
        c
    }

    const SERVICES: &str = r#"
[[xconnect]]
ports = ["p0", "p1"]
[[bridge]]
name = "br0"
ports = ["v0", "v1"]
  [[bridge.static_mac]]
  mac = "02:00:00:00:00:01"
  port = "v0"
"#;

    fn pos(changes: &[Change], c: &Change) -> usize {
        changes
            .iter()
            .position(|x| x == c)
            .unwrap_or_else(|| panic!("{c:?} not in {changes:#?}"))
    }

    #[test]
    fn equal_configs_have_no_changes() {
        let a = cfg(SERVICES);
        assert!(diff(&a, &a.clone()).is_empty());
    }

    #[test]
    fn from_empty_builds_everything_in_dependency_order() {
        let new = cfg(SERVICES);
        let ch = diff(&Config::default(), &new);
        assert_eq!(
            ch.iter()
                .filter(|c| matches!(c, Change::AddPort { .. }))
                .count(),
            4
        );
        let add_v0 = pos(
            &ch,
            &Change::AddPort {
                port: new.port("v0").unwrap().clone(),
            },
        );
        let add_br = pos(
            &ch,
            &Change::AddBridge {
                name: "br0".into(),
                settings: new.bridge("br0").unwrap().into(),
            },
        );
        let member = pos(
            &ch,
            &Change::AddBridgeMember {
                bridge: "br0".into(),
                port: "v0".into(),
            },
        );
        let mac = pos(
            &ch,
            &Change::AddStaticMac {
                bridge: "br0".into(),
                mac: "02:00:00:00:00:01".into(),
                port: "v0".into(),
            },
        );
        let xc = pos(
            &ch,
            &Change::AddXconnect {
                from: "p1".into(),
                to: "p0".into(),
            },
        );
        assert!(
            add_v0 < add_br && add_br < member && member < mac && mac < xc,
            "{ch:#?}"
        );
        assert!(ch.contains(&Change::AddXconnect {
            from: "p0".into(),
            to: "p1".into()
        }));
        assert_eq!(ch.len(), 4 + 1 + 2 + 1 + 2);
    }

    #[test]
    fn to_empty_tears_down_in_reverse_order() {
        let old = cfg(SERVICES);
        let ch = diff(&old, &Config::default());
        let mac = pos(
            &ch,
            &Change::RemoveStaticMac {
                bridge: "br0".into(),
                mac: "02:00:00:00:00:01".into(),
            },
        );
        let member = pos(
            &ch,
            &Change::RemoveBridgeMember {
                bridge: "br0".into(),
                port: "v0".into(),
            },
        );
        let br = pos(&ch, &Change::DeleteBridge { name: "br0".into() });
        let port = pos(&ch, &Change::DeletePort { name: "v0".into() });
        let xc = pos(
            &ch,
            &Change::RemoveXconnect {
                from: "p0".into(),
                to: "p1".into(),
            },
        );
        assert!(
            mac < member && member < br && br < port && xc < port,
            "{ch:#?}"
        );
        assert_eq!(ch.len(), 1 + 2 + 2 + 1 + 4);
    }

    #[test]
    fn unchanged_ports_and_bridges_are_not_touched_when_a_port_is_added() {
        let old = cfg(SERVICES);
        let mut new = old.clone();
        new.ports.push(PortConfig::AfPacket(
            crate::config::AfPacketPortConfig::new("v2", "veth2"),
        ));
        new.bridges[0].ports.push("v2".into());
        let ch = diff(&old, &new);
        assert_eq!(
            ch,
            vec![
                Change::AddPort {
                    port: new.port("v2").unwrap().clone()
                },
                Change::AddBridgeMember {
                    bridge: "br0".into(),
                    port: "v2".into()
                },
            ]
        );
    }

    #[test]
    fn admin_change_only_sets_admin() {
        let old = cfg(SERVICES);
        let mut new = old.clone();
        new.ports[0].set_admin(AdminState::Down);
        assert_eq!(
            diff(&old, &new),
            vec![Change::SetPortAdmin {
                name: "p0".into(),
                up: false
            }]
        );
    }

    #[test]
    fn changed_backend_recreates_port_and_reattaches_its_services() {
        let old = cfg(SERVICES);
        let mut new = old.clone();
        if let PortConfig::AfPacket(a) = &mut new.ports[2] {
            a.interface = "veth9".into();
        }
        let ch = diff(&old, &new);
        let expect = vec![
            Change::RemoveStaticMac {
                bridge: "br0".into(),
                mac: "02:00:00:00:00:01".into(),
            },
            Change::RemoveBridgeMember {
                bridge: "br0".into(),
                port: "v0".into(),
            },
            Change::DeletePort { name: "v0".into() },
            Change::AddPort {
                port: new.ports[2].clone(),
            },
            Change::AddBridgeMember {
                bridge: "br0".into(),
                port: "v0".into(),
            },
            Change::AddStaticMac {
                bridge: "br0".into(),
                mac: "02:00:00:00:00:01".into(),
                port: "v0".into(),
            },
        ];
        assert_eq!(ch, expect);
        // An xconnected port: both directions are re-attached.
        let mut new = old.clone();
        if let PortConfig::Memif(m) = &mut new.ports[0] {
            m.ring_size = 2048;
        }
        let ch = diff(&old, &new);
        assert_eq!(ch.len(), 2 + 2 + 2, "{ch:#?}");
        assert!(
            pos(
                &ch,
                &Change::RemoveXconnect {
                    from: "p1".into(),
                    to: "p0".into()
                }
            ) < pos(&ch, &Change::DeletePort { name: "p0".into() })
        );
        assert!(
            pos(
                &ch,
                &Change::AddPort {
                    port: new.ports[0].clone()
                }
            ) < pos(
                &ch,
                &Change::AddXconnect {
                    from: "p1".into(),
                    to: "p0".into()
                }
            )
        );
    }

    #[test]
    fn bridge_settings_and_static_mac_moves() {
        let old = cfg(SERVICES);
        let mut new = old.clone();
        new.bridges[0].learn = false;
        new.bridges[0].static_mac[0] = StaticMacConfig {
            mac: "02:00:00:00:00:01".into(),
            port: "v1".into(),
        };
        new.bridges[0].static_mac.push(StaticMacConfig {
            mac: "02:00:00:00:00:AA".into(),
            port: "v0".into(),
        });
        let ch = diff(&old, &new);
        assert_eq!(
            ch,
            vec![
                Change::RemoveStaticMac {
                    bridge: "br0".into(),
                    mac: "02:00:00:00:00:01".into()
                },
                Change::SetBridgeSettings {
                    name: "br0".into(),
                    settings: (&new.bridges[0]).into()
                },
                Change::AddStaticMac {
                    bridge: "br0".into(),
                    mac: "02:00:00:00:00:01".into(),
                    port: "v1".into()
                },
                Change::AddStaticMac {
                    bridge: "br0".into(),
                    mac: "02:00:00:00:00:aa".into(),
                    port: "v0".into()
                },
            ]
        );
    }

    #[test]
    fn mac_case_change_is_no_change() {
        let old = cfg(SERVICES);
        let mut new = old.clone();
        new.bridges[0].static_mac[0].mac = "02:00:00:00:00:01".to_uppercase();
        assert!(diff(&old, &new).is_empty());
    }

    #[test]
    fn moving_a_port_between_services() {
        let old = cfg(SERVICES);
        let mut new = old.clone();
        // v1 leaves br0 and is cross-connected one way to v0's old... to p0's peer p1 instead of p1->p0.
        new.bridges[0].ports = vec!["v0".into()];
        new.xconnects = vec![
            XconnectConfig::one_way("p0", "p1"),
            XconnectConfig::one_way("v1", "p0"),
        ];
        validate(&new).unwrap();
        let ch = diff(&old, &new);
        assert_eq!(
            ch,
            vec![
                Change::RemoveXconnect {
                    from: "p1".into(),
                    to: "p0".into()
                },
                Change::RemoveBridgeMember {
                    bridge: "br0".into(),
                    port: "v1".into()
                },
                Change::AddXconnect {
                    from: "v1".into(),
                    to: "p0".into()
                },
            ]
        );
    }

    #[test]
    fn switch_section_changes_are_not_reloadable() {
        let old = cfg("");
        let mut new = old.clone();
        new.switch.buffers = 32768;
        new.switch.worker_cpu = Some(1);
        let e = check_reloadable(&old, &new).unwrap_err();
        assert!(
            e.has_path("switch.buffers") && e.has_path("switch.worker_cpu"),
            "{e}"
        );
        assert!(e.to_string().contains("restart"), "{e}");
        check_reloadable(&old, &old.clone()).unwrap();
    }
}
