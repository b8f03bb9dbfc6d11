//! [`Dataplane`] for the real switch (`vecswitch_switch::Switch`): each call maps to the switch's
//! control API and its `SwitchError` becomes the message.

use crate::apply::Dataplane;
use crate::diff::BridgeSettingsConfig;
use crate::protocol::ShowWhat;
use serde_json::Value;
use vecswitch_ports::Port;
use vecswitch_switch::{BridgeSettings, Switch};

fn settings(s: &BridgeSettingsConfig) -> BridgeSettings {
    BridgeSettings {
        learn: s.learn,
        forward: s.forward,
        flood: s.flood,
        uu_flood: s.uu_flood,
        mac_age_s: s.mac_age,
        mac_limit: s.mac_limit,
    }
}

fn json<T: serde::Serialize>(v: T) -> Result<Value, String> {
    serde_json::to_value(v).map_err(|e| format!("cannot encode answer: {e}"))
}

impl Dataplane for Switch {
    fn add_port(&mut self, name: &str, port: Box<dyn Port>) -> Result<(), String> {
        Switch::add_port(self, name, port)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    fn delete_port(&mut self, name: &str) -> Result<Box<dyn Port>, String> {
        Switch::delete_port(self, name).map_err(|e| e.to_string())
    }
    fn set_port_admin(&mut self, name: &str, up: bool) -> Result<(), String> {
        Switch::set_port_admin(self, name, up).map_err(|e| e.to_string())
    }
    fn add_bridge(&mut self, name: &str, s: &BridgeSettingsConfig) -> Result<(), String> {
        Switch::add_bridge(self, name, settings(s))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    fn delete_bridge(&mut self, name: &str) -> Result<(), String> {
        Switch::delete_bridge(self, name).map_err(|e| e.to_string())
    }
    fn set_bridge_settings(&mut self, name: &str, s: &BridgeSettingsConfig) -> Result<(), String> {
        Switch::set_bridge_settings(self, name, settings(s)).map_err(|e| e.to_string())
    }
    fn add_bridge_member(&mut self, bridge: &str, port: &str) -> Result<(), String> {
        Switch::add_bridge_member(self, bridge, port).map_err(|e| e.to_string())
    }
    fn remove_bridge_member(&mut self, bridge: &str, port: &str) -> Result<(), String> {
        Switch::remove_bridge_member(self, bridge, port).map_err(|e| e.to_string())
    }
    fn add_xconnect(&mut self, from: &str, to: &str) -> Result<(), String> {
        Switch::add_xconnect(self, from, to).map_err(|e| e.to_string())
    }
    fn delete_xconnect(&mut self, from: &str) -> Result<(), String> {
        Switch::delete_xconnect(self, from).map_err(|e| e.to_string())
    }
    fn add_static_mac(&mut self, bridge: &str, mac: [u8; 6], port: &str) -> Result<(), String> {
        Switch::add_static_mac(self, bridge, mac, port).map_err(|e| e.to_string())
    }
    fn delete_static_mac(&mut self, bridge: &str, mac: [u8; 6]) -> Result<(), String> {
        Switch::delete_static_mac(self, bridge, mac).map_err(|e| e.to_string())
    }
    fn flush_mac(&mut self, bridge: &str, port: Option<&str>) -> Result<usize, String> {
        Switch::flush_mac(self, bridge, port).map_err(|e| e.to_string())
    }
    fn show(&mut self, what: ShowWhat, bridge: Option<&str>) -> Result<Value, String> {
        match what {
            ShowWhat::Ports => json(self.show_ports()),
            ShowWhat::Bridge => {
                let mut b = self.show_bridges();
                if let Some(name) = bridge {
                    b.retain(|x| x.name == name);
                    if b.is_empty() {
                        return Err(format!(
                            "no bridge named `{name}`; bridges are: {}",
                            list(self.show_bridges().into_iter().map(|b| b.name))
                        ));
                    }
                }
                json(b)
            }
            ShowWhat::Mac => json(self.show_mac(bridge).map_err(|e| e.to_string())?),
            ShowWhat::Xconnect => {
                let x: Vec<Value> = self
                    .show_ports()
                    .into_iter()
                    .filter_map(|p| match p.service {
                        vecswitch_switch::ServiceInfo::Xconnect { to } => {
                            Some(serde_json::json!({"from": p.name, "to": to}))
                        }
                        _ => None,
                    })
                    .collect();
                Ok(Value::Array(x))
            }
            ShowWhat::Runtime => json(self.show_runtime()),
            ShowWhat::Errors => json(self.show_errors()),
            ShowWhat::Buffers => json(self.show_buffers()),
            ShowWhat::Trace => json(self.show_trace()),
            // Answered by the controller from the running config, never by the dataplane.
            ShowWhat::Config | ShowWhat::Version => {
                Err("answered by the controller, not the dataplane".into())
            }
        }
    }
    fn clear_counters(&mut self) {
        Switch::clear_counters(self)
    }
    fn trace_add(&mut self, count: u32) {
        Switch::trace_add(self, count)
    }
    fn trace_clear(&mut self) {
        Switch::trace_clear(self)
    }
    fn capture(&mut self, port: &str, file: &str, count: Option<u64>) -> Result<(), String> {
        Switch::capture(self, port, file, count).map_err(|e| e.to_string())
    }
    fn capture_stop(&mut self, port: &str) -> Result<Value, String> {
        json(Switch::stop_capture(self, port).map_err(|e| e.to_string())?)
    }
}

fn list(names: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = names.collect();
    if v.is_empty() {
        "(none)".into()
    } else {
        v.join(", ")
    }
}

#[cfg(test)]
mod tests {
    //! The controller driving the real switch (in this thread, with do-nothing ports): the order
    //! of changes from `diff` is one the switch accepts, and a rejected change leaves `show` equal.
    use crate::apply::fake::factory;
    use crate::config::{Config, PortConfig};
    use crate::controller::{Controller, Local};
    use crate::protocol::{Request, ShowWhat};
    use std::sync::{Arc, Mutex};
    use vecswitch_switch::{Switch, SwitchConfig};

    const CFG: &str = r#"
[switch]
buffers = 1024
mac_table_entries = 1024
[[port]]
name = "p0"
type = "memif"
socket = "/tmp/never-opened.sock"
[[port]]
name = "p1"
type = "memif"
socket = "/tmp/never-opened.sock"
id = 1
[[port]]
name = "v0"
type = "af_packet"
interface = "veth0"
[[port]]
name = "v1"
type = "af_packet"
interface = "veth1"
[[xconnect]]
ports = ["p0", "p1"]
[[bridge]]
name = "br0"
ports = ["v0", "v1"]
  [[bridge.static_mac]]
  mac = "02:00:00:00:00:01"
  port = "v0"
"#;

    fn start() -> Controller {
        let sw = Switch::new(SwitchConfig {
            buffers: 1024,
            mac_table_entries: 1024,
            ..Default::default()
        });
        Controller::start(
            Box::new(Local(Mutex::new(sw))),
            Arc::from(factory()),
            Config::from_toml(CFG, "t").unwrap(),
            None,
        )
        .unwrap()
    }

    fn show(c: &mut Controller, what: ShowWhat) -> serde_json::Value {
        let r = c.handle(Request::Show { what, bridge: None });
        assert!(r.ok, "{r:?}");
        r.data.unwrap()
    }

    fn all(c: &mut Controller) -> Vec<serde_json::Value> {
        [
            ShowWhat::Ports,
            ShowWhat::Bridge,
            ShowWhat::Mac,
            ShowWhat::Xconnect,
        ]
        .into_iter()
        .map(|w| show(c, w))
        .collect()
    }

    #[test]
    fn real_switch_is_built_from_config() {
        let mut c = start();
        let ports = show(&mut c, ShowWhat::Ports);
        assert_eq!(ports.as_array().unwrap().len(), 4);
        assert_eq!(
            ports[0]["service"],
            serde_json::json!({"type": "xconnect", "to": "p1"})
        );
        assert_eq!(
            ports[2]["service"],
            serde_json::json!({"type": "bridge", "bridge": "br0"})
        );
        let macs = show(&mut c, ShowWhat::Mac);
        assert_eq!(macs[0]["mac"], "02:00:00:00:00:01");
        assert_eq!(macs[0]["static"], true);
    }

    #[test]
    fn real_switch_accepts_recreating_ports_in_services() {
        let mut c = start();
        let mut new = c.running().clone();
        for p in new.ports.iter_mut() {
            match p {
                PortConfig::Memif(m) => m.ring_size = 2048,
                PortConfig::AfPacket(a) => a.block_count = Some(4),
                PortConfig::AfXdp(x) => x.rx_size = Some(1024),
                PortConfig::VhostUser(_) => {}
            }
        }
        new.bridges[0].learn = false;
        let changes = c.set_config(new.clone()).unwrap();
        assert!(changes.len() > 10, "{changes:?}");
        assert_eq!(c.running(), &new);
        let ports = show(&mut c, ShowWhat::Ports);
        assert_eq!(
            ports[0]["service"],
            serde_json::json!({"type": "xconnect", "to": "p1"})
        );
        assert_eq!(
            ports[1]["service"],
            serde_json::json!({"type": "xconnect", "to": "p0"})
        );
        assert_eq!(
            show(&mut c, ShowWhat::Bridge)[0]["settings"]["learn"],
            false
        );
        assert_eq!(show(&mut c, ShowWhat::Mac).as_array().unwrap().len(), 1);
        // Back to the original, and to nothing at all.
        c.set_config(Config::from_toml(CFG, "t").unwrap()).unwrap();
        let empty = Config {
            switch: c.running().switch.clone(),
            ..Config::default()
        };
        c.set_config(empty).unwrap();
        assert_eq!(show(&mut c, ShowWhat::Ports), serde_json::json!([]));
        assert_eq!(show(&mut c, ShowWhat::Bridge), serde_json::json!([]));
    }

    #[test]
    fn rejected_changes_leave_show_identical() {
        let mut c = start();
        let before = all(&mut c);
        let mut bad = c.running().clone();
        bad.bridges[0].ports.push("p0".into());
        assert!(c.set_config(bad).is_err());
        // A port that fails to open, in a change that also deletes the bridge.
        let mut bad = c.running().clone();
        bad.bridges.clear();
        bad.ports.push(PortConfig::AfPacket(
            crate::config::AfPacketPortConfig::new("bad9", "veth9"),
        ));
        assert!(c
            .set_config(bad)
            .unwrap_err()
            .to_string()
            .contains("nothing was changed"));
        assert_eq!(all(&mut c), before);
    }
}
