//! `vecswitch gen`: the traffic generator from the command line.
//!
//! ```text
//! vecswitch gen --port memif:/run/vs.sock:0:client --port memif:/run/vs.sock:1:client \
//!     --size imix --rate 50%@10G --duration 10s --flows 1000 --bidir
//! vecswitch gen calibrate --port memif:/tmp/c.sock:0:server --port memif:/tmp/c.sock:0:client
//! vecswitch gen --port afxdp:veth0 --port afxdp:veth1@/run/netns/far --size 64 --rate max
//! vecswitch gen --port vhost:/tmp/vm1.sock,server ...    # a vhost-user device for a VM or virtio-user
//! ```
//!
//! Flags are parsed raw by clap, then resolved into the generator's types ([`StreamSpec`],
//! [`TrialSpec`]); every resolution error names the flag, the value and what is accepted. The
//! summary goes to stdout (or JSON with `--json`), a progress line to stderr once a second.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use vecswitch_gen::engine::Phase;
use vecswitch_gen::{
    Field, FieldMode, FieldRange, Generator, Rate, SizeSpec, StreamSpec, TrialLength, TrialReport,
    TrialSpec, VlanSpec,
};
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::af_xdp::{AfXdpConfig, AfXdpPort};
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::vhost_user;
use vecswitch_ports::Port;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    cmd: Option<Sub>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Measure the generator's own maximum rate and latency floor with its tx port looped to its rx
    /// port (no device under test).
    Calibrate(CalibrateArgs),
}

#[derive(Debug, clap::Args)]
struct PortArgs {
    /// A port: `memif:SOCKET[:ID[:client|server[:RING]]]` (default id 0, client, ring 1024
    /// descriptors; the connection uses the smaller of both ends' ring sizes),
    /// `afp:IFNAME[@NETNS_PATH]` (AF_PACKET) or `afxdp:IFNAME[@NETNS_PATH][,KEY=VALUE...]`
    /// (AF_XDP; keys mode=auto|native|skb, busy_poll_us, napi_defer_hard_irqs,
    /// gro_flush_timeout_us, rx_size, tx_size),
    /// `vhost:SOCKET[,server|,client]` (vhost-user device; default client: the frontend, e.g. a
    /// QEMU guest with `server=on`, listens). Give one (sent and received on the same port) or two (A sends,
    /// B receives; both ways with --bidir).
    #[arg(long = "port", required = true, num_args = 1)]
    ports: Vec<String>,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    ports: PortArgs,
    /// Frame size with FCS (64..=9000), `imix`, `imix-trex`, `imix-spirent-tcpv4`, or a custom mix
    /// `size:weight,...`.
    #[arg(long, default_value = "64")]
    size: String,
    /// Offered load per transmitting port: `PCT%@SPEED` (e.g. 50%@10G), `N[k|M|G]pps`,
    /// `N[k|M|G]bps` (layer-2 bits), or `max`.
    #[arg(long, default_value = "10%@10G")]
    rate: String,
    /// Length of the measured phase (e.g. 10s, 500ms, 2m).
    #[arg(long, conflicts_with = "count")]
    duration: Option<String>,
    /// Frames per transmitting port instead of a duration.
    #[arg(long)]
    count: Option<u64>,
    /// Distinct flows per stream (1..=1000000).
    #[arg(long, default_value_t = 1)]
    flows: u32,
    /// Fields that vary per flow: comma list of src-mac, dst-mac, src-ip, dst-ip, src-port, dst-port.
    #[arg(long, default_value = "src-ip,dst-ip")]
    flow_fields: String,
    /// Visit the flows' field values in a seeded random order instead of incrementing.
    #[arg(long)]
    random_flows: bool,
    /// VLAN id (0..=4094); give twice for two tags (outer first).
    #[arg(long = "vlan")]
    vlans: Vec<u16>,
    /// With two --vlan: the outer tag is an 802.1ad S-tag (TPID 0x88a8) instead of 802.1Q.
    #[arg(long)]
    qinq: bool,
    /// IPv6 instead of IPv4.
    #[arg(long)]
    ipv6: bool,
    /// Source MAC of the A→B stream (B→A uses it as destination).
    #[arg(long)]
    src_mac: Option<String>,
    /// Destination MAC of the A→B stream.
    #[arg(long)]
    dst_mac: Option<String>,
    /// Seed of every random choice (mix order, random flows).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Send both ways: A→B and B→A (needs two ports).
    #[arg(long)]
    bidir: bool,
    /// Warm-up traffic before the measured phase (not counted), e.g. 1s.
    #[arg(long, default_value = "0s")]
    warmup: String,
    /// Receive-only time after the last frame before loss is counted.
    #[arg(long, default_value = "500ms")]
    drain: String,
    /// Frames sent back to back per burst (1 = evenly spaced).
    #[arg(long, default_value_t = 1)]
    burst: u32,
    /// Shortfall of offered load tolerated before the trial is marked tester-limited (fraction).
    #[arg(long, default_value_t = 0.001)]
    tolerance: f64,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct CalibrateArgs {
    #[command(flatten)]
    ports: PortArgs,
    /// Frame sizes (with FCS) to calibrate, comma-separated.
    #[arg(long, default_value = "64,128,256,512,1024,1518")]
    sizes: String,
    /// Length of each of the two trials per size.
    #[arg(long, default_value = "2s")]
    duration: String,
    /// Rate of the latency-floor trial.
    #[arg(long, default_value = "10kpps")]
    floor_rate: String,
    /// IPv6 frames.
    #[arg(long)]
    ipv6: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn main(args: Args) -> Result<()> {
    match args.cmd {
        Some(Sub::Calibrate(c)) => calibrate(c),
        None => run(args.run),
    }
}

/// Parses `10s`, `500ms`, `2m`, `1.5s`, `250us`.
fn parse_duration(flag: &str, s: &str) -> Result<Duration> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, f64::NAN)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() && mult.is_finite() => {
            Ok(Duration::from_secs_f64(v * mult))
        }
        _ => bail!("invalid --{flag} {s:?}: accepted a duration such as 10s, 500ms, 250us, 2m, 1h"),
    }
}

