//! `vecswitch-xconnect` / `vecswitch-bridge`: the switch itself as the DUT.
//!
//! The driver writes a config (`<run dir>/dut.toml`, the schema of `vecswitch run --config`, see
//! `docs/CONTROL.md`; built as the switch's own [`Config`] by [`config_with`] and written by its
//! serializer, [`to_toml`]; the `show` answers it reads back are the switch's types too,
//! `answer_data`): one `[[port]]` per DUT port (memif servers or AF_PACKET on the DUT's veth
//! ends), and per port pair either an `[[xconnect]]` (E-Line) or a two-port `[[bridge]]` (E-LAN with
//! MAC learning). It runs `vecswitch run --config dut.toml` inside the DUT namespace, pinned to the
//! DUT CPU, and is ready when its memif sockets (or its control socket) exist. The binary path
//! comes from the caller (`current_exe()` in the CLI, `CARGO_BIN_EXE_vecswitch` in the CLI crate's
//! tests).
//!
//! Variants: `vecswitch-xconnect`, `vecswitch-bridge` and `vecswitch-router` (no service: `[ip]`
//! routing between the pair, see [`crate::dut::vecswitch_router`]) open veth ends as `af_packet` ports,
//! `vecswitch-xconnect-afxdp` as `af_xdp` ports (XDP mode `auto`: native on veth, so the DUT's
//! receive work runs in the sender's NAPI context). memif ends are the same in every variant.
//!
//! Worker scheduling: the driver starts the switch with `--worker-priority` [`WORKER_PRIORITY`]
//! (SCHED_FIFO 10 by default, [`WORKER_PRIORITY_ENV`] overrides it, `other` turns it off;
//! `other` too when the DUT's CPU is shared with a VNF or the generator, [`worker_priority_for`]). A
//! busy-polling worker at ordinary priority on a shared 2-core host is descheduled for tens of
//! milliseconds and its rings overflow (docs/BENCHMARKS.md §5); the policy the worker thread really
//! has, read back from `/proc`, is in the placement record's note
//! ([`crate::placement::thread_sched`]).
//!
//! Worker idle policy: `--worker-idle sleep` when the DUT's CPU is shared with another role
//! ([`worker_idle_for`]: PVP's VNF busy-polls the same CPU, and the switch's empty polls would
//! only keep it from the CPU, lengthening the round trip the rings between them must hold;
//! docs/TESTBED.md "Cores"), `poll` on a CPU of its own; [`WORKER_IDLE_ENV`] overrides it. The
//! placement note says which was asked.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use std::time::Duration;

use vecswitch_control::config::{self as ctl, Config, PortConfig};
use vecswitch_gen::StreamSpec;
use vecswitch_switch::ip::config::IpConfig;
use vecswitch_switch::l2::config::XconnectOffload;
use vecswitch_wire::EthernetAddress;

use crate::dut::counters::{sum_ports, DeviceCounters};
use crate::dut::router::TableLoad;
use crate::dut::vecswitch_router as vr;
use crate::dut::{placed, router, version_line, Dut, Scale};
use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::process::{ChildGuard, ProcessSpec};
use crate::topology::{MemifRole, PortEnd, Wiring};

pub(crate) use crate::dut::vecswitch_show::answer_data;
pub use crate::dut::vecswitch_show::{
    parse_internal_drops, parse_ports, parse_ring_full_polls, parse_runtime, parse_worker_window,
    ports_ready,
};

/// The worker scheduling the driver asks for unless [`WORKER_PRIORITY_ENV`] says otherwise.
pub const WORKER_PRIORITY: &str = "fifo:10";
/// Environment variable overriding [`WORKER_PRIORITY`] (`fifo:N`, `rr:N` or `other`).
pub const WORKER_PRIORITY_ENV: &str = "VECSWITCH_DUT_WORKER_PRIORITY";

/// The worker scheduling for a DUT on `w`: [`WORKER_PRIORITY_ENV`] if set; else
/// [`WORKER_PRIORITY`], unless the DUT's CPU is shared with another role (a VNF, or the generator
/// on a 1-CPU machine) — a real-time busy-polling worker would leave that role only the kernel's
/// RT-throttling remainder (5 %) — then `other`. Returns the setting and why it is not the default.
pub fn worker_priority_for(w: &Wiring) -> Result<(String, Option<&'static str>)> {
    if std::env::var_os(WORKER_PRIORITY_ENV).is_some() {
        return Ok((worker_priority_from_env()?, Some("set by the environment")));
    }
    if w.cores.dut == w.cores.generator {
        return Ok(("other".into(), Some("DUT CPU shared with the generator")));
    }
    if !w.vnf_ports.is_empty() && w.cores.dut == w.cores.vnf {
        return Ok(("other".into(), Some("DUT CPU shared with the VNF")));
    }
    Ok((WORKER_PRIORITY.to_string(), None))
}

/// Environment variable overriding the worker idle policy [`worker_idle_for`] chooses (`poll` or
/// `sleep`).
pub const WORKER_IDLE_ENV: &str = "VECSWITCH_DUT_WORKER_IDLE";

/// The worker idle policy for a DUT on `w` (`vecswitch run --worker-idle`): [`WORKER_IDLE_ENV`]
/// if set; else `sleep` when the DUT's CPU is shared with the VNF or the generator (the worker
/// leaves the CPU to the other task after every poll that found nothing), `busy` (never sleeps)
/// on a CPU of its own in phy2phy, `poll` (sleeps when idle) beside VNFs. Returns the setting and
/// why it is not `busy`.
pub fn worker_idle_for(w: &Wiring) -> Result<(String, Option<&'static str>)> {
    if let Some(v) = std::env::var_os(WORKER_IDLE_ENV) {
        let v = v.to_string_lossy().trim().to_ascii_lowercase();
        if !["poll", "busy", "sleep"].contains(&v.as_str()) {
            return Err(Error::Invalid {
                field: WORKER_IDLE_ENV,
                value: v,
                expected: "poll, busy or sleep".into(),
            });
        }
        return Ok((v, Some("set by the environment")));
    }
    if w.cores.dut == w.cores.generator {
        return Ok(("sleep".into(), Some("DUT CPU shared with the generator")));
    }
    if !w.vnf_ports.is_empty() && w.cores.dut == w.cores.vnf {
        return Ok(("sleep".into(), Some("DUT CPU shared with the VNF")));
    }
    // Alone on its CPU (phy2phy: no VNF of any kind, user-space or kernel, that may run there)
    // the worker never sleeps, as testpmd never does: a sleeping worker is woken late when the
    // host has halted its vCPU (docs/BENCHMARKS.md §14), and every trial begins after an idle
    // pause. With VNFs (PVP, chains, VMs) it sleeps when idle, so they get the CPU it leaves.
    let alone = matches!(
        w.topology,
        crate::topology::Topology::Phy2Phy { .. } | crate::topology::Topology::Phy2PhyLag { .. }
    );
    if alone {
        Ok(("busy".into(), None))
    } else {
        Ok(("poll".into(), Some("VNFs beside the DUT may use its CPU")))
    }
}

