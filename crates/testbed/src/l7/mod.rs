//! Application traffic through a device (issue 12; seed 004's L7 profile): real servers, real
//! kernel TCP/UDP, an open-loop client mix, time to first byte per class.
//!
//! - [`L7Bed`]: a client namespace and a server namespace with the device between them —
//!   [`L7Bed::direct`] (one veth pair, the kernel's own floor), or [`L7Bed::through`] any
//!   `*-veth` topology of the testbed with its DUT (the Linux bridge, vecswitch cross-connect or
//!   bridge, a chain such as `chain-veth:kernel-router+vecswitch`). The testbed's generator
//!   namespace is the client's; its second generator port moves into the server's namespace.
//! - [`servers::Servers`]: nginx (HTTP small objects [`HTTP_SMALL`] and video-sized objects
//!   [`HTTP_LARGE`]), vsftpd (FTP, passive, fixed data ports), dnsmasq (DNS), from Debian.
//! - [`client`]: one transaction of each [`Class`] with `std::net` sockets, timed.
//! - [`Profile`]: the mix (seed 004: 60 % HTTP small, 35 % HTTP large, 4 % FTP, 1 % DNS), the
//!   arrival rate, object sizes, IPv4 or IPv6. Arrivals are on a fixed schedule (open loop:
//!   transaction *i* is due at `i / rate` whatever happened to the others), interleaved by
//!   smooth weighted round robin so that every 100 transactions hold exactly the weights.
//! - [`L7Report`]: per class transactions, failures, payload throughput and TTFB (mean and
//!   percentiles, from the scheduled start), and the L1 rate of the frames that crossed the
//!   client's link (kernel byte counters + 24 bytes per frame of preamble, FCS and gap, as a
//!   share of the configured line rate, seed 004's "L1 line rate %").
//!
//! - [`illegal`]: a configured share of illegal flows ([`Profile::illegal_per_100`]: from
//!   outside, to a denied port, to a denied range) sent beside the mix; each one that got
//!   through is an error of the run, the firewall VNFs' drop counters are read around it.
//!
//! Addresses: one subnet (client 10.12.1.1, server 10.12.1.2; fd12:1::1, fd12:1::2), or, when
//! the chain holds routed VNFs (routers, firewalls), the chain's IP plan
//! ([`crate::chain::routed`]): the client in 10.12.1.0/24 / fd12:1::/64, the server in the last
//! subnet, each with its hop's address as gateway. The server also holds the denied-range
//! address ([`crate::chain::routed::denied_target`]). TSO, GSO, GRO and transmit checksum
//! offload are off on the endpoints' veth ends (and the kernel VNFs'): a user-space device
//! reading them by AF_PACKET sees the frames a NIC would put on the wire.

pub mod client;
pub mod cost;
pub mod illegal;
pub mod servers;
pub mod suite;

use std::net::IpAddr;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::dut::Dut;
use crate::error::{Error, Result};
use crate::netns::{veth_pair, Netns};
use crate::placement::{CorePlan, Placement};
use crate::rundir::RunDir;
use crate::topology::{Link, PortEnd, Testbed, Topology, VnfKind};

/// The small HTTP object (a web page element).
pub const HTTP_SMALL: &str = "small.bin";
/// The large HTTP object (a video segment).
pub const HTTP_LARGE: &str = "video.bin";
/// The file the FTP client retrieves.
pub const FTP_FILE: &str = "file.bin";
/// The name the DNS client resolves.
pub const DNS_NAME: &str = "www.l7.test";

/// The client's and the server's interfaces (the testbed's generator ports).
const CLIENT_IF: &str = "gen0";
const SERVER_IF: &str = "gen1";

/// One class of transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    HttpSmall,
    HttpLarge,
    Ftp,
    Dns,
}

impl Class {
    pub const ALL: [Class; 4] = [Class::HttpSmall, Class::HttpLarge, Class::Ftp, Class::Dns];

    pub fn name(self) -> &'static str {
        match self {
            Class::HttpSmall => "http-small",
            Class::HttpLarge => "http-large",
            Class::Ftp => "ftp",
            Class::Dns => "dns",
        }
    }
}

/// Object sizes in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sizes {
    pub http_small: usize,
    pub http_large: usize,
    pub ftp: usize,
}

impl Default for Sizes {
    /// 16 KiB page objects, 1 MiB video segments, 256 KiB files.
    fn default() -> Sizes {
        Sizes {
            http_small: 16 * 1024,
            http_large: 1024 * 1024,
            ftp: 256 * 1024,
        }
    }
}

/// The traffic profile of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Transactions started per second (open loop).
    pub rate_tps: f64,
    /// How long arrivals go on (the run lasts until the last transaction ended).
    pub duration: Duration,
    /// Relative weights of [`Class::ALL`] in that order (seed 004: 60, 35, 4, 1).
    pub weights: [u32; 4],
    pub sizes: Sizes,
    /// IPv6 instead of IPv4.
    pub ipv6: bool,
    /// Per-transaction timeout (connect, each read).
    pub timeout: Duration,
    /// Client threads: at most this many transactions in flight; later arrivals wait for one
    /// (and the wait counts in their TTFB).
    pub workers: usize,
    /// Line rate for the L1 percentage, Gbit/s (the seeds' 10GE).
    pub line_rate_gbps: f64,
    /// Illegal flows per 100 transactions ([`illegal`]), 0 for none.
    #[serde(default)]
    pub illegal_per_100: u32,
}

