//! `testpmd-io`: DPDK's `dpdk-testpmd` forwarding between memif ports with `--forward-mode=io`
//! (no header processing at all) — the speed-of-light reference any switch is compared with: two
//! ports in phy2phy-memif, four in pvp-memif (listed pair by pair, so testpmd's default "paired"
//! port topology forwards phy0↔vnf0 and vnf1↔phy1). The same helpers start testpmd as the PVP
//! VNF (`--forward-mode=macswap`).
//!
//! Flags that matter on these machines (DESIGN.md, pitfalls): `--no-huge -m 1024 --no-pci
//! --iova-mode=va`, a unique `--file-prefix` (here the run id, so stale runtime directories can be
//! found), `--total-num-mbufs=32768`. Both lcores are mapped to one CPU (`--lcores=0@N,1@N`): the
//! main lcore only waits for end of input, the forwarding lcore polls. memif sockets are filesystem
//! sockets (`socket-abstract=no`; DPDK 22.11 defaults to abstract ones).
//!
//! The DUT runs interactively (`-i`) with a pipe as stdin and `--record-core-cycles`: the driver
//! types `start`, and for every counter reading ([`Dut::counters`]) `show fwd stats all`, then
//! waits for the next `testpmd> ` prompt in the log and parses the forward statistics printed
//! since the command ([`parse_forward_stats`], [`parse_total_cycles`]). The forward statistics are
//! the forwarding engine's own counts (RX/TX packets and drops per port, cumulative since
//! `start`); DPDK 22.11's memif PMD reports zeros in `show port stats` (NIC statistics), so those
//! are not used. "CPU cycles/packet" comes with the total cycles the forwarding lcore spent on
//! bursts that received packets (busy cycles, for the device-cost comparison). `quit` at teardown
//! prints the final statistics into the log ([`TestpmdDut::port_stats`]) — memif counters reset
//! when the peer disconnects, so read them before the generator closes its ports. The PVP VNF
//! (macswap) runs non-interactively: closing its stdin stops it.

use std::time::Duration;

use crate::dut::counters::{sum_ports, DeviceCounters, PortCounts};
use crate::dut::{placed, unsupported_wiring, version_line, Dut};
use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::process::{ChildGuard, ProcessSpec};
use crate::topology::{PortEnd, Wiring};

/// The testpmd program (Debian package `dpdk-dev`).
pub const TESTPMD: &str = "dpdk-testpmd";

/// EAL arguments: no hugepages, no PCI, both lcores on `cpu`, file prefix `prefix`.
pub fn eal_args(prefix: &str, cpu: usize) -> Vec<String> {
    vec![
        format!("--lcores=0@{cpu},1@{cpu}"),
        "--main-lcore".into(),
        "0".into(),
        "--no-huge".into(),
        "-m".into(),
        "1024".into(),
        "--no-pci".into(),
        "--iova-mode=va".into(),
        "--file-prefix".into(),
        prefix.to_string(),
    ]
}

/// Application arguments after `--` for `mode` (`io`, `macswap`, ...).
pub fn app_args(mode: &str) -> Vec<String> {
    vec![
        "--".into(),
        format!("--forward-mode={mode}"),
        "--nb-cores=1".into(),
        "--total-num-mbufs=32768".into(),
    ]
}

/// memif rings of the DUTs on the generator's links (`phy*` ports): 2^12 = 4096 descriptors
/// (DPDK's and VPP's default is 1024). The generator polls its receive rings between transmit
/// batches on one thread; on a shared 2-core host a preempted generator let 1024-slot rings
/// overflow and every DUT dropped on transmit at any load. vecswitch's driver uses the same size
/// (fair comparison). Links to a PVP VNF keep the default: testpmd as VNF with 4096-slot rings
/// forwarded nothing with its 32768 mbufs.
pub const MEMIF_RING_SIZE_LOG2: u8 = 12;

/// Whether a port is on a generator link (`phy0`, `phy1`), where the larger rings apply.
pub fn is_generator_link(name: &str) -> bool {
    name.starts_with("phy")
}

/// The `--vdev` argument for port `index` on `end`: memif, or a vhost-user device (DPDK's vhost
/// PMD, `net_vhost`: the backend, as vecswitch's `vhost_user` port is); None for a veth end.
pub fn vdev(index: usize, end: &PortEnd) -> Option<String> {
    match end {
        PortEnd::VhostUser { socket, role, .. } => Some(format!(
            "--vdev=net_vhost{index},iface={},queues=1{}",
            socket.display(),
            if *role == crate::topology::MemifRole::Client {
                ",client=1"
            } else {
                ""
            }
        )),
        _ => memif_vdev(index, end),
    }
}

