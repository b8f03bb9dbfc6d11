//! Service chains: N VNFs of mixed kinds in series behind the DUT (issue 12; seed 003's PVVP and
//! multi-VM topologies, seed 004's vSwitch + vRouter + vFirewall chain).
//!
//! `Topology::Chain { link, vnfs }` is the general form of PVP (one VNF) and PVVP (two of one
//! kind): the same wiring ([`crate::Testbed::build_with`]) and the same VNF start-up
//! ([`crate::Testbed::start`]) serve all three, one VNF at a time, so a chain may mix
//!
//! | VNF ([`VnfKind`]) | attached to the DUT by | forwards with |
//! |---|---|---|
//! | `testpmd-macswap`, `testpmd-io` | memif (DUT = server) | `dpdk-testpmd --forward-mode=macswap` / `io` |
//! | `vecswitch` (`vecswitch-xconnect`) | memif (DUT = server) | `vecswitch run` with the two ports cross-connected |
//! | `kernel-bridge` | a veth pair per side; the VNF's ends in its own namespace `<run>-vnfK` | a Linux bridge over its two ends (STP off) |
//! | `kernel-router` | as `kernel-bridge` | the kernel's IPv4/IPv6 forwarding, one hop of the chain's IP plan ([`routed`]) |
//! | `kernel-router-nat` | as `kernel-bridge` | as `kernel-router`, with nftables `masquerade` (IPv4) out of its right port |
//! | `kernel-firewall` | as `kernel-bridge` | as `kernel-router`, with nftables filtering by the seed-004 policy ([`policy`], both families) |
//! | `vecswitch-router-nat` | memif (DUT = server) | `vecswitch run` routing (`[ip]`) with NAT44 masquerade (`[nat44]`: left inside, right outside) |
//! | `vecswitch-firewall` | memif (DUT = server) | `vecswitch run` routing with `[[firewall]]` ACLs of the seed-004 policy (IPv4 and IPv6; IPS mode on request, [`policy::ips_patterns`]) |
//!
//! Traffic goes gen0 → DUT phy0 → VNF 0 → DUT → VNF 1 → … → VNF N-1 → DUT phy1 → gen1 and back:
//! the DUT connects `phy0–vnf0`, `vnf(2k+1)–vnf(2k+2)` and `vnf(2N-1)–phy1`. VNF k holds the
//! DUT's `vnf2k` and `vnf2k+1` (their other ends `v2k`, `v2k+1`). A kernel VNF's DUT ends are
//! veth, so the DUT must open both memif and veth ports (vecswitch does; the Linux bridge DUT
//! does not open memif, testpmd does not open veth).
//!
//! Written as `chain-memif:testpmd-io+vecswitch+kernel-bridge` (or `chain-veth:…` for veth
//! generator links) wherever a topology name is read ([`parse_chain`]). A `vecswitch` VNF parsed
//! from a name runs the current executable (the `vecswitch` binary when the CLI parsed it); a
//! library caller names the binary in [`VnfKind::VecswitchXconnect`].
//!
//! Cores: every VNF runs on [`crate::CorePlan::vnf`] (beside the DUT on the 2-CPU machine), and a
//! kernel VNF's work is receive softirq work, steered there by RPS on its two ends. The placement
//! record lists each VNF — a kernel VNF as pid 0 with its RPS CPUs — and says which CPUs more than
//! one role shared.
//!
//! Routed VNFs (the last five) each make one IP hop: [`routed`] numbers the subnets and gives
//! each hop its addresses and routes, the L7 client and server their gateways. A vecswitch VNF's
//! memif ports are configured with fixed MACs `02:12:00:00:00:II` (port `vII`), but the switch's
//! routed interfaces answer and check with their own `02:fe:00:00:HH:LL` (from the interface
//! index; `show interfaces` says so): ARP and ND make that work for the L7 endpoints, and the
//! built-in tester ([`tester_streams`]) reads the running VNF's MAC.
//!
//! [`noisy`]: the noisy-neighbour stressor (seed 003) and the L7 profile run once per level.
//! [`policy`]: the seed-004 firewall rules (100), rendered for vecswitch and for nftables.

pub mod noisy;
pub mod policy;
pub mod routed;

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::netns::{veth_pair, Netns};
use crate::placement::{CorePlan, PlacedProcess};
use crate::topology::{Link, PortEnd, Topology, VnfKind};

/// Names of the VNF kinds a chain accepts (for error messages).
pub const VNF_NAMES: &str = "testpmd-macswap, testpmd-io, vecswitch (vecswitch-xconnect), \
     vecswitch-router-nat, vecswitch-firewall, kernel-bridge, kernel-router, kernel-router-nat, \
     kernel-firewall";

