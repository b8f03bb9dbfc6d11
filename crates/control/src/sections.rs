//! The control plane's registration point: a feature's control surface is listed here, one entry
//! per item, and nothing else in `crates/control` names the feature.
//!
//! - [`SECTIONS`]: each `[[section]]` of the config, its validation and the
//!   [`ConfigObject`](vecswitch_switch::object::ConfigObject)s it expands into.
//!   [`crate::validate::validate`] runs every section's validation in this order (ports first: the
//!   services refer to them); [`crate::diff::diff`] diffs the objects of all sections together. A
//!   section also needs its field in [`Config`].
//! - [`SHOWS`]: `show WORD` commands: the switch method that answers (a `Serialize` value) and the
//!   table `vecswitch ctl` prints from the same type read back.
//! - [`EDITS`]: `ctl` commands that edit a section (`mtu p0 1500 check`): the words go to the
//!   feature's edit function on a copy of the running config, which then takes the same
//!   validate → diff → apply path as a file.

use crate::config::Config;
use crate::controller::{json, ControlError};
use crate::ports;
use serde::de::DeserializeOwned;
use serde_json::Value;
use vecswitch_switch::bond::control::{BondInfo, LacpMemberInfo};
use vecswitch_switch::ip::config as ip;
use vecswitch_switch::l2::config as l2;
use vecswitch_switch::mtu;
use vecswitch_switch::object::{EditError, Obj, Validation};
use vecswitch_switch::vlan::config as vlan;
use vecswitch_switch::vlan::control::SubInterfaceInfo;
use vecswitch_switch::{InterfaceInfo, Switch};

/// One config section.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// The TOML key (`[[port]]`).
    pub key: &'static str,
    /// Whole-config validation of the section (errors into the [`Validation`]).
    pub validate: fn(&Config, &mut Validation),
    /// The section's config objects.
    pub objects: fn(&Config, &mut Vec<Obj>),
}

/// Every section, in validation order.
pub const SECTIONS: &[Section] = &[
    Section {
        key: "port",
        validate: |c, v| ports::validate_ports(&c.ports, v),
        objects: |c, o| ports::port_objects(&c.ports, o),
    },
    Section {
        key: "bond",
        validate: |c, v| vecswitch_switch::bond::config::validate_bonds(&c.bonds, v),
        objects: |c, o| vecswitch_switch::bond::config::bond_objects(&c.bonds, o),
    },
    Section {
        key: "subinterface",
        validate: |c, v| vlan::validate_subinterfaces(&c.subinterfaces, v),
        objects: |c, o| vlan::subinterface_objects(&c.subinterfaces, o),
    },
    Section {
        key: "xconnect",
        validate: |c, v| l2::validate_xconnects(&c.xconnects, v),
        objects: |c, o| l2::xconnect_objects(&c.xconnects, o),
    },
    Section {
        key: "bridge",
        validate: |c, v| l2::validate_bridges(&c.bridges, v),
        objects: |c, o| l2::bridge_objects(&c.bridges, o),
    },
    Section {
        key: "mtu",
        validate: |c, v| mtu::validate(&c.mtu, v),
        objects: |c, o| mtu::objects(&c.mtu, o),
    },
    Section {
        key: "ip",
        validate: |c, v| ip::validate_ip(&c.ip, v),
        objects: |c, o| ip::ip_objects(&c.ip, o),
    },
];

/// A `show WORD` command registered by a feature.
#[derive(Debug, Clone, Copy)]
pub struct Show {
    /// The word (`show interfaces`; `"what":"interfaces"` on the socket).
    pub word: &'static str,
    /// Other words `ctl show` takes for it.
    pub aliases: &'static [&'static str],
    /// What the table shows, for `ctl` help.
    pub help: &'static str,
    /// The answer, from the switch (on the worker).
    pub run: fn(&Switch) -> Result<Value, ControlError>,
    /// The table `ctl` prints; `None` if the answer is not of the type `run` sends.
    pub render: fn(&Value) -> Option<String>,
}

