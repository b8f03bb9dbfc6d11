//! Device cost side by side (issue 7 item 6): what a device spends per packet on its core at a
//! given offered load, read around trials at fixed loads ([`measure_device_cost`]) and reported
//! as the lab's [`DeviceCostRow`].
//!
//! Where the busy time comes from ([`CostMethod`]):
//!
//! | device | busy time |
//! |---|---|
//! | vecswitch | its poll loop's busy clocks (`show runtime` `loop.busy_ns`: iterations that received, port I/O included), plus its veth ends' NAPI threads' CPU time (below) |
//! | testpmd | `--record-core-cycles` (total cycles of bursts that received; "CPU cycles/packet") |
//! | OVS userspace | `dpif-netdev/pmd-stats-show` processing cycles |
//! | Linux bridge (kernel) | system + irq + softirq time of the DUT CPU, `/proc/stat` before/after |
//! | a process without its own clocks | all non-idle time of the DUT CPU, `/proc/stat` |
//!
//! Busy fraction = busy time ÷ the trial's duration; cycles/packet = busy clocks ÷ packets the
//! device received (its own counter, else what reached the generator); estimated capacity =
//! device receive rate ÷ busy fraction, an extrapolation labelled as an estimate
//! ([`vecswitch_lab::device_cost`]). Clocks are converted with the CPU's nominal rate
//! (`/proc/cpuinfo` "cpu MHz"), the rate vecswitch uses too; testpmd and OVS count TSC cycles,
//! within about 1 % of it on these machines (testpmd: "2450 MHz Clock" vs 2445 MHz).
//!
//! A device with clocks of its own whose veth ends the lab gave threaded NAPI (an AF_XDP DUT:
//! [`crate::netns::steer_dut_kernel_rx`]) has its kernel receive done by those `napi/<end>-<id>`
//! kthreads on the DUT CPU, outside its own clocks. Their CPU time (`/proc/<pid>/schedstat`, first
//! field, ns; Documentation/scheduler/sched-stats.rst) over the trial is added to the device's busy
//! time ([`CostMethod::DeviceClocksAndNapi`]), so that its cost per packet includes its kernel
//! receive as the Linux bridge's softirq time does (docs/BENCHMARKS.md §5 "The DUT's receive on
//! the DUT's CPU").
//!
//! Those threads run at a real-time priority above the worker's and preempt it; the worker's busy
//! clocks are wall time (vecswitch: from the start of an iteration that received to its end; OVS's
//! PMD cycles are TSC cycles the same way), so an iteration preempted by a NAPI thread holds that
//! thread's time too, and adding the threads' time counted it twice: at 150 kfps the sum came to
//! 1.6 times the DUT CPU's whole time (docs/BENCHMARKS.md §5, "Where vecswitch AF_XDP's cycles
//! go"). The device's own busy clocks are therefore capped at the CPU time its processes really
//! had over the trial (all their threads' `/proc/<pid>/task/<tid>/schedstat`,
//! [`crate::placement::process_cpu_ns`]); when the cap binds the figure is an upper bound (it
//! then holds a busy-polling worker's empty polls as well).
//!
//! CPU time from `/proc/stat` counts everything on the DUT CPU: other work there (a compiler)
//! inflates a kernel device's cost. The reading compares the CPU's user time with the device's
//! and notes when the CPU was shared.

use std::time::{Duration, Instant};

use vecswitch_lab::device_cost::{estimate_capacity, median, DeviceCostRow};
use vecswitch_lab::{LabError, Load, Measurer};

use crate::dut::counters::DeviceCounters;
use crate::error::{Error, Result};
use crate::topology::Testbed;

/// Cumulative time of one CPU from `/proc/stat`, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// Kernel time: system + irq + softirq (where a kernel bridge forwards).
    pub fn kernel(&self) -> u64 {
        self.system + self.irq + self.softirq
    }

    /// Everything but idle, iowait and steal.
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.kernel()
    }

    /// `self − before`, saturating.
    pub fn since(&self, b: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(b.user),
            nice: self.nice.saturating_sub(b.nice),
            system: self.system.saturating_sub(b.system),
            idle: self.idle.saturating_sub(b.idle),
            iowait: self.iowait.saturating_sub(b.iowait),
            irq: self.irq.saturating_sub(b.irq),
            softirq: self.softirq.saturating_sub(b.softirq),
            steal: self.steal.saturating_sub(b.steal),
        }
    }
}

