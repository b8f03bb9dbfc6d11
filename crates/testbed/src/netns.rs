//! Network namespaces and veth pairs, with guaranteed cleanup.
//!
//! A [`Netns`] guard creates a namespace with `ip netns add` and, on `Drop`, kills whatever still
//! runs inside it and deletes it. Veth pairs are created directly inside namespaces
//! ([`veth_pair`]: `ip link add NAME netns A type veth peer name PEER netns B`), never in the root
//! namespace, so deleting the namespaces removes them too and interface names need only be unique
//! per namespace. [`Netns::run_in`] runs a closure on a thread that entered the namespace with
//! `setns(2)`: a socket opened there (an AF_PACKET port) stays bound to that namespace after the
//! thread is gone, so the generator can use it from any thread. [`cleanup_stale`] removes what runs
//! of dead processes left behind.

use std::fmt::Write as _;
use std::fs::File;
use std::path::PathBuf;

use nix::sched::{setns, CloneFlags};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::cmd::{run, run_quiet};
use crate::error::{Error, Result};
use crate::rundir::{base_dir, owner_pid, pid_alive};
use crate::signal;

/// A network namespace owned by this run; deleted (with everything in it) on `Drop`.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates namespace `name`, brings `lo` up and disables IPv6 on every interface that will be
    /// created in it (no router solicitations, DAD or MLD frames on the test links).
    pub fn create(name: &str) -> Result<Netns> {
        if name.is_empty() || name.len() > 200 || name.contains('/') {
            return Err(Error::Invalid {
                field: "netns name",
                value: name.to_string(),
                expected: "a non-empty name without '/'".into(),
            });
        }
        run("ip", &["netns", "add", name])?;
        signal::register_netns(name);
        let ns = Netns {
            name: name.to_string(),
        };
        ns.ip(&["link", "set", "lo", "up"])?;
        for key in [
            "net.ipv6.conf.default.disable_ipv6=1",
            "net.ipv6.conf.all.disable_ipv6=1",
        ] {
            ns.exec("sysctl", &["-q", "-w", key])?;
        }
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace's bind-mount, as `setns(2)` and `ip netns exec` use it.
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.name)
    }

    /// `ip -n <ns> args...`
    pub fn ip(&self, args: &[&str]) -> Result<String> {
        let mut a = vec!["-n", self.name.as_str()];
        a.extend_from_slice(args);
        run("ip", &a)
    }

    /// `ip netns exec <ns> program args...`
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<String> {
        let mut a = vec!["netns", "exec", self.name.as_str(), program];
        a.extend_from_slice(args);
        run("ip", &a)
    }

    /// Brings interface `ifname` up.
    pub fn link_up(&self, ifname: &str) -> Result<()> {
        self.ip(&["link", "set", ifname, "up"]).map(|_| ())
    }

    /// The MAC address of `ifname`.
    pub fn mac(&self, ifname: &str) -> Result<String> {
        let out = self.ip(&["-j", "link", "show", "dev", ifname])?;
        let v: serde_json::Value = serde_json::from_str(&out).map_err(|e| Error::Command {
            command: format!("ip -n {} -j link show dev {ifname}", self.name),
            status: "unparsable output".into(),
            stderr: e.to_string(),
        })?;
        v.get(0)
            .and_then(|l| l.get("address"))
            .and_then(|a| a.as_str())
            .map(str::to_string)
            .ok_or_else(|| Error::Command {
                command: format!("ip -n {} -j link show dev {ifname}", self.name),
                status: "no address field".into(),
                stderr: out.clone(),
            })
    }

    /// Whether `ifname` is operationally up (carrier on both ends of a veth).
    pub fn oper_up(&self, ifname: &str) -> bool {
        self.ip(&["-j", "link", "show", "dev", ifname])
            .ok()
            .and_then(|out| serde_json::from_str::<serde_json::Value>(&out).ok())
            .and_then(|v| {
                v.get(0)
                    .and_then(|l| l.get("operstate"))
                    .and_then(|s| s.as_str())
                    .map(|s| s == "UP")
            })
            .unwrap_or(false)
    }

    /// Steers receive processing of `ifname` to the CPUs in `cpu_mask` (RPS). On veth the kernel
    /// otherwise does the receiver's work on the *sender's* CPU, which makes the sender the
    /// bottleneck (DESIGN.md, facts measured). Writes `/sys/class/net/IF/queues/rx-0/rps_cpus`
    /// from inside the namespace (`ip netns exec` mounts that namespace's sysfs).
    pub fn set_rps(&self, ifname: &str, cpu_mask: u64) -> Result<()> {
        let script = format!("echo {cpu_mask:x} > /sys/class/net/{ifname}/queues/rx-0/rps_cpus");
        self.exec("sh", &["-c", &script]).map(|_| ())
    }

    /// Reads back the CPUs that receive processing of `ifname` is steered to (RPS), as the kernel
    /// prints the mask (`"2"`); `None` if unreadable.
    pub fn rps_cpus(&self, ifname: &str) -> Option<String> {
        rps_cpus_in(&self.name, ifname)
    }

    /// Sets a sysctl inside the namespace (`key=value`).
    pub fn sysctl(&self, key_value: &str) -> Result<()> {
        self.exec("sysctl", &["-q", "-w", key_value]).map(|_| ())
    }

    /// Runs `f` on a new thread that entered this namespace, and returns its result. Sockets `f`
    /// opens belong to the namespace for their whole life, whichever thread uses them later.
    pub fn run_in<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let path = self.path();
        let file = File::open(&path).map_err(|source| Error::Io {
            what: "opening namespace",
            path: path.clone(),
            source,
        })?;
        let name = self.name.clone();
        let handle = std::thread::Builder::new()
            .name(format!("netns-{name}"))
            .spawn(move || -> Result<T> {
                setns(&file, CloneFlags::CLONE_NEWNET).map_err(|source| Error::Sys {
                    what: format!("setns into network namespace {name}"),
                    source,
                })?;
                Ok(f())
            })
            .map_err(|source| Error::Io {
                what: "spawning a thread for namespace",
                path: path.clone(),
                source,
            })?;
        handle.join().unwrap_or_else(|_| {
            Err(Error::Invalid {
                field: "closure run in namespace",
                value: self.name.clone(),
                expected: "a closure that does not panic".into(),
            })
        })
    }

    /// Pids of processes running inside the namespace.
    pub fn pids(&self) -> Vec<i32> {
        netns_pids(&self.name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        delete_netns_and_pids(&self.name);
        signal::unregister_netns(&self.name);
    }
}

