//! Which process runs on which CPU.
//!
//! A [`CorePlan`] says where the generator, the DUT and the VNF should run (on the 2-core lab
//! machine: generator on CPU 0, DUT on CPU 1, the VNF of PVP beside the DUT). A [`Placement`] is what
//! actually ran: one [`PlacedProcess`] per process with the CPUs its threads were allowed on (read
//! from `/proc`), and a note for every CPU that more than one role shares — results must say so
//! (DESIGN.md: "topologies with more processes than cores must say so in their results").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where each role should run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorePlan {
    pub generator: usize,
    pub dut: usize,
    pub vnf: usize,
}

impl CorePlan {
    /// Generator on CPU 0, DUT and VNF on CPU 1 — or everything on CPU 0 on a 1-CPU machine.
    /// Counts the machine's online CPUs, not this thread's affinity: the generator pins the
    /// thread that runs trials, and a later topology built from that thread must still put the
    /// DUT on its own CPU.
    pub fn for_this_machine() -> CorePlan {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .map(|s| parse_cpu_list(s.trim()))
            .unwrap_or_default();
        let has = |c: usize| online.contains(&c);
        let other = if online.is_empty() {
            // No sysfs: fall back to what this thread may use.
            usize::from(std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2)
        } else if has(0) && has(1) {
            1
        } else {
            0
        };
        CorePlan {
            generator: 0,
            dut: other,
            vnf: other,
        }
    }

    /// Where and how the kernel's receive work on the DUT's veth ends runs: always on the DUT's
    /// CPU, so that the generator's core does the same work whatever the device (the comparison
    /// is fair only then: docs/BENCHMARKS.md §5, "Whose ceiling the veth NDRs are").
    ///
    /// - A kernel DUT (the Linux bridge: that receive work *is* the device): RPS on the DUT CPU,
    ///   the softirq runs there ([`KernelRx::Rps`]).
    /// - A DUT with a user-space worker that busy-polls its CPU (vecswitch, an OVS pmd):
    ///   [`KernelRx::ThreadedNapi`]. Without it the kernel runs the NAPI of a native-XDP veth end
    ///   (AF_XDP ports) on the *sender's* CPU, inside the generator's `sendto`. Threaded NAPI
    ///   (`/sys/class/net/DEV/threaded`, Documentation/networking/napi.rst "Threaded NAPI") gives
    ///   each receive queue a kthread; the lab pins it to the DUT CPU at
    ///   [`NAPI_THREAD_PRIORITY`], above the worker, so it runs as soon as the sender wakes it and
    ///   sleeps when its queue is empty. An end without XDP (AF_PACKET ports) has no NAPI: its
    ///   receive is backlog work that RPS places; on the DUT CPU it starved in `ksoftirqd`
    ///   behind the worker (§5 cause 1: p99 up to 28.6 ms), so it stays on the generator's CPU
    ///   (`backlog_cpu`) — the one exception to the rule, recorded in every result's placement.
    pub fn dut_kernel_rx(&self, dut_busy_polls: bool) -> KernelRx {
        if dut_busy_polls {
            KernelRx::ThreadedNapi {
                cpu: self.dut,
                priority: NAPI_THREAD_PRIORITY,
                backlog_cpu: self.generator,
            }
        } else {
            KernelRx::Rps { cpu: self.dut }
        }
    }

    /// `1 << cpu`, as RPS and OVS's pmd-cpu-mask want it.
    pub fn mask(cpu: usize) -> u64 {
        1u64 << cpu
    }
}

impl Default for CorePlan {
    fn default() -> Self {
        CorePlan::for_this_machine()
    }
}

/// The SCHED_FIFO priority of the DUT veth ends' NAPI kthreads ([`KernelRx::ThreadedNapi`]):
/// above the lab's busy-polling worker (`fifo:10`, crates/testbed/src/dut/vecswitch.rs
/// `WORKER_PRIORITY`; an OVS pmd runs at ordinary priority), so the receive preempts the worker
/// when there is work and leaves it the CPU when there is none.
pub const NAPI_THREAD_PRIORITY: u8 = 20;

/// How the kernel's receive work on the DUT's veth ends is placed ([`CorePlan::dut_kernel_rx`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum KernelRx {
    /// RPS (`rps_cpus`) of the DUT ends on `cpu`: the receive softirq runs there.
    Rps { cpu: usize },
    /// Threaded NAPI on the DUT ends, each NAPI kthread (an end with an XDP program has one)
    /// pinned to `cpu` at SCHED_FIFO `priority`, RPS of those ends on `cpu`; an end without a
    /// NAPI (AF_PACKET) keeps its backlog work off the busy-polled CPU, RPS on `backlog_cpu`.
    ThreadedNapi {
        cpu: usize,
        priority: u8,
        backlog_cpu: usize,
    },
}

