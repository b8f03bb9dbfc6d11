//! L7 suites: the seed-004 table for several devices, side by side (`vecswitch bench` runs a
//! suite file that has an `[l7]` table, e.g. `docs/suites/chain-l7.toml`).
//!
//! ```toml
//! name = "..."
//! [l7]
//! rate_tps = 20            # open-loop arrivals per second
//! duration_s = 5
//! families = ["ipv4", "ipv6"]
//! repeats = 3              # runs per device and family; the table shows their median
//! weights = { http_small = 60, http_large = 35, ftp = 4, dns = 1 }   # optional
//! sizes = { http_small = 16384, http_large = 1048576, ftp = 262144 } # optional
//! line_rate_gbps = 10      # optional
//!
//! [[dut]]
//! name = "direct"          # no device: the kernel's floor
//! [[dut]]
//! name = "vecswitch-xconnect"
//! topology = "chain-veth:kernel-router+vecswitch"
//! [[dut]]
//! label = "full chain"     # optional: the table's scenario column
//! name = "vecswitch-xconnect"
//! topology = "chain-veth:vecswitch-firewall+vecswitch-router-nat"
//! illegal_per_100 = 2      # optional: illegal flows per 100 transactions (super::illegal)
//! ```
//!
//! Every device is built, measured (every family, `repeats` times, interleaved) and torn down in
//! turn; one that fails to start is recorded in `failures` and the others still run.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use vecswitch_lab::report::l7 as table;

use super::cost::ProcessCost;
use super::{Class, L7Bed, L7Report, Profile, Sizes};
use crate::dut::DutKind;
use crate::error::{Error, Result};
use crate::topology::Topology;

/// The class weights as a suite writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Weights {
    pub http_small: u32,
    pub http_large: u32,
    pub ftp: u32,
    pub dns: u32,
}

/// The `[l7]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L7Table {
    pub rate_tps: f64,
    pub duration_s: f64,
    #[serde(default = "default_families")]
    pub families: Vec<String>,
    #[serde(default = "one")]
    pub repeats: u32,
    #[serde(default)]
    pub weights: Option<Weights>,
    #[serde(default)]
    pub sizes: Option<Sizes>,
    #[serde(default)]
    pub line_rate_gbps: Option<f64>,
    #[serde(default)]
    pub workers: Option<usize>,
    /// Burn-in: run each device and family for `duration_s` as consecutive intervals of this
    /// many seconds, one result (and table row) per interval; `repeats` must be 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burn_in_interval_s: Option<f64>,
}

fn default_families() -> Vec<String> {
    vec!["ipv4".into()]
}

fn one() -> u32 {
    1
}

/// One device of the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L7Dut {
    /// `direct`, or a DUT driver name ([`crate::dut::DutKind::NAMES`]).
    pub name: String,
    /// A `*-veth` topology (not for `direct`).
    #[serde(default)]
    pub topology: Option<String>,
    /// The scenario's name in the table (default: the device and topology).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Illegal flows per 100 transactions through this device ([`super::illegal`]).
    #[serde(default)]
    pub illegal_per_100: u32,
    /// The families the illegal flows are sent in (default: every family of the suite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub illegal_families: Option<Vec<String>>,
    /// IPS mode on the chain's vecswitch firewalls (seed 004's "advanced mode"; patterns
    /// [`crate::chain::policy::ips_patterns`], [`super::L7Bed::set_ips`]). Needs a
    /// `vecswitch-firewall` VNF: nftables has no payload pattern search.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ips: bool,
}

impl L7Dut {
    /// The table's name of this device.
    pub fn label(&self) -> String {
        match (&self.label, &self.topology) {
            (Some(l), _) => l.clone(),
            (None, Some(t)) => format!("{} on {t}", self.name),
            (None, None) => self.name.clone(),
        }
    }
}

/// A whole L7 suite file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L7Suite {
    pub name: String,
    pub l7: L7Table,
    #[serde(rename = "dut")]
    pub duts: Vec<L7Dut>,
}

