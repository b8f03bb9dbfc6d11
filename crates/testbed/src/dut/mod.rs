//! Devices under test: the [`Dut`] trait and its drivers.
//!
//! | driver | name | links | how it runs |
//! |---|---|---|---|
//! | [`vecswitch::VecswitchDut`] | `vecswitch-xconnect`, `vecswitch-bridge` | memif, veth (AF_PACKET) | writes a TOML config, runs `vecswitch run --config` |
//! | [`vecswitch::VecswitchDut`] | `vecswitch-xconnect-afxdp` | memif, veth (AF_XDP) | the same, veth ends as `af_xdp` ports |
//! | [`vecswitch::VecswitchDut`] | `vecswitch-xconnect-xdp` | veth (AF_XDP) | the same, the xconnect forwarded in the kernel (`offload = "xdp"`), generator ends given GRO (a NAPI, run by the DUT's redirect on the DUT's CPU) |
//! | [`linux_bridge::LinuxBridgeDut`] | `linux-bridge` | veth | one kernel bridge per port pair in the DUT namespace |
//! | [`ovs::OvsDut`] | `ovs` | veth | `ovsdb-server` + `ovs-vswitchd` (userspace `netdev` datapath) under the run dir; afxdp ports, else system |
//! | [`ovs::OvsDut`] | `ovs-afxdp` | veth | the same with afxdp ports only (no fallback) |
//! | [`ovs::OvsDut`] | `ovs-bridge` | veth | the same, each bridge a learning switch (`actions=NORMAL`) instead of port-to-port flows |
//! | [`testpmd::TestpmdDut`] | `testpmd-io` | memif | `dpdk-testpmd --forward-mode=io`, the speed-of-light reference |
//! | [`ovs_dpdk::OvsDpdkDut`] | `ovs-dpdk` | memif | refuses with the reason (see its module doc) |
//! | [`external::ExternalDut`] | `external` | any (topology `external`) | starts nothing; optional counter command |
//! | [`vecswitch::VecswitchDut`] | `vecswitch-router` | memif, veth (AF_PACKET) | `[ip]`: two routed interfaces, N /32 routes to a static neighbour ([`vecswitch_router`]) |
//! | [`linux_router::LinuxRouterDut`] | `linux-router` | veth | kernel forwarding in the DUT namespace, routes loaded with `ip -batch` |
//! | [`ovs_router::OvsRouterDut`] | `ovs-router` | veth | OVS as `ovs`, one OpenFlow rule per route (`nw_dst`, MAC rewrite, `dec_ttl`) |
//! | [`nat::VecswitchNatDut`] | `vecswitch-router-nat` | memif, veth (AF_PACKET) | `vecswitch-router` with NAT44 masquerade, ingress inside, egress outside ([`nat`]; scale: sessions) |
//! | [`nat::LinuxNatDut`] | `linux-router-nat` | veth | `linux-router` with nftables `masquerade` out of the egress veth, conntrack sized for 1M sessions ([`nat`]) |
//! | [`firewall::VecswitchFwDut`] | `vecswitch-router-fw` | memif, veth (AF_PACKET) | `vecswitch-router` with `[[firewall]]` on the ingress: N rules, the permit last ([`firewall`]; scale: rules) |
//! | [`firewall::LinuxFwDut`] | `linux-router-fw` | veth | `linux-router` with the same rules as nftables `table inet l7fw` ([`firewall`]) |
//! | [`evpl::VecswitchEvplDut`] | `vecswitch-evpl` | memif, veth | an EVPL from an 802.1Q UNI to an 802.1ad ENNI (seed 001's tagged case, [`evpl`]) |
//! | [`evpl::OvsEvplDut`] | `ovs-evpl` | veth | the same with OVS's Q-in-Q (`dot1q-tunnel`) on a learning bridge |
//! | [`lag::VecswitchLagDut`] | `vecswitch-lag` | `phy2phy-lag` | two LACP bonds of two members each, an E-Line between them (seed 001's LAG case, [`lag`]) |
//! | [`lag::OvsLagDut`] | `ovs-lag` | `phy2phy-lag` | the same with OVS's LACP bonds (`balance-tcp`) on a learning bridge |
//!
//! Every driver reads the device's own counters ([`Dut::counters`], [`counters::DeviceCounters`])
//! where it has them: vecswitch `ctl show ports/errors/runtime`, testpmd `show fwd stats all`,
//! the kernel bridge its veth ends' kernel counters, OVS `dpctl/show -s` and
//! `dpif-netdev/pmd-stats-show`, an external device its counter command.
//!
//! A driver gets the [`Wiring`] (which ports it must hold and which it must connect), starts its
//! processes inside the DUT namespace on the DUT's CPU, and waits until it is ready (sockets exist,
//! bridges are up). Drivers install nothing; a missing program is an error naming the package.
//!
//! Scale sweeps ([`Scale`]): [`Dut::configure_scale`] fills the device's table and
//! [`Dut::shape_streams`] makes the generator's traffic use it — destination MACs or IPv4
//! addresses spread over the entries, one per entry up to the generator's
//! [`vecswitch_gen::flow::MAX_FLOWS`] ([`router`] has the routed address plan).

