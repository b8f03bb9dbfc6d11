//! Where an L7 run's time went (issue 12): which processes shared which CPU, and what the
//! device's own processes spent, beside the run's TTFB — so that a reader sees whether a long
//! TTFB is the device *processing* or the device *waiting* for a CPU other processes hold.
//!
//! Around every run the bed reads ([`Probe::read`], twice; [`RunCost::between`]):
//!
//! - for each process of the device (the DUT's and the VNFs', as the placement record lists
//!   them; a kernel VNF has no process): its CPU time, `/proc/PID/stat` utime + stime over all
//!   its threads (proc(5)) — the time it held a CPU, polling or forwarding (**on CPU**);
//! - for a vecswitch process, its poll loop (`ctl --json show runtime`, `loop`): `busy_ns`, the
//!   wall time of its iterations that received something, port I/O included (**forwarding**;
//!   a worker descheduled in the middle of such an iteration counts the wait too), the packets
//!   it received and the times it slept idle (the worker sleeps after 500 µs without traffic,
//!   `vecswitch_switch::worker`: the chain's VNFs do, like any vecswitch);
//! - each CPU of the plan, its non-idle share (`/proc/stat`): what the CPU did for everyone.
//!
//! Reading it: a process whose forwarding share and time per packet are small while its CPU is
//! busy and shared (the placement's `shared_cpus`) spends the run waiting its turn or polling;
//! one whose forwarding (wall) share is well above its CPU time was preempted in the middle of
//! its work — either way scheduling, not processing. The figures are shares of the run's wall
//! time, from counters (no sampling); on a loaded host they describe that host.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::placement::Placement;

/// One process of the device over one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessCost {
    /// `dut` or `vnf`.
    pub role: String,
    pub name: String,
    pub pid: u32,
    /// Its allowed CPUs (as the placement record).
    pub cpus: Vec<String>,
    /// CPU time ÷ run time (may exceed 1 with threads on several CPUs).
    pub on_cpu: Option<f64>,
    /// vecswitch: forwarding time (`loop.busy_ns`) ÷ run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarding: Option<f64>,
    /// vecswitch: packets its poll loop received (all its ports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_packets: Option<u64>,
    /// vecswitch: forwarding time per received packet, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarding_ns_per_packet: Option<f64>,
    /// vecswitch: times the worker slept idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_sleeps: Option<u64>,
}

/// One CPU over one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuBusy {
    pub cpu: usize,
    /// Non-idle time ÷ run time.
    pub busy: f64,
}

/// Where one run's time went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunCost {
    pub processes: Vec<ProcessCost>,
    pub cpus: Vec<CpuBusy>,
}

/// A process to read: from the placement record, with its control socket if it is a vecswitch.
#[derive(Debug, Clone)]
pub struct Watched {
    pub role: String,
    pub name: String,
    pub pid: u32,
    pub cpus: Vec<String>,
    /// `(vecswitch binary, control socket)`.
    pub ctl: Option<(PathBuf, PathBuf)>,
}

/// What to read around a run.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    pub processes: Vec<Watched>,
    pub cpus: Vec<usize>,
}

/// One reading.
#[derive(Debug, Clone)]
pub struct Reading {
    at: Instant,
    /// Per process: CPU ticks, and the vecswitch loop counters.
    processes: Vec<(Option<u64>, Option<vecswitch_switch::LoopStats>)>,
    cpus: Vec<Option<crate::devcost::CpuTimes>>,
}

/// utime + stime (ticks) of a `/proc/PID/stat` text: fields 14 and 15, counted after the
/// command name's closing parenthesis (the name may hold spaces; proc(5)).
pub fn parse_pid_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ")": state is field 3, so utime (14) is index 11 and stime (15) index 12.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// The `loop` of a `ctl --json show runtime` answer (the switch's own
/// [`vecswitch_switch::RuntimeInfo`]).
pub fn parse_loop(json: &str) -> Option<vecswitch_switch::LoopStats> {
    crate::dut::vecswitch::answer_data::<vecswitch_switch::RuntimeInfo>(json).map(|r| r.loop_stats)
}