/// Whether a suite's text is an L7 suite (it has a top-level `[l7]` table).
pub fn is_l7_suite(text: &str) -> bool {
    text.parse::<toml::Table>()
        .map(|t| t.contains_key("l7"))
        .unwrap_or(false)
}

impl L7Suite {
    /// Parses and checks a suite; errors name the field, the value and what is accepted.
    pub fn parse(text: &str) -> Result<L7Suite> {
        let s: L7Suite = toml::from_str(text).map_err(|e| Error::Invalid {
            field: "l7 suite",
            value: e.to_string(),
            expected: "the format in crates/testbed/src/l7/suite.rs (docs/TESTBED.md, \"Application traffic\")".into(),
        })?;
        for f in &s.l7.families {
            if f != "ipv4" && f != "ipv6" {
                return Err(Error::Invalid {
                    field: "l7.families",
                    value: f.clone(),
                    expected: "ipv4, ipv6".into(),
                });
            }
        }
        if s.l7.repeats == 0 || s.l7.repeats > 100 {
            return Err(Error::Invalid {
                field: "l7.repeats",
                value: s.l7.repeats.to_string(),
                expected: "1 to 100".into(),
            });
        }
        if !(s.l7.duration_s.is_finite() && s.l7.duration_s > 0.0) {
            return Err(Error::Invalid {
                field: "l7.duration_s",
                value: s.l7.duration_s.to_string(),
                expected: "a positive number of seconds".into(),
            });
        }
        if let Some(i) = s.l7.burn_in_interval_s {
            if !(i.is_finite() && i > 0.0 && i <= s.l7.duration_s) {
                return Err(Error::Invalid {
                    field: "l7.burn_in_interval_s",
                    value: i.to_string(),
                    expected: format!("more than 0 s, at most duration_s ({})", s.l7.duration_s),
                });
            }
            if s.l7.repeats != 1 {
                return Err(Error::Invalid {
                    field: "l7.repeats",
                    value: s.l7.repeats.to_string(),
                    expected: "1 with burn_in_interval_s (the intervals are the repeats)".into(),
                });
            }
        }
        if s.duts.is_empty() {
            return Err(Error::Invalid {
                field: "dut",
                value: "none".into(),
                expected: "at least one [[dut]]".into(),
            });
        }
        for d in &s.duts {
            match (d.name.as_str(), &d.topology) {
                ("direct", None) => {}
                ("direct", Some(t)) => {
                    return Err(Error::Invalid {
                        field: "dut.topology",
                        value: t.clone(),
                        expected: "no topology for `direct`".into(),
                    })
                }
                (_, None) => {
                    return Err(Error::Invalid {
                        field: "dut.topology",
                        value: format!("missing for {}", d.name),
                        expected: "a *-veth topology (phy2phy-veth, chain-veth:...)".into(),
                    })
                }
                (n, Some(t)) => {
                    DutKind::parse(n, PathBuf::new())?;
                    let topo = t.parse::<Topology>()?;
                    let fw = topo
                        .chain()
                        .iter()
                        .any(|v| matches!(v, crate::topology::VnfKind::VecswitchFirewall { .. }));
                    if d.ips && !fw {
                        return Err(Error::Invalid {
                            field: "dut.ips",
                            value: format!("true on {t}"),
                            expected: "a topology with a vecswitch-firewall VNF (the kernel's nftables has no payload pattern search: no IPS scenario for kernel-firewall)".into(),
                        });
                    }
                }
            }
            if d.ips && d.topology.is_none() {
                return Err(Error::Invalid {
                    field: "dut.ips",
                    value: format!("true on {}", d.name),
                    expected: "a topology with a vecswitch-firewall VNF".into(),
                });
            }
        }
        s.profile(false).validate()?;
        for d in &s.duts {
            for f in d.illegal_families.iter().flatten() {
                if !s.l7.families.contains(f) {
                    return Err(Error::Invalid {
                        field: "dut.illegal_families",
                        value: f.clone(),
                        expected: format!("families of the suite ({:?})", s.l7.families),
                    });
                }
            }
            s.profile_for(false, d).validate()?;
        }
        Ok(s)
    }