fn parse_mac(flag: &str, s: &str) -> Result<[u8; 6]> {
    let parts: Vec<&str> = s.split(':').collect();
    let mut m = [0u8; 6];
    if parts.len() != 6 {
        bail!("invalid --{flag} {s:?}: accepted a MAC address such as 02:00:00:00:00:01");
    }
    for (i, p) in parts.iter().enumerate() {
        m[i] = u8::from_str_radix(p, 16).with_context(|| {
            format!("invalid --{flag} {s:?}: accepted a MAC address such as 02:00:00:00:00:01")
        })?;
    }
    Ok(m)
}

/// Opens a port from its `--port` spec.
fn open_port(spec: &str, index: usize) -> Result<Box<dyn Port>> {
    let accepted =
        "memif:SOCKET[:ID[:client|server[:RING]]], afp:IFNAME[@NETNS_PATH], afxdp:IFNAME[@NETNS_PATH] or vhost:SOCKET[,server|,client]";
    if let Some(rest) = spec.strip_prefix("vhost:") {
        let (path, role) = match rest.rsplit_once(',') {
            None => (rest, vhost_user::Role::Client),
            Some((p, "client")) => (p, vhost_user::Role::Client),
            Some((p, "server")) => (p, vhost_user::Role::Server),
            Some((_, r)) => bail!("invalid --port {spec:?}: role {r:?}; accepted client or server"),
        };
        let cfg = vhost_user::VhostUserConfig::new(&format!("vhost{index}"), path, role);
        let port = vhost_user::VhostUserPort::new(cfg)
            .with_context(|| format!("opening --port {spec}"))?;
        return Ok(Box::new(port));
    }
    if let Some(rest) = spec.strip_prefix("memif:") {
        let mut it = rest.split(':');
        let path = it.next().filter(|p| !p.is_empty());
        let Some(path) = path else {
            bail!("invalid --port {spec:?}: no socket path; accepted {accepted}")
        };
        let id: u32 = match it.next() {
            None => 0,
            Some(i) => i.parse().with_context(|| {
                format!("invalid --port {spec:?}: id {i:?} is not a number; accepted {accepted}")
            })?,
        };
        let role = match it.next() {
            None | Some("client") => Role::Client,
            Some("server") => Role::Server,
            Some(r) => bail!("invalid --port {spec:?}: role {r:?}; accepted client or server"),
        };
        let ring_log2 = match it.next() {
            None => vecswitch_ports::memif::DEFAULT_RING_SIZE_LOG2,
            Some(r) => match r.parse::<u32>() {
                Ok(n) if n.is_power_of_two() => n.trailing_zeros() as u8,
                _ => bail!(
                    "invalid --port {spec:?}: ring size {r:?}; accepted a power of two from 256 to 16384 (descriptors)"
                ),
            },
        };
        if it.next().is_some() {
            bail!("invalid --port {spec:?}: too many fields; accepted {accepted}");
        }
        let name = format!("memif{index}");
        let mut cfg = MemifConfig::new(&name, path, id, role);
        // A client asks for this ring size; a server offers it as the largest (the connection
        // uses the smaller of the two ends').
        cfg.ring_size_log2 = ring_log2;
        let port = MemifPort::new(cfg).with_context(|| format!("opening --port {spec}"))?;
        return Ok(Box::new(port));
    }
    if let Some(rest) = spec.strip_prefix("afp:") {
        let (ifname, netns) = match rest.split_once('@') {
            Some((i, n)) => (i, Some(n)),
            None => (rest, None),
        };
        if ifname.is_empty() {
            bail!("invalid --port {spec:?}: no interface name; accepted {accepted}");
        }
        // Frame mode: each received frame is seen at once, no block-timeout bias in latency.
        let cfg = AfPacketConfig {
            frame_size: 16384,
            rx_mode: RxMode::Frame,
            ..AfPacketConfig::new(ifname, ifname)
        };
        let port = match netns {
            Some(ns) => AfPacketPort::open_in_netns(cfg, ns),
            None => AfPacketPort::open(cfg),
        }
        .with_context(|| format!("opening --port {spec}"))?;
        return Ok(Box::new(port));
    }
    if let Some(rest) = spec.strip_prefix("afxdp:") {
        let mut parts = rest.split(',');
        let rest = parts.next().unwrap_or_default();
        let (ifname, netns) = match rest.split_once('@') {
            Some((i, n)) => (i, Some(n)),
            None => (rest, None),
        };
        if ifname.is_empty() {
            bail!("invalid --port {spec:?}: no interface name; accepted {accepted}");
        }
        let mut cfg = AfXdpConfig::new(ifname, ifname);
        for kv in parts {
            let bad = || {
                anyhow::anyhow!(
                    "invalid --port {spec:?}: option {kv:?}; accepted mode=auto|native|skb, \
                     busy_poll_us=N, napi_defer_hard_irqs=N, gro_flush_timeout_us=N, rx_size=N, \
                     tx_size=N"
                )
            };
            let (k, v) = kv.split_once('=').ok_or_else(bad)?;
            match k {
                "mode" => cfg.mode = v.parse().with_context(|| format!("--port {spec:?}"))?,
                "busy_poll_us" => cfg.busy_poll_us = v.parse().map_err(|_| bad())?,
                "napi_defer_hard_irqs" => {
                    cfg.napi_defer_hard_irqs = v.parse().map_err(|_| bad())?
                }
                "gro_flush_timeout_us" => {
                    cfg.gro_flush_timeout_us = v.parse().map_err(|_| bad())?
                }
                "rx_size" => cfg.rx_size = v.parse().map_err(|_| bad())?,
                "tx_size" => cfg.tx_size = v.parse().map_err(|_| bad())?,
                _ => return Err(bad()),
            }
        }
        let port = match netns {
            Some(ns) => AfXdpPort::open_in_netns(cfg, ns),
            None => AfXdpPort::open(cfg),
        }
        .with_context(|| format!("opening --port {spec}"))?;
        return Ok(Box::new(port));
    }
    bail!("invalid --port {spec:?}: accepted {accepted}")
}