fn netns_pids(name: &str) -> Vec<i32> {
    run("ip", &["netns", "pids", name])
        .map(|out| {
            out.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Kills every process inside namespace `name` (SIGKILL) and deletes it. Errors are ignored: this
/// runs on teardown paths where the namespace may already be gone.
pub(crate) fn delete_netns_and_pids(name: &str) {
    for pid in netns_pids(name) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    // A killed process leaves the namespace once the kernel reaps it; give it a moment so the
    // delete does not race with its exit (the mount is removed either way).
    for _ in 0..50 {
        if netns_pids(name).is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    run_quiet("ip", &["netns", "del", name]);
}

/// Creates a veth pair with `a_name` inside `a` and `b_name` inside `b` (both down). The pair lives
/// as long as either namespace: deleting a namespace destroys its end and with it the peer.
pub fn veth_pair(a: &Netns, a_name: &str, b: &Netns, b_name: &str) -> Result<()> {
    for n in [a_name, b_name] {
        if n.is_empty() || n.len() > 15 || n.contains(['/', ' ']) {
            return Err(Error::Invalid {
                field: "interface name",
                value: n.to_string(),
                expected: "1 to 15 characters without '/' or spaces (IFNAMSIZ)".into(),
            });
        }
    }
    run(
        "ip",
        &[
            "link",
            "add",
            "name",
            a_name,
            "netns",
            a.name(),
            "type",
            "veth",
            "peer",
            "name",
            b_name,
            "netns",
            b.name(),
        ],
    )
    .map(|_| ())
}

/// What [`cleanup_stale`] removed.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CleanupReport {
    pub namespaces: Vec<String>,
    pub run_dirs: Vec<PathBuf>,
    pub dpdk_runtime_dirs: Vec<PathBuf>,
}

impl CleanupReport {
    pub fn is_empty(&self) -> bool {
        self.namespaces.is_empty() && self.run_dirs.is_empty() && self.dpdk_runtime_dirs.is_empty()
    }
}

/// Removes leftovers of earlier runs that died without cleaning up: namespaces (with the processes
/// still inside them — every DUT and VNF process runs inside its run's namespace), run directories
/// and DPDK runtime directories (`/var/run/dpdk/<file-prefix>`) whose names start with `prefix`
/// followed by the pid of a process that no longer exists. Resources of live runs, including other
/// tests of this process running in parallel, are left alone.
pub fn cleanup_stale(prefix: &str) -> CleanupReport {
    let mut report = CleanupReport::default();
    let dead = |name: &str| owner_pid(prefix, name).is_some_and(|pid| !pid_alive(pid));
    if let Ok(out) = run("ip", &["netns", "list"]) {
        for line in out.lines() {
            let Some(name) = line.split_whitespace().next() else {
                continue;
            };
            if dead(name) {
                delete_netns_and_pids(name);
                report.namespaces.push(name.to_string());
            }
        }
    }
    for (dir, out) in [
        (base_dir(), &mut report.run_dirs),
        (
            PathBuf::from("/var/run/dpdk"),
            &mut report.dpdk_runtime_dirs,
        ),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if dead(&name) && std::fs::remove_dir_all(e.path()).is_ok() {
                out.push(e.path());
            }
        }
    }
    report
}

/// Steers receive processing (RPS) of `ifname` in namespace `netns` (by name, not owned) to the CPUs
/// in `cpu_mask`; see [`Netns::set_rps`].
pub fn set_rps_in(netns: &str, ifname: &str, cpu_mask: u64) -> Result<()> {
    let script = format!("echo {cpu_mask:x} > /sys/class/net/{ifname}/queues/rx-0/rps_cpus");
    run("ip", &["netns", "exec", netns, "sh", "-c", &script]).map(|_| ())
}

/// The RPS mask of `ifname` in namespace `netns` as the kernel prints it (`"2"`, `"0"` = off);
/// `None` if unreadable.
pub fn rps_cpus_in(netns: &str, ifname: &str) -> Option<String> {
    let path = format!("/sys/class/net/{ifname}/queues/rx-0/rps_cpus");
    run("ip", &["netns", "exec", netns, "cat", &path])
        .ok()
        .map(|s| s.trim().trim_start_matches(['0', ',']).to_string())
        .map(|s| if s.is_empty() { "0".to_string() } else { s })
}

/// A NAPI kernel thread of a DUT veth end, placed by [`steer_dut_kernel_rx`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NapiThread {
    /// The DUT veth end whose receive queue it polls.
    pub ifname: String,
    pub pid: u32,
    /// `napi/<ifname>-<napi id>`.
    pub name: String,
}

/// The kernel's NAPI threads (`napi/<dev>-<id>`, Documentation/networking/napi.rst "Threaded
/// NAPI") that exist now: pid and name, from `/proc/<pid>/comm`.
pub fn napi_threads() -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            let comm = comm.trim_end();
            comm.starts_with("napi/").then(|| (pid, comm.to_string()))
        })
        .collect()
}

