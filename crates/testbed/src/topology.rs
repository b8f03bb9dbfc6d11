//! Topologies (RFC 2544 / VSPERF vocabulary) and the [`Testbed`] that builds one.
//!
//! | name | generator holds | DUT holds | pairs the DUT connects |
//! |---|---|---|---|
//! | `phy2phy-memif` | 2 memif servers | 2 memif clients `phy0`, `phy1` | phy0–phy1 |
//! | `phy2phy-veth` | `gen0`, `gen1` in namespace `<run>-gen` | `dut0`, `dut1` in `<run>-dut` | dut0–dut1 |
//! | `pvp-memif` | 2 memif servers | `phy0`, `phy1` (memif clients), `vnf0`, `vnf1` (memif servers) | phy0–vnf0, vnf1–phy1 |
//! | `pvp-veth` | `gen0`, `gen1` (veth) | `dut0`, `dut1` (veth), `vnf0`, `vnf1` (memif) | dut0–vnf0, vnf1–dut1 |
//! | `pvvp-memif` (`-veth`) | as pvp | `phy0`, `phy1`, `vnf0`..`vnf3` (memif servers; two VNFs) | phy0–vnf0, vnf1–vnf2, vnf3–phy1 |
//! | `pvp-vm`, `pvvp-vm` (`-veth`) | as pvp | as pvp/pvvp, but `vnf*` are vhost-user servers and each VNF is a QEMU guest bridging its two NICs | as pvp/pvvp |
//! | `pvp-virtio` | as pvp-memif | `phy0`, `phy1` (memif), `vnf0`, `vnf1` (vhost-user servers) | as pvp | testpmd macswap on two `net_virtio_user` ports (no VM) |
//! | `v2v-vm` | `gen0`, `gen1`: vhost-user servers, each a NIC of one guest | `vm0`, `vm1` (vhost-user servers, the guests' other NICs) | vm0–vm1 |
//! | `phy2phy-lag` | `gen0`, `gen1` (memif servers) to the tester's LAG partner in `<run>-gen` | `dut0`, `dut1` (group A), `dut2`, `dut3` (group B): veth members of two LACP groups | group A's bond – group B's bond ([`crate::lag`]) |
//! | `external` | the suite's two [`ExternalPort`]s (existing interfaces or memif sockets) | — (a device the lab does not start) | — |
//!
//! `external` builds nothing toward the device: the generator opens the interfaces or sockets
//! the suite names (`afp:IF[@NETNS]`, `memif:SOCKET[@client|@server]`, see
//! [`ExternalPort::parse`]) and the `external` driver ([`crate::dut::external`]) starts nothing.
//! The device must forward port 0's traffic to port 1 and back.
//!
//! On memif links the generator is the server (open its ports with
//! [`Testbed::open_generator_ports`] before [`Testbed::start`]); toward the VNF the DUT is the
//! server. In PVP a VNF ([`VnfKind`]: `testpmd --forward-mode=macswap`, or a vecswitch cross-connect
//! process) holds memif clients on the DUT's `vnf0`/`vnf1` and forwards between them.
//!
//! VM topologies (see [`crate::vm`]): the VNF is a QEMU guest under TCG whose `/init` bridges its
//! two virtio NICs; QEMU connects to the DUT's vhost-user sockets (or, with
//! `VnfKind::Vm { role: Client }`, listens and the DUT connects). In `v2v-vm` the traffic goes from
//! one guest to the other through the switch; the guests have no traffic source of their own, so
//! the generator stands in for their applications on each guest's second NIC (its own vhost-user
//! port): gen0 → vm A → switch (vm0 → vm1) → vm B → gen1. Every guest is emulated: results mark
//! it in the placement record ([`crate::vm::EMULATED_NOTE`]).
//!
//! Veth links are made between two namespaces the testbed owns, so the generator's ends are isolated
//! from the host. RPS steers the DUT ends' receive work to the DUT's CPU and the generator ends' to
//! the generator's CPU (DESIGN.md: on veth the kernel otherwise does it on the sender's CPU). Every DUT
//! and VNF process runs inside the DUT namespace, also on memif topologies, so that deleting the
//! namespace ends them all (and [`crate::cleanup_stale`] finds processes of crashed runs).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::dut::Dut;
use crate::error::{Error, Result};
use crate::netns::{veth_pair, Netns};
use crate::placement::{CorePlan, PlacedProcess, Placement};
use crate::process::{ChildGuard, ProcessSpec};
use crate::rundir::RunDir;

/// How the generator's ports ("physical ports" in the reports) are emulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Link {
    /// memif shared memory: no root needed, the fastest path on this machine.
    Memif,
    /// veth pairs between namespaces, opened with AF_PACKET on both sides.
    Veth,
}

/// The VNF of a PVP topology.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VnfKind {
    /// `dpdk-testpmd --forward-mode=macswap` on two memif clients.
    TestpmdMacswap,
    /// `vecswitch run` with two memif clients cross-connected; the binary path is given.
    VecswitchXconnect { bin: PathBuf },
    /// A QEMU guest bridging its two virtio NICs, attached to the DUT by vhost-user; `role` is
    /// the DUT's (server: the DUT listens and QEMU connects).
    Vm { role: MemifRole },
    /// `dpdk-testpmd --forward-mode=macswap` with two `net_virtio_user` ports (the vhost-user
    /// frontend without a VM) on the DUT's vhost-user servers: the VNF of the speed figure.
    TestpmdVirtio,
    /// `dpdk-testpmd --forward-mode=io` on two memif clients (chains, [`crate::chain`]).
    TestpmdIo,
    /// A Linux bridge in a namespace of its own, attached by veth ([`crate::chain`]).
    KernelBridge,
    /// The kernel's IP forwarding in a namespace of its own, attached by veth, between two
    /// subnets of the chain ([`crate::chain::routed`]).
    KernelRouter,
    /// A kernel router with nftables masquerade on its right (outside) side ([`crate::chain`]).
    KernelRouterNat,
    /// A kernel router with nftables filtering by the seed-004 policy ([`crate::chain::policy`]).
    KernelFirewall,
    /// `vecswitch run` routing between two subnets with NAT44 masquerade (`[ip]`, `[nat44]`) on
    /// two memif clients ([`crate::chain::routed`]).
    VecswitchRouterNat { bin: PathBuf },
    /// `vecswitch run` routing with `[[firewall]]` ACLs of the seed-004 policy
    /// ([`crate::chain::policy`]) on two memif clients.
    VecswitchFirewall { bin: PathBuf },
}

