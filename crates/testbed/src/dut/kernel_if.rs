//! Counters of kernel interfaces (`ip -s -j link show`), read inside a namespace: the Linux
//! bridge's DUT-side veth ends, an external device's interfaces, and the CPU-time split of
//! [`crate::devcost`] for devices that run in the kernel.
//!
//! For a veth end, `rx.packets` counts frames the kernel received on it (from the generator),
//! `tx.packets` frames it transmitted (toward the generator), `tx.dropped` frames its peer
//! refused (the peer's backlog was full) and `rx.dropped` frames dropped on receive
//! (`netif_receive` backlog, XDP drops).

use crate::dut::counters::{DeviceCounters, PortCounts};
use crate::error::{Error, Result};
use crate::topology::{PortEnd, Wiring};

/// Per-interface counters of an `ip -s -j link show` answer.
pub fn parse_ip_link(json: &str) -> Option<Vec<(String, PortCounts)>> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v.as_array()?
        .iter()
        .map(|e| {
            let s = e.get("stats64")?;
            let n = |dir: &str, k: &str| s.get(dir)?.get(k)?.as_u64();
            Some((
                e.get("ifname")?.as_str()?.to_string(),
                PortCounts {
                    rx: n("rx", "packets")?,
                    tx: n("tx", "packets")?,
                    rx_dropped: n("rx", "dropped")?,
                    tx_dropped: n("tx", "dropped")?,
                },
            ))
        })
        .collect()
}

/// The counters of a kernel DUT (bridge, router) on `w`: its veth ends on the generator's links,
/// read in the DUT namespace. The namespace's other interfaces (lo, bridges) are not on those
/// links; the kernel's own drops are not read (`internal_dropped` unknown).
pub fn facing_veth_counters(w: &Wiring) -> Result<Option<DeviceCounters>> {
    let ports = read(Some(&w.dut_netns))?;
    let facing = crate::dut::vecswitch::facing_names(w);
    let ifnames: Vec<String> = w
        .dut_ports
        .iter()
        .take(facing.len())
        .filter_map(|p| match p {
            PortEnd::Veth { ifname, .. } => Some(ifname.clone()),
            PortEnd::Memif { .. } | PortEnd::VhostUser { .. } => None,
        })
        .collect();
    let ports: Vec<_> = ports
        .into_iter()
        .filter(|(n, _)| ifnames.contains(n))
        .collect();
    Ok(crate::dut::counters::sum_ports(&ports, &ifnames, None))
}

/// Reads the counters of every interface of namespace `netns` (`None`: the caller's own).
pub fn read(netns: Option<&str>) -> Result<Vec<(String, PortCounts)>> {
    let mut args = Vec::new();
    if let Some(ns) = netns {
        args.extend(["-n", ns]);
    }
    args.extend(["-s", "-j", "link", "show"]);
    let out = crate::cmd::run("ip", &args)?;
    parse_ip_link(&out).ok_or_else(|| Error::Invalid {
        field: "ip -s -j link show",
        value: out.chars().take(200).collect(),
        expected: "a JSON list of interfaces with stats64 (iproute2 ≥ 4.14)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ip -s -j link show lo` on this machine (iproute2 6.1), 2026-11-23, and a veth.
    const SAMPLE: &str = r#"[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,"qdisc":"noqueue","operstate":"UNKNOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"loopback","address":"00:00:00:00:00:00","broadcast":"00:00:00:00:00:00","stats64":{"rx":{"bytes":69787,"packets":1205,"errors":0,"dropped":0,"over_errors":0,"multicast":0},"tx":{"bytes":69787,"packets":1205,"errors":0,"dropped":0,"carrier_errors":0,"collisions":0}}},{"ifindex":7,"link_index":6,"ifname":"dut0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"stats64":{"rx":{"bytes":6000,"packets":100,"errors":0,"dropped":2,"over_errors":0,"multicast":0},"tx":{"bytes":5400,"packets":90,"errors":0,"dropped":3,"carrier_errors":0,"collisions":0}}}]"#;

    #[test]
    fn ip_link_stats_parse() {
        let v = parse_ip_link(SAMPLE).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, "lo");
        assert_eq!(v[0].1.rx, 1205);
        assert_eq!(
            v[1].1,
            PortCounts {
                rx: 100,
                tx: 90,
                rx_dropped: 2,
                tx_dropped: 3
            }
        );
        assert!(parse_ip_link("[{\"ifname\":\"x\"}]").is_none());
    }

    #[test]
    fn loopback_of_this_namespace_is_readable() {
        let v = read(None).unwrap();
        assert!(v.iter().any(|(n, _)| n == "lo"), "{v:?}");
    }
}