/// Places the kernel's receive work on the DUT's veth ends as
/// [`crate::placement::CorePlan::dut_kernel_rx`] says: on the DUT CPU. For a kernel DUT by RPS;
/// for a DUT whose user-space worker busy-polls that CPU by threaded NAPI, each NAPI kthread
/// pinned to the DUT CPU at SCHED_FIFO above the worker (RPS of those ends on the DUT CPU too).
/// An end with an XDP program (AF_XDP ports) has a NAPI, run by the sender's `veth_xmit` on the
/// sender's CPU unless threaded; an end without one (AF_PACKET ports) has none, and its backlog
/// work goes by RPS to the placement's `backlog_cpu` (the generator's: on the DUT CPU it starved
/// behind the worker, BENCHMARKS.md §5 cause 1). `napi_before` are the NAPI threads that existed before the DUT was set up:
/// the new ones named after a DUT end are that end's (the kernel names them `napi/<dev>-<id>`;
/// the names are unique per namespace only, so the diff, not the name alone, picks them).
///
/// Best effort, like the RPS set when the topology is built: a kernel without threaded NAPI still
/// forwards (a warning is logged), and the placement record ([`kernel_rx_placement`]) reads back
/// what the kernel really did.
pub fn steer_dut_kernel_rx(
    wiring: &crate::topology::Wiring,
    dut_busy_polls: bool,
    napi_before: &[(u32, String)],
) -> Vec<NapiThread> {
    use crate::placement::{CorePlan, KernelRx};
    let ends: Vec<(&str, &str)> = wiring
        .dut_ports
        .iter()
        .filter_map(|end| match end {
            crate::topology::PortEnd::Veth { netns, ifname, .. } => {
                Some((netns.as_str(), ifname.as_str()))
            }
            _ => None,
        })
        .collect();
    let (cpu, priority, backlog_cpu) = match wiring.cores.dut_kernel_rx(dut_busy_polls) {
        KernelRx::Rps { cpu } => {
            for (netns, ifname) in ends {
                if let Err(e) = set_rps_in(netns, ifname, CorePlan::mask(cpu)) {
                    tracing::warn!("RPS not set on {ifname}: {e}");
                }
            }
            return Vec::new();
        }
        KernelRx::ThreadedNapi {
            cpu,
            priority,
            backlog_cpu,
        } => (cpu, priority, backlog_cpu),
    };
    for &(netns, ifname) in &ends {
        if let Err(e) = set_rps_in(netns, ifname, CorePlan::mask(cpu)) {
            tracing::warn!("RPS not set on {ifname}: {e}");
        }
        let script = format!("echo 1 > /sys/class/net/{ifname}/threaded");
        if let Err(e) = run("ip", &["netns", "exec", netns, "sh", "-c", &script]) {
            // The kernel refuses it on an end without a NAPI (no XDP program): handled below.
            tracing::info!("threaded NAPI not set on {ifname}: {e}");
        }
    }
    // The threads appear when `threaded` is written (or, for a NAPI the DUT adds later, with it).
    let mut found = Vec::new();
    let _ = crate::wait_for(
        "NAPI threads of the DUT's veth ends",
        std::time::Duration::from_secs(2),
        || {
            found = napi_threads()
                .into_iter()
                .filter(|t| !napi_before.contains(t))
                .filter_map(|(pid, name)| {
                    let (_, ifname) = ends
                        .iter()
                        .find(|(_, i)| name.starts_with(&format!("napi/{i}-")))?;
                    Some(NapiThread {
                        ifname: ifname.to_string(),
                        pid,
                        name,
                    })
                })
                .collect();
            ends.iter()
                .all(|(_, i)| found.iter().any(|t| t.ifname == *i))
        },
    );
    for t in &found {
        let pid = t.pid.to_string();
        let r = run("taskset", &["-p", "-c", &cpu.to_string(), &pid])
            .and_then(|_| run("chrt", &["-f", "-p", &priority.to_string(), &pid]));
        if let Err(e) = r {
            tracing::warn!("NAPI thread {} of {} not placed: {e}", t.name, t.ifname);
        }
    }
    for (netns, ifname) in ends {
        if !found.iter().any(|t| t.ifname == ifname) {
            // No NAPI (no XDP program): backlog work, kept off the busy-polled CPU.
            if let Err(e) = set_rps_in(netns, ifname, CorePlan::mask(backlog_cpu)) {
                tracing::warn!("RPS not set on {ifname}: {e}");
            }
        }
    }
    found
}