impl KernelRx {
    /// The CPU the receive work runs on.
    pub fn cpu(self) -> usize {
        match self {
            KernelRx::Rps { cpu } | KernelRx::ThreadedNapi { cpu, .. } => cpu,
        }
    }
}

/// One process (or the generator's threads in this process) and where it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedProcess {
    /// `generator`, `dut`, `vnf`.
    pub role: String,
    /// Program name (`vecswitch`, `dpdk-testpmd`, `ovs-vswitchd`, ...).
    pub name: String,
    pub pid: u32,
    /// Distinct `Cpus_allowed_list` values of its threads (e.g. `["1"]`, or `["0", "1"]`).
    pub cpus: Vec<String>,
    /// Free text (e.g. "main lcore idle, forwarding lcore polls").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Where everything ran, and which CPUs were shared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub processes: Vec<PlacedProcess>,
    /// One line per CPU used by more than one role, e.g. "cpu 1 shared by dut (vecswitch) and vnf
    /// (dpdk-testpmd)". Empty when every role had its own CPU.
    pub shared_cpus: Vec<String>,
    /// Where the kernel's receive work on the veth ends ran (RPS), one line per interface, e.g.
    /// "dut0 (dut side): rps_cpus 1". Empty on memif topologies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_rx: Vec<String>,
    /// The host's housekeeping moved off the DUT's CPU for the run
    /// ([`crate::housekeeping::Housekeeping::note`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub housekeeping: String,
}

impl Placement {
    /// Builds the record and computes the shared-CPU notes. A process allowed on several CPUs
    /// counts on each of them.
    pub fn new(processes: Vec<PlacedProcess>) -> Placement {
        let mut by_cpu: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for p in &processes {
            let mut cpus: Vec<usize> = p.cpus.iter().flat_map(|l| parse_cpu_list(l)).collect();
            cpus.sort_unstable();
            cpus.dedup();
            for c in cpus {
                let who = format!("{} ({})", p.role, p.name);
                let v = by_cpu.entry(c).or_default();
                if !v.contains(&who) {
                    v.push(who);
                }
            }
        }
        let shared_cpus = by_cpu
            .into_iter()
            .filter(|(_, who)| who.len() > 1)
            .map(|(cpu, who)| format!("cpu {cpu} shared by {}", who.join(" and ")))
            .collect();
        Placement {
            processes,
            shared_cpus,
            kernel_rx: Vec::new(),
            housekeeping: String::new(),
        }
    }

    /// The same record with the kernel receive placement (`kernel_rx`) added.
    pub fn with_kernel_rx(mut self, kernel_rx: Vec<String>) -> Placement {
        self.kernel_rx = kernel_rx;
        self
    }

    /// Whether any CPU ran more than one role.
    pub fn shares_cpus(&self) -> bool {
        !self.shared_cpus.is_empty()
    }
}