/// The `--vdev` argument for memif port `index` on `end`.
pub fn memif_vdev(index: usize, end: &PortEnd) -> Option<String> {
    match end {
        PortEnd::Memif {
            name,
            socket,
            id,
            role,
        } => Some(format!(
            "--vdev=net_memif{index},role={},socket={},id={id},{}socket-abstract=no",
            role.as_str(),
            socket.display(),
            if is_generator_link(name) {
                format!("rsize={MEMIF_RING_SIZE_LOG2},")
            } else {
                String::new()
            }
        )),
        PortEnd::Veth { .. } | PortEnd::VhostUser { .. } => None,
    }
}

/// RX/TX counters of one port from testpmd's exit statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestpmdPortStats {
    pub rx_packets: u64,
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_dropped: u64,
}

/// Parses the "Forward statistics for port N" blocks testpmd prints when it stops.
pub fn parse_forward_stats(log: &str) -> Vec<(u16, TestpmdPortStats)> {
    let mut out: Vec<(u16, TestpmdPortStats)> = Vec::new();
    let mut current: Option<u16> = None;
    let num = |line: &str, key: &str| -> Option<u64> {
        let i = line.find(key)? + key.len();
        line[i..].split_whitespace().next()?.parse().ok()
    };
    for line in log.lines() {
        if let Some(i) = line.find("Forward statistics for port") {
            current = line[i + "Forward statistics for port".len()..]
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok());
            if let Some(p) = current {
                out.push((p, TestpmdPortStats::default()));
            }
            continue;
        }
        if line.contains("Accumulated forward statistics") {
            current = None;
        }
        let (Some(_), Some(last)) = (current, out.last_mut()) else {
            continue;
        };
        if let Some(v) = num(line, "RX-packets:") {
            last.1.rx_packets = v;
            last.1.rx_dropped = num(line, "RX-dropped:").unwrap_or(0);
        }
        if let Some(v) = num(line, "TX-packets:") {
            last.1.tx_packets = v;
            last.1.tx_dropped = num(line, "TX-dropped:").unwrap_or(0);
        }
    }
    out
}

/// Total busy cycles of the forwarding lcores from the line `--record-core-cycles` adds to the
/// forward statistics: `CPU cycles/packet=229.88 (total cycles=561819495 / total io
/// packets=2444000) at 2450 MHz Clock`. The last such line of `text` wins.
pub fn parse_total_cycles(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("CPU cycles/packet="))?;
    let key = "total cycles=";
    let i = line.find(key)? + key.len();
    line[i..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The last forward statistics of each port in `text` (a log may hold several readings).
pub fn last_forward_stats(text: &str) -> Vec<(u16, TestpmdPortStats)> {
    let mut out: Vec<(u16, TestpmdPortStats)> = Vec::new();
    for (p, st) in parse_forward_stats(text) {
        match out.iter_mut().find(|(q, _)| *q == p) {
            Some(e) => e.1 = st,
            None => out.push((p, st)),
        }
    }
    out
}

/// testpmd's interactive prompt: the end of a command's output.
const PROMPT: &str = "testpmd> ";

/// The `testpmd-io` DUT.
#[derive(Debug, Default)]
pub struct TestpmdDut {
    child: Option<ChildGuard>,
    prefix: Option<String>,
    last_log: String,
    /// Port names in testpmd's port order, and which of them face the generator.
    port_names: Vec<String>,
    facing: Vec<String>,
}

impl TestpmdDut {
    pub fn new() -> TestpmdDut {
        TestpmdDut::default()
    }

    /// Per-port counters printed when testpmd stopped (after [`Dut::teardown`]).
    pub fn port_stats(&self) -> Vec<(u16, TestpmdPortStats)> {
        last_forward_stats(&self.last_log)
    }

    /// Types `command` and returns what testpmd printed until its next prompt.
    fn command(&mut self, command: &str) -> Result<String> {
        let child = self.child.as_mut().ok_or_else(|| Error::Invalid {
            field: "testpmd state",
            value: "not running".into(),
            expected: "a command after setup".into(),
        })?;
        let path = child.log_path().to_path_buf();
        let offset = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) as usize;
        child.write_stdin(&format!("{command}\n"))?;
        let mut out = String::new();
        crate::cmd::wait_for_result(
            &format!("testpmd to answer `{command}`"),
            Duration::from_secs(10),
            || {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out = String::from_utf8_lossy(bytes.get(offset..).unwrap_or(&[])).into_owned();
                if out.contains(PROMPT) {
                    return Ok(true);
                }
                child.check_alive()?;
                Ok(false)
            },
        )?;
        Ok(out)
    }
}

