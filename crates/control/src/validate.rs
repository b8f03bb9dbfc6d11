//! Whole-config validation, run before anything is applied: [`validate`] checks a [`Config`] and
//! returns every problem it finds as a [`ValidationError`] that names the field path (e.g.
//! `bridge[1].static_mac[0].mac`), the value and what would be accepted. A config that passes can
//! be applied without the switch refusing it for a config reason (opening a port can still fail).
//!
//! `[switch]` is checked here; every other section by its own validation function, in the order
//! of [`crate::sections::SECTIONS`] (ports first: services refer to them).

use crate::config::Config;
use std::fmt;
pub use vecswitch_switch::object::{check_name, ValidationError, MAX_NAME_LEN};
use vecswitch_switch::object::{q, Validation};

pub use crate::ports::{
    MAX_IFNAME, MAX_MEMIF_SECRET, MAX_SOCKET_PATH, MEMIF_BUFFER_SIZE_RANGE, RING_SIZE_RANGE,
};
pub use vecswitch_switch::l2::config::MAC_LIMIT_RANGE;

/// Accepted pool sizes.
pub const BUFFERS_RANGE: std::ops::RangeInclusive<u32> = 1024..=4_194_304;
/// Accepted MAC table sizes.
pub const MAC_TABLE_RANGE: std::ops::RangeInclusive<u32> = 1024..=(1 << 26);

/// Every problem found in one config (never empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationErrors(pub Vec<ValidationError>);

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid config ({} error{}):",
            self.0.len(),
            if self.0.len() == 1 { "" } else { "s" }
        )?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

impl ValidationErrors {
    /// Whether some error is about `path`.
    pub fn has_path(&self, path: &str) -> bool {
        self.0.iter().any(|e| e.path == path)
    }
}

/// Validates the whole config; `Ok(())` means it can be applied.
pub fn validate(c: &Config) -> Result<(), ValidationErrors> {
    let mut v = Validation::default();
    check_switch(c, &mut v);
    for s in crate::sections::SECTIONS {
        (s.validate)(c, &mut v);
    }
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(ValidationErrors(v.errors))
    }
}

