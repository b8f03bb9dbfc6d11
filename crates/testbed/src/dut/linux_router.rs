//! `linux-router`: the kernel's own IPv4 forwarding between the DUT's two veth ends, in the DUT
//! namespace, with the address plan of [`crate::dut::router`].
//!
//! Setup (all inside the DUT namespace; sysctls are per namespace): `net.ipv4.ip_forward=1`,
//! reverse-path filtering off (`rp_filter=0`: the test's sources are in the ingress subnet anyway,
//! the filter's lookup is not what is measured), the ingress and egress addresses, a permanent
//! neighbour entry for the next hop (the generator's receiving veth's MAC: no ARP during a
//! trial) and one route. There is no process: forwarding is kernel code in the receive softirq on
//! the CPU that RPS gives the DUT's veth ends (the DUT CPU, see [`crate::topology`]).
//!
//! Scale: [`Scale::Routes`] loads /32 routes `via 198.19.0.1` with `ip -batch` (one netlink
//! request per line, in one process; `ip` stops at the first line that fails, so success means
//! every route is in), tagged `proto` [`RT_PROTO`] so that they are told apart from the
//! interfaces' own routes. Points grow the table incrementally (routes `0..n` are the same at
//! every point: only the new ones are added); a smaller point deletes the routes above it. The
//! time of each `ip -batch` is kept and shown in the placement note ([`LinuxRouterDut::loads`]).
//!
//! Counters ([`Dut::counters`]): the kernel counters of the DUT's veth ends
//! ([`crate::dut::kernel_if`]); drops inside the kernel's forwarding path are not read, so
//! `internal_dropped` is unknown (`None`).

use std::fmt::Write as _;
use std::time::Instant;

use vecswitch_gen::StreamSpec;

use crate::dut::counters::DeviceCounters;
use crate::dut::router::{
    self, cidr, mac_text, route_dst, TableLoad, EGRESS_ADDR, INGRESS_ADDR, NEXT_HOP,
};
use crate::dut::{kernel, Dut, Scale};
use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::topology::{PortEnd, Wiring};

/// The routing protocol number the scale routes carry (`ip route … proto 200`; 200 is not
/// assigned in `/etc/iproute2/rt_protos`).
pub const RT_PROTO: u32 = 200;

/// The kernel router DUT.
#[derive(Debug, Default)]
pub struct LinuxRouterDut {
    wiring: Option<Wiring>,
    /// Veth names of the routed pair (ingress, egress).
    ifnames: Option<(String, String)>,
    routes: u32,
    loads: Vec<TableLoad>,
}

/// The `ip -batch` lines that take the scale routes from `from` to `to` on `egress`.
pub fn route_batch(from: u32, to: u32, egress: &str) -> String {
    let mut s = String::new();
    for i in to..from {
        let _ = writeln!(s, "route del {}/32 proto {RT_PROTO}", route_dst(i));
    }
    for i in from..to {
        let _ = writeln!(
            s,
            "route add {}/32 via {NEXT_HOP} dev {egress} proto {RT_PROTO}",
            route_dst(i)
        );
    }
    s
}

impl LinuxRouterDut {
    pub fn new() -> LinuxRouterDut {
        LinuxRouterDut::default()
    }

    /// Every route batch so far, in order.
    pub fn loads(&self) -> &[TableLoad] {
        &self.loads
    }

    fn ip(&self, w: &Wiring, args: &[&str]) -> Result<String> {
        let mut a = vec!["-n", w.dut_netns.as_str()];
        a.extend_from_slice(args);
        crate::cmd::run("ip", &a)
    }

    fn sysctl(&self, w: &Wiring, kv: &str) -> Result<String> {
        crate::cmd::run(
            "ip",
            &["netns", "exec", &w.dut_netns, "sysctl", "-q", "-w", kv],
        )
    }

    fn state(&self) -> Result<(Wiring, (String, String))> {
        match (&self.wiring, &self.ifnames) {
            (Some(w), Some(i)) => Ok((w.clone(), i.clone())),
            _ => Err(Error::Invalid {
                field: "linux-router state",
                value: "not set up".into(),
                expected: "configure_scale after setup".into(),
            }),
        }
    }

