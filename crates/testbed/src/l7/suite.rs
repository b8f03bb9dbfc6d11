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
//! ```
//!
//! Every device is built, measured (every family, `repeats` times, interleaved) and torn down in
//! turn; one that fails to start is recorded in `failures` and the others still run.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Class, L7Bed, L7Report, Profile, Sizes};
use crate::dut::DutKind;
use crate::error::{Error, Result};
use crate::topology::{Topology, VnfKind};

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
    /// `direct`, or a DUT driver name ([`crate::dut::DUT_NAMES`]).
    pub name: String,
    /// A `*-veth` topology (not for `direct`).
    #[serde(default)]
    pub topology: Option<String>,
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
                    t.parse::<Topology>()?;
                }
            }
        }
        s.profile(false).validate()?;
        Ok(s)
    }

    /// The profile for one family.
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
        }
    }
}

/// One device's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L7DeviceResults {
    pub dut: String,
    pub topology: Option<String>,
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
            runs: Vec::new(),
        };
        if let Err(e) = run_device(suite, d, &vecswitch_bin, &mut res, progress) {
            let label = format!("{} on {}", d.name, d.topology.as_deref().unwrap_or("-"));
            out.failures.push(format!("{label}: {e}"));
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
    let first = suite.profile(false);
    let mut bed = match &d.topology {
        None => L7Bed::direct(&first),
        Some(t) => {
            let topo = with_vecswitch_bin(t.parse::<Topology>()?, bin);
            let kind = DutKind::parse(&d.name, bin.to_path_buf())?;
            L7Bed::through(topo, kind.build(), &first)
        }
    }?;
    for rep in 0..suite.l7.repeats {
        for f in &suite.l7.families {
            let p = suite.profile(f == "ipv6");
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
                .map(|v| match v {
                    VnfKind::VecswitchXconnect { bin: b } if b.as_os_str().is_empty() => {
                        VnfKind::VecswitchXconnect {
                            bin: bin.to_path_buf(),
                        }
                    }
                    v => v,
                })
                .collect(),
        },
        t => t,
    }
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
    /// Seed 004's table, one row per device and family: L7 throughput, L1 line rate %, average
    /// TTFB per class (median over the repeats; p99 beside it), transactions and failures
    /// (summed over the repeats).
    pub fn table_markdown(&self) -> String {
        let mut s = String::from(
            "| device | family | runs | L7 throughput (Mbit/s) | L1 line rate (%) | avg TTFB http-small (ms) | avg TTFB http-large (ms) | avg TTFB ftp (ms) | avg TTFB dns (ms) | p99 TTFB http-small (ms) | transactions | failed |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{:.2}", x / 1e6));
        for d in &self.devices {
            let device = match &d.topology {
                Some(t) => format!("{} on {t}", d.dut),
                None => d.dut.clone(),
            };
            for fam in &self.suite.l7.families {
                let runs: Vec<&L7Report> = d.runs.iter().filter(|r| &r.family == fam).collect();
                if runs.is_empty() {
                    continue;
                }
                let ttfb = |c: Class, p99: bool| {
                    median(
                        runs.iter()
                            .filter_map(|r| r.class(c)?.ttfb.as_ref())
                            .map(|t| if p99 { t.p99_ns } else { t.mean_ns } as f64)
                            .collect(),
                    )
                };
                let l7 = median(runs.iter().map(|r| r.l7_bps / 1e6).collect()).unwrap_or(0.0);
                let l1 = median(
                    runs.iter()
                        .map(|r| r.l1_to_client.line_rate_percent)
                        .collect(),
                )
                .unwrap_or(0.0);
                s.push_str(&format!(
                    "| {device} | {fam} | {} | {l7:.1} | {l1:.3} | {} | {} | {} | {} | {} | {} | {} |\n",
                    runs.len(),
                    ms(ttfb(Class::HttpSmall, false)),
                    ms(ttfb(Class::HttpLarge, false)),
                    ms(ttfb(Class::Ftp, false)),
                    ms(ttfb(Class::Dns, false)),
                    ms(ttfb(Class::HttpSmall, true)),
                    runs.iter().map(|r| r.transactions).sum::<u64>(),
                    runs.iter().map(|r| r.failed).sum::<u64>(),
                ));
            }
        }
        for f in &self.failures {
            s.push_str(&format!("\nnot measured: {f}\n"));
        }
        s
    }

    /// Whether every device ran every run without a failed transaction.
    pub fn all_clean(&self) -> bool {
        self.failures.is_empty()
            && self
                .devices
                .iter()
                .all(|d| d.runs.iter().all(|r| r.failed == 0))
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