pub mod counters;
pub mod evpl;
pub mod external;
pub mod firewall;
pub mod kernel_if;
pub mod l2_address;
pub mod lag;
pub mod linux_bridge;
pub mod linux_router;
pub mod nat;
pub mod ovs;
pub mod ovs_dpdk;
pub mod ovs_router;
pub mod router;
pub mod testpmd;
pub mod vecswitch;
pub mod vecswitch_router;
pub mod vecswitch_show;

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use vecswitch_gen::StreamSpec;
use vecswitch_lab::suite::ScaleKind;

use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::process::ChildGuard;
use crate::topology::Wiring;

/// A scale setting for scale sweeps (the reports' MAC-table, flow-count and FIB tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scale {
    /// Pre-populate this many MAC entries (static, on the egress port of the port pair), and
    /// spread the traffic's destination MACs over them ([`Dut::shape_streams`]).
    MacEntries(u32),
    /// Install this many flows / rules (that the test traffic does not match).
    Flows(u32),
    /// This many IPv4 /32 routes toward the egress side ([`router`]), with the traffic's
    /// destination addresses spread over them, one per route.
    Routes(u32),
    /// This many NAT44 sessions: distinct UDP flows from the inside, one session each
    /// ([`nat::shape_sessions`]).
    Sessions(u32),
    /// This many firewall rules, the permit last ([`firewall::policy`]).
    Rules(u32),
}

/// A device under test.
pub trait Dut: fmt::Debug + Send {
    /// The driver's name (`vecswitch-xconnect`, `linux-bridge`, ...), as results show it.
    fn name(&self) -> &str;

    /// Version strings of what runs (program versions, kernel), for the results' provenance.
    fn describe(&self) -> String;

    /// Starts the DUT on `wiring` and returns when it forwards (or fails). Teardown is the
    /// caller's job even when this fails ([`crate::Testbed::start`] does it).
    fn setup(&mut self, wiring: &Wiring) -> Result<()>;

    /// Stops everything `setup` started. Idempotent.
    fn teardown(&mut self) -> Result<()>;

