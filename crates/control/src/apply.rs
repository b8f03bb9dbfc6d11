//! Applying [`Change`]s to a running dataplane.
//!
//! [`Dataplane`] is what the control plane needs from a switch: the mutating calls that changes map
//! to, and the `show`/counter/trace calls that requests map to. It is implemented for
//! `vecswitch_switch::Switch` (in [`crate::switch_impl`]) and, in tests, for a recording fake.
//!
//! [`apply_changes`] runs a list of changes in order. If one fails, the ones already done are undone
//! in reverse order (a deleted port is put back as the same object, so it keeps its counters and
//! connection), so a failed apply leaves the dataplane as it was: all or nothing. Ports are opened
//! by a [`PortFactory`] before the switch is touched where possible (see [`crate::controller`]).

use crate::config::{Config, PortConfig};
use crate::diff::{BridgeSettingsConfig, Change};
use crate::protocol::ShowWhat;
use crate::validate::parse_mac;
use std::collections::HashMap;
use vecswitch_ports::Port;

/// Opens a port from its config (the one place that knows every backend; see [`crate::ports`]).
pub type PortFactory = dyn Fn(&PortConfig) -> Result<Box<dyn Port>, String> + Send + Sync;

/// What the control plane calls on a switch. Errors are the switch's own messages.
pub trait Dataplane {
    fn add_port(&mut self, name: &str, port: Box<dyn Port>) -> Result<(), String>;
    /// Deletes a port and gives it back (so that an undo can re-add the same object).
    fn delete_port(&mut self, name: &str) -> Result<Box<dyn Port>, String>;
    fn set_port_admin(&mut self, name: &str, up: bool) -> Result<(), String>;
    fn add_bridge(&mut self, name: &str, settings: &BridgeSettingsConfig) -> Result<(), String>;
    fn delete_bridge(&mut self, name: &str) -> Result<(), String>;
    fn set_bridge_settings(
        &mut self,
        name: &str,
        settings: &BridgeSettingsConfig,
    ) -> Result<(), String>;
    fn add_bridge_member(&mut self, bridge: &str, port: &str) -> Result<(), String>;
    fn remove_bridge_member(&mut self, bridge: &str, port: &str) -> Result<(), String>;
    /// One direction: what `from` receives is sent out of `to`.
    fn add_xconnect(&mut self, from: &str, to: &str) -> Result<(), String>;
    /// Removes the cross-connect whose receive side is `from`.
    fn delete_xconnect(&mut self, from: &str) -> Result<(), String>;
    fn add_static_mac(&mut self, bridge: &str, mac: [u8; 6], port: &str) -> Result<(), String>;
    fn delete_static_mac(&mut self, bridge: &str, mac: [u8; 6]) -> Result<(), String>;
    /// Forgets the learned MACs of `bridge` (behind `port` only, if given); returns how many.
    fn flush_mac(&mut self, bridge: &str, port: Option<&str>) -> Result<usize, String>;
    /// `show WHAT [BRIDGE]` as JSON.
    fn show(&mut self, what: ShowWhat, bridge: Option<&str>) -> Result<serde_json::Value, String>;
    fn clear_counters(&mut self);
    fn trace_add(&mut self, count: u32);
    fn trace_clear(&mut self);
    /// Starts writing what `port` receives and sends to the pcap file `file` (at most `count`).
    fn capture(&mut self, port: &str, file: &str, count: Option<u64>) -> Result<(), String>;
    /// Stops the capture on `port`; answers what was captured.
    fn capture_stop(&mut self, port: &str) -> Result<serde_json::Value, String>;
}

/// A change that could not be applied; everything before it was undone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} failed: {message}{}", if self.undo_failures.is_empty() { String::from(" (nothing was changed)") } else { format!(" (undo also failed, the switch may differ from its config: {})", self.undo_failures.join("; ")) })]
pub struct ApplyError {
    /// The change, described for people (`add port p0`).
    pub what: String,
    pub message: String,
    /// Undo steps that failed too (empty in every case we know of).
    pub undo_failures: Vec<String>,
}