impl Default for Profile {
    fn default() -> Profile {
        Profile {
            rate_tps: 20.0,
            duration: Duration::from_secs(5),
            weights: [60, 35, 4, 1],
            sizes: Sizes::default(),
            ipv6: false,
            timeout: Duration::from_secs(10),
            workers: 32,
            line_rate_gbps: 10.0,
            illegal_per_100: 0,
        }
    }
}

impl Profile {
    /// Checks every field; the error names the field, the value and what is accepted.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &'static str, value: String, expected: &str| {
            Err(Error::Invalid {
                field,
                value,
                expected: expected.into(),
            })
        };
        if !(self.rate_tps.is_finite() && self.rate_tps > 0.0 && self.rate_tps <= 100_000.0) {
            return bad(
                "l7 rate_tps",
                self.rate_tps.to_string(),
                "0 < rate <= 100000 transactions/s",
            );
        }
        if self.duration.is_zero() || self.duration > Duration::from_secs(7 * 86_400) {
            return bad(
                "l7 duration",
                format!("{:?}", self.duration),
                "more than 0 s, at most a week",
            );
        }
        if self.weights.iter().all(|w| *w == 0) {
            return bad(
                "l7 weights",
                format!("{:?}", self.weights),
                "at least one non-zero weight",
            );
        }
        if self.workers == 0 || self.workers > 4096 {
            return bad(
                "l7 workers",
                self.workers.to_string(),
                "1 to 4096 client threads",
            );
        }
        if self.timeout.is_zero() {
            return bad("l7 timeout", "0".into(), "a timeout above 0 s");
        }
        let s = self.sizes;
        if [s.http_small, s.http_large, s.ftp]
            .iter()
            .any(|n| *n == 0 || *n > 1 << 30)
        {
            return bad("l7 sizes", format!("{s:?}"), "1 byte to 1 GiB per object");
        }
        if self.illegal_per_100 > 100 {
            return bad(
                "l7 illegal_per_100",
                self.illegal_per_100.to_string(),
                "0 to 100 illegal flows per 100 transactions",
            );
        }
        if !(self.line_rate_gbps.is_finite() && self.line_rate_gbps > 0.0) {
            return bad(
                "l7 line_rate_gbps",
                self.line_rate_gbps.to_string(),
                "a positive rate",
            );
        }
        Ok(())
    }

    /// How many transactions the schedule holds.
    pub fn transactions(&self) -> usize {
        ((self.rate_tps * self.duration.as_secs_f64()).round() as usize).max(1)
    }

    /// How many illegal flows a run sends (at least one when the share is not 0).
    pub fn illegal_flows(&self) -> usize {
        if self.illegal_per_100 == 0 {
            return 0;
        }
        (self.transactions() * self.illegal_per_100 as usize)
            .div_ceil(100)
            .max(1)
    }
}

/// `n` classes interleaved by smooth weighted round robin (nginx's upstream algorithm): every
/// `sum(weights)` consecutive entries hold each class exactly its weight's times, spread out.
pub fn schedule(weights: [u32; 4], n: usize) -> Vec<Class> {
    let total: i64 = weights.iter().map(|w| i64::from(*w)).sum();
    let mut current = [0i64; 4];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        for (c, w) in current.iter_mut().zip(weights) {
            *c += i64::from(w);
        }
        let best = (0..4)
            .filter(|i| weights[*i] > 0)
            .max_by_key(|i| (current[*i], std::cmp::Reverse(*i)))
            .expect("validated: one weight is non-zero");
        current[best] -= total;
        out.push(Class::ALL[best]);
    }
    out
}

/// Latency statistics of one sample set, in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub samples: usize,
    pub mean_ns: u64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

impl LatencySummary {
    /// Nearest-rank percentiles; `None` for no samples.
    pub fn of(mut v: Vec<u64>) -> Option<LatencySummary> {
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let rank = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some(LatencySummary {
            samples: v.len(),
            mean_ns: (v.iter().map(|x| u128::from(*x)).sum::<u128>() / v.len() as u128) as u64,
            min_ns: v[0],
            p50_ns: rank(50.0),
            p90_ns: rank(90.0),
            p99_ns: rank(99.0),
            max_ns: v[v.len() - 1],
        })
    }
}

/// One class's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassReport {
    pub class: Class,
    pub transactions: u64,
    pub completed: u64,
    pub failed: u64,
    pub payload_bytes: u64,
    /// Payload bits per second over the run.
    pub l7_bps: f64,
    /// Time to first byte of the completed transactions.
    pub ttfb: Option<LatencySummary>,
    /// The first few failures, verbatim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// The frames that crossed the client's link in one direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L1Rate {
    pub frames: u64,
    /// Bytes as the kernel counts them (no FCS).
    pub bytes: u64,
    /// On-the-wire bits per second: (bytes + 24 per frame) × 8 / duration.
    pub bps: f64,
    pub line_rate_percent: f64,
}