impl VnfKind {
    pub fn name(&self) -> &'static str {
        match self {
            VnfKind::TestpmdMacswap => "testpmd-macswap",
            VnfKind::VecswitchXconnect { .. } => "vecswitch-xconnect",
            VnfKind::Vm { .. } => "vm",
            VnfKind::TestpmdVirtio => "testpmd-virtio-macswap",
            VnfKind::TestpmdIo => "testpmd-io",
            VnfKind::KernelBridge => "kernel-bridge",
            VnfKind::KernelRouter => "kernel-router",
            VnfKind::KernelRouterNat => "kernel-router-nat",
            VnfKind::KernelFirewall => "kernel-firewall",
            VnfKind::VecswitchRouterNat { .. } => "vecswitch-router-nat",
            VnfKind::VecswitchFirewall { .. } => "vecswitch-firewall",
        }
    }

    /// Whether the DUT attaches this VNF by vhost-user (and which role the DUT takes).
    pub fn vhost_role(&self) -> Option<MemifRole> {
        match self {
            VnfKind::Vm { role } => Some(*role),
            VnfKind::TestpmdVirtio => Some(MemifRole::Server),
            _ => None,
        }
    }

    /// Whether this VNF is a virtual machine (attached by vhost-user, not memif).
    pub fn is_vm(&self) -> bool {
        matches!(self, VnfKind::Vm { .. })
    }
}

/// A topology to build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Topology {
    Phy2Phy {
        link: Link,
    },
    Pvp {
        link: Link,
        vnf: VnfKind,
    },
    /// Two VNFs of the same kind in a chain: generator → DUT → VNF → DUT → VNF → DUT → generator.
    Pvvp {
        link: Link,
        vnf: VnfKind,
    },
    /// VNFs of mixed kinds in series: generator → DUT → VNF 0 → DUT → … → VNF N-1 → DUT →
    /// generator ([`crate::chain`]; build it with [`Topology::new_chain`]).
    Chain {
        link: Link,
        vnfs: Vec<VnfKind>,
    },
    /// VM to VM through the DUT: the generator on each guest's other NIC (vhost-user).
    V2v,
    /// Two 2-member LACP groups with the DUT between them ([`crate::lag`]); the tester's side of
    /// the groups is a `vecswitch run` process started from `partner_bin` (empty: the running
    /// executable).
    Phy2PhyLag {
        #[serde(default)]
        partner_bin: PathBuf,
    },
    /// A device the lab does not start, between two existing generator ports.
    External {
        ports: Vec<ExternalPort>,
    },
}

/// One generator port of an `external` topology.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ExternalPort {
    /// An existing kernel interface opened with AF_PACKET, in namespace `netns` (or the lab's).
    AfPacket {
        ifname: String,
        netns: Option<String>,
    },
    /// A memif socket; `role` is the generator's (client: the device listens on `socket`).
    Memif { socket: PathBuf, role: MemifRole },
}

/// What [`ExternalPort::parse`] accepts.
pub const EXTERNAL_PORT_FORMS: &str =
    "afp:IFNAME, afp:IFNAME@NETNS, memif:/path/to.sock, memif:/path/to.sock@client or @server (the generator's role; default client)";

impl ExternalPort {
    /// `afp:IF[@NETNS]` or `memif:SOCKET[@client|@server]`.
    pub fn parse(s: &str) -> Result<ExternalPort> {
        let bad = || Error::Invalid {
            field: "external port",
            value: s.to_string(),
            expected: EXTERNAL_PORT_FORMS.to_string(),
        };
        let (kind, rest) = s.split_once(':').ok_or_else(bad)?;
        match kind {
            "afp" => {
                let (ifname, netns) = match rest.split_once('@') {
                    Some((i, n)) => (i, Some(n)),
                    None => (rest, None),
                };
                // IFNAMSIZ is 16 with the NUL; `ip` refuses names with '/' or blanks.
                let ok_if =
                    !ifname.is_empty() && ifname.len() < 16 && !ifname.contains(['/', ' ', ':']);
                let ok_ns = netns.is_none_or(|n| !n.is_empty() && !n.contains(['/', ' ']));
                if !(ok_if && ok_ns) {
                    return Err(bad());
                }
                Ok(ExternalPort::AfPacket {
                    ifname: ifname.to_string(),
                    netns: netns.map(str::to_string),
                })
            }
            "memif" => {
                let (path, role) = match rest.rsplit_once('@') {
                    Some((p, "server")) => (p, MemifRole::Server),
                    Some((p, "client")) => (p, MemifRole::Client),
                    Some(_) => return Err(bad()),
                    None => (rest, MemifRole::Client),
                };
                if !path.starts_with('/') {
                    return Err(bad());
                }
                Ok(ExternalPort::Memif {
                    socket: path.into(),
                    role,
                })
            }
            _ => Err(bad()),
        }
    }

    /// The generator's end of this port, named `name`.
    fn gen_end(&self, name: &str) -> PortEnd {
        match self {
            ExternalPort::AfPacket { ifname, netns } => PortEnd::Veth {
                name: name.to_string(),
                netns: netns.clone().unwrap_or_default(),
                ifname: ifname.clone(),
                mac: String::new(),
            },
            ExternalPort::Memif { socket, role } => PortEnd::Memif {
                name: name.to_string(),
                socket: socket.clone(),
                id: 0,
                role: *role,
            },
        }
    }
}

impl fmt::Display for ExternalPort {
    /// The form [`ExternalPort::parse`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExternalPort::AfPacket {
                ifname,
                netns: Some(ns),
            } => write!(f, "afp:{ifname}@{ns}"),
            ExternalPort::AfPacket {
                ifname,
                netns: None,
            } => write!(f, "afp:{ifname}"),
            ExternalPort::Memif { socket, role } => {
                write!(f, "memif:{}@{}", socket.display(), role.as_str())
            }
        }
    }
}

impl Topology {
    /// The `external` topology on the suite's port list (exactly two ports: traffic leaves on
    /// one and returns on the other).
    pub fn external<S: AsRef<str>>(ports: &[S]) -> Result<Topology> {
        if ports.len() != 2 {
            return Err(Error::Invalid {
                field: "external ports",
                value: format!("{} port(s)", ports.len()),
                expected: format!("exactly two ports: {EXTERNAL_PORT_FORMS}"),
            });
        }
        Ok(Topology::External {
            ports: ports
                .iter()
                .map(|p| ExternalPort::parse(p.as_ref()))
                .collect::<Result<_>>()?,
        })
    }

    /// The kind of link of the generator's ports (an external topology: that of its first port).
    ///
    /// `v2v-vm` says memif: its generator ports are vhost-user devices, which like memif refuse
    /// what the guest has no buffer for (the device's loss), and the generator is calibrated on a
    /// memif loopback (it has no vhost-user one).
    pub fn link(&self) -> Link {
        match self {
            Topology::Phy2Phy { link }
            | Topology::Pvp { link, .. }
            | Topology::Pvvp { link, .. }
            | Topology::Chain { link, .. } => *link,
            // The generator's own links are memif (to the tester's LAG partner).
            Topology::V2v | Topology::Phy2PhyLag { .. } => Link::Memif,
            Topology::External { ports } => match ports.first() {
                Some(ExternalPort::Memif { .. }) => Link::Memif,
                _ => Link::Veth,
            },
        }
    }

    pub fn is_external(&self) -> bool {
        matches!(self, Topology::External { .. })
    }

