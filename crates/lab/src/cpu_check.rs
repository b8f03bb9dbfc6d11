//! Is anything else busy on the measuring CPUs? [`check`] samples the CPU time of every thread on
//! the machine (`/proc/PID/task/TID/stat`: `utime + stime`, and the CPU it last ran on) over a
//! short window, leaves out the threads of the bench's own processes (the generator, the device
//! under test and its VNFs, which may legitimately poll a CPU at 100 %), and reports, per
//! measuring CPU, the share the others used and who they were ([`CpuCheck`]).
//!
//! Run before each test with the traffic stopped, it answers the question a result on a shared
//! two-core box must answer: was the generator or the device competing with someone else? A CPU
//! where others used more than the threshold flags the check ([`CpuCheck::flagged`]); the bench
//! records the check with every test and says so on stderr.
//!
//! Attribution is by the CPU a thread last ran on, so a thread that migrated during the window is
//! charged to one CPU only; kernel threads (softirq, kworkers) count as others. Times are in
//! `USER_HZ` ticks (100 per second in the /proc ABI), so a 500 ms window resolves 2 % of a CPU.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::suite::{SuiteObserver, TestSpec};

/// `/proc` reports times in USER_HZ ticks, 100 per second on Linux whatever the kernel's HZ.
const USER_HZ: f64 = 100.0;

/// Default window sampled before each test.
pub const DEFAULT_WINDOW: Duration = Duration::from_millis(500);

/// Default share of a measuring CPU other processes may use before the check is flagged.
pub const DEFAULT_THRESHOLD_PERCENT: f64 = 10.0;

/// One thread's accumulated CPU time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadTime {
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    /// The CPU it last ran on.
    pub cpu: usize,
    /// utime + stime, in USER_HZ ticks.
    pub ticks: u64,
}

/// Someone else's use of a measuring CPU during the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Busy {
    pub pid: u32,
    pub comm: String,
    pub percent: f64,
}

/// One measuring CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuLoad {
    pub cpu: usize,
    /// Share of the window the other processes used on this CPU, percent.
    pub others_percent: f64,
    /// The other processes that used it, busiest first (at most five).
    pub top: Vec<Busy>,
}

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuCheck {
    pub window_ms: f64,
    pub threshold_percent: f64,
    pub cpus: Vec<CpuLoad>,
    /// Some measuring CPU was used more than `threshold_percent` by other processes.
    pub flagged: bool,
}