/// The result of one [`L7Bed::run`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L7Report {
    /// What carried the traffic (`direct`, or topology and DUT).
    pub device: String,
    /// `ipv4` or `ipv6`.
    pub family: String,
    pub profile: Profile,
    /// From the first scheduled arrival to the end of the last transaction.
    pub elapsed_s: f64,
    pub classes: Vec<ClassReport>,
    pub transactions: u64,
    pub failed: u64,
    /// Payload bits per second, all classes.
    pub l7_bps: f64,
    /// Toward the client (the responses: the busy direction).
    pub l1_to_client: L1Rate,
    pub l1_to_server: L1Rate,
    /// Transactions a worker started more than 1 ms after their scheduled time, and the worst
    /// lag (the client's own limit: more workers or a lower rate).
    pub late_starts: u64,
    pub max_start_lag_ns: u64,
    /// The illegal flows (None when the profile sent none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub illegal: Option<illegal::IllegalReport>,
    /// Packets the chain's IPS searched during the run (IPS mode on, [`L7Bed::set_ips`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ips_scanned: Option<u64>,
    /// Where the run's time went: the device's processes (on CPU, forwarding, per packet, idle
    /// sleeps) and each CPU's busy share ([`cost`]); beside `placement`'s shared CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<cost::RunCost>,
    pub placement: Placement,
}

impl L7Report {
    pub fn class(&self, c: Class) -> Option<&ClassReport> {
        self.classes.iter().find(|r| r.class == c)
    }

    /// Mean TTFB over every completed transaction of every class (seed 004's "weighted
    /// average time to first byte"); None if none completed.
    pub fn mean_ttfb_ns(&self) -> Option<f64> {
        let (sum, n) = self
            .classes
            .iter()
            .filter_map(|c| c.ttfb.as_ref())
            .fold((0.0, 0usize), |(s, n), t| {
                (s + t.mean_ns as f64 * t.samples as f64, n + t.samples)
            });
        (n > 0).then(|| sum / n as f64)
    }

    /// Illegal flows that got through (0 without illegal flows).
    pub fn illegal_passed(&self) -> u64 {
        self.illegal.as_ref().map_or(0, |i| i.passed)
    }

    /// No failed transaction and no illegal flow through.
    pub fn clean(&self) -> bool {
        self.failed == 0 && self.illegal_passed() == 0
    }

    /// The seed-004 table row: L7 throughput, L1 line rate %, mean TTFB (all classes), failures.
    pub fn summary_line(&self) -> String {
        let ttfb: Vec<String> = self
            .classes
            .iter()
            .filter_map(|c| {
                c.ttfb.as_ref().map(|t| {
                    format!(
                        "{} {:.2}/{:.2} ms",
                        c.class.name(),
                        t.mean_ns as f64 / 1e6,
                        t.p99_ns as f64 / 1e6
                    )
                })
            })
            .collect();
        let illegal = self.illegal.as_ref().map_or(String::new(), |i| {
            format!(
                ", illegal {} sent / {} denied / {} through (firewall drops {})",
                i.sent,
                i.denied,
                i.passed,
                i.device_drops.map_or("-".into(), |d| d.to_string())
            )
        });
        let ips = self
            .ips_scanned
            .map_or(String::new(), |n| format!(", IPS searched {n} packets"));
        format!(
            "{} {}: {} transactions, {} failed, L7 {:.1} Mbit/s, L1 {:.3} % of {} Gbit/s toward the client, TTFB mean/p99 {}{illegal}{ips}",
            self.device,
            self.family,
            self.transactions,
            self.failed,
            self.l7_bps / 1e6,
            self.l1_to_client.line_rate_percent,
            self.profile.line_rate_gbps,
            ttfb.join(", ")
        )
    }
}

/// Client and server namespaces with a device between them, and the servers running.
#[derive(Debug)]
pub struct L7Bed {
    // Drop order: servers, the testbed (DUT, VNFs, client namespace), the rest.
    servers: servers::Servers,
    testbed: Option<Testbed>,
    server_ns: Netns,
    client_ns: Option<Netns>,
    run_dir: Option<RunDir>,
    device: String,
    /// Routed VNFs in the chain ([`crate::chain::routed`]).
    hops: usize,
    /// The chain's firewall VNFs: how to read their drop counters.
    firewalls: Vec<FirewallCounter>,
    /// IPS mode is on in the chain's vecswitch firewalls ([`L7Bed::set_ips`]).
    ips: bool,
}

/// Where a firewall VNF's drop counter is read.
#[derive(Debug, Clone)]
enum FirewallCounter {
    /// nftables in a kernel VNF's namespace.
    Kernel { netns: String },
    /// `ctl show errors` of a vecswitch VNF.
    Vecswitch {
        bin: std::path::PathBuf,
        ctl: std::path::PathBuf,
    },
}