/// The `cpuN` line of a `/proc/stat` text (proc(5): user nice system idle iowait irq softirq
/// steal ...).
pub fn parse_proc_stat(text: &str, cpu: usize) -> Option<CpuTimes> {
    let tag = format!("cpu{cpu}");
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(tag.as_str()))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<std::result::Result<_, _>>()
        .ok()?;
    let g = |i: usize| v.get(i).copied().unwrap_or(0);
    (v.len() >= 4).then(|| CpuTimes {
        user: g(0),
        nice: g(1),
        system: g(2),
        idle: g(3),
        iowait: g(4),
        irq: g(5),
        softirq: g(6),
        steal: g(7),
    })
}

/// Reads `/proc/stat` for `cpu`.
pub fn read_cpu(cpu: usize) -> Result<CpuTimes> {
    let path = std::path::PathBuf::from("/proc/stat");
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
        what: "reading",
        path: path.clone(),
        source,
    })?;
    parse_proc_stat(&text, cpu).ok_or_else(|| Error::Invalid {
        field: "/proc/stat",
        value: format!("no cpu{cpu} line"),
        expected: "a per-CPU line for the DUT's CPU".into(),
    })
}

/// USER_HZ, the unit of `/proc/stat` (`getconf CLK_TCK`; 100 on Linux when it cannot be read).
pub fn user_hz() -> f64 {
    crate::cmd::run("getconf", &["CLK_TCK"])
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|h| *h > 0.0)
        .unwrap_or(100.0)
}

/// The CPU's nominal clock from `/proc/cpuinfo` ("cpu MHz" of the first CPU), Hz.
pub fn cpu_hz() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_cpu_mhz(&text).map(|mhz| mhz * 1e6)
}

/// The first "cpu MHz" value of a `/proc/cpuinfo` text.
pub fn parse_cpu_mhz(text: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with("cpu MHz"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

/// How a device's busy time is read (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostMethod {
    /// The device's own busy clocks ([`DeviceCounters::busy_clocks`]).
    DeviceClocks,
    /// The device's own busy clocks plus the CPU time of its veth ends' NAPI threads (the
    /// kernel receive the lab placed on the DUT CPU in threaded NAPI).
    DeviceClocksAndNapi,
    /// System + irq + softirq time of the DUT CPU (a device that runs in the kernel).
    KernelCpu,
    /// All non-idle time of the DUT CPU (a process without clocks of its own).
    CpuTime,
    /// No busy time: a device the lab did not start (`external`) that reports no busy clocks.
    Unknown,
}

/// One reading around a trial.
#[derive(Debug, Clone)]
pub struct CostReading {
    pub at: Instant,
    pub counters: Option<DeviceCounters>,
    pub cpu: Option<CpuTimes>,
    /// CPU time of the DUT ends' NAPI threads, ns (summed; `None` when the placement has none).
    pub napi_ns: Option<u64>,
    /// CPU time of the device's processes, all threads, ns (summed; read only with NAPI threads).
    pub process_ns: Option<u64>,
}

/// The time a task has spent on a CPU, ns: the first field of `/proc/<pid>/schedstat`
/// (Documentation/scheduler/sched-stats.rst: "time spent on the cpu", "time spent waiting on a
/// runqueue", "# of timeslices run on this cpu").
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The summed CPU time of `threads` now, ns; `None` when there are none or one of them is gone
/// (its pid reused or exited: the sum would not be comparable with an earlier one).
pub fn napi_cpu_ns(threads: &[crate::netns::NapiThread]) -> Option<u64> {
    if threads.is_empty() {
        return None;
    }
    threads.iter().try_fold(0u64, |sum, t| {
        let dir = format!("/proc/{}", t.pid);
        let comm = std::fs::read_to_string(format!("{dir}/comm")).ok()?;
        if comm.trim_end() != t.name {
            return None;
        }
        let ns = parse_schedstat(&std::fs::read_to_string(format!("{dir}/schedstat")).ok()?)?;
        Some(sum + ns)
    })
}

/// Reads the DUT's counters and its CPU's times now (no CPU times for a device the lab did not
/// start: its CPU is not the lab's DUT CPU).
pub fn read(tb: &Testbed) -> Result<CostReading> {
    let counters = tb.with_dut(|d| d.counters()).transpose()?.flatten();
    let cpu = if tb.wiring().topology.is_external() {
        None
    } else {
        read_cpu(tb.wiring().cores.dut).ok()
    };
    let napi_ns = napi_cpu_ns(tb.napi_threads());
    let process_ns = napi_ns
        .and_then(|_| tb.with_dut(|d| d.processes()))
        .and_then(|ps| {
            let ns: Vec<u64> = ps
                .iter()
                .filter(|p| p.pid != 0)
                .filter_map(|p| crate::placement::process_cpu_ns(p.pid))
                .collect();
            (!ns.is_empty()).then(|| ns.iter().sum())
        });
    Ok(CostReading {
        at: Instant::now(),
        counters,
        cpu,
        napi_ns,
        process_ns,
    })
}

/// What one trial cost the device.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialCost {
    pub method: CostMethod,
    pub busy_fraction: Option<f64>,
    pub cycles_per_packet: Option<f64>,
    pub device_rx: Option<u64>,
    pub idle_poll_fraction: Option<f64>,
    /// The DUT CPU's user time ÷ trial time, when the method is [`CostMethod::KernelCpu`]
    /// (other work on the CPU the kernel device uses).
    pub foreign_user_fraction: Option<f64>,
}

