//! `ovs`: Open vSwitch (Debian's `openvswitch-switch`) with the userspace `netdev` datapath, started
//! by hand — there is no systemd here (DESIGN.md, pitfalls) and the host's own OVS, if any, must not
//! be touched.
//!
//! Everything lives in `<run dir>/ovs/`: a fresh database (`ovsdb-tool create`), `ovsdb-server` on
//! a private socket, `ovs-vswitchd` with private unixctl, pid and log files and `OVS_RUNDIR` pointing
//! there (bridge management sockets). Both daemons run in the foreground as children inside the DUT
//! namespace, pinned to the DUT CPU; the PMD threads get `pmd-cpu-mask` of that CPU.
//!
//! Ports: one `netdev` bridge per port pair; each DUT veth end is added as `type=afxdp` (≈ 0.84 Mpps
//! measured here, with a PMD thread) and, if OVS reports an error for it, re-added as a plain
//! `system` port (≈ 0.05 Mpps, polled by the main thread). Which one was used is in
//! [`OvsDut::port_types`] and in `describe`. The `ovs-afxdp` variant ([`OvsDut::afxdp_only`])
//! never falls back: a port OVS cannot open as afxdp fails the setup with OVS's error, so a
//! comparison labelled "OVS afxdp" never measures a system port. Forwarding is port-to-port OpenFlow rules
//! (`in_port=A,actions=output:B` and back), as VSPERF's phy2phy tests program it.
//!
//! Shutdown: `ovs-appctl exit --cleanup` to vswitchd, `exit` to ovsdb-server, then the process
//! guards reap (and, if needed, kill) both.
//!
//! Counters ([`Dut::counters`]): `ovs-appctl dpctl/show -s` (the datapath's live per-port
//! RX/TX packets and drops, and `lost:` — packets lost on the way to the slow path — as internal
//! drops) and `ovs-appctl dpif-netdev/pmd-stats-show` (the PMD threads' and main thread's
//! processing cycles: busy clocks for the device-cost comparison). The database's interface
//! statistics are not used: vswitchd refreshes them only every 5 s. afxdp ports print their drops
//! as `dropped:?`; for them the drops come from the kernel's counters of the same veth ends
//! ([`kernel_drops`]): `rx_dropped` holds the frames native XDP could not redirect into OVS's
//! socket (its receive ring full or its fill ring empty: veth counts a failed redirect as a
//! receive drop), `tx_dropped` the frames OVS sent that the generator's end refused. Drops inside
//! OVS's user space are in neither; whatever they leave stays unexplained in the results.
//!
//! Scale: [`Scale::Flows`] adds that many extra rules that never match the test traffic (distinct
//! destination MACs), so the classifier holds them while forwarding. [`Scale::MacEntries`] adds
//! that many `dl_dst` rules on the first pair (`priority=40000,in_port=A,dl_dst=MAC,actions=output:B`,
//! above the port rules' default priority 32768:
//! OVS's MAC table as an OpenFlow switch programs it — NORMAL-mode learning has an 8,192-entry
//! default table ([`DEFAULT_MAC_TABLE_SIZE`]) and cannot be filled but by traffic) and the
//! traffic's destination MACs are spread over them ([`Dut::shape_streams`]); a larger point adds
//! only the new entries' rules. Every table load is ONE OpenFlow 1.4 bundle
//! ([`OvsDut::load_flows`]: `ovs-ofctl --bundle add-flows`, committed once, within
//! [`LOAD_BUDGET`]) followed by a `dump-aggregate` count of the rules it must have left; its
//! time and vswitchd's memory after it are in the placement note ([`OvsDut::loads`]). Points
//! above [`MAX_RULES`] fail at once with the reason.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cmd::{run_env, run_quiet};
use crate::dut::counters::{sum_ports, DeviceCounters, PortCounts};
use crate::dut::{placed, unsupported_wiring, version_line, Dut, Scale};
use crate::error::{Error, Result};
use crate::placement::{CorePlan, PlacedProcess};
use crate::process::{ChildGuard, ProcessSpec};
use crate::topology::{PortEnd, Wiring};
use vecswitch_gen::StreamSpec;

/// The OVS database schema shipped by `openvswitch-common`.
pub const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";

/// How long one table load may take before the driver gives up on it and fails the point with
/// the reason (the bench then skips the device's larger points): 5 minutes.
pub const LOAD_BUDGET: Duration = Duration::from_secs(300);

/// The largest table (rules of one kind in the bridge) the OVS drivers load: the suites' largest
/// point, 1,000,000, loads within [`LOAD_BUDGET`] on this host (800k rules added to 200k in
/// 187–201 s in the DUT on a loaded host; docs/TESTBED.md, "OVS's tables"). A larger point
/// fails at once with the reason instead of spending the budget to find out.
pub const MAX_RULES: u32 = 1_000_000;