    /// Takes the table to `n` scale routes with one `ip -batch`.
    fn set_routes(&mut self, n: u32) -> Result<()> {
        let n = router::check_routes(self.name(), n)?;
        let (w, (_, egress)) = self.state()?;
        if n == self.routes {
            return Ok(());
        }
        let path = w.run_dir.join("routes.batch");
        std::fs::write(&path, route_batch(self.routes, n, &egress)).map_err(|source| {
            Error::Io {
                what: "writing",
                path: path.clone(),
                source,
            }
        })?;
        let t0 = Instant::now();
        self.ip(&w, &["-batch", &path.display().to_string()])?;
        self.loads
            .push(TableLoad::done(self.name(), (self.routes, n), t0, None));
        self.routes = n;
        Ok(())
    }
}

impl Dut for LinuxRouterDut {
    fn name(&self) -> &str {
        "linux-router"
    }

    fn describe(&self) -> String {
        format!("kernel IPv4 forwarding, {}", kernel())
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        if !w.all_dut_ports_veth() {
            return Err(crate::dut::unsupported_wiring(
                self.name(),
                w,
                "the kernel routes between kernel interfaces (veth); use phy2phy-veth",
            ));
        }
        let (a, b) = router::routed_pair(self.name(), w)?;
        let name = |i: usize| match &w.dut_ports[i] {
            PortEnd::Veth { ifname, .. } => ifname.clone(),
            p => p.name().to_string(),
        };
        let (ingress, egress) = (name(a), name(b));
        self.wiring = Some(w.clone());
        self.ifnames = Some((ingress.clone(), egress.clone()));
        self.sysctl(w, "net.ipv4.ip_forward=1")?;
        for i in ["all", "default", ingress.as_str(), egress.as_str()] {
            self.sysctl(w, &format!("net.ipv4.conf.{i}.rp_filter=0"))?;
        }
        self.ip(w, &["addr", "add", &cidr(INGRESS_ADDR), "dev", &ingress])?;
        self.ip(w, &["addr", "add", &cidr(EGRESS_ADDR), "dev", &egress])?;
        for i in [&ingress, &egress] {
            self.ip(w, &["link", "set", i, "up"])?;
        }
        self.ip(
            w,
            &[
                "neigh",
                "replace",
                &NEXT_HOP.to_string(),
                "lladdr",
                &mac_text(router::generator_mac(w, b)),
                "dev",
                &egress,
                "nud",
                "permanent",
            ],
        )?;
        self.routes = 0;
        self.set_routes(1)
    }

    fn teardown(&mut self) -> Result<()> {
        if let (Some(w), Some((i, e))) = (self.wiring.take(), self.ifnames.take()) {
            // Removing the addresses removes the connected subnet and every route through it.
            for d in [&i, &e] {
                crate::cmd::run_quiet("ip", &["-n", &w.dut_netns, "addr", "flush", "dev", d]);
            }
        }
        self.routes = 0;
        Ok(())
    }

    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        match scale {
            Scale::Routes(n) => self.set_routes(n),
            other => Err(Error::Unsupported {
                dut: self.name().into(),
                what: format!("{other:?}"),
                why: "the kernel router scales routes (scale kind `routes`)".into(),
            }),
        }
    }

    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        let Some(w) = &self.wiring else {
            return Ok(());
        };
        let pair = router::routed_pair(self.name(), w)?;
        let mac = router::dut_veth_mac(self.name(), w, pair.0)?;
        router::shape(streams, pair, mac, self.routes.max(1))
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        self.wiring
            .iter()
            .map(|w| PlacedProcess {
                role: "dut".into(),
                name: "kernel-router".into(),
                pid: 0,
                cpus: vec![w.cores.dut.to_string()],
                note: format!(
                    "softirq on the CPU that RPS assigns to the DUT's veth ends; route \
                         batches (ip -batch): {}",
                    TableLoad::list(&self.loads)
                ),
            })
            .collect()
    }

    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        match &self.wiring {
            Some(w) => crate::dut::kernel_if::facing_veth_counters(w),
            None => Ok(None),
        }
    }
}

impl Drop for LinuxRouterDut {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_grow_and_shrink_the_table() {
        assert_eq!(
            route_batch(0, 2, "dut1"),
            "route add 16.0.0.0/32 via 198.19.0.1 dev dut1 proto 200\n\
             route add 16.0.0.1/32 via 198.19.0.1 dev dut1 proto 200\n"
        );
        assert_eq!(
            route_batch(2, 3, "d"),
            "route add 16.0.0.2/32 via 198.19.0.1 dev d proto 200\n"
        );
        assert_eq!(
            route_batch(3, 1, "d"),
            "route del 16.0.0.1/32 proto 200\nroute del 16.0.0.2/32 proto 200\n"
        );
        assert_eq!(route_batch(5, 5, "d"), "");
    }
}