/// Packets the IPS of a `ctl --json show firewall` answer searched, over every interface
/// (`data.acls[].ips.scanned`, the switch's own `FirewallInfo`); None if the answer has another
/// shape.
fn ips_scanned(json: &str) -> Option<u64> {
    let f: vecswitch_switch::firewall::control::FirewallInfo =
        crate::dut::vecswitch::answer_data(json)?;
    Some(
        f.acls
            .iter()
            .filter_map(|a| a.ips.as_ref())
            .map(|i| i.scanned)
            .sum(),
    )
}

impl FirewallCounter {
    /// Packets the IPS of a vecswitch firewall searched so far (0 for the kernel's: no IPS).
    fn ips_scanned(&self) -> Result<u64> {
        match self {
            FirewallCounter::Kernel { .. } => Ok(0),
            FirewallCounter::Vecswitch { bin, ctl } => {
                let out = crate::chain::vecswitch_ctl(bin, ctl, &["--json", "show", "firewall"])?;
                ips_scanned(&out).ok_or_else(|| Error::Invalid {
                    field: "vecswitch firewall VNF `show firewall`",
                    value: out.chars().take(200).collect(),
                    expected: "a JSON answer with data.acls[].ips.scanned".into(),
                })
            }
        }
    }

    fn read(&self) -> Result<u64> {
        match self {
            FirewallCounter::Kernel { netns } => crate::chain::kernel_firewall_drops(netns),
            FirewallCounter::Vecswitch { bin, ctl } => {
                let out = crate::chain::vecswitch_ctl(bin, ctl, &["--json", "show", "errors"])?;
                crate::chain::policy::vecswitch_drops(&out).ok_or_else(|| Error::Invalid {
                    field: "vecswitch firewall VNF `show errors`",
                    value: out.chars().take(200).collect(),
                    expected: "a JSON answer with data[].node/reason/count".into(),
                })
            }
        }
    }
}

/// Configures an endpoint: IPv6 on, offloads off, RPS to `cpu`, both addresses, and the default
/// routes via `gw` when the chain routes.
fn endpoint(
    ns: &Netns,
    ifname: &str,
    addrs: &[String; 2],
    gw: Option<&[String; 2]>,
    cpu: usize,
) -> Result<()> {
    for key in [
        "net.ipv6.conf.all.disable_ipv6=0".to_string(),
        "net.ipv6.conf.default.disable_ipv6=0".to_string(),
        format!("net.ipv6.conf.{ifname}.disable_ipv6=0"),
        // No router solicitations or autoconfiguration noise on the test link.
        format!("net.ipv6.conf.{ifname}.accept_ra=0"),
        format!("net.ipv6.conf.{ifname}.router_solicitations=0"),
    ] {
        ns.sysctl(&key)?;
    }
    offloads_off(ns, ifname)?;
    if let Err(e) = ns.set_rps(ifname, CorePlan::mask(cpu)) {
        tracing::warn!("RPS not set on {ifname}: {e}");
    }
    ns.ip(&["addr", "add", &addrs[0], "dev", ifname])?;
    ns.ip(&["addr", "add", &addrs[1], "dev", ifname, "nodad"])?;
    ns.link_up(ifname)?;
    if let Some(gw) = gw {
        for g in gw {
            let via = crate::chain::routed::bare(g);
            ns.ip(&["route", "add", "default", "via", via, "dev", ifname])?;
        }
    }
    Ok(())
}

/// The server's address in the denied range (illegal flows, [`illegal`]), both families.
fn denied_address(ns: &Netns, ifname: &str, hops: usize) -> Result<()> {
    let [v4, v6] = crate::chain::routed::denied_target(hops);
    ns.ip(&["addr", "add", &v4, "dev", ifname])?;
    ns.ip(&["addr", "add", &v6, "dev", ifname, "nodad"])?;
    Ok(())
}

/// TSO, GSO, GRO and transmit checksum offload off (see the module doc).
pub fn offloads_off(ns: &Netns, ifname: &str) -> Result<()> {
    if !crate::cmd::have("ethtool") {
        return Err(Error::Unsupported {
            dut: "l7 profile".into(),
            what: "this machine".into(),
            why: "ethtool not found; install the Debian package ethtool (make setup)".into(),
        });
    }
    ns.exec(
        "ethtool",
        &[
            "-K", ifname, "tso", "off", "gso", "off", "gro", "off", "tx", "off",
        ],
    )
    .map(|_| ())
}

impl L7Bed {
    /// Client and server on one veth pair: no device, the kernel's own floor.
    pub fn direct(profile: &Profile) -> Result<L7Bed> {
        let run_dir = RunDir::create()?;
        let id = run_dir.id().to_string();
        let cores = CorePlan::default();
        let client = Netns::create(&format!("{id}-cli"))?;
        let server = Netns::create(&format!("{id}-srv"))?;
        veth_pair(&client, CLIENT_IF, &server, SERVER_IF)?;
        let (c, srv, _, _) = crate::chain::routed::endpoints(0);
        endpoint(&client, CLIENT_IF, &c, None, cores.generator)?;
        endpoint(&server, SERVER_IF, &srv, None, cores.generator)?;
        denied_address(&server, SERVER_IF, 0)?;
        let dir = run_dir.file("l7");
        let servers = servers::Servers::start(
            &server,
            &dir,
            &server_ips(0),
            &profile.sizes,
            cores.generator,
        )?;
        Ok(L7Bed {
            servers,
            testbed: None,
            server_ns: server,
            client_ns: Some(client),
            run_dir: Some(run_dir),
            device: "direct".into(),
            hops: 0,
            firewalls: Vec::new(),
            ips: false,
        })
    }