/// [`WORKER_PRIORITY_ENV`] if set, else [`WORKER_PRIORITY`]; checked here so that a typo fails
/// before anything starts (`vecswitch run` checks it again).
pub fn worker_priority_from_env() -> Result<String> {
    let v = std::env::var(WORKER_PRIORITY_ENV).unwrap_or_else(|_| WORKER_PRIORITY.to_string());
    let t = v.trim().to_ascii_lowercase();
    let ok = t == "other"
        || t.split_once(':').is_some_and(|(p, n)| {
            (p == "fifo" || p == "rr") && n.parse::<u8>().is_ok_and(|n| (1..=99).contains(&n))
        });
    if ok {
        Ok(t)
    } else {
        Err(Error::Invalid {
            field: WORKER_PRIORITY_ENV,
            value: v,
            expected: "fifo:N or rr:N with N in 1..=99, or other".into(),
        })
    }
}

/// Environment variable giving the DUT's af_xdp ports NAPI deferral, `N:US`
/// (`napi_defer_hard_irqs = N`, `gro_flush_timeout_us = US`, with the `busy_poll_us = 1` the port
/// requires with them; on veth the busy poll itself is inert): the receive NAPI of the DUT's veth
/// ends then runs once per `US` µs batch instead of once per frame (docs/BENCHMARKS.md §5,
/// "Where vecswitch AF_XDP's cycles go"). Unset: the ports' defaults (no deferral).
pub const AFXDP_NAPI_DEFER_ENV: &str = "VECSWITCH_DUT_AFXDP_NAPI_DEFER";

/// [`AFXDP_NAPI_DEFER_ENV`] parsed: `None` when unset, else `(napi_defer_hard_irqs,
/// gro_flush_timeout_us)`; an unparsable value names the variable and what is accepted.
pub fn afxdp_napi_defer_from_env() -> Result<Option<(u32, u32)>> {
    let Some(v) = std::env::var_os(AFXDP_NAPI_DEFER_ENV) else {
        return Ok(None);
    };
    let v = v.to_string_lossy().trim().to_string();
    parse_napi_defer(&v).map(Some).ok_or(Error::Invalid {
        field: AFXDP_NAPI_DEFER_ENV,
        value: v,
        expected: "N:US with N in 1..=100 and US in 1..=10000 (e.g. 2:20)".into(),
    })
}

fn parse_napi_defer(v: &str) -> Option<(u32, u32)> {
    let (n, us) = v.split_once(':')?;
    let (n, us): (u32, u32) = (n.trim().parse().ok()?, us.trim().parse().ok()?);
    ((1..=100).contains(&n) && (1..=10_000).contains(&us)).then_some((n, us))
}

/// `c` (a config of [`config_with`]) with every af_xdp port given NAPI deferral `defer` (see
/// [`AFXDP_NAPI_DEFER_ENV`]), and the `busy_poll_us = 1` the port requires with it; unchanged for
/// `None`.
pub fn with_afxdp_napi_defer(c: &mut Config, defer: Option<(u32, u32)>) {
    let Some((n, us)) = defer else {
        return;
    };
    for p in &mut c.ports {
        if let PortConfig::AfXdp(x) = p {
            x.busy_poll_us = Some(1);
            x.napi_defer_hard_irqs = Some(n);
            x.gro_flush_timeout_us = Some(us);
        }
    }
}

/// How the DUT opens the veth ends it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VethPort {
    /// `type = "af_packet"` (frame mode, the port's defaults).
    AfPacket,
    /// `type = "af_xdp"` (mode `auto`: native XDP on veth).
    AfXdp,
    /// `type = "af_xdp"`, and each `[[xconnect]]` between two veth ends forwarded in the kernel
    /// (`offload = "xdp"`: the ports' XDP programs redirect to each other; docs/CONTROL.md). The
    /// generator's ends get GRO (a NAPI, which redirected frames need), run where the DUT's
    /// redirect schedules it ([`crate::netns::give_gen_ends_napi`]).
    AfXdpOffload,
}

impl VethPort {
    fn type_name(self) -> &'static str {
        match self {
            VethPort::AfPacket => "af_packet",
            VethPort::AfXdp | VethPort::AfXdpOffload => "af_xdp",
        }
    }
}

/// How the DUT connects each port pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `[[xconnect]] ports = [a, b]`.
    Xconnect,
    /// `[[bridge]] ports = [a, b]` (learning bridge-domain per pair).
    Bridge,
    /// No service: `[ip]` routes the one pair ([`crate::dut::vecswitch_router`]).
    Router,
}

/// The TOML text of `c` as `vecswitch run --config` reads it (the switch's own serializer,
/// [`Config::to_toml`]), under a line naming the writer.
///
/// The scale sweeps' long lists — `[[ip.route]]` (fib-scale: 1M routes) and the last
/// bridge-domain's `[[bridge.static_mac]]` (mac-scale: 1M entries) — are serialized entry by
/// entry, each with the same serializer, after the rest of the config: the `toml` crate builds a
/// whole document in memory first, and for 1M routes that took 2.6 GB and 12 s (release build),
/// against ~70 MB of text; entry by entry, 220 MB and 2.5 s. Only those two array-of-tables
/// headers are written here; the unit tests read the result back with [`Config::from_toml`] and
/// compare it with `c`.
pub fn to_toml(c: &Config) -> String {
    let text = bulk_entries_apart(c).unwrap_or_else(|| c.to_toml());
    format!("# written by vecswitch-testbed\n{text}")
}

/// [`to_toml`]'s text with the routes and the last bridge-domain's static MACs written entry by
/// entry; `None` when an earlier bridge-domain has static MACs too (appended entries would join
/// the last one) or an entry does not serialize.
fn bulk_entries_apart(c: &Config) -> Option<String> {
    let (last, earlier) = c
        .bridges
        .split_last()
        .map_or((None, &[][..]), |(l, e)| (Some(l), e));
    if earlier.iter().any(|b| !b.static_mac.is_empty()) {
        return None;
    }
    // Every field named (no `..`): a section added to `Config` is a compile error here, not a
    // section left out of the file. The long lists are left empty, without being copied.
    let ip = &c.ip;
    let head = Config {
        switch: c.switch.clone(),
        ports: c.ports.clone(),
        bonds: c.bonds.clone(),
        subinterfaces: c.subinterfaces.clone(),
        xconnects: c.xconnects.clone(),
        bridges: c
            .bridges
            .iter()
            .map(|b| ctl::BridgeConfig {
                name: b.name.clone(),
                ports: b.ports.clone(),
                learn: b.learn,
                forward: b.forward,
                flood: b.flood,
                uu_flood: b.uu_flood,
                mac_age: b.mac_age,
                mac_limit: b.mac_limit,
                static_mac: Vec::new(),
            })
            .collect(),
        mtu: c.mtu.clone(),
        ip: IpConfig {
            allow_options: ip.allow_options,
            allow_hop_by_hop: ip.allow_hop_by_hop,
            icmp_errors_per_s: ip.icmp_errors_per_s,
            icmp_burst: ip.icmp_burst,
            neighbor_limit: ip.neighbor_limit,
            neighbor_age_s: ip.neighbor_age_s,
            arp_pending: ip.arp_pending,
            arp_max_requests: ip.arp_max_requests,
            address: ip.address.clone(),
            route: Vec::new(),
            neighbor: ip.neighbor.clone(),
        },
        nat44: c.nat44.clone(),
        firewall: c.firewall.clone(),
    };
    let mut s = toml::to_string(&head).ok()?;
    for r in &c.ip.route {
        s.push_str("\n[[ip.route]]\n");
        s.push_str(&toml::to_string(r).ok()?);
    }
    for m in last.map(|b| &b.static_mac[..]).unwrap_or_default() {
        s.push_str("\n[[bridge.static_mac]]\n");
        s.push_str(&toml::to_string(m).ok()?);
    }
    Some(s)
}