fn open_ports(specs: &[String]) -> Result<Vec<Box<dyn Port>>> {
    if specs.is_empty() || specs.len() > 2 {
        bail!("invalid number of --port: {}; accepted 1 or 2", specs.len());
    }
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| open_port(s, i))
        .collect()
}

/// Resolves the flags into the A→B stream (and B→A with --bidir).
fn streams(a: &RunArgs, nports: usize) -> Result<Vec<StreamSpec>> {
    let rx = if nports > 1 { 1 } else { 0 };
    let mut s = if a.ipv6 {
        StreamSpec::ipv6(0, rx)
    } else {
        StreamSpec::ipv4(0, rx)
    };
    s.size = SizeSpec::parse(&a.size)?;
    s.seed = a.seed;
    s.flows = a.flows;
    if let Some(m) = &a.src_mac {
        s.src_mac = parse_mac("src-mac", m)?;
    }
    if let Some(m) = &a.dst_mac {
        s.dst_mac = parse_mac("dst-mac", m)?;
    }
    s.vlans = match (a.vlans.as_slice(), a.qinq) {
        ([], false) => vec![],
        ([v], false) => vec![VlanSpec::dot1q(*v)],
        ([o, i], qinq) => vec![
            if qinq {
                VlanSpec::dot1ad(*o)
            } else {
                VlanSpec::dot1q(*o)
            },
            VlanSpec::dot1q(*i),
        ],
        (_, true) => bail!("invalid --qinq: it needs exactly two --vlan (outer, inner)"),
        (v, _) => bail!(
            "invalid --vlan given {} times: accepted at most 2 (outer, inner)",
            v.len()
        ),
    };
    if a.flows > 1 {
        for f in a.flow_fields.split(',').filter(|f| !f.trim().is_empty()) {
            let field = Field::parse(f)?;
            let mode = if a.random_flows {
                FieldMode::Random {
                    seed: a.seed ^ (field as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                }
            } else {
                FieldMode::Increment
            };
            s.ranges.push(FieldRange {
                field,
                count: a.flows,
                mode,
            });
        }
        if s.ranges.is_empty() {
            bail!("invalid --flow-fields {:?}: accepted a comma list of src-mac, dst-mac, src-ip, dst-ip, src-port, dst-port", a.flow_fields);
        }
    }
    let mut v = vec![s.clone()];
    if a.bidir {
        if nports < 2 {
            bail!("invalid --bidir with one --port: accepted with two ports");
        }
        v.push(s.reversed());
    }
    Ok(v)
}

/// Prints a progress line to stderr once a second until `stop` is set.
fn spawn_progress(
    progress: Arc<vecswitch_gen::Progress>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut last_tx = 0u64;
        let mut ticks = 0u32;
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            ticks += 1;
            if !ticks.is_multiple_of(10) {
                continue;
            }
            let (tx, rx) = (progress.sent(), progress.received());
            let phase = match progress.phase() {
                Phase::Idle => continue,
                Phase::Link => "waiting for link",
                Phase::Warmup => "warm-up",
                Phase::Measure => "measure",
                Phase::Drain => "drain",
            };
            // Counters restart at each phase: a drop means a new phase began.
            let rate = if tx >= last_tx { tx - last_tx } else { tx };
            last_tx = tx;
            let mut e = std::io::stderr().lock();
            let _ = writeln!(
                e,
                "gen: {phase:<16} tx {tx:>14} rx {rx:>14}  {:>9.3} Mfps",
                rate as f64 / 1e6
            );
        }
    })
}