/// A single routed VNF's address on its left side (toward `gen0`, the L7 client) — IPv4 and
/// IPv6 ([`routed::hop`] gives every hop's).
pub const ROUTER_LEFT: [&str; 2] = ["10.12.1.254/24", "fd12:1::fe/64"];
/// A single routed VNF's address on its right side (toward `gen1`, the L7 server).
pub const ROUTER_RIGHT: [&str; 2] = ["10.12.2.254/24", "fd12:2::fe/64"];

/// Parses one VNF name of a chain (see [`VNF_NAMES`]).
pub fn parse_vnf(s: &str) -> Result<VnfKind> {
    Ok(match s {
        "testpmd-macswap" => VnfKind::TestpmdMacswap,
        "testpmd-io" => VnfKind::TestpmdIo,
        "vecswitch" | "vecswitch-xconnect" => VnfKind::VecswitchXconnect {
            bin: PathBuf::new(),
        },
        "kernel-bridge" => VnfKind::KernelBridge,
        "kernel-router" => VnfKind::KernelRouter,
        "kernel-router-nat" => VnfKind::KernelRouterNat,
        "kernel-firewall" => VnfKind::KernelFirewall,
        "vecswitch-router-nat" => VnfKind::VecswitchRouterNat {
            bin: PathBuf::new(),
        },
        "vecswitch-firewall" => VnfKind::VecswitchFirewall {
            bin: PathBuf::new(),
        },
        _ => {
            return Err(Error::Invalid {
                field: "chain VNF",
                value: s.to_string(),
                expected: VNF_NAMES.to_string(),
            })
        }
    })
}

/// Parses `chain-memif:A+B+C` / `chain-veth:A+B+C`; `None` if `s` does not start with `chain`.
pub fn parse_chain(s: &str) -> Option<Result<Topology>> {
    let rest = s.strip_prefix("chain")?;
    let bad = || Error::Invalid {
        field: "topology",
        value: s.to_string(),
        expected: format!(
            "chain-memif:VNF+VNF+... or chain-veth:VNF+..., each VNF one of {VNF_NAMES}"
        ),
    };
    let Some((link, list)) = rest.split_once(':') else {
        return Some(Err(bad()));
    };
    let link = match link {
        "-memif" => Link::Memif,
        "-veth" => Link::Veth,
        _ => return Some(Err(bad())),
    };
    let vnfs = list.split('+').map(parse_vnf).collect::<Result<Vec<_>>>();
    Some(vnfs.and_then(|vnfs| Topology::new_chain(link, vnfs)))
}

/// Checks a chain's VNF list: one to eight VNFs, no VMs (they have their own topologies).
pub fn validate(vnfs: &[VnfKind]) -> Result<()> {
    let names = || vnfs.iter().map(VnfKind::name).collect::<Vec<_>>().join("+");
    if vnfs.is_empty() || vnfs.len() > 8 {
        return Err(Error::Invalid {
            field: "chain length",
            value: vnfs.len().to_string(),
            expected: "1 to 8 VNFs".into(),
        });
    }
    if vnfs.iter().any(|v| v.vhost_role().is_some()) {
        return Err(Error::Invalid {
            field: "chain VNFs",
            value: names(),
            expected: format!(
                "{VNF_NAMES} (VM and virtio VNFs: the pvp-vm, pvvp-vm, pvp-virtio topologies)"
            ),
        });
    }
    Ok(())
}

/// The `vecswitch` binary of a VNF: `bin`, or when empty (a VNF parsed from a topology name)
/// the running executable, which is `vecswitch` itself when the CLI runs the chain.
pub fn vecswitch_bin(bin: &std::path::Path) -> Result<PathBuf> {
    if !bin.as_os_str().is_empty() {
        return Ok(bin.to_path_buf());
    }
    std::env::current_exe().map_err(|source| Error::Io {
        what: "locating the running executable (the vecswitch VNF's binary)",
        path: PathBuf::from("/proc/self/exe"),
        source,
    })
}

/// Whether VNF `kind` is kernel code in a namespace of its own, attached by veth.
pub fn is_kernel(kind: &VnfKind) -> bool {
    matches!(
        kind,
        VnfKind::KernelBridge
            | VnfKind::KernelRouter
            | VnfKind::KernelRouterNat
            | VnfKind::KernelFirewall
    )
}

impl VnfKind {
    /// The `vecswitch` binary of a vecswitch VNF (empty: the running executable).
    pub fn vecswitch_path(&self) -> Option<&std::path::Path> {
        match self {
            VnfKind::VecswitchXconnect { bin }
            | VnfKind::VecswitchRouterNat { bin }
            | VnfKind::VecswitchFirewall { bin } => Some(bin),
            _ => None,
        }
    }