    /// Applies a scale setting after `setup`. Drivers that cannot say so in the error.
    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        Err(Error::Unsupported {
            dut: self.name().to_string(),
            what: format!("scale setting {scale:?}"),
            why: "this driver has no scale configuration".into(),
        })
    }

    /// Its processes, for the placement record (role `dut`).
    fn processes(&self) -> Vec<PlacedProcess>;

    /// Fails if one of its processes exited.
    fn check_alive(&mut self) -> Result<()> {
        Ok(())
    }

    /// A reading of the device's own counters ([`counters::DeviceCounters`]), taken before and
    /// after each trial to say where lost frames went. `Ok(None)`: this driver cannot read any.
    fn counters(&mut self) -> Result<Option<counters::DeviceCounters>> {
        Ok(None)
    }

    /// Adapts the generator's streams to the device as it is now configured (the measurer calls
    /// it before every trial): a router's ingress MAC as the destination, destinations spread
    /// over the table of the last [`Dut::configure_scale`]. Default: the streams as they are.
    fn shape_streams(&self, _streams: &mut [StreamSpec]) -> Result<()> {
        Ok(())
    }

    /// The VLAN tags the frames on each generator port must carry for this device's service
    /// (port 0's, port 1's; [`evpl::dut_streams`]); `None`: untagged.
    fn traffic_tags(&self) -> Option<[Vec<vecswitch_gen::VlanSpec>; 2]> {
        None
    }

    /// Forgets the addresses its bridges learned (static entries stay): the empty table an
    /// RFC 2889 address trial starts from ([`l2_address`]). Drivers without a MAC table say so.
    fn flush_mac_table(&mut self) -> Result<()> {
        Err(Error::Unsupported {
            dut: self.name().to_string(),
            what: "flushing learned MAC addresses".into(),
            why: "this driver runs no learning bridge (RFC 2889 tests need vecswitch-bridge, \
                  linux-bridge or ovs-bridge)"
                .into(),
        })
    }
}

impl Scale {
    /// From a suite's scale kind name (`mac-entries`, `flows`, `routes`, `sessions`, `rules`)
    /// and point; an unknown name is an error listing them.
    pub fn parse(kind: &str, n: u64) -> Result<Scale> {
        let kind: ScaleKind = kind.parse().map_err(|_| Error::Invalid {
            field: "scale kind",
            value: kind.to_string(),
            expected: "mac-entries, flows, routes, sessions or rules".into(),
        })?;
        Scale::of(kind, n)
    }

    /// From a suite's (typed) scale kind and point: routes, sessions and rules need at least 1.
    pub fn of(kind: ScaleKind, n: u64) -> Result<Scale> {
        let n32 = u32::try_from(n).map_err(|_| Error::Invalid {
            field: "scale point",
            value: n.to_string(),
            expected: format!("at most {}", u32::MAX),
        })?;
        let at_least_one = |what: &str| Error::Invalid {
            field: "scale point",
            value: n.to_string(),
            expected: format!("at least 1 {what}"),
        };
        match kind {
            ScaleKind::MacEntries => Ok(Scale::MacEntries(n32)),
            ScaleKind::Flows => Ok(Scale::Flows(n32)),
            ScaleKind::Routes if n32 >= 1 => Ok(Scale::Routes(n32)),
            ScaleKind::Routes => Err(at_least_one("route")),
            ScaleKind::Sessions if n32 >= 1 => Ok(Scale::Sessions(n32)),
            ScaleKind::Sessions => Err(at_least_one("session")),
            ScaleKind::Rules if n32 >= 1 => Ok(Scale::Rules(n32)),
            ScaleKind::Rules => Err(at_least_one("rule (the permit)")),
        }
    }

    /// Distinct destinations the generator's traffic is spread over at this setting: one per MAC
    /// entry, route or session, at most [`vecswitch_gen::flow::MAX_FLOWS`]; `None` for [`Scale::Flows`]
    /// (rules the traffic does not match: one flow).
    pub fn destinations(self) -> Option<u32> {
        match self {
            Scale::MacEntries(n) | Scale::Routes(n) | Scale::Sessions(n) => {
                Some(n.clamp(1, vecswitch_gen::flow::MAX_FLOWS))
            }
            Scale::Flows(_) | Scale::Rules(_) => None,
        }
    }
}

/// The first MAC of the scale entries ([`linux_bridge::scale_mac`]`(0)`): entry `i` is this
/// plus `i` in the low 32 bits, as the generator's MAC ranges count.
pub const SCALE_MAC_BASE: [u8; 6] = [0x02, 0x5c, 0, 0, 0, 0];

