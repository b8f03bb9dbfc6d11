//! Keeping the DUT's CPU free of the host's housekeeping while a testbed runs, as a lab isolates
//! the cores of a device under test (FD.io CSIT and OPNFV VSPERF boot with `isolcpus`,
//! `irqaffinity` and the workqueue mask set; here the testbed moves what the running kernel lets it
//! move, and puts it back).
//!
//! Measured on the lab machines (docs/BENCHMARKS.md §14, "What stalled the worker"): the kernel's
//! DAMON thread `kdamond.0`, which the host configures to page out cold memory, ran on the DUT's
//! CPU in slices of about 1.5 ms (17 ms in 11 slices over 5 s); a poll-mode DUT at ordinary
//! priority (DPDK testpmd, as the lab runs it) is descheduled for that long, and one at a
//! real-time priority is delayed by it whenever it gives the CPU away. A 4,096-slot memif ring
//! holds 1.4 ms at 3 Mfps. The disk's interrupt (`virtio1-req.0`) was delivered to the DUT's CPU
//! too.
//!
//! [`Housekeeping::isolate`] moves, from the DUT's CPU to the generator's:
//! - kernel threads that do system-wide background work and accept a CPU affinity (`kdamond*`,
//!   `kcompactd*`, `khugepaged`, `kswapd*`), where their affinity includes the DUT's CPU;
//! - the unbound workqueues (`/sys/devices/virtual/workqueue/cpumask`);
//! - device interrupts whose affinity includes the DUT's CPU (`/proc/irq/N/smp_affinity_list`;
//!   one the kernel will not move is left, and listed as left).
//!
//! Per-CPU kernel threads (ksoftirqd, the CPU's kworkers, RCU) stay: they are bound to the CPU.
//! Dropping the [`Housekeeping`] restores every value it changed. Nothing is moved when the DUT
//! shares its CPU with the generator (there is nowhere else to put it) or when
//! [`HOUSEKEEPING_ENV`] is `keep`.

use std::path::{Path, PathBuf};

/// `keep` leaves the host's housekeeping where it is (for comparing with and without).
pub const HOUSEKEEPING_ENV: &str = "VECSWITCH_LAB_HOUSEKEEPING";

/// Name prefixes of the movable background kernel threads.
const BACKGROUND_KTHREADS: [&str; 4] = ["kdamond", "kcompactd", "khugepaged", "kswapd"];

/// Testbeds alive in this process share one isolation (tests build several at once): the first
/// moves, the last one dropped puts back.
static SHARED: std::sync::Mutex<(usize, Option<Moved>)> = std::sync::Mutex::new((0, None));

/// Keeps the host's housekeeping off the DUT's CPU while it lives (module doc).
#[derive(Debug)]
pub struct Housekeeping {
    /// Whether this guard holds a share of [`SHARED`].
    shared: bool,
    note: String,
}

/// What was moved, to be put back.
#[derive(Debug, Default)]
struct Moved {
    /// (pid, name, original CPU list).
    threads: Vec<(i32, String, String)>,
    /// (file, original contents): the workqueue mask and IRQ affinities.
    files: Vec<(PathBuf, String)>,
    /// What could not be moved, in words.
    left: Vec<String>,
}

impl Housekeeping {
    /// Moves the host's movable housekeeping off `dut_cpu` onto `to_cpu` (module doc), or joins
    /// the isolation another testbed of this process already made. Never fails: whatever cannot
    /// be moved is listed in [`Housekeeping::note`].
    pub fn isolate(dut_cpu: usize, to_cpu: usize) -> Housekeeping {
        if dut_cpu == to_cpu
            || std::env::var(HOUSEKEEPING_ENV).is_ok_and(|v| v.trim().eq_ignore_ascii_case("keep"))
        {
            return Housekeeping {
                shared: false,
                note: String::new(),
            };
        }
        let mut g = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        if g.1.is_none() {
            let mut m = Moved::default();
            m.move_threads(dut_cpu, to_cpu);
            let wq = Path::new("/sys/devices/virtual/workqueue/cpumask");
            m.write_file(wq, &format!("{:x}", 1u64 << to_cpu), "unbound workqueues");
            m.move_irqs(dut_cpu, to_cpu);
            g.1 = Some(m);
        }
        g.0 += 1;
        let note = g.1.as_ref().map(Moved::note).unwrap_or_default();
        Housekeeping { shared: true, note }
    }

    /// One line for the results: what was moved off the DUT's CPU and what stayed (empty when
    /// nothing was tried).
    pub fn note(&self) -> String {
        self.note.clone()
    }
}

impl Drop for Housekeeping {
    fn drop(&mut self) {
        if !self.shared {
            return;
        }
        let mut g = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        g.0 -= 1;
        if g.0 == 0 {
            g.1 = None; // Moved's drop restores
        }
    }
}