    pub fn is_pvp(&self) -> bool {
        matches!(self, Topology::Pvp { .. })
    }

    /// The VNF kind and how many VNFs the chain has (PVP 1, PVVP 2, V2V 2 VMs).
    pub fn vnfs(&self) -> Option<(VnfKind, usize)> {
        match self {
            Topology::Pvp { vnf, .. } => Some((vnf.clone(), 1)),
            Topology::Pvvp { vnf, .. } => Some((vnf.clone(), 2)),
            Topology::V2v => Some((
                VnfKind::Vm {
                    role: MemifRole::Server,
                },
                2,
            )),
            _ => None,
        }
    }

    /// A chain of `vnfs` on `link`, checked ([`crate::chain::validate`]).
    pub fn new_chain(link: Link, vnfs: Vec<VnfKind>) -> Result<Topology> {
        crate::chain::validate(&vnfs)?;
        Ok(Topology::Chain { link, vnfs })
    }

    /// The VNFs between the DUT's ports in chain order, one entry per VNF (PVP one, PVVP two of
    /// one kind, a chain its list); empty for topologies without VNFs behind the DUT (`v2v-vm`'s
    /// guests sit outside it).
    pub fn chain(&self) -> Vec<VnfKind> {
        match self {
            Topology::Chain { vnfs, .. } => vnfs.clone(),
            Topology::V2v => Vec::new(),
            _ => self.vnfs().map(|(k, n)| vec![k; n]).unwrap_or_default(),
        }
    }

    /// Whether the topology runs QEMU guests (emulated under TCG here).
    pub fn has_vms(&self) -> bool {
        self.vnfs().is_some_and(|(k, _)| k.is_vm())
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, link) = match self {
            Topology::Phy2Phy { link } => ("phy2phy", link),
            Topology::Pvp { link, vnf } | Topology::Pvvp { link, vnf } if vnf.is_vm() => {
                let t = if self.is_pvp() { "pvp-vm" } else { "pvvp-vm" };
                return match link {
                    Link::Memif => write!(f, "{t}"),
                    Link::Veth => write!(f, "{t}-veth"),
                };
            }
            Topology::Pvp {
                link: Link::Memif,
                vnf: VnfKind::TestpmdVirtio,
            } => return write!(f, "pvp-virtio"),
            Topology::Pvp { link, .. } => ("pvp", link),
            Topology::Pvvp { link, .. } => ("pvvp", link),
            Topology::V2v => return write!(f, "v2v-vm"),
            Topology::Phy2PhyLag { .. } => return write!(f, "phy2phy-lag"),
            Topology::Chain { link, vnfs } => {
                let l = match link {
                    Link::Memif => "memif",
                    Link::Veth => "veth",
                };
                let v: Vec<&str> = vnfs.iter().map(VnfKind::name).collect();
                return write!(f, "chain-{l}:{}", v.join("+"));
            }
            Topology::External { .. } => return write!(f, "external"),
        };
        let l = match link {
            Link::Memif => "memif",
            Link::Veth => "veth",
        };
        write!(f, "{t}-{l}")
    }
}

/// Names accepted by [`Topology::from_str`] (and `external`, built by [`Topology::external`]).
pub const TOPOLOGY_NAMES: &str = "phy2phy-memif, phy2phy-veth, phy2phy-lag, pvp-memif, pvp-veth, pvvp-memif, pvvp-veth, pvp-vm, pvp-vm-veth, pvvp-vm, pvvp-vm-veth, v2v-vm, pvp-virtio, chain-memif:VNF+VNF+... (or chain-veth:...; VNFs: testpmd-macswap, testpmd-io, vecswitch, kernel-bridge, kernel-router), external";

impl FromStr for Topology {
    type Err = Error;
    /// Parses `phy2phy-memif` etc.; PVP gets the testpmd macswap VNF (set `vnf` to change it).
    fn from_str(s: &str) -> Result<Topology> {
        if let Some(chain) = crate::chain::parse_chain(s) {
            return chain;
        }
        let t = match s {
            "phy2phy-memif" => Topology::Phy2Phy { link: Link::Memif },
            "phy2phy-veth" => Topology::Phy2Phy { link: Link::Veth },
            "pvp-memif" => Topology::Pvp {
                link: Link::Memif,
                vnf: VnfKind::TestpmdMacswap,
            },
            "pvp-veth" => Topology::Pvp {
                link: Link::Veth,
                vnf: VnfKind::TestpmdMacswap,
            },
            "pvvp-memif" | "pvvp-veth" => Topology::Pvvp {
                link: if s.ends_with("memif") {
                    Link::Memif
                } else {
                    Link::Veth
                },
                vnf: VnfKind::TestpmdMacswap,
            },
            "pvp-vm" | "pvp-vm-veth" | "pvvp-vm" | "pvvp-vm-veth" => {
                let link = if s.ends_with("veth") {
                    Link::Veth
                } else {
                    Link::Memif
                };
                let vnf = VnfKind::Vm {
                    role: MemifRole::Server,
                };
                if s.starts_with("pvvp") {
                    Topology::Pvvp { link, vnf }
                } else {
                    Topology::Pvp { link, vnf }
                }
            }
            "v2v-vm" => Topology::V2v,
            "phy2phy-lag" => Topology::Phy2PhyLag {
                partner_bin: PathBuf::new(),
            },
            "pvp-virtio" => Topology::Pvp {
                link: Link::Memif,
                vnf: VnfKind::TestpmdVirtio,
            },
            "external" => {
                return Err(Error::Invalid {
                    field: "topology",
                    value: s.to_string(),
                    expected: format!(
                        "external with its two generator ports (`ports = [...]` in the suite's [[dut]]: {EXTERNAL_PORT_FORMS})"
                    ),
                })
            }
            _ => {
                return Err(Error::Invalid {
                    field: "topology",
                    value: s.to_string(),
                    expected: TOPOLOGY_NAMES.to_string(),
                })
            }
        };
        Ok(t)
    }
}

/// memif role of one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemifRole {
    Server,
    Client,
}

impl MemifRole {
    pub fn as_str(self) -> &'static str {
        match self {
            MemifRole::Server => "server",
            MemifRole::Client => "client",
        }
    }
}

/// One end of a link, as the process holding it must open it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PortEnd {
    Memif {
        /// Port name (`phy0`, `vnf1`, ...).
        name: String,
        socket: PathBuf,
        id: u32,
        role: MemifRole,
    },
    Veth {
        name: String,
        /// Namespace the interface is in.
        netns: String,
        ifname: String,
        mac: String,
    },
    /// A vhost-user link; `role` says whether this end listens (server) or connects (client).
    /// The DUT's and the generator's ends are the device (backend); a QEMU guest's is the driver.
    VhostUser {
        name: String,
        socket: PathBuf,
        role: MemifRole,
    },
}

impl PortEnd {
    pub fn name(&self) -> &str {
        match self {
            PortEnd::Memif { name, .. }
            | PortEnd::Veth { name, .. }
            | PortEnd::VhostUser { name, .. } => name,
        }
    }