/// Fails a scale point of `n` rules above [`MAX_RULES`], naming `what` and the measurement.
pub fn check_rules(dut: &str, what: &str, n: u32) -> Result<()> {
    if n <= MAX_RULES {
        return Ok(());
    }
    Err(Error::Unsupported {
        dut: dut.into(),
        what: format!("{n} {what}"),
        why: format!(
            "at most {MAX_RULES} OpenFlow rules load within {}s on this host \
             (docs/TESTBED.md, \"OVS's tables\"); larger points are skipped",
            LOAD_BUDGET.as_secs()
        ),
    })
}

/// What a load must leave in the bridge: `expect` rules matching `matching` (an `ovs-ofctl`
/// match, non-strict), described as `what` (`dl_dst`, `route`).
#[derive(Debug, Clone, Copy)]
pub struct RuleCheck<'a> {
    pub matching: &'a str,
    pub expect: u64,
    pub what: &'a str,
}

/// One measured rule load: `added` rules sent in one bundle, `rules` of its kind in the bridge
/// after it, the time from `ovs-ofctl`'s start to its exit (parsing, sending, OVS committing the
/// bundle), and vswitchd's resident memory after it.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleLoad {
    pub what: String,
    pub rules: u64,
    pub added: u64,
    pub seconds: f64,
    pub vswitchd_rss: Option<u64>,
}

impl std::fmt::Display for RuleLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} rules ({} added) in {:.2} s",
            self.rules, self.what, self.added, self.seconds
        )?;
        if let Some(b) = self.vswitchd_rss {
            write!(f, ", vswitchd RSS {} MB", b / 1_000_000)?;
        }
        Ok(())
    }
}

