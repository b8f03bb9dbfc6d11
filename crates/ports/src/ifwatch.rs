//! Watching the kernel interface under an AF_PACKET or AF_XDP port (issue 14 item 3): an
//! interface deleted under a running switch (`ip link del`) takes the socket's binding with it,
//! and one created again under the same name is a *new* device with a new ifindex that the old
//! socket never sees. Without a watch the port would say `link up` (its name resolves, the new
//! device is up) while its socket is bound to nothing: a silent black hole.
//!
//! - [`IfWatch`] holds what the port knows: whether its interface is gone (and since when, and
//!   why), how many times the port re-opened itself on a re-created interface, and when to look
//!   next. The ports look at most every [`IfWatch::CHECK_EVERY`] from their `poll_control`, so an
//!   idle worker does not pay for an ioctl on every poll.
//! - [`NetnsHandle`] is the network namespace the port's socket was opened in, so that a port
//!   opened inside a namespace (`open_in_netns`) re-opens there too, whatever thread runs its
//!   `poll_control`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

/// The network namespace a port's socket lives in (`/proc/thread-self/ns/net` when it was opened).
#[derive(Debug)]
pub(crate) struct NetnsHandle(Option<File>);

/// The calling thread's network namespace.
const THREAD_NETNS: &str = "/proc/thread-self/ns/net";

impl NetnsHandle {
    /// The calling thread's namespace. Without `/proc` the handle is empty and [`NetnsHandle::run`]
    /// runs in whatever namespace its caller is in.
    pub(crate) fn current() -> NetnsHandle {
        NetnsHandle(File::open(THREAD_NETNS).ok())
    }

    /// Runs `f` in this namespace: on the calling thread when it is already there (the usual case:
    /// the switch's worker runs in the namespace the port was opened in), else on a short-lived
    /// thread that enters the namespace first (needs CAP_SYS_ADMIN, as opening it there did).
    pub(crate) fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> io::Result<T> {
        let Some(ns) = &self.0 else { return Ok(f()) };
        let ours = ns.metadata()?;
        let here = std::fs::metadata(THREAD_NETNS)?;
        if (ours.dev(), ours.ino()) == (here.dev(), here.ino()) {
            return Ok(f());
        }
        std::thread::scope(|s| {
            s.spawn(move || {
                // SAFETY: `ns` is an open namespace descriptor; setns only changes this
                // short-lived thread's network namespace.
                let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
                if rc != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(f())
            })
            .join()
            .map_err(|_| io::Error::other("the thread re-opening the port panicked"))?
        })
    }
}

/// Whether the port's interface is there, as the port last looked (see the module doc).
#[derive(Debug, Clone)]
pub(crate) struct IfWatch {
    next_check: Instant,
    /// Why the port is down because of its interface, and since when.
    down: Option<(String, Instant)>,
    /// Times the port re-opened itself on a re-created interface.
    pub(crate) reopened: u64,
}

impl Default for IfWatch {
    fn default() -> Self {
        IfWatch {
            next_check: Instant::now() + IfWatch::CHECK_EVERY,
            down: None,
            reopened: 0,
        }
    }
}

impl IfWatch {
    /// Least time between two looks at the interface.
    pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(100);

    /// Whether it is time to look again (and if so, the next look is `CHECK_EVERY` away).
    pub(crate) fn due(&mut self) -> bool {
        let now = Instant::now();
        if now < self.next_check {
            return false;
        }
        self.next_check = now + Self::CHECK_EVERY;
        true
    }

    /// The port is down because of its interface: `reason` (kept from the first time unless it
    /// changed, so that `since` says when the interface went).
    pub(crate) fn set_down(&mut self, reason: String) {
        match &mut self.down {
            Some((r, _)) if *r == reason => {}
            Some((r, _)) => *r = reason,
            None => self.down = Some((reason, Instant::now())),
        }
    }

    /// The interface is there and the socket bound to it.
    pub(crate) fn set_up(&mut self) {
        self.down = None;
    }

    pub(crate) fn is_down(&self) -> bool {
        self.down.is_some()
    }

    /// `"; down: REASON (for N.N s)"`, or nothing while the interface is there, plus
    /// `"; re-opened N times"` once the port re-opened itself: for the port's `describe`.
    pub(crate) fn describe(&self) -> String {
        let mut s = String::new();
        if let Some((reason, since)) = &self.down {
            s += &format!(
                "; down: {reason} (for {:.1} s)",
                since.elapsed().as_secs_f64()
            );
        }
        if self.reopened > 0 {
            s += &format!(
                "; re-opened {} time{} on a re-created interface",
                self.reopened,
                if self.reopened == 1 { "" } else { "s" }
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn down_keeps_its_first_time_and_up_clears_it() {
        let mut w = IfWatch::default();
        assert!(!w.is_down());
        assert_eq!(w.describe(), "");
        w.set_down("interface x removed (was ifindex 7)".into());
        let since = w.down.as_ref().unwrap().1;
        w.set_down("interface x removed (was ifindex 7)".into());
        assert_eq!(w.down.as_ref().unwrap().1, since);
        assert!(w
            .describe()
            .starts_with("; down: interface x removed (was ifindex 7) (for "));
        w.set_up();
        w.reopened = 2;
        assert_eq!(
            w.describe(),
            "; re-opened 2 times on a re-created interface"
        );
    }

    #[test]
    fn due_at_most_once_per_interval() {
        let mut w = IfWatch {
            next_check: Instant::now(),
            ..IfWatch::default()
        };
        assert!(w.due());
        assert!(!w.due(), "a second look within CHECK_EVERY");
    }

    #[test]
    fn run_in_own_namespace_stays_on_this_thread() {
        let ns = NetnsHandle::current();
        let me = std::thread::current().id();
        assert_eq!(ns.run(|| std::thread::current().id()).unwrap(), me);
    }
}