    /// Client and server on the generator ports of `topology` (a `*-veth` topology) with `dut`
    /// started on it.
    pub fn through(topology: Topology, dut: Box<dyn Dut>, profile: &Profile) -> Result<L7Bed> {
        if topology.link() != Link::Veth || topology.is_external() {
            return Err(Error::Invalid {
                field: "l7 topology",
                value: topology.to_string(),
                expected:
                    "a topology with veth generator ports (phy2phy-veth, pvp-veth, chain-veth:...)"
                        .into(),
            });
        }
        let chain = topology.chain();
        let hops = crate::chain::routed::hops(&chain);
        let device = format!("{} on {topology}", dut.name());
        let mut tb = Testbed::build(topology)?;
        let cores = tb.wiring().cores;
        let server = Netns::create(&format!("{}-srv", tb.wiring().run_id))?;
        tb.move_gen_port(1, &server)?;
        let client = tb.gen_netns().ok_or_else(|| Error::Invalid {
            field: "l7 topology",
            value: device.clone(),
            expected: "a generator namespace (veth topology)".into(),
        })?;
        let (c, srv, cgw, sgw) = crate::chain::routed::endpoints(hops);
        endpoint(client, CLIENT_IF, &c, cgw.as_ref(), cores.generator)?;
        endpoint(&server, SERVER_IF, &srv, sgw.as_ref(), cores.generator)?;
        denied_address(&server, SERVER_IF, hops)?;
        // The kernel router forwards what the endpoints send: its ends need the same offloads.
        for ns in tb.vnf_netns() {
            for e in &tb.wiring().vnf_ports {
                if let PortEnd::Veth { netns, ifname, .. } = e {
                    if netns == ns.name() {
                        offloads_off(ns, ifname)?;
                    }
                }
            }
        }
        tb.start(dut)?;
        let firewalls = chain
            .iter()
            .enumerate()
            .filter(|(_, v)| crate::chain::routed::is_firewall(v))
            .map(|(k, v)| -> Result<FirewallCounter> {
                Ok(match v.vecswitch_path() {
                    Some(bin) => FirewallCounter::Vecswitch {
                        bin: crate::chain::vecswitch_bin(bin)?,
                        ctl: crate::chain::vnf_ctl(tb.run_dir().path(), k),
                    },
                    None => FirewallCounter::Kernel {
                        netns: crate::chain::vnf_netns_name(&tb.wiring().run_id, k),
                    },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let dir = tb.run_dir().file("l7");
        let servers = servers::Servers::start(
            &server,
            &dir,
            &server_ips(hops),
            &profile.sizes,
            cores.generator,
        )?;
        Ok(L7Bed {
            servers,
            testbed: Some(tb),
            server_ns: server,
            client_ns: None,
            run_dir: None,
            device,
            hops,
            firewalls,
            ips: false,
        })
    }

    /// The client's namespace (the testbed's generator namespace).
    fn client(&self) -> &Netns {
        match (&self.client_ns, &self.testbed) {
            (Some(ns), _) => ns,
            (None, Some(tb)) => tb.gen_netns().expect("checked in L7Bed::through"),
            (None, None) => unreachable!("an L7Bed has a client namespace"),
        }
    }

    /// The server's namespace.
    pub fn server_netns(&self) -> &Netns {
        &self.server_ns
    }

    /// The testbed under the device (None for [`L7Bed::direct`]).
    pub fn testbed(&self) -> Option<&Testbed> {
        self.testbed.as_ref()
    }

    /// Keeps the run directory (configs, server logs) after drop.
    pub fn keep_run_dir(&mut self) {
        if let Some(tb) = self.testbed.as_mut() {
            tb.keep_run_dir();
        }
        if let Some(r) = self.run_dir.as_mut() {
            r.keep();
        }
    }

    /// Packets the chain's firewall VNFs dropped so far (None without a firewall VNF).
    fn firewall_drops(&self) -> Result<Option<u64>> {
        if self.firewalls.is_empty() {
            return Ok(None);
        }
        let mut sum = 0;
        for f in &self.firewalls {
            sum += f.read()?;
        }
        Ok(Some(sum))
    }

    /// Turns IPS mode on in every vecswitch firewall VNF of the chain, both ports, searching for
    /// `patterns` ([`crate::chain::policy::ips_patterns`]): writes the VNF's config with `ips`
    /// beside the one it runs (`vnfK-ips.toml` in the run directory, where `reload` may read)
    /// and `ctl reload`s it — only the two `[[firewall]]` objects change, the ports stay up.
    /// Returns how many VNFs; an error if the chain has none (the kernel's nftables firewall has
    /// no payload pattern search, see `chain::policy`).
    pub fn set_ips(&mut self, patterns: &[String]) -> Result<usize> {
        let tb = self.testbed.as_ref().ok_or_else(|| Error::Invalid {
            field: "l7 ips",
            value: self.device.clone(),
            expected: "a chain with a vecswitch-firewall VNF".into(),
        })?;
        let w = tb.wiring();
        let chain = w.topology.chain();
        let mut n = 0;
        for (k, kind) in chain.iter().enumerate() {
            let (VnfKind::VecswitchFirewall { bin }, Some(ends)) =
                (kind, w.vnf_ports.get(2 * k..2 * k + 2))
            else {
                continue;
            };
            let bin = crate::chain::vecswitch_bin(bin)?;
            let ctl = crate::chain::vnf_ctl(tb.run_dir().path(), k);
            let toml = crate::chain::vecswitch_vnf_toml_with_ips(
                kind,
                &chain,
                k,
                ends,
                &ctl,
                w.cores.vnf,
                Some(patterns),
            )?;
            let path = tb.run_dir().path().join(format!("vnf{k}-ips.toml"));
            std::fs::write(&path, toml).map_err(|source| Error::Io {
                what: "writing",
                path: path.clone(),
                source,
            })?;
            crate::chain::vecswitch_ctl(&bin, &ctl, &["reload", &path.display().to_string()])?;
            n += 1;
        }
        if n == 0 {
            return Err(Error::Invalid {
                field: "l7 ips",
                value: self.device.clone(),
                expected:
                    "a chain with a vecswitch-firewall VNF (nftables has no payload pattern search)"
                        .into(),
            });
        }
        self.ips = true;
        Ok(n)
    }

    /// What [`cost`] reads around a run: the device's processes and the plan's CPUs.
    fn cost_probe(&self) -> cost::Probe {
        match &self.testbed {
            Some(tb) => {
                let c = tb.wiring().cores;
                cost::Probe::of(
                    &tb.placement(crate::measurer::generator_placement()),
                    tb.run_dir().path(),
                    vec![c.generator, c.dut, c.vnf],
                )
            }
            None => {
                let c = CorePlan::default();
                cost::Probe {
                    processes: Vec::new(),
                    cpus: vec![c.generator, c.dut, c.vnf],
                }
            }
        }
    }

    /// Packets the chain's IPS searched so far (None when IPS mode is off).
    fn ips_scanned(&self) -> Result<Option<u64>> {
        if !self.ips {
            return Ok(None);
        }
        let mut sum = 0;
        for f in &self.firewalls {
            sum += f.ips_scanned()?;
        }
        Ok(Some(sum))
    }

    /// Runs `profile` once and reports.
    pub fn run(&mut self, profile: &Profile) -> Result<L7Report> {
        profile.validate()?;
        let family_v6 = profile.ipv6;
        let fam = usize::from(family_v6);
        let server = server_ips(self.hops)[fam];
        let classes = schedule(profile.weights, profile.transactions());
        let client = self.client().name().to_string();
        // Illegal flows: listeners that must stay unreached, the firewalls' counters, then the
        // attempts beside the mix (open loop too: spread over the run).
        // What the device's processes and the IPS did, read around everything the run sends.
        let ips_before = self.ips_scanned()?;
        let probe = self.cost_probe();
        let cost_before = probe.read();
        let n_illegal = profile.illegal_flows();
        let mut illegal_run = None;
        if n_illegal > 0 {
            let (c, _, _, _) = crate::chain::routed::endpoints(self.hops);
            let ip = |a: &str| -> IpAddr {
                crate::chain::routed::bare(a)
                    .parse()
                    .expect("addresses of the IP plan")
            };
            let targets = illegal::Targets {
                client: ip(&c[fam]),
                server,
                denied: ip(&crate::chain::routed::denied_target(self.hops)[fam]),
            };
            let listeners = illegal::Listeners::start(
                self.client(),
                &[targets.client],
                &self.server_ns,
                &[server],
            )?;
            let drops_before = self.firewall_drops()?;
            let launched = illegal::launch(
                n_illegal,
                Instant::now() + Duration::from_millis(20),
                profile.duration,
                targets,
                self.client(),
                &self.server_ns,
            )?;
            illegal_run = Some((listeners, drops_before, launched));
        }
        let before = link_bytes(&client, CLIENT_IF)?;
        let p = profile.clone();
        let (outcomes, elapsed) = self.client().run_in(move || drive(&p, server, classes))?;
        let after = link_bytes(&client, CLIENT_IF)?;
        let cost_after = probe.read();
        let cost =
            cost::RunCost::between(&probe, &cost_before, &cost_after, crate::devcost::user_hz());
        let ips_scanned = match (ips_before, self.ips_scanned()?) {
            (Some(b), Some(a)) => Some(a.saturating_sub(b)),
            _ => None,
        };
        let illegal = match illegal_run {
            None => None,
            Some((listeners, drops_before, launched)) => {
                let attempts: Vec<illegal::Attempt> = launched
                    .into_iter()
                    .filter_map(|h| h.join().ok())
                    .flatten()
                    .collect();
                let mut r = illegal::summarize(&attempts);
                // A connection the kernel completed may wait a poll (20 ms) for its accept.
                let through = attempts
                    .iter()
                    .filter(|a| a.result.is_ok() && a.kind != illegal::IllegalKind::DeniedRange)
                    .count() as u64;
                let _ = crate::wait_for(
                    "illegal-flow listeners to accept what got through",
                    Duration::from_secs(1),
                    || listeners.accepted() >= through,
                );
                r.listener_accepts = listeners.accepted();
                r.device_drops = match (drops_before, self.firewall_drops()?) {
                    (Some(b), Some(a)) => Some(a.saturating_sub(b)),
                    _ => None,
                };
                Some(r)
            }
        };
        self.servers.check_alive()?;
        if let Some(tb) = &self.testbed {
            tb.check_alive()?;
        }
        let secs = elapsed.as_secs_f64().max(1e-9);
        let line = profile.line_rate_gbps * 1e9;
        let l1 = |frames: u64, bytes: u64| {
            let bps = (bytes + 24 * frames) as f64 * 8.0 / secs;
            L1Rate {
                frames,
                bytes,
                bps,
                line_rate_percent: bps / line * 100.0,
            }
        };
        let mut classes = Vec::new();
        let mut late = 0;
        let mut max_lag = 0u64;
        for c in Class::ALL {
            let mine: Vec<&client::Outcome> = outcomes.iter().filter(|o| o.class == c).collect();
            if mine.is_empty() {
                continue;
            }
            let failed: Vec<&&client::Outcome> =
                mine.iter().filter(|o| o.error.is_some()).collect();
            let payload: u64 = mine.iter().map(|o| o.payload_bytes).sum();
            classes.push(ClassReport {
                class: c,
                transactions: mine.len() as u64,
                completed: (mine.len() - failed.len()) as u64,
                failed: failed.len() as u64,
                payload_bytes: payload,
                l7_bps: payload as f64 * 8.0 / secs,
                ttfb: LatencySummary::of(
                    mine.iter()
                        .filter_map(|o| o.ttfb.map(|t| t.as_nanos() as u64))
                        .collect(),
                ),
                errors: failed
                    .iter()
                    .take(5)
                    .filter_map(|o| o.error.clone())
                    .collect(),
            });
        }
        for o in &outcomes {
            let lag = o.start_lag.as_nanos() as u64;
            if lag > 1_000_000 {
                late += 1;
            }
            max_lag = max_lag.max(lag);
        }
        let mut placed = vec![crate::measurer::generator_placement()];
        placed[0].role = "l7-client".into();
        let placement = match &self.testbed {
            Some(tb) => {
                let mut p = tb.placement(placed.remove(0));
                p.processes.extend(self.servers.placed());
                Placement::new(p.processes).with_kernel_rx(p.kernel_rx)
            }
            None => {
                placed.extend(self.servers.placed());
                Placement::new(placed)
            }
        };
        let total: u64 = classes.iter().map(|c| c.payload_bytes).sum();
        Ok(L7Report {
            device: self.device.clone(),
            family: if family_v6 { "ipv6" } else { "ipv4" }.into(),
            profile: profile.clone(),
            elapsed_s: secs,
            transactions: outcomes.len() as u64,
            failed: classes.iter().map(|c| c.failed).sum(),
            classes,
            l7_bps: total as f64 * 8.0 / secs,
            l1_to_client: l1(after.0 - before.0, after.1 - before.1),
            l1_to_server: l1(after.2 - before.2, after.3 - before.3),
            late_starts: late,
            max_start_lag_ns: max_lag,
            illegal,
            ips_scanned,
            cost: Some(cost),
            placement,
        })
    }
}

/// The server's (IPv4, IPv6) addresses in a chain of `hops` routed VNFs.
fn server_ips(hops: usize) -> [IpAddr; 2] {
    let (_, a, _, _) = crate::chain::routed::endpoints(hops);
    let ip = |s: &str| {
        crate::chain::routed::bare(s)
            .parse()
            .expect("addresses of the IP plan")
    };
    [ip(&a[0]), ip(&a[1])]
}

/// (rx frames, rx bytes, tx frames, tx bytes) of `ifname` in `netns`.
fn link_bytes(netns: &str, ifname: &str) -> Result<(u64, u64, u64, u64)> {
    let d = format!("/sys/class/net/{ifname}/statistics");
    let out = crate::cmd::run(
        "ip",
        &[
            "netns",
            "exec",
            netns,
            "cat",
            &format!("{d}/rx_packets"),
            &format!("{d}/rx_bytes"),
            &format!("{d}/tx_packets"),
            &format!("{d}/tx_bytes"),
        ],
    )?;
    let v: Vec<u64> = out
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    match v[..] {
        [a, b, c, d] => Ok((a, b, c, d)),
        _ => Err(Error::Invalid {
            field: "interface statistics",
            value: out,
            expected: format!("four counters of {ifname} in {netns}"),
        }),
    }
}

/// The open-loop schedule on the calling thread (inside the client namespace), `profile.workers`
/// threads running the transactions. Returns every outcome and the time from the first arrival
/// to the end of the last transaction.
fn drive(
    profile: &Profile,
    server: IpAddr,
    classes: Vec<Class>,
) -> (Vec<client::Outcome>, Duration) {
    let (job_tx, job_rx) = mpsc::channel::<(Class, Instant)>();
    let job_rx = Arc::new(Mutex::new(job_rx));
    let (out_tx, out_rx) = mpsc::channel::<client::Outcome>();
    let mut workers = Vec::new();
    for i in 0..profile.workers.min(classes.len()) {
        let job_rx = Arc::clone(&job_rx);
        let out_tx = out_tx.clone();
        let sizes = profile.sizes;
        let timeout = profile.timeout;
        // Threads spawned here inherit this thread's network namespace (the client's).
        let h = std::thread::Builder::new()
            .name(format!("l7-client-{i}"))
            .spawn(move || loop {
                let job = job_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                let Ok((class, at)) = job else { break };
                let o = client::run(class, server, &sizes, at, timeout);
                if out_tx.send(o).is_err() {
                    break;
                }
            });
        match h {
            Ok(h) => workers.push(h),
            Err(e) => tracing::warn!("l7: could not start client thread {i}: {e}"),
        }
    }
    drop(out_tx);
    let t0 = Instant::now() + Duration::from_millis(20);
    let period = 1.0 / profile.rate_tps;
    for (i, c) in classes.into_iter().enumerate() {
        let at = t0 + Duration::from_secs_f64(i as f64 * period);
        let now = Instant::now();
        if at > now {
            std::thread::sleep(at - now);
        }
        if job_tx.send((c, at)).is_err() {
            break;
        }
    }
    drop(job_tx);
    for w in workers {
        let _ = w.join();
    }
    let elapsed = t0.elapsed();
    (out_rx.into_iter().collect(), elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `show firewall` as the switch writes it: the IPS counts of every interface are summed.
    #[test]
    fn ips_scanned_sums_the_interfaces_of_show_firewall() {
        use vecswitch_switch::firewall::control::{AclInfo, FirewallInfo, IpsInfo};
        let acl = |interface: &str, scanned: Option<u64>| AclInfo {
            interface: interface.into(),
            rules: Vec::new(),
            default_action: vecswitch_switch::firewall::Action::Deny,
            default_hits: 0,
            ips: scanned.map(|scanned| IpsInfo {
                case_insensitive: false,
                patterns: vec![("USER root".into(), 0)],
                scanned,
            }),
        };
        let f = FirewallInfo {
            acls: vec![acl("v0", Some(40)), acl("v1", Some(2)), acl("v2", None)],
            connections: 0,
            reflected: 0,
            connections_created: 0,
            connections_expired: 0,
            settings: Default::default(),
        };
        let json = serde_json::json!({ "ok": true, "data": f }).to_string();
        assert_eq!(ips_scanned(&json), Some(42));
        // Another shape (a renamed field) is unreadable, not zero.
        assert_eq!(
            ips_scanned(r#"{"ok":true,"data":{"acls":[{"ips":{"scanned":5}}]}}"#),
            None
        );
    }

    #[test]
    fn schedule_holds_the_weights_exactly_per_cycle_and_spreads_them() {
        let s = schedule([60, 35, 4, 1], 200);
        for c in Class::ALL {
            let n = s.iter().filter(|x| **x == c).count();
            let want = match c {
                Class::HttpSmall => 120,
                Class::HttpLarge => 70,
                Class::Ftp => 8,
                Class::Dns => 2,
            };
            assert_eq!(n, want, "{c:?}");
        }
        // Spread: no run of more than 2 large objects in a row.
        assert!(!s
            .windows(3)
            .any(|w| w.iter().all(|c| *c == Class::HttpLarge)));
        assert_eq!(schedule([0, 0, 0, 1], 3), vec![Class::Dns; 3]);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let s = LatencySummary::of((1..=100).collect()).unwrap();
        assert_eq!(
            (s.min_ns, s.p50_ns, s.p90_ns, s.p99_ns, s.max_ns),
            (1, 50, 90, 99, 100)
        );
        assert_eq!(s.mean_ns, 50);
        assert!(LatencySummary::of(Vec::new()).is_none());
        let one = LatencySummary::of(vec![7]).unwrap();
        assert_eq!((one.p50_ns, one.p99_ns), (7, 7));
    }

    #[test]
    fn profiles_are_checked_field_by_field() {
        assert!(Profile::default().validate().is_ok());
        let e = Profile {
            rate_tps: 0.0,
            ..Profile::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("rate_tps") && e.contains('0'), "{e}");
        let e = Profile {
            weights: [0; 4],
            ..Profile::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("weights"), "{e}");
        assert_eq!(
            Profile {
                rate_tps: 20.0,
                duration: Duration::from_secs(6),
                ..Profile::default()
            }
            .transactions(),
            120
        );
    }
}