/// The cost of one trial from two readings. `kernel_device`: the device runs in the kernel (no
/// process); `trial`: how long traffic flowed; `received`: frames back at the generator (used
/// when the device has no receive counter); `hz`: clock rate; `tick_hz`: USER_HZ.
pub fn trial_cost(
    before: &CostReading,
    after: &CostReading,
    kernel_device: bool,
    trial: Duration,
    received: u64,
    hz: f64,
    tick_hz: f64,
) -> TrialCost {
    let d = match (&after.counters, &before.counters) {
        (Some(a), Some(b)) => a.delta(b),
        _ => DeviceCounters::default(),
    };
    let cpu = match (after.cpu, before.cpu) {
        (Some(a), Some(b)) => Some(a.since(&b)),
        _ => None,
    };
    let secs = trial.as_secs_f64().max(1e-9);
    let packets = d.rx_frames.unwrap_or(received);
    // The NAPI threads' time over the trial, as clocks (both readings must have it).
    let napi_clocks = match (after.napi_ns, before.napi_ns) {
        (Some(a), Some(b)) => Some(a.saturating_sub(b) as f64 / 1e9 * hz),
        _ => None,
    };
    // The device's CPU time over the trial, as clocks: its busy clocks cannot exceed it.
    let process_clocks = match (after.process_ns, before.process_ns) {
        (Some(a), Some(b)) => Some(a.saturating_sub(b) as f64 / 1e9 * hz),
        _ => None,
    };
    let (method, busy_clocks) = match (d.busy_clocks, kernel_device) {
        (Some(c), false) => match napi_clocks {
            Some(n) => {
                let own = process_clocks.map_or(c as f64, |w| w.min(c as f64));
                (CostMethod::DeviceClocksAndNapi, Some(own + n))
            }
            None => (CostMethod::DeviceClocks, Some(c as f64)),
        },
        (None, _) if cpu.is_none() => (CostMethod::Unknown, None),
        (_, true) => (
            CostMethod::KernelCpu,
            cpu.map(|c| c.kernel() as f64 / tick_hz * hz),
        ),
        (None, false) => (
            CostMethod::CpuTime,
            cpu.map(|c| c.busy() as f64 / tick_hz * hz),
        ),
    };
    let busy_fraction = busy_clocks.map(|c| c / hz / secs);
    TrialCost {
        method,
        busy_fraction,
        cycles_per_packet: busy_clocks
            .filter(|_| packets > 0)
            .map(|c| c / packets as f64),
        device_rx: d.rx_frames,
        idle_poll_fraction: match (d.idle_polls, d.total_polls) {
            (Some(i), Some(t)) if t > 0 => Some(i as f64 / t as f64),
            _ => None,
        },
        foreign_user_fraction: (method == CostMethod::KernelCpu)
            .then_some(cpu)
            .flatten()
            .map(|c| (c.user + c.nice) as f64 / tick_hz / secs),
    }
}

