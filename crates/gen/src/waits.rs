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
//!
//! What the sending thread waited for the kernel's softirq thread of its CPU (`ksoftirqd/N`)
//! is not counted: on veth the softirqs the path raises (a shaper's timer, the bridge's
//! receive) run there once they outlast the sender's own call, so that wait is the path's
//! work on the generator's CPU, not another process. The engine charges it to the device only
//! while the path is throttling the sender (never below the device's rate).

use std::fs::File;
use std::os::unix::fs::FileExt;

/// A source of the sending thread's cumulative wait for a CPU, other than for its CPU's softirq
/// thread (module doc).
pub trait WaitClock {
    /// Binds to the calling thread (the engine calls it on the thread that sends, at the start
    /// of every send phase).
    fn begin(&mut self);
    /// The bound thread's cumulative wait in nanoseconds, on the engine's clock's scale (never
    /// decreasing); `None` when unknown (then no slow call is ever taken as held by the path).
    fn waited_ns(&mut self) -> Option<u64>;
}

/// The real source: the calling thread's `/proc/thread-self/schedstat` (run delay) and its
/// CPU's `ksoftirqd/N` schedstat (CPU time), opened by [`WaitClock::begin`] and re-read with one
/// `pread` each per reading.
#[derive(Debug, Default)]
pub struct ThreadRunDelay {
    own: Option<File>,
    softirq: Option<File>,
    /// The last (run delay, softirq thread's CPU time) read, and the wait accumulated.
    last: Option<(u64, u64)>,
    waited: u64,
}

impl WaitClock for ThreadRunDelay {
    fn begin(&mut self) {
        self.own = File::open("/proc/thread-self/schedstat").ok();
        self.softirq = std::fs::read_to_string("/proc/thread-self/stat")
            .ok()
            .and_then(|s| stat_cpu(&s))
            .and_then(ksoftirqd_pid)
            .and_then(|pid| File::open(format!("/proc/{pid}/schedstat")).ok());
        self.last = None;
    }

    fn waited_ns(&mut self) -> Option<u64> {
        let rd = read_field(self.own.as_ref()?, 1)?;
        let ks = self
            .softirq
            .as_ref()
            .and_then(|f| read_field(f, 0))
            .unwrap_or(0);
        if let Some((rd0, ks0)) = self.last {
            let d_rd = rd.saturating_sub(rd0);
            let d_ks = ks.saturating_sub(ks0);
            self.waited += d_rd - d_rd.min(d_ks);
        }
        self.last = Some((rd, ks));
        Some(self.waited)
    }
}

/// Field `i` of a schedstat file (`cpu_time run_delay timeslices`), re-read from the start.
fn read_field(f: &File, i: usize) -> Option<u64> {
    let mut buf = [0u8; 96];
    let n = f.read_at(&mut buf, 0).ok()?;
    parse_schedstat(&buf[..n], i)
}

/// Field `i` of a schedstat line.
fn parse_schedstat(b: &[u8], i: usize) -> Option<u64> {
    std::str::from_utf8(b)
        .ok()?
        .split_ascii_whitespace()
        .nth(i)?
        .parse()
        .ok()
}

/// The CPU a task last ran on: field 39 of `/proc/PID/stat` (after the parenthesised name).
fn stat_cpu(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields from 3 on follow the name: the CPU is field 39, the 37th of them.
    rest.split_ascii_whitespace().nth(36)?.parse().ok()
}

/// The pid of `ksoftirqd/CPU`.
fn ksoftirqd_pid(cpu: u32) -> Option<u32> {
    let want = format!("ksoftirqd/{cpu}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        (comm.trim_end() == want).then_some(pid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_second_field() {
        assert_eq!(
            parse_schedstat(b"59428336 54322713 119\n", 1),
            Some(54_322_713)
        );
        assert_eq!(parse_schedstat(b"12\n", 1), None);
        assert_eq!(parse_schedstat(b"", 1), None);
        let stat = "7 (a b) c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 \
                    25 26 27 28 29 30 31 32 33 34 35 3 37";
        assert_eq!(stat_cpu(stat), Some(3));
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
            // This thread's CPU has a softirq thread.
            assert!(w.softirq.is_some());
        }
    }
}