    /// This kind with the `vecswitch` binary `bin` where none was given (a VNF parsed from a
    /// topology name).
    pub fn with_vecswitch_bin(self, bin: &std::path::Path) -> VnfKind {
        let fill = |b: PathBuf| {
            if b.as_os_str().is_empty() {
                bin.to_path_buf()
            } else {
                b
            }
        };
        match self {
            VnfKind::VecswitchXconnect { bin } => VnfKind::VecswitchXconnect { bin: fill(bin) },
            VnfKind::VecswitchRouterNat { bin } => VnfKind::VecswitchRouterNat { bin: fill(bin) },
            VnfKind::VecswitchFirewall { bin } => VnfKind::VecswitchFirewall { bin: fill(bin) },
            v => v,
        }
    }
}

/// The control socket of vecswitch VNF `k` in `run_dir` (the first as before chains existed).
pub fn vnf_ctl(run_dir: &std::path::Path, k: usize) -> PathBuf {
    if k == 0 {
        run_dir.join("vnf.ctl")
    } else {
        run_dir.join(format!("vnf-{}.ctl", k + 1))
    }
}

/// The MAC of a vecswitch VNF's memif port `vII` (see the module doc).
pub fn vnf_mac(port: usize) -> String {
    format!("02:12:00:00:00:{:02x}", port & 0xff)
}

/// The config of vecswitch VNF `k` of `chain` on its memif `ends` (`vII`, memif clients):
/// a cross-connect, or (router-nat, firewall) its hop of the IP plan with NAT44 or the
/// seed-004 firewall; the TOML text of [`vecswitch_vnf_config`].
pub fn vecswitch_vnf_toml(
    kind: &VnfKind,
    chain: &[VnfKind],
    k: usize,
    ends: &[PortEnd],
    ctl: &std::path::Path,
    cpu: usize,
) -> Result<String> {
    vecswitch_vnf_toml_with_ips(kind, chain, k, ends, ctl, cpu, None)
}

/// [`vecswitch_vnf_toml`] with, for a firewall, IPS mode on both ports searching for `ips`
/// ([`policy::ips_patterns`]; the L7 bed reloads a running firewall VNF with it,
/// `L7Bed::set_ips`).
pub fn vecswitch_vnf_toml_with_ips(
    kind: &VnfKind,
    chain: &[VnfKind],
    k: usize,
    ends: &[PortEnd],
    ctl: &std::path::Path,
    cpu: usize,
    ips: Option<&[String]>,
) -> Result<String> {
    vecswitch_vnf_config(kind, chain, k, ends, ctl, cpu, ips)
        .map(|c| crate::dut::vecswitch::to_toml(&c))
}

/// The config [`vecswitch_vnf_toml_with_ips`] writes. `Err`: an address of the IP plan the
/// switch's config does not take (a bug in [`routed`]).
pub fn vecswitch_vnf_config(
    kind: &VnfKind,
    chain: &[VnfKind],
    k: usize,
    ends: &[PortEnd],
    ctl: &std::path::Path,
    cpu: usize,
    ips: Option<&[String]>,
) -> Result<vecswitch_control::config::Config> {
    use crate::dut::vecswitch::{config, Mode};
    use vecswitch_control::config::PortConfig;
    use vecswitch_switch::ip::config::{AddressConfig, NeighborConfig, RouteConfig};
    let Some(j) = routed::hop_index(chain, k).filter(|_| routed::is_routed(kind)) else {
        return Ok(config(ends, &[(0, 1)], Mode::Xconnect, ctl, Some(cpu)));
    };
    let mut c = config(ends, &[], Mode::Xconnect, ctl, Some(cpu));
    for (i, p) in [2 * k, 2 * k + 1].into_iter().zip(&mut c.ports) {
        // The ends are memif clients (the module doc); a memif port takes a fixed MAC.
        if let PortConfig::Memif(m) = p {
            m.mac = Some(vnf_mac(i));
        }
    }
    let (left, right) = (ends[0].name(), ends[1].name());
    let n = routed::hops(chain);
    let hop = routed::hop(j, n);
    for (iface, addrs) in [(left, &hop.left), (right, &hop.right)] {
        for a in addrs {
            c.ip.address.push(AddressConfig {
                interface: iface.to_string(),
                address: policy::prefix(a)?,
            });
        }
    }
    for (prefix, via) in &hop.routes {
        let via = via.parse().map_err(|_| Error::Invalid {
            field: "chain route next hop",
            value: via.clone(),
            expected: "an IP address".into(),
        })?;
        c.ip.route.push(RouteConfig {
            prefix: policy::prefix(prefix)?,
            via: vec![via],
            table: 0,
        });
    }
    for (iface, ip, mac) in tester_neighbours(j, n) {
        c.ip.neighbor.push(NeighborConfig {
            interface: [left, right][iface].to_string(),
            ip: ip.into(),
            mac: vecswitch_wire::EthernetAddress(mac),
        });
    }
    match kind {
        VnfKind::VecswitchRouterNat { .. } => {
            c.nat44.inside = vec![left.to_string()];
            c.nat44.outside = vec![right.to_string()];
        }
        VnfKind::VecswitchFirewall { .. } => {
            c.firewall = policy::seed004(n).vecswitch_firewalls(left, right, ips)?;
        }
        _ => {}
    }
    Ok(c)
}