impl CpuCheck {
    /// One line for a log: "cpu 1: 23.0 % by others (stress 20.0 %, kworker/1:0 3.0 %)".
    pub fn summary(&self) -> String {
        self.cpus
            .iter()
            .map(|c| {
                let who: Vec<String> = c
                    .top
                    .iter()
                    .map(|b| format!("{} [{}] {:.1} %", b.comm, b.pid, b.percent))
                    .collect();
                format!(
                    "cpu {}: {:.1} % by others ({})",
                    c.cpu,
                    c.others_percent,
                    if who.is_empty() {
                        "none".to_string()
                    } else {
                        who.join(", ")
                    }
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Parses one `/proc/PID/task/TID/stat` line: (comm, last CPU, utime + stime). The command name
/// sits in parentheses and may itself contain spaces and parentheses, so fields are counted from
/// the last `)` (proc(5): state is field 3, utime 14, stime 15, processor 39).
pub fn parse_stat(line: &str) -> Option<(String, usize, u64)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = line.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3.
    let field = |n: usize| rest.get(n - 3).copied();
    let utime: u64 = field(14)?.parse().ok()?;
    let stime: u64 = field(15)?.parse().ok()?;
    let cpu: usize = field(39)?.parse().ok()?;
    Some((comm, cpu, utime + stime))
}

/// Every thread's CPU time now. Threads that exit while being read are skipped.
pub fn snapshot() -> Vec<ThreadTime> {
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(line) = std::fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            if let Some((comm, cpu, ticks)) = parse_stat(&line) {
                out.push(ThreadTime {
                    pid,
                    tid,
                    comm,
                    cpu,
                    ticks,
                });
            }
        }
    }
    out
}

/// Compares two snapshots `elapsed` apart: per CPU of `cpus`, the share used by threads whose
/// process is not in `own`. Pure, so tests can feed it made-up snapshots.
pub fn compare(
    before: &[ThreadTime],
    after: &[ThreadTime],
    elapsed: Duration,
    cpus: &[usize],
    own: &[u32],
    threshold_percent: f64,
) -> CpuCheck {
    let own: BTreeSet<u32> = own.iter().copied().collect();
    let start: BTreeMap<(u32, u32), u64> =
        before.iter().map(|t| ((t.pid, t.tid), t.ticks)).collect();
    let window_ticks = (elapsed.as_secs_f64() * USER_HZ).max(1e-9);
    // cpu → pid → (comm, ticks)
    let mut used: BTreeMap<usize, BTreeMap<u32, (String, u64)>> = BTreeMap::new();
    for t in after.iter().filter(|t| !own.contains(&t.pid)) {
        // A thread born during the window counts from zero.
        let d = t
            .ticks
            .saturating_sub(start.get(&(t.pid, t.tid)).copied().unwrap_or(0));
        if d == 0 || !cpus.contains(&t.cpu) {
            continue;
        }
        let e = used
            .entry(t.cpu)
            .or_default()
            .entry(t.pid)
            .or_insert_with(|| (t.comm.clone(), 0));
        e.1 += d;
    }
    let mut loads = Vec::new();
    for &cpu in cpus.iter().collect::<BTreeSet<_>>() {
        let by_pid = used.remove(&cpu).unwrap_or_default();
        let total: u64 = by_pid.values().map(|(_, d)| d).sum();
        let mut top: Vec<Busy> = by_pid
            .into_iter()
            .map(|(pid, (comm, d))| Busy {
                pid,
                comm,
                percent: 100.0 * d as f64 / window_ticks,
            })
            .collect();
        top.sort_by(|a, b| b.percent.total_cmp(&a.percent));
        top.truncate(5);
        loads.push(CpuLoad {
            cpu,
            others_percent: 100.0 * total as f64 / window_ticks,
            top,
        });
    }
    CpuCheck {
        window_ms: elapsed.as_secs_f64() * 1e3,
        threshold_percent,
        flagged: loads.iter().any(|l| l.others_percent > threshold_percent),
        cpus: loads,
    }
}

/// A [`SuiteObserver`] that runs [`check`] before each test (then tells `inner`), keeping one
/// check per test started, in order — so the k-th check belongs to the k-th record a
/// [`crate::suite::run_for_dut_observed`] block returns.
pub struct CpuWatch<'a> {
    pub inner: &'a mut dyn SuiteObserver,
    /// The measuring CPUs (generator, device, VNF).
    pub cpus: Vec<usize>,
    /// Pids of the bench and the processes it started.
    pub own: Vec<u32>,
    pub window: Duration,
    pub threshold_percent: f64,
    pub checks: Vec<CpuCheck>,
}

impl<'a> CpuWatch<'a> {
    /// Default window and threshold ([`DEFAULT_WINDOW`], [`DEFAULT_THRESHOLD_PERCENT`]).
    pub fn new(inner: &'a mut dyn SuiteObserver, cpus: Vec<usize>, own: Vec<u32>) -> Self {
        CpuWatch {
            inner,
            cpus,
            own,
            window: DEFAULT_WINDOW,
            threshold_percent: DEFAULT_THRESHOLD_PERCENT,
            checks: Vec::new(),
        }
    }
}

impl std::fmt::Debug for CpuWatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuWatch")
            .field("cpus", &self.cpus)
            .field("own", &self.own)
            .field("checks", &self.checks.len())
            .finish()
    }
}

impl SuiteObserver for CpuWatch<'_> {
    fn test_started(&mut self, index: usize, spec: &TestSpec, scale_point: Option<u64>) {
        self.checks.push(check(
            &self.cpus,
            &self.own,
            self.window,
            self.threshold_percent,
        ));
        self.inner.test_started(index, spec, scale_point);
    }
}

