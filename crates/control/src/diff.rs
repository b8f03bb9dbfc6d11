//! Config diff: [`diff`] turns (running config, new config) into an ordered list of [`Change`]s
//! that takes a running switch from one to the other while touching nothing that did not change:
//! a port whose backend settings are equal is not re-created (it keeps its counters and its memif
//! connection), a bridge-domain whose name survives keeps its MAC table.
//!
//! The diff knows no feature: it works on the [`ConfigObject`]s of every section
//! ([`crate::sections::objects`]), matched by key.
//! - An old object goes if the new config has no object with its key, or has one that differs and
//!   cannot replace it in place ([`ConfigObject::modifiable_from`]) — a port whose backend changed —
//!   or if an object it depends on goes (transitively): a re-created port's bridge membership, its
//!   static MACs and the cross-connects to and from it go, and come back after it.
//! - A new object comes if no old object had its key, or the old one goes.
//! - An object that differs and can be changed in place is modified (a port's admin state, a
//!   bridge-domain's settings).
//!
//! Order: removals first, highest dependency rank first (static MACs, then members, then
//! bridge-domains, then ports: nothing is removed while something still refers to it), then
//! additions and in-place changes, lowest rank first (ports, bridge-domains, members, static MACs,
//! cross-connects); within one rank, config order.
//!
//! [`check_reloadable`] rejects changes to `[switch]`, which are fixed for the life of the process.

use crate::config::Config;
use crate::validate::{ValidationError, ValidationErrors};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use vecswitch_switch::object::{ConfigObject, Obj, ObjectKey};

/// One step of a reload.
#[derive(Clone)]
pub enum Change {
    /// Adds an object.
    Add(Obj),
    /// Removes an object.
    Remove(Obj),
    /// Changes `old` into `new` in place (same key).
    Modify { old: Obj, new: Obj },
}

impl Change {
    /// Describes the change for people, as errors and `reload` answers print it
    /// (`add port v0 to bridge br0`).
    pub fn describe(&self) -> String {
        match self {
            Change::Add(o) => o.describe_add(),
            Change::Remove(o) => o.describe_remove(),
            Change::Modify { old, new } => new.describe_modify(&**old),
        }
    }

    /// The change that undoes this one.
    pub fn inverse(&self) -> Change {
        match self {
            Change::Add(o) => Change::Remove(o.clone()),
            Change::Remove(o) => Change::Add(o.clone()),
            Change::Modify { old, new } => Change::Modify {
                old: new.clone(),
                new: old.clone(),
            },
        }
    }

    /// The object added, removed or changed (its new value).
    pub fn object(&self) -> &dyn ConfigObject {
        match self {
            Change::Add(o) | Change::Remove(o) => &**o,
            Change::Modify { new, .. } => &**new,
        }
    }
}

impl fmt::Debug for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl PartialEq for Change {
    fn eq(&self, other: &Change) -> bool {
        match (self, other) {
            (Change::Add(a), Change::Add(b)) | (Change::Remove(a), Change::Remove(b)) => {
                a.same(&**b)
            }
            (Change::Modify { old: a, new: b }, Change::Modify { old: c, new: d }) => {
                a.same(&**c) && b.same(&**d)
            }
            _ => false,
        }
    }
}

impl serde::Serialize for Change {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.describe())
    }
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

/// The changes that take a switch running `old` to `new`. Both configs must be valid.
pub fn diff(old: &Config, new: &Config) -> Vec<Change> {
    diff_objects(
        &crate::sections::objects(old),
        &crate::sections::objects(new),
    )
}