/// The MACs the built-in tester's frames carry: `[source side (gen0), sink side (gen1)]`; the
/// end hops hold them as static neighbours of [`routed::TESTER_SOURCE`] and
/// [`routed::tester_sink`].
pub const TESTER_MACS: [[u8; 6]; 2] = [
    [0x02, 0x12, 0, 0, 0x01, 0x00],
    [0x02, 0x12, 0, 0, 0x01, 0x01],
];

/// The static neighbours hop `j` of `n` holds for the built-in tester, as (side: 0 left, 1
/// right; address; MAC): the first hop the source, the last hop the sink.
fn tester_neighbours(j: usize, n: usize) -> Vec<(usize, std::net::Ipv4Addr, [u8; 6])> {
    let mut v = Vec::new();
    if j == 0 {
        v.push((0, routed::TESTER_SOURCE, TESTER_MACS[0]));
    }
    if j + 1 == n {
        v.push((1, routed::tester_sink(n), TESTER_MACS[1]));
    }
    v
}

/// The MAC of side `side` (0 left, 1 right) of VNF `k` in `w`: the veth end's of a kernel VNF;
/// for a vecswitch VNF, the interface's as the running VNF reports it (`ctl --json show
/// interfaces`) — not the `mac` its config gives the memif port ([`vnf_mac`]): the switch's
/// interfaces keep `02:fe:00:00:HH:LL` from their index (`vecswitch_switch::interface`,
/// "until ports report their own"), and the routed frames must carry the one it checks.
fn vnf_port_mac(w: &crate::topology::Wiring, k: usize, side: usize) -> Option<[u8; 6]> {
    let chain = w.topology.chain();
    let v = chain.get(k)?;
    let end = w.vnf_ports.get(2 * k + side)?;
    let text = match end {
        PortEnd::Veth { mac, .. } if is_kernel(v) => mac.clone(),
        _ => {
            let bin = vecswitch_bin(v.vecswitch_path()?).ok()?;
            let ctl = vnf_ctl(&w.run_dir, k);
            let out = vecswitch_ctl(&bin, &ctl, &["--json", "show", "interfaces"]).ok()?;
            interface_mac(&out, end.name())?
        }
    };
    let b: Vec<u8> = text
        .split(':')
        .filter_map(|x| u8::from_str_radix(x, 16).ok())
        .collect();
    b.try_into().ok()
}

/// `vecswitch ctl --socket CTL --timeout 10 ARGS...` with the `vecswitch` binary `bin`: the
/// answer's text.
pub(crate) fn vecswitch_ctl(
    bin: &std::path::Path,
    ctl: &std::path::Path,
    args: &[&str],
) -> Result<String> {
    let ctl = ctl.display().to_string();
    let mut a = vec!["ctl", "--socket", &ctl, "--timeout", "10"];
    a.extend_from_slice(args);
    crate::cmd::run(&bin.display().to_string(), &a)
}

/// The MAC of interface `name` in a `ctl --json show interfaces` answer (the switch's own
/// [`vecswitch_switch::InterfaceInfo`]s).
fn interface_mac(json: &str, name: &str) -> Option<String> {
    let list: Vec<vecswitch_switch::InterfaceInfo> = crate::dut::vecswitch::answer_data(json)?;
    list.into_iter().find(|i| i.name == name).map(|i| i.mac)
}