/// Describes a change for people, as errors and `reload` answers print it.
pub fn describe(c: &Change) -> String {
    match c {
        Change::RemoveXconnect { from, to } => format!("remove xconnect {from} -> {to}"),
        Change::RemoveStaticMac { bridge, mac } => {
            format!("remove static mac {mac} from bridge {bridge}")
        }
        Change::RemoveBridgeMember { bridge, port } => {
            format!("remove port {port} from bridge {bridge}")
        }
        Change::DeleteBridge { name } => format!("delete bridge {name}"),
        Change::DeletePort { name } => format!("delete port {name}"),
        Change::AddPort { port } => format!("add {} port {}", port.type_name(), port.name()),
        Change::SetPortAdmin { name, up } => {
            format!("set port {name} {}", if *up { "up" } else { "down" })
        }
        Change::AddBridge { name, .. } => format!("add bridge {name}"),
        Change::SetBridgeSettings { name, .. } => format!("change settings of bridge {name}"),
        Change::AddBridgeMember { bridge, port } => format!("add port {port} to bridge {bridge}"),
        Change::AddStaticMac { bridge, mac, port } => {
            format!("add static mac {mac} -> {port} in bridge {bridge}")
        }
        Change::AddXconnect { from, to } => format!("add xconnect {from} -> {to}"),
    }
}

/// How to undo one applied step.
enum Undo {
    Change(Change),
    /// Put back the port object that a `DeletePort` took out, with its admin state.
    Readd {
        name: String,
        port: Box<dyn Port>,
        up: bool,
    },
}

fn mac_of(mac: &str) -> Result<[u8; 6], String> {
    parse_mac(mac).ok_or_else(|| format!("mac {mac:?} is not a MAC address"))
}

/// Applies one change; returns how to undo it.
fn apply_one(
    dp: &mut dyn Dataplane,
    c: &Change,
    old: &Config,
    prebuilt: &mut HashMap<String, Box<dyn Port>>,
    factory: &PortFactory,
) -> Result<Undo, String> {
    Ok(match c {
        Change::RemoveXconnect { from, to } => {
            dp.delete_xconnect(from)?;
            Undo::Change(Change::AddXconnect {
                from: from.clone(),
                to: to.clone(),
            })
        }
        Change::RemoveStaticMac { bridge, mac } => {
            dp.delete_static_mac(bridge, mac_of(mac)?)?;
            let port = old
                .bridge(bridge)
                .and_then(|b| {
                    b.static_mac
                        .iter()
                        .find(|s| parse_mac(&s.mac) == parse_mac(mac))
                })
                .map(|s| s.port.clone())
                .unwrap_or_default();
            Undo::Change(Change::AddStaticMac {
                bridge: bridge.clone(),
                mac: mac.clone(),
                port,
            })
        }
        Change::RemoveBridgeMember { bridge, port } => {
            dp.remove_bridge_member(bridge, port)?;
            Undo::Change(Change::AddBridgeMember {
                bridge: bridge.clone(),
                port: port.clone(),
            })
        }
        Change::DeleteBridge { name } => {
            dp.delete_bridge(name)?;
            let settings = old
                .bridge(name)
                .map(BridgeSettingsConfig::from)
                .unwrap_or_else(|| {
                    BridgeSettingsConfig::from(&crate::config::BridgeConfig::new(name))
                });
            Undo::Change(Change::AddBridge {
                name: name.clone(),
                settings,
            })
        }
        Change::DeletePort { name } => {
            let port = dp.delete_port(name)?;
            let up = old.port(name).map(|p| p.admin().is_up()).unwrap_or(true);
            Undo::Readd {
                name: name.clone(),
                port,
                up,
            }
        }
        Change::AddPort { port } => {
            let name = port.name();
            let p = match prebuilt.remove(name) {
                Some(p) => p,
                None => factory(port)?,
            };
            dp.add_port(name, p)?;
            if !port.admin().is_up() {
                if let Err(e) = dp.set_port_admin(name, false) {
                    // Keep all-or-nothing: take the port out again.
                    let _ = dp.delete_port(name);
                    return Err(e);
                }
            }
            Undo::Change(Change::DeletePort {
                name: name.to_string(),
            })
        }
        Change::SetPortAdmin { name, up } => {
            dp.set_port_admin(name, *up)?;
            Undo::Change(Change::SetPortAdmin {
                name: name.clone(),
                up: !*up,
            })
        }
        Change::AddBridge { name, settings } => {
            dp.add_bridge(name, settings)?;
            Undo::Change(Change::DeleteBridge { name: name.clone() })
        }
        Change::SetBridgeSettings { name, settings } => {
            dp.set_bridge_settings(name, settings)?;
            let before = old
                .bridge(name)
                .map(BridgeSettingsConfig::from)
                .unwrap_or_else(|| settings.clone());
            Undo::Change(Change::SetBridgeSettings {
                name: name.clone(),
                settings: before,
            })
        }
        Change::AddBridgeMember { bridge, port } => {
            dp.add_bridge_member(bridge, port)?;
            Undo::Change(Change::RemoveBridgeMember {
                bridge: bridge.clone(),
                port: port.clone(),
            })
        }
        Change::AddStaticMac { bridge, mac, port } => {
            dp.add_static_mac(bridge, mac_of(mac)?, port)?;
            Undo::Change(Change::RemoveStaticMac {
                bridge: bridge.clone(),
                mac: mac.clone(),
            })
        }
        Change::AddXconnect { from, to } => {
            dp.add_xconnect(from, to)?;
            Undo::Change(Change::RemoveXconnect {
                from: from.clone(),
                to: to.clone(),
            })
        }
    })
}