/// `data` as a `T`, if it is one.
pub fn typed<T: DeserializeOwned>(data: &Value) -> Option<T> {
    T::deserialize(data).ok()
}

/// Registered shows.
pub const SHOWS: &[Show] = &[
    Show {
        word: "interfaces",
        aliases: &["interface", "int"],
        help: "Name, Idx, Kind, Admin, MAC, MTU, RX/TX packets and bytes, input/output features",
        run: |sw| json(sw.show_interfaces()),
        render: |v| typed::<Vec<InterfaceInfo>>(v).map(|i| crate::render::interfaces(&i)),
    },
    Show {
        word: "bond",
        aliases: &["bonds"],
        help: "Bonds: mode, hash, members, which carry traffic",
        run: |sw| json(sw.show_bond()),
        render: |v| typed::<Vec<BondInfo>>(v).map(|b| crate::render::bonds(&b)),
    },
    Show {
        word: "lacp",
        aliases: &[],
        help: "LACP per bond member: actor, partner, machine states, LACPDU counters",
        run: |sw| json(sw.show_lacp()),
        render: |v| typed::<Vec<LacpMemberInfo>>(v).map(|m| crate::render::lacp(&m)),
    },
    Show {
        word: "subinterfaces",
        aliases: &["sub-interfaces", "subinterface", "sub-interface"],
        help: "VLAN sub-interfaces: parent, encapsulation, tag rewrite, service, counters",
        run: |sw| json(sw.show_subinterfaces()),
        render: |v| typed::<Vec<SubInterfaceInfo>>(v).map(|s| crate::render::subinterfaces(&s)),
    },
];

/// A `ctl` command that edits the config, registered by a feature.
#[derive(Debug, Clone, Copy)]
pub struct Edit {
    /// Its name on the socket (`"edit":"mtu"`) and its first `ctl` word.
    pub name: &'static str,
    /// `ctl` usage (after the name).
    pub usage: &'static str,
    /// Applies the words to a copy of the running config.
    pub apply: fn(&mut Config, &[String]) -> Result<(), EditError>,
}

/// Registered edits.
pub const EDITS: &[Edit] = &[Edit {
    name: "mtu",
    usage: mtu::CTL_USAGE,
    apply: |c, w| mtu::edit(&mut c.mtu, w),
}];