/// The `[[port]]` of `p`, veth ends opened as `veth`.
pub fn port_config(p: &PortEnd, veth: VethPort) -> PortConfig {
    let role = |r: MemifRole| match r {
        MemifRole::Server => ctl::MemifRole::Server,
        MemifRole::Client => ctl::MemifRole::Client,
    };
    match p {
        PortEnd::Memif {
            name,
            socket,
            id,
            role: r,
        } => {
            // Same ring sizes as testpmd's memif ports (see MEMIF_RING_SIZE_LOG2).
            let log2 = if crate::dut::testpmd::is_generator_link(name) {
                crate::dut::testpmd::MEMIF_RING_SIZE_LOG2
            } else {
                10
            };
            PortConfig::Memif(ctl::MemifPortConfig {
                name: name.clone(),
                socket: socket.display().to_string(),
                id: *id,
                role: role(*r),
                ring_size: 1u32 << log2,
                mode: ctl::MemifMode::Polling,
                buffer_size: ctl::DEFAULT_MEMIF_BUFFER_SIZE,
                secret: None,
                mac: None,
                admin: ctl::AdminState::Up,
            })
        }
        PortEnd::Veth { name, ifname, .. } => match veth {
            VethPort::AfPacket => PortConfig::AfPacket(ctl::AfPacketPortConfig::new(name, ifname)),
            VethPort::AfXdp | VethPort::AfXdpOffload => {
                PortConfig::AfXdp(ctl::AfXdpPortConfig::new(name, ifname))
            }
        },
        PortEnd::VhostUser {
            name,
            socket,
            role: r,
        } => PortConfig::VhostUser(ctl::VhostUserPortConfig {
            name: name.clone(),
            socket: socket.display().to_string(),
            role: role(*r),
            admin: ctl::AdminState::Up,
        }),
    }
}

/// The `vecswitch run` config for `ports`, connecting `pairs` (indexes into `ports`) with `mode`;
/// veth ends as `af_packet` ports.
pub fn config(
    ports: &[PortEnd],
    pairs: &[(usize, usize)],
    mode: Mode,
    control_socket: &Path,
    worker_cpu: Option<usize>,
) -> Config {
    config_with(
        ports,
        pairs,
        mode,
        control_socket,
        worker_cpu,
        VethPort::AfPacket,
    )
}

/// [`config`] with veth ends opened as `veth`.
pub fn config_with(
    ports: &[PortEnd],
    pairs: &[(usize, usize)],
    mode: Mode,
    control_socket: &Path,
    worker_cpu: Option<usize>,
    veth: VethPort,
) -> Config {
    let mut c = Config::default();
    c.switch.control_socket = control_socket.display().to_string();
    c.switch.worker_cpu = worker_cpu.and_then(|cpu| u32::try_from(cpu).ok());
    c.ports = ports.iter().map(|p| port_config(p, veth)).collect();
    for (n, (pa, pb)) in pairs.iter().enumerate() {
        let (a, b) = (ports[*pa].name(), ports[*pb].name());
        match mode {
            Mode::Xconnect => {
                let mut x = ctl::XconnectConfig::both(a, b);
                let both_veth = [&ports[*pa], &ports[*pb]]
                    .iter()
                    .all(|p| matches!(p, PortEnd::Veth { .. }));
                if veth == VethPort::AfXdpOffload && both_veth {
                    x.offload = XconnectOffload::Xdp;
                }
                c.xconnects.push(x);
            }
            Mode::Bridge => {
                let mut br = ctl::BridgeConfig::new(&format!("br{n}"));
                br.ports = vec![a.to_string(), b.to_string()];
                c.bridges.push(br);
            }
            Mode::Router => {}
        }
    }
    c
}

/// Writes `toml` to `path` and applies it to the switch serving `ctl` (`vecswitch ctl reload`,
/// waiting up to `timeout_s` for the answer).
pub(crate) fn write_and_reload(
    bin: &Path,
    ctl: &Path,
    path: &Path,
    toml: &str,
    timeout_s: u32,
) -> Result<()> {
    std::fs::write(path, toml).map_err(|source| Error::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    })?;
    crate::cmd::run(
        &bin.display().to_string(),
        &[
            "ctl",
            "--socket",
            &ctl.display().to_string(),
            "--timeout",
            &timeout_s.to_string(),
            "reload",
            &path.display().to_string(),
        ],
    )
    .map(|_| ())
}

/// Waits until the switch serves its control socket and reports every port of `ports`, with the
/// kernel-interface (af_packet) ones link-up. The socket file alone is not enough: `vecswitch run`
/// binds it *before* it applies the config, and frames sent to a veth end before the switch's
/// AF_PACKET socket exists are gone. memif ports only need to exist: their link comes up when the
/// peer (the generator, a memif server polled by the generator's thread) answers.
pub fn wait_ready(bin: &Path, child: &mut ChildGuard, ctl: &Path, ports: &[PortEnd]) -> Result<()> {
    child.wait_for_path(ctl, Duration::from_secs(20))?;
    let bin = bin.display().to_string();
    let sock = ctl.display().to_string();
    let what = format!("{} to report its ports on {sock}", child.name());
    let mut last = String::new();
    let r = crate::cmd::wait_for_result(&what, Duration::from_secs(20), || {
        child.check_alive()?;
        let Ok(out) = crate::cmd::run(
            &bin,
            &[
                "ctl",
                "--socket",
                &sock,
                "--json",
                "--timeout",
                "5",
                "show",
                "ports",
            ],
        ) else {
            return Ok(false);
        };
        last = out.clone();
        Ok(ports_ready(&out, ports))
    });
    match r {
        Err(Error::Timeout { what, timeout }) => Err(Error::Timeout {
            what: format!("{what}; last answer: {last}"),
            timeout,
        }),
        r => r,
    }
}

/// The names of the DUT ports on the generator's links (the first `gen_ports.len()` DUT ports,
/// see [`Wiring::dut_ports`]).
pub(crate) fn facing_names(w: &Wiring) -> Vec<String> {
    w.dut_ports
        .iter()
        .take(w.gen_ports.len())
        .map(|p| p.name().to_string())
        .collect()
}

