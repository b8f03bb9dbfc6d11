//! `ovs-dpdk`: OVS with the DPDK datapath (`openvswitch-switch-dpdk`), which does not run usefully
//! on this lab, so the driver refuses with the reason instead of producing misleading numbers.
//!
//! Measured before the project started (DESIGN.md, facts): `ovs-vswitchd-dpdk` starts with
//! `dpdk-extra="--no-huge --legacy-mem -m 1024 --no-pci --iova-mode=va"` and *receives* from a
//! memif port, but what it transmits to memif is dropped (it opens two TX queues on the memif PMD,
//! the peer serves one). Without hugepages or a PCI NIC there is no other port type to give it
//! here. A phy2phy run would report 100 % loss that is the lab's fault, not the DUT's — so
//! [`Dut::setup`] returns [`Error::Unsupported`] saying why (and whether the package is even
//! installed), and `docs/TESTBED.md` says the same.

use crate::dut::Dut;
use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::topology::Wiring;

/// Where Debian's DPDK build of vswitchd lives.
pub const OVS_VSWITCHD_DPDK: &str = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk";

/// The refusing OVS-DPDK driver.
#[derive(Debug, Default)]
pub struct OvsDpdkDut;

impl OvsDpdkDut {
    pub fn new() -> OvsDpdkDut {
        OvsDpdkDut
    }

    /// Why it cannot run here.
    pub fn reason() -> String {
        let installed = std::path::Path::new(OVS_VSWITCHD_DPDK).is_file();
        let pkg = if installed {
            "openvswitch-switch-dpdk is installed, but"
        } else {
            "openvswitch-switch-dpdk is not installed (make setup does not install it), and even when it is,"
        };
        format!(
            "{pkg} its transmit to memif ports is dropped on this lab (it opens 2 TX queues on the \
             memif PMD; unsolved), and without hugepages or a PCI NIC memif is its only usable port \
             type; results would show the lab's loss as the DUT's (see docs/TESTBED.md)"
        )
    }
}

impl Dut for OvsDpdkDut {
    fn name(&self) -> &str {
        "ovs-dpdk"
    }

    fn describe(&self) -> String {
        format!("OVS-DPDK (not runnable here: {})", OvsDpdkDut::reason())
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        Err(Error::Unsupported {
            dut: self.name().into(),
            what: format!("topology {}", w.topology),
            why: OvsDpdkDut::reason(),
        })
    }

    fn teardown(&mut self) -> Result<()> {
        Ok(())
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        Vec::new()
    }
}
