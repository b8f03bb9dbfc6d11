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

/// Steers the kernel's receive work on the DUT's veth ends (RPS) to
/// [`crate::placement::CorePlan::dut_kernel_rx`]: off the DUT's CPU when the DUT has a user-space
/// worker busy-polling there. Best effort, like the RPS set when the topology is built: a kernel
/// without RPS still forwards (a warning is logged).
pub fn steer_dut_kernel_rx(wiring: &crate::topology::Wiring, dut_busy_polls: bool) {
    let cpu = wiring.cores.dut_kernel_rx(dut_busy_polls);
    for end in &wiring.dut_ports {
        if let crate::topology::PortEnd::Veth { netns, ifname, .. } = end {
            let mask = crate::placement::CorePlan::mask(cpu);
            if let Err(e) = set_rps_in(netns, ifname, mask) {
                tracing::warn!("RPS not set on {ifname}: {e}");
            }
        }
    }
}

/// Where the kernel's receive work on every veth end of `wiring` is steered now (RPS), one line
/// per interface for [`crate::placement::Placement::kernel_rx`].
pub fn kernel_rx_placement(wiring: &crate::topology::Wiring) -> Vec<String> {
    let sides = [("generator", &wiring.gen_ports), ("dut", &wiring.dut_ports)];
    let mut out = Vec::new();
    for (side, ends) in sides {
        for end in ends.iter() {
            if let crate::topology::PortEnd::Veth { netns, ifname, .. } = end {
                let mask = rps_cpus_in(netns, ifname).unwrap_or_else(|| "unknown".into());
                out.push(format!("{ifname} ({side} side): rps_cpus {mask}"));
            }
        }
    }
    out
}