    pub fn is_memif(&self) -> bool {
        matches!(self, PortEnd::Memif { .. })
    }

    /// The same memif link seen from the other side (server ↔ client).
    fn peer(&self, name: &str) -> PortEnd {
        match self {
            PortEnd::Memif {
                socket, id, role, ..
            } => PortEnd::Memif {
                name: name.to_string(),
                socket: socket.clone(),
                id: *id,
                role: match role {
                    MemifRole::Server => MemifRole::Client,
                    MemifRole::Client => MemifRole::Server,
                },
            },
            PortEnd::VhostUser { socket, role, .. } => PortEnd::VhostUser {
                name: name.to_string(),
                socket: socket.clone(),
                role: match role {
                    MemifRole::Server => MemifRole::Client,
                    MemifRole::Client => MemifRole::Server,
                },
            },
            PortEnd::Veth { .. } => self.clone(),
        }
    }
}

/// What a built topology looks like: everything a DUT driver and the generator need to know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wiring {
    pub topology: Topology,
    pub run_id: String,
    pub run_dir: PathBuf,
    /// Namespace every DUT/VNF process runs in.
    pub dut_netns: String,
    /// Namespace of the generator's veth ends (veth topologies only).
    pub gen_netns: Option<String>,
    /// The generator's two ports: traffic leaves on 0 and returns on 1 and vice versa.
    pub gen_ports: Vec<PortEnd>,
    /// The DUT's ports: `[phy0, phy1]`, or for PVP `[phy0, phy1, vnf0, vnf1]`.
    pub dut_ports: Vec<PortEnd>,
    /// Index pairs into `dut_ports` that the DUT connects (an xconnect, or a two-port bridge each).
    pub pairs: Vec<(usize, usize)>,
    /// The VNFs' ports, two per VNF (VNF k holds `vnf_ports[2k]` and `vnf_ports[2k + 1]`): memif
    /// clients of the DUT, or for VMs the guest's (QEMU's) side of each vhost-user link.
    pub vnf_ports: Vec<PortEnd>,
    pub cores: CorePlan,
}

impl Wiring {
    /// Whether every DUT port is a memif end.
    pub fn all_dut_ports_memif(&self) -> bool {
        self.dut_ports.iter().all(PortEnd::is_memif)
    }

    /// Whether every DUT port is a veth end.
    pub fn all_dut_ports_veth(&self) -> bool {
        self.dut_ports
            .iter()
            .all(|p| matches!(p, PortEnd::Veth { .. }))
    }

    /// Sockets the generator listens on as memif or vhost-user server (they must exist before
    /// the DUT or the guests start).
    pub fn gen_server_sockets(&self) -> Vec<PathBuf> {
        self.gen_ports
            .iter()
            .filter_map(|p| match p {
                PortEnd::Memif {
                    socket,
                    role: MemifRole::Server,
                    ..
                }
                | PortEnd::VhostUser {
                    socket,
                    role: MemifRole::Server,
                    ..
                } => Some(socket.clone()),
                _ => None,
            })
            .collect()
    }

    /// Sockets the DUT creates as memif server (to wait for after starting it).
    pub fn dut_server_sockets(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = self
            .dut_ports
            .iter()
            .filter_map(|p| match p {
                PortEnd::Memif {
                    socket,
                    role: MemifRole::Server,
                    ..
                } => Some(socket.clone()),
                _ => None,
            })
            .collect();
        v.dedup();
        v
    }
}

/// A built topology with its resources, and (after [`Testbed::start`]) the DUT and VNF running on
/// it. Dropping it stops the VNF, tears the DUT down, deletes the namespaces (and veths) and the run
/// directory, in that order.
#[derive(Debug)]
pub struct Testbed {
    // Field order is drop order after `Drop::drop` ran: VNF, DUT, namespaces, run dir.
    // Behind mutexes so that a `&Testbed` serves both the measurer (liveness checks between
    // trials) and the bench loop (scale reconfiguration) at the same time.
    vnf: Mutex<Vec<Vnf>>,
    dut: Mutex<Option<Box<dyn Dut>>>,
    /// The tester's LAG partner of `phy2phy-lag` ([`crate::lag`]), once started.
    lag: Mutex<Option<crate::lag::Partner>>,
    /// Namespaces of the chain's kernel VNFs ([`crate::chain`]).
    vnf_ns: Vec<Netns>,
    wiring: Wiring,
    dut_ns: Netns,
    gen_ns: Option<Netns>,
    run_dir: RunDir,
    /// The NAPI threads of the DUT's veth ends, once placed ([`crate::netns::steer_dut_kernel_rx`]).
    napi: Vec<crate::netns::NapiThread>,
    /// The host's housekeeping kept off the DUT's CPU while the testbed lives (restored on drop).
    housekeeping: crate::housekeeping::Housekeeping,
}

impl Testbed {
    /// Builds `topology` in a fresh run directory with the default [`CorePlan`].
    pub fn build(topology: Topology) -> Result<Testbed> {
        Testbed::build_with(topology, RunDir::create()?, CorePlan::default())
    }