/// The kinds of the DUT's ports as its config opens them, for the placement note, in order of
/// first appearance: `memif ports` (pvp-memif), `memif ports, vhost_user ports` (pvp-virtio),
/// `veth ports af_packet` (veth ends as `veth`'s type).
pub fn port_kinds(ports: &[PortEnd], veth: VethPort) -> String {
    let mut kinds: Vec<String> = Vec::new();
    for p in ports {
        let k = match p {
            PortEnd::Memif { .. } => "memif ports".to_string(),
            PortEnd::VhostUser { .. } => "vhost_user ports".to_string(),
            PortEnd::Veth { .. } => format!("veth ports {}", veth.type_name()),
        };
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    kinds.join(", ")
}

/// The vecswitch DUT.
#[derive(Debug)]
pub struct VecswitchDut {
    bin: PathBuf,
    mode: Mode,
    veth: VethPort,
    /// `--worker-priority` given to `vecswitch run`, and why it is not the default.
    worker_priority: Option<(String, Option<&'static str>)>,
    /// `--worker-idle` given to `vecswitch run`, and why it is not `poll`.
    worker_idle: Option<(String, Option<&'static str>)>,
    child: Option<ChildGuard>,
    config: Option<PathBuf>,
    wiring: Option<Wiring>,
    /// The last scale applied (a router starts with [`Scale::Routes`]`(1)`).
    scale: Option<Scale>,
    /// Router: the ingress interface's MAC, read back after start.
    ingress_mac: Option<[u8; 6]>,
    /// Router: every route set loaded, in order.
    route_loads: Vec<TableLoad>,
    /// [`VethPort::AfXdpOffload`]: how the generator's ends were given a NAPI (placement note).
    gen_napi: Vec<String>,
    /// The switch clock of the last `show runtime` reading (long gaps after it are the next
    /// reading's); `None` for a freshly started switch.
    runtime_read_ns: Option<u64>,
}

/// MAC table entries of a bridge DUT: room for the 1M-entry scale point and the stations
/// learned beside it (the table's default is 2^20).
pub const BRIDGE_MAC_TABLE_ENTRIES: u32 = 1 << 21;

/// `c` with `n` static MAC entries ([`crate::dut::linux_bridge::scale_mac`]) in its last
/// bridge-domain, on that bridge-domain's second port.
fn with_static_macs(c: &mut Config, n: u32) {
    if let Some(br) = c.bridges.last_mut() {
        let port = br.ports.get(1).cloned().unwrap_or_default();
        br.static_mac = (0..n)
            .map(|i| ctl::StaticMacConfig {
                mac: EthernetAddress(crate::dut::linux_bridge::scale_mac_bytes(i)),
                port: port.clone(),
            })
            .collect();
    }
}

impl VecswitchDut {
    /// veth ends as `af_packet` ports.
    pub fn new(bin: PathBuf, mode: Mode) -> VecswitchDut {
        VecswitchDut::with_veth(bin, mode, VethPort::AfPacket)
    }

    /// veth ends opened as `veth`.
    pub fn with_veth(bin: PathBuf, mode: Mode, veth: VethPort) -> VecswitchDut {
        VecswitchDut {
            bin,
            mode,
            veth,
            worker_priority: None,
            worker_idle: None,
            child: None,
            config: None,
            wiring: None,
            scale: None,
            ingress_mac: None,
            route_loads: Vec::new(),
            gen_napi: Vec::new(),
            runtime_read_ns: None,
        }
    }

    /// The `vecswitch run` config of this driver on `w` (a router with `routes` routes).
    fn config_for(&self, w: &Wiring, ctl: &Path, routes: u32) -> Result<Config> {
        let mut c = config_with(
            &w.dut_ports,
            &w.pairs,
            self.mode,
            ctl,
            Some(w.cores.dut),
            self.veth,
        );
        if matches!(self.veth, VethPort::AfXdp | VethPort::AfXdpOffload) {
            with_afxdp_napi_defer(&mut c, afxdp_napi_defer_from_env()?);
        }
        match self.mode {
            Mode::Xconnect => {}
            Mode::Bridge => c.switch.mac_table_entries = BRIDGE_MAC_TABLE_ENTRIES,
            Mode::Router => {
                let pair = router::routed_pair(self.name(), w)?;
                c.ip = vr::ip_config(w, pair, routes);
            }
        }
        Ok(c)
    }

    /// Router: loads `n` routes (see [`crate::dut::vecswitch_router`]).
    fn load_routes(&mut self, n: u32) -> Result<()> {
        let n = router::check_routes(self.name(), n)?;
        let (w, path) = self.state()?;
        let ctl = w.run_dir.join("dut.ctl");
        let toml = to_toml(&self.config_for(&w, &ctl, n)?);
        write_file(&path, &toml)?;
        let t0 = std::time::Instant::now();
        crate::cmd::run(
            &self.bin.display().to_string(),
            &[
                "ctl",
                "--socket",
                &ctl.display().to_string(),
                "--timeout",
                &vr::RELOAD_TIMEOUT.as_secs().to_string(),
                "reload",
                &path.display().to_string(),
            ],
        )?;
        let fib = self.show(&w, "ip fib 0 1")?;
        let (routes, fib_bytes) = vr::fib_routes(&fib).ok_or_else(|| unreadable("ip fib", &fib))?;
        if routes < u64::from(n) + vr::OWN_ROUTES {
            return Err(Error::Invalid {
                field: "vecswitch routes after reload",
                value: routes.to_string(),
                expected: format!(
                    "{n} routes + {} of the interfaces' own (show ip fib)",
                    vr::OWN_ROUTES
                ),
            });
        }
        let load = TableLoad::done(self.name(), (self.current_routes(), n), t0, fib_bytes);
        self.route_loads.push(load);
        self.scale = Some(Scale::Routes(n));
        Ok(())
    }

    /// Routes loaded now (router).
    fn current_routes(&self) -> u32 {
        match self.scale {
            Some(Scale::Routes(n)) => n,
            _ => 0,
        }
    }

    /// The wiring and config path of a set-up driver.
    fn state(&self) -> Result<(Wiring, PathBuf)> {
        match (self.wiring.clone(), self.config.clone()) {
            (Some(w), Some(p)) => Ok((w, p)),
            _ => Err(Error::Invalid {
                field: "vecswitch state",
                value: "not set up".into(),
                expected: "configure_scale after setup".into(),
            }),
        }
    }

    /// The config file written by `setup`.
    pub fn config_path(&self) -> Option<&Path> {
        self.config.as_deref()
    }

    /// `vecswitch ctl --json show <what>` on the running switch (`what` may be several words).
    fn show(&self, w: &Wiring, what: &str) -> Result<String> {
        let ctl = w.run_dir.join("dut.ctl").display().to_string();
        let mut args = vec!["ctl", "--socket", &ctl, "--json", "--timeout", "5", "show"];
        args.extend(what.split_whitespace());
        crate::cmd::run(&self.bin.display().to_string(), &args)
    }
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    })
}

/// An answer of `show <what>` the driver could not read.
fn unreadable(what: &str, answer: &str) -> Error {
    Error::Invalid {
        field: "vecswitch ctl answer",
        value: format!(
            "show {what}: {}",
            answer.chars().take(200).collect::<String>()
        ),
        expected: "the JSON of `vecswitch ctl --json show ports|errors|runtime` (docs/CONTROL.md)"
            .into(),
    }
}

impl Dut for VecswitchDut {
    fn name(&self) -> &str {
        match (self.mode, self.veth) {
            (Mode::Xconnect, VethPort::AfPacket) => "vecswitch-xconnect",
            (Mode::Xconnect, VethPort::AfXdp) => "vecswitch-xconnect-afxdp",
            (Mode::Xconnect, VethPort::AfXdpOffload) => "vecswitch-xconnect-xdp",
            (Mode::Bridge, VethPort::AfXdpOffload) => "vecswitch-bridge-afxdp (no offload)",
            (Mode::Router, VethPort::AfXdpOffload) => "vecswitch-router-afxdp (no offload)",
            (Mode::Bridge, VethPort::AfPacket) => "vecswitch-bridge",
            (Mode::Bridge, VethPort::AfXdp) => "vecswitch-bridge-afxdp",
            (Mode::Router, VethPort::AfPacket) => "vecswitch-router",
            (Mode::Router, VethPort::AfXdp) => "vecswitch-router-afxdp",
        }
    }

    fn describe(&self) -> String {
        let bin = self.bin.display().to_string();
        format!(
            "{} ({})",
            version_line(&bin, &["--version"]),
            crate::dut::kernel()
        )
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        if !self.bin.is_file() {
            return Err(Error::Invalid {
                field: "vecswitch binary",
                value: self.bin.display().to_string(),
                expected:
                    "the path of a built `vecswitch` executable (cargo build -p vecswitch-cli)"
                        .into(),
            });
        }
        let (prio, why) = worker_priority_for(w)?;
        let idle = worker_idle_for(w)?;
        self.runtime_read_ns = None;
        let ctl = w.run_dir.join("dut.ctl");
        let toml = to_toml(&self.config_for(w, &ctl, 1)?);
        let path = w.run_dir.join("dut.toml");
        write_file(&path, &toml)?;
        self.config = Some(path.clone());
        self.wiring = Some(w.clone());
        let spec = ProcessSpec::new("dut-vecswitch", &self.bin.display().to_string())
            .args([
                "run".to_string(),
                "--config".into(),
                path.display().to_string(),
                "--worker-priority".into(),
                prio.clone(),
                "--worker-idle".into(),
                idle.0.clone(),
            ])
            .netns(Some(&w.dut_netns))
            .cpus(Some(vec![w.cores.dut]));
        if self.veth == VethPort::AfXdpOffload {
            self.gen_napi = crate::netns::give_gen_ends_napi(w)?;
        }
        let mut child = ChildGuard::spawn(&spec, &w.run_dir)?;
        let r = wait_ready(&self.bin, &mut child, &ctl, &w.dut_ports);
        self.child = Some(child);
        self.worker_priority = Some((prio, why));
        self.worker_idle = Some(idle);
        r?;
        if self.mode == Mode::Router {
            let (ingress, _) = router::routed_pair(self.name(), w)?;
            let ifs = self.show(w, "interfaces")?;
            let name = w.dut_ports[ingress].name();
            self.ingress_mac =
                Some(vr::interface_mac(&ifs, name).ok_or_else(|| unreadable("interfaces", &ifs))?);
            self.scale = Some(Scale::Routes(1));
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        if let Some(mut c) = self.child.take() {
            c.stop(Duration::from_secs(3));
        }
        Ok(())
    }

    /// [`Scale::MacEntries`] (bridge mode): rewrites the config with that many static MAC entries
    /// in the last bridge-domain, on its second port, and applies it with `vecswitch ctl reload`
    /// (one reload instead of one `mac add` per entry); the traffic's destinations are then
    /// spread over them ([`Dut::shape_streams`]). [`Scale::Routes`] (router mode): the same with
    /// that many routes ([`crate::dut::vecswitch_router`]).
    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        let unsupported = |why: &str| Error::Unsupported {
            dut: self.name().to_string(),
            what: format!("{scale:?}"),
            why: why.to_string(),
        };
        let n = match (scale, self.mode) {
            (Scale::Routes(n), Mode::Router) => return self.load_routes(n),
            (Scale::Routes(_), _) => {
                return Err(unsupported("only vecswitch-router has routes"));
            }
            (Scale::MacEntries(n), Mode::Bridge) => n,
            (Scale::MacEntries(_), _) => {
                return Err(unsupported(
                    "a cross-connect or router has no MAC table; use vecswitch-bridge",
                ));
            }
            (Scale::Sessions(_) | Scale::Rules(_), _) => {
                return Err(unsupported(
                    "sessions and rules are vecswitch-router-nat's and -fw's (dut::nat, dut::firewall)",
                ));
            }
            (Scale::Flows(_), _) => {
                return Err(unsupported("vecswitch has MAC tables, not flow tables"));
            }
        };
        let (w, path) = self.state()?;
        let ctl = w.run_dir.join("dut.ctl");
        let mut c = self.config_for(&w, &ctl, 1)?;
        with_static_macs(&mut c, n);
        write_file(&path, &to_toml(&c))?;
        crate::cmd::run(
            &self.bin.display().to_string(),
            &[
                "ctl",
                "--socket",
                &ctl.display().to_string(),
                "--timeout",
                "120",
                "reload",
                &path.display().to_string(),
            ],
        )?;
        self.scale = Some(scale);
        Ok(())
    }

    /// Bridge at [`Scale::MacEntries`]: destination MACs spread over the static entries (on the
    /// last pair, when both its ends face the generator). Router: to the ingress MAC, over the
    /// routes ([`router::shape`]).
    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        let Some(w) = &self.wiring else {
            return Ok(());
        };
        match (self.mode, self.scale) {
            (Mode::Bridge, Some(s @ Scale::MacEntries(n))) if n > 0 => {
                if let Some(&(a, b)) = w
                    .pairs
                    .last()
                    .filter(|(a, b)| *a < w.gen_ports.len() && *b < w.gen_ports.len())
                {
                    crate::dut::spread_dst_macs(
                        streams,
                        (a, b),
                        crate::dut::SCALE_MAC_BASE,
                        s.destinations().unwrap_or(1),
                    );
                }
                Ok(())
            }
            (Mode::Router, Some(Scale::Routes(n))) => {
                let pair = router::routed_pair(self.name(), w)?;
                let mac = self.ingress_mac.ok_or_else(|| Error::Invalid {
                    field: "vecswitch-router ingress MAC",
                    value: "unknown".into(),
                    expected: "setup to have read it from show interfaces".into(),
                })?;
                router::shape(streams, pair, mac, n)
            }
            _ => Ok(()),
        }
    }

    /// The note says which scheduling the worker thread has, read back from `/proc` (not the
    /// one asked for), its idle policy, and the port types ([`port_kinds`]).
    fn processes(&self) -> Vec<PlacedProcess> {
        self.child
            .iter()
            .map(|c| {
                let sched = crate::placement::thread_sched(c.pid(), "vecswitch-worker")
                    .unwrap_or_else(|| "unknown (thread not found)".into());
                let asked = |s: &Option<(String, Option<&'static str>)>| match s {
                    Some((p, None)) => p.clone(),
                    Some((p, Some(why))) => format!("{p}: {why}"),
                    None => "-".into(),
                };
                let ports = self
                    .wiring
                    .as_ref()
                    .map(|w| port_kinds(&w.dut_ports, self.veth))
                    .unwrap_or_default();
                let mut note = format!(
                    "worker {sched} (asked {}), idle {}; {ports}",
                    asked(&self.worker_priority),
                    asked(&self.worker_idle)
                );
                if let (VethPort::AfXdp, Ok(Some((n, us)))) =
                    (self.veth, afxdp_napi_defer_from_env())
                {
                    let _ = write!(
                        note,
                        " with napi_defer_hard_irqs {n}, gro_flush_timeout {us} us ({AFXDP_NAPI_DEFER_ENV})"
                    );
                }
                if !self.gen_napi.is_empty() {
                    let _ = write!(
                        note,
                        "; xconnect offload = xdp (in-kernel redirect); generator ends: {}",
                        self.gen_napi.join(", ")
                    );
                }
                if !self.route_loads.is_empty() {
                    let _ = write!(
                        note,
                        "; routes loaded (ctl reload): {}",
                        TableLoad::list(&self.route_loads)
                    );
                }
                placed(c, &note)
            })
            .collect()
    }

    fn check_alive(&mut self) -> Result<()> {
        match &mut self.child {
            Some(c) => c.check_alive(),
            None => Ok(()),
        }
    }

    /// Ports on the generator's links (rx, tx, rx ring drops, tx-failed), the drop reasons of
    /// `show errors` (internal), the poll loop's busy clocks and idle polls of `show runtime`.
    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        let Some(w) = self.wiring.clone() else {
            return Ok(None);
        };
        if self.child.is_none() {
            return Ok(None);
        }
        let ports = self.show(&w, "ports")?;
        let errors = self.show(&w, "errors")?;
        let runtime = self.show(&w, "runtime")?;
        let p = parse_ports(&ports).ok_or_else(|| unreadable("ports", &ports))?;
        let internal =
            parse_internal_drops(&errors).ok_or_else(|| unreadable("errors", &errors))?;
        let (busy, idle, polls) =
            parse_runtime(&runtime).ok_or_else(|| unreadable("runtime", &runtime))?;
        let mut c = sum_ports(&p, &facing_names(&w), Some(internal))
            .ok_or_else(|| unreadable("ports", &ports))?;
        c.busy_clocks = Some(busy);
        c.idle_polls = Some(idle);
        c.total_polls = Some(polls);
        c.rx_ring_full_polls = parse_ring_full_polls(&ports, &facing_names(&w));
        if let Some((worker, now)) = parse_worker_window(&runtime, self.runtime_read_ns) {
            c.worker = Some(worker);
            self.runtime_read_ns = Some(now);
        }
        Ok(Some(c))
    }

    /// `vecswitch ctl mac flush brN` for each bridge-domain (bridge mode only).
    fn flush_mac_table(&mut self) -> Result<()> {
        let Some(w) = self.wiring.clone().filter(|_| self.mode == Mode::Bridge) else {
            return Err(Error::Unsupported {
                dut: self.name().to_string(),
                what: "flushing learned MAC addresses".into(),
                why: "a cross-connect (or a switch not set up) has no MAC table; use vecswitch-bridge".into(),
            });
        };
        let ctl = w.run_dir.join("dut.ctl").display().to_string();
        for n in 0..w.pairs.len() {
            crate::cmd::run(
                &self.bin.display().to_string(),
                &[
                    "ctl",
                    "--socket",
                    &ctl,
                    "--timeout",
                    "5",
                    "mac",
                    "flush",
                    &format!("br{n}"),
                ],
            )?;
        }
        Ok(())
    }
}