/// The built-in tester's streams through a chain with routed VNFs (seed 004's "built-in
/// performance testing"; `None` for a chain without): the generator, attached to the switch by
/// memif like any VNF (`chain-memif:…`), sends IPv4/UDP from [`routed::TESTER_SOURCE`] to
/// [`routed::tester_sink`], port 1024 → 123 (NTP: a port the seed-004 policy permits, so the
/// firewall tracks it as a connection and NAT44 as a session), to the first hop's MAC; each hop
/// routes it, the NAT rewrites its source, and the last hop sends it to the sink's static
/// neighbour, which is the generator's other port. The generator finds its frames by their
/// signature (UDP payload), so the rewritten headers do not matter. Bidirectional adds the same
/// stream backwards (sink to source, to the last hop's MAC): a firewall or a NAT drops it as a
/// connection attempt from outside — the procedure then reports that direction's loss.
pub fn tester_streams(
    tb: &crate::topology::Testbed,
    size: &vecswitch_gen::SizeSpec,
    bidirectional: bool,
) -> Option<Vec<vecswitch_gen::StreamSpec>> {
    let w = tb.wiring();
    let chain = w.topology.chain();
    let n = routed::hops(&chain);
    if n == 0 {
        return None;
    }
    let first = (0..chain.len()).find(|k| routed::hop_index(&chain, *k) == Some(0))?;
    let last = (0..chain.len()).find(|k| routed::hop_index(&chain, *k) == Some(n - 1))?;
    let mut s = vecswitch_gen::StreamSpec::ipv4(0, 1);
    s.name = "tester".into();
    s.size = size.clone();
    s.src_mac = TESTER_MACS[0];
    s.dst_mac = vnf_port_mac(w, first, 0)?;
    s.src_ip = routed::TESTER_SOURCE.into();
    s.dst_ip = routed::tester_sink(n).into();
    s.src_port = 1024;
    s.dst_port = 123;
    let mut v = vec![s.clone()];
    if bidirectional {
        let mut r = s.reversed();
        r.src_mac = TESTER_MACS[1];
        r.dst_mac = vnf_port_mac(w, last, 1)?;
        v.push(r);
    }
    Some(v)
}

/// The namespace of kernel VNF `k` of run `run_id`.
pub fn vnf_netns_name(run_id: &str, k: usize) -> String {
    format!("{run_id}-vnf{k}")
}

/// Builds the links of kernel VNF `k`: its namespace and one veth pair per side, the DUT's ends
/// `vnf2k`, `vnf2k+1` in `dut_ns` and the VNF's `v2k`, `v2k+1` in the new namespace, up, with
/// receive work steered (RPS) to the VNF's CPU on the VNF's ends. Returns the namespace and the
/// two (DUT end, VNF end) pairs.
pub(crate) fn build_kernel_links(
    run_id: &str,
    k: usize,
    kind: &VnfKind,
    dut_ns: &Netns,
    cores: CorePlan,
) -> Result<(Netns, Vec<(PortEnd, PortEnd)>)> {
    let ns = Netns::create(&vnf_netns_name(run_id, k))?;
    if matches!(kind, VnfKind::KernelRouter) {
        // Netns::create turned IPv6 off; the router forwards both families.
        for key in [
            "net.ipv6.conf.all.disable_ipv6=0",
            "net.ipv6.conf.default.disable_ipv6=0",
        ] {
            ns.sysctl(key)?;
        }
    }
    let mut ends = Vec::new();
    for side in 0..2 {
        let i = 2 * k + side;
        let (d, v) = (format!("vnf{i}"), format!("v{i}"));
        veth_pair(dut_ns, &d, &ns, &v)?;
        dut_ns.link_up(&d)?;
        ns.link_up(&v)?;
        if let Err(e) = ns.set_rps(&v, CorePlan::mask(cores.vnf)) {
            tracing::warn!("RPS not set on {v}: {e}");
        }
        let dut_end = PortEnd::Veth {
            name: d.clone(),
            netns: dut_ns.name().to_string(),
            mac: dut_ns.mac(&d)?,
            ifname: d,
        };
        let vnf_end = PortEnd::Veth {
            name: v.clone(),
            netns: ns.name().to_string(),
            mac: ns.mac(&v)?,
            ifname: v,
        };
        ends.push((dut_end, vnf_end));
    }
    for (d, v) in &ends {
        crate::wait_for(
            &format!("veth {}/{} carrier", d.name(), v.name()),
            std::time::Duration::from_secs(5),
            || dut_ns.oper_up(d.name()) && ns.oper_up(v.name()),
        )?;
    }
    Ok((ns, ends))
}

/// Loads an nftables script into namespace `netns` (`nft -f`), saying what to install when
/// `nft` is missing.
fn nft_load(netns: &str, script: &str) -> Result<()> {
    if !crate::cmd::have("nft") {
        return Err(Error::Unsupported {
            dut: "kernel-router-nat / kernel-firewall VNF".into(),
            what: "this machine".into(),
            why: "nft not found; install the Debian package nftables (make setup)".into(),
        });
    }
    let path =
        std::env::temp_dir().join(format!("vecswitch-nft-{netns}-{}.nft", std::process::id()));
    std::fs::write(&path, script).map_err(|source| Error::Io {
        what: "writing",
        path: path.clone(),
        source,
    })?;
    let r = crate::cmd::run(
        "ip",
        &[
            "netns",
            "exec",
            netns,
            "nft",
            "-f",
            &path.display().to_string(),
        ],
    );
    let _ = std::fs::remove_file(&path);
    r.map(|_| ())
}