fn check_switch(c: &Config, e: &mut Validation) {
    let s = &c.switch;
    if !BUFFERS_RANGE.contains(&s.buffers) {
        e.push(
            "switch.buffers".into(),
            s.buffers,
            format!("a buffer count in {BUFFERS_RANGE:?}"),
        );
    }
    if !MAC_TABLE_RANGE.contains(&s.mac_table_entries) {
        e.push(
            "switch.mac_table_entries".into(),
            s.mac_table_entries,
            format!("an entry count in {MAC_TABLE_RANGE:?}"),
        );
    }
    if s.control_socket.is_empty()
        || s.control_socket.len() > MAX_SOCKET_PATH
        || s.control_socket.starts_with('@')
    {
        e.push(
            "switch.control_socket".into(),
            q(&s.control_socket),
            format!("a filesystem path of 1..={MAX_SOCKET_PATH} bytes"),
        );
    }
    if let Some(m) = s.metrics_listen.as_deref() {
        if crate::metrics::parse_listen(m).is_err() {
            e.push(
                "switch.metrics_listen".into(),
                q(m),
                "IP:PORT, e.g. \"127.0.0.1:9482\"".to_string(),
            );
        }
    }
    if let Some(p) = &s.worker_priority {
        if p.parse::<vecswitch_switch::worker::WorkerSched>().is_err() {
            e.push(
                "switch.worker_priority".into(),
                q(p),
                vecswitch_switch::worker::SCHED_ACCEPTED.to_string(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{
        AfXdpPortConfig, BridgeConfig, MemifRole, PortConfig, StaticMacConfig, XconnectConfig,
    };

    fn base() -> Config {
        Config::from_toml(
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
[[xconnect]]
ports = ["p0", "p1"]
[[bridge]]
name = "br0"
ports = ["v0", "v1"]
  [[bridge.static_mac]]
  mac = "02:00:00:00:00:01"
  port = "v0"
"#,
            "t",
        )
        .unwrap()
    }

    /// Validates and returns the errors, failing the test if the config is valid.
    fn errs(c: &Config) -> ValidationErrors {
        validate(c).expect_err("config should be invalid")
    }

    fn memif(c: &mut Config, i: usize) -> &mut crate::config::MemifPortConfig {
        match &mut c.ports[i] {
            PortConfig::Memif(m) => m,
            _ => panic!("port {i} is not memif"),
        }
    }

    #[test]
    fn base_config_is_valid() {
        validate(&base()).unwrap();
        validate(&Config::default()).unwrap();
    }

    #[test]
    fn static_mac_text_is_parsed_into_a_typed_mac() {
        // The config holds a wire::EthernetAddress: any case in, lower case out, and text that is
        // not a MAC is refused when the file is read, naming the value and the accepted form.
        let c = Config::from_toml(
            &base()
                .to_toml()
                .replace("02:00:00:00:00:01", "02:00:0A:bb:cc:ff"),
            "t",
        )
        .unwrap();
        assert_eq!(
            c.bridges[0].static_mac[0].mac.0,
            [2, 0, 0x0a, 0xbb, 0xcc, 0xff]
        );
        assert!(c.to_toml().contains("\"02:00:0a:bb:cc:ff\""));
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:00:00",
            "2:00:00:00:00:00",
            "zz:00:00:00:00:00",
        ] {
            let text = base().to_toml().replace("02:00:00:00:00:01", bad);
            let e = Config::from_toml(&text, "f.toml").unwrap_err().to_string();
            assert!(
                e.contains(&format!("{bad:?}"))
                    && e.contains("aa:bb:cc:dd:ee:ff")
                    && e.contains("mac"),
                "{e}"
            );
        }
    }

    #[test]
    fn worker_priority_is_checked_and_names_what_is_accepted() {
        let mut c = base();
        c.switch.worker_priority = Some("fifo:10".into());
        validate(&c).unwrap();
        c.switch.worker_priority = Some("fifo:0".into());
        let e = validate(&c).unwrap_err();
        assert!(e.has_path("switch.worker_priority"), "{e}");
        assert!(e.to_string().contains("fifo:N"), "{e}");
    }

    #[test]
    fn duplicate_port_name_names_the_first() {
        let mut c = base();
        memif(&mut c, 1).name = "p0".into();
        let e = errs(&c);
        assert!(e.has_path("port[1].name"), "{e}");
        assert!(e.to_string().contains("port[0] has it already"), "{e}");
    }

    #[test]
    fn bad_names() {
        let mut c = base();
        memif(&mut c, 0).name = "".into();
        c.bridges[0].name = "br 0".into();
        let e = errs(&c);
        assert!(e.has_path("port[0].name"), "{e}");
        assert!(e.has_path("bridge[0].name"), "{e}");
    }

    #[test]
    fn duplicate_bridge_name() {
        let mut c = base();
        c.bridges.push(BridgeConfig::new("br0"));
        assert!(errs(&c).has_path("bridge[1].name"));
    }

    #[test]
    fn ring_size_must_be_power_of_two_in_range() {
        for bad in [0, 100, 128, 1000, 32768] {
            let mut c = base();
            memif(&mut c, 0).ring_size = bad;
            let e = errs(&c);
            assert_eq!(e.0.len(), 1, "{e}");
            assert_eq!(e.0[0].path, "port[0].ring_size");
            assert_eq!(e.0[0].value, bad.to_string());
            assert!(e.0[0].expected.contains("power of two in 256..=16384"));
        }
        for good in [256, 512, 16384] {
            let mut c = base();
            memif(&mut c, 0).ring_size = good;
            validate(&c).unwrap();
        }
    }

    #[test]
    fn memif_field_limits() {
        let mut c = base();
        memif(&mut c, 0).buffer_size = 64;
        memif(&mut c, 0).secret = Some("x".repeat(25));
        memif(&mut c, 1).socket = String::new();
        let e = errs(&c);
        assert!(e.has_path("port[0].buffer_size"), "{e}");
        assert!(e.has_path("port[0].secret"), "{e}");
        assert!(e.has_path("port[1].socket"), "{e}");
    }

    #[test]
    fn bad_and_multicast_port_mac() {
        let mut c = base();
        memif(&mut c, 0).mac = Some("02:00:00:00:00".into());
        memif(&mut c, 1).mac = Some("01:00:5e:00:00:01".into());
        let e = errs(&c);
        assert!(
            e.has_path("port[0].mac") && e.has_path("port[1].mac"),
            "{e}"
        );
    }

    #[test]
    fn memif_id_reused_on_one_socket_and_mixed_roles() {
        let mut c = base();
        memif(&mut c, 1).id = 0;
        let e = errs(&c);
        assert!(e.has_path("port[1].id"), "{e}");
        let mut c = base();
        memif(&mut c, 1).role = MemifRole::Client;
        let e = errs(&c);
        assert!(e.has_path("port[1].role"), "{e}");
    }

    #[test]
    fn af_packet_interface_checks() {
        let mut c = base();
        if let PortConfig::AfPacket(a) = &mut c.ports[3] {
            a.interface = "veth0".into();
        }
        assert!(errs(&c).has_path("port[3].interface"));
        if let PortConfig::AfPacket(a) = &mut c.ports[3] {
            a.interface = "a-very-long-interface-name".into();
        }
        assert!(errs(&c).has_path("port[3].interface"));
    }

    #[test]
    fn af_xdp_checks_name_the_field_value_and_accepted() {
        let mut c = base();
        let mut x = AfXdpPortConfig::new("x0", "vethx");
        x.rx_size = Some(1000);
        c.ports.push(PortConfig::AfXdp(x.clone()));
        let e = errs(&c);
        assert!(e.has_path("port[4].rx_size"), "{e}");
        assert!(e.to_string().contains("1000"), "{e}");
        assert!(e.to_string().contains("power of two"), "{e}");
        x.rx_size = None;
        x.queue = Some(300);
        c.ports[4] = PortConfig::AfXdp(x);
        let e = errs(&c);
        assert!(e.has_path("port[4].queue"), "{e}");
        assert!(e.to_string().contains("0 to 255"), "{e}");
        // One interface, one port, whatever the backend.
        let mut c = base();
        let iface = match &c.ports[3] {
            PortConfig::AfPacket(a) => a.interface.clone(),
            other => panic!("expected af_packet, got {other:?}"),
        };
        c.ports
            .push(PortConfig::AfXdp(AfXdpPortConfig::new("x0", &iface)));
        assert!(errs(&c).has_path("port[4].interface"));
    }

    /// `offload = "xdp"` only between two whole af_xdp ports in native (or auto) mode: the error
    /// is at `xconnect[i].offload`, names the port and why, and what is accepted.
    #[test]
    fn xconnect_offload_needs_two_whole_af_xdp_ports_in_native_mode() {
        use vecswitch_ports::af_xdp::XdpMode;
        use vecswitch_switch::l2::config::XconnectOffload;
        let with_xdp = |m0: Option<XdpMode>| {
            let mut c = base();
            let mut x0 = AfXdpPortConfig::new("x0", "vethx0");
            x0.mode = m0;
            c.ports.push(PortConfig::AfXdp(x0));
            c.ports
                .push(PortConfig::AfXdp(AfXdpPortConfig::new("x1", "vethx1")));
            let mut x = XconnectConfig::both("x0", "x1");
            x.offload = XconnectOffload::Xdp;
            c.xconnects.push(x);
            c
        };
        for m in [None, Some(XdpMode::Auto), Some(XdpMode::Native)] {
            validate(&with_xdp(m)).unwrap_or_else(|e| panic!("{m:?}: {e}"));
        }
        let e = errs(&with_xdp(Some(XdpMode::Skb)));
        assert!(e.has_path("xconnect[1].offload"), "{e}");
        let t = e.to_string();
        assert!(
            t.contains("`x0`") && t.contains("skb") && t.contains("\"none\" or \"xdp\""),
            "{t}"
        );
        // An admin-down port: the kernel would forward regardless, so it is refused.
        let mut c = with_xdp(None);
        if let PortConfig::AfXdp(x) = &mut c.ports[5] {
            x.admin = crate::config::AdminState::Down;
        }
        let e = errs(&c);
        assert!(
            e.to_string().contains("`x1`: it is admin = \"down\""),
            "{e}"
        );
        // memif ports: refused, naming the type.
        let mut c = base();
        c.xconnects[0].offload = XconnectOffload::Xdp;
        let e = errs(&c);
        assert!(e.has_path("xconnect[0].offload"), "{e}");
        assert!(e.to_string().contains("type = \"memif\""), "{e}");
        // A port with a sub-interface keeps its xconnect in the graph.
        let mut c = with_xdp(None);
        c.subinterfaces.push(
            toml::from_str("parent = \"x0\"\nid = 7\nencap = \"dot1q 7\"\n")
                .expect("sub-interface"),
        );
        let e = errs(&c);
        assert!(e.to_string().contains("sub-interface"), "{e}");
        // Default and "none": nothing to check; an unknown value is a parse error naming both.
        let bad = Config::from_toml(
            "[[port]]\nname = \"a\"\ntype = \"af_xdp\"\ninterface = \"va\"\n\
             [[port]]\nname = \"b\"\ntype = \"af_xdp\"\ninterface = \"vb\"\n\
             [[xconnect]]\nports = [\"a\", \"b\"]\noffload = \"tc\"\n",
            "t",
        )
        .expect_err("offload = tc is not accepted");
        let t = format!("{bad:#}");
        assert!(
            t.contains("tc") && t.contains("none") && t.contains("xdp"),
            "{t}"
        );
    }

    #[test]
    fn vhost_user_port_checks() {
        let vhost = |socket: &str, socket2: &str, role: &str| {
            Config::from_toml(
                &format!(
                    "[[port]]\nname = \"vh0\"\ntype = \"vhost_user\"\nsocket = \"{socket}\"\n\
                     role = \"{role}\"\n[[port]]\nname = \"vh1\"\ntype = \"vhost_user\"\n\
                     socket = \"{socket2}\"\n"
                ),
                "test",
            )
        };
        let c = vhost("/tmp/a.sock", "/tmp/b.sock", "client").unwrap();
        validate(&c).unwrap();
        assert_eq!(c.ports[0].type_name(), "vhost_user");
        let e = errs(&vhost("/tmp/a.sock", "/tmp/a.sock", "server").unwrap());
        assert!(e.has_path("port[1].socket"), "{e}");
        let e = errs(&vhost("@abstract", "/tmp/b.sock", "server").unwrap());
        assert!(e.has_path("port[0].socket"), "{e}");
        assert!(e.to_string().contains("abstract"), "{e}");
        let e = vhost("/tmp/a.sock", "/tmp/b.sock", "frontend").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("frontend") && msg.contains("server"), "{msg}");
    }

    #[test]
    fn unknown_port_references() {
        let mut c = base();
        c.xconnects[0].ports = Some(vec!["p0".into(), "nope".into()]);
        c.bridges[0].ports.push("ghost".into());
        let e = errs(&c);
        assert!(e.has_path("xconnect[0].ports[1]"), "{e}");
        assert!(e.has_path("bridge[0].ports[2]"), "{e}");
        assert!(e.to_string().contains("\"ghost\""), "{e}");
    }

    #[test]
    fn port_in_two_services() {
        let mut c = base();
        c.bridges[0].ports.push("p0".into());
        let e = errs(&c);
        assert_eq!(e.0.len(), 1, "{e}");
        assert_eq!(e.0[0].path, "bridge[0].ports[2]");
        assert!(e.0[0].expected.contains("xconnect[0]"), "{e}");
        let mut c = base();
        c.bridges.push(BridgeConfig {
            ports: vec!["v1".into()],
            ..BridgeConfig::new("br1")
        });
        assert!(errs(&c).has_path("bridge[1].ports[0]"));
        let mut c = base();
        c.xconnects.push(XconnectConfig::one_way("p0", "v0"));
        assert!(errs(&c).has_path("xconnect[1].from"));
    }

    #[test]
    fn two_one_way_xconnects_make_an_eline() {
        let mut c = base();
        c.xconnects = vec![
            XconnectConfig::one_way("p0", "p1"),
            XconnectConfig::one_way("p1", "p0"),
        ];
        validate(&c).unwrap();
    }

    #[test]
    fn malformed_xconnects() {
        let mut c = base();
        c.xconnects[0].ports = Some(vec!["p0".into()]);
        assert!(errs(&c).has_path("xconnect[0].ports"));
        let mut c = base();
        c.xconnects[0].from = Some("p0".into());
        assert!(errs(&c).has_path("xconnect[0]"));
        let mut c = base();
        c.xconnects[0] = XconnectConfig {
            ports: None,
            bidirectional: true,
            from: Some("p0".into()),
            to: None,
            ..Default::default()
        };
        assert!(errs(&c).has_path("xconnect[0]"));
        let mut c = base();
        c.xconnects[0].ports = Some(vec!["p0".into(), "p0".into()]);
        assert!(errs(&c).has_path("xconnect[0].ports[0]"));
        let mut c = base();
        c.xconnects[0] = XconnectConfig::one_way("p0", "p1");
        c.xconnects[0].bidirectional = false;
        assert!(errs(&c).has_path("xconnect[0].bidirectional"));
    }

    #[test]
    fn duplicate_member() {
        let mut c = base();
        c.bridges[0].ports.push("v0".into());
        assert!(errs(&c).has_path("bridge[0].ports[2]"));
    }

    #[test]
    fn static_mac_errors() {
        let mut c = base();
        // (A MAC that is not one is refused by the parser: static_mac_text_is_parsed_into_a_typed_mac.)
        c.bridges[0].static_mac.push(StaticMacConfig {
            mac: "01:00:5e:00:00:01".parse().unwrap(),
            port: "v0".into(),
        });
        c.bridges[0].static_mac.push(StaticMacConfig {
            mac: "ff:ff:ff:ff:ff:ff".parse().unwrap(),
            port: "v0".into(),
        });
        c.bridges[0].static_mac.push(StaticMacConfig {
            mac: "02:00:00:00:00:01".parse().unwrap(),
            port: "v1".into(),
        });
        c.bridges[0].static_mac.push(StaticMacConfig {
            mac: "02:00:00:00:00:05".parse().unwrap(),
            port: "p0".into(),
        });
        let e = errs(&c);
        assert!(e.has_path("bridge[0].static_mac[1].mac"), "{e}");
        assert!(e.has_path("bridge[0].static_mac[2].mac"), "{e}");
        assert!(e.has_path("bridge[0].static_mac[3].mac"), "{e}");
        assert!(e.has_path("bridge[0].static_mac[4].port"), "{e}");
        assert_eq!(e.0.len(), 4, "{e}");
    }

    #[test]
    fn switch_section_limits() {
        let mut c = base();
        c.switch.buffers = 10;
        c.switch.control_socket = String::new();
        let e = errs(&c);
        assert!(
            e.has_path("switch.buffers") && e.has_path("switch.control_socket"),
            "{e}"
        );
    }

    #[test]
    fn mac_limit_zero() {
        let mut c = base();
        c.bridges[0].mac_limit = 0;
        assert!(errs(&c).has_path("bridge[0].mac_limit"));
    }

    #[test]
    fn every_error_is_reported_at_once() {
        let mut c = base();
        memif(&mut c, 0).ring_size = 3;
        c.bridges[0].static_mac[0].mac = "01:00:00:00:00:01".parse().unwrap();
        let e = errs(&c);
        assert_eq!(e.0.len(), 2);
        let s = e.to_string();
        assert!(s.starts_with("invalid config (2 errors)"), "{s}");
        assert!(s.contains("port[0].ring_size = 3"), "{s}");
        assert!(
            s.contains("bridge[0].static_mac[0].mac = \"01:00:00:00:00:01\""),
            "{s}"
        );
    }
}