/// The method as the results say it, for `device` on CPU `cpu`.
pub fn method_label(m: CostMethod, device: &str, cpu: usize) -> String {
    match m {
        CostMethod::DeviceClocks => format!("{device}'s own busy clocks"),
        CostMethod::DeviceClocksAndNapi => format!(
            "{device}'s own busy clocks (at most its processes' CPU time) + its veth ends' NAPI threads on CPU {cpu} (schedstat)"
        ),
        CostMethod::KernelCpu => format!("system+irq+softirq time of CPU {cpu} (/proc/stat)"),
        CostMethod::CpuTime => format!("non-idle time of CPU {cpu} (/proc/stat)"),
        CostMethod::Unknown => {
            format!("none: {device} reports no busy time and its CPU is not the lab's")
        }
    }
}

/// User time on the DUT CPU above which a kernel device's figures are noted as shared.
pub const SHARED_CPU_USER_FRACTION: f64 = 0.05;

/// Runs `repetitions` trials at each of `loads` on `m` (the generator on `tb`'s ports), reading
/// the device's busy time around each, and returns one row per load (medians).
#[allow(clippy::too_many_arguments)] // one row's context: device, topology, size and settings
pub fn measure_device_cost<M: Measurer + ?Sized>(
    tb: &Testbed,
    m: &mut M,
    topology: &str,
    frame_size: &str,
    loads_fps: &[f64],
    duration: Duration,
    repetitions: u32,
) -> std::result::Result<Vec<DeviceCostRow>, LabError> {
    let dut_err = |e: Error| LabError::Dut(e.to_string());
    let (device, kernel_device) = tb
        .with_dut(|d| {
            // A kernel device has placement entries without a process (pid 0); an external
            // one has none at all.
            let p = d.processes();
            let kernel = !p.is_empty() && p.iter().all(|p| p.pid == 0);
            (d.name().to_string(), kernel)
        })
        .ok_or_else(|| LabError::Dut("device cost: no DUT started".into()))?;
    let cpu = tb.wiring().cores.dut;
    let hz = cpu_hz().ok_or_else(|| {
        LabError::Dut(
            "device cost: no \"cpu MHz\" in /proc/cpuinfo to turn time into clocks".into(),
        )
    })?;
    let tick = user_hz();
    let mut rows = Vec::new();
    for &load in loads_fps {
        let mut costs = Vec::new();
        let (mut offered, mut received, mut limited) = (Vec::new(), Vec::new(), false);
        for _ in 0..repetitions {
            let before = read(tb).map_err(dut_err)?;
            let r = m.trial(Load::fps(load), duration)?;
            let after = read(tb).map_err(dut_err)?;
            // Rates and busy fraction over the time traffic was scheduled to flow: the trial's
            // wall time also holds the drain after it, when nothing is sent.
            let secs = r.intended_duration.as_secs_f64().max(1e-9);
            offered.push(r.offered_frames as f64 / secs);
            received.push(r.received_frames as f64 / secs);
            limited |= r.tester_limited;
            let c = trial_cost(
                &before,
                &after,
                kernel_device,
                r.intended_duration,
                r.received_frames,
                hz,
                tick,
            );
            costs.push((c, secs));
        }
        let pick = |f: &dyn Fn(&TrialCost, f64) -> Option<f64>| {
            let v: Vec<f64> = costs.iter().filter_map(|(c, s)| f(c, *s)).collect();
            (v.len() == costs.len()).then(|| median(&v)).flatten()
        };
        let busy = pick(&|c, _| c.busy_fraction);
        let device_rx_fps = pick(&|c, s| c.device_rx.map(|n| n as f64 / s));
        let method = costs
            .first()
            .map(|(c, _)| c.method)
            .unwrap_or(CostMethod::CpuTime);
        let foreign = pick(&|c, _| c.foreign_user_fraction);
        let received_fps = median(&received).unwrap_or(0.0);
        let mut notes = Vec::new();
        if let Some(u) = foreign.filter(|u| *u > SHARED_CPU_USER_FRACTION) {
            notes.push(format!(
                "CPU {cpu} also ran user-space work ({:.0} % of the time): the kernel time may include others' system calls",
                u * 100.0
            ));
        }
        if busy.is_some_and(|b| b >= vecswitch_lab::device_cost::SATURATED_BUSY_FRACTION) {
            notes.push("busy ≥ 95 %: the device is at its limit, no capacity estimated".into());
        }
        rows.push(DeviceCostRow {
            device: device.clone(),
            topology: topology.to_string(),
            frame_size: frame_size.to_string(),
            intended_fps: load,
            offered_fps: median(&offered).unwrap_or(0.0),
            received_fps,
            device_rx_fps,
            busy_fraction: busy,
            cycles_per_packet: pick(&|c, _| c.cycles_per_packet),
            estimated_capacity_fps: busy
                .and_then(|b| estimate_capacity(device_rx_fps.unwrap_or(received_fps), b)),
            idle_poll_fraction: pick(&|c, _| c.idle_poll_fraction),
            method: method_label(method, &device, cpu),
            repetitions,
            tester_limited: limited,
            note: (!notes.is_empty()).then(|| notes.join("; ")),
            round: None,
            load_basis: None,
        });
    }
    Ok(rows)
}