    /// The profile for one family through device `d` (its illegal flows, if sent in that family).
    pub fn profile_for(&self, ipv6: bool, d: &L7Dut) -> Profile {
        let fam = if ipv6 { "ipv6" } else { "ipv4" };
        let sent = d
            .illegal_families
            .as_ref()
            .is_none_or(|f| f.iter().any(|x| x == fam));
        Profile {
            illegal_per_100: if sent { d.illegal_per_100 } else { 0 },
            ..self.profile(ipv6)
        }
    }

    /// The profile for one family, without illegal flows.
    pub fn profile(&self, ipv6: bool) -> Profile {
        let d = Profile::default();
        let t = &self.l7;
        Profile {
            rate_tps: t.rate_tps,
            duration: Duration::from_secs_f64(t.duration_s.clamp(0.0, 1e7)),
            weights: t
                .weights
                .map(|w| [w.http_small, w.http_large, w.ftp, w.dns])
                .unwrap_or(d.weights),
            sizes: t.sizes.unwrap_or(d.sizes),
            ipv6,
            timeout: d.timeout,
            workers: t.workers.unwrap_or(d.workers),
            line_rate_gbps: t.line_rate_gbps.unwrap_or(d.line_rate_gbps),
            illegal_per_100: 0,
        }
    }
}

/// One device's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L7DeviceResults {
    pub dut: String,
    pub topology: Option<String>,
    /// The scenario's name ([`L7Dut::label`]).
    #[serde(default)]
    pub label: String,
    /// Every run, in the order made (families interleaved per repeat).
    pub runs: Vec<L7Report>,
}

/// A suite's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L7SuiteResults {
    /// `vecswitch.l7-results/1`.
    pub schema: String,
    pub suite: L7Suite,
    pub devices: Vec<L7DeviceResults>,
    /// Devices that could not be set up or failed mid-run, with the error.
    pub failures: Vec<String>,
}

/// Runs `suite`; vecswitch drivers and VNFs use `vecswitch_bin`. `progress` gets one line per run.
pub fn run_suite(
    suite: &L7Suite,
    vecswitch_bin: PathBuf,
    progress: &mut dyn FnMut(&str),
) -> L7SuiteResults {
    let mut out = L7SuiteResults {
        schema: "vecswitch.l7-results/1".into(),
        suite: suite.clone(),
        devices: Vec::new(),
        failures: Vec::new(),
    };
    for d in &suite.duts {
        if crate::signal::stop_requested() {
            out.failures
                .push(format!("{}: not run (stop requested)", d.name));
            continue;
        }
        let mut res = L7DeviceResults {
            dut: d.name.clone(),
            topology: d.topology.clone(),
            label: d.label(),
            runs: Vec::new(),
        };
        if let Err(e) = run_device(suite, d, &vecswitch_bin, &mut res, progress) {
            out.failures.push(format!("{}: {e}", d.label()));
        }
        if !res.runs.is_empty() {
            out.devices.push(res);
        }
    }
    out
}