/// Spreads the destination MACs of the streams from DUT port `from` to DUT port `to` over
/// `macs` addresses from `first` upward (low 32 bits incrementing, one flow per address) — the
/// shaping of [`Scale::MacEntries`] for the bridges.
pub(crate) fn spread_dst_macs(
    streams: &mut [StreamSpec],
    (from, to): (usize, usize),
    first: [u8; 6],
    macs: u32,
) {
    for s in streams
        .iter_mut()
        .filter(|s| s.tx_port == from && s.rx_port == to)
    {
        s.dst_mac = first;
        s.ranges.retain(|r| r.field != vecswitch_gen::Field::DstMac);
        s.ranges.push(vecswitch_gen::FieldRange {
            field: vecswitch_gen::Field::DstMac,
            count: macs,
            mode: vecswitch_gen::FieldMode::Increment,
        });
        s.flows = macs;
    }
}

/// Declares [`DutKind`] from one table: per kind, its doc, its variant (with the field it
/// carries, if any, and how [`DutKind::parse`] fills it from the `vecswitch` binary), its name
/// (and older names still accepted), and how [`DutKind::build`] makes the driver. The name list
/// ([`DutKind::NAMES`], [`DutKind::ALIASES`]), the parser, the serde names and the builder all come from
/// the table: a new kind is one row.
macro_rules! dut_kinds {
    ($(
        $(#[$doc:meta])*
        $variant:ident $({ $field:ident : $ty:ty = $init:expr })?
            = $name:literal $(| $alias:literal)*
            => $build:expr;
    )*) => {
        /// The drivers by name, for configs and the CLI (one row per kind in `dut_kinds!`).
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        pub enum DutKind {
            $(
                $(#[$doc])*
                #[serde(rename = $name $(, alias = $alias)*)]
                $variant $({ $field: $ty })?,
            )*
        }

        impl DutKind {
            /// Every kind's name as suites and results spell it, in table order.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            /// Names accepted besides [`DutKind::NAMES`] (older spellings), with the name each
            /// stands for.
            pub const ALIASES: &'static [(&'static str, &'static str)] =
                &[$($(($alias, $name),)*)*];

            /// The kind's name ([`DutKind::NAMES`]); the driver it builds reports the same.
            pub fn name(&self) -> &'static str {
                match self {
                    $(DutKind::$variant { .. } => $name,)*
                }
            }

            /// The kind called `name` (or one of its older names), or `None`.
            fn by_name(name: &str, vecswitch_bin: &std::path::Path) -> Option<DutKind> {
                match name {
                    $($name $(| $alias)* => Some(DutKind::$variant $({
                        $field: ($init)(vecswitch_bin)
                    })?),)*
                    _ => None,
                }
            }

            /// A fresh driver.
            pub fn build(&self) -> Box<dyn Dut> {
                match self {
                    $(DutKind::$variant $({ $field })? => Box::new($build),)*
                }
            }
        }
    };
}

/// The `vecswitch` binary, for the kinds that run it.
fn bin_of(vecswitch_bin: &std::path::Path) -> PathBuf {
    vecswitch_bin.to_path_buf()
}

dut_kinds! {
    VecswitchXconnect { bin: PathBuf = bin_of } = "vecswitch-xconnect" | "vecswitch"
        => vecswitch::VecswitchDut::new(bin.clone(), vecswitch::Mode::Xconnect);
    VecswitchBridge { bin: PathBuf = bin_of } = "vecswitch-bridge"
        => vecswitch::VecswitchDut::new(bin.clone(), vecswitch::Mode::Bridge);
    /// `vecswitch-xconnect` with AF_XDP ports on its veth ends.
    VecswitchXconnectAfxdp { bin: PathBuf = bin_of } = "vecswitch-xconnect-afxdp"
        => vecswitch::VecswitchDut::with_veth(
            bin.clone(),
            vecswitch::Mode::Xconnect,
            vecswitch::VethPort::AfXdp,
        );
    /// `vecswitch-xconnect-afxdp` with the xconnect forwarded in the kernel (`offload = "xdp"`).
    VecswitchXconnectXdp { bin: PathBuf = bin_of } = "vecswitch-xconnect-xdp"
        => vecswitch::VecswitchDut::with_veth(
            bin.clone(),
            vecswitch::Mode::Xconnect,
            vecswitch::VethPort::AfXdpOffload,
        );
    LinuxBridge = "linux-bridge" => linux_bridge::LinuxBridgeDut::new();
    Ovs = "ovs" => ovs::OvsDut::new();
    /// OVS with afxdp ports only.
    OvsAfxdp = "ovs-afxdp" => ovs::OvsDut::new().afxdp_only();
    /// OVS as a learning bridge (`actions=NORMAL`).
    OvsBridge = "ovs-bridge" => ovs::OvsDut::new().learning();
    TestpmdIo = "testpmd-io" => testpmd::TestpmdDut::new();
    OvsDpdk = "ovs-dpdk" => ovs_dpdk::OvsDpdkDut::new();
    /// An EVPL from an 802.1Q UNI to an 802.1ad ENNI ([`evpl`]).
    VecswitchEvpl { bin: PathBuf = bin_of } = "vecswitch-evpl"
        => evpl::VecswitchEvplDut::new(bin.clone());
    /// OVS's Q-in-Q EVPL ([`evpl`]).
    OvsEvpl = "ovs-evpl" => evpl::OvsEvplDut::new();
    /// vecswitch's LACP bonds with an E-Line between them ([`lag`], topology `phy2phy-lag`).
    VecswitchLag { bin: PathBuf = bin_of } = "vecswitch-lag"
        => lag::VecswitchLagDut::new(bin.clone());
    /// OVS's LACP bonds on a learning bridge ([`lag`]).
    OvsLag = "ovs-lag" => lag::OvsLagDut::new();
    /// A device the lab does not start (topology `external`), with an optional counter command
    /// (the suite's `counters_command`; none when parsed from a name).
    External { counters_command: Option<String> = |_| None } = "external"
        => external::ExternalDut::new(counters_command.clone());
    /// vecswitch routing between two `[ip]` interfaces (scale: [`Scale::Routes`]).
    VecswitchRouter { bin: PathBuf = bin_of } = "vecswitch-router"
        => vecswitch::VecswitchDut::new(bin.clone(), vecswitch::Mode::Router);
    /// Kernel IPv4 forwarding in the DUT namespace.
    LinuxRouter = "linux-router" => linux_router::LinuxRouterDut::new();
    /// `vecswitch-router` with NAT44 masquerade (scale: [`Scale::Sessions`]).
    VecswitchRouterNat { bin: PathBuf = bin_of } = "vecswitch-router-nat"
        => nat::VecswitchNatDut::new(bin.clone());
    /// `linux-router` with nftables masquerade.
    LinuxRouterNat = "linux-router-nat" => nat::LinuxNatDut::new();
    /// `vecswitch-router` with a firewall (scale: [`Scale::Rules`]).
    VecswitchRouterFw { bin: PathBuf = bin_of } = "vecswitch-router-fw"
        => firewall::VecswitchFwDut::new(bin.clone());
    /// `linux-router` with an nftables filter.
    LinuxRouterFw = "linux-router-fw" => firewall::LinuxFwDut::new();
    /// OVS with one OpenFlow rule per route.
    OvsRouter = "ovs-router" => ovs_router::OvsRouterDut::new();
}

impl DutKind {
    /// Parses a driver name; `vecswitch_bin` is the `vecswitch` binary for the vecswitch drivers
    /// (`std::env::current_exe()` in the CLI, `CARGO_BIN_EXE_vecswitch` in tests). An unknown
    /// name is an error listing [`DutKind::NAMES`].
    pub fn parse(name: &str, vecswitch_bin: PathBuf) -> Result<DutKind> {
        DutKind::by_name(name, &vecswitch_bin).ok_or_else(|| Error::Invalid {
            field: "dut",
            value: name.to_string(),
            expected: DutKind::NAMES.join(", "),
        })
    }
}
/// The driver and topology a suite's `[[dut]]` table names: [`DutKind::parse`] of its `name`
/// (an `external` device with the table's `counters_command`), and its `topology` (or, with
/// `ports`, the external topology between them). The bench command resolves every table this way
/// when it loads the suite, so a misspelt name fails before the first device runs.
pub fn resolve_dut_spec(
    spec: &vecswitch_lab::suite::DutSpec,
    vecswitch_bin: &std::path::Path,
) -> Result<(DutKind, crate::Topology)> {
    let topology = match &spec.ports {
        Some(ports) => crate::Topology::external(ports)?,
        None => spec.topology.parse()?,
    };
    let kind = match DutKind::parse(&spec.name, vecswitch_bin.to_path_buf())? {
        DutKind::External { .. } => DutKind::External {
            counters_command: spec.counters_command.clone(),
        },
        k => k,
    };
    Ok((kind, topology))
}

/// The placement record of one child process with role `dut`.
pub(crate) fn placed(child: &ChildGuard, note: &str) -> PlacedProcess {
    PlacedProcess {
        role: "dut".into(),
        name: child.name().to_string(),
        pid: child.pid(),
        cpus: child.cpus_allowed(),
        note: note.to_string(),
    }
}

/// First line of `program args` output, or a note that it could not be run.
pub(crate) fn version_line(program: &str, args: &[&str]) -> String {
    match crate::cmd::run(program, args) {
        Ok(out) => out
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string(),
        Err(_) => format!("{program}: version unknown"),
    }
}

/// The kernel release (`uname -r`).
pub(crate) fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_else(|_| "Linux (release unknown)".into())
}

