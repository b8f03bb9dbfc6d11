//! The routed phy2phy plan the router DUTs share (`vecswitch-router`, `linux-router`,
//! `ovs-router`): addresses, the static neighbour, the route set of [`Scale::Routes`] and the
//! generator traffic that spreads over it.
//!
//! ```text
//! generator port 0 ──► DUT ingress 198.18.0.254/24 ──(N /32 routes)──► DUT egress 198.19.0.254/24 ──► generator port 1
//!  198.18.0.1 → 16.0.0.0 … 16.0.0.0+N−1                      next hop 198.19.0.1 (static neighbour:
//!  to the ingress interface's MAC                           generator port 1's MAC)
//! ```
//!
//! - The generator's stream from port 0 to port 1 (source 198.18.0.1, RFC 2544 Appendix C.2.2's
//!   benchmarking range, inside the ingress subnet so reverse-path filters pass it) is sent to the
//!   ingress interface's MAC; its destination address runs over `16.0.0.0 + k`, one address per
//!   route, `k` in `0..min(N, MAX_FLOWS)` ([`shape`]) — seed 000's "traffic to N destinations"
//!   (FD.io CSIT's `ip4scale` tests use /32 host routes the same way).
//! - Route `i` is `16.0.0.0 + i` /32 ([`route_dst`]) via 198.19.0.1 on the egress interface; the
//!   next hop is a static neighbour (no ARP in the measurement) whose MAC is the generator's
//!   receiving port's (veth) or [`FALLBACK_NEXT_HOP_MAC`] (memif, where the generator takes any
//!   destination MAC).
//! - Each forwarded frame is a FIB hit rewritten as a router does: new MACs, TTL − 1, IPv4
//!   checksum updated. The generator finds its signature after the UDP header, so the rewrite
//!   does not disturb the measurement.
//!
//! Router DUTs run one direction only (port 0 → port 1): the reverse stream of a bidirectional
//! suite would need the same table the other way, which no seed figure uses.

use std::net::Ipv4Addr;

use vecswitch_gen::flow::MAX_FLOWS;
use vecswitch_gen::{Field, FieldMode, FieldRange, StreamSpec};

use crate::error::{Error, Result};
use crate::topology::{PortEnd, Wiring};

/// The first route's destination (route `i` is `ROUTE_BASE + i` /32).
pub const ROUTE_BASE: Ipv4Addr = Ipv4Addr::new(16, 0, 0, 0);
/// The ingress interface's address and prefix length (the generator's source 198.18.0.1 is in it).
pub const INGRESS_ADDR: (Ipv4Addr, u8) = (Ipv4Addr::new(198, 18, 0, 254), 24);
/// The egress interface's address and prefix length.
pub const EGRESS_ADDR: (Ipv4Addr, u8) = (Ipv4Addr::new(198, 19, 0, 254), 24);
/// The static neighbour every route points to, on the egress subnet.
pub const NEXT_HOP: Ipv4Addr = Ipv4Addr::new(198, 19, 0, 1);
/// The next hop's MAC when the generator's receiving port has none (memif).
pub const FALLBACK_NEXT_HOP_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
/// Most routes a sweep point may ask for: the base plus this stays below 224.0.0.0.
pub const MAX_ROUTES: u32 = 100_000_000;

/// One route set loaded into a router: its size after the load, routes added or removed on the
/// way, how long it took (start of the load to the count verified), and the table's memory where
/// the device reports it. Shown in the placement note and printed as each point loads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TableLoad {
    pub routes: u32,
    pub changed: u32,
    pub seconds: f64,
    pub memory_bytes: Option<u64>,
}

impl TableLoad {
    /// A load of `routes` (from `before`) that started at `t0`, the table then taking
    /// `memory_bytes`; printed to stderr with `dut`.
    pub fn done(
        dut: &str,
        (before, routes): (u32, u32),
        t0: std::time::Instant,
        memory_bytes: Option<u64>,
    ) -> TableLoad {
        let l = TableLoad {
            routes,
            changed: routes.abs_diff(before),
            seconds: t0.elapsed().as_secs_f64(),
            memory_bytes,
        };
        eprintln!("{dut}: {l}");
        l
    }