/// Every config object of `c`, section by section, in config order.
pub fn objects(c: &Config) -> Vec<Obj> {
    let mut out = Vec::new();
    for s in SECTIONS {
        (s.objects)(c, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    //! The worked example of docs/ARCHITECTURE.md end to end: the `mtu` feature's section, show
    //! and ctl command, through the controller onto the real switch.
    use crate::apply::testing::{factory, switch};
    use crate::command::parse_words;
    use crate::config::{Config, PortConfig};
    use crate::controller::Controller;
    use crate::protocol::{Request, ShowWhat};
    use crate::render::render;
    use std::sync::{Arc, Mutex};

    const CFG: &str = r#"
[[port]]
name = "p0"
type = "af_packet"
interface = "veth0"
[[port]]
name = "p1"
type = "af_packet"
interface = "veth1"
[[mtu]]
interface = "p0"
mtu = 1500
check = true
"#;

    fn start() -> (Controller, Arc<Mutex<vecswitch_switch::Switch>>) {
        struct Shared(Arc<Mutex<vecswitch_switch::Switch>>);
        impl crate::controller::Worker for Shared {
            fn run(&self, job: crate::controller::Job) -> Result<(), vecswitch_switch::WorkerGone> {
                let mut sw = self.0.lock().unwrap();
                job(&mut sw);
                Ok(())
            }
        }
        let sw = Arc::new(Mutex::new(switch()));
        let c = Controller::start(
            Box::new(Shared(Arc::clone(&sw))),
            Arc::from(factory()),
            Config::from_toml(CFG, "t").unwrap(),
            None,
        )
        .unwrap();
        (c, sw)
    }

    fn ctl(c: &mut Controller, line: &str) -> Result<serde_json::Value, String> {
        let words: Vec<String> = line.split_whitespace().map(String::from).collect();
        let req = parse_words(&words, std::path::Path::new("/")).map_err(|e| e.to_string())?;
        let r = c.handle(req);
        if r.ok {
            Ok(r.data.unwrap_or_default())
        } else {
            Err(r.error.unwrap())
        }
    }

    /// (MTU, output features) of interface `name`.
    fn iface(sw: &Mutex<vecswitch_switch::Switch>, name: &str) -> (u16, Vec<String>) {
        let i = sw
            .lock()
            .unwrap()
            .show_interfaces()
            .into_iter()
            .find(|i| i.name == name)
            .unwrap();
        (i.mtu, i.output_features)
    }

    #[test]
    fn mtu_section_show_and_ctl_end_to_end() {
        let (mut c, sw) = start();
        // The config section reached the switch.
        assert_eq!(iface(&sw, "p0"), (1500, vec!["mtu-check".to_string()]));
        assert_eq!(iface(&sw, "p1").1, Vec::<String>::new());
        // `show interfaces` (registered show) has the MTU column.
        let req = Request::Show {
            what: ShowWhat::Feature("interfaces"),
            bridge: None,
        };
        let data = ctl(&mut c, "show interfaces").unwrap();
        let text = render(&req, &data);
        // The MTU column is right-aligned: the value ends where the header does.
        let head = text.lines().next().unwrap();
        let end = head.find(" MTU").unwrap() + " MTU".len();
        let p0 = text.lines().nth(1).unwrap();
        assert!(
            p0.starts_with("p0 ") && p0.contains(" main (port 0) "),
            "{text}"
        );
        assert_eq!(p0[..end].rsplit(' ').next(), Some("1500"), "{text}");
        assert!(p0.ends_with("mtu-check"), "{text}");
        // The registered ctl command: an edit of the running config, applied in place.
        let r = ctl(&mut c, "mtu p0 9000 nocheck").unwrap();
        assert_eq!(r["changes"], serde_json::json!(["set mtu 9000 on p0"]));
        assert_eq!(iface(&sw, "p0"), (9000, vec![]));
        let r = ctl(&mut c, "mtu p1 1400 check").unwrap();
        assert_eq!(
            r["changes"],
            serde_json::json!(["set mtu 1400 on p1 (checked)"])
        );
        assert_eq!(c.running().mtu.len(), 2);
        assert!(c.running().to_toml().contains("[[mtu]]"));
        // Refusals name field, value and what is accepted; nothing changes.
        let e = ctl(&mut c, "mtu p0 10").unwrap_err();
        assert!(
            e.contains("mtu[0].mtu = 10") && e.contains("68 to 65535"),
            "{e}"
        );
        let e = ctl(&mut c, "mtu p0 big").unwrap_err();
        assert!(
            e.contains("BYTES = \"big\"") && e.contains("68..=65535"),
            "{e}"
        );
        let e = ctl(&mut c, "mtu ghost 1500").unwrap_err();
        assert!(e.contains("mtu[2].interface = \"ghost\""), "{e}");
        assert_eq!(iface(&sw, "p0"), (9000, vec![]));
        // A port re-created keeps its MTU settings (the object depends on the port).
        let mut new = c.running().clone();
        if let PortConfig::AfPacket(a) = &mut new.ports[1] {
            a.interface = "veth7".into();
        }
        let ch: Vec<String> = c
            .set_config(new)
            .unwrap()
            .iter()
            .map(|c| c.describe())
            .collect();
        assert_eq!(
            ch,
            [
                "set mtu 9000 (default) on p1",
                "delete port p1",
                "add af_packet port p1",
                "set mtu 1400 on p1 (checked)"
            ]
        );
        assert_eq!(iface(&sw, "p1"), (1400, vec!["mtu-check".to_string()]));
        // Back to the default.
        ctl(&mut c, "mtu p1 default").unwrap();
        assert_eq!(iface(&sw, "p1"), (9000, vec![]));
    }
}
