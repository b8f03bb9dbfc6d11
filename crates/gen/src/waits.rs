//! How long the sending thread waited to run: the kernel's run delay of the calling thread
//! (`/proc/thread-self/schedstat`, second field: nanoseconds spent runnable on a run queue but
//! not running — preempted or not yet scheduled).
//!
//! Why the engine needs it: a transmit call can take milliseconds for two reasons that must
//! never be confused. Either the path held the sender — on veth the kernel runs the device's
//! path (a bridge, a tc shaper's dequeue and its timer's softirqs) inside the sender's `sendto`,
//! and a shaper that is out of tokens keeps the sender there until it lets frames out: the
//! device's flow control, the thread on its CPU all along — or the generator was preempted in
//! the call, which is the tester's own lateness. The run delay tells them apart: it grows only
//! while the thread waited for a CPU (METHODOLOGY.md, "Back-pressure").

use std::fs::File;
use std::os::unix::fs::FileExt;

/// A source of the sending thread's cumulative run delay.
pub trait WaitClock {
    /// Binds to the calling thread (the engine calls it on the thread that sends, at the start
    /// of every send phase).
    fn begin(&mut self);
    /// The bound thread's cumulative run delay in nanoseconds, on the engine's clock's scale;
    /// `None` when unknown (then no slow call is ever taken as held by the path).
    fn waited_ns(&mut self) -> Option<u64>;
}

/// The real source: the calling thread's `/proc/thread-self/schedstat`, opened by
/// [`WaitClock::begin`] and re-read with one `pread` per reading.
#[derive(Debug, Default)]
pub struct ThreadRunDelay {
    file: Option<File>,
}

impl WaitClock for ThreadRunDelay {
    fn begin(&mut self) {
        self.file = File::open("/proc/thread-self/schedstat").ok();
    }

    fn waited_ns(&mut self) -> Option<u64> {
        let mut buf = [0u8; 96];
        let n = self.file.as_ref()?.read_at(&mut buf, 0).ok()?;
        parse_schedstat(&buf[..n])
    }
}

/// The run delay (second field) of a schedstat line: `cpu_time run_delay timeslices`.
fn parse_schedstat(b: &[u8]) -> Option<u64> {
    std::str::from_utf8(b)
        .ok()?
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_second_field() {
        assert_eq!(
            parse_schedstat(b"59428336 54322713 119\n"),
            Some(54_322_713)
        );
        assert_eq!(parse_schedstat(b"12\n"), None);
        assert_eq!(parse_schedstat(b""), None);
    }

    #[test]
    fn reads_this_thread_where_linux_has_schedstat() {
        let mut w = ThreadRunDelay::default();
        assert_eq!(w.waited_ns(), None, "unbound");
        w.begin();
        if std::path::Path::new("/proc/thread-self/schedstat").exists() {
            let a = w.waited_ns().expect("a reading");
            let b = w.waited_ns().expect("a second reading");
            assert!(b >= a, "{a} then {b}");
        }
    }
}