/// Packets kernel firewall VNFs dropped in namespace `netns` (the counters of [`policy`]'s
/// nftables script).
pub fn kernel_firewall_drops(netns: &str) -> Result<u64> {
    let out = crate::cmd::run(
        "ip",
        &[
            "netns", "exec", netns, "nft", "list", "table", "inet", "l7fw",
        ],
    )?;
    Ok(policy::nft_drops(&out))
}

/// A running kernel VNF: configuration inside its namespace, no process of its own.
#[derive(Debug)]
pub(crate) struct KernelVnf {
    kind: VnfKind,
    netns: String,
    ifnames: Vec<String>,
}

impl KernelVnf {
    /// Configures kernel VNF `kind` (VNF `k` of `chain`) in `netns` over its two veth `ends`
    /// (already up).
    pub(crate) fn start(
        kind: &VnfKind,
        netns: &str,
        ends: &[PortEnd],
        chain: &[VnfKind],
        k: usize,
    ) -> Result<KernelVnf> {
        let ifnames: Vec<String> = ends
            .iter()
            .filter_map(|e| match e {
                PortEnd::Veth { ifname, .. } => Some(ifname.clone()),
                _ => None,
            })
            .collect();
        if ifnames.len() != 2 {
            return Err(Error::Invalid {
                field: "kernel VNF ports",
                value: format!("{ends:?}"),
                expected: "two veth ends".into(),
            });
        }
        let ip = |args: &[&str]| {
            let mut a = vec!["-n", netns];
            a.extend_from_slice(args);
            crate::cmd::run("ip", &a)
        };
        let sysctl =
            |kv: &str| crate::cmd::run("ip", &["netns", "exec", netns, "sysctl", "-q", "-w", kv]);
        match kind {
            VnfKind::KernelBridge => {
                // As the linux-bridge DUT: no br_netfilter in the path (it drops frames with a
                // bad IPv4 checksum and sends every frame through iptables).
                for key in [
                    "net.bridge.bridge-nf-call-iptables=0",
                    "net.bridge.bridge-nf-call-ip6tables=0",
                    "net.bridge.bridge-nf-call-arptables=0",
                ] {
                    let _ = sysctl(key);
                }
                ip(&[
                    "link",
                    "add",
                    "br0",
                    "type",
                    "bridge",
                    "stp_state",
                    "0",
                    "forward_delay",
                    "0",
                ])?;
                for i in &ifnames {
                    ip(&["link", "set", i, "master", "br0"])?;
                }
                ip(&["link", "set", "br0", "up"])?;
            }
            VnfKind::KernelRouter | VnfKind::KernelRouterNat | VnfKind::KernelFirewall => {
                let j = routed::hop_index(chain, k).expect("a kernel router is routed");
                let n = routed::hops(chain);
                let hop = routed::hop(j, n);
                sysctl("net.ipv4.ip_forward=1")?;
                sysctl("net.ipv6.conf.all.forwarding=1")?;
                for (i, addrs) in ifnames.iter().zip([&hop.left, &hop.right]) {
                    sysctl(&format!("net.ipv6.conf.{i}.disable_ipv6=0"))?;
                    for a in addrs {
                        if a.contains(':') {
                            ip(&["addr", "add", a, "dev", i, "nodad"])?;
                        } else {
                            ip(&["addr", "add", a, "dev", i])?;
                        }
                    }
                }
                for (prefix, via) in &hop.routes {
                    ip(&["route", "add", prefix, "via", via])?;
                }
                for (side, addr, mac) in tester_neighbours(j, n) {
                    let addr = addr.to_string();
                    let mac = crate::dut::router::mac_text(mac);
                    let dev = &ifnames[side];
                    ip(&[
                        "neigh",
                        "replace",
                        &addr,
                        "lladdr",
                        &mac,
                        "dev",
                        dev,
                        "nud",
                        "permanent",
                    ])?;
                }
                let script = match kind {
                    VnfKind::KernelRouterNat => Some(format!(
                        "table ip l7nat {{\n  chain postrouting {{\n    type nat hook postrouting priority srcnat;\n    oifname {:?} masquerade\n  }}\n}}\n",
                        ifnames[1]
                    )),
                    VnfKind::KernelFirewall => {
                        Some(policy::seed004(n).nft(&ifnames[0], &ifnames[1]))
                    }
                    _ => None,
                };
                if let Some(script) = script {
                    nft_load(netns, &script)?;
                }
            }
            other => {
                return Err(Error::Invalid {
                    field: "kernel VNF",
                    value: other.name().into(),
                    expected: "kernel-bridge, kernel-router, kernel-router-nat or kernel-firewall"
                        .into(),
                })
            }
        }
        Ok(KernelVnf {
            kind: kind.clone(),
            netns: netns.to_string(),
            ifnames,
        })
    }