/// The loads as a placement note's list.
pub fn load_list(loads: &[RuleLoad]) -> String {
    loads
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `flow_count=N` of `ovs-ofctl dump-aggregate`.
pub fn parse_flow_count(text: &str) -> Option<u64> {
    let i = text.find("flow_count=")? + "flow_count=".len();
    text[i..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// A process's resident memory (`VmRSS` of /proc/PID/status), in bytes.
fn rss_bytes(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Entries of a learning bridge's MAC table when `other-config:mac-table-size` is not set: 8,192
/// since OVS 2.13 (ovs-vswitchd.conf.db(5) of 3.1.0, installed here; 2,048 before). An RFC 2889
/// caching search must go above it to find OVS's capacity (docs/suites/l2-services.toml).
pub const DEFAULT_MAC_TABLE_SIZE: u32 = 8192;

/// Per-port counters and the datapath's `lost` count from `ovs-appctl dpctl/show -s`:
///
/// ```text
///   lookups: hit:0 missed:12 lost:0
///   port 1: dut0 (afxdp)
///     RX packets:12 errors:0 dropped:0 overruns:0 frame:0
///     TX packets:0 errors:0 dropped:0 aborted:0 carrier:0
/// ```
///
/// The third value lists the ports whose drop counters are unknown (`dropped:?`, as afxdp
/// ports print them); their drops are reported as 0 in the counts, so the caller must not
/// trust them.
pub fn parse_dpctl_show(text: &str) -> (Vec<(String, PortCounts)>, Option<u64>, Vec<String>) {
    let mut ports: Vec<(String, PortCounts)> = Vec::new();
    let mut lost = None;
    let mut unknown = Vec::new();
    let field = |line: &str, key: &str| -> Option<u64> {
        let i = line.find(key)? + key.len();
        line[i..]
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("lookups:") {
            lost = Some(lost.unwrap_or(0) + field(t, "lost:").unwrap_or(0));
        } else if let Some(rest) = t.strip_prefix("port ") {
            // `port 1: dut0 (afxdp)`
            if let Some(name) = rest
                .split_once(": ")
                .and_then(|(_, r)| r.split_whitespace().next())
            {
                ports.push((name.to_string(), PortCounts::default()));
            }
        } else if let Some((name, p)) = ports.last_mut() {
            if (t.starts_with("RX packets:") || t.starts_with("TX packets:"))
                && t.contains("dropped:?")
                && !unknown.contains(name)
            {
                unknown.push(name.clone());
            }
            if t.starts_with("RX packets:") {
                p.rx = field(t, "packets:").unwrap_or(0);
                p.rx_dropped = field(t, "dropped:").unwrap_or(0);
            } else if t.starts_with("TX packets:") {
                p.tx = field(t, "packets:").unwrap_or(0);
                p.tx_dropped = field(t, "dropped:").unwrap_or(0);
            }
        }
    }
    (ports, lost, unknown)
}

/// (rx_dropped, tx_dropped) summed over the veth ends `facing` from the kernel's counters of the
/// DUT namespace's interfaces (`kernel_if::read`), for OVS's afxdp ports, whose drops the
/// datapath does not know; `None` when one of them is missing.
pub fn kernel_drops(ports: &[(String, PortCounts)], facing: &[String]) -> Option<(u64, u64)> {
    facing.iter().try_fold((0, 0), |(rx, tx), f| {
        let (_, p) = ports.iter().find(|(n, _)| n == f)?;
        Some((rx + p.rx_dropped, tx + p.tx_dropped))
    })
}

/// The sum of `processing cycles:` over the threads of `ovs-appctl dpif-netdev/pmd-stats-show`
/// (PMD threads and the main thread), or `None` if it lists none.
pub fn parse_processing_cycles(text: &str) -> Option<u64> {
    let mut sum = None;
    for line in text.lines() {
        if let Some(rest) = line.trim().strip_prefix("processing cycles:") {
            let n: u64 = rest.split_whitespace().next()?.parse().ok()?;
            sum = Some(sum.unwrap_or(0) + n);
        }
    }
    sum
}

/// The OVS userspace DUT.
#[derive(Debug, Default)]
pub struct OvsDut {
    dir: Option<PathBuf>,
    bridges: Vec<String>,
    vswitchd: Option<ChildGuard>,
    ovsdb: Option<ChildGuard>,
    port_types: Vec<(String, String)>,
    /// Try afxdp ports first (default true).
    no_afxdp: bool,
    /// afxdp or fail, no system-port fallback (`ovs-afxdp`).
    afxdp_only: bool,
    /// The first port pair when both ends face the generator (for [`Scale::MacEntries`]).
    first_pair: Option<(usize, usize)>,
    /// `dl_dst` rules of the last [`Scale::MacEntries`].
    mac_entries: u32,
    /// Every rule load of [`Scale::MacEntries`] and [`Scale::Flows`], in order.
    loads: Vec<RuleLoad>,
    /// Each bridge a learning switch (`actions=NORMAL`) instead of port-to-port flows
    /// (`ovs-bridge`).
    learning: bool,
    /// The namespace of the DUT's veth ends (for [`kernel_drops`]).
    netns: Option<String>,
}

impl OvsDut {
    pub fn new() -> OvsDut {
        OvsDut::default()
    }

    /// Uses kernel-socket (`system`) ports only, without trying afxdp.
    pub fn system_ports_only(mut self) -> OvsDut {
        self.no_afxdp = true;
        self
    }

    /// afxdp ports only: a port OVS refuses as afxdp is an error, not a system port (`ovs-afxdp`).
    pub fn afxdp_only(mut self) -> OvsDut {
        self.afxdp_only = true;
        self.no_afxdp = false;
        self
    }

    /// The bridges made by `setup` (`br0`, … one per port pair).
    pub fn bridges(&self) -> &[String] {
        &self.bridges
    }

    /// A MAC-learning bridge: one `actions=NORMAL` flow per bridge (`ovs-bridge`, the E-LAN of
    /// seed 001 and the RFC 2889 address tests).
    pub fn learning(mut self) -> OvsDut {
        self.learning = true;
        self
    }

    /// `(interface, type)` of each port added: `afxdp` or `system`.
    pub fn port_types(&self) -> &[(String, String)] {
        &self.port_types
    }

    pub(crate) fn dir(&self) -> Result<&Path> {
        self.dir.as_deref().ok_or_else(|| Error::Invalid {
            field: "ovs state",
            value: "not set up".into(),
            expected: "setup before this call".into(),
        })
    }

    /// Runs an OVS tool against this instance's database and run directory.
    fn tool(&self, program: &str, args: &[&str]) -> Result<String> {
        let dir = self.dir()?;
        let d = dir.display().to_string();
        let db = format!("--db=unix:{d}/db.sock");
        let mut a: Vec<&str> = Vec::new();
        if program == "ovs-vsctl" {
            a.push(&db);
            a.push("--timeout=20");
        }
        a.extend_from_slice(args);
        run_env(
            program,
            &a,
            &[("OVS_RUNDIR", &d), ("OVS_DBDIR", &d), ("OVS_LOGDIR", &d)],
        )
    }

    pub(crate) fn vsctl(&self, args: &[&str]) -> Result<String> {
        self.tool("ovs-vsctl", args)
    }

    pub(crate) fn ofctl(&self, args: &[&str]) -> Result<String> {
        self.tool("ovs-ofctl", args)
    }

    /// Loads `rules` (one flow a line, written to `file` in the run directory) into `br` as ONE
    /// OpenFlow 1.4 bundle (`ovs-ofctl -O OpenFlow14 --bundle add-flows`, OpenFlow 1.4 §6.8:
    /// all or none, committed once), gives up after [`LOAD_BUDGET`] (the bundle is then
    /// discarded: no half table), and checks that `ovs-ofctl dump-aggregate BR MATCH` counts
    /// `expect` rules afterwards. Returns the load as measured ([`RuleLoad`]).
    pub(crate) fn load_flows(
        &self,
        br: &str,
        file: &str,
        rules: &str,
        check: &RuleCheck<'_>,
    ) -> Result<RuleLoad> {
        let path = self.dir()?.join(file);
        std::fs::write(&path, rules).map_err(|source| Error::Io {
            what: "writing",
            path: path.clone(),
            source,
        })?;
        let t0 = Instant::now();
        let p = path.display().to_string();
        self.ofctl_within(
            &["-O", "OpenFlow14", "--bundle", "add-flows", br, &p],
            LOAD_BUDGET,
        )?;
        let seconds = t0.elapsed().as_secs_f64();
        let agg = self.ofctl(&["dump-aggregate", br, check.matching])?;
        if parse_flow_count(&agg) != Some(check.expect) {
            return Err(Error::Invalid {
                field: "OVS rules after loading",
                value: agg.trim().to_string(),
                expected: format!(
                    "flow_count={} rules matching `{}` in {br} ({})",
                    check.expect, check.matching, check.what
                ),
            });
        }
        Ok(RuleLoad {
            what: check.what.to_string(),
            rules: check.expect,
            added: rules.lines().filter(|l| !l.trim().is_empty()).count() as u64,
            seconds,
            vswitchd_rss: self.vswitchd.as_ref().and_then(|c| rss_bytes(c.pid())),
        })
    }

    /// `ovs-ofctl ARGS` that must finish within `budget`: killed after it (and on a stop
    /// request), which fails with the reason.
    fn ofctl_within(&self, args: &[&str], budget: Duration) -> Result<()> {
        let dir = self.dir()?;
        let d = dir.display().to_string();
        let command = crate::cmd::render("ovs-ofctl", args);
        let err_path = dir.join("ovs-ofctl.err");
        let err = std::fs::File::create(&err_path).map_err(|source| Error::Io {
            what: "creating",
            path: err_path.clone(),
            source,
        })?;
        let mut child = std::process::Command::new("ovs-ofctl")
            .args(args)
            .envs([("OVS_RUNDIR", &d), ("OVS_DBDIR", &d), ("OVS_LOGDIR", &d)])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(err)
            .spawn()
            .map_err(|source| Error::Spawn {
                command: command.clone(),
                source,
            })?;
        let t0 = Instant::now();
        loop {
            let status = child.try_wait().map_err(|source| Error::Spawn {
                command: command.clone(),
                source,
            })?;
            if let Some(status) = status {
                if status.success() {
                    return Ok(());
                }
                return Err(Error::Command {
                    command,
                    status: status.to_string(),
                    stderr: std::fs::read_to_string(&err_path)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                });
            }
            let stop = crate::signal::stop_requested();
            if stop || t0.elapsed() >= budget {
                let _ = child.kill();
                let _ = child.wait();
                if stop {
                    return Err(Error::Stopped);
                }
                return Err(Error::Timeout {
                    what: format!(
                        "`{command}` (an OVS table load; its bundle was discarded, see docs/TESTBED.md \"OVS's tables\")"
                    ),
                    timeout: budget,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `ovs-appctl` to this instance's vswitchd.
    pub(crate) fn appctl(&self, args: &[&str]) -> Result<String> {
        let t = self.dir()?.join("ovs-vswitchd.ctl").display().to_string();
        let mut a = vec!["-t", t.as_str()];
        a.extend_from_slice(args);
        self.tool("ovs-appctl", &a)
    }

    /// Adds `ifname` to `br` as afxdp, falling back to a system port; returns the type used.
    fn add_port(&mut self, br: &str, ifname: &str) -> Result<String> {
        if !self.no_afxdp {
            self.vsctl(&[
                "add-port",
                br,
                ifname,
                "--",
                "set",
                "interface",
                ifname,
                "type=afxdp",
            ])?;
            let err = self
                .vsctl(&["get", "interface", ifname, "error"])
                .unwrap_or_default();
            let ofport = self
                .vsctl(&["get", "interface", ifname, "ofport"])
                .unwrap_or_default();
            let err = err.trim().trim_matches('"');
            if (err.is_empty() || err == "[]") && ofport.trim().parse::<i64>().is_ok_and(|p| p > 0)
            {
                return Ok("afxdp".into());
            }
            if self.afxdp_only {
                return Err(Error::Unsupported {
                    dut: self.name().into(),
                    what: format!("port {ifname} as type=afxdp"),
                    why: format!(
                        "ovs-vsctl reports error {err:?}, ofport {}; see {}/ovs-vswitchd.log",
                        ofport.trim(),
                        self.dir()?.display()
                    ),
                });
            }
            tracing::warn!(
                ifname,
                err,
                "afxdp port failed; falling back to a system port"
            );
            self.vsctl(&["del-port", br, ifname])?;
        }
        self.vsctl(&["add-port", br, ifname])?;
        Ok("system".into())
    }
}

impl OvsDut {
    /// The datapath's counters summed over the interfaces `facing` (`dpctl/show -s`; afxdp ports
    /// count no drops there, so theirs are the kernel's counters of the same veth ends:
    /// [`kernel_drops`]), `lost` as internal drops, and the PMD and main threads' processing
    /// cycles as busy clocks.
    pub(crate) fn datapath_counters(&self, facing: &[String]) -> Result<DeviceCounters> {
        let show = self.appctl(&["dpctl/show", "-s"])?;
        let (ports, lost, unknown) = parse_dpctl_show(&show);
        let ports: Vec<_> = ports
            .into_iter()
            .filter(|(n, _)| facing.contains(n))
            .collect();
        let mut c = sum_ports(&ports, facing, lost).ok_or_else(|| Error::Invalid {
            field: "ovs-appctl dpctl/show -s",
            value: show.chars().take(300).collect(),
            expected: format!("a `port N: NAME` block for each of {facing:?}"),
        })?;
        if facing.iter().any(|f| unknown.contains(f)) {
            // afxdp: the kernel's counters of the same veth ends (module doc, "Counters").
            let kernel = crate::dut::kernel_if::read(self.netns.as_deref())?;
            let drops = kernel_drops(&kernel, facing);
            c.rx_dropped = drops.map(|d| d.0);
            c.tx_dropped = drops.map(|d| d.1);
        }
        c.busy_clocks = self
            .appctl(&["dpif-netdev/pmd-stats-show"])
            .ok()
            .and_then(|t| parse_processing_cycles(&t));
        Ok(c)
    }

    /// Every rule load of [`Scale::MacEntries`] and [`Scale::Flows`] so far, in order.
    pub fn loads(&self) -> &[RuleLoad] {
        &self.loads
    }

    /// [`Scale::MacEntries`]: `n` `dl_dst` rules (see the module doc). The table grows in place
    /// (the rules of entries `self.mac_entries..n` in one bundle); a smaller point deletes every
    /// rule on a scale MAC and loads its set anew.
    fn set_mac_entries(&mut self, n: u32) -> Result<()> {
        check_rules(self.name(), "dl_dst rules", n)?;
        let (Some(br), Some([(a, _), (b, _)])) = (
            self.bridges.first().cloned(),
            self.port_types
                .get(..2)
                .and_then(|p| <&[_; 2]>::try_from(p).ok()),
        ) else {
            return Err(Error::Invalid {
                field: "ovs state",
                value: "no bridge".into(),
                expected: "configure_scale after setup".into(),
            });
        };
        let (a, b) = (a.clone(), b.clone());
        if n == self.mac_entries && n > 0 {
            return Ok(());
        }
        let from = if n < self.mac_entries || self.mac_entries == 0 {
            // Every rule on a scale MAC (02:5c:…), of this kind or of `Flows`.
            self.ofctl(&["del-flows", &br, SCALE_MAC_MATCH])?;
            self.mac_entries = 0;
            0
        } else {
            self.mac_entries
        };
        if n == 0 {
            return Ok(());
        }
        let mut rules = String::with_capacity((n - from) as usize * 72);
        for i in from..n {
            let _ = writeln!(
                rules,
                "priority=40000,in_port={a},dl_dst={},actions=output:{b}",
                crate::dut::linux_bridge::scale_mac(i)
            );
        }
        let load = self.load_flows(
            &br,
            "mac.flows",
            &rules,
            &RuleCheck {
                matching: SCALE_MAC_MATCH,
                expect: u64::from(n),
                what: "dl_dst",
            },
        )?;
        eprintln!("{}: {load}", self.name());
        self.loads.push(load);
        self.mac_entries = n;
        Ok(())
    }
}

/// The `ovs-ofctl` match of every rule on a scale MAC (`02:5c:…`, [`Scale::MacEntries`] and
/// [`Scale::Flows`]).
const SCALE_MAC_MATCH: &str = "dl_dst=02:5c:00:00:00:00/ff:ff:00:00:00:00";

impl Dut for OvsDut {
    fn name(&self) -> &str {
        if self.learning {
            "ovs-bridge"
        } else if self.afxdp_only {
            "ovs-afxdp"
        } else {
            "ovs"
        }
    }

    fn describe(&self) -> String {
        let types: Vec<String> = self
            .port_types
            .iter()
            .map(|(i, t)| format!("{i}:{t}"))
            .collect();
        format!(
            "{} (userspace netdev datapath, ports {})",
            version_line("ovs-vswitchd", &["--version"]),
            if types.is_empty() {
                "not set up".to_string()
            } else {
                types.join(" ")
            }
        )
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        if !w.all_dut_ports_veth() {
            return Err(unsupported_wiring(
                self.name(),
                w,
                "this OVS build has no memif port; use phy2phy-veth (ovs-dpdk would need net_memif)",
            ));
        }
        for p in [
            "ovsdb-tool",
            "ovsdb-server",
            "ovs-vswitchd",
            "ovs-vsctl",
            "ovs-ofctl",
            "ovs-appctl",
        ] {
            if !crate::cmd::have(p) {
                return Err(Error::Unsupported {
                    dut: self.name().into(),
                    what: "this machine".into(),
                    why: format!(
                        "{p} not found; install the Debian package openvswitch-switch (make setup)"
                    ),
                });
            }
        }
        let dir = w.run_dir.join("ovs");
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            what: "creating",
            path: dir.clone(),
            source,
        })?;
        let d = dir.display().to_string();
        self.dir = Some(dir.clone());
        self.netns = Some(w.dut_netns.clone());
        crate::cmd::run("ovsdb-tool", &["create", &format!("{d}/conf.db"), SCHEMA])?;
        let cpus = Some(vec![w.cores.dut]);
        let env = [
            ("OVS_RUNDIR", d.as_str()),
            ("OVS_DBDIR", d.as_str()),
            ("OVS_LOGDIR", d.as_str()),
        ];
        let mut spec = ProcessSpec::new("dut-ovsdb-server", "ovsdb-server")
            .args([
                format!("{d}/conf.db"),
                format!("--remote=punix:{d}/db.sock"),
                format!("--unixctl={d}/ovsdb-server.ctl"),
                format!("--pidfile={d}/ovsdb-server.pid"),
                format!("--log-file={d}/ovsdb-server.log"),
            ])
            .netns(Some(&w.dut_netns))
            .cpus(cpus.clone());
        for (k, v) in env {
            spec = spec.env(k, v);
        }
        let mut db = ChildGuard::spawn(&spec, &w.run_dir)?;
        let r = db.wait_for_path(&dir.join("db.sock"), Duration::from_secs(20));
        self.ovsdb = Some(db);
        r?;
        self.vsctl(&["--no-wait", "init"])?;
        let mask = format!(
            "other_config:pmd-cpu-mask=0x{:x}",
            CorePlan::mask(w.cores.dut)
        );
        self.vsctl(&["--no-wait", "set", "Open_vSwitch", ".", &mask])?;
        let mut spec = ProcessSpec::new("dut-ovs-vswitchd", "ovs-vswitchd")
            .args([
                format!("unix:{d}/db.sock"),
                format!("--unixctl={d}/ovs-vswitchd.ctl"),
                format!("--pidfile={d}/ovs-vswitchd.pid"),
                format!("--log-file={d}/ovs-vswitchd.log"),
            ])
            .netns(Some(&w.dut_netns))
            .cpus(cpus);
        for (k, v) in env {
            spec = spec.env(k, v);
        }
        let mut sw = ChildGuard::spawn(&spec, &w.run_dir)?;
        let r = sw.wait_for_path(&dir.join("ovs-vswitchd.ctl"), Duration::from_secs(30));
        self.vswitchd = Some(sw);
        r?;
        self.first_pair = w
            .pairs
            .first()
            .copied()
            .filter(|(a, b)| *a < w.gen_ports.len() && *b < w.gen_ports.len());
        for (n, (a, b)) in w.pairs.iter().enumerate() {
            let br = format!("br{n}");
            self.vsctl(&[
                "add-br",
                &br,
                "--",
                "set",
                "bridge",
                &br,
                "datapath_type=netdev",
            ])?;
            self.bridges.push(br.clone());
            let mut names = Vec::new();
            for i in [*a, *b] {
                let PortEnd::Veth { ifname, .. } = &w.dut_ports[i] else {
                    unreachable!("checked above: all veth");
                };
                let t = self.add_port(&br, ifname)?;
                self.port_types.push((ifname.clone(), t));
                names.push(ifname.clone());
            }
            self.ofctl(&["del-flows", &br])?;
            if self.learning {
                self.ofctl(&["add-flow", &br, "actions=NORMAL"])?;
                continue;
            }
            self.ofctl(&[
                "add-flow",
                &br,
                &format!("in_port={},actions=output:{}", names[0], names[1]),
            ])?;
            self.ofctl(&[
                "add-flow",
                &br,
                &format!("in_port={},actions=output:{}", names[1], names[0]),
            ])?;
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        if let Some(dir) = self.dir.clone() {
            let d = dir.display().to_string();
            if self.vswitchd.is_some() {
                run_quiet(
                    "ovs-appctl",
                    &["-t", &format!("{d}/ovs-vswitchd.ctl"), "exit", "--cleanup"],
                );
            }
            if let Some(mut c) = self.vswitchd.take() {
                c.stop(Duration::from_secs(3));
            }
            if self.ovsdb.is_some() {
                run_quiet(
                    "ovs-appctl",
                    &["-t", &format!("{d}/ovsdb-server.ctl"), "exit"],
                );
            }
            if let Some(mut c) = self.ovsdb.take() {
                c.stop(Duration::from_secs(3));
            }
        }
        self.bridges.clear();
        self.dir = None;
        self.mac_entries = 0;
        self.loads.clear();
        self.first_pair = None;
        Ok(())
    }

    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        let n = match scale {
            Scale::Flows(n) => n,
            Scale::MacEntries(n) => return self.set_mac_entries(n),
            Scale::Routes(_) | Scale::Sessions(_) | Scale::Rules(_) => {
                return Err(Error::Unsupported {
                    dut: self.name().into(),
                    what: format!("{scale:?}"),
                    why: "the ovs driver switches port to port; routes are ovs-router's, \
                          sessions and rules the NAT and firewall DUTs'"
                        .into(),
                })
            }
        };
        let br = self
            .bridges
            .first()
            .cloned()
            .ok_or_else(|| Error::Invalid {
                field: "ovs state",
                value: "no bridge".into(),
                expected: "configure_scale after setup".into(),
            })?;
        check_rules(self.name(), "never-matching rules", n)?;
        self.ofctl(&["del-flows", &br, SCALE_MAC_MATCH])?;
        self.mac_entries = 0;
        let mut rules = String::with_capacity(n as usize * 64);
        for i in 0..n {
            // Higher priority than the port rules, but matching MACs the generator never sends.
            let _ = writeln!(
                rules,
                "priority=100,dl_dst={},actions=drop",
                crate::dut::linux_bridge::scale_mac(i)
            );
        }
        let load = self.load_flows(
            &br,
            "scale.flows",
            &rules,
            &RuleCheck {
                matching: SCALE_MAC_MATCH,
                expect: u64::from(n),
                what: "never-matching",
            },
        )?;
        self.loads.push(load);
        Ok(())
    }

    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        if let (Some(pair), n @ 1..) = (self.first_pair, self.mac_entries) {
            let macs = Scale::MacEntries(n).destinations().unwrap_or(1);
            crate::dut::spread_dst_macs(streams, pair, crate::dut::SCALE_MAC_BASE, macs);
        }
        Ok(())
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        let mut v = Vec::new();
        if let Some(c) = &self.vswitchd {
            let mut p = placed(
                c,
                "main thread and PMD threads (pmd-cpu-mask) on the DUT CPU",
            );
            if !self.loads.is_empty() {
                p.note = format!(
                    "{}; rule loads (ovs-ofctl --bundle add-flows): {}",
                    p.note,
                    load_list(&self.loads)
                );
            }
            v.push(p);
        }
        if let Some(c) = &self.ovsdb {
            v.push(placed(c, "database server, idle while forwarding"));
        }
        v
    }

    fn check_alive(&mut self) -> Result<()> {
        for c in [&mut self.vswitchd, &mut self.ovsdb].into_iter().flatten() {
            c.check_alive()?;
        }
        Ok(())
    }

    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        if self.vswitchd.is_none() {
            return Ok(None);
        }
        let facing: Vec<String> = self.port_types.iter().map(|(i, _)| i.clone()).collect();
        self.datapath_counters(&facing).map(Some)
    }

    /// `ovs-appctl fdb/flush` on every bridge (`ovs-bridge` only: the port-to-port flows of `ovs`
    /// learn nothing).
    fn flush_mac_table(&mut self) -> Result<()> {
        if !self.learning {
            return Err(Error::Unsupported {
                dut: self.name().into(),
                what: "flushing learned MAC addresses".into(),
                why: "this driver forwards by port-to-port flows, without a MAC table; use ovs-bridge".into(),
            });
        }
        for br in self.bridges.clone() {
            self.appctl(&["fdb/flush", &br])?;
        }
        Ok(())
    }
}

impl Drop for OvsDut {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/suites/l2-services.toml's RFC 2889 caching search reaches above OVS's default table,
    /// so that the capacity it reports for `ovs-bridge` is OVS's and not the search's ceiling (at
    /// a top of 4,096 all three bridges passed: 2026-11-24, docs/BENCHMARKS.md §13).
    #[test]
    fn l2_suite_caching_search_reaches_above_ovs_default_table() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/suites/l2-services.toml"
        );
        let suite = vecswitch_lab::suite::Suite::parse(&std::fs::read_to_string(path).unwrap())
            .expect("the documented suite parses");
        let size = vecswitch_lab::suite::FrameSize::Bytes(64);
        let tops: Vec<u32> = suite
            .tests
            .iter()
            .filter(|t| t.applies_to("ovs-bridge", &size))
            .filter_map(|t| match t {
                vecswitch_lab::suite::TestSpec::Rfc2889Caching { max_addresses, .. } => {
                    Some(*max_addresses)
                }
                _ => None,
            })
            .collect();
        assert!(
            !tops.is_empty(),
            "no rfc2889-caching test runs on ovs-bridge"
        );
        for top in tops {
            assert!(
                top > DEFAULT_MAC_TABLE_SIZE,
                "caching search top {top} ≤ OVS's default table {DEFAULT_MAC_TABLE_SIZE}"
            );
        }
    }

    /// `ovs-appctl dpctl/show -s` and `dpif-netdev/pmd-stats-show` of the `ovs` driver (OVS
    /// 3.1.0, afxdp ports) after 1000 frames dut0→dut1, 2026-11-23 (trimmed: bytes lines).
    const DPCTL: &str = "netdev@ovs-netdev:
  lookups: hit:999 missed:1 lost:0
  flows: 1
  port 0: ovs-netdev (tap)
    RX packets:0 errors:0 dropped:0 overruns:0 frame:0
    TX packets:0 errors:0 dropped:0 aborted:0 carrier:0
    collisions:0
  port 2: dut0 (afxdp: n_rxq=1, use-need-wakeup=true, xdp-mode=best-effort, xdp-mode-in-use=native)
    RX packets:1000 errors:? dropped:? overruns:? frame:?
    TX packets:0 errors:? dropped:? aborted:? carrier:?
    collisions:?
    RX bytes:46000 (44.9 KiB)  TX bytes:0
  port 3: dut1 (system)
    RX packets:0 errors:0 dropped:4 overruns:0 frame:0
    TX packets:1000 errors:0 dropped:2 aborted:0 carrier:0
";
    const PMD: &str = "pmd thread numa_id 0 core_id 1:
  packets received: 1000
  miss with failed upcall: 0
  avg. packets per output batch: 31.25
  idle cycles: 1608834175 (99.22%)
  processing cycles: 12572861 (0.78%)
  avg cycles per packet: 1621407.04 (1621407036/1000)
  avg processing cycles per packet: 12572.86 (12572861/1000)
main thread:
  packets received: 0
  avg. packets per output batch: 0.00
";

    #[test]
    fn rule_loads_print_and_big_tables_are_refused_with_the_reason() {
        let l = RuleLoad {
            what: "route".into(),
            rules: 200_000,
            added: 180_000,
            seconds: 12.345,
            vswitchd_rss: Some(250_000_000),
        };
        assert_eq!(
            l.to_string(),
            "200000 route rules (180000 added) in 12.35 s, vswitchd RSS 250 MB"
        );
        assert_eq!(load_list(&[l.clone(), l]).matches("route rules").count(), 2);
        assert!(check_rules("ovs", "dl_dst rules", MAX_RULES).is_ok());
        let e = check_rules("ovs", "dl_dst rules", MAX_RULES + 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("larger points are skipped"), "{e}");
        assert!(
            e.contains(&format!("{} dl_dst rules", MAX_RULES + 1)),
            "{e}"
        );
        assert_eq!(
            parse_flow_count(
                "NXST_AGGREGATE reply (xid=0x4): packet_count=0 byte_count=0 flow_count=2001\n"
            ),
            Some(2001)
        );
    }

    #[test]
    fn afxdp_drops_come_from_the_kernels_counters_of_the_facing_ends() {
        let port = |rx_dropped, tx_dropped| PortCounts {
            rx: 1000,
            tx: 900,
            rx_dropped,
            tx_dropped,
        };
        let ports = vec![
            ("lo".to_string(), port(7, 7)),
            ("dut0".to_string(), port(40, 2)),
            ("dut1".to_string(), port(5, 1)),
        ];
        let facing = ["dut0".to_string(), "dut1".to_string()];
        assert_eq!(kernel_drops(&ports, &facing), Some((45, 3)));
        // A facing end the namespace does not list: unknown, not zero.
        assert_eq!(
            kernel_drops(&ports, &["dut0".to_string(), "dut9".to_string()]),
            None
        );
    }

    #[test]
    fn dpctl_show_and_pmd_stats_parse() {
        let (ports, lost, unknown) = parse_dpctl_show(DPCTL);
        assert_eq!(lost, Some(0));
        assert_eq!(ports.len(), 3);
        assert_eq!(ports[1].0, "dut0");
        assert_eq!(ports[1].1.rx, 1000);
        assert_eq!(
            ports[2].1,
            PortCounts {
                rx: 0,
                tx: 1000,
                rx_dropped: 4,
                tx_dropped: 2
            }
        );
        assert_eq!(unknown, vec!["dut0".to_string()]);
        assert_eq!(parse_processing_cycles(PMD), Some(12572861));
        assert_eq!(parse_processing_cycles("main thread:\n"), None);
    }
}
