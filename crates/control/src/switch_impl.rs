//! `show` on the real switch: each [`ShowWhat`] maps to the switch's typed `show_*` method, whose
//! `Serialize` value is the JSON answer (the CLI reads it back into the same types to print it,
//! see [`crate::render`]).

use crate::controller::{json, ControlError};
use crate::protocol::ShowWhat;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use vecswitch_switch::{ServiceInfo, Switch, SwitchError};

/// One line of `show xconnect`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XconnectInfo {
    pub from: String,
    pub to: String,
}

/// `show xconnect`: every directed cross-connect.
pub fn show_xconnects(sw: &Switch) -> Vec<XconnectInfo> {
    sw.show_ports()
        .into_iter()
        .filter_map(|p| match p.service {
            ServiceInfo::Xconnect { to } => Some(XconnectInfo { from: p.name, to }),
            _ => None,
        })
        .collect()
}

/// `show WHAT [BRIDGE]` as JSON.
pub fn show(sw: &mut Switch, what: ShowWhat, bridge: Option<&str>) -> Result<Value, ControlError> {
    match what {
        ShowWhat::Ports => json(sw.show_ports()),
        ShowWhat::Bridge => {
            let mut b = sw.show_bridges();
            if let Some(name) = bridge {
                b.retain(|x| x.name == name);
                if b.is_empty() {
                    let known: Vec<String> =
                        sw.show_bridges().into_iter().map(|b| b.name).collect();
                    return Err(SwitchError::NoBridge {
                        name: name.to_string(),
                        known: if known.is_empty() {
                            "(none)".into()
                        } else {
                            known.join(", ")
                        },
                    }
                    .into());
                }
            }
            json(b)
        }
        ShowWhat::Mac => json(sw.show_mac(bridge)?),
        ShowWhat::Xconnect => json(show_xconnects(sw)),
        ShowWhat::Runtime => json(sw.show_runtime()),
        ShowWhat::Errors => json(sw.show_errors()),
        ShowWhat::Buffers => json(sw.show_buffers()),
        ShowWhat::Trace => json(sw.show_trace()),
        ShowWhat::Subinterfaces => json(sw.show_subinterfaces()),
        // Answered by the controller from the running config, never by the dataplane.
        ShowWhat::Config | ShowWhat::Version => Err(ControlError::NotDataplane { what }),
    }
}

#[cfg(test)]
mod tests {
    //! The controller driving the real switch (in this thread, with do-nothing ports): the order
    //! of changes from `diff` is one the switch accepts, and a rejected change leaves `show` equal.
    use crate::apply::testing::factory;
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