/// Error for a wiring a driver cannot hold.
pub(crate) fn unsupported_wiring(dut: &str, w: &Wiring, why: &str) -> Error {
    Error::Unsupported {
        dut: dut.to_string(),
        what: format!("topology {}", w.topology),
        why: why.to_string(),
    }
}

/// A phy2phy-memif wiring for unit tests: generator ports `g0`, `g1`, DUT ports `phy0`, `phy1`
/// (servers) in one pair, generator on CPU 0, DUT and VNF on CPU 1.
#[cfg(test)]
pub(crate) fn test_wiring() -> Wiring {
    use crate::topology::{Link, MemifRole, PortEnd, Topology};
    let memif = |n: &str| PortEnd::Memif {
        name: n.into(),
        socket: format!("/r/{n}.sock").into(),
        id: 0,
        role: MemifRole::Server,
    };
    Wiring {
        topology: Topology::Phy2Phy { link: Link::Memif },
        run_id: "r".into(),
        run_dir: "/r".into(),
        dut_netns: "ns".into(),
        gen_netns: None,
        gen_ports: vec![memif("g0"), memif("g1")],
        dut_ports: vec![memif("phy0"), memif("phy1")],
        pairs: vec![(0, 1)],
        vnf_ports: vec![],
        cores: crate::placement::CorePlan {
            generator: 0,
            dut: 1,
            vnf: 1,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_build() {
        let mut names = Vec::new();
        for n in [
            "vecswitch-xconnect",
            "vecswitch-bridge",
            "vecswitch-xconnect-afxdp",
            "vecswitch-xconnect-xdp",
            "linux-bridge",
            "ovs",
            "ovs-afxdp",
            "ovs-bridge",
            "vecswitch-evpl",
            "ovs-evpl",
            "vecswitch-lag",
            "ovs-lag",
            "testpmd-io",
            "ovs-dpdk",
            "external",
            "vecswitch-router",
            "linux-router",
            "ovs-router",
            "vecswitch-router-nat",
            "linux-router-nat",
            "vecswitch-router-fw",
            "linux-router-fw",
        ] {
            let k = DutKind::parse(n, "/bin/vecswitch".into()).unwrap();
            assert_eq!(k.build().name(), n);
            assert_eq!(k.name(), n);
            // The serde name is the table's name too.
            let v = serde_json::to_value(&k).unwrap();
            let tag = (v.as_str().map(str::to_string))
                .or_else(|| v.as_object().and_then(|o| o.keys().next().cloned()));
            assert_eq!(tag.as_deref(), Some(n));
            names.push(n);
        }
        // The table lists exactly these names, once each; the older `vecswitch` still parses.
        let mut table = DutKind::NAMES.to_vec();
        table.sort_unstable();
        names.sort_unstable();
        assert_eq!(table, names);
        assert_eq!(DutKind::ALIASES, &[("vecswitch", "vecswitch-xconnect")]);
        let k = DutKind::parse("vecswitch", "/bin/vecswitch".into()).unwrap();
        assert_eq!(
            k,
            DutKind::VecswitchXconnect {
                bin: "/bin/vecswitch".into()
            }
        );
        assert_eq!(
            DutKind::parse("external", "/x".into()).unwrap(),
            DutKind::External {
                counters_command: None
            }
        );
        assert_eq!(Scale::parse("flows", 10).unwrap(), Scale::Flows(10));
        assert_eq!(
            Scale::parse("mac-entries", 7).unwrap(),
            Scale::MacEntries(7)
        );
        assert_eq!(Scale::parse("routes", 2000).unwrap(), Scale::Routes(2000));
        let e = Scale::parse("routes", 0).unwrap_err().to_string();
        assert!(e.contains("at least 1 route"), "{e}");
        let e = Scale::parse("vlans", 1).unwrap_err().to_string();
        assert!(e.contains("vlans") && e.contains("routes"), "{e}");
        assert_eq!(Scale::Routes(2_000_000).destinations(), Some(1_000_000));
        assert_eq!(
            Scale::parse("sessions", 64_000).unwrap(),
            Scale::Sessions(64_000)
        );
        assert!(Scale::parse("sessions", 0).is_err());
        assert_eq!(Scale::Sessions(1000).destinations(), Some(1000));
        assert_eq!(Scale::parse("rules", 100).unwrap(), Scale::Rules(100));
        assert_eq!(Scale::Rules(100).destinations(), None);
        assert_eq!(Scale::MacEntries(2).destinations(), Some(2));
        assert_eq!(Scale::Flows(9).destinations(), None);
        assert_eq!(
            router::parse_mac(&linux_bridge::scale_mac(0)),
            Some(SCALE_MAC_BASE)
        );
        let e = DutKind::parse("vpp", "/x".into()).unwrap_err().to_string();
        assert!(e.contains("vpp") && e.contains("linux-bridge"), "{e}");
    }

    /// Every documented suite loads, and every `[[dut]]` of it names a driver and a topology
    /// the testbed knows (the L7 suites in their own format, with their DUT names checked by
    /// `L7Suite::parse`).
    #[test]
    fn every_documented_suite_loads_and_its_devices_resolve() {
        let dir = format!("{}/../../docs/suites", env!("CARGO_MANIFEST_DIR"));
        let (mut lab, mut l7) = (0, 0);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let at = path.display();
            if crate::l7::suite::is_l7_suite(&text) {
                crate::l7::suite::L7Suite::parse(&text).unwrap_or_else(|e| panic!("{at}: {e}"));
                l7 += 1;
                continue;
            }
            let suite =
                vecswitch_lab::suite::Suite::parse(&text).unwrap_or_else(|e| panic!("{at}: {e}"));
            for d in &suite.duts {
                let (kind, _) = resolve_dut_spec(d, std::path::Path::new("/bin/vecswitch"))
                    .unwrap_or_else(|e| panic!("{at}: dut {}: {e}", d.name));
                assert!(
                    kind.name() == d.name
                        || DutKind::ALIASES.contains(&(d.name.as_str(), kind.name())),
                    "{at}: {} built as {}",
                    d.name,
                    kind.name()
                );
            }
            lab += 1;
        }
        assert!(
            lab >= 10 && l7 >= 3,
            "{lab} lab and {l7} L7 suites in {dir}"
        );
        // A misspelt driver or topology fails with the name and the accepted names.
        let spec = |name: &str, topology: &str| vecswitch_lab::suite::DutSpec {
            name: name.into(),
            topology: topology.into(),
            sim: None,
            ports: None,
            counters_command: None,
        };
        let bin = std::path::Path::new("/x");
        let e = resolve_dut_spec(&spec("linux-brdge", "phy2phy-veth"), bin)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("linux-brdge") && e.contains("linux-bridge"),
            "{e}"
        );
        let e = resolve_dut_spec(&spec("linux-bridge", "phy2phy-vet"), bin)
            .unwrap_err()
            .to_string();
        assert!(e.contains("phy2phy-vet"), "{e}");
    }
}