/// Parses a kernel CPU list (`"0-2,5"`) into CPU numbers; unparsable parts are skipped.
pub fn parse_cpu_list(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    if b >= a && b - a < 4096 {
                        out.extend(a..=b);
                    }
                }
            }
            None => {
                if let Ok(c) = part.parse() {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// The scheduling of the thread of `pid` named `comm` (`/proc/<pid>/task/*/comm`), from its
/// `stat` (`policy` and `rt_priority`, proc(5) fields 41 and 40): `SCHED_FIFO 10`,
/// `SCHED_OTHER`, ... `None` if the process or no such thread exists. The kernel keeps the first
/// 15 bytes of a thread's name (`vecswitch-worker` is `vecswitch-worke` there); so does the match.
pub fn thread_sched(pid: u32, comm: &str) -> Option<String> {
    let want = comm.get(..comm.len().min(15)).unwrap_or(comm);
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if name.trim_end() != want {
            continue;
        }
        let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
        return parse_stat_sched(&stat);
    }
    None
}

/// The CPU time, ns, of all threads of process `pid` (the first field of each
/// `/proc/<pid>/task/<tid>/schedstat`, Documentation/scheduler/sched-stats.rst; threads that end
/// while they are read are skipped); `None` if the process does not exist.
pub fn process_cpu_ns(pid: u32) -> Option<u64> {
    let mut sum = 0u64;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(text) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        sum += text
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(sum)
}

/// `policy` and `rt_priority` from a `/proc/<pid>/task/<tid>/stat` line, as text.
pub fn parse_stat_sched(stat: &str) -> Option<String> {
    // Fields after the command name, which is in parentheses and may hold spaces: field 3
    // (state) is the first.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let rt_priority: u32 = f.get(40 - 3)?.parse().ok()?;
    let policy: u32 = f.get(41 - 3)?.parse().ok()?;
    let name = match policy {
        0 => "SCHED_OTHER",
        1 => "SCHED_FIFO",
        2 => "SCHED_RR",
        3 => "SCHED_BATCH",
        5 => "SCHED_IDLE",
        6 => "SCHED_DEADLINE",
        _ => return Some(format!("policy {policy} priority {rt_priority}")),
    };
    Some(if rt_priority == 0 {
        name.to_string()
    } else {
        format!("{name} {rt_priority}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_rx_goes_off_a_busy_polling_dut_cpu_and_is_recorded() {
        let plan = CorePlan {
            generator: 0,
            dut: 1,
            vnf: 1,
        };
        // A user-space worker busy-polls CPU 1: its veth receive work runs there too, in NAPI
        // threads that preempt the worker.
        assert_eq!(
            plan.dut_kernel_rx(true),
            KernelRx::ThreadedNapi {
                cpu: 1,
                priority: NAPI_THREAD_PRIORITY,
                backlog_cpu: 0,
            }
        );
        // The Linux bridge is that receive work: its softirq runs on the DUT's CPU.
        assert_eq!(plan.dut_kernel_rx(false), KernelRx::Rps { cpu: 1 });
        assert_eq!(
            plan.dut_kernel_rx(true).cpu(),
            plan.dut_kernel_rx(false).cpu()
        );
        let rec = Placement::new(vec![p("dut", "vecswitch", &["1"])])
            .with_kernel_rx(vec!["dut0 (dut side): rps_cpus 1".into()]);
        let json = serde_json::to_string(&rec).unwrap();
        assert!(json.contains("kernel_rx"), "{json}");
        assert_eq!(serde_json::from_str::<Placement>(&json).unwrap(), rec);
        // Results written before the field existed still load.
        let old = r#"{"processes":[],"shared_cpus":[]}"#;
        assert!(serde_json::from_str::<Placement>(old)
            .unwrap()
            .kernel_rx
            .is_empty());
    }

    fn p(role: &str, name: &str, cpus: &[&str]) -> PlacedProcess {
        PlacedProcess {
            role: role.into(),
            name: name.into(),
            pid: 1,
            cpus: cpus.iter().map(|s| s.to_string()).collect(),
            note: String::new(),
        }
    }

    #[test]
    fn plan_ignores_the_callers_affinity() {
        let before = CorePlan::for_this_machine();
        // Pin this test thread to CPU 0, as the generator pins its thread.
        let mut set = nix::sched::CpuSet::new();
        set.set(0).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
        assert_eq!(CorePlan::for_this_machine(), before);
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0-2,5"), vec![0, 1, 2, 5]);
        assert_eq!(parse_cpu_list("1"), vec![1]);
        assert_eq!(parse_cpu_list("x,3"), vec![3]);
        assert_eq!(parse_cpu_list(""), Vec::<usize>::new());
    }

    #[test]
    fn own_cores_share_nothing() {
        let pl = Placement::new(vec![
            p("generator", "vecswitch", &["0"]),
            p("dut", "testpmd", &["1"]),
        ]);
        assert!(!pl.shares_cpus());
    }

    #[test]
    fn shared_core_is_named() {
        let pl = Placement::new(vec![
            p("generator", "vecswitch", &["0"]),
            p("dut", "vecswitch", &["1"]),
            p("vnf", "dpdk-testpmd", &["1"]),
        ]);
        assert_eq!(
            pl.shared_cpus,
            vec!["cpu 1 shared by dut (vecswitch) and vnf (dpdk-testpmd)"]
        );
        let unpinned = Placement::new(vec![p("generator", "g", &["0-1"]), p("dut", "d", &["1"])]);
        assert_eq!(
            unpinned.shared_cpus,
            vec!["cpu 1 shared by generator (g) and dut (d)"]
        );
    }

    #[test]
    fn thread_sched_reads_this_threads_policy() {
        // A thread of this test process, at the default policy.
        let pid = std::process::id();
        let t = std::thread::Builder::new()
            .name("schedprobe-long-name".into())
            .spawn(move || thread_sched(pid, "schedprobe-long-name"))
            .unwrap();
        assert_eq!(t.join().unwrap().as_deref(), Some("SCHED_OTHER"));
        assert_eq!(thread_sched(pid, "no-such-thread"), None);
        // A real stat line of a SCHED_FIFO 10 thread (`chrt -f 10`), name with a space and ')'.
        let line = "4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 -11 0 2 0 \
                    123 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 10 1 0 0 0";
        assert_eq!(parse_stat_sched(line).as_deref(), Some("SCHED_FIFO 10"));
        assert_eq!(parse_stat_sched("garbage"), None);
    }
}
