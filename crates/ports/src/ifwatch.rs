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

/// A port that re-opens itself on its interface deleted and created again ([`reopen`]): the
/// AF_PACKET and AF_XDP ports.
pub(crate) trait Reopen: Sized + Send {
    /// What a new port is opened from (the port's own config).
    type Config: Send;
    type Error: std::fmt::Display + Send;
    /// The config to open the new port with.
    fn config_for_reopen(&self) -> Self::Config;
    /// Opens a port in the calling thread's namespace.
    fn open_for_reopen(config: Self::Config) -> Result<Self, Self::Error>;
    /// The port's watch, the namespace its socket lives in, and its interface's name.
    fn watched(&mut self) -> (&mut IfWatch, &mut NetnsHandle, &str);
    /// Settles this port before its socket closes (frames still in its transmit ring are handed
    /// over once more or counted as dropped) and carries its counters over to `new`.
    fn hand_over(&mut self, new: &mut Self);
}

/// Opens a new port on the interface that now has `port`'s name (ifindex `now`), in the namespace
/// `port`'s socket lives in, and puts it in `port`'s place: counters carry over
/// ([`Reopen::hand_over`]), the watch says up and counts one re-open more. On failure `port` stays
/// down with the reason. The old socket and rings close when the replaced value drops here.
pub(crate) fn reopen<P: Reopen>(port: &mut P, now: i32) {
    let config = port.config_for_reopen();
    let (watch, netns, interface) = port.watched();
    let interface = interface.to_string();
    let Some(mut new) = watch.reopen(netns, &interface, now, move || P::open_for_reopen(config))
    else {
        return;
    };
    port.hand_over(&mut new);
    let (watch, netns, _) = port.watched();
    let reopened = watch.reopened();
    let (new_watch, new_netns, _) = new.watched();
    *new_watch = reopened;
    std::mem::swap(new_netns, netns);
    std::mem::swap(port, &mut new);
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

    /// Takes in one look at the interface: its name now stands for ifindex `now` (`None`: for
    /// nothing), and the socket is (`bound`) or is not still bound to `ifindex`. Returns the
    /// ifindex to re-open on when the name stands for another device than the socket's (or the
    /// socket lost its binding); otherwise marks the port up, or down with the reason.
    pub(crate) fn look(
        &mut self,
        interface: &str,
        ifindex: i32,
        now: Option<i32>,
        bound: bool,
    ) -> Option<i32> {
        match now {
            Some(now) if now == ifindex && bound => self.set_up(),
            None => self.set_down(format!(
                "interface {interface} removed (the socket was bound to ifindex {ifindex})"
            )),
            Some(now) => return Some(now),
        }
        None
    }

    /// The interface is there and the socket bound to it.
    pub(crate) fn set_up(&mut self) {
        self.down = None;
    }

    pub(crate) fn is_down(&self) -> bool {
        self.down.is_some()
    }

    /// Runs `open` (a new port on `interface`, back as ifindex `now`) in `netns`. On failure the
    /// port stays down with the error as the reason, and `None` is returned.
    pub(crate) fn reopen<P: Send, E: std::fmt::Display + Send>(
        &mut self,
        netns: &NetnsHandle,
        interface: &str,
        now: i32,
        open: impl FnOnce() -> Result<P, E> + Send,
    ) -> Option<P> {
        let opened = netns
            .run(open)
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
        match opened {
            Ok(p) => Some(p),
            Err(e) => {
                self.set_down(format!(
                    "interface {interface} is back (ifindex {now}) but re-opening it failed: {e}"
                ));
                None
            }
        }
    }

    /// The watch of the port that took this one's place: up, one re-open more.
    pub(crate) fn reopened(&self) -> IfWatch {
        let mut w = self.clone();
        w.set_up();
        w.reopened += 1;
        w
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
    fn a_look_says_up_gone_or_where_to_reopen() {
        let mut w = IfWatch::default();
        assert_eq!(w.look("x", 7, Some(7), true), None);
        assert!(!w.is_down());
        assert_eq!(w.look("x", 7, None, false), None);
        assert!(w
            .describe()
            .contains("interface x removed (the socket was bound to ifindex 7)"));
        assert_eq!(w.look("x", 7, Some(9), false), Some(9), "a new device");
        assert_eq!(
            w.look("x", 7, Some(7), false),
            Some(7),
            "same index, socket unbound"
        );
        assert_eq!(w.look("x", 7, Some(7), true), None);
        assert!(!w.is_down());
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