/// Resolves the flags, opens the ports and runs the trial (with a progress line on stderr).
fn run_report(a: &RunArgs) -> Result<TrialReport> {
    let rate = Rate::parse(&a.rate)?;
    let length = match (&a.duration, a.count) {
        (_, Some(n)) => TrialLength::Count(n),
        (Some(d), None) => TrialLength::Duration(parse_duration("duration", d)?),
        (None, None) => TrialLength::Duration(Duration::from_secs(10)),
    };
    let ports = open_ports(&a.ports.ports)?;
    let streams = streams(a, ports.len())?;
    let mut spec = TrialSpec::new(streams, rate, length);
    spec.warmup = parse_duration("warmup", &a.warmup)?;
    spec.drain = parse_duration("drain", &a.drain)?;
    spec.burst = a.burst;
    spec.tolerance = a.tolerance;
    let mut gen = Generator::new(ports)?;
    let stop = Arc::new(AtomicBool::new(false));
    let progress = spawn_progress(gen.progress(), Arc::clone(&stop));
    let res = gen.run_trial(&spec);
    stop.store(true, Ordering::Relaxed);
    let _ = progress.join();
    Ok(res?)
}

fn run(a: RunArgs) -> Result<()> {
    let report = run_report(&a)?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", summary(&a, &report));
    }
    Ok(())
}