/// How long it takes to move one cache line from one CPU to another and back, measured by two
/// threads bouncing a counter ([`core_to_core`]).
///
/// Every memif frame moves cache lines between the generator's CPU and the device's (ring
/// indices, descriptors, the copied buffer). Inside this VM both CPUs look the same at every
/// start (`lscpu`: one socket, one shared L3), but the host decides where our two vCPUs run,
/// and the figure changes under us: 123–127 ns on an idle machine at 04:20 UTC on 2026-11-24,
/// 433–532 ns in 66 of 70 samples over the next hour (others' builds running), 123–125 ns in
/// two of them (docs/METHODOLOGY.md, "memif's two modes"). The bench records it with every block (`setup.core_to_core`) so that a result can be
/// read against it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CoreToCore {
    pub from_cpu: usize,
    pub to_cpu: usize,
    /// Fastest batch's mean round trip, ns: the hardware's figure (a batch in which neither
    /// thread was preempted).
    pub min_ns: f64,
    /// Median batch, ns.
    pub p50_ns: f64,
    /// Round trips timed (batches of [`C2C_BATCH`]).
    pub round_trips: u64,
}

/// Round trips per timed batch of [`core_to_core`].
pub const C2C_BATCH: u64 = 100;

/// A cache line of its own for one counter (no false sharing between ping and pong).
#[repr(align(64))]
#[derive(Default)]
struct Line(std::sync::atomic::AtomicU64);

