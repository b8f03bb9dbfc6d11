//! `vecswitch-router`: vecswitch routing IPv4 between two `[ip]` interfaces — the config the
//! [`crate::dut::vecswitch::VecswitchDut`] driver (mode [`crate::dut::vecswitch::Mode::Router`])
//! writes, and how it reads the result back.
//!
//! The config is the driver's usual `[switch]` and `[[port]]` tables (memif servers or AF_PACKET
//! on the DUT's veth ends) without a service, plus `[ip]` ([`ip_section`], the address plan of
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

use std::fmt::Write as _;
use std::time::Duration;

use crate::dut::router::{self, cidr, mac_text, route_dst, EGRESS_ADDR, INGRESS_ADDR, NEXT_HOP};
use crate::topology::Wiring;

/// How long one `ctl reload` of a route set may take (1M routes in a debug build on a loaded
/// machine take minutes).
pub const RELOAD_TIMEOUT: Duration = Duration::from_secs(1800);

/// The `[ip]` section for `routes` routes on `w`'s routed pair `(ingress, egress)`.
pub fn ip_section(w: &Wiring, (ingress, egress): (usize, usize), routes: u32) -> String {
    let q = |s: &str| format!("\"{s}\"");
    let (i, e) = (w.dut_ports[ingress].name(), w.dut_ports[egress].name());
    let mut s = String::with_capacity(64 * routes as usize + 512);
    s.push_str("\n[ip]\n");
    for (port, addr) in [(i, INGRESS_ADDR), (e, EGRESS_ADDR)] {
        let _ = write!(
            s,
            "\n[[ip.address]]\ninterface = {}\naddress = {}\n",
            q(port),
            q(&cidr(addr))
        );
    }
    let _ = write!(
        s,
        "\n[[ip.neighbor]]\ninterface = {}\nip = \"{NEXT_HOP}\"\nmac = {}\n",
        q(e),
        q(&mac_text(router::generator_mac(w, egress)))
    );
    for r in 0..routes {
        let _ = write!(
            s,
            "\n[[ip.route]]\nprefix = \"{}/32\"\nvia = [\"{NEXT_HOP}\"]\n",
            route_dst(r)
        );
    }
    s
}

/// The MAC of interface `name` in a `ctl --json show interfaces` answer.
pub fn interface_mac(json: &str, name: &str) -> Option<[u8; 6]> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v.get("data")?
        .as_array()?
        .iter()
        .find(|e| e.get("name").and_then(|n| n.as_str()) == Some(name))
        .and_then(|e| e.get("mac")?.as_str())
        .and_then(router::parse_mac)
}

/// `(routes, FIB bytes)` from a `ctl --json show ip fib …` answer.
pub fn fib_routes(json: &str) -> Option<(u64, Option<u64>)> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let d = v.get("data")?;
    Some((
        d.get("routes")?.as_u64()?,
        d.get("fib_memory_bytes")
            .and_then(serde_json::Value::as_u64),
    ))
}

/// Routes the table holds besides the static ones: a local (/32) and a connected route per
/// interface address.
pub const OWN_ROUTES: u64 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_section_is_a_valid_ip_config() {
        let w = crate::dut::test_wiring();
        let s = ip_section(&w, (0, 1), 3);
        let expected_head = "
[ip]

[[ip.address]]
interface = \"phy0\"
address = \"198.18.0.254/24\"

[[ip.address]]
interface = \"phy1\"
address = \"198.19.0.254/24\"

[[ip.neighbor]]
interface = \"phy1\"
ip = \"198.19.0.1\"
mac = \"02:00:00:00:00:02\"

[[ip.route]]
prefix = \"16.0.0.0/32\"
via = [\"198.19.0.1\"]
";
        assert!(s.starts_with(expected_head), "{s}");
        assert!(
            s.ends_with("prefix = \"16.0.0.2/32\"\nvia = [\"198.19.0.1\"]\n"),
            "{s}"
        );
        let v: toml::Value = toml::from_str(&s).unwrap();
        assert_eq!(v["ip"]["route"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn answers_parse() {
        let ifs = r#"{"ok":true,"data":[{"index":0,"name":"phy0","mac":"02:fe:00:00:00:00"},{"index":1,"name":"phy1","mac":"02:fe:00:00:00:01"}]}"#;
        assert_eq!(interface_mac(ifs, "phy1"), Some([2, 0xfe, 0, 0, 0, 1]));
        assert_eq!(interface_mac(ifs, "phy2"), None);
        let fib = r#"{"ok":true,"data":{"table":0,"routes":2004,"matched":2004,"offset":0,"entries":[],"adjacencies":3,"fib_memory_bytes":1048576}}"#;
        assert_eq!(fib_routes(fib), Some((2004, Some(1 << 20))));
        assert_eq!(fib_routes("{}"), None);
    }
}