    /// The loads as a placement note's list.
    pub fn list(loads: &[TableLoad]) -> String {
        loads
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for TableLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} routes ({} changed) in {:.2} s",
            self.routes, self.changed, self.seconds
        )?;
        if let Some(b) = self.memory_bytes {
            write!(f, ", FIB {:.1} MiB", b as f64 / (1u64 << 20) as f64)?;
        }
        Ok(())
    }
}

/// Route `i`'s destination (its /32 prefix).
pub fn route_dst(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(ROUTE_BASE) + i)
}

/// `a.b.c.d/len` of an address pair.
pub fn cidr((a, len): (Ipv4Addr, u8)) -> String {
    format!("{a}/{len}")
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn mac_text(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut m = [0u8; 6];
    let mut parts = s.trim().split(':');
    for b in &mut m {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(m)
}

/// The routed port pair of `w`: (ingress, egress) indexes into `w.dut_ports`. A router DUT holds
/// exactly one pair, both ends facing the generator (phy2phy).
pub fn routed_pair(dut: &str, w: &Wiring) -> Result<(usize, usize)> {
    match w.pairs.as_slice() {
        [(a, b)] if *a < w.gen_ports.len() && *b < w.gen_ports.len() => Ok((*a, *b)),
        _ => Err(crate::dut::unsupported_wiring(
            dut,
            w,
            "a router DUT routes one port pair between the generator's two ports; use \
             phy2phy-memif or phy2phy-veth",
        )),
    }
}

/// The MAC of the generator port facing DUT port `i` (veth), else [`FALLBACK_NEXT_HOP_MAC`].
pub fn generator_mac(w: &Wiring, i: usize) -> [u8; 6] {
    match w.gen_ports.get(i) {
        Some(PortEnd::Veth { mac, .. }) => parse_mac(mac).unwrap_or(FALLBACK_NEXT_HOP_MAC),
        _ => FALLBACK_NEXT_HOP_MAC,
    }
}

/// The MAC of DUT port `i` when it is a veth end (the kernel's and OVS's ingress MAC).
pub fn dut_veth_mac(dut: &str, w: &Wiring, i: usize) -> Result<[u8; 6]> {
    match w.dut_ports.get(i) {
        Some(PortEnd::Veth { mac, ifname, .. }) => parse_mac(mac).ok_or_else(|| Error::Invalid {
            field: "DUT veth MAC",
            value: format!("{ifname}: {mac:?}"),
            expected: format!("the MAC of the veth end {dut} receives on (aa:bb:cc:dd:ee:ff)"),
        }),
        _ => Err(crate::dut::unsupported_wiring(
            dut,
            w,
            "this router has only kernel interfaces (veth); use phy2phy-veth",
        )),
    }
}

/// A route count for a sweep point, checked.
pub fn check_routes(dut: &str, n: u32) -> Result<u32> {
    if (1..=MAX_ROUTES).contains(&n) {
        Ok(n)
    } else {
        Err(Error::Invalid {
            field: "routes",
            value: format!("{n} ({dut})"),
            expected: format!("1..={MAX_ROUTES} routes"),
        })
    }
}

/// Shapes the streams for a router with `routes` routes on the routed pair `(ingress, egress)`:
/// the stream from the ingress to the egress side goes to `ingress_mac`, with destination
/// addresses `ROUTE_BASE + k`, `k < min(routes, MAX_FLOWS)`, one flow per address. A stream
/// the other way is refused (router DUTs run one direction, see the module doc).
pub fn shape(
    streams: &mut [StreamSpec],
    (ingress, egress): (usize, usize),
    ingress_mac: [u8; 6],
    routes: u32,
) -> Result<()> {
    let destinations = routes.clamp(1, MAX_FLOWS);
    for s in streams.iter_mut() {
        if s.tx_port != ingress || s.rx_port != egress {
            return Err(Error::Invalid {
                field: "router stream",
                value: format!("{} → {} (bidirectional?)", s.tx_port, s.rx_port),
                expected: format!(
                    "streams from generator port {ingress} to {egress} only: the router DUTs \
                     route one way (set bidirectional = false)"
                ),
            });
        }
        s.dst_mac = ingress_mac;
        s.dst_ip = ROUTE_BASE.into();
        s.ranges.retain(|r| r.field != Field::DstIp);
        s.ranges.push(FieldRange {
            field: Field::DstIp,
            count: destinations,
            mode: FieldMode::Increment,
        });
        s.flows = destinations;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use vecswitch_gen::StreamBuilder;

    #[test]
    fn routes_are_contiguous_host_routes_outside_the_interface_subnets() {
        assert_eq!(route_dst(0), Ipv4Addr::new(16, 0, 0, 0));
        assert_eq!(route_dst(1_000_000 - 1), Ipv4Addr::new(16, 15, 66, 63));
        assert!(u32::from(route_dst(MAX_ROUTES)) < u32::from(Ipv4Addr::new(224, 0, 0, 0)));
        assert_eq!(cidr(INGRESS_ADDR), "198.18.0.254/24");
        assert_eq!(parse_mac("02:00:00:00:00:0b"), Some([2, 0, 0, 0, 0, 11]));
        assert_eq!(mac_text([2, 0, 0, 0, 0xab, 11]), "02:00:00:00:ab:0b");
        assert_eq!(parse_mac("02:00:00:00:00"), None);
        assert!(check_routes("r", 0).is_err());
        let mut l = TableLoad {
            routes: 2000,
            changed: 1999,
            seconds: 0.5,
            memory_bytes: None,
        };
        assert_eq!(l.to_string(), "2000 routes (1999 changed) in 0.50 s");
        l.memory_bytes = Some(1 << 20);
        assert_eq!(
            TableLoad::list(&[l, l]),
            "2000 routes (1999 changed) in 0.50 s, FIB 1.0 MiB, 2000 routes (1999 changed) in 0.50 s, FIB 1.0 MiB"
        );
    }

    /// Every frame of the shaped stream goes to the ingress MAC and to the destination of one
    /// route; over `destinations` frames, every route's destination exactly once.
    #[test]
    fn shaped_traffic_hits_each_route_once_per_cycle() {
        let ingress_mac = [0x02, 0xfe, 0, 0, 0, 0];
        for routes in [1u32, 7, 2000] {
            let mut v = vec![StreamSpec::ipv4(0, 1)];
            shape(&mut v, (0, 1), ingress_mac, routes).unwrap();
            assert_eq!(v[0].flows, routes);
            let b = StreamBuilder::new(0, &v[0]).unwrap();
            let mut seen = HashSet::new();
            for n in 0..routes as u64 {
                let mut f = vec![0u8; b.wire_len(n)];
                b.build(n, 0, false, &mut f);
                assert_eq!(f[..6], ingress_mac);
                let dst = Ipv4Addr::new(f[30], f[31], f[32], f[33]);
                assert!(u32::from(dst) - u32::from(ROUTE_BASE) < routes, "{dst}");
                seen.insert(dst);
            }
            assert_eq!(seen.len() as u32, routes);
        }
        let mut v = vec![StreamSpec::ipv4(0, 1)];
        shape(&mut v, (0, 1), ingress_mac, 5_000_000).unwrap();
        assert_eq!(v[0].flows, MAX_FLOWS);
        let mut v = vec![StreamSpec::ipv4(0, 1), StreamSpec::ipv4(0, 1).reversed()];
        let e = shape(&mut v, (0, 1), ingress_mac, 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bidirectional = false"), "{e}");
    }
}