    /// Its placement record: no process (pid 0), the CPUs its receive work is steered to.
    pub(crate) fn placed(&self) -> PlacedProcess {
        let mut cpus = Vec::new();
        let mut notes = Vec::new();
        for i in &self.ifnames {
            let mask = crate::netns::rps_cpus_in(&self.netns, i).unwrap_or_else(|| "?".into());
            let list = u64::from_str_radix(&mask, 16)
                .ok()
                .filter(|m| *m != 0)
                .map(|m| {
                    (0..64)
                        .filter(|c| m & (1 << c) != 0)
                        .map(|c: u32| c.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                });
            if let Some(l) = &list {
                if !cpus.contains(l) {
                    cpus.push(l.clone());
                }
            }
            notes.push(format!("{i}: rps_cpus {mask}"));
        }
        PlacedProcess {
            role: "vnf".into(),
            name: self.kind.name().to_string(),
            pid: 0,
            cpus,
            note: format!(
                "kernel code in namespace {} (receive softirq, no process); {}",
                self.netns,
                notes.join(", ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_parse_round_trip_and_say_what_is_accepted() {
        let t: Topology = "chain-memif:testpmd-io+vecswitch+kernel-bridge"
            .parse()
            .unwrap();
        let Topology::Chain { link, vnfs } = &t else {
            panic!("{t:?}")
        };
        assert_eq!(*link, Link::Memif);
        assert_eq!(vnfs.len(), 3);
        assert_eq!(vnfs[0], VnfKind::TestpmdIo);
        assert!(is_kernel(&vnfs[2]));
        assert_eq!(
            t.to_string(),
            "chain-memif:testpmd-io+vecswitch-xconnect+kernel-bridge"
        );
        assert_eq!(t.to_string().parse::<Topology>().unwrap(), t);
        assert_eq!(t.chain().len(), 3);
        let t: Topology = "chain-veth:kernel-router".parse().unwrap();
        assert_eq!(t.link(), Link::Veth);
        for bad in [
            "chain",
            "chain-memif",
            "chain-tap:testpmd-io",
            "chain-memif:",
            "chain-memif:testpmd-io+frobnicator",
        ] {
            let e = bad.parse::<Topology>().unwrap_err().to_string();
            assert!(e.contains("expected"), "{bad}: {e}");
        }
        let e = "chain-memif:testpmd-io+frob"
            .parse::<Topology>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("frob") && e.contains("kernel-bridge"), "{e}");
    }

    #[test]
    fn routed_kinds_parse_and_fill_the_binary() {
        let t: Topology =
            "chain-veth:vecswitch-firewall+vecswitch-router-nat+kernel-firewall+kernel-router-nat"
                .parse()
                .unwrap();
        assert_eq!(t.to_string().parse::<Topology>().unwrap(), t);
        let v = t.chain();
        assert_eq!(routed::hops(&v), 4);
        assert_eq!(
            v.iter().filter(|k| routed::is_firewall(k)).count(),
            2,
            "{v:?}"
        );
        assert!(is_kernel(&v[2]) && !is_kernel(&v[1]));
        let bin = std::path::Path::new("/x/vecswitch");
        let filled = v[1].clone().with_vecswitch_bin(bin);
        assert_eq!(filled.vecswitch_path(), Some(bin));
        assert_eq!(v[3].vecswitch_path(), None);
        // Two kernel routers are fine now: each is its own hop.
        assert!("chain-veth:kernel-router+kernel-router"
            .parse::<Topology>()
            .is_ok());
        assert_eq!(
            vnf_ctl(std::path::Path::new("/r"), 0),
            PathBuf::from("/r/vnf.ctl")
        );
        assert_eq!(
            vnf_ctl(std::path::Path::new("/r"), 2),
            PathBuf::from("/r/vnf-3.ctl")
        );
    }

    #[test]
    fn vecswitch_vnf_configs_hold_their_hop_nat_and_policy() {
        let chain = vec![
            VnfKind::VecswitchFirewall {
                bin: PathBuf::new(),
            },
            VnfKind::VecswitchRouterNat {
                bin: PathBuf::new(),
            },
        ];
        let ends = |k: usize| -> Vec<PortEnd> {
            (0..2)
                .map(|s| PortEnd::Memif {
                    name: format!("v{}", 2 * k + s),
                    socket: PathBuf::from(format!("/r/vnf{}.sock", 2 * k + s)),
                    id: 0,
                    role: crate::topology::MemifRole::Client,
                })
                .collect()
        };
        let ctl = std::path::Path::new("/r/vnf.ctl");
        for k in 0..2 {
            let c = vecswitch_vnf_config(&chain[k], &chain, k, &ends(k), ctl, 1, None).unwrap();
            crate::dut::vecswitch::assert_valid_round_trip(&c);
        }
        let fw: toml::Table = vecswitch_vnf_toml(&chain[0], &chain, 0, &ends(0), ctl, 1)
            .unwrap()
            .parse()
            .unwrap();
        let nat: toml::Table = vecswitch_vnf_toml(&chain[1], &chain, 1, &ends(1), ctl, 1)
            .unwrap()
            .parse()
            .unwrap();
        let addrs = |t: &toml::Table| -> Vec<String> {
            t["ip"]["address"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    format!(
                        "{} {}",
                        a["interface"].as_str().unwrap(),
                        a["address"].as_str().unwrap()
                    )
                })
                .collect()
        };
        assert_eq!(
            addrs(&fw),
            [
                "v0 10.12.1.254/24",
                "v0 fd12:1::fe/64",
                "v1 10.12.2.253/24",
                "v1 fd12:2::fd/64"
            ]
        );
        assert_eq!(
            addrs(&nat),
            [
                "v2 10.12.2.254/24",
                "v2 fd12:2::fe/64",
                "v3 10.12.3.254/24",
                "v3 fd12:3::fe/64"
            ]
        );
        // The firewall reaches the server's subnet through the router; the router the client's
        // through the firewall.
        assert_eq!(
            fw["ip"]["route"][0]["prefix"].as_str(),
            Some("10.12.3.0/24")
        );
        assert_eq!(fw["ip"]["route"][0]["via"][0].as_str(), Some("10.12.2.254"));
        assert_eq!(
            nat["ip"]["route"][0]["via"][0].as_str(),
            Some("10.12.2.253")
        );
        assert_eq!(nat["nat44"]["outside"][0].as_str(), Some("v3"));
        // The built-in tester's static neighbours: its source on the first hop's left, its
        // sink on the last hop's right.
        let neigh = |t: &toml::Table| -> Vec<String> {
            t["ip"]["neighbor"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| {
                    format!(
                        "{} {} {}",
                        n["interface"].as_str().unwrap(),
                        n["ip"].as_str().unwrap(),
                        n["mac"].as_str().unwrap()
                    )
                })
                .collect()
        };
        assert_eq!(neigh(&fw), ["v0 10.12.1.100 02:12:00:00:01:00"]);
        assert_eq!(neigh(&nat), ["v3 10.12.3.100 02:12:00:00:01:01"]);
        assert!(nat.get("firewall").is_none() && fw.get("nat44").is_none());
        // The 100-rule policy, range rules once per family (chain/policy.rs).
        assert_eq!(fw["firewall"][0]["rules"].as_array().unwrap().len(), 193);
        assert_eq!(
            fw["firewall"][0]["rules"][0]["dst"].as_str(),
            Some("10.12.3.160/27")
        );
        // Fixed, distinct MACs; no cross-connect in a routed VNF.
        let macs: Vec<&str> = fw["port"]
            .as_array()
            .unwrap()
            .iter()
            .chain(nat["port"].as_array().unwrap())
            .map(|p| p["mac"].as_str().unwrap())
            .collect();
        assert_eq!(
            macs,
            [
                "02:12:00:00:00:00",
                "02:12:00:00:00:01",
                "02:12:00:00:00:02",
                "02:12:00:00:00:03"
            ]
        );
        assert!(fw.get("xconnect").is_none());
        let x = vecswitch_vnf_toml(
            &VnfKind::VecswitchXconnect {
                bin: PathBuf::new(),
            },
            &chain,
            0,
            &ends(0),
            ctl,
            1,
        )
        .unwrap();
        assert!(x.contains("[[xconnect]]") && !x.contains("[ip]"), "{x}");
    }

    #[test]
    fn interface_macs_come_from_show_interfaces() {
        let json = &crate::dut::vecswitch_router::interfaces_answer(&[
            ("v0", "02:fe:00:00:00:00"),
            ("v1", "02:fe:00:00:00:01"),
        ]);
        assert_eq!(
            interface_mac(json, "v1").as_deref(),
            Some("02:fe:00:00:00:01")
        );
        assert_eq!(interface_mac(json, "v9"), None);
        // An answer of another shape (fields renamed or missing) is not read.
        let partial = r#"{"ok":true,"data":[{"name":"v1","mac":"02:fe:00:00:00:01"}]}"#;
        assert_eq!(interface_mac(partial, "v1"), None);
        assert_eq!(interface_mac("nonsense", "v0"), None);
    }

    #[test]
    fn pvp_and_pvvp_are_chains_of_one_kind() {
        let t: Topology = "pvvp-memif".parse().unwrap();
        assert_eq!(t.chain(), vec![VnfKind::TestpmdMacswap; 2]);
        let t: Topology = "pvp-veth".parse().unwrap();
        assert_eq!(t.chain(), vec![VnfKind::TestpmdMacswap]);
        assert!("phy2phy-memif"
            .parse::<Topology>()
            .unwrap()
            .chain()
            .is_empty());
    }
}