impl Dut for TestpmdDut {
    fn name(&self) -> &str {
        "testpmd-io"
    }

    fn describe(&self) -> String {
        format!(
            "DPDK {} ({TESTPMD} --forward-mode=io, memif PMD)",
            version_line("dpkg-query", &["-W", "-f=${Version}", "dpdk-dev"])
        )
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        if w.dut_ports
            .iter()
            .any(|p| matches!(p, PortEnd::Veth { .. }))
        {
            return Err(unsupported_wiring(
                self.name(),
                w,
                "testpmd-io holds memif and vhost-user ports only; use phy2phy-memif, pvp-memif or pvp-virtio",
            ));
        }
        if !crate::cmd::have(TESTPMD) {
            return Err(crate::Error::Unsupported {
                dut: self.name().into(),
                what: "this machine".into(),
                why: format!(
                    "{TESTPMD} not found; install the Debian package dpdk-dev (make setup)"
                ),
            });
        }
        let prefix = format!("{}-dut", w.run_id);
        let mut args = eal_args(&prefix, w.cores.dut);
        // testpmd's default port topology is "paired" (0↔1, 2↔3, ...), so the ports are listed
        // pair by pair: phy2phy phy0,phy1; PVP phy0,vnf0 and vnf1,phy1.
        let ordered: Vec<&PortEnd> = w
            .pairs
            .iter()
            .flat_map(|&(a, b)| [&w.dut_ports[a], &w.dut_ports[b]])
            .collect();
        args.extend(ordered.iter().enumerate().filter_map(|(i, p)| vdev(i, p)));
        args.extend(app_args("io"));
        args.push("-i".into());
        args.push("--record-core-cycles".into());
        self.port_names = ordered.iter().map(|p| p.name().to_string()).collect();
        self.facing = crate::dut::vecswitch::facing_names(w);
        // Line-buffered stdout, so that each command's output reaches the log before the next
        // prompt (which testpmd writes unbuffered).
        let spec = ProcessSpec::new("dut-testpmd", "stdbuf")
            .args(["-oL".to_string(), TESTPMD.to_string()])
            .args(args)
            .netns(Some(&w.dut_netns))
            .cpus(Some(vec![w.cores.dut]))
            .stdin_pipe(true);
        let mut child = ChildGuard::spawn(&spec, &w.run_dir)?;
        self.prefix = Some(prefix);
        let r = child.wait_for_log(PROMPT, Duration::from_secs(30));
        self.child = Some(child);
        r?;
        let out = self.command("start")?;
        if !out.contains("io packet forwarding") {
            return Err(Error::Invalid {
                field: "testpmd start",
                value: out.trim().chars().take(300).collect(),
                expected: "\"io packet forwarding ...\" (forwarding started)".into(),
            });
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        if let Some(mut c) = self.child.take() {
            // `quit` stops forwarding and prints the final statistics; closing stdin ends it too.
            let _ = c.write_stdin("quit\n");
            c.stop(Duration::from_secs(3));
            self.last_log = c.log();
        }
        if let Some(p) = self.prefix.take() {
            let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{p}"));
        }
        Ok(())
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        self.child
            .iter()
            .map(|c| {
                placed(
                    c,
                    "main lcore waits on stdin; forwarding lcore polls; both pinned to the DUT CPU",
                )
            })
            .collect()
    }

    fn check_alive(&mut self) -> Result<()> {
        match &mut self.child {
            Some(c) => c.check_alive(),
            None => Ok(()),
        }
    }

    /// `show fwd stats all`: per-port RX/TX packets and drops, and the forwarding lcore's busy
    /// cycles (`--record-core-cycles`).
    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        if self.child.is_none() {
            return Ok(None);
        }
        let out = self.command("show fwd stats all")?;
        counters_from(&out, &self.port_names, &self.facing)
            .map(Some)
            .ok_or_else(|| Error::Invalid {
                field: "testpmd `show fwd stats all`",
                value: out.trim().chars().take(300).collect(),
                expected: format!("forward statistics for ports {:?}", self.port_names),
            })
    }
}

/// Device counters from one `show fwd stats all` answer; `names[i]` is testpmd's port `i`.
pub fn counters_from(out: &str, names: &[String], facing: &[String]) -> Option<DeviceCounters> {
    let ports: Vec<(String, PortCounts)> = last_forward_stats(out)
        .into_iter()
        .filter_map(|(i, s)| {
            Some((
                names.get(i as usize)?.clone(),
                PortCounts {
                    rx: s.rx_packets,
                    tx: s.tx_packets,
                    rx_dropped: s.rx_dropped,
                    tx_dropped: s.tx_dropped,
                },
            ))
        })
        .collect();
    // testpmd io-forward has no drop reasons: a frame is received, sent or dropped at send.
    let mut c = sum_ports(&ports, facing, Some(0))?;
    // Without received packets testpmd prints no cycles line: then it was busy 0 cycles.
    let received: u64 = ports.iter().map(|(_, p)| p.rx).sum();
    c.busy_clocks = parse_total_cycles(out).or((received == 0).then_some(0));
    Some(c)
}

