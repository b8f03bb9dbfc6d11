//! `vecswitch-router`: vecswitch routing IPv4 between two `[ip]` interfaces — the config the
//! [`crate::dut::vecswitch::VecswitchDut`] driver (mode [`crate::dut::vecswitch::Mode::Router`])
//! writes, and how it reads the result back.
//!
//! The config is the driver's usual `[switch]` and `[[port]]` tables (memif servers or AF_PACKET
//! on the DUT's veth ends) without a service, plus `[ip]` ([`ip_config`], the address plan of
//! [`crate::dut::router`]): the ingress port `198.18.0.254/24`, the egress port
//! `198.19.0.254/24`, a static neighbour `198.19.0.1` (the generator's receiving port's MAC) and
//! N `[[ip.route]]` /32 routes via it. An address makes the port *routed* (docs/CONTROL.md,
//! `[ip]`).
//!
//! Loading routes: the driver rewrites the file with N routes and applies it with one
//! `vecswitch ctl reload` — one validate/diff/apply of the whole file; `ctl ip route add` would
//! do that once per route. It then checks `ctl show ip fib` for the count
//! ([`fib_routes`], the table's own routes included) and records the time from the start of
//! the reload to the verified count, with the FIB's memory, in the placement note
//! ([`crate::dut::router::TableLoad`]). The switch starts with one route, so a test without a scale sweep forwards
//! too.
//!
//! The ingress MAC the generator must send to is the interface's own, read from
//! `ctl show interfaces` after start ([`interface_mac`]).

use std::net::Ipv4Addr;
use std::time::Duration;

use vecswitch_switch::ip::config::{
    AddressConfig, IpConfig, IpPrefix, NeighborConfig, RouteConfig,
};
use vecswitch_switch::ip::control::FibInfo;
use vecswitch_switch::ip::Ipv4Prefix;
use vecswitch_wire::EthernetAddress;

use crate::dut::router::{self, route_dst, EGRESS_ADDR, INGRESS_ADDR, NEXT_HOP};
use crate::dut::vecswitch::answer_data;
use crate::topology::Wiring;

/// How long one `ctl reload` of a route set may take (1M routes in a debug build on a loaded
/// machine take minutes).
pub const RELOAD_TIMEOUT: Duration = Duration::from_secs(1800);

/// The `[ip]` section for `routes` routes on `w`'s routed pair `(ingress, egress)`.
pub fn ip_config(w: &Wiring, (ingress, egress): (usize, usize), routes: u32) -> IpConfig {
    let (i, e) = (w.dut_ports[ingress].name(), w.dut_ports[egress].name());
    let prefix = |(addr, len): (Ipv4Addr, u8)| IpPrefix::V4(Ipv4Prefix { addr, len });
    IpConfig {
        address: [(i, INGRESS_ADDR), (e, EGRESS_ADDR)]
            .into_iter()
            .map(|(port, addr)| AddressConfig {
                interface: port.to_string(),
                address: prefix(addr),
            })
            .collect(),
        neighbor: vec![NeighborConfig {
            interface: e.to_string(),
            ip: NEXT_HOP.into(),
            mac: EthernetAddress(router::generator_mac(w, egress)),
        }],
        route: (0..routes)
            .map(|r| RouteConfig {
                prefix: prefix((route_dst(r), 32)),
                via: vec![NEXT_HOP.into()],
                table: 0,
            })
            .collect(),
        ..IpConfig::default()
    }
}

/// The MAC of interface `name` in a `ctl --json show interfaces` answer (the switch's own
/// [`vecswitch_switch::InterfaceInfo`]s).
pub fn interface_mac(json: &str, name: &str) -> Option<[u8; 6]> {
    let list: Vec<vecswitch_switch::InterfaceInfo> = answer_data(json)?;
    let i = list.into_iter().find(|i| i.name == name)?;
    router::parse_mac(&i.mac)
}