impl Moved {
    fn move_threads(&mut self, dut_cpu: usize, to_cpu: usize) {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return;
        };
        for e in procs.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(comm) = std::fs::read_to_string(e.path().join("comm")) else {
                continue;
            };
            let comm = comm.trim().to_string();
            if !BACKGROUND_KTHREADS.iter().any(|p| comm.starts_with(p)) {
                continue;
            }
            // Kernel threads have no memory map of their own.
            if std::fs::read_to_string(e.path().join("maps")).is_ok_and(|m| !m.is_empty()) {
                continue;
            }
            let Some(cpus) = allowed_cpus(pid) else {
                continue;
            };
            if !crate::placement::parse_cpu_list(&cpus).contains(&dut_cpu) {
                continue;
            }
            if set_affinity(pid, &to_cpu.to_string()) {
                self.threads.push((pid, comm, cpus));
            } else {
                self.left.push(format!("{comm} (pid {pid})"));
            }
        }
    }

    fn move_irqs(&mut self, dut_cpu: usize, to_cpu: usize) {
        let Ok(irqs) = std::fs::read_dir("/proc/irq") else {
            return;
        };
        for e in irqs.flatten() {
            let f = e.path().join("smp_affinity_list");
            let Ok(cur) = std::fs::read_to_string(&f) else {
                continue;
            };
            if !crate::placement::parse_cpu_list(cur.trim()).contains(&dut_cpu) {
                continue;
            }
            let name = format!("irq {}", e.file_name().to_string_lossy());
            self.write_file(&f, &to_cpu.to_string(), &name);
        }
    }

    /// Writes `value` to `path`, remembering the old contents; an error leaves it in `left`.
    fn write_file(&mut self, path: &Path, value: &str, what: &str) {
        let Ok(old) = std::fs::read_to_string(path) else {
            return;
        };
        if old.trim() == value {
            return;
        }
        match std::fs::write(path, value) {
            Ok(()) => self
                .files
                .push((path.to_path_buf(), old.trim().to_string())),
            Err(_) => self.left.push(what.to_string()),
        }
    }

    fn note(&self) -> String {
        let moved: Vec<String> = self
            .threads
            .iter()
            .map(|(_, n, _)| n.clone())
            .chain(self.files.iter().map(|(p, _)| describe_file(p)))
            .collect();
        let mut s = if moved.is_empty() {
            "nothing moved".to_string()
        } else {
            format!("moved off the DUT CPU: {}", moved.join(", "))
        };
        if !self.left.is_empty() {
            s.push_str(&format!(
                "; left (the kernel refused): {}",
                self.left.join(", ")
            ));
        }
        s
    }
}

fn describe_file(p: &Path) -> String {
    if p.ends_with("cpumask") {
        "unbound workqueues".into()
    } else {
        // /proc/irq/N/smp_affinity_list
        let irq = p
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("irq {irq}")
    }
}

impl Drop for Moved {
    fn drop(&mut self) {
        for (pid, _, cpus) in &self.threads {
            let _ = set_affinity(*pid, cpus);
        }
        for (path, old) in self.files.iter().rev() {
            let _ = std::fs::write(path, old);
        }
    }
}

/// `Cpus_allowed_list` of `pid`.
fn allowed_cpus(pid: i32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// Sets the CPU affinity of `pid` to the CPU list `cpus`.
fn set_affinity(pid: i32, cpus: &str) -> bool {
    let mut set = nix::sched::CpuSet::new();
    for c in crate::placement::parse_cpu_list(cpus) {
        if set.set(c).is_err() {
            return false;
        }
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(pid), &set).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run as root (CI is): the background threads this host has are moved off CPU 1 and put
    /// back exactly; with one CPU to spare nothing is touched.
    #[test]
    fn moves_background_threads_and_restores_them() {
        let before: Vec<(i32, String)> = background_threads();
        {
            let h = Housekeeping::isolate(1, 1);
            assert!(h.note().is_empty(), "{}", h.note());
        }
        {
            let h = Housekeeping::isolate(1, 0);
            let g = SHARED.lock().unwrap();
            for (pid, name, _) in &g.1.as_ref().unwrap().threads {
                assert_eq!(
                    allowed_cpus(*pid).as_deref(),
                    Some("0"),
                    "{name} moved to CPU 0"
                );
            }
            drop(g);
            assert!(
                h.note().starts_with("moved") || h.note().starts_with("nothing"),
                "{}",
                h.note()
            );
        }
        // Held while comparing, so no other testbed of this test process isolates meanwhile.
        let g = SHARED.lock().unwrap();
        if g.0 == 0 {
            // No other testbed held the isolation: it was put back.
            assert_eq!(background_threads(), before, "affinities restored");
        }
    }

    fn background_threads() -> Vec<(i32, String)> {
        let mut v: Vec<(i32, String)> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let pid = e.file_name().to_str()?.parse::<i32>().ok()?;
                let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
                BACKGROUND_KTHREADS
                    .iter()
                    .any(|p| comm.starts_with(p))
                    .then(|| (pid, allowed_cpus(pid).unwrap_or_default()))
            })
            .collect();
        v.sort();
        v
    }
}
