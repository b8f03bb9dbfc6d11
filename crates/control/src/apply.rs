//! Applying [`Change`]s to a running switch, all or nothing.
//!
//! [`apply_changes`] runs a list of changes in order, each through its object's
//! [`ConfigObject`](vecswitch_switch::object::ConfigObject) methods (`add`, `remove`, `modify`):
//! the engine knows no feature. If one fails, the ones already done are undone in reverse order
//! (each by its [`Change::inverse`]), so a failed apply leaves the switch as it was.
//!
//! Ports are the one kind the engine helps: a port's backend must be opened before the port is
//! added ([`PortFactory`]; the controller opens ports with new names before the switch is touched,
//! see [`crate::controller`]), and a deleted port is held until the apply ends, so that an undo puts
//! back the same object (it keeps its counters and connection). If opening a port fails while
//! deleted ports are still held (a renamed port wants the interface or memif id its old self
//! holds), the held ones are let go — their undo becomes "open again from the old config" — and the
//! open is tried once more.

use crate::diff::Change;
use crate::ports::{port_of, PortOpenError};
use std::collections::HashMap;
use vecswitch_ports::Port;
use vecswitch_switch::object::ApplyCx;
use vecswitch_switch::{Switch, SwitchError};

pub use crate::ports::PortFactory;

/// Why one step of an apply failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The switch refused it.
    #[error(transparent)]
    Switch(#[from] SwitchError),
    /// A port could not be opened.
    #[error(transparent)]
    PortOpen(Box<PortOpenError>),
    /// A failure injected by a test ([`apply_with_faults`]).
    #[error("injected failure in {0}")]
    Injected(String),
}

impl From<PortOpenError> for StepError {
    fn from(e: PortOpenError) -> StepError {
        StepError::PortOpen(Box::new(e))
    }
}

/// A change that could not be applied; everything before it was undone.
#[derive(Debug, thiserror::Error)]
#[error("{what} failed: {error}{}", if self.undo_failures.is_empty() { String::from(" (nothing was changed)") } else { format!(" (undo also failed, the switch may differ from its config: {})", self.undo_failures.join("; ")) })]
pub struct ApplyError {
    /// The change, described for people (`add port p0`).
    pub what: String,
    /// Why it failed.
    #[source]
    pub error: Box<StepError>,
    /// Undo steps that failed too (empty in every case we know of), each described with its
    /// error.
    pub undo_failures: Vec<String>,
}

/// Runs one change on the switch.
fn run(sw: &mut Switch, c: &Change, cx: &mut ApplyCx) -> Result<(), SwitchError> {
    match c {
        Change::Add(o) => o.add(sw, cx),
        Change::Remove(o) => o.remove(sw, cx),
        Change::Modify { old, new } => new.modify(&**old, sw, cx),
    }
}

/// Applies `changes` (from [`crate::diff::diff`]) in order; on the first failure undoes what was
/// done and returns the error. `prebuilt` holds ports already opened for port additions; others
/// are opened with `factory` when their turn comes. Ports left over are dropped (closed).
pub fn apply_changes(
    sw: &mut Switch,
    changes: &[Change],
    prebuilt: HashMap<String, Box<dyn Port>>,
    factory: &PortFactory,
) -> Result<(), ApplyError> {
    apply_with_faults(sw, changes, prebuilt, factory, &mut |_| false)
}