/// `(routes, FIB bytes)` from a `ctl --json show ip fib …` answer (the switch's own
/// [`FibInfo`]).
pub fn fib_routes(json: &str) -> Option<(u64, Option<u64>)> {
    let f: FibInfo = answer_data(json)?;
    Some((f.routes as u64, Some(f.fib_memory_bytes as u64)))
}

/// Routes the table holds besides the static ones: a local (/32) and a connected route per
/// interface address.
pub const OWN_ROUTES: u64 = 4;

/// A `ctl --json show interfaces` answer listing main interfaces `(name, MAC)`, written from the
/// switch's own [`vecswitch_switch::InterfaceInfo`].
#[cfg(test)]
pub(crate) fn interfaces_answer(ifs: &[(&str, &str)]) -> String {
    let list: Vec<vecswitch_switch::InterfaceInfo> = ifs
        .iter()
        .zip(0u16..)
        .map(|((name, mac), i)| vecswitch_switch::InterfaceInfo {
            index: i,
            name: name.to_string(),
            kind: vecswitch_switch::interface::InterfaceKind::Main { port: i },
            admin_up: true,
            mac: mac.to_string(),
            mtu: 1500,
            counters: Default::default(),
            input_features: Vec::new(),
            output_features: Vec::new(),
        })
        .collect();
    serde_json::json!({ "ok": true, "data": list }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_config_is_a_valid_ip_section() {
        let w = crate::dut::test_wiring();
        let ip = ip_config(&w, (0, 1), 3);
        let a: Vec<String> = ip
            .address
            .iter()
            .map(|a| format!("{} {}", a.interface, a.address))
            .collect();
        assert_eq!(a, ["phy0 198.18.0.254/24", "phy1 198.19.0.254/24"]);
        let n = &ip.neighbor[..];
        assert_eq!(n.len(), 1);
        assert_eq!(
            (
                n[0].interface.as_str(),
                n[0].ip.to_string(),
                n[0].mac.to_string()
            ),
            (
                "phy1",
                "198.19.0.1".to_string(),
                "02:00:00:00:00:02".to_string()
            )
        );
        let r: Vec<String> = ip
            .route
            .iter()
            .map(|r| format!("{} via {:?}", r.prefix, r.via))
            .collect();
        assert_eq!(
            r,
            [
                "16.0.0.0/32 via [198.19.0.1]",
                "16.0.0.1/32 via [198.19.0.1]",
                "16.0.0.2/32 via [198.19.0.1]"
            ]
        );
        // The router's whole config, written out, is what `vecswitch run` takes.
        let mut c = crate::dut::vecswitch::config(
            &w.dut_ports,
            &[],
            crate::dut::vecswitch::Mode::Router,
            std::path::Path::new("/r/dut.ctl"),
            Some(1),
        );
        c.ip = ip;
        crate::dut::vecswitch::assert_valid_round_trip(&c);
        let t = crate::dut::vecswitch::to_toml(&c);
        assert!(
            t.contains("prefix = \"16.0.0.2/32\"\nvia = [\"198.19.0.1\"]"),
            "{t}"
        );
        let v: toml::Value = toml::from_str(&t).unwrap();
        assert_eq!(v["ip"]["route"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn answers_parse() {
        let ifs =
            &interfaces_answer(&[("phy0", "02:fe:00:00:00:00"), ("phy1", "02:fe:00:00:00:01")]);
        assert_eq!(interface_mac(ifs, "phy1"), Some([2, 0xfe, 0, 0, 0, 1]));
        assert_eq!(interface_mac(ifs, "phy2"), None);
        let fib = r#"{"ok":true,"data":{"table":0,"routes":2004,"matched":2004,"offset":0,"entries":[],"adjacencies":3,"fib_memory_bytes":1048576}}"#;
        assert_eq!(fib_routes(fib), Some((2004, Some(1 << 20))));
        assert_eq!(fib_routes("{}"), None);
    }
}
