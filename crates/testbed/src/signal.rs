//! Ctrl-C / SIGTERM handling and the registry of live resources.
//!
//! Normal teardown is by `Drop` guards ([`crate::Netns`], [`crate::ChildGuard`], [`crate::RunDir`]).
//! A signal would kill the process before any `Drop` runs, so [`install_stop_handler`] turns the
//! first SIGINT/SIGTERM into a *stop flag* that long loops poll ([`stop_requested`]; [`crate::wait_for`]
//! returns [`crate::Error::Stopped`]) so the stack unwinds and the guards run. A second signal means
//! "now": a watcher thread kills every registered child process group, deletes every registered
//! namespace and exits with status 130. Whatever survives even that (SIGKILL, power loss) is removed
//! by [`crate::cleanup_stale`] on the next run.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    netns: BTreeSet::new(),
    process_groups: BTreeSet::new(),
});

struct Registry {
    netns: BTreeSet<String>,
    process_groups: BTreeSet<i32>,
}

fn flag() -> &'static Arc<AtomicBool> {
    STOP.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Whether a stop was requested (a signal arrived, or [`request_stop`] was called).
pub fn stop_requested() -> bool {
    flag().load(Ordering::Relaxed)
}

/// Requests a stop from code (what the first Ctrl-C does).
pub fn request_stop() {
    flag().store(true, Ordering::Relaxed);
}

/// Clears the stop flag (tests that exercise the stop path; a CLI run never needs it).
pub fn clear_stop() {
    flag().store(false, Ordering::Relaxed);
}

/// Installs the SIGINT/SIGTERM handling described in the module doc. Idempotent. Call it once at
/// the start of a bench run (the CLI does); tests do not need it.
pub fn install_stop_handler() -> std::io::Result<()> {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])?;
    let _ = INSTALLED.set(());
    std::thread::Builder::new()
        .name("testbed-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if !stop_requested() {
                    eprintln!("testbed: signal {sig}: stopping after the current step (again to abort now)");
                    request_stop();
                } else {
                    eprintln!("testbed: signal {sig} again: tearing down now");
                    teardown_registered();
                    std::process::exit(130);
                }
            }
        })?;
    Ok(())
}

pub(crate) fn register_netns(name: &str) {
    if let Ok(mut r) = REGISTRY.lock() {
        r.netns.insert(name.to_string());
    }
}

pub(crate) fn unregister_netns(name: &str) {
    if let Ok(mut r) = REGISTRY.lock() {
        r.netns.remove(name);
    }
}

pub(crate) fn register_process_group(pgid: i32) {
    if let Ok(mut r) = REGISTRY.lock() {
        r.process_groups.insert(pgid);
    }
}

pub(crate) fn unregister_process_group(pgid: i32) {
    if let Ok(mut r) = REGISTRY.lock() {
        r.process_groups.remove(&pgid);
    }
}

/// How long a thread of this process may loop in `shrink_dcache_parent` before
/// [`break_kernel_livelocks`] pauses the run's processes.
const LIVELOCK_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Starts (once per process) a thread that breaks a kernel livelock seen on the lab machines
/// (docs/TESTBED.md, "Stopping VNFs"): a thread reaping a child loops in the kernel
/// (`release_task → d_invalidate → shrink_dcache_parent`) for as long as a busy-polling child
/// (testpmd) keeps the CPU whose per-CPU kernel worker it waits for, and that worker, runnable,
/// gets no time from the scheduler. Nothing in user space can stop such a thread. When one of
/// this process's threads has been in `shrink_dcache_parent` for [`LIVELOCK_AFTER`], the
/// breaker stops every registered child process group for 50 ms (SIGSTOP, SIGCONT), which lets
/// the worker run, and says so on stderr. It reads `/proc/self/task/*/stack` (root, as the
/// testbed needs anyway) twice a second.
pub fn break_kernel_livelocks() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("livelock-breaker".into())
            .spawn(livelock_breaker);
    });
}

fn livelock_breaker() {
    let tick = std::time::Duration::from_millis(500);
    let mut looping: std::collections::BTreeMap<String, std::time::Instant> = Default::default();
    loop {
        std::thread::sleep(tick);
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            continue;
        };
        let now = std::time::Instant::now();
        let stuck: BTreeSet<String> = tasks
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("stack"))
                    .is_ok_and(|s| s.contains("shrink_dcache_parent"))
            })
            .map(|t| t.file_name().to_string_lossy().into_owned())
            .collect();
        looping.retain(|tid, _| stuck.contains(tid));
        for tid in &stuck {
            looping.entry(tid.clone()).or_insert(now);
        }
        let Some((tid, since)) = looping.iter().find(|(_, t)| now - **t >= LIVELOCK_AFTER) else {
            continue;
        };
        let groups: Vec<i32> = match REGISTRY.lock() {
            Ok(r) => r.process_groups.iter().copied().collect(),
            Err(_) => continue,
        };
        eprintln!(
            "testbed: thread {tid} has looped in the kernel (shrink_dcache_parent) for {:?}; \
             pausing the run's {} process groups for 50 ms so the kernel work it waits for can \
             run (docs/TESTBED.md, \"Stopping VNFs\")",
            now - *since,
            groups.len()
        );
        for &pg in &groups {
            let _ = killpg(Pid::from_raw(pg), Signal::SIGSTOP);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        for &pg in &groups {
            let _ = killpg(Pid::from_raw(pg), Signal::SIGCONT);
        }
        looping.clear();
    }
}

/// Kills every registered child process group and deletes every registered namespace, without
/// waiting for the owners' `Drop`. Used by the abort path; safe to call more than once.
pub fn teardown_registered() {
    let (groups, netns) = match REGISTRY.lock() {
        Ok(mut r) => (
            std::mem::take(&mut r.process_groups),
            std::mem::take(&mut r.netns),
        ),
        Err(_) => return,
    };
    for pg in groups {
        let _ = killpg(Pid::from_raw(pg), Signal::SIGKILL);
    }
    for ns in netns {
        crate::netns::delete_netns_and_pids(&ns);
    }
}