impl Probe {
    /// The device's processes of `placement` (roles `dut` and `vnf` with a pid): a vecswitch
    /// DUT's control socket is `run_dir/dut.ctl`, VNF `k`'s (the `k`-th `vnf` entry, the chain's
    /// order) [`crate::chain::vnf_ctl`]; a process counts as vecswitch when its executable is
    /// named `vecswitch` (`/proc/PID/exe`), or is the chain VNF's binary.
    pub fn of(placement: &Placement, run_dir: &std::path::Path, cpus: Vec<usize>) -> Probe {
        let mut processes = Vec::new();
        let mut k = 0;
        for p in &placement.processes {
            let ctl = match p.role.as_str() {
                "dut" => run_dir.join("dut.ctl"),
                "vnf" => {
                    k += 1;
                    crate::chain::vnf_ctl(run_dir, k - 1)
                }
                _ => continue,
            };
            if p.pid == 0 {
                continue;
            }
            let exe = std::fs::read_link(format!("/proc/{}/exe", p.pid)).ok();
            let is_vecswitch = exe
                .as_ref()
                .and_then(|e| e.file_name())
                .is_some_and(|n| n.to_string_lossy().starts_with("vecswitch"));
            processes.push(Watched {
                role: p.role.clone(),
                name: p.name.clone(),
                pid: p.pid,
                cpus: p.cpus.clone(),
                ctl: exe
                    .filter(|_| is_vecswitch && ctl.exists())
                    .map(|e| (e, ctl)),
            });
        }
        let mut cpus = cpus;
        cpus.sort_unstable();
        cpus.dedup();
        Probe { processes, cpus }
    }

    /// Reads everything now; what cannot be read is `None` (a process that exited, a control
    /// socket that does not answer within 10 s), never an error of the run.
    pub fn read(&self) -> Reading {
        let processes = self
            .processes
            .iter()
            .map(|p| {
                let ticks = std::fs::read_to_string(format!("/proc/{}/stat", p.pid))
                    .ok()
                    .and_then(|s| parse_pid_ticks(&s));
                let stats = p.ctl.as_ref().and_then(|(bin, ctl)| {
                    let out = crate::chain::vecswitch_ctl(bin, ctl, &["--json", "show", "runtime"])
                        .ok()?;
                    parse_loop(&out)
                });
                (ticks, stats)
            })
            .collect();
        Reading {
            at: Instant::now(),
            processes,
            cpus: self
                .cpus
                .iter()
                .map(|c| crate::devcost::read_cpu(*c).ok())
                .collect(),
        }
    }
}

