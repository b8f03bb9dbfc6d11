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