/// Gives each generator veth end of `wiring` a NAPI by turning GRO on (veth receives through a
/// NAPI only with an XDP program or GRO; a frame another end redirects into the pair by XDP needs
/// one: drivers/net/veth.c, `veth_xdp_xmit`, which refuses it otherwise). The NAPI is not
/// threaded: it runs where the sender schedules it — the DUT's redirect, inside the DUT end's
/// NAPI thread on the DUT's CPU — so the DUT pays for turning a redirected frame into the
/// generator end's skb (its device cost includes it: the thread's CPU time), and RPS then hands
/// the skb to the generator's CPU as for every device. (Threaded and pinned to the generator's
/// CPU, the same work made the generator the ceiling: docs/BENCHMARKS.md §5, "The cross-connect
/// in the kernel".) Returns one line per end for the placement note; GRO that cannot be turned on
/// is an error (every redirected frame would be lost).
pub fn give_gen_ends_napi(wiring: &crate::topology::Wiring) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for end in &wiring.gen_ports {
        if let crate::topology::PortEnd::Veth { netns, ifname, .. } = end {
            run(
                "ip",
                &["netns", "exec", netns, "ethtool", "-K", ifname, "gro", "on"],
            )?;
            lines.push(format!(
                "{ifname} (generator side): gro on, NAPI not threaded (runs where the DUT's redirect schedules it)"
            ));
        }
    }
    Ok(lines)
}