/// [`apply_changes`] with fault injection for tests: a step for which `fail` answers true fails
/// (before it touches the switch) with [`StepError::Injected`].
pub fn apply_with_faults(
    sw: &mut Switch,
    changes: &[Change],
    prebuilt: HashMap<String, Box<dyn Port>>,
    factory: &PortFactory,
    fail: &mut dyn FnMut(&Change) -> bool,
) -> Result<(), ApplyError> {
    let mut cx = ApplyCx { ports: prebuilt };
    // Ports deleted by this apply, held for the undo.
    let mut held: HashMap<String, Box<dyn Port>> = HashMap::new();
    let mut done: Vec<&Change> = Vec::with_capacity(changes.len());
    // One FIB build for the whole apply, not one trie update per route (`Switch::begin_bulk`).
    sw.begin_bulk();
    for c in changes {
        match step(sw, c, &mut cx, &mut held, factory, fail) {
            Ok(()) => done.push(c),
            Err(error) => {
                let undo_failures = undo(sw, &done, &mut cx, &mut held, factory);
                sw.end_bulk();
                return Err(ApplyError {
                    what: c.describe(),
                    error: Box::new(error),
                    undo_failures,
                });
            }
        }
    }
    sw.end_bulk();
    Ok(())
}

fn step(
    sw: &mut Switch,
    c: &Change,
    cx: &mut ApplyCx,
    held: &mut HashMap<String, Box<dyn Port>>,
    factory: &PortFactory,
    fail: &mut dyn FnMut(&Change) -> bool,
) -> Result<(), StepError> {
    if fail(c) {
        return Err(StepError::Injected(c.describe()));
    }
    if let Change::Add(o) = c {
        if let Some(p) = port_of(&**o) {
            if !cx.ports.contains_key(p.name()) {
                let opened = match factory(p) {
                    Ok(x) => x,
                    Err(_) if !held.is_empty() => {
                        // Dropping the held ports closes them (their undo re-opens them).
                        held.clear();
                        factory(p)?
                    }
                    Err(e) => return Err(e.into()),
                };
                cx.ports.insert(p.name().to_string(), opened);
            }
        }
    }
    run(sw, c, cx)?;
    if let Change::Remove(o) = c {
        if let Some(p) = port_of(&**o) {
            if let Some(x) = cx.ports.remove(p.name()) {
                held.insert(p.name().to_string(), x);
            }
        }
    }
    Ok(())
}