/// Measures [`CoreToCore`] between `from` and `to` over `round_trips` round trips (rounded up to
/// whole batches), each side on its own thread pinned to its CPU (the caller's thread and its
/// affinity are untouched). Gives up with an error after `limit`: a CPU that never ran our thread
/// (both busy with real-time work) must not hang the bench.
pub fn core_to_core(
    from: usize,
    to: usize,
    round_trips: u64,
    limit: Duration,
) -> Result<CoreToCore> {
    use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
    use std::sync::Arc;
    let batches = round_trips.div_ceil(C2C_BATCH).max(1);
    let n = batches * C2C_BATCH;
    let lines = Arc::new((Line::default(), Line::default(), Line::default()));
    let deadline = Instant::now() + limit;
    let l2 = Arc::clone(&lines);
    let echo = std::thread::spawn(move || -> Result<()> {
        crate::measurer::pin_current_thread(to)?;
        let (ping, pong, stop) = (&l2.0 .0, &l2.1 .0, &l2.2 .0);
        for i in 1..=n {
            while ping.load(Acquire) != i {
                if stop.load(Relaxed) != 0 {
                    return Ok(());
                }
                std::hint::spin_loop();
            }
            pong.store(i, Release);
        }
        Ok(())
    });
    let main = std::thread::spawn({
        let lines = Arc::clone(&lines);
        move || -> Result<Vec<f64>> {
            crate::measurer::pin_current_thread(from)?;
            let (ping, pong, stop) = (&lines.0 .0, &lines.1 .0, &lines.2 .0);
            let mut per_batch = Vec::with_capacity(batches as usize);
            let mut i = 0;
            for _ in 0..batches {
                let t0 = Instant::now();
                for _ in 0..C2C_BATCH {
                    i += 1;
                    ping.store(i, Release);
                    let mut spins = 0u32;
                    while pong.load(Acquire) != i {
                        spins = spins.wrapping_add(1);
                        if spins.is_multiple_of(4096) && Instant::now() > deadline {
                            stop.store(1, Relaxed);
                            return Err(Error::Invalid {
                                field: "core-to-core probe",
                                value: format!("no answer from CPU {to} within {limit:?}"),
                                expected: "both CPUs free to run the probe's threads".into(),
                            });
                        }
                        std::hint::spin_loop();
                    }
                }
                per_batch.push(t0.elapsed().as_secs_f64() * 1e9 / C2C_BATCH as f64);
            }
            Ok(per_batch)
        }
    });
    fn joined<T>(h: std::thread::JoinHandle<Result<T>>) -> Result<T> {
        h.join().unwrap_or_else(|_| {
            Err(Error::Invalid {
                field: "core-to-core probe",
                value: "a probe thread panicked".into(),
                expected: "a finished probe".into(),
            })
        })
    }
    let timed = joined(main);
    lines.2 .0.store(1, Relaxed);
    let echoed = joined(echo);
    let mut per_batch = timed?;
    echoed?;
    per_batch.sort_by(f64::total_cmp);
    Ok(CoreToCore {
        from_cpu: from,
        to_cpu: to,
        min_ns: per_batch[0],
        p50_ns: per_batch[per_batch.len() / 2],
        round_trips: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_to_core_round_trip_is_measured_between_two_cpus() {
        // Between the two CPUs of the lab (or CPU 0 with itself on a one-CPU machine): a round
        // trip is at least two cache-line transfers, so more than 10 ns, and on any machine the
        // lab runs on well under a millisecond for the fastest batch.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let to = usize::from(cpus > 1);
        let c = core_to_core(0, to, 2_000, Duration::from_secs(20)).unwrap();
        eprintln!("core to core: {c:?}");
        assert_eq!((c.from_cpu, c.to_cpu, c.round_trips), (0, to, 2_000));
        assert!(c.min_ns > 10.0 && c.min_ns < 1e6, "{c:?}");
        assert!(c.p50_ns >= c.min_ns, "{c:?}");
        // Rounded up to whole batches.
        let c = core_to_core(0, to, 1, Duration::from_secs(20)).unwrap();
        assert_eq!(c.round_trips, C2C_BATCH);
    }

    /// The first lines of `/proc/stat` on this machine (2 CPUs), 2026-11-23.
    const STAT: &str = "cpu  188489 0 42134 74244 3178 0 6341 2900 0 0
cpu0 92933 0 19782 39628 1277 0 3681 1454 0 0
cpu1 95556 0 22351 34615 1901 0 2660 1445 0 0
";

    #[test]
    fn proc_stat_per_cpu_line() {
        let c = parse_proc_stat(STAT, 1).unwrap();
        assert_eq!(
            c,
            CpuTimes {
                user: 95556,
                nice: 0,
                system: 22351,
                idle: 34615,
                iowait: 1901,
                irq: 0,
                softirq: 2660,
                steal: 1445
            }
        );
        assert_eq!(c.kernel(), 22351 + 2660);
        assert_eq!(c.busy(), 95556 + 22351 + 2660);
        assert!(parse_proc_stat(STAT, 2).is_none());
        assert_eq!(
            parse_cpu_mhz("processor\t: 0\ncpu MHz\t\t: 2445.406\n"),
            Some(2445.406)
        );
    }

    /// [`trial_cost`] of a 2 s trial at 2 GHz and USER_HZ 100 (every test's figures).
    fn cost_2s(
        before: &CostReading,
        after: &CostReading,
        kernel_device: bool,
        received: u64,
    ) -> TrialCost {
        trial_cost(
            before,
            after,
            kernel_device,
            Duration::from_secs(2),
            received,
            2e9,
            100.0,
        )
    }

    fn reading(c: DeviceCounters, cpu: CpuTimes) -> CostReading {
        CostReading {
            at: Instant::now(),
            counters: Some(c),
            cpu: Some(cpu),
            napi_ns: None,
            process_ns: None,
        }
    }

    #[test]
    fn device_clocks_give_busy_fraction_and_cycles_per_packet() {
        let b = DeviceCounters {
            rx_frames: Some(0),
            busy_clocks: Some(0),
            idle_polls: Some(0),
            total_polls: Some(0),
            ..Default::default()
        };
        // 1e6 packets in 2 s, busy 0.5 s at 2 GHz = 1e9 clocks: 25 % busy, 1000 clocks/packet.
        let a = DeviceCounters {
            rx_frames: Some(1_000_000),
            busy_clocks: Some(1_000_000_000),
            idle_polls: Some(300),
            total_polls: Some(400),
            ..Default::default()
        };
        let c = cost_2s(
            &reading(b, CpuTimes::default()),
            &reading(a, CpuTimes::default()),
            false,
            999_000,
        );
        assert_eq!(c.method, CostMethod::DeviceClocks);
        assert!((c.busy_fraction.unwrap() - 0.25).abs() < 1e-12);
        assert!((c.cycles_per_packet.unwrap() - 1000.0).abs() < 1e-9);
        assert_eq!(c.idle_poll_fraction, Some(0.75));
        assert_eq!(c.foreign_user_fraction, None);
        assert_eq!(estimate_capacity(500_000.0, 0.25), Some(2_000_000.0));
    }

    #[test]
    fn napi_threads_time_is_added_to_the_device_clocks() {
        let b = DeviceCounters {
            rx_frames: Some(0),
            busy_clocks: Some(0),
            ..Default::default()
        };
        // 1e6 packets in 2 s: the worker busy 1e9 clocks (0.5 s at 2 GHz), its NAPI threads
        // 0.25 s more: 37.5 % busy, 1500 clocks/packet.
        let a = DeviceCounters {
            rx_frames: Some(1_000_000),
            busy_clocks: Some(1_000_000_000),
            ..Default::default()
        };
        let with = |r: CostReading, ns| CostReading {
            napi_ns: Some(ns),
            ..r
        };
        let before = with(reading(b.clone(), CpuTimes::default()), 7_000_000_000);
        let after = with(reading(a.clone(), CpuTimes::default()), 7_250_000_000);
        let c = cost_2s(&before, &after, false, 1_000_000);
        assert_eq!(c.method, CostMethod::DeviceClocksAndNapi);
        assert!((c.busy_fraction.unwrap() - 0.375).abs() < 1e-12, "{c:?}");
        assert!(
            (c.cycles_per_packet.unwrap() - 1500.0).abs() < 1e-9,
            "{c:?}"
        );
        assert!(method_label(c.method, "vecswitch", 1).contains("NAPI threads on CPU 1"));
        // The NAPI threads preempt the worker inside its busy iterations: busy clocks beyond the
        // device's own CPU time (here 0.3 s = 6e8 clocks) are the threads' time, not the
        // device's, and are not counted twice: 6e8 + 5e8 = 1100 clocks/packet.
        let cap = |r: CostReading, ns| CostReading {
            process_ns: Some(ns),
            ..r
        };
        let c = cost_2s(
            &cap(before.clone(), 1_000_000_000),
            &cap(after.clone(), 1_300_000_000),
            false,
            1_000_000,
        );
        assert!(
            (c.cycles_per_packet.unwrap() - 1100.0).abs() < 1e-6,
            "{c:?}"
        );
        // A device that had more CPU time than its busy clocks (empty polls): the clocks stand.
        let c = cost_2s(
            &cap(before.clone(), 0),
            &cap(after.clone(), 1_900_000_000),
            false,
            1_000_000,
        );
        assert!(
            (c.cycles_per_packet.unwrap() - 1500.0).abs() < 1e-6,
            "{c:?}"
        );
        // Without the threads' time in both readings: the device's clocks alone.
        let c = cost_2s(&reading(b, CpuTimes::default()), &after, false, 1_000_000);
        assert_eq!(c.method, CostMethod::DeviceClocks);
        assert!(
            (c.cycles_per_packet.unwrap() - 1000.0).abs() < 1e-9,
            "{c:?}"
        );
    }

    #[test]
    fn schedstat_of_a_thread_is_read() {
        assert_eq!(parse_schedstat("123456 789 10\n"), Some(123_456));
        assert_eq!(parse_schedstat(""), None);
        // This thread's time is there and grows while it runs.
        let ns = || {
            parse_schedstat(&std::fs::read_to_string("/proc/thread-self/schedstat").unwrap())
                .unwrap()
        };
        let t0 = ns();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        assert!(ns() > t0);
        // A thread list: none gives no figure, a vanished thread none either.
        assert_eq!(napi_cpu_ns(&[]), None);
        let me = crate::netns::NapiThread {
            ifname: "x".into(),
            pid: std::process::id(),
            name: "not-this-name".into(),
        };
        assert_eq!(napi_cpu_ns(&[me]), None);
        // A process's CPU time (all its threads; the cap of the device's busy clocks) includes
        // this thread's, and a process that does not exist has none.
        let mine = ns();
        let p = crate::placement::process_cpu_ns(std::process::id()).unwrap();
        assert!(p >= mine, "{p} < {mine}");
        assert_eq!(crate::placement::process_cpu_ns(u32::MAX), None);
    }

    #[test]
    fn kernel_devices_use_kernel_time_of_their_cpu() {
        let before = CpuTimes {
            system: 100,
            softirq: 50,
            user: 10,
            ..Default::default()
        };
        // 2 s at USER_HZ 100: 40 ticks of softirq + 10 of system = 0.5 s = 25 %; 20 user ticks.
        let after = CpuTimes {
            system: 110,
            softirq: 90,
            user: 30,
            ..Default::default()
        };
        let none = DeviceCounters::default();
        let c = cost_2s(
            &reading(none.clone(), before),
            &reading(
                DeviceCounters {
                    rx_frames: None,
                    ..none
                },
                after,
            ),
            true,
            500_000,
        );
        assert_eq!(c.method, CostMethod::KernelCpu);
        assert!((c.busy_fraction.unwrap() - 0.25).abs() < 1e-12);
        // No device counter: packets are those the generator received.
        assert!((c.cycles_per_packet.unwrap() - 2000.0).abs() < 1e-9);
        assert!((c.foreign_user_fraction.unwrap() - 0.1).abs() < 1e-12);
        // A process without clocks: all non-idle time.
        let p = cost_2s(
            &reading(DeviceCounters::default(), before),
            &reading(DeviceCounters::default(), after),
            false,
            500_000,
        );
        assert_eq!(p.method, CostMethod::CpuTime);
        assert!((p.busy_fraction.unwrap() - 0.35).abs() < 1e-12);
    }

    #[test]
    fn this_machine_has_the_inputs() {
        assert!(read_cpu(0).is_ok());
        assert!(
            cpu_hz().is_some_and(|h| h > 1e8),
            "no cpu MHz in /proc/cpuinfo"
        );
        assert!(user_hz() > 0.0);
    }
}