/// Samples every thread over `window` and checks `cpus` (the measuring CPUs) for processes other
/// than `own` (pids of the bench and the processes it started) using more than
/// `threshold_percent` of a CPU.
pub fn check(cpus: &[usize], own: &[u32], window: Duration, threshold_percent: f64) -> CpuCheck {
    let before = snapshot();
    let t0 = Instant::now();
    std::thread::sleep(window);
    let after = snapshot();
    compare(&before, &after, t0.elapsed(), cpus, own, threshold_percent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pid: u32, tid: u32, comm: &str, cpu: usize, ticks: u64) -> ThreadTime {
        ThreadTime {
            pid,
            tid,
            comm: comm.into(),
            cpu,
            ticks,
        }
    }

    #[test]
    fn parses_proc_stat_with_awkward_command_names() {
        // proc(5) layout; the command name holds a space and a parenthesis.
        let line = "4242 (my (odd) cmd) R 1 4242 4242 0 -1 4194304 100 0 0 0 \
                    1234 56 0 0 20 0 1 0 1000 1000000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 \
                    0 0 0 17 1 0 0 0 0 0";
        assert_eq!(
            parse_stat(line),
            Some(("my (odd) cmd".to_string(), 1, 1290))
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) R 1 2"), None);
    }

    #[test]
    fn others_on_a_measuring_cpu_are_counted_and_named_own_processes_are_not() {
        // Window 1 s = 100 ticks. CPU 1 measures: the DUT (pid 10, own) polls it at 100 %;
        // `stress` (pid 20) took 30 ticks on it, a kworker 2; on CPU 3 (not measuring) a
        // compiler took 90 ticks; a thread born during the window (pid 40) took 5 on CPU 0.
        let before = vec![
            t(10, 10, "vecswitch", 1, 1000),
            t(20, 20, "stress", 1, 500),
            t(20, 21, "stress", 1, 10),
            t(30, 30, "kworker/1:0", 1, 7),
            t(50, 50, "rustc", 3, 0),
        ];
        let after = vec![
            t(10, 10, "vecswitch", 1, 1100),
            t(20, 20, "stress", 1, 520),
            t(20, 21, "stress", 1, 20),
            t(30, 30, "kworker/1:0", 1, 9),
            t(50, 50, "rustc", 3, 90),
            t(40, 40, "new", 0, 5),
        ];
        let c = compare(
            &before,
            &after,
            Duration::from_secs(1),
            &[1, 0],
            &[10],
            10.0,
        );
        assert!(c.flagged);
        assert_eq!(c.cpus.len(), 2);
        assert_eq!(c.cpus[0].cpu, 0);
        assert_eq!(c.cpus[0].others_percent, 5.0);
        let cpu1 = &c.cpus[1];
        assert_eq!(cpu1.others_percent, 32.0);
        assert_eq!(
            cpu1.top
                .iter()
                .map(|b| (b.pid, b.percent))
                .collect::<Vec<_>>(),
            vec![(20, 30.0), (30, 2.0)]
        );
        assert!(
            c.summary().contains("stress [20] 30.0 %"),
            "{}",
            c.summary()
        );
        // Under the threshold: not flagged.
        let quiet = compare(&before, &after, Duration::from_secs(1), &[0], &[10], 10.0);
        assert!(!quiet.flagged);
    }

    #[test]
    fn a_busy_thread_of_this_machine_is_seen() {
        // A thread of this test process spins on whatever CPU it gets; a check that does not
        // count this process as its own must see someone using that CPU.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let spinner = std::thread::spawn(move || {
            let mut x = 0u64;
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                x = x.wrapping_add(1);
                std::hint::black_box(x);
            }
        });
        // One pair of snapshots, compared twice: without and with this process as our own. On a
        // loaded machine the spinner need not be among a CPU's five busiest (CI saw it pushed
        // out by rustc), so the check is on the totals, which must differ by exactly its time.
        let all: Vec<usize> = (0..256).collect();
        let before = snapshot();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(1000));
        let after = snapshot();
        let elapsed = t0.elapsed();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        let me = std::process::id();
        let ticks = |snap: &[ThreadTime]| -> BTreeMap<u32, u64> {
            snap.iter()
                .filter(|t| t.pid == me)
                .map(|t| (t.tid, t.ticks))
                .collect()
        };
        let (b, a) = (ticks(&before), ticks(&after));
        let mine: u64 = a
            .iter()
            .map(|(tid, t)| t.saturating_sub(b.get(tid).copied().unwrap_or(0)))
            .sum();
        assert!(mine > 0, "the spinner got no CPU time in 1 s");
        let total = |c: &CpuCheck| c.cpus.iter().map(|l| l.others_percent).sum::<f64>();
        let seen = compare(&before, &after, elapsed, &all, &[], 10.0);
        let hidden = compare(&before, &after, elapsed, &all, &[me], 10.0);
        let expect = 100.0 * mine as f64 / (elapsed.as_secs_f64() * USER_HZ);
        let diff = total(&seen) - total(&hidden);
        assert!(
            (diff - expect).abs() < 1e-6,
            "this process's {expect:.1} % is counted when it is not our own (difference {diff:.1} %)\n{}",
            seen.summary()
        );
        // Counting this process as our own hides it.
        assert!(hidden
            .cpus
            .iter()
            .all(|l| l.top.iter().all(|b| b.pid != me)));
    }

    #[test]
    fn cpu_watch_checks_before_every_test_and_keeps_one_check_per_record() {
        use crate::sim::{SimDut, SimModel};
        use crate::suite::{run_for_dut_observed, FrameSize, Suite};
        let suite = Suite::parse(
            r#"
name = "two tests"
frame_sizes = [64]
[[dut]]
name = "sim"
topology = "phy2phy-memif"
[[test]]
procedure = "throughput"
trial_duration_s = 1
[[test]]
procedure = "back2back"
repetitions = 1
max_burst_s = 0.001
"#,
        )
        .unwrap();
        let mut inner = ();
        let mut watch = CpuWatch::new(&mut inner, vec![0], vec![std::process::id()]);
        watch.window = Duration::from_millis(20);
        let mut m = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1).with_buffer(100);
        let run = run_for_dut_observed(
            &suite,
            &suite.duts[0],
            &FrameSize::Bytes(64),
            None,
            &mut m,
            &mut |_, _, _| Ok(()),
            &mut watch,
        )
        .unwrap();
        assert!(run.error.is_none(), "{:?}", run.error);
        assert_eq!(run.records.len(), 2);
        assert_eq!(watch.checks.len(), 2);
        assert!(watch
            .checks
            .iter()
            .all(|c| c.cpus.len() == 1 && c.window_ms >= 20.0));
    }
}