/// Undoes `done` in reverse order; returns the steps that failed, described with their error. A
/// failed undo step does not stop the others: they put back what they can.
fn undo(
    sw: &mut Switch,
    done: &[&Change],
    cx: &mut ApplyCx,
    held: &mut HashMap<String, Box<dyn Port>>,
    factory: &PortFactory,
) -> Vec<String> {
    let mut failures = Vec::new();
    for c in done.iter().rev() {
        let u = c.inverse();
        let r: Result<(), StepError> = (|| {
            if let Change::Add(o) = &u {
                if let Some(p) = port_of(&**o) {
                    // The same object if it is still held, else opened again from its config.
                    let port = match held.remove(p.name()) {
                        Some(x) => x,
                        None => factory(p)?,
                    };
                    cx.ports.insert(p.name().to_string(), port);
                }
            }
            run(sw, &u, cx)?;
            if let Change::Remove(o) = &u {
                if let Some(p) = port_of(&**o) {
                    // A port this apply added: close it.
                    cx.ports.remove(p.name());
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            failures.push(format!("{}: {e}", u.describe()));
        }
    }
    failures
}

#[cfg(test)]
pub(crate) mod testing {
    //! The real switch in the test's thread, with ports that do nothing, and a comparable
    //! snapshot of its state.
    use crate::ports::{PortConfig, PortFactory, PortOpenError};
    use vecswitch_buffer::Pool;
    use vecswitch_ports::{LinkState, Port, PortStats};
    use vecswitch_switch::{ServiceInfo, Switch, SwitchConfig};

    /// A port that does nothing; its serial number shows as `rx_packets`, so tests can tell a
    /// re-created port from a kept one.
    #[derive(Debug)]
    pub struct NullPort {
        pub name: String,
        pub serial: u32,
    }

    impl Port for NullPort {
        fn name(&self) -> &str {
            &self.name
        }
        fn rx_burst(&mut self, _pool: &mut Pool, _out: &mut Vec<u32>, _max: usize) -> usize {
            0
        }
        fn tx_burst(&mut self, _pool: &mut Pool, _pkts: &[u32]) -> usize {
            0
        }
        fn stats(&self) -> PortStats {
            PortStats {
                rx_packets: u64::from(self.serial),
                ..Default::default()
            }
        }
        fn clear_stats(&mut self) {}
        fn link(&self) -> LinkState {
            LinkState::Down
        }
    }

    /// Opens `NullPort`s with rising serials; names starting with `bad` fail.
    pub fn factory() -> Box<PortFactory> {
        let n = std::sync::atomic::AtomicU32::new(1);
        Box::new(move |p: &PortConfig| {
            if p.name().starts_with("bad") {
                return Err(PortOpenError::Other {
                    port: p.name().to_string(),
                    reason: "injected".into(),
                });
            }
            let serial = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(Box::new(NullPort {
                name: p.name().to_string(),
                serial,
            }) as Box<dyn Port>)
        })
    }

    /// A small switch, not spawned.
    pub fn switch() -> Switch {
        Switch::new(SwitchConfig {
            buffers: 1024,
            mac_table_entries: 1024,
            ..Default::default()
        })
    }

    /// Ports (name, serial, admin, service), bridges (name, settings, members), MAC entries —
    /// independent of indices and of the order things were added in.
    pub fn snapshot(sw: &Switch, serials: bool) -> String {
        let mut ports: Vec<String> = sw
            .show_ports()
            .into_iter()
            .map(|p| {
                let svc = match p.service {
                    ServiceInfo::None => "-".to_string(),
                    ServiceInfo::Xconnect { to } => format!("xc->{to}"),
                    ServiceInfo::Bridge { bridge } => format!("bd:{bridge}"),
                };
                if serials {
                    format!("{}#{}:{}:{svc}", p.name, p.stats.rx_packets, p.admin_up)
                } else {
                    format!("{}:{}:{svc}", p.name, p.admin_up)
                }
            })
            .collect();
        ports.sort();
        let mut bridges: Vec<String> = sw
            .show_bridges()
            .into_iter()
            .map(|mut b| {
                b.members.sort();
                format!("{}:{:?}:{:?}", b.name, b.settings, b.members)
            })
            .collect();
        bridges.sort();
        let macs: Vec<String> = sw
            .show_mac(None)
            .unwrap()
            .into_iter()
            .map(|m| format!("{}:{}:{}:{}", m.bridge, m.mac, m.port, m.is_static))
            .collect();
        format!("{ports:?} {bridges:?} {macs:?}")
    }

    /// The directed cross-connects (from, to), sorted.
    pub fn xconnects(sw: &Switch) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = sw
            .show_ports()
            .into_iter()
            .filter_map(|p| match p.service {
                ServiceInfo::Xconnect { to } => Some((p.name, to)),
                _ => None,
            })
            .collect();
        v.sort();
        v
    }

    /// The serial of port `name`.
    pub fn serial(sw: &Switch, name: &str) -> u64 {
        sw.port_stats(name).unwrap().rx_packets
    }

    /// Members of bridge `name`, sorted.
    pub fn members(sw: &Switch, name: &str) -> Vec<String> {
        let mut m = sw
            .show_bridges()
            .into_iter()
            .find(|b| b.name == name)
            .map(|b| b.members)
            .unwrap_or_default();
        m.sort();
        m
    }

    /// Whether port `name` is administratively up.
    pub fn admin_up(sw: &Switch, name: &str) -> bool {
        sw.show_ports()
            .into_iter()
            .find(|p| p.name == name)
            .unwrap()
            .admin_up
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{admin_up, factory, members, serial, snapshot, switch, xconnects};
    use super::*;
    use crate::config::{BridgeConfig, Config, PortConfig};
    use crate::diff::diff;
    use crate::validate::validate;

    fn cfg(extra: &str) -> Config {
        let c = Config::from_toml(
            &format!(
                r#"
[[port]]
name = "p0"
type = "memif"
socket = "/tmp/m.sock"
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
admin = "down"
{extra}"#
            ),
            "t",
        )
        .unwrap();
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

    fn build(c: &Config) -> Switch {
        let mut sw = switch();
        apply_changes(
            &mut sw,
            &diff(&Config::default(), c),
            HashMap::new(),
            &*factory(),
        )
        .unwrap();
        sw
    }

    #[test]
    fn builds_a_whole_config() {
        let sw = build(&cfg(SERVICES));
        assert_eq!(sw.show_ports().len(), 4);
        assert!(!admin_up(&sw, "v1"), "v1 is admin down");
        assert!(admin_up(&sw, "v0"));
        assert_eq!(
            xconnects(&sw),
            vec![("p0".into(), "p1".into()), ("p1".into(), "p0".into())]
        );
        assert_eq!(members(&sw, "br0"), ["v0", "v1"]);
        let macs = sw.show_mac(Some("br0")).unwrap();
        assert_eq!(macs.len(), 1);
        assert_eq!(
            (
                macs[0].mac.as_str(),
                macs[0].port.as_str(),
                macs[0].is_static
            ),
            ("02:00:00:00:00:01", "v0", true)
        );
    }

    #[test]
    fn reload_keeps_unchanged_ports_as_the_same_objects() {
        let old = cfg(SERVICES);
        let mut sw = build(&old);
        let serial_p0 = serial(&sw, "p0");
        let serial_v0 = serial(&sw, "v0");
        let mut new = old.clone();
        if let PortConfig::AfPacket(a) = &mut new.ports[2] {
            a.interface = "veth7".into();
        }
        let f = factory();
        apply_changes(&mut sw, &diff(&old, &new), HashMap::new(), &*f).unwrap();
        assert_eq!(serial(&sw, "p0"), serial_p0, "p0 kept");
        assert_ne!(serial(&sw, "v0"), serial_v0, "v0 re-created");
        // And v0's services came back.
        assert!(members(&sw, "br0").contains(&"v0".to_string()));
        assert_eq!(sw.show_mac(None).unwrap().len(), 1);
    }

    #[test]
    fn failure_midway_undoes_everything() {
        let old = cfg(SERVICES);
        let mut sw = build(&old);
        let before = snapshot(&sw, true);
        // A reload that removes the bridge, re-creates p0, and fails on the last step.
        let mut new = old.clone();
        new.bridges.clear();
        if let PortConfig::Memif(m) = &mut new.ports[0] {
            m.ring_size = 4096;
        }
        let ch = diff(&old, &new);
        assert!(
            ch.last().unwrap().describe().starts_with("add xconnect"),
            "{ch:?}"
        );
        let mut once = true;
        let e = apply_with_faults(&mut sw, &ch, HashMap::new(), &*factory(), &mut |c| {
            let hit = once && c.describe().starts_with("add xconnect p1");
            once &= !hit;
            hit
        })
        .unwrap_err();
        assert_eq!(e.what, "add xconnect p1 -> p0");
        assert!(e.undo_failures.is_empty(), "{e}");
        assert!(e.to_string().contains("nothing was changed"), "{e}");
        // The same port objects (serials), bridges, macs, xconnects as before.
        assert_eq!(snapshot(&sw, true), before);
    }

    #[test]
    fn port_open_failure_undoes() {
        let old = cfg("");
        let mut sw = build(&old);
        let before = snapshot(&sw, true);
        let mut new = old.clone();
        new.ports.push(PortConfig::AfPacket(
            crate::config::AfPacketPortConfig::new("bad0", "veth9"),
        ));
        new.bridges.push(BridgeConfig {
            ports: vec!["v0".into()],
            ..BridgeConfig::new("b")
        });
        let ch = diff(&old, &new);
        let e = apply_changes(&mut sw, &ch, HashMap::new(), &*factory()).unwrap_err();
        assert!(
            matches!(*e.error, StepError::PortOpen(_))
                && e.to_string().contains("cannot open bad0"),
            "{e}"
        );
        assert_eq!(snapshot(&sw, true), before);
    }

    /// A port that holds a resource (its interface name) until dropped, like a memif id or an
    /// AF_PACKET interface.
    struct Held(String, Arc<Mutex<HashSet<String>>>);
    impl Drop for Held {
        fn drop(&mut self) {
            self.1.lock().unwrap().remove(&self.0);
        }
    }
    impl Port for Held {
        fn name(&self) -> &str {
            &self.0
        }
        fn rx_burst(
            &mut self,
            _: &mut vecswitch_buffer::Pool,
            _: &mut Vec<u32>,
            _: usize,
        ) -> usize {
            0
        }
        fn tx_burst(&mut self, _: &mut vecswitch_buffer::Pool, _: &[u32]) -> usize {
            0
        }
        fn stats(&self) -> vecswitch_ports::PortStats {
            Default::default()
        }
        fn clear_stats(&mut self) {}
        fn link(&self) -> vecswitch_ports::LinkState {
            vecswitch_ports::LinkState::Down
        }
    }
    use std::collections::HashSet;
    use std::sync::{Arc, Mutex};

    fn holding_factory(held: Arc<Mutex<HashSet<String>>>) -> Box<PortFactory> {
        Box::new(move |p: &PortConfig| {
            let PortConfig::AfPacket(a) = p else {
                return Err(PortOpenError::Other {
                    port: p.name().into(),
                    reason: "af_packet only".into(),
                });
            };
            if !held.lock().unwrap().insert(a.interface.clone()) {
                return Err(PortOpenError::Other {
                    port: p.name().into(),
                    reason: format!("interface {} busy", a.interface),
                });
            }
            Ok(Box::new(Held(a.interface.clone(), Arc::clone(&held))) as Box<dyn Port>)
        })
    }

    #[test]
    fn renamed_port_gets_the_resource_and_a_failure_after_that_still_undoes() {
        let held = Arc::new(Mutex::new(HashSet::new()));
        let f = holding_factory(Arc::clone(&held));
        let old = Config::from_toml(
            "[[port]]\nname = \"v0\"\ntype = \"af_packet\"\ninterface = \"veth0\"\n",
            "t",
        )
        .unwrap();
        let mut sw = switch();
        apply_changes(
            &mut sw,
            &diff(&Config::default(), &old),
            HashMap::new(),
            &*f,
        )
        .unwrap();
        // Rename v0 -> w0 (same interface): works although v0 holds veth0 when w0 is opened.
        let mut renamed = old.clone();
        if let PortConfig::AfPacket(a) = &mut renamed.ports[0] {
            a.name = "w0".into();
        }
        apply_changes(&mut sw, &diff(&old, &renamed), HashMap::new(), &*f).unwrap();
        let names = |sw: &Switch| {
            sw.show_ports()
                .into_iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&sw), ["w0"]);
        // Rename back, plus a bridge whose creation fails: everything is undone, w0 re-opened.
        let mut back = old.clone();
        back.bridges.push(BridgeConfig::new("b"));
        let e = apply_with_faults(
            &mut sw,
            &diff(&renamed, &back),
            HashMap::new(),
            &*f,
            &mut |c| c.describe() == "add bridge b",
        )
        .unwrap_err();
        assert!(e.undo_failures.is_empty(), "{e}");
        assert_eq!(names(&sw), ["w0"]);
        assert!(sw.show_bridges().is_empty());
        assert_eq!(
            held.lock().unwrap().len(),
            1,
            "exactly one port holds veth0"
        );
    }

    #[test]
    fn prebuilt_ports_are_used() {
        let new = cfg("");
        let mut sw = switch();
        let mut pre: HashMap<String, Box<dyn Port>> = HashMap::new();
        pre.insert(
            "p0".into(),
            Box::new(testing::NullPort {
                name: "p0".into(),
                serial: 999,
            }),
        );
        apply_changes(&mut sw, &diff(&Config::default(), &new), pre, &*factory()).unwrap();
        assert_eq!(serial(&sw, "p0"), 999);
    }

    use super::testing;
}