    /// Builds `topology` in `run_dir` with `cores`.
    pub fn build_with(topology: Topology, run_dir: RunDir, cores: CorePlan) -> Result<Testbed> {
        let id = run_dir.id().to_string();
        let dut_ns = Netns::create(&format!("{id}-dut"))?;
        let mut gen_ns = None;
        let (gen_ports, mut dut_ports) = match (&topology, topology.link()) {
            (Topology::External { ports }, _) => {
                // Nothing to build: the generator opens what the suite named.
                let g = ports
                    .iter()
                    .enumerate()
                    .map(|(i, p)| p.gen_end(&format!("gen{i}")))
                    .collect();
                (g, Vec::new())
            }
            (Topology::Phy2PhyLag { .. }, _) => {
                let (ns, g, d) = crate::lag::build(&id, &run_dir, &dut_ns, cores)?;
                gen_ns = Some(ns);
                (g, d)
            }
            (Topology::V2v, _) => {
                // The generator is the vhost-user device on each guest's outer NIC; the guests
                // connect to it as they connect to the DUT.
                let g = (0..2)
                    .map(|i| PortEnd::VhostUser {
                        name: format!("gen{i}"),
                        socket: run_dir.file(&format!("gen{i}.sock")),
                        role: MemifRole::Server,
                    })
                    .collect();
                let d = (0..2)
                    .map(|i| PortEnd::VhostUser {
                        name: format!("vm{i}"),
                        socket: run_dir.file(&format!("vm{i}.sock")),
                        role: MemifRole::Server,
                    })
                    .collect();
                (g, d)
            }
            (_, Link::Memif) => {
                let mut g = Vec::new();
                let mut d = Vec::new();
                for i in 0..2 {
                    // The generator is the memif server of the "physical" links: it listens
                    // before the DUT starts, so the DUT connects as soon as it is up and no side
                    // races the other's start-up (see docs/TESTBED.md).
                    let gen_end = PortEnd::Memif {
                        name: format!("gen{i}"),
                        socket: run_dir.file(&format!("phy{i}.sock")),
                        id: 0,
                        role: MemifRole::Server,
                    };
                    d.push(gen_end.peer(&format!("phy{i}")));
                    g.push(gen_end);
                }
                (g, d)
            }
            (_, Link::Veth) => {
                let ns = Netns::create(&format!("{id}-gen"))?;
                let mut g = Vec::new();
                let mut d = Vec::new();
                for i in 0..2 {
                    let (gi, di) = (format!("gen{i}"), format!("dut{i}"));
                    veth_pair(&ns, &gi, &dut_ns, &di)?;
                    ns.link_up(&gi)?;
                    dut_ns.link_up(&di)?;
                    // Receive work on the receiver's own CPU (DESIGN.md, facts measured). A
                    // kernel without RPS still forwards, only slower: warn, do not fail.
                    for (n, ifname, cpu) in [(&ns, &gi, cores.generator), (&dut_ns, &di, cores.dut)]
                    {
                        if let Err(e) = n.set_rps(ifname, CorePlan::mask(cpu)) {
                            tracing::warn!("RPS not set on {ifname}: {e}");
                        }
                    }
                    g.push(PortEnd::Veth {
                        name: gi.clone(),
                        netns: ns.name().to_string(),
                        mac: ns.mac(&gi)?,
                        ifname: gi,
                    });
                    d.push(PortEnd::Veth {
                        name: di.clone(),
                        netns: dut_ns.name().to_string(),
                        mac: dut_ns.mac(&di)?,
                        ifname: di,
                    });
                }
                for i in 0..2 {
                    let (gi, di) = (format!("gen{i}"), format!("dut{i}"));
                    crate::wait_for(
                        &format!("veth {gi}/{di} carrier"),
                        Duration::from_secs(5),
                        || ns.oper_up(&gi) && dut_ns.oper_up(&di),
                    )?;
                }
                gen_ns = Some(ns);
                (g, d)
            }
        };
        // An external device's ports are not the lab's: nothing for a driver to connect. A LAG
        // driver knows its groups (crate::lag::dut_groups); a pair would make other drivers
        // connect two members.
        let lag = matches!(topology, Topology::Phy2PhyLag { .. });
        let mut pairs = if topology.is_external() || lag {
            Vec::new()
        } else {
            vec![(0, 1)]
        };
        let mut vnf_ports = Vec::new();
        let mut vnf_ns = Vec::new();
        let chain = topology.chain();
        match topology.vnfs() {
            Some((_, _)) if matches!(topology, Topology::V2v) => {
                // Guest A: gen0 outside, vm0 toward the switch; guest B: vm1, then gen1.
                for (i, end) in [&gen_ports[0], &dut_ports[0], &dut_ports[1], &gen_ports[1]]
                    .into_iter()
                    .enumerate()
                {
                    vnf_ports.push(end.peer(&format!("v{i}")));
                }
            }
            _ if !chain.is_empty() => {
                // phy0 → vnf0 | VNF 0 | vnf1 → vnf2 | VNF 1 | vnf3 → phy1 (PVP: n = 1; a
                // chain of any kinds, crate::chain).
                let n = chain.len();
                pairs = vec![(0, 2)];
                for k in 1..n {
                    pairs.push((2 * k + 1, 2 * k + 2));
                }
                pairs.push((2 * n + 1, 1));
                for (k, vnf) in chain.iter().enumerate() {
                    if crate::chain::is_kernel(vnf) {
                        let (ns, ends) =
                            crate::chain::build_kernel_links(&id, k, vnf, &dut_ns, cores)?;
                        for (d, v) in ends {
                            dut_ports.push(d);
                            vnf_ports.push(v);
                        }
                        vnf_ns.push(ns);
                        continue;
                    }
                    for i in [2 * k, 2 * k + 1] {
                        let name = format!("vnf{i}");
                        let dut_end = match vnf.vhost_role() {
                            Some(role) => PortEnd::VhostUser {
                                socket: run_dir.file(&format!("{name}.sock")),
                                name,
                                role,
                            },
                            None => PortEnd::Memif {
                                socket: run_dir.file(&format!("{name}.sock")),
                                name,
                                id: 0,
                                role: MemifRole::Server,
                            },
                        };
                        vnf_ports.push(dut_end.peer(&format!("v{i}")));
                        dut_ports.push(dut_end);
                    }
                }
            }
            _ => {}
        }
        let wiring = Wiring {
            topology,
            run_id: id,
            run_dir: run_dir.path().to_path_buf(),
            dut_netns: dut_ns.name().to_string(),
            gen_netns: gen_ns.as_ref().map(|n| n.name().to_string()),
            gen_ports,
            dut_ports,
            pairs,
            vnf_ports,
            cores,
        };
        Ok(Testbed {
            vnf: Mutex::new(Vec::new()),
            dut: Mutex::new(None),
            lag: Mutex::new(None),
            vnf_ns,
            wiring,
            dut_ns,
            gen_ns,
            run_dir,
            napi: Vec::new(),
            housekeeping: crate::housekeeping::Housekeeping::isolate(cores.dut, cores.generator),
        })
    }

    pub fn wiring(&self) -> &Wiring {
        &self.wiring
    }

    pub fn run_dir(&self) -> &RunDir {
        &self.run_dir
    }

    /// Keeps the run directory (logs, configs) after the testbed is dropped.
    pub fn keep_run_dir(&mut self) {
        self.run_dir.keep();
    }

    /// Moves generator port `i` (a veth end) into namespace `to`, up, before [`Testbed::start`]:
    /// the L7 driver's server sits in a namespace of its own ([`crate::l7`]). `to` must live as
    /// long as the testbed uses the port.
    pub fn move_gen_port(&mut self, i: usize, to: &Netns) -> Result<()> {
        let Some(PortEnd::Veth { netns, ifname, .. }) = self.wiring.gen_ports.get_mut(i) else {
            return Err(Error::Invalid {
                field: "generator port",
                value: i.to_string(),
                expected: "the index of a veth generator port (a *-veth topology)".into(),
            });
        };
        crate::cmd::run(
            "ip",
            &["-n", netns, "link", "set", ifname, "netns", to.name()],
        )?;
        to.link_up(ifname)?;
        *netns = to.name().to_string();
        Ok(())
    }

    /// The NAPI threads that run the DUT's veth receive on the DUT's CPU, once started
    /// ([`crate::placement::KernelRx::ThreadedNapi`]; empty for a kernel DUT or a memif topology).
    pub fn napi_threads(&self) -> &[crate::netns::NapiThread] {
        &self.napi
    }

    /// The namespaces of the chain's kernel VNFs, in chain order of the kernel VNFs.
    pub fn vnf_netns(&self) -> &[Netns] {
        &self.vnf_ns
    }

    pub fn dut_netns(&self) -> &Netns {
        &self.dut_ns
    }

    pub fn gen_netns(&self) -> Option<&Netns> {
        self.gen_ns.as_ref()
    }

