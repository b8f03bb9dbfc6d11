//! `show` on the real switch: tests of the controller driving a real switch through the
//! registered shows (`vecswitch_switch::ctl`), whose `Serialize` values are the JSON answers.
//! `show xconnect`'s type lives with the switch's other shows; it is re-exported here.

pub use vecswitch_switch::l2::ctl::XconnectInfo;

#[cfg(test)]
mod tests {
    //! The controller driving the real switch (in this thread, with do-nothing ports): the order
    //! of changes from `diff` is one the switch accepts, and a rejected change leaves `show` equal.
    use crate::apply::testing::factory;
    use crate::config::{Config, PortConfig};
    use crate::controller::{Controller, Local};
    use crate::protocol::Request;
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

    fn show(c: &mut Controller, what: &str) -> serde_json::Value {
        let r = c.handle(Request::Show {
            what: what.into(),
            args: vec![],
        });
        assert!(r.ok, "{r:?}");
        r.data.unwrap()
    }

    fn all(c: &mut Controller) -> Vec<serde_json::Value> {
        ["ports", "bridge", "mac", "xconnect"]
            .into_iter()
            .map(|w| show(c, w))
            .collect()
    }

    /// Bonds through the generic plumbing (issue 9 item 5): a bond replaces two bridge members, a
    /// mode change re-creates it with the bridge membership that depends on it, and bad bonds (a
    /// member in a cross-connect, a member in two bonds) are rejected whole, the switch untouched.
    #[test]
    fn bonds_are_config_objects() {
        use vecswitch_switch::bond::config::BondConfig;
        use vecswitch_switch::bond::{BondMode, HashPolicy, LacpRate};
        let mut c = start();
        let bond = |name: &str, members: &[&str], mode| BondConfig {
            name: name.into(),
            mode,
            hash: HashPolicy::L34,
            lacp_rate: LacpRate::Fast,
            members: members.iter().map(|m| m.to_string()).collect(),
        };
        let mut new = c.running().clone();
        new.bridges[0].ports = vec!["lag".into()];
        new.bridges[0].static_mac.clear();
        new.bonds = vec![bond("lag", &["v0", "v1"], BondMode::Lacp)];
        c.set_config(new.clone()).unwrap();
        let b = show(&mut c, "bond");
        assert_eq!(b[0]["name"], "lag");
        assert_eq!(b[0]["members"].as_array().unwrap().len(), 2);
        assert_eq!(show(&mut c, "lacp").as_array().unwrap().len(), 2);
        assert_eq!(
            show(&mut c, "bridge")[0]["members"],
            serde_json::json!(["lag"])
        );

        let before = (all(&mut c), show(&mut c, "bond"));
        for bad in [
            vec![bond("lag", &["v0", "v1", "p0"], BondMode::Lacp)],
            vec![
                bond("lag", &["v0", "v1"], BondMode::Lacp),
                bond("lag2", &["v1"], BondMode::Xor),
            ],
        ] {
            let mut b = new.clone();
            b.bonds = bad;
            let e = c.set_config(b).unwrap_err().to_string();
            assert!(e.contains("has it already"), "{e}");
            assert_eq!((all(&mut c), show(&mut c, "bond")), before);
        }

        let mut ab = new.clone();
        ab.bonds[0].mode = BondMode::ActiveBackup;
        c.set_config(ab).unwrap();
        assert_eq!(show(&mut c, "bond")[0]["mode"], "active-backup");
        assert_eq!(
            show(&mut c, "bridge")[0]["members"],
            serde_json::json!(["lag"])
        );
        c.set_config(Config::from_toml(CFG, "t").unwrap()).unwrap();
        assert_eq!(show(&mut c, "bond"), serde_json::json!([]));
    }

    #[test]
    fn real_switch_is_built_from_config() {
        let mut c = start();
        let ports = show(&mut c, "ports");
        assert_eq!(ports.as_array().unwrap().len(), 4);
        assert_eq!(
            ports[0]["service"],
            serde_json::json!({"type": "xconnect", "to": "p1"})
        );
        assert_eq!(
            ports[2]["service"],
            serde_json::json!({"type": "bridge", "bridge": "br0"})
        );
        let macs = show(&mut c, "mac")["entries"].clone();
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
        let ports = show(&mut c, "ports");
        assert_eq!(
            ports[0]["service"],
            serde_json::json!({"type": "xconnect", "to": "p1"})
        );
        assert_eq!(
            ports[1]["service"],
            serde_json::json!({"type": "xconnect", "to": "p0"})
        );
        assert_eq!(show(&mut c, "bridge")[0]["settings"]["learn"], false);
        assert_eq!(show(&mut c, "mac")["entries"].as_array().unwrap().len(), 1);
        // Back to the original, and to nothing at all.
        c.set_config(Config::from_toml(CFG, "t").unwrap()).unwrap();
        let empty = Config {
            switch: c.running().switch.clone(),
            ..Config::default()
        };
        c.set_config(empty).unwrap();
        assert_eq!(show(&mut c, "ports"), serde_json::json!([]));
        assert_eq!(show(&mut c, "bridge"), serde_json::json!([]));
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