impl RunCost {
    /// The cost between two readings of `probe`; `tick_hz`: USER_HZ.
    pub fn between(probe: &Probe, a: &Reading, b: &Reading, tick_hz: f64) -> RunCost {
        let secs =
            b.at.saturating_duration_since(a.at)
                .max(Duration::from_micros(1))
                .as_secs_f64();
        let processes = probe
            .processes
            .iter()
            .zip(a.processes.iter().zip(&b.processes))
            .map(|(w, ((t0, s0), (t1, s1)))| {
                let on_cpu = t0
                    .zip(*t1)
                    .and_then(|(x, y)| y.checked_sub(x))
                    .map(|d| d as f64 / tick_hz / secs);
                let loop_delta = s0.zip(*s1).and_then(|(x, y)| {
                    Some((
                        y.busy_ns.checked_sub(x.busy_ns)?,
                        y.rx_packets.checked_sub(x.rx_packets)?,
                        y.idle_sleeps.checked_sub(x.idle_sleeps)?,
                    ))
                });
                ProcessCost {
                    role: w.role.clone(),
                    name: w.name.clone(),
                    pid: w.pid,
                    cpus: w.cpus.clone(),
                    on_cpu,
                    forwarding: loop_delta.map(|(busy, _, _)| busy as f64 / 1e9 / secs),
                    rx_packets: loop_delta.map(|(_, rx, _)| rx),
                    forwarding_ns_per_packet: loop_delta
                        .filter(|(_, rx, _)| *rx > 0)
                        .map(|(busy, rx, _)| busy as f64 / rx as f64),
                    idle_sleeps: loop_delta.map(|(_, _, sleeps)| sleeps),
                }
            })
            .collect();
        let cpus = probe
            .cpus
            .iter()
            .zip(a.cpus.iter().zip(&b.cpus))
            .filter_map(|(cpu, (x, y))| {
                let d = y.as_ref()?.since(x.as_ref()?);
                Some(CpuBusy {
                    cpu: *cpu,
                    busy: d.busy() as f64 / tick_hz / secs,
                })
            })
            .collect();
        RunCost { processes, cpus }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_ticks_are_counted_after_the_command_name() {
        // proc(5): pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
        // cmajflt utime stime ...
        let stat = "4242 (vnf vecswitch) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 17 0 0 20 0 3 0";
        assert_eq!(parse_pid_ticks(stat), Some(267));
        assert_eq!(parse_pid_ticks("4242 (x) S 1"), None);
        assert_eq!(parse_pid_ticks("no parenthesis"), None);
    }

    #[test]
    fn the_cost_is_the_difference_over_the_run_time() {
        let probe = Probe {
            processes: vec![Watched {
                role: "vnf".into(),
                name: "vnf-vecswitch".into(),
                pid: 7,
                cpus: vec!["1".into()],
                ctl: None,
            }],
            cpus: vec![1],
        };
        let at = Instant::now();
        let stats = |busy_ns, rx_packets, idle_sleeps| vecswitch_switch::LoopStats {
            busy_ns,
            rx_packets,
            idle_sleeps,
            ..Default::default()
        };
        let cpu = |busy, idle| crate::devcost::CpuTimes {
            user: busy,
            idle,
            ..Default::default()
        };
        let a = Reading {
            at,
            processes: vec![(Some(100), Some(stats(1_000_000, 10, 5)))],
            cpus: vec![Some(cpu(0, 0))],
        };
        let b = Reading {
            at: at + Duration::from_secs(2),
            processes: vec![(Some(150), Some(stats(21_000_000, 1_010, 905)))],
            cpus: vec![Some(cpu(160, 40))],
        };
        let c = RunCost::between(&probe, &a, &b, 100.0);
        let p = &c.processes[0];
        // 50 ticks of 10 ms in 2 s: on CPU a quarter of the run; forwarding 20 ms of 2 s.
        assert_eq!(p.on_cpu, Some(0.25));
        assert_eq!(p.forwarding, Some(0.01));
        assert_eq!(p.rx_packets, Some(1_000));
        assert_eq!(p.forwarding_ns_per_packet, Some(20_000.0));
        assert_eq!(p.idle_sleeps, Some(900));
        assert_eq!(c.cpus, vec![CpuBusy { cpu: 1, busy: 0.8 }]);
        // A process that went away: no figures, no error.
        let gone = Reading {
            at: b.at,
            processes: vec![(None, None)],
            cpus: vec![None],
        };
        let c = RunCost::between(&probe, &a, &gone, 100.0);
        assert_eq!(c.processes[0].on_cpu, None);
        assert_eq!(c.processes[0].forwarding, None);
        assert!(c.cpus.is_empty());
    }

    #[test]
    fn the_loop_comes_from_show_runtime_json() {
        let json = r#"{"ok":true,"data":{"nodes":[],"loop":{"polls":100,"idle_polls":90,"idle_sleeps":5,"rx_packets":2560,"busy_ns":1234,"packets_per_s":0.0,"max_poll_gap_ns":7},"clock_hz":2.4e9}}"#;
        let l = parse_loop(json).unwrap();
        assert_eq!((l.busy_ns, l.rx_packets, l.idle_sleeps), (1234, 2560, 5));
        assert!(parse_loop("{}").is_none());
    }
}