fn fmt_ns(ns: u64) -> String {
    if ns >= 10_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else if ns >= 10_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// The readable summary of a trial.
fn summary(a: &RunArgs, r: &TrialReport) -> String {
    let mut o = String::new();
    let length = match r.length {
        TrialLength::Duration(d) => format!("{:.3} s", d.as_secs_f64()),
        TrialLength::Count(n) => format!("{n} frames"),
    };
    o += &format!(
        "trial: size {}, rate {} per port, {length} (sent for {:.3} s, drained {:.3} s)\n",
        a.size, a.rate, r.tx_seconds, r.drain_seconds
    );
    for p in &r.ports {
        let intended = p
            .intended_fps
            .map(|f| format!("{f:.0}"))
            .unwrap_or_else(|| "max".into());
        o += &format!(
            "port {} {:<10} tx {:>12}  offered {:>12.0} fps ({:.1} Mbit/s L2), intended {intended} fps; rx ours {:>12}, foreign {}, warm-up {}, refused {}\n",
            p.index, p.name, p.tx, p.offered_fps, p.offered_bps / 1e6, p.rx_ours, p.foreign, p.rx_warmup, p.tx_refused
        );
        for (reason, n) in &p.foreign_reasons {
            o += &format!("    foreign {reason}: {n}\n");
        }
    }
    for s in &r.streams {
        o += &format!(
            "stream {} ({} -> {}): tx {} rx {} lost {} ({:.6} %) dup {} reordered {} wrong-port {}\n",
            s.name, s.tx_port, s.rx_port, s.tx, s.rx.rx_unique, s.lost, s.loss_ratio * 100.0, s.rx.duplicated, s.rx.reordered, s.rx_wrong_port
        );
        for raised in &s.sizes_raised {
            o += &format!(
                "    note: {} B frames cannot carry headers + signature; sent as {} B\n",
                raised.requested, raised.built
            );
        }
        let l = &s.rx.latency;
        if l.samples > 0 {
            o += &format!(
                "    latency min {} avg {} max {}; p50 {} p90 {} p99 {} p99.9 {} p99.99 {}; jitter avg {} max {}\n",
                fmt_ns(l.min_ns),
                fmt_ns(l.avg_ns as u64),
                fmt_ns(l.max_ns),
                fmt_ns(l.p50_ns),
                fmt_ns(l.p90_ns),
                fmt_ns(l.p99_ns),
                fmt_ns(l.p99_9_ns),
                fmt_ns(l.p99_99_ns),
                fmt_ns(l.jitter_avg_ns as u64),
                fmt_ns(l.jitter_max_ns)
            );
        }
    }
    o += &lateness_line(r);
    o += &limit_line(a, r);
    if r.tester_limited {
        o += "TESTER-LIMITED: the generator did not offer the intended load; loss figures are not the DUT's alone\n";
        for m in &r.tester_limited_reasons {
            o += &format!("    {m}\n");
        }
    }
    o
}

/// The generator's lateness against its pacing schedule (METHODOLOGY.md, "When the tester is
/// late"): largest gap between two sends, slots dropped as late, time spent behind.
fn lateness_line(r: &TrialReport) -> String {
    let l = &r.lateness;
    format!(
        "lateness: largest gap {}, {} late slots dropped in {} pauses, {} behind by more than the \
         {} threshold (worst {}); generator {:.1} % idle\n",
        fmt_ns(l.max_gap_ns),
        l.slots_dropped,
        l.late_events,
        fmt_ns(l.time_behind_ns),
        fmt_ns(l.threshold_ns),
        fmt_ns(l.max_behind_ns),
        r.idle_fraction() * 100.0
    )
}

/// The trial's limit label as the lab gives it ([`vecswitch_lab::TrialLimit`], judged by
/// `vecswitch_testbed::measurer::trial_result_with` without device counters): tester late, tester CPU,
/// tester rx, back-pressure, or not limited. memif ports judge refusals as the device's (its
/// receive ring refused them, as a NIC would drop them). A trial at the maximum rate has no
/// intended load to judge against.
fn limit_line(a: &RunArgs, r: &TrialReport) -> String {
    let (Some(intended), true) = (r.intended, r.rate != Rate::Max) else {
        return "limit: none judged (no intended rate: --rate max)\n".into();
    };
    let secs = match r.length {
        TrialLength::Duration(d) => d.as_secs_f64(),
        TrialLength::Count(_) => match r.rate {
            Rate::Pps(fps) => {
                let per_port = intended as f64
                    / r.ports
                        .iter()
                        .filter(|p| p.intended.is_some())
                        .count()
                        .max(1) as f64;
                per_port / fps
            }
            _ => return "limit: none judged (a counted trial without a frame rate)\n".into(),
        },
    };
    if secs <= 0.0 {
        return String::new();
    }
    let memif = a.ports.ports.iter().all(|p| p.starts_with("memif:"));
    let judging = vecswitch_testbed::measurer::Judging {
        tolerance: a.tolerance,
        backpressure_is_dut: memif,
    };
    let load = vecswitch_lab::Load::fps(intended as f64 / secs);
    let t = vecswitch_testbed::measurer::trial_result_with(
        load,
        Duration::from_secs_f64(secs),
        r,
        judging,
    );
    let mut o = format!("limit: {}\n", t.limit);
    if let Some(acc) = &t.accounting {
        o += &format!(
            "    frames: intended {}, not sent {}, sent {}, refused by the device {}, dropped at the tester's rx {}, received {}, unexplained {}\n",
            acc.intended,
            acc.not_sent,
            acc.sent,
            acc.refused_by_device,
            acc.dropped_at_tester_rx.map_or("?".into(), |d| d.to_string()),
            acc.received,
            acc.unexplained
        );
    }
    o
}

fn calibrate(c: CalibrateArgs) -> Result<()> {
    let sizes: Vec<u16> = c
        .sizes
        .split(',')
        .map(|s| {
            let v: u16 = s.trim().parse().with_context(|| {
                format!(
                    "invalid --sizes {:?}: accepted a comma list of sizes 64..=9000",
                    c.sizes
                )
            })?;
            SizeSpec::Fixed(v).validate()?;
            Ok(v)
        })
        .collect::<Result<_>>()?;
    let duration = parse_duration("duration", &c.duration)?;
    let floor = Rate::parse(&c.floor_rate)?;
    let ports = open_ports(&c.ports.ports)?;
    let rx = if ports.len() > 1 { 1 } else { 0 };
    let template = if c.ipv6 {
        StreamSpec::ipv6(0, rx)
    } else {
        StreamSpec::ipv4(0, rx)
    };
    let mut gen = Generator::new(ports)?;
    let stop = Arc::new(AtomicBool::new(false));
    let progress = spawn_progress(gen.progress(), Arc::clone(&stop));
    let res = vecswitch_gen::calibrate(&mut gen, &template, &sizes, duration, floor);
    stop.store(true, Ordering::Relaxed);
    let _ = progress.join();
    let rep = res?;
    if c.json {
        outln!("{}", serde_json::to_string_pretty(&rep)?);
        return Ok(());
    }
    outln!(
        "calibration: {} -> {} (no DUT), {} per trial",
        rep.tx_port,
        rep.rx_port,
        c.duration
    );
    outln!(
        "{:>6} {:>14} {:>14} {:>10} {:>12} {:>12} {:>12}",
        "size",
        "max tx fps",
        "max rx fps",
        "lost",
        "floor min",
        "floor p50",
        "floor p99"
    );
    for p in &rep.points {
        outln!(
            "{:>6} {:>14.0} {:>14.0} {:>10} {:>12} {:>12} {:>12}",
            p.size,
            p.max_tx_fps,
            p.max_rx_fps,
            p.max_lost,
            fmt_ns(p.floor_latency.min_ns),
            fmt_ns(p.floor_latency.p50_ns),
            fmt_ns(p.floor_latency.p99_ns)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, clap::Parser)]
    struct T {
        #[command(flatten)]
        a: RunArgs,
    }

    #[test]
    fn memif_self_loop_trial_from_flags() {
        // A memif server and client on one socket in this process: port 0 sends, port 1 receives.
        let dir = std::env::temp_dir().join(format!("vsgen-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        struct Rm(std::path::PathBuf);
        impl Drop for Rm {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let _rm = Rm(dir.clone());
        let sock = dir.join("m.sock").display().to_string();
        let a = T::try_parse_from([
            "t",
            "--port",
            &format!("memif:{sock}:0:server"),
            "--port",
            &format!("memif:{sock}:0:client"),
            "--size",
            "imix",
            "--rate",
            "max",
            "--count",
            "1200",
            "--vlan",
            "5",
            "--flows",
            "10",
        ])
        .unwrap()
        .a;
        let r = run_report(&a).unwrap();
        assert_eq!((r.tx, r.rx, r.lost, r.foreign), (1200, 1200, 0, 0));
        let out = summary(&a, &r);
        assert!(
            out.contains("stream s0 (0 -> 1): tx 1200 rx 1200 lost 0"),
            "{out}"
        );
        assert!(out.contains("lateness: largest gap "), "{out}");
        assert!(
            out.contains("limit: none judged (no intended rate"),
            "{out}"
        );
        // Paced: the lab's label and frame split (whatever the machine's load made of it).
        let paced = T::try_parse_from([
            "t",
            "--port",
            &format!("memif:{sock}:0:server"),
            "--port",
            &format!("memif:{sock}:0:client"),
            "--rate",
            "20kpps",
            "--duration",
            "200ms",
        ])
        .unwrap()
        .a;
        let r = run_report(&paced).unwrap();
        let out = summary(&paced, &r);
        let limit = out
            .lines()
            .find(|l| l.starts_with("limit: "))
            .unwrap_or_else(|| panic!("{out}"));
        let label = vecswitch_testbed::measurer::trial_result_with(
            vecswitch_lab::Load::fps(20_000.0),
            Duration::from_millis(200),
            &r,
            vecswitch_testbed::measurer::Judging {
                tolerance: paced.tolerance,
                backpressure_is_dut: true,
            },
        )
        .limit;
        assert_eq!(limit, format!("limit: {label}"));
        assert!(out.contains("frames: intended 4000, not sent "), "{out}");
        assert!(out.contains("lateness: largest gap "), "{out}");
    }

    fn args(v: &[&str]) -> RunArgs {
        let mut all = vec!["t", "--port", "afp:x", "--port", "afp:y"];
        all.extend_from_slice(v);
        T::try_parse_from(all).unwrap().a
    }

    #[test]
    fn flags_resolve_into_streams() {
        let a = args(&[
            "--size", "imix", "--vlan", "100", "--vlan", "200", "--qinq", "--flows", "1000",
            "--bidir", "--ipv6",
        ]);
        let s = streams(&a, 2).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0].vlans,
            vec![VlanSpec::dot1ad(100), VlanSpec::dot1q(200)]
        );
        assert!(s[0].src_ip.is_ipv6());
        assert_eq!(s[0].ranges.len(), 2);
        assert_eq!((s[1].tx_port, s[1].rx_port), (1, 0));
        assert_eq!(s[0].size, SizeSpec::imix());
    }

    #[test]
    fn bad_flags_name_what_is_accepted() {
        let e = streams(&args(&["--vlan", "1", "--qinq"]), 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--qinq"), "{e}");
        let e = streams(&args(&["--bidir"]), 1).unwrap_err().to_string();
        assert!(e.contains("--bidir"), "{e}");
        let e = streams(&args(&["--flows", "10", "--flow-fields", "src-ip,ttl"]), 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ttl") && e.contains("accepted"), "{e}");
        assert!(parse_duration("duration", "10").is_err());
        assert_eq!(
            parse_duration("duration", "1.5s").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            parse_duration("duration", "250us").unwrap(),
            Duration::from_micros(250)
        );
        assert!(open_port("tcp:1", 0)
            .err()
            .unwrap()
            .to_string()
            .contains("accepted"));
        let e = open_port("afxdp:@/run/netns/x", 0)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("no interface name") && e.contains("afxdp:"),
            "{e}"
        );
        let e = format!("{:#}", open_port("afxdp:x,mode=turbo", 0).err().unwrap());
        assert!(e.contains("mode = \"turbo\""), "{e}");
        let e = format!("{:#}", open_port("afxdp:x,colour=red", 0).err().unwrap());
        assert!(e.contains("colour=red") && e.contains("mode="), "{e}");
        let e = format!("{:#}", open_port("afxdp:vsnosuch0", 0).err().unwrap());
        assert!(e.contains("interface = \"vsnosuch0\""), "{e}");
        assert!(open_port("vhost:/tmp/x.sock,peer", 0)
            .err()
            .unwrap()
            .to_string()
            .contains("role"));
        let e = format!("{:#}", open_port("vhost:", 0).err().unwrap());
        assert!(e.contains("socket_path") && e.contains("accepted"), "{e}");
        let sock = std::env::temp_dir().join(format!("vsw-gen-vh-{}.sock", std::process::id()));
        let sock = sock.to_str().unwrap().to_string();
        let port = open_port(&format!("vhost:{sock},server"), 0).unwrap();
        assert!(
            port.describe().starts_with("vhost-user server"),
            "{}",
            port.describe()
        );
        drop(port);
        let port = open_port(&format!("vhost:{sock}"), 1).unwrap();
        assert!(
            port.describe().starts_with("vhost-user client"),
            "{}",
            port.describe()
        );
        assert!(open_port("memif:/tmp/x:0:peer", 0)
            .err()
            .unwrap()
            .to_string()
            .contains("role"));
        assert!(parse_mac("src-mac", "02:00:00:00:00").is_err());
    }
}
