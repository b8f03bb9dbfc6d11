//! `linux-bridge`: the kernel bridge between the DUT's veth ends.
//!
//! One bridge (`br0`, `br1`, ...) per port pair, made inside the DUT namespace with STP off and no
//! forward delay. `br_netfilter`'s `bridge-nf-call-*` sysctls are turned off *in that namespace*
//! (they are per namespace): with them on, the kernel bridge silently drops IPv4 frames with a bad
//! checksum (DESIGN.md, pitfalls) and sends every frame through iptables, which is not the bridge
//! being measured. There is no process: the bridge is kernel code running on the CPUs that RPS
//! assigns to the receiving veth ends (the DUT CPU, see [`crate::topology`]).
//!
//! Scale: [`Scale::MacEntries`] installs static FDB entries (`bridge -batch`) on the second port
//! of the first pair — incrementally: entries `0..n` are the same at every point, only the
//! difference is added or deleted — and the traffic's destination MACs are spread over them
//! ([`Dut::shape_streams`]).
//!
//! Counters ([`Dut::counters`]): the kernel counters of the DUT-side veth ends
//! ([`crate::dut::kernel_if`]); the bridge has no drop counter of its own, so `internal_dropped`
//! is unknown (`None`).

use crate::dut::counters::DeviceCounters;
use crate::dut::{kernel, unsupported_wiring, Dut, Scale};
use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::topology::{PortEnd, Wiring};
use vecswitch_gen::StreamSpec;

/// The kernel bridge DUT.
#[derive(Debug, Default)]
pub struct LinuxBridgeDut {
    wiring: Option<Wiring>,
    bridges: Vec<String>,
    /// Static scale entries installed.
    mac_entries: u32,
}

impl LinuxBridgeDut {
    pub fn new() -> LinuxBridgeDut {
        LinuxBridgeDut::default()
    }

    fn ns_exec(&self, w: &Wiring, program: &str, args: &[&str]) -> Result<String> {
        let mut a = vec!["netns", "exec", w.dut_netns.as_str(), program];
        a.extend_from_slice(args);
        crate::cmd::run("ip", &a)
    }
}

/// The `n`th locally administered MAC used for scale entries (02:5c:hh:hh:hh:hh).
pub fn scale_mac(n: u32) -> String {
    let b = scale_mac_bytes(n);
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        b[0], b[1], b[2], b[3], b[4], b[5]
    )
}

/// [`scale_mac`] as bytes.
pub fn scale_mac_bytes(n: u32) -> [u8; 6] {
    let b = n.to_be_bytes();
    [0x02, 0x5c, b[0], b[1], b[2], b[3]]
}

impl Dut for LinuxBridgeDut {
    fn name(&self) -> &str {
        "linux-bridge"
    }