/// Where the kernel's receive work on every veth end of `wiring` is placed now, one line per
/// interface for [`crate::placement::Placement::kernel_rx`]: its RPS mask and, for the ends with
/// NAPI threads (`napi`, from [`steer_dut_kernel_rx`]), each thread's CPUs and scheduling as the
/// kernel reports them, e.g. `dut0 (dut side): rps_cpus 2; napi/dut0-8193 cpus 1 SCHED_FIFO 20`.
pub fn kernel_rx_placement(wiring: &crate::topology::Wiring, napi: &[NapiThread]) -> Vec<String> {
    let sides = [("generator", &wiring.gen_ports), ("dut", &wiring.dut_ports)];
    let mut out = Vec::new();
    for (side, ends) in sides {
        for end in ends.iter() {
            if let crate::topology::PortEnd::Veth { netns, ifname, .. } = end {
                let mask = rps_cpus_in(netns, ifname).unwrap_or_else(|| "unknown".into());
                let mut line = format!("{ifname} ({side} side): rps_cpus {mask}");
                for t in napi.iter().filter(|t| side == "dut" && &t.ifname == ifname) {
                    let _ = write!(line, "; {}", napi_thread_state(t));
                }
                out.push(line);
            }
        }
    }
    out
}

/// `napi/dut0-8193 cpus 1 SCHED_FIFO 20`, read from `/proc` now (`gone` if the thread is).
fn napi_thread_state(t: &NapiThread) -> String {
    let dir = format!("/proc/{}", t.pid);
    let comm = std::fs::read_to_string(format!("{dir}/comm")).unwrap_or_default();
    if comm.trim_end() != t.name {
        return format!("{} gone", t.name);
    }
    let cpus = std::fs::read_to_string(format!("{dir}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|c| c.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let sched = std::fs::read_to_string(format!("{dir}/stat"))
        .ok()
        .and_then(|s| crate::placement::parse_stat_sched(&s))
        .unwrap_or_else(|| "unknown".into());
    format!("{} cpus {cpus} {sched}", t.name)
}