fn run_device(
    suite: &L7Suite,
    d: &L7Dut,
    bin: &std::path::Path,
    res: &mut L7DeviceResults,
    progress: &mut dyn FnMut(&str),
) -> Result<()> {
    let first = suite.profile_for(false, d);
    let mut bed = match &d.topology {
        None => L7Bed::direct(&first),
        Some(t) => {
            let topo = with_vecswitch_bin(t.parse::<Topology>()?, bin);
            let kind = DutKind::parse(&d.name, bin.to_path_buf())?;
            L7Bed::through(topo, kind.build(), &first)
        }
    }?;
    if d.ips {
        let n = bed.set_ips(&crate::chain::policy::ips_patterns())?;
        progress(&format!(
            "{}: IPS mode on in {n} firewall VNF(s)",
            d.label()
        ));
    }
    if let Some(interval) = suite.l7.burn_in_interval_s {
        // Burn-in: one family after the other, each as back-to-back intervals.
        let n = (suite.l7.duration_s / interval).ceil().max(1.0) as usize;
        for f in &suite.l7.families {
            let p = Profile {
                duration: Duration::from_secs_f64(interval),
                ..suite.profile_for(f == "ipv6", d)
            };
            for i in 0..n {
                if crate::signal::stop_requested() {
                    return Err(Error::Invalid {
                        field: "burn-in",
                        value: format!("stopped after {i} of {n} intervals"),
                        expected: "no stop request (Ctrl-C, SIGTERM)".into(),
                    });
                }
                let r = bed.run(&p)?;
                progress(&format!("interval {}/{n}: {}", i + 1, r.summary_line()));
                res.runs.push(r);
            }
        }
        return Ok(());
    }
    for rep in 0..suite.l7.repeats {
        for f in &suite.l7.families {
            let p = suite.profile_for(f == "ipv6", d);
            let r = bed.run(&p)?;
            progress(&format!(
                "run {}/{}: {}",
                rep + 1,
                suite.l7.repeats,
                r.summary_line()
            ));
            res.runs.push(r);
        }
    }
    Ok(())
}

/// `vecswitch` VNFs parsed from a topology name run `bin`.
fn with_vecswitch_bin(t: Topology, bin: &std::path::Path) -> Topology {
    match t {
        Topology::Chain { link, vnfs } => Topology::Chain {
            link,
            vnfs: vnfs
                .into_iter()
                .map(|v| v.with_vecswitch_bin(bin))
                .collect(),
        },
        t => t,
    }
}

/// The illegal flows of `runs` summed (None if none sent any).
fn illegal_cell<'a>(runs: impl Iterator<Item = &'a L7Report>) -> Option<table::IllegalCell> {
    let mut cell: Option<table::IllegalCell> = None;
    for i in runs.filter_map(|r| r.illegal.as_ref()) {
        let c = cell.get_or_insert(table::IllegalCell {
            sent: 0,
            denied: 0,
            passed: 0,
            device_drops: Some(0),
        });
        c.sent += i.sent;
        c.denied += i.denied;
        c.passed += i.passed;
        c.device_drops = c.device_drops.zip(i.device_drops).map(|(a, b)| a + b);
    }
    cell
}

/// The cost table's rows of one scenario and family ([`super::cost`]): one per device process
/// (as the first run lists them), medians over the runs, counts summed.
fn cost_rows(scenario: &str, family: &str, runs: &[&L7Report]) -> Vec<table::L7CostRow> {
    let Some(first) = runs.first().and_then(|r| r.cost.as_ref()) else {
        return Vec::new();
    };
    let avg_ttfb_ms =
        median(runs.iter().filter_map(|r| r.mean_ttfb_ns()).collect()).map(|x| x / 1e6);
    first
        .processes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mine: Vec<(&ProcessCost, &L7Report)> = runs
                .iter()
                .filter_map(|r| Some((r.cost.as_ref()?.processes.get(i)?, *r)))
                .collect();
            let pct = |f: fn(&ProcessCost) -> Option<f64>| {
                median(mine.iter().filter_map(|(p, _)| f(p)).collect()).map(|x| x * 100.0)
            };
            // The process's CPU, when it has one: its busy share and the placement's line.
            let cpu: Option<usize> = match p.cpus.as_slice() {
                [one] => one.parse().ok(),
                _ => None,
            };
            let cpu_busy = cpu.and_then(|c| {
                median(
                    mine.iter()
                        .filter_map(|(_, r)| {
                            r.cost
                                .as_ref()?
                                .cpus
                                .iter()
                                .find(|x| x.cpu == c)
                                .map(|x| x.busy)
                        })
                        .collect(),
                )
            });
            let shared = cpu
                .and_then(|c| first_run_line(runs, &format!("cpu {c} ")))
                .unwrap_or_default();
            let sum = |f: fn(&ProcessCost) -> Option<u64>| {
                mine.iter().map(|(p, _)| f(p)).sum::<Option<u64>>()
            };
            table::L7CostRow {
                scenario: scenario.to_string(),
                family: family.to_string(),
                avg_ttfb_ms,
                process: format!("{} {}", p.role, p.name),
                cpus: p.cpus.join(","),
                cpu_busy_percent: cpu_busy.map(|x| x * 100.0),
                on_cpu_percent: pct(|p| p.on_cpu),
                forwarding_percent: pct(|p| p.forwarding),
                forwarding_us_per_packet: median(
                    mine.iter()
                        .filter_map(|(p, _)| p.forwarding_ns_per_packet)
                        .collect(),
                )
                .map(|x| x / 1e3),
                packets: sum(|p| p.rx_packets),
                idle_sleeps: sum(|p| p.idle_sleeps),
                shared,
            }
        })
        .collect()
}