impl Drop for TestpmdDut {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::MemifRole;

    #[test]
    fn vdev_names_role_socket_and_filesystem_socket() {
        let e = PortEnd::Memif {
            name: "phy0".into(),
            socket: "/tmp/r/phy0.sock".into(),
            id: 0,
            role: MemifRole::Server,
        };
        assert_eq!(
            memif_vdev(0, &e).unwrap(),
            "--vdev=net_memif0,role=server,socket=/tmp/r/phy0.sock,id=0,rsize=12,socket-abstract=no"
        );
        // Links to a VNF keep DPDK's default ring size.
        let v = PortEnd::Memif {
            name: "vnf0".into(),
            socket: "/tmp/r/vnf0.sock".into(),
            id: 0,
            role: MemifRole::Server,
        };
        assert_eq!(
            memif_vdev(2, &v).unwrap(),
            "--vdev=net_memif2,role=server,socket=/tmp/r/vnf0.sock,id=0,socket-abstract=no"
        );
    }

    #[test]
    fn forward_stats_parse() {
        let log = "\
  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 1000           RX-dropped: 3             RX-total: 1003
  TX-packets: 990            TX-dropped: 10            TX-total: 1000
  ----------------------------------------------------------------------------
  ---------------------- Forward statistics for port 1  ----------------------
  RX-packets: 1000           RX-dropped: 0             RX-total: 1000
  TX-packets: 1000           TX-dropped: 0             TX-total: 1000
  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++
  RX-packets: 2000           RX-dropped: 3             RX-total: 2003
";
        let s = parse_forward_stats(log);
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0],
            (
                0,
                TestpmdPortStats {
                    rx_packets: 1000,
                    rx_dropped: 3,
                    tx_packets: 990,
                    tx_dropped: 10
                }
            )
        );
        assert_eq!(s[1].1.tx_packets, 1000);
    }

    /// Captured from `dpdk-testpmd -i --forward-mode=io --record-core-cycles` (DPDK 22.11) on two
    /// memif servers fed by a `txonly` testpmd that does not receive (hence the TX drops),
    /// 2026-11-23, after typing `show fwd stats all`.
    const SHOW_FWD: &str = "show fwd stats all

  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 1221984        RX-dropped: 0             RX-total: 1221984
  TX-packets: 1024           TX-dropped: 1220992       TX-total: 1222016
  ----------------------------------------------------------------------------

  ---------------------- Forward statistics for port 1  ----------------------
  RX-packets: 1222016        RX-dropped: 0             RX-total: 1222016
  TX-packets: 1024           TX-dropped: 1220960       TX-total: 1221984
  ----------------------------------------------------------------------------

  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++
  RX-packets: 2444000        RX-dropped: 0             RX-total: 2444000
  TX-packets: 2048           TX-dropped: 2441952       TX-total: 2444000
  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++

  CPU cycles/packet=229.88 (total cycles=561819495 / total io packets=2444000) at 2450 MHz Clock
testpmd> ";

    #[test]
    fn show_fwd_stats_become_device_counters() {
        let names = vec!["phy0".to_string(), "phy1".to_string()];
        let c = counters_from(SHOW_FWD, &names, &names).unwrap();
        assert_eq!(c.rx_frames, Some(1221984 + 1222016));
        assert_eq!(c.tx_frames, Some(2048));
        assert_eq!(c.rx_dropped, Some(0));
        assert_eq!(c.tx_dropped, Some(1220992 + 1220960));
        assert_eq!(c.internal_dropped, Some(0));
        assert_eq!(c.busy_clocks, Some(561819495));
        assert_eq!(parse_total_cycles("nothing"), None);
        // A port testpmd did not print: no reading rather than a partial one.
        let three = vec!["phy0".into(), "phy1".into(), "vnf0".into()];
        assert!(counters_from(SHOW_FWD, &three, &three).is_none());
        // Several readings in one log: the last one counts.
        let twice = format!("{SHOW_FWD}{}", SHOW_FWD.replace("1221984 ", "1300000 "));
        assert_eq!(last_forward_stats(&twice)[0].1.rx_packets, 1300000);
    }
}