/// That `c`, written as [`to_toml`], reads back with the switch's own parser
/// ([`Config::from_toml`]) to an equal config.
#[cfg(test)]
pub(crate) fn assert_round_trip(c: &Config) {
    let text = to_toml(c);
    let back = Config::from_toml(&text, "testbed").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(&back, c, "{text}");
}

/// [`assert_round_trip`], and the config passes the switch's whole-config validation
/// (`vecswitch_control::validate`: what `vecswitch run` and `ctl reload` check before applying).
#[cfg(test)]
pub(crate) fn assert_valid_round_trip(c: &Config) {
    assert_round_trip(c);
    if let Err(e) = vecswitch_control::validate::validate(c) {
        panic!("{e}\n{}", to_toml(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dut::counters::PortCounts;
    use crate::topology::MemifRole;

    /// `vecswitch-xconnect-xdp`: a pair of veth ends gets `offload = "xdp"` and parses as such;
    /// a pair with a memif end stays in the switch (offload needs two af_xdp ports).
    #[test]
    fn offload_variant_offloads_veth_pairs_only() {
        let veth = |n: &str| PortEnd::Veth {
            name: n.into(),
            netns: "ns".into(),
            ifname: n.into(),
            mac: "02:00:00:00:00:01".into(),
        };
        let memif = PortEnd::Memif {
            name: "phy0".into(),
            socket: "/r/phy0.sock".into(),
            id: 0,
            role: MemifRole::Server,
        };
        let ctl = Path::new("/r/dut.ctl");
        let ports = vec![veth("dut0"), veth("dut1"), memif];
        let c = config_with(
            &ports,
            &[(0, 1), (2, 1)],
            Mode::Xconnect,
            ctl,
            Some(1),
            VethPort::AfXdpOffload,
        );
        // (dut1 in two cross-connects: parsed back, not validated.)
        assert_round_trip(&c);
        let t = to_toml(&c);
        assert_eq!(c.xconnects[0].offload, XconnectOffload::Xdp, "{t}");
        assert_eq!(c.xconnects[1].offload, XconnectOffload::None, "{t}");
        assert_eq!(t.matches("offload = \"xdp\"").count(), 1, "{t}");
        assert_eq!(c.ports[0].type_name(), "af_xdp");
        let plain = config_with(
            &ports,
            &[(0, 1)],
            Mode::Xconnect,
            ctl,
            Some(1),
            VethPort::AfXdp,
        );
        assert_valid_round_trip(&plain);
        assert!(!to_toml(&plain).contains("offload"), "{plain:?}");
    }

    #[test]
    fn xconnect_config_for_memif_and_veth() {
        let ports = vec![
            PortEnd::Memif {
                name: "phy0".into(),
                socket: "/r/phy0.sock".into(),
                id: 0,
                role: MemifRole::Server,
            },
            PortEnd::Veth {
                name: "dut1".into(),
                netns: "ns".into(),
                ifname: "dut1".into(),
                mac: "02:00:00:00:00:01".into(),
            },
        ];
        let c = config(
            &ports,
            &[(0, 1)],
            Mode::Xconnect,
            Path::new("/r/dut.ctl"),
            Some(1),
        );
        assert_valid_round_trip(&c);
        let t = to_toml(&c);
        // The switch's serializer writes every key, defaults included.
        let expected = "\
# written by vecswitch-testbed
[switch]
buffers = 16384
control_socket = \"/r/dut.ctl\"
worker_cpu = 1
mac_table_entries = 1048576

[[port]]
type = \"memif\"
name = \"phy0\"
socket = \"/r/phy0.sock\"
id = 0
role = \"server\"
ring_size = 4096
mode = \"polling\"
buffer_size = 2048
admin = \"up\"

[[port]]
type = \"af_packet\"
name = \"dut1\"
interface = \"dut1\"
admin = \"up\"

[[xconnect]]
ports = [\"phy0\", \"dut1\"]
";
        assert_eq!(t, expected);
    }

    /// A memif server end named `n`.
    fn memif(n: &str) -> PortEnd {
        PortEnd::Memif {
            name: n.into(),
            socket: format!("/r/{n}.sock").into(),
            id: 0,
            role: MemifRole::Server,
        }
    }

    #[test]
    fn worker_priority_is_real_time_only_on_a_cpu_of_its_own() {
        if std::env::var_os(WORKER_PRIORITY_ENV).is_some() {
            return; // the environment decides; covered by worker_priority_from_env
        }
        let mut w = crate::dut::test_wiring();
        assert_eq!(worker_priority_for(&w).unwrap(), ("fifo:10".into(), None));
        w.vnf_ports = vec![memif("vnf0"), memif("vnf1")];
        let (p, why) = worker_priority_for(&w).unwrap();
        assert_eq!(
            (p.as_str(), why),
            ("other", Some("DUT CPU shared with the VNF"))
        );
        w.vnf_ports.clear();
        w.cores.dut = 0;
        assert_eq!(worker_priority_for(&w).unwrap().0, "other");
    }

    /// The placement note names the ports the DUT really opened: a pvp-memif switch has no veth
    /// ports (the note said `veth ports af_packet` for every topology).
    #[test]
    fn port_kinds_name_what_the_config_opens() {
        let vhost = |n: &str| PortEnd::VhostUser {
            name: n.into(),
            socket: format!("/r/{n}.sock").into(),
            role: MemifRole::Server,
        };
        let veth = PortEnd::Veth {
            name: "dut0".into(),
            netns: "ns".into(),
            ifname: "dut0".into(),
            mac: String::new(),
        };
        let pvp_memif = [memif("phy0"), memif("phy1"), memif("vnf0"), memif("vnf1")];
        assert_eq!(port_kinds(&pvp_memif, VethPort::AfPacket), "memif ports");
        let pvp_virtio = [memif("phy0"), memif("phy1"), vhost("vnf0"), vhost("vnf1")];
        assert_eq!(
            port_kinds(&pvp_virtio, VethPort::AfPacket),
            "memif ports, vhost_user ports"
        );
        let pvp_veth = [veth.clone(), memif("vnf0")];
        assert_eq!(
            port_kinds(&pvp_veth, VethPort::AfXdp),
            "veth ports af_xdp, memif ports"
        );
    }

    #[test]
    fn afxdp_ports_take_napi_deferral_when_asked() {
        assert_eq!(parse_napi_defer("2:20"), Some((2, 20)));
        assert_eq!(parse_napi_defer(" 10 : 200 "), Some((10, 200)));
        for bad in ["", "2", "0:20", "2:0", "101:20", "2:10001", "a:b", "2:20:3"] {
            assert_eq!(parse_napi_defer(bad), None, "{bad:?}");
        }
        let veth = PortEnd::Veth {
            name: "a".into(),
            netns: "ns".into(),
            ifname: "dut0".into(),
            mac: String::new(),
        };
        let c = config_with(
            &[veth, memif("m")],
            &[(0, 1)],
            Mode::Xconnect,
            Path::new("/r/dut.ctl"),
            None,
            VethPort::AfXdp,
        );
        let mut same = c.clone();
        with_afxdp_napi_defer(&mut same, None);
        assert_eq!(same, c);
        let mut d = c.clone();
        with_afxdp_napi_defer(&mut d, Some((2, 20)));
        let PortConfig::AfXdp(x) = &d.ports[0] else {
            panic!("expected af_xdp, got {:?}", d.ports[0]);
        };
        assert_eq!(x.interface, "dut0");
        assert_eq!(
            (
                x.busy_poll_us,
                x.napi_defer_hard_irqs,
                x.gro_flush_timeout_us
            ),
            (Some(1), Some(2), Some(20))
        );
        assert_eq!(d.ports[1], c.ports[1], "the memif port is left alone");
        let t = to_toml(&d);
        assert_eq!(t.matches("napi_defer_hard_irqs").count(), 1, "{t}");
        // The switch's parser and validation take these keys.
        assert_valid_round_trip(&d);
    }

    #[test]
    fn worker_sleeps_when_idle_only_on_a_shared_cpu() {
        if std::env::var_os(WORKER_IDLE_ENV).is_some() {
            return; // the environment decides
        }
        let mut w = crate::dut::test_wiring();
        // On a CPU of its own it never sleeps (docs/BENCHMARKS.md §14).
        assert_eq!(worker_idle_for(&w).unwrap(), ("busy".into(), None));
        w.vnf_ports = vec![memif("vnf0"), memif("vnf1")];
        assert_eq!(
            worker_idle_for(&w).unwrap(),
            ("sleep".into(), Some("DUT CPU shared with the VNF"))
        );
        w.vnf_ports.clear();
        w.cores.dut = w.cores.generator;
        assert_eq!(worker_idle_for(&w).unwrap().0, "sleep");
    }

    #[test]
    fn readiness_needs_every_port_and_af_packet_link_up() {
        let ports = vec![
            PortEnd::Memif {
                name: "phy0".into(),
                socket: "/r/phy0.sock".into(),
                id: 0,
                role: MemifRole::Client,
            },
            PortEnd::Veth {
                name: "dut1".into(),
                netns: "ns".into(),
                ifname: "dut1".into(),
                mac: String::new(),
            },
        ];
        use vecswitch_ports::LinkState::{Down, Up};
        let ans = |links: &[(&str, vecswitch_ports::LinkState)]| {
            answer(
                &links
                    .iter()
                    .map(|(n, l)| port_info(n, *l))
                    .collect::<Vec<_>>(),
            )
        };
        assert!(ports_ready(&ans(&[("phy0", Down), ("dut1", Up)]), &ports));
        assert!(!ports_ready(&ans(&[("phy0", Up), ("dut1", Down)]), &ports));
        assert!(!ports_ready(&ans(&[("phy0", Up)]), &ports));
        assert!(!ports_ready("not json", &ports));
        // An answer in another shape (a renamed field) is not read as "no such port".
        assert!(!ports_ready(
            r#"{"ok":true,"data":[{"name":"phy0","link":"up"},{"name":"dut1","link":"up"}]}"#,
            &ports
        ));
    }

    /// A `ctl --json` answer carrying `data`, as the control socket writes it.
    fn answer<T: serde::Serialize>(data: &T) -> String {
        serde_json::json!({ "ok": true, "data": data }).to_string()
    }

    /// One line of `show ports`, the switch's own type.
    fn port_info(name: &str, link: vecswitch_ports::LinkState) -> vecswitch_switch::PortInfo {
        vecswitch_switch::PortInfo {
            index: 0,
            name: name.into(),
            admin_up: true,
            link,
            service: vecswitch_switch::ServiceInfo::None,
            stats: vecswitch_ports::PortStats::default(),
            describe: String::new(),
            rx_ring: None,
            capture: None,
        }
    }

    /// Captured from `vecswitch ctl --json show ports|errors|runtime` of an xconnect between two
    /// memif ports fed by `dpdk-testpmd --forward-mode=txonly` (which does not receive, so the
    /// switch's transmit failed), 2026-11-23; `busy_ns` and `max_poll_gap_ns` added by hand to
    /// the runtime answer of a switch built before those counters existed.
    const PORTS: &str = r#"{"ok":true,"data":[{"admin_up":true,"capture":null,"describe":"memif server socket=/tmp/devcap18224/a.sock id=0 ring=1024 (2^10) buffer=2048 mode=polling state=connected peer=\"DPDK 22.11.11\"/\"net_memif0\"","index":0,"link":"up","name":"phy0","service":{"to":"phy1","type":"xconnect"},"stats":{"rx_bytes":91607040,"rx_dropped":0,"rx_packets":1526784,"tx_bytes":61440,"tx_dropped":1525760,"tx_packets":1024}},{"admin_up":true,"capture":null,"describe":"memif server socket=/tmp/devcap18224/b.sock id=0 ring=1024 (2^10) buffer=2048 mode=polling state=connected peer=\"DPDK 22.11.11\"/\"net_memif1\"","index":1,"link":"up","name":"phy1","service":{"to":"phy0","type":"xconnect"},"stats":{"rx_bytes":91607040,"rx_dropped":0,"rx_packets":1526784,"tx_bytes":61440,"tx_dropped":1525760,"tx_packets":1024}}]}"#;
    const ERRORS: &str = r#"{"ok":true,"data":[{"count":3132000,"node":"interface-output","reason":"tx-failed"},{"count":5,"node":"ethernet-input","reason":"runt"},{"count":9,"node":"l2-learn","reason":"learned"}]}"#;
    const RUNTIME: &str = r#"{"ok":true,"data":{"clock_hz":2445406000.0,"loop":{"busy_ns":1000000,"idle_polls":19166,"idle_sleeps":18501,"max_poll_gap_ns":181000,"packets_per_s":1652693.408438171,"polls":25437,"rx_packets":3210336},"nodes":[{"calls":12541,"clocks_per_packet":349.0025712369204,"drops":0,"name":"ethernet-input","packets":3210336,"packets_per_vector":255.98724184674268,"time_ns":458171575,"vectors":12541,"vectors_per_call":255.98724184674268}]}}"#;

    #[test]
    fn counters_parse_from_captured_answers() {
        let p = parse_ports(PORTS).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0],
            (
                "phy0".to_string(),
                PortCounts {
                    rx: 1526784,
                    tx: 1024,
                    rx_dropped: 0,
                    tx_dropped: 1525760
                }
            )
        );
        // tx-failed is the ports' tx_dropped and `learned` an event: only the runt counts.
        assert_eq!(parse_internal_drops(ERRORS), Some(5));
        let (busy, idle, polls) = parse_runtime(RUNTIME).unwrap();
        assert_eq!(busy, 2_445_406); // 1 ms at 2.445406 GHz
        assert_eq!((idle, polls), (19166, 25437));
        // The answers are the switch's own types: a counter missing (renamed) is an unreadable
        // answer, never a silent zero or `None`.
        let no_busy = RUNTIME.replace("\"busy_ns\":1000000,", "");
        assert_eq!(parse_runtime(&no_busy), None);
        let renamed = PORTS.replace("\"tx_dropped\"", "\"tx_drops\"");
        assert!(parse_ports(&renamed).is_none());
        assert!(parse_ports("{\"ok\":false}").is_none());
        assert!(parse_internal_drops("[").is_none());
        // What the switch writes, its types serialized, reads back.
        let e = vec![vecswitch_graph::ErrorCount {
            node: "ethernet-input".into(),
            reason: "runt".into(),
            count: 7,
        }];
        assert_eq!(parse_internal_drops(&answer(&e)), Some(7));
        // A port's reasons break its `show ports` drops down (the memif port above lists its
        // 1,525,760 `tx-ring-full` there too): counted once, as the port's `tx_dropped`.
        let with_port = ERRORS.replace(
            "{\"count\":5,",
            "{\"count\":1525760,\"node\":\"port phy0\",\"reason\":\"tx-ring-full\"},{\"count\":5,",
        );
        assert_ne!(with_port, ERRORS);
        assert_eq!(parse_internal_drops(&with_port), Some(5));
    }

    #[test]
    fn bridge_config_has_one_bridge_per_pair() {
        let ports: Vec<PortEnd> = (0..4)
            .map(|i| PortEnd::Memif {
                name: format!("p{i}"),
                socket: format!("/r/p{i}.sock").into(),
                id: 0,
                role: MemifRole::Server,
            })
            .collect();
        let mut c = config(
            &ports,
            &[(0, 2), (3, 1)],
            Mode::Bridge,
            Path::new("/c"),
            None,
        );
        assert_valid_round_trip(&c);
        let t = to_toml(&c);
        assert_eq!(
            (c.bridges[0].name.as_str(), &c.bridges[0].ports[..]),
            ("br0", &["p0".to_string(), "p2".into()][..])
        );
        assert_eq!(
            (c.bridges[1].name.as_str(), &c.bridges[1].ports[..]),
            ("br1", &["p3".to_string(), "p1".into()][..])
        );
        assert!(
            t.contains("[[bridge]]\nname = \"br0\"\nports = [\"p0\", \"p2\"]"),
            "{t}"
        );
        assert!(!t.contains("worker_cpu"));
        // The MAC-table scale: static entries on the last bridge-domain's second port.
        with_static_macs(&mut c, 3);
        assert_valid_round_trip(&c);
        let s = &c.bridges[1].static_mac;
        assert_eq!(s.len(), 3);
        assert!(s.iter().all(|m| m.port == "p1"));
        assert_eq!(s[2].mac.to_string(), crate::dut::linux_bridge::scale_mac(2));
        assert!(c.bridges[0].static_mac.is_empty());
        let t = to_toml(&c);
        assert_eq!(t.matches("[[bridge.static_mac]]").count(), 3, "{t}");
        // Static MACs in an earlier bridge-domain too: written as one document, still equal.
        c.bridges[0].static_mac = c.bridges[1].static_mac.clone();
        c.bridges[0]
            .static_mac
            .iter_mut()
            .for_each(|m| m.port = "p2".into());
        assert_eq!(bulk_entries_apart(&c), None);
        assert_valid_round_trip(&c);
    }
}