/// [`diff`] over two lists of objects (each key at most once per list).
pub fn diff_objects(old: &[Obj], new: &[Obj]) -> Vec<Change> {
    let old_by: BTreeMap<ObjectKey, &Obj> = old.iter().map(|o| (o.key(), o)).collect();
    let new_by: BTreeMap<ObjectKey, &Obj> = new.iter().map(|o| (o.key(), o)).collect();
    // Old objects that go: absent, or changed in a way that cannot be made in place...
    let mut gone: HashSet<ObjectKey> = old
        .iter()
        .filter(|o| match new_by.get(&o.key()) {
            None => true,
            Some(n) => !n.same(&***o) && !n.modifiable_from(&***o),
        })
        .map(|o| o.key())
        .collect();
    // ... or depending on something that goes (to a fixpoint: ranks are few).
    loop {
        let more: Vec<ObjectKey> = old
            .iter()
            .filter(|o| !gone.contains(&o.key()))
            .filter(|o| o.depends_on().iter().any(|d| gone.contains(d)))
            .map(|o| o.key())
            .collect();
        if more.is_empty() {
            break;
        }
        gone.extend(more);
    }
    let mut removals: Vec<&Obj> = old.iter().filter(|o| gone.contains(&o.key())).collect();
    // Highest rank first; `sort_by_key` is stable, so config order within a rank.
    removals.sort_by_key(|o| std::cmp::Reverse(o.rank()));
    let mut forward: Vec<(u8, Change)> = Vec::new();
    for n in new {
        let k = n.key();
        match old_by.get(&k) {
            Some(_) if gone.contains(&k) => forward.push((n.rank(), Change::Add(n.clone()))),
            None => forward.push((n.rank(), Change::Add(n.clone()))),
            Some(o) if !n.same(&***o) => forward.push((
                n.rank(),
                Change::Modify {
                    old: (*o).clone(),
                    new: n.clone(),
                },
            )),
            Some(_) => {}
        }
    }
    forward.sort_by_key(|(r, _)| *r);
    removals
        .into_iter()
        .map(|o| Change::Remove(o.clone()))
        .chain(forward.into_iter().map(|(_, c)| c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AdminState, PortConfig, StaticMacConfig, XconnectConfig};
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

    /// The changes as `reload` answers them.
    fn texts(changes: &[Change]) -> Vec<String> {
        changes.iter().map(Change::describe).collect()
    }

    fn pos(changes: &[Change], c: &str) -> usize {
        changes
            .iter()
            .position(|x| x.describe() == c)
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
                .filter(|c| matches!(c, Change::Add(o) if crate::ports::port_of(&**o).is_some()))
                .count(),
            4
        );
        let add_v0 = pos(&ch, "add af_packet port v0");
        let add_br = pos(&ch, "add bridge br0");
        let member = pos(&ch, "add port v0 to bridge br0");
        let mac = pos(&ch, "add static mac 02:00:00:00:00:01 -> v0 in bridge br0");
        let xc = pos(&ch, "add xconnect p1 -> p0");
        assert!(
            add_v0 < add_br && add_br < member && member < mac && mac < xc,
            "{ch:#?}"
        );
        pos(&ch, "add xconnect p0 -> p1");
        assert_eq!(ch.len(), 4 + 1 + 2 + 1 + 2);
    }

    #[test]
    fn to_empty_tears_down_in_reverse_order() {
        let old = cfg(SERVICES);
        let ch = diff(&old, &Config::default());
        let mac = pos(&ch, "remove static mac 02:00:00:00:00:01 from bridge br0");
        let member = pos(&ch, "remove port v0 from bridge br0");
        let br = pos(&ch, "delete bridge br0");
        let port = pos(&ch, "delete port v0");
        let xc = pos(&ch, "remove xconnect p0 -> p1");
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
            texts(&ch),
            ["add af_packet port v2", "add port v2 to bridge br0"]
        );
        // The added port is the new config's.
        assert_eq!(
            ch[0],
            Change::Add(Arc::new(crate::ports::PortObj(new.ports[4].clone())))
        );
    }

    #[test]
    fn admin_change_only_sets_admin() {
        let old = cfg(SERVICES);
        let mut new = old.clone();
        new.ports[0].set_admin(AdminState::Down);
        let ch = diff(&old, &new);
        assert_eq!(texts(&ch), ["set port p0 down"]);
        assert!(matches!(ch[0], Change::Modify { .. }));
    }

    #[test]
    fn changed_backend_recreates_port_and_reattaches_its_services() {
        let old = cfg(SERVICES);
        let mut new = old.clone();
        if let PortConfig::AfPacket(a) = &mut new.ports[2] {
            a.interface = "veth9".into();
        }
        let ch = diff(&old, &new);
        assert_eq!(
            texts(&ch),
            [
                "remove static mac 02:00:00:00:00:01 from bridge br0",
                "remove port v0 from bridge br0",
                "delete port v0",
                "add af_packet port v0",
                "add port v0 to bridge br0",
                "add static mac 02:00:00:00:00:01 -> v0 in bridge br0",
            ]
        );
        assert_eq!(
            ch[3],
            Change::Add(Arc::new(crate::ports::PortObj(new.ports[2].clone())))
        );
        // An xconnected port: both directions are re-attached.
        let mut new = old.clone();
        if let PortConfig::Memif(m) = &mut new.ports[0] {
            m.ring_size = 2048;
        }
        let ch = diff(&old, &new);
        assert_eq!(ch.len(), 2 + 2 + 2, "{ch:#?}");
        assert!(pos(&ch, "remove xconnect p1 -> p0") < pos(&ch, "delete port p0"));
        assert!(pos(&ch, "add memif port p0") < pos(&ch, "add xconnect p1 -> p0"));
    }

    #[test]
    fn bridge_settings_and_static_mac_moves() {
        let old = cfg(SERVICES);
        let mut new = old.clone();
        new.bridges[0].learn = false;
        new.bridges[0].static_mac[0] = StaticMacConfig {
            mac: "02:00:00:00:00:01".parse().unwrap(),
            port: "v1".into(),
        };
        new.bridges[0].static_mac.push(StaticMacConfig {
            mac: "02:00:00:00:00:AA".parse().unwrap(),
            port: "v0".into(),
        });
        let ch = diff(&old, &new);
        assert_eq!(
            texts(&ch),
            [
                "remove static mac 02:00:00:00:00:01 from bridge br0",
                "change settings of bridge br0",
                "add static mac 02:00:00:00:00:01 -> v1 in bridge br0",
                "add static mac 02:00:00:00:00:aa -> v0 in bridge br0",
            ]
        );
        // The new settings are the ones applied.
        let Change::Modify { new: b, .. } = &ch[1] else {
            panic!("{ch:?}")
        };
        let b = b
            .as_any()
            .downcast_ref::<vecswitch_switch::l2::config::BridgeObj>()
            .unwrap();
        assert_eq!(b.settings, new.bridges[0].settings());
    }

    #[test]
    fn mac_case_change_is_no_change() {
        let old = cfg(SERVICES);
        let new = Config::from_toml(
            &old.to_toml().replace(
                "02:00:00:00:00:01",
                "02:00:00:00:00:01".to_uppercase().as_str(),
            ),
            "t",
        )
        .unwrap();
        assert!(diff(&old, &new).is_empty());
    }

    #[test]
    fn moving_a_port_between_services() {
        let old = cfg(SERVICES);
        let mut new = old.clone();
        // v1 leaves br0 and is cross-connected one way to p0, instead of p1 -> p0.
        new.bridges[0].ports = vec!["v0".into()];
        new.xconnects = vec![
            XconnectConfig::one_way("p0", "p1"),
            XconnectConfig::one_way("v1", "p0"),
        ];
        validate(&new).unwrap();
        let ch = diff(&old, &new);
        assert_eq!(
            texts(&ch),
            [
                "remove xconnect p1 -> p0",
                "remove port v1 from bridge br0",
                "add xconnect v1 -> p0",
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

    use std::sync::Arc;
}
