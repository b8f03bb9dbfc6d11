//! The testbed: the lab's topologies and the drivers of the devices under test (DUTs).
//!
//! - Resources with guaranteed cleanup: [`Netns`] (network namespaces; veth pairs made with
//!   [`veth_pair`] live inside them), [`ChildGuard`] (DUT/VNF/daemon processes with log files and
//!   CPU pinning), [`RunDir`] (one directory per run, named by a [`RunId`]), [`cleanup_stale`]
//!   (leftovers of crashed runs) and the Ctrl-C path in [`signal`].
//! - [`Topology`]: `phy2phy-memif`, `phy2phy-veth`, `pvp-memif`, `pvp-veth`, `pvvp-*`, and the VM
//!   topologies `pvp-vm`, `pvvp-vm`, `v2v-vm` (QEMU guests on vhost-user, [`vm`]), and
//!   `chain-memif:A+B+…`, N VNFs of mixed kinds (testpmd, vecswitch, kernel bridge or router in
//!   a namespace of its own, [`chain`]), and `phy2phy-lag`, two LACP groups with the DUT between
//!   them ([`lag`]). [`Testbed::build`]
//!   creates the namespaces, links and socket paths and describes them as a [`Wiring`] — which
//!   ports the generator holds, which the DUT must hold and which DUT ports it must connect;
//!   [`Testbed::start`] sets a [`Dut`] up on it and starts the VNF of PVP; [`Testbed::placement`]
//!   records which process runs on which CPU and says when processes share one.
//! - [`Dut`] drivers in [`dut`]: `vecswitch` (cross-connect or bridge), `linux-bridge`, `ovs`
//!   (userspace datapath, started by hand under the run directory), `testpmd-io` (the
//!   speed-of-light reference over memif), `ovs-dpdk` (which explains why it cannot run here) and
//!   the IPv4 routers `vecswitch-router`, `linux-router`, `ovs-router` (FIB scale sweeps).
//! - [`GenMeasurer`]: the lab's `Measurer` on the generator ports of a [`Testbed`] (crates/gen's
//!   `Generator`), mapping each `TrialReport` onto the lab's `TrialResult`.
//! - [`devcost`]: device cost side by side — each device's busy time per packet around trials at
//!   fixed loads, read from its own clocks or its CPU's kernel time.
//! - [`calibrate_testbed`]: the generator's own ceiling on a topology's kind of link (no DUT), per
//!   frame size or mix, recorded beside every result.
//!
//! Traffic only ever flows on links the testbed created: veth pairs inside its own namespaces and
//! memif sockets inside its run directory. Nothing is installed at run time; a missing peer
//! program is an error that names the package.
#![forbid(unsafe_code)]

pub mod calibrate;
pub mod chain;
pub mod cmd;
pub mod devcost;
pub mod dut;
mod error;
pub mod gen_ports;
pub mod housekeeping;
pub mod l7;
pub mod lag;
pub mod measurer;
pub mod netns;
pub mod placement;
pub mod process;
pub mod rundir;
pub mod signal;
pub mod topology;
pub mod vm;

pub use calibrate::{calibrate_ports, calibrate_testbed, Calibration};
pub use cmd::{wait_for, wait_for_result};
pub use dut::counters::DeviceCounters;
pub use dut::{resolve_dut_spec, Dut, DutKind, Scale};
pub use error::{Error, Result};
pub use gen_ports::{
    open_generator_ports, open_generator_ports_as, open_port, open_port_as, wait_links_up,
    GenVethPort,
};
pub use measurer::{default_streams, generator_placement, streams_for, GenMeasurer};
pub use netns::{cleanup_stale, veth_pair, CleanupReport, Netns};
pub use placement::{CorePlan, PlacedProcess, Placement};
pub use process::{ChildGuard, ProcessSpec};
pub use rundir::{RunDir, RunId, DEFAULT_PREFIX};
pub use topology::{Link, MemifRole, PortEnd, Testbed, Topology, VnfKind, Wiring};