    /// Runs `f` on the DUT, once started (None before [`Testbed::start`]).
    pub fn with_dut<R>(&self, f: impl FnOnce(&mut (dyn Dut + 'static)) -> R) -> Option<R> {
        let mut g = lock(&self.dut);
        g.as_deref_mut().map(f)
    }

    /// `phy2phy-lag`: what each member carried and the tester's LAG dropped, and the LACP state
    /// ([`crate::lag::LagReport`]); `None` on other topologies or before [`Testbed::start`].
    pub fn lag_report(&self) -> Option<Result<crate::lag::LagReport>> {
        lock(&self.lag).as_ref().map(crate::lag::Partner::report)
    }

    /// The VNF guests' consoles (empty when the topology has no VM), for failure messages.
    pub fn vm_consoles(&self) -> String {
        lock(&self.vnf)
            .iter()
            .filter_map(|v| match v {
                Vnf::Vm(vm) => Some(vm.tail(40)),
                Vnf::Process(_) | Vnf::Kernel(_) => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The DUT's name and version strings, once started.
    pub fn describe_dut(&self) -> Option<String> {
        self.with_dut(|d| format!("{}: {}", d.name(), d.describe()))
    }

    /// Applies a scale setting to the running DUT (see [`Dut::configure_scale`]).
    pub fn configure_scale(&self, scale: crate::dut::Scale) -> Result<()> {
        self.with_dut(|d| d.configure_scale(scale))
            .unwrap_or_else(|| {
                Err(Error::Invalid {
                    field: "testbed state",
                    value: "no DUT started".into(),
                    expected: "configure_scale after Testbed::start".into(),
                })
            })
    }

    /// Opens the generator's ports ([`crate::open_generator_ports`]). On memif topologies call it
    /// before [`Testbed::start`]: the generator is the memif server the DUT connects to.
    pub fn open_generator_ports(&self) -> Result<Vec<Box<dyn vecswitch_ports::Port>>> {
        crate::gen_ports::open_generator_ports(&self.wiring)
    }

    /// Sets `dut` up on this topology, then (PVP, PVVP) starts the VNFs; on `phy2phy-lag` it
    /// starts the tester's LAG partner first and returns once LACP converged ([`crate::lag`]). On
    /// error the DUT is torn down before returning. On memif topologies the generator's ports
    /// must be open already (their server sockets exist), else this fails saying so. `v2v-vm`
    /// needs [`Testbed::start_with_generator`].
    pub fn start(&mut self, dut: Box<dyn Dut>) -> Result<()> {
        self.start_with_generator(dut, &mut [])
    }

    /// [`Testbed::start`], polling the generator's `ports` while the VNFs start: in `v2v-vm`
    /// the guests' outer NICs are the generator's vhost-user ports, and QEMU does not start
    /// before they answer. Returns once every guest printed its ready line.
    pub fn start_with_generator(
        &mut self,
        mut dut: Box<dyn Dut>,
        ports: &mut [Box<dyn vecswitch_ports::Port>],
    ) -> Result<()> {
        if matches!(self.wiring.topology, Topology::V2v) && ports.is_empty() {
            return Err(Error::Invalid {
                field: "generator ports",
                value: "none given".into(),
                expected: "v2v-vm: start it with Testbed::start_with_generator and the open generator ports (the guests' outer NICs)".into(),
            });
        }
        for s in self.wiring.gen_server_sockets() {
            if !s.exists() {
                return Err(Error::Invalid {
                    field: "generator memif socket",
                    value: s.display().to_string(),
                    expected:
                        "an open generator port: call Testbed::open_generator_ports before start"
                            .into(),
                });
            }
        }
        if let Topology::Phy2PhyLag { partner_bin } = &self.wiring.topology {
            *lock(&self.lag) = Some(crate::lag::Partner::start(&self.wiring, partner_bin)?);
        }
        let napi_before = crate::netns::napi_threads();
        if let Err(e) = dut.setup(&self.wiring) {
            let _ = dut.teardown();
            return Err(e);
        }
        // The DUT's veth receive work on the DUT's CPU (CorePlan::dut_kernel_rx).
        let busy_polls = dut.processes().iter().any(|p| p.pid != 0);
        self.napi = crate::netns::steer_dut_kernel_rx(&self.wiring, busy_polls, &napi_before);
        *lock(&self.dut) = Some(dut);
        // phy2phy-lag: no trial before LACP carries traffic on every member (crate::lag).
        let converged = lock(&self.lag)
            .as_mut()
            .map(|p| p.wait_converged(crate::lag::CONVERGE_TIMEOUT));
        if let Some(Err(e)) = converged {
            let _ = self.stop();
            return Err(e);
        }
        // The VNFs to start: the chain behind the DUT, or v2v-vm's two guests (outside it).
        let kinds = match (&self.wiring.topology, self.wiring.topology.vnfs()) {
            (Topology::V2v, Some((kind, n))) => vec![kind; n],
            _ => self.wiring.topology.chain(),
        };
        for (k, kind) in kinds.iter().enumerate() {
            let v = start_vnf(kind, k, &self.wiring, self.run_dir.path())?;
            lock(&self.vnf).push(v);
        }
        // Guests boot in parallel; wait for each, polling the generator's ends meanwhile.
        let mut vnfs = lock(&self.vnf);
        for v in vnfs.iter_mut() {
            if let Vnf::Vm(vm) = v {
                vm.wait_ready(VM_READY_TIMEOUT, || {
                    for p in ports.iter_mut() {
                        p.poll_control();
                    }
                })?;
            }
        }
        Ok(())
    }

    /// Fails if the DUT or VNF process died (call between trials).
    pub fn check_alive(&self) -> Result<()> {
        for v in lock(&self.vnf).iter_mut() {
            v.check_alive()?;
        }
        if let Some(d) = lock(&self.dut).as_mut() {
            d.check_alive()?;
        }
        if let Some(p) = lock(&self.lag).as_mut() {
            p.check_alive()?;
        }
        Ok(())
    }

    /// Where the generator (this process, `generator_pid`), the DUT's processes and the VNF ran.
    pub fn placement(&self, generator: PlacedProcess) -> Placement {
        let mut v = vec![generator];
        if let Some(d) = lock(&self.dut).as_ref() {
            v.extend(d.processes());
        }
        v.extend(lock(&self.lag).as_ref().map(crate::lag::Partner::placed));
        for vnf in lock(&self.vnf).iter() {
            let (child, note) = match vnf {
                Vnf::Process(c) => (c, String::new()),
                Vnf::Vm(vm) => (vm.child(), crate::vm::EMULATED_NOTE.to_string()),
                Vnf::Kernel(k) => {
                    v.push(k.placed());
                    continue;
                }
            };
            v.push(PlacedProcess {
                role: "vnf".into(),
                name: child.name().to_string(),
                pid: child.pid(),
                cpus: child.cpus_allowed(),
                note,
            });
        }
        let mut p = Placement::new(v)
            .with_kernel_rx(crate::netns::kernel_rx_placement(&self.wiring, &self.napi));
        p.housekeeping = self.housekeeping.note();
        p
    }

    /// Stops the VNF and tears the DUT down now (also done on `Drop`); returns the DUT's teardown
    /// error, if any.
    pub fn stop(&mut self) -> Result<()> {
        let mut vnfs = std::mem::take(&mut *lock(&self.vnf));
        // Every VNF is asked first, then each is reaped: reaping one while another still
        // busy-polls the CPU they share hung in the kernel (docs/TESTBED.md, "Stopping VNFs").
        for v in &mut vnfs {
            v.ask_to_stop();
        }
        for mut v in vnfs {
            v.stop(Duration::from_secs(2));
        }
        let dut = lock(&self.dut).take();
        let r = match dut {
            Some(mut d) => d.teardown(),
            None => Ok(()),
        };
        if let Some(mut p) = lock(&self.lag).take() {
            p.stop();
        }
        r
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("testbed: DUT teardown: {e}");
        }
    }
}

/// Locks a mutex, also after a panic elsewhere poisoned it (teardown must still run).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How long a guest may take to boot (TCG on a loaded 2-core machine: 10–40 s seen).
pub const VM_READY_TIMEOUT: Duration = Duration::from_secs(120);

/// A running VNF: a process (testpmd, vecswitch) or a QEMU guest.
#[derive(Debug)]
enum Vnf {
    Process(ChildGuard),
    Vm(crate::vm::Vm),
    /// Kernel code in its own namespace (no process; the namespace goes with the testbed).
    Kernel(crate::chain::KernelVnf),
}

impl Vnf {
    fn check_alive(&mut self) -> Result<()> {
        match self {
            Vnf::Process(c) => c.check_alive(),
            Vnf::Vm(vm) => vm.check_alive(),
            Vnf::Kernel(_) => Ok(()),
        }
    }

    /// See [`ChildGuard::ask_to_stop`]; a guest is stopped by [`Vnf::stop`] alone.
    fn ask_to_stop(&mut self) {
        if let Vnf::Process(c) = self {
            c.ask_to_stop();
        }
    }

    fn stop(&mut self, grace: Duration) {
        match self {
            Vnf::Process(c) => {
                c.stop(grace);
            }
            Vnf::Vm(vm) => vm.stop(grace),
            Vnf::Kernel(_) => {}
        }
    }
}

/// Starts VNF `k` of the chain on `vnf_ports[2k..2k+2]` (memif clients of the DUT's ports, or
/// a guest's vhost-user NICs). A guest is only started here: the caller waits for it.
fn start_vnf(kind: &VnfKind, k: usize, w: &Wiring, run_dir: &Path) -> Result<Vnf> {
    let ends = &w.vnf_ports[2 * k..2 * k + 2];
    // Names and files of the first VNF as before PVVP existed; the second gets a suffix.
    let sfx = if k == 0 {
        String::new()
    } else {
        format!("-{}", k + 1)
    };
    if let VnfKind::Vm { .. } = kind {
        // (QEMU may be the one that listens: start_vm_vnf waits only for the DUT's sockets.)
        return start_vm_vnf(k, ends, w, run_dir);
    }
    if crate::chain::is_kernel(kind) {
        let netns = crate::chain::vnf_netns_name(&w.run_id, k);
        return crate::chain::KernelVnf::start(kind, &netns, ends, &w.topology.chain(), k)
            .map(Vnf::Kernel);
    }
    let socks: Vec<PathBuf> = ends
        .iter()
        .filter_map(|p| match p {
            PortEnd::Memif { socket, .. } | PortEnd::VhostUser { socket, .. } => {
                Some(socket.clone())
            }
            _ => None,
        })
        .collect();
    for s in &socks {
        crate::wait_for(
            &format!("DUT socket {}", s.display()),
            Duration::from_secs(20),
            || s.exists(),
        )?;
    }
    let ctl = crate::chain::vnf_ctl(run_dir, k);
    let spec = match kind {
        VnfKind::TestpmdMacswap | VnfKind::TestpmdIo => {
            if !crate::cmd::have(crate::dut::testpmd::TESTPMD) {
                return Err(Error::Unsupported {
                    dut: "vnf testpmd-macswap".into(),
                    what: "this machine".into(),
                    why: format!(
                        "{} not found; install the Debian package dpdk-dev (make setup)",
                        crate::dut::testpmd::TESTPMD
                    ),
                });
            }
            let mut args =
                crate::dut::testpmd::eal_args(&format!("{}-vnf{sfx}", w.run_id), w.cores.vnf);
            args.extend(
                ends.iter()
                    .enumerate()
                    .filter_map(|(i, p)| crate::dut::testpmd::memif_vdev(i, p)),
            );
            let mode = if *kind == VnfKind::TestpmdIo {
                "io"
            } else {
                "macswap"
            };
            args.extend(crate::dut::testpmd::app_args(mode));
            ProcessSpec::new(&format!("vnf-testpmd{sfx}"), "stdbuf")
                .args(["-oL", crate::dut::testpmd::TESTPMD])
                .args(args)
                .stdin_pipe(true)
        }
        VnfKind::TestpmdVirtio => {
            if !crate::cmd::have(crate::dut::testpmd::TESTPMD) {
                return Err(Error::Unsupported {
                    dut: "vnf testpmd-virtio-macswap".into(),
                    what: "this machine".into(),
                    why: format!(
                        "{} not found; install the Debian packages dpdk-dev and librte-net-virtio23 (make setup)",
                        crate::dut::testpmd::TESTPMD
                    ),
                });
            }
            let mut args =
                crate::dut::testpmd::eal_args(&format!("{}-vnf{sfx}", w.run_id), w.cores.vnf);
            // --no-huge memory must reach the backend as file descriptors: one memfd
            // (TESTBED.md, "vhost-user").
            args.push("--single-file-segments".into());
            for (i, e) in ends.iter().enumerate() {
                if let PortEnd::VhostUser { socket, role, .. } = e {
                    // Our end connects (`server=0`) when the DUT listens.
                    let server = u8::from(*role == MemifRole::Server);
                    args.push(format!(
                        "--vdev=net_virtio_user{i},path={},queues=1,server={server}",
                        socket.display()
                    ));
                }
            }
            args.extend(crate::dut::testpmd::app_args("macswap"));
            // `start` would otherwise discard what already waits in the receive rings.
            args.push("--no-flush-rx".into());
            ProcessSpec::new(&format!("vnf-testpmd{sfx}"), "stdbuf")
                .args(["-oL", crate::dut::testpmd::TESTPMD])
                .args(args)
                .stdin_pipe(true)
        }
        VnfKind::VecswitchXconnect { bin }
        | VnfKind::VecswitchRouterNat { bin }
        | VnfKind::VecswitchFirewall { bin } => {
            let bin = crate::chain::vecswitch_bin(bin)?;
            let toml = crate::chain::vecswitch_vnf_toml(
                kind,
                &w.topology.chain(),
                k,
                ends,
                &ctl,
                w.cores.vnf,
            )?;
            let path = run_dir.join(format!("vnf{sfx}.toml"));
            std::fs::write(&path, toml).map_err(|source| Error::Io {
                what: "writing",
                path: path.clone(),
                source,
            })?;
            // A VNF that shares its CPU with the switch or the generator yields it after every
            // empty poll, as the DUT's worker does there (`dut::vecswitch::worker_idle_for`).
            let shared = w.cores.vnf == w.cores.dut || w.cores.vnf == w.cores.generator;
            ProcessSpec::new(&format!("vnf-vecswitch{sfx}"), &bin.display().to_string()).args([
                "run".to_string(),
                "--config".into(),
                path.display().to_string(),
                "--worker-idle".into(),
                if shared { "sleep" } else { "poll" }.into(),
            ])
        }
        VnfKind::Vm { .. } => return start_vm_vnf(k, ends, w, run_dir),
        VnfKind::KernelBridge
        | VnfKind::KernelRouter
        | VnfKind::KernelRouterNat
        | VnfKind::KernelFirewall => unreachable!("started above"),
    };
    let spec = spec.netns(Some(&w.dut_netns)).cpus(Some(vec![w.cores.vnf]));
    let mut child = ChildGuard::spawn(&spec, run_dir)?;
    match kind {
        VnfKind::TestpmdMacswap | VnfKind::TestpmdVirtio | VnfKind::TestpmdIo => {
            child.wait_for_log("Press enter to exit", Duration::from_secs(30))?
        }
        VnfKind::VecswitchXconnect { bin }
        | VnfKind::VecswitchRouterNat { bin }
        | VnfKind::VecswitchFirewall { bin } => {
            let bin = crate::chain::vecswitch_bin(bin)?;
            crate::dut::vecswitch::wait_ready(&bin, &mut child, &ctl, ends)?
        }
        _ => {}
    }
    Ok(Vnf::Process(child))
}

/// Starts guest `k` on its two vhost-user `ends` (QEMU's side), without waiting for it.
fn start_vm_vnf(k: usize, ends: &[PortEnd], w: &Wiring, run_dir: &Path) -> Result<Vnf> {
    let image = crate::vm::GuestImage::locate()?;
    // The backends that listen must be there before QEMU connects.
    for e in ends {
        if let PortEnd::VhostUser {
            socket,
            role: MemifRole::Client,
            ..
        } = e
        {
            crate::wait_for(
                &format!("vhost-user socket {}", socket.display()),
                Duration::from_secs(20),
                || socket.exists(),
            )?;
        }
    }
    let spec = crate::vm::VmSpec {
        name: format!("vm{k}"),
        index: k as u8,
        nics: ends
            .iter()
            .filter_map(|e| match e {
                PortEnd::VhostUser { socket, role, .. } => Some(crate::vm::VmNic {
                    socket: socket.clone(),
                    qemu_listens: *role == MemifRole::Server,
                }),
                _ => None,
            })
            .collect(),
        mode: crate::vm::GuestMode::Bridge,
        cpu: Some(w.cores.vnf),
        netns: Some(w.dut_netns.clone()),
        append: Vec::new(),
    };
    Ok(Vnf::Vm(crate::vm::Vm::start(&spec, &image, run_dir)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for n in [
            "phy2phy-memif",
            "phy2phy-veth",
            "pvp-memif",
            "pvp-veth",
            "pvvp-memif",
            "pvvp-veth",
            "pvp-vm",
            "pvp-vm-veth",
            "pvvp-vm",
            "pvvp-vm-veth",
            "v2v-vm",
            "pvp-virtio",
            "phy2phy-lag",
        ] {
            let t: Topology = n.parse().unwrap();
            assert_eq!(t.to_string(), n);
        }
        let e = "p2p".parse::<Topology>().unwrap_err().to_string();
        assert!(e.contains("p2p") && e.contains("phy2phy-memif"), "{e}");
    }

    #[test]
    fn vm_topologies_say_how_many_guests_they_run() {
        let t: Topology = "pvvp-vm".parse().unwrap();
        assert_eq!(
            t.vnfs(),
            Some((
                VnfKind::Vm {
                    role: MemifRole::Server
                },
                2
            ))
        );
        assert!(t.has_vms());
        assert!(Topology::V2v.has_vms());
        assert_eq!(Topology::V2v.link(), Link::Memif);
        let t: Topology = "pvvp-memif".parse().unwrap();
        assert_eq!(t.vnfs(), Some((VnfKind::TestpmdMacswap, 2)));
        assert!(!t.has_vms());
        assert!(!"phy2phy-memif".parse::<Topology>().unwrap().has_vms());
    }

    #[test]
    fn external_ports_parse_or_say_what_is_accepted() {
        assert_eq!(
            ExternalPort::parse("afp:veth0@lab1").unwrap(),
            ExternalPort::AfPacket {
                ifname: "veth0".into(),
                netns: Some("lab1".into())
            }
        );
        assert_eq!(
            ExternalPort::parse("afp:eth1").unwrap(),
            ExternalPort::AfPacket {
                ifname: "eth1".into(),
                netns: None
            }
        );
        assert_eq!(
            ExternalPort::parse("memif:/run/vpp/memif.sock").unwrap(),
            ExternalPort::Memif {
                socket: "/run/vpp/memif.sock".into(),
                role: MemifRole::Client
            }
        );
        assert_eq!(
            ExternalPort::parse("memif:/tmp/a@b.sock@server").unwrap(),
            ExternalPort::Memif {
                socket: "/tmp/a@b.sock".into(),
                role: MemifRole::Server
            }
        );
        for bad in [
            "eth0",
            "afp:",
            "afp:averyveryverylongname",
            "afp:x@",
            "memif:relative.sock",
            "memif:/x.sock@master",
            "tap:x",
        ] {
            let e = ExternalPort::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("afp:IFNAME@NETNS"), "{e}");
        }
        for f in [
            "afp:a@n",
            "afp:eth1",
            "memif:/s.sock@server",
            "memif:/c.sock@client",
        ] {
            assert_eq!(ExternalPort::parse(f).unwrap().to_string(), f);
        }
        let t = Topology::external(&["afp:a@n", "memif:/s.sock@server"]).unwrap();
        assert_eq!(t.to_string(), "external");
        assert_eq!(t.link(), Link::Veth);
        assert!(t.is_external());
        let e = Topology::external(&["afp:a"]).unwrap_err().to_string();
        assert!(e.contains("exactly two"), "{e}");
        let e = "external".parse::<Topology>().unwrap_err().to_string();
        assert!(e.contains("ports = [...]"), "{e}");
    }

    #[test]
    fn peer_flips_role() {
        let s = PortEnd::Memif {
            name: "phy0".into(),
            socket: "/x.sock".into(),
            id: 3,
            role: MemifRole::Server,
        };
        assert_eq!(
            s.peer("gen0"),
            PortEnd::Memif {
                name: "gen0".into(),
                socket: "/x.sock".into(),
                id: 3,
                role: MemifRole::Client
            }
        );
    }
}