    fn describe(&self) -> String {
        format!("kernel bridge, {}", kernel())
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        if !w.all_dut_ports_veth() {
            return Err(unsupported_wiring(
                self.name(),
                w,
                "the kernel bridge has only kernel interfaces (veth); use phy2phy-veth",
            ));
        }
        let ns = w.dut_netns.as_str();
        self.wiring = Some(w.clone());
        for key in [
            "net.bridge.bridge-nf-call-iptables=0",
            "net.bridge.bridge-nf-call-ip6tables=0",
            "net.bridge.bridge-nf-call-arptables=0",
        ] {
            // Absent when br_netfilter is not loaded: then there is nothing to turn off.
            let _ = self.ns_exec(w, "sysctl", &["-q", "-w", key]);
        }
        for (n, (a, b)) in w.pairs.iter().enumerate() {
            let br = format!("br{n}");
            crate::cmd::run(
                "ip",
                &[
                    "-n",
                    ns,
                    "link",
                    "add",
                    &br,
                    "type",
                    "bridge",
                    "stp_state",
                    "0",
                    "forward_delay",
                    "0",
                ],
            )?;
            self.bridges.push(br.clone());
            for i in [*a, *b] {
                let PortEnd::Veth { ifname, .. } = &w.dut_ports[i] else {
                    unreachable!("checked above: all veth");
                };
                crate::cmd::run("ip", &["-n", ns, "link", "set", ifname, "master", &br])?;
            }
            crate::cmd::run("ip", &["-n", ns, "link", "set", &br, "up"])?;
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        if let Some(w) = &self.wiring {
            for br in self.bridges.drain(..) {
                crate::cmd::run_quiet("ip", &["-n", &w.dut_netns, "link", "del", &br]);
            }
        }
        self.wiring = None;
        self.mac_entries = 0;
        Ok(())
    }

    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        let w = self.wiring.clone().ok_or_else(|| Error::Invalid {
            field: "linux-bridge state",
            value: "not set up".into(),
            expected: "configure_scale after setup".into(),
        })?;
        let Scale::MacEntries(n) = scale else {
            return Err(Error::Unsupported {
                dut: self.name().into(),
                what: format!("{scale:?}"),
                why: "the kernel bridge has MAC entries, not flows".into(),
            });
        };
        let Some(PortEnd::Veth { ifname, .. }) = w.pairs.first().map(|p| &w.dut_ports[p.1]) else {
            return Err(unsupported_wiring(self.name(), &w, "no veth port pair"));
        };
        let mut batch = String::with_capacity(n.abs_diff(self.mac_entries) as usize * 48);
        for i in n..self.mac_entries {
            batch.push_str(&format!("fdb del {} dev {ifname} master\n", scale_mac(i)));
        }
        for i in self.mac_entries..n {
            batch.push_str(&format!(
                "fdb replace {} dev {ifname} master static\n",
                scale_mac(i)
            ));
        }
        let path = w.run_dir.join("fdb.batch");
        std::fs::write(&path, &batch).map_err(|source| Error::Io {
            what: "writing",
            path: path.clone(),
            source,
        })?;
        if !batch.is_empty() {
            self.ns_exec(&w, "bridge", &["-batch", &path.display().to_string()])?;
        }
        self.mac_entries = n;
        Ok(())
    }

    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        let Some(w) = &self.wiring else {
            return Ok(());
        };
        let pair = w
            .pairs
            .first()
            .copied()
            .filter(|(a, b)| *a < w.gen_ports.len() && *b < w.gen_ports.len());
        if let (Some(pair), n @ 1..) = (pair, self.mac_entries) {
            let macs = Scale::MacEntries(n).destinations().unwrap_or(1);
            crate::dut::spread_dst_macs(streams, pair, crate::dut::SCALE_MAC_BASE, macs);
        }
        Ok(())
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        // No process: the bridge runs in softirq context on the CPU RPS gives the DUT's veth ends.
        self.wiring
            .iter()
            .map(|w| PlacedProcess {
                role: "dut".into(),
                name: "kernel-bridge".into(),
                pid: 0,
                cpus: vec![w.cores.dut.to_string()],
                note: "softirq on the CPU that RPS assigns to the DUT's veth ends".into(),
            })
            .collect()
    }

    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        match &self.wiring {
            Some(w) => crate::dut::kernel_if::facing_veth_counters(w),
            None => Ok(None),
        }
    }

    /// `ip link set brN type bridge fdb_flush`: the dynamic entries go, static ones stay.
    fn flush_mac_table(&mut self) -> Result<()> {
        let w = self.wiring.clone().ok_or_else(|| Error::Invalid {
            field: "linux-bridge state",
            value: "not set up".into(),
            expected: "flush_mac_table after setup".into(),
        })?;
        for br in &self.bridges {
            crate::cmd::run(
                "ip",
                &[
                    "-n",
                    &w.dut_netns,
                    "link",
                    "set",
                    br,
                    "type",
                    "bridge",
                    "fdb_flush",
                ],
            )?;
        }
        Ok(())
    }
}

impl Drop for LinuxBridgeDut {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_macs_are_distinct_and_local() {
        assert_eq!(scale_mac(0), "02:5c:00:00:00:00");
        assert_eq!(scale_mac(0x0102_0304), "02:5c:01:02:03:04");
    }
}