/// Opens `port`. If that fails while ports deleted earlier in this apply are still held for the
/// undo (a deleted port keeps its socket, memif id or interface until it is dropped), those are let
/// go — their undo becomes "open again from the old config" — and the open is tried once more.
/// `None`: it still fails; `apply_one` then opens it again and reports the error.
fn open_releasing(
    port: &PortConfig,
    old: &Config,
    undo: &mut [Undo],
    factory: &PortFactory,
) -> Option<Box<dyn Port>> {
    if let Ok(p) = factory(port) {
        return Some(p);
    }
    let mut released = false;
    for u in undo.iter_mut() {
        if let Undo::Readd { name, .. } = u {
            if let Some(pc) = old.port(name) {
                // Dropping the held object closes it.
                *u = Undo::Change(Change::AddPort { port: pc.clone() });
                released = true;
            }
        }
    }
    if released {
        factory(port).ok()
    } else {
        None
    }
}

/// Applies `changes` (from [`crate::diff::diff`]`(old, new)`) in order; on the first failure undoes
/// what was done and returns the error. `prebuilt` holds ports already opened for `AddPort`
/// changes; others are opened with `factory` when their turn comes. Ports left in `prebuilt` are
/// dropped (closed).
pub fn apply_changes(
    dp: &mut dyn Dataplane,
    changes: &[Change],
    old: &Config,
    mut prebuilt: HashMap<String, Box<dyn Port>>,
    factory: &PortFactory,
) -> Result<(), ApplyError> {
    let mut undo: Vec<Undo> = Vec::with_capacity(changes.len());
    for c in changes {
        if let Change::AddPort { port } = c {
            if !prebuilt.contains_key(port.name()) {
                if let Some(p) = open_releasing(port, old, &mut undo, factory) {
                    prebuilt.insert(port.name().to_string(), p);
                }
            }
        }
        match apply_one(dp, c, old, &mut prebuilt, factory) {
            Ok(u) => undo.push(u),
            Err(message) => {
                let mut undo_failures = Vec::new();
                // A failed undo step must not stop the others: they put back what they can.
                let mut empty = HashMap::new();
                for u in undo.into_iter().rev() {
                    let r = match u {
                        Undo::Change(ch) => apply_one(dp, &ch, old, &mut empty, factory)
                            .map(|_| ())
                            .map_err(|e| format!("{}: {e}", describe(&ch))),
                        Undo::Readd { name, port, up } => dp
                            .add_port(&name, port)
                            .and_then(|_| {
                                if up {
                                    Ok(())
                                } else {
                                    dp.set_port_admin(&name, false)
                                }
                            })
                            .map_err(|e| format!("re-add port {name}: {e}")),
                    };
                    if let Err(e) = r {
                        undo_failures.push(e);
                    }
                }
                return Err(ApplyError {
                    what: describe(c),
                    message,
                    undo_failures,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod fake {
    //! A recording in-memory dataplane for tests, with failure injection.
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};
    use vecswitch_buffer::Pool;
    use vecswitch_ports::{LinkState, PortStats};

    /// A port that does nothing but count what the fake is asked to count.
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

    /// Opens `NullPort`s; each gets a new serial number (visible as `rx_packets`) so tests can tell
    /// a re-created port from a kept one.
    pub fn factory() -> Box<PortFactory> {
        let n = std::sync::atomic::AtomicU32::new(1);
        Box::new(move |p: &PortConfig| {
            if p.name().starts_with("bad") {
                return Err(format!("cannot open {}", p.name()));
            }
            let serial = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(Box::new(NullPort {
                name: p.name().to_string(),
                serial,
            }) as Box<dyn Port>)
        })
    }

    #[derive(Default)]
    pub struct Fake {
        pub ports: BTreeMap<String, (Box<dyn Port>, bool)>,
        pub bridges: BTreeMap<String, (BridgeSettingsConfig, BTreeSet<String>)>,
        pub xconnects: BTreeMap<String, String>,
        pub macs: BTreeMap<(String, [u8; 6]), String>,
        /// Calls that fail: a substring of `describe`-like call names, e.g. "add_xconnect p1".
        pub fail_on: Option<String>,
        pub log: Vec<String>,
        pub traced: u32,
        pub cleared: u32,
    }

    impl Fake {
        fn call(&mut self, what: String) -> Result<(), String> {
            if self.fail_on.as_deref().is_some_and(|f| what.contains(f)) {
                // One failure only, so that the undo of the same call succeeds.
                self.fail_on = None;
                return Err(format!("injected failure in {what}"));
            }
            self.log.push(what);
            Ok(())
        }
        /// A comparable snapshot of the state (ports with serials, bridges, xconnects, macs).
        pub fn snapshot(&self) -> String {
            let ports: Vec<String> = self
                .ports
                .iter()
                .map(|(n, (p, up))| format!("{n}#{}:{up}", p.stats().rx_packets))
                .collect();
            format!(
                "{ports:?} {:?} {:?} {:?}",
                self.bridges, self.xconnects, self.macs
            )
        }
    }

    impl Dataplane for Fake {
        fn add_port(&mut self, name: &str, port: Box<dyn Port>) -> Result<(), String> {
            self.call(format!("add_port {name}"))?;
            if self.ports.contains_key(name) {
                return Err(format!("port {name} exists"));
            }
            self.ports.insert(name.into(), (port, true));
            Ok(())
        }
        fn delete_port(&mut self, name: &str) -> Result<Box<dyn Port>, String> {
            self.call(format!("delete_port {name}"))?;
            if self.xconnects.values().any(|t| t == name) {
                return Err(format!("port {name} is an xconnect target"));
            }
            self.xconnects.remove(name);
            for (_, m) in self.bridges.values_mut() {
                m.remove(name);
            }
            self.ports
                .remove(name)
                .map(|(p, _)| p)
                .ok_or_else(|| format!("no port {name}"))
        }
        fn set_port_admin(&mut self, name: &str, up: bool) -> Result<(), String> {
            self.call(format!("set_port_admin {name} {up}"))?;
            self.ports
                .get_mut(name)
                .map(|p| p.1 = up)
                .ok_or_else(|| format!("no port {name}"))
        }
        fn add_bridge(&mut self, name: &str, s: &BridgeSettingsConfig) -> Result<(), String> {
            self.call(format!("add_bridge {name}"))?;
            self.bridges
                .insert(name.into(), (s.clone(), BTreeSet::new()));
            Ok(())
        }
        fn delete_bridge(&mut self, name: &str) -> Result<(), String> {
            self.call(format!("delete_bridge {name}"))?;
            self.macs.retain(|(b, _), _| b != name);
            self.bridges
                .remove(name)
                .map(|_| ())
                .ok_or_else(|| format!("no bridge {name}"))
        }
        fn set_bridge_settings(
            &mut self,
            name: &str,
            s: &BridgeSettingsConfig,
        ) -> Result<(), String> {
            self.call(format!("set_bridge_settings {name}"))?;
            self.bridges
                .get_mut(name)
                .map(|b| b.0 = s.clone())
                .ok_or_else(|| format!("no bridge {name}"))
        }
        fn add_bridge_member(&mut self, bridge: &str, port: &str) -> Result<(), String> {
            self.call(format!("add_bridge_member {bridge} {port}"))?;
            if !self.ports.contains_key(port) {
                return Err(format!("no port {port}"));
            }
            self.bridges
                .get_mut(bridge)
                .map(|b| b.1.insert(port.into()))
                .map(|_| ())
                .ok_or_else(|| format!("no bridge {bridge}"))
        }
        fn remove_bridge_member(&mut self, bridge: &str, port: &str) -> Result<(), String> {
            self.call(format!("remove_bridge_member {bridge} {port}"))?;
            self.macs.retain(|(b, _), p| !(b == bridge && p == port));
            self.bridges
                .get_mut(bridge)
                .map(|b| b.1.remove(port))
                .map(|_| ())
                .ok_or_else(|| format!("no bridge {bridge}"))
        }
        fn add_xconnect(&mut self, from: &str, to: &str) -> Result<(), String> {
            self.call(format!("add_xconnect {from} {to}"))?;
            self.xconnects.insert(from.into(), to.into());
            Ok(())
        }
        fn delete_xconnect(&mut self, from: &str) -> Result<(), String> {
            self.call(format!("delete_xconnect {from}"))?;
            self.xconnects
                .remove(from)
                .map(|_| ())
                .ok_or_else(|| format!("no xconnect from {from}"))
        }
        fn add_static_mac(&mut self, bridge: &str, mac: [u8; 6], port: &str) -> Result<(), String> {
            self.call(format!("add_static_mac {bridge} {port}"))?;
            self.macs.insert((bridge.into(), mac), port.into());
            Ok(())
        }
        fn delete_static_mac(&mut self, bridge: &str, mac: [u8; 6]) -> Result<(), String> {
            self.call(format!("delete_static_mac {bridge}"))?;
            self.macs
                .remove(&(bridge.to_string(), mac))
                .map(|_| ())
                .ok_or_else(|| "no such mac".to_string())
        }
        fn flush_mac(&mut self, bridge: &str, _port: Option<&str>) -> Result<usize, String> {
            self.call(format!("flush_mac {bridge}"))?;
            Ok(0)
        }
        fn show(
            &mut self,
            what: ShowWhat,
            _bridge: Option<&str>,
        ) -> Result<serde_json::Value, String> {
            Ok(match what {
                ShowWhat::Ports => serde_json::json!(self
                    .ports
                    .iter()
                    .map(|(n, (p, up))| serde_json::json!({"name": n, "admin_up": up, "serial": p.stats().rx_packets}))
                    .collect::<Vec<_>>()),
                _ => serde_json::json!(self.snapshot()),
            })
        }
        fn clear_counters(&mut self) {
            self.cleared += 1;
        }
        fn trace_add(&mut self, count: u32) {
            self.traced += count;
        }
        fn trace_clear(&mut self) {
            self.traced = 0;
        }
        fn capture(&mut self, port: &str, _file: &str, _count: Option<u64>) -> Result<(), String> {
            self.call(format!("capture {port}"))
        }
        fn capture_stop(&mut self, port: &str) -> Result<serde_json::Value, String> {
            self.call(format!("capture_stop {port}"))?;
            Ok(serde_json::json!({"port": port}))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::{factory, Fake};
    use super::*;
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

    fn build(c: &Config) -> Fake {
        let mut dp = Fake::default();
        apply_changes(
            &mut dp,
            &diff(&Config::default(), c),
            &Config::default(),
            HashMap::new(),
            &*factory(),
        )
        .unwrap();
        dp
    }

    #[test]
    fn builds_a_whole_config() {
        let dp = build(&cfg(SERVICES));
        assert_eq!(dp.ports.len(), 4);
        assert!(!dp.ports["v1"].1, "v1 is admin down");
        assert!(dp.ports["v0"].1);
        assert_eq!(dp.xconnects.get("p0").map(String::as_str), Some("p1"));
        assert_eq!(dp.xconnects.get("p1").map(String::as_str), Some("p0"));
        assert_eq!(dp.bridges["br0"].1.len(), 2);
        assert_eq!(
            dp.macs
                .get(&("br0".to_string(), [2, 0, 0, 0, 0, 1]))
                .map(String::as_str),
            Some("v0")
        );
    }

    #[test]
    fn reload_keeps_unchanged_ports_as_the_same_objects() {
        let old = cfg(SERVICES);
        let mut dp = build(&old);
        let serial_p0 = dp.ports["p0"].0.stats().rx_packets;
        let serial_v0 = dp.ports["v0"].0.stats().rx_packets;
        let mut new = old.clone();
        if let PortConfig::AfPacket(a) = &mut new.ports[2] {
            a.interface = "veth7".into();
        }
        let f = factory();
        apply_changes(&mut dp, &diff(&old, &new), &old, HashMap::new(), &*f).unwrap();
        assert_eq!(dp.ports["p0"].0.stats().rx_packets, serial_p0, "p0 kept");
        assert_ne!(
            dp.ports["v0"].0.stats().rx_packets,
            serial_v0,
            "v0 re-created"
        );
        // And v0's services came back.
        assert!(dp.bridges["br0"].1.contains("v0"));
        assert_eq!(dp.macs.len(), 1);
    }

    #[test]
    fn failure_midway_undoes_everything() {
        let old = cfg(SERVICES);
        let mut dp = build(&old);
        let before = dp.snapshot();
        // A reload that removes the bridge, re-creates p0, and fails on the last step.
        let mut new = old.clone();
        new.bridges.clear();
        if let PortConfig::Memif(m) = &mut new.ports[0] {
            m.ring_size = 4096;
        }
        let ch = diff(&old, &new);
        assert!(matches!(ch.last(), Some(Change::AddXconnect { .. })));
        dp.fail_on = Some("add_xconnect p1".into());
        let e = apply_changes(&mut dp, &ch, &old, HashMap::new(), &*factory()).unwrap_err();
        assert_eq!(e.what, "add xconnect p1 -> p0");
        assert!(e.undo_failures.is_empty(), "{e}");
        assert!(e.to_string().contains("nothing was changed"), "{e}");
        // The same port objects (serials), bridges, macs, xconnects as before.
        assert_eq!(dp.snapshot(), before);
    }

    #[test]
    fn port_open_failure_undoes() {
        let old = cfg("");
        let mut dp = build(&old);
        let before = dp.snapshot();
        let mut new = old.clone();
        new.ports.push(PortConfig::AfPacket(
            crate::config::AfPacketPortConfig::new("bad0", "veth9"),
        ));
        new.bridges.push(crate::config::BridgeConfig {
            ports: vec!["v0".into()],
            ..crate::config::BridgeConfig::new("b")
        });
        let ch = diff(&old, &new);
        let e = apply_changes(&mut dp, &ch, &old, HashMap::new(), &*factory()).unwrap_err();
        assert!(e.message.contains("cannot open bad0"), "{e}");
        assert_eq!(dp.snapshot(), before);
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
                return Err("af_packet only".into());
            };
            if !held.lock().unwrap().insert(a.interface.clone()) {
                return Err(format!("interface {} busy", a.interface));
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
        let mut dp = Fake::default();
        apply_changes(
            &mut dp,
            &diff(&Config::default(), &old),
            &Config::default(),
            HashMap::new(),
            &*f,
        )
        .unwrap();
        // Rename v0 -> w0 (same interface): works although v0 holds veth0 when w0 is opened.
        let mut renamed = old.clone();
        if let PortConfig::AfPacket(a) = &mut renamed.ports[0] {
            a.name = "w0".into();
        }
        apply_changes(&mut dp, &diff(&old, &renamed), &old, HashMap::new(), &*f).unwrap();
        assert_eq!(dp.ports.keys().collect::<Vec<_>>(), ["w0"]);
        // Rename back, plus a bridge whose creation fails: everything is undone, w0 re-opened.
        let mut back = old.clone();
        back.bridges.push(crate::config::BridgeConfig::new("b"));
        dp.fail_on = Some("add_bridge".into());
        let e = apply_changes(
            &mut dp,
            &diff(&renamed, &back),
            &renamed,
            HashMap::new(),
            &*f,
        )
        .unwrap_err();
        assert!(e.undo_failures.is_empty(), "{e}");
        assert_eq!(dp.ports.keys().collect::<Vec<_>>(), ["w0"]);
        assert!(dp.bridges.is_empty());
        assert_eq!(
            held.lock().unwrap().len(),
            1,
            "exactly one port holds veth0"
        );
    }

    #[test]
    fn prebuilt_ports_are_used() {
        let new = cfg("");
        let mut dp = Fake::default();
        let mut pre: HashMap<String, Box<dyn Port>> = HashMap::new();
        pre.insert(
            "p0".into(),
            Box::new(fake::NullPort {
                name: "p0".into(),
                serial: 999,
            }),
        );
        apply_changes(
            &mut dp,
            &diff(&Config::default(), &new),
            &Config::default(),
            pre,
            &*factory(),
        )
        .unwrap();
        assert_eq!(dp.ports["p0"].0.stats().rx_packets, 999);
    }
}