/// The first run's placement line (`shared_cpus`) that starts with `prefix`.
fn first_run_line(runs: &[&L7Report], prefix: &str) -> Option<String> {
    runs.first()?
        .placement
        .shared_cpus
        .iter()
        .find(|l| l.starts_with(prefix))
        .cloned()
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

impl L7SuiteResults {
    /// Seed 004's table ([`vecswitch_lab::report::l7`]), one row per device and family: L7
    /// throughput, L1 line rate %, average TTFB (weighted over every completed transaction, as
    /// seed 004's; then per class) and p99, the median over the runs; transactions, failures and
    /// illegal flows (sent / denied / through, and the firewalls' drops) summed over the runs.
    /// A burn-in adds one row per interval.
    pub fn table(&self) -> table::L7Table {
        let mut t = table::L7Table {
            title: self.suite.name.clone(),
            line_rate_gbps: self.suite.profile(false).line_rate_gbps,
            rows: Vec::new(),
            intervals: Vec::new(),
            costs: Vec::new(),
            not_measured: self.failures.clone(),
        };
        for d in &self.devices {
            let device = if d.label.is_empty() {
                match &d.topology {
                    Some(t) => format!("{} on {t}", d.dut),
                    None => d.dut.clone(),
                }
            } else {
                d.label.clone()
            };
            for fam in &self.suite.l7.families {
                let runs: Vec<&L7Report> = d.runs.iter().filter(|r| &r.family == fam).collect();
                if runs.is_empty() {
                    continue;
                }
                let ms = |v: Vec<f64>| median(v).map(|x| x / 1e6);
                let ttfb = |c: Class, p99: bool| {
                    ms(runs
                        .iter()
                        .filter_map(|r| r.class(c)?.ttfb.as_ref())
                        .map(|t| if p99 { t.p99_ns } else { t.mean_ns } as f64)
                        .collect())
                };
                t.rows.push(table::L7Row {
                    scenario: device.clone(),
                    family: fam.clone(),
                    runs: runs.len(),
                    l7_mbps: median(runs.iter().map(|r| r.l7_bps / 1e6).collect()).unwrap_or(0.0),
                    l1_percent: median(
                        runs.iter()
                            .map(|r| r.l1_to_client.line_rate_percent)
                            .collect(),
                    )
                    .unwrap_or(0.0),
                    avg_ttfb_ms: ms(runs.iter().filter_map(|r| r.mean_ttfb_ns()).collect()),
                    ttfb_ms: table::ClassTtfb {
                        http_small: ttfb(Class::HttpSmall, false),
                        http_large: ttfb(Class::HttpLarge, false),
                        ftp: ttfb(Class::Ftp, false),
                        dns: ttfb(Class::Dns, false),
                    },
                    p99_http_small_ms: ttfb(Class::HttpSmall, true),
                    transactions: runs.iter().map(|r| r.transactions).sum(),
                    failed: runs.iter().map(|r| r.failed).sum(),
                    illegal: illegal_cell(runs.iter().copied()),
                });
                t.costs.extend(cost_rows(&device, fam, &runs));
                if self.suite.l7.burn_in_interval_s.is_some() {
                    for (i, r) in runs.iter().enumerate() {
                        t.intervals.push(table::L7Interval {
                            scenario: device.clone(),
                            family: fam.clone(),
                            index: i + 1,
                            l7_mbps: r.l7_bps / 1e6,
                            avg_ttfb_ms: r.mean_ttfb_ns().map(|x| x / 1e6),
                            p99_http_small_ms: r
                                .class(Class::HttpSmall)
                                .and_then(|c| c.ttfb.as_ref())
                                .map(|t| t.p99_ns as f64 / 1e6),
                            transactions: r.transactions,
                            failed: r.failed,
                            illegal: illegal_cell(std::iter::once(*r)),
                        });
                    }
                }
            }
        }
        t
    }

    /// [`L7SuiteResults::table`] as Markdown.
    pub fn table_markdown(&self) -> String {
        vecswitch_lab::report::l7::markdown(&self.table())
    }

    /// Whether every device ran every run without a failed transaction or an illegal flow
    /// that got through.
    pub fn all_clean(&self) -> bool {
        self.failures.is_empty()
            && self
                .devices
                .iter()
                .all(|d| d.runs.iter().all(L7Report::clean))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUITE: &str = include_str!("../../../../docs/suites/chain-l7.toml");

    #[test]
    fn the_shipped_suite_parses() {
        assert!(is_l7_suite(SUITE));
        let s = L7Suite::parse(SUITE).unwrap();
        assert!(s.duts.iter().any(|d| d.name == "direct"));
        assert!(s.duts.iter().any(|d| d.name == "linux-bridge"));
        assert!(s.duts.iter().any(|d| d
            .topology
            .as_deref()
            .is_some_and(|t| t.starts_with("chain-veth:"))));
        assert_eq!(s.profile(true).weights, [60, 35, 4, 1]);
        assert!(s.profile(true).ipv6);
        assert!(!is_l7_suite("name = \"x\"\n[[dut]]\nname = \"ovs\"\n"));
    }

    #[test]
    fn the_edge_chain_suite_has_seed_004s_scenarios_side_by_side() {
        let s = L7Suite::parse(include_str!("../../../../docs/suites/edge-chain.toml")).unwrap();
        assert_eq!(s.l7.families, ["ipv4", "ipv6"]);
        assert_eq!(s.duts.len(), 9);
        for (side, dut) in [
            ("vecswitch", "vecswitch-xconnect"),
            ("kernel", "linux-bridge"),
        ] {
            let mine: Vec<&L7Dut> = s.duts.iter().filter(|d| d.name == dut && !d.ips).collect();
            assert_eq!(mine.len(), 4, "{side}");
            let chains: Vec<String> = mine
                .iter()
                .map(|d| {
                    let t: Topology = d.topology.as_deref().unwrap().parse().unwrap();
                    t.chain()
                        .iter()
                        .map(|v| v.name())
                        .collect::<Vec<_>>()
                        .join("+")
                })
                .collect();
            let want: Vec<String> = ["", "firewall", "router-nat", "firewall+router-nat"]
                .iter()
                .map(|c| {
                    c.split('+')
                        .filter(|x| !x.is_empty())
                        .map(|x| format!("{side}-{x}"))
                        .collect::<Vec<_>>()
                        .join("+")
                })
                .collect();
            assert_eq!(chains, want, "{side}");
            // Illegal flows exactly through the scenarios with a firewall.
            for (d, c) in mine.iter().zip(&chains) {
                assert_eq!(d.illegal_per_100 > 0, c.contains("firewall"), "{c}");
            }
        }
        // Illegal flows in both families through both firewalls (IPv6 rules on both sides).
        let fw = &s.duts[1];
        assert_eq!(s.profile_for(false, fw).illegal_per_100, 5);
        assert_eq!(s.profile_for(true, fw).illegal_per_100, 5);
        assert_eq!(s.profile_for(true, &s.duts[6]).illegal_per_100, 5);
        assert_eq!(s.duts[3].label(), "vecswitch, firewall, router (NAT)");
        // IPS mode: the full vecswitch chain once more, with IPS on; no kernel IPS row.
        let ips: Vec<&L7Dut> = s.duts.iter().filter(|d| d.ips).collect();
        assert_eq!(ips.len(), 1);
        assert_eq!(ips[0].topology, s.duts[3].topology);
        assert_eq!(ips[0].label(), "vecswitch, firewall (IPS), router (NAT)");
        for (t, field) in [
            ("chain-veth:kernel-firewall", "dut.ips"),
            ("phy2phy-veth", "dut.ips"),
        ] {
            let e = L7Suite::parse(&format!(
                "name = \"x\"\n[l7]\nrate_tps = 10\nduration_s = 1\n[[dut]]\nname = \"linux-bridge\"\ntopology = \"{t}\"\nips = true\n"
            ))
            .unwrap_err()
            .to_string();
            assert!(
                e.contains(field) && e.contains("vecswitch-firewall"),
                "{t}: {e}"
            );
        }
        let e = L7Suite::parse(
            "name = \"x\"\n[l7]\nrate_tps = 10\nduration_s = 1\n[[dut]]\nname = \"direct\"\nillegal_per_100 = 1\nillegal_families = [\"ipv6\"]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("illegal_families") && e.contains("ipv6"), "{e}");
    }

    #[test]
    fn the_burn_in_suite_runs_intervals_of_the_full_chain() {
        let s = L7Suite::parse(include_str!("../../../../docs/suites/burn-in.toml")).unwrap();
        assert_eq!(s.l7.burn_in_interval_s, Some(10.0));
        assert_eq!(s.l7.duration_s, 60.0);
        assert!(s.duts[0].illegal_per_100 > 0);
        let base = "name = \"x\"\n[l7]\nrate_tps = 10\nduration_s = 5\n";
        for (extra, field) in [
            ("burn_in_interval_s = 6\n", "burn_in_interval_s"),
            ("burn_in_interval_s = 0\n", "burn_in_interval_s"),
            ("burn_in_interval_s = 1\nrepeats = 2\n", "repeats"),
        ] {
            let e = L7Suite::parse(&format!("{base}{extra}[[dut]]\nname = \"direct\"\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(field), "{extra}: {e}");
        }
    }

    #[test]
    fn bad_suites_name_the_field() {
        let base = "name = \"x\"\n[l7]\nrate_tps = 10\nduration_s = 1\n";
        for (extra, field) in [
            (
                "families = [\"ipx\"]\n[[dut]]\nname = \"direct\"\n",
                "l7.families",
            ),
            ("[[dut]]\nname = \"linux-bridge\"\n", "dut.topology"),
            (
                "[[dut]]\nname = \"direct\"\ntopology = \"phy2phy-veth\"\n",
                "dut.topology",
            ),
            (
                "[[dut]]\nname = \"frob\"\ntopology = \"phy2phy-veth\"\n",
                "frob",
            ),
            (
                "[[dut]]\nname = \"linux-bridge\"\ntopology = \"chain-veth:frob\"\n",
                "frob",
            ),
            ("bogus = 1\n[[dut]]\nname = \"direct\"\n", "bogus"),
        ] {
            let e = L7Suite::parse(&format!("{base}{extra}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(field), "{extra}: {e}");
        }
        let e = L7Suite::parse(
            "name = \"x\"\n[l7]\nrate_tps = 0\nduration_s = 1\n[[dut]]\nname = \"direct\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("rate_tps"), "{e}");
    }

    #[test]
    fn medians_of_even_and_odd_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        assert_eq!(median(Vec::new()), None);
    }
}
