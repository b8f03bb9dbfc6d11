//! The worker thread: [`spawn`] moves a [`Switch`] onto its own thread, which runs
//! [`Switch::poll_once`] in a loop, and returns a [`SwitchHandle`] through which the control side
//! runs closures on the switch between iterations ([`SwitchHandle::call`]) and stops it.
//!
//! No lock is taken per packet: the worker owns the switch; control calls arrive on a channel that
//! the loop checks with one `try_recv` per iteration, and it runs at most one call per iteration,
//! so a stream of control calls cannot starve the ports (every call is followed by a poll).
//!
//! Idle behaviour: after [`IDLE_BEFORE_SLEEP`] of consecutive iterations that received nothing
//! (time, not a count of polls: an empty poll costs from tens of nanoseconds to microseconds
//! depending on the ports, so a count would make the switch sleep after 13 µs on memif and after
//! 0.5 ms elsewhere), the worker waits for a control call for up to a back-off time that doubles from
//! [`IDLE_SLEEP_MIN`] to [`IDLE_SLEEP_MAX`] (10 µs → 100 µs) while it stays idle, then polls again.
//! An idle switch so uses a small fraction of a core, answers control calls at once, and picks up
//! traffic within at most 100 µs (a 10 Gb/s port receives about 1,500 minimum-size frames in that
//! time, which port rings absorb). The first received packet resets the back-off.
//!
//! Waiting on the ports: when every port can say what to wait on for its next frame
//! ([`vecswitch_ports::RxWait`]: a memif link in interrupt mode its ring's eventfd, a memif
//! handshake its control socket, a port without a link nothing) and the switch has been idle for
//! [`IDLE_BEFORE_WAIT`], the idle sleep is a `poll(2)` on those descriptors and on the worker's
//! own eventfd, which a control call writes while the worker waits, for at most
//! [`IDLE_WAIT_MAX`]: an idle switch then wakes 100 times a second (for its ports' housekeeping
//! and MAC aging, which sweeps the slots of the steps it slept through) instead of about 10,000,
//! and a frame or a control call wakes it at once. One port that must be polled (a memif link in
//! polling mode, AF_PACKET, AF_XDP) keeps the back-off above. Counted in `show runtime`
//! (`idle_waits`, and `idle_wakes` for the waits a descriptor ended). VPP's interrupt-mode rx queues and DPDK's rx interrupts do the same.
//!
//! Real-time breaks: the kernel's RT throttling lets real-time tasks run at most
//! `sched_rt_runtime_us` of every `sched_rt_period_us` on a CPU (950 ms of 1 s by default) and then
//! stops them until the period ends — a busy-polling real-time worker was stopped for ≈ 50 ms once
//! a second, which was the 40–50 ms maximum latency of every vecswitch cell of the veth comparison
//! (docs/BENCHMARKS.md §5; a `chrt -f 10` busy loop on CPU 1 showed gaps of 41–52 ms). So a worker
//! under SCHED_FIFO/SCHED_RR that has run for [`RT_RUN_SLICE`] without sleeping takes a break
//! long enough to keep it under the budget ([`rt_break_for`]: 66 µs per ms with the default
//! settings), answering a control call if one arrives meanwhile. A 66 µs gap every millisecond costs
//! 6 % of the core and a ring of a few hundred frames; 50 ms once a second cost thousands of frames
//! at any rate and the maximum latency. With throttling off (`sched_rt_runtime_us = -1`) or under
//! SCHED_OTHER there are no breaks. Counted in `show runtime` (`real-time breaks`).
//!
//! A break is slept. Taking it at SCHED_OTHER while polling instead was tried
//! (docs/BENCHMARKS.md §14): without competition it cut the p99 over memif from ~100 µs to
//! 15–56 µs, but with a SCHED_OTHER busy loop on the same CPU the worker spent 60 % of its time
//! at SCHED_OTHER and the loop took 53 % of the CPU — the opposite of what a real-time worker is
//! for — so it was not kept.
//!
//! Busy polling ([`IdlePolicy::Busy`]): the worker never sleeps, as DPDK's poll-mode drivers and
//! VPP's polling mode do not; the lab uses it for a DUT on a CPU of its own, whose first frames of
//! every trial would otherwise meet a worker asleep since the last one. A real-time worker still
//! sleeps its real-time breaks.
//!
//! Idle policy for a shared core ([`IdlePolicy`], [`SwitchHandle::set_idle_policy`]): with
//! [`IdlePolicy::Sleep`] the worker sleeps (the back-off above) after *every* poll that found
//! nothing, not after [`IDLE_BEFORE_SLEEP`] of them. For a core shared with another busy poller
//! (PVP on two CPUs: the switch and the VNF on CPU 1 at SCHED_OTHER): there the scheduler
//! alternates two busy pollers a tick at a time (4 ms at HZ = 250), every frame waits for the
//! other's turn, and PVP's ceiling was the VNF's ring over that round trip for vecswitch and
//! testpmd io alike (1,024 slots / ≈ 8 ms ≈ 128 kfps over memif, docs/BENCHMARKS.md §9). The
//! 500 µs window never ran out under traffic (the generator's frames, one every 10 µs at 100 kfps,
//! reset it), so the worker polled whole ticks. A sleeping worker is dequeued: the VNF gets the
//! CPU at once and the worker does not use up its share on empty polls. Measured on the loaded
//! host (PVP over memif, 5 interleaved rounds, docs/BENCHMARKS.md §9.1): median latency 86–118 µs
//! instead of 246–251 µs, or 7.5–8.5 ms in the rounds where the host fell into the tick regime,
//! and then no loss where busy polling lost up to 4,650 frames; the worker on the CPU 12 % of the
//! time instead of 24–38 %. A `sched_yield(2)`
//! after each empty poll was tried and made it worse (median 1.6–2.1 ms): under EEVDF a yield
//! pushes the worker's deadline back while the VNF, which has run more, is not eligible, so the
//! worker then waits behind it. [`IdlePolicy::Poll`] (the default) is the behaviour for a core of
//! its own. The lab's vecswitch driver asks for `sleep` when the CPU is shared.
//!
//! Scheduling ([`WorkerSched`], [`SwitchHandle::set_scheduling`]): the worker can run under a
//! real-time policy (`fifo:10` is SCHED_FIFO priority 10, `rr:N` SCHED_RR, `other` the default
//! time-sharing policy), as FD.io VPP's `cpu { scheduler-policy fifo scheduler-priority N }` does.
//! On a shared 2-core host an ordinary-priority busy-polling worker is descheduled for tens of
//! milliseconds at a time by other tasks and its kernel rings overflow; measured over veth
//! (docs/BENCHMARKS.md §5), `chrt -f 10` on the worker removed that loss. The worker sleeps when
//! idle (above), so a real-time worker does not hold its CPU while there is no traffic, and the
//! kernel's RT throttling (`/proc/sys/kernel/sched_rt_runtime_us`, 95 % by default) leaves other
//! tasks a share even under load. Setting a real-time policy needs root or CAP_SYS_NICE (or an
//! RLIMIT_RTPRIO at least the priority); without it the error says so ([`SchedError`]).

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use thread_priority::unix::{
    set_thread_priority_and_policy, thread_native_id, thread_schedule_policy_param,
    NormalThreadSchedulePolicy, RealtimeThreadSchedulePolicy, ThreadSchedulePolicy,
};
use thread_priority::{ThreadPriority, ThreadPriorityValue};

use crate::runtime::Switch;

/// Time without a received packet before the worker starts sleeping.
pub const IDLE_BEFORE_SLEEP: Duration = Duration::from_micros(500);
/// Idle this long, the worker waits on the ports' descriptors when they all have one (module doc,
/// "Waiting on the ports").
pub const IDLE_BEFORE_WAIT: Duration = Duration::from_millis(5);
/// Longest wait on the ports' descriptors: the ports' housekeeping and MAC aging run at least
/// this often.
pub const IDLE_WAIT_MAX: Duration = Duration::from_millis(10);
/// First idle wait.
pub const IDLE_SLEEP_MIN: Duration = Duration::from_micros(10);
/// A real-time worker takes a break after running this long without sleeping (module doc).
pub const RT_RUN_SLICE: Duration = Duration::from_millis(1);

/// The break a real-time worker takes after [`RT_RUN_SLICE`] of running so that it stays inside
/// the kernel's RT budget of `runtime_us` per `period_us` (`/proc/sys/kernel/sched_rt_*`), with a
/// quarter of margin; `None` when the budget does not limit it (runtime -1, or ≥ the period).
pub fn rt_break_for(runtime_us: i64, period_us: i64) -> Option<Duration> {
    if runtime_us < 0 || period_us <= 0 || runtime_us >= period_us {
        return None;
    }
    let off = (period_us - runtime_us) as f64 / period_us as f64;
    let slice = RT_RUN_SLICE.as_secs_f64();
    // Running `slice` then sleeping `b` keeps the share asleep at b / (slice + b) ≥ off.
    let b = slice * off / (1.0 - off) * 1.25;
    Some(Duration::from_secs_f64(b.max(20e-6)))
}

/// The break for this host's settings, if the worker's policy is real-time.
fn rt_break(sched: Option<WorkerSched>) -> Option<Duration> {
    let rt = matches!(
        sched,
        Some(WorkerSched {
            policy: SchedPolicy::Fifo | SchedPolicy::RoundRobin,
            ..
        })
    );
    if !rt {
        return None;
    }
    let read = |f: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    rt_break_for(read("sched_rt_runtime_us")?, read("sched_rt_period_us")?)
}

/// Longest idle wait.
pub const IDLE_SLEEP_MAX: Duration = Duration::from_micros(100);

/// What the worker does after a poll that received nothing (module doc, "Idle policy for a
/// shared core" and "Busy polling"). Written and parsed as `poll`, `busy` or `sleep`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IdlePolicy {
    /// Poll again at once, and sleep only after [`IDLE_BEFORE_SLEEP`] without a packet: the
    /// lowest latency on a core of the worker's own.
    #[default]
    Poll,
    /// Sleep after every empty poll (the back-off of an idle worker, from [`IDLE_SLEEP_MIN`]):
    /// for a core shared with another busy poller, which then gets the CPU at once.
    Sleep,
    /// Never sleep: poll again at once however long nothing arrives, as DPDK's poll-mode drivers
    /// and VPP's polling mode do. A worker that never sleeps is never woken late (module doc,
    /// "Busy polling"); it uses its whole core while idle.
    Busy,
}

/// What [`IdlePolicy`]'s text form accepts, for error messages.
pub const IDLE_POLICY_ACCEPTED: &str =
    "`poll` (a core of its own, sleeps when idle), `busy` (a core of its own, never sleeps) or `sleep` (a core shared with another busy poller)";

impl IdlePolicy {
    fn to_u8(self) -> u8 {
        match self {
            IdlePolicy::Poll => 0,
            IdlePolicy::Sleep => 1,
            IdlePolicy::Busy => 2,
        }
    }

    fn from_u8(v: u8) -> IdlePolicy {
        match v {
            1 => IdlePolicy::Sleep,
            2 => IdlePolicy::Busy,
            _ => IdlePolicy::Poll,
        }
    }
}

/// A text that is not an [`IdlePolicy`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("worker idle policy {value:?}: unknown; accepted: {IDLE_POLICY_ACCEPTED}")]
pub struct IdlePolicyError {
    pub value: String,
}

impl fmt::Display for IdlePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdlePolicy::Poll => "poll",
            IdlePolicy::Sleep => "sleep",
            IdlePolicy::Busy => "busy",
        })
    }
}

impl FromStr for IdlePolicy {
    type Err = IdlePolicyError;

    fn from_str(s: &str) -> Result<IdlePolicy, IdlePolicyError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "poll" => Ok(IdlePolicy::Poll),
            "sleep" => Ok(IdlePolicy::Sleep),
            "busy" => Ok(IdlePolicy::Busy),
            _ => Err(IdlePolicyError {
                value: s.to_string(),
            }),
        }
    }
}

type Call = Box<dyn FnOnce(&mut Switch) + Send>;

enum Msg {
    Call(Call),
    Stop,
}

/// The worker thread is gone (it was stopped, or a call panicked on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the switch worker thread is not running")]
pub struct WorkerGone;

/// A scheduling policy for the worker thread (`sched(7)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedPolicy {
    /// SCHED_OTHER, the default time-sharing policy (priority 0).
    Other,
    /// SCHED_FIFO: runs until it blocks or a higher real-time priority wants the CPU.
    Fifo,
    /// SCHED_RR: SCHED_FIFO with a time slice among threads of the same priority.
    RoundRobin,
}

/// The worker's scheduling: a policy and its static priority (1–99 for `fifo`/`rr`, 0 for
/// `other`). Written and parsed as `fifo:10`, `rr:5` or `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerSched {
    pub policy: SchedPolicy,
    pub priority: u8,
}

/// Highest real-time priority Linux accepts (`sched_get_priority_max(SCHED_FIFO)`).
pub const RT_PRIORITY_MAX: u8 = 99;

/// What [`WorkerSched`]'s text form accepts, for error messages.
pub const SCHED_ACCEPTED: &str =
    "`fifo:N` or `rr:N` with N in 1..=99 (SCHED_FIFO/SCHED_RR priority), or `other`";

/// The worker's scheduling could not be read or set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedError {
    /// A text that is not a scheduling setting.
    #[error("worker scheduling {value:?}: {why}; accepted: {SCHED_ACCEPTED}")]
    Invalid { value: String, why: String },
    /// The kernel refused for lack of privilege (EPERM).
    #[error(
        "worker scheduling {sched}: not permitted (EPERM): a real-time policy needs root or \
         CAP_SYS_NICE, or RLIMIT_RTPRIO (ulimit -r) of at least {priority}; run as root, \
         `setcap cap_sys_nice+ep` the binary, or use `other`"
    )]
    NotPermitted { sched: WorkerSched, priority: u8 },
    /// Any other failure of `pthread_setschedparam`/`pthread_getschedparam`.
    #[error("worker scheduling {sched}: {reason}")]
    Failed { sched: WorkerSched, reason: String },
}

impl fmt::Display for WorkerSched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.policy {
            SchedPolicy::Other => f.write_str("other"),
            SchedPolicy::Fifo => write!(f, "fifo:{}", self.priority),
            SchedPolicy::RoundRobin => write!(f, "rr:{}", self.priority),
        }
    }
}

impl FromStr for WorkerSched {
    type Err = SchedError;

    fn from_str(s: &str) -> Result<WorkerSched, SchedError> {
        let invalid = |why: &str| SchedError::Invalid {
            value: s.to_string(),
            why: why.to_string(),
        };
        let t = s.trim().to_ascii_lowercase();
        let (name, prio) = match t.split_once(':') {
            Some((n, p)) => (n.trim(), Some(p.trim())),
            None => (t.as_str(), None),
        };
        let policy = match name {
            "other" | "normal" => SchedPolicy::Other,
            "fifo" => SchedPolicy::Fifo,
            "rr" => SchedPolicy::RoundRobin,
            _ => return Err(invalid("unknown policy")),
        };
        let priority = match (policy, prio) {
            (SchedPolicy::Other, None) => 0,
            (SchedPolicy::Other, Some(_)) => {
                return Err(invalid("`other` takes no priority (it is always 0)"))
            }
            (_, None) => return Err(invalid("a real-time policy needs a priority")),
            (_, Some(p)) => match p.parse::<u8>() {
                Ok(n) if (1..=RT_PRIORITY_MAX).contains(&n) => n,
                _ => return Err(invalid("priority out of range")),
            },
        };
        Ok(WorkerSched { policy, priority })
    }
}

impl WorkerSched {
    /// SCHED_OTHER, what a thread gets by default.
    pub const OTHER: WorkerSched = WorkerSched {
        policy: SchedPolicy::Other,
        priority: 0,
    };

    fn os_policy(self) -> ThreadSchedulePolicy {
        match self.policy {
            SchedPolicy::Other => ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other),
            SchedPolicy::Fifo => ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
            SchedPolicy::RoundRobin => {
                ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::RoundRobin)
            }
        }
    }

    /// Gives the calling thread this policy and priority (`pthread_setschedparam`).
    pub fn apply_to_current_thread(self) -> Result<(), SchedError> {
        let failed = |reason: String| SchedError::Failed {
            sched: self,
            reason,
        };
        let priority = match self.policy {
            // SCHED_OTHER: static priority 0, and the crate also sets a nice level mapped from its
            // cross-platform value (99 - p) * 39 / 99 - 20, truncated: 47 is nice 0 (the test
            // checks it), so `other` leaves the thread's nice value at the default.
            SchedPolicy::Other => ThreadPriorityValue::try_from(47u8),
            _ => ThreadPriorityValue::try_from(self.priority),
        }
        .map_err(failed)?;
        match set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Crossplatform(priority),
            self.os_policy(),
        ) {
            Ok(()) => Ok(()),
            Err(thread_priority::Error::OS(e))
                if std::io::Error::from_raw_os_error(e).kind()
                    == std::io::ErrorKind::PermissionDenied =>
            {
                Err(SchedError::NotPermitted {
                    sched: self,
                    priority: self.priority,
                })
            }
            Err(e) => Err(failed(e.to_string())),
        }
    }

    /// The calling thread's current policy and priority (`pthread_getschedparam`); policies other
    /// than SCHED_OTHER/FIFO/RR (batch, idle, deadline) read as `other` with their priority.
    pub fn of_current_thread() -> Result<WorkerSched, SchedError> {
        let (p, param) =
            thread_schedule_policy_param(thread_native_id()).map_err(|e| SchedError::Failed {
                sched: WorkerSched::OTHER,
                reason: format!("reading the current scheduling: {e}"),
            })?;
        let policy = match p {
            ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo) => SchedPolicy::Fifo,
            ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::RoundRobin) => {
                SchedPolicy::RoundRobin
            }
            _ => SchedPolicy::Other,
        };
        Ok(WorkerSched {
            policy,
            priority: u8::try_from(param.sched_priority).unwrap_or(0),
        })
    }
}

/// Control side of a running switch. Dropping it stops the worker.
#[derive(Debug)]
pub struct SwitchHandle {
    tx: Sender<Msg>,
    /// Wakes the worker from a wait on the ports when a call is sent.
    wake: Arc<Wake>,
    thread: Option<JoinHandle<Switch>>,
    /// The [`IdlePolicy`] (as [`IdlePolicy::to_u8`]), read by the worker after every control call.
    idle_policy: Arc<AtomicU8>,
}

/// The worker's eventfd and whether it waits on it (module doc, "Waiting on the ports").
#[derive(Debug)]
struct Wake {
    /// `None` if the kernel refused an eventfd: the worker then never waits on the ports.
    efd: Option<nix::sys::eventfd::EventFd>,
    /// Set by the worker before its last look at the channel and its `poll(2)`; a sender that
    /// sees it set writes the eventfd after sending, so a call is never left waiting.
    waiting: AtomicBool,
}

impl Wake {
    fn new() -> Wake {
        use nix::sys::eventfd::{EfdFlags, EventFd};
        Wake {
            efd: EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
                .ok(),
            waiting: AtomicBool::new(false),
        }
    }

    /// After a message was sent: wakes a waiting worker.
    fn kick(&self) {
        if self.waiting.load(Ordering::SeqCst) {
            if let Some(e) = &self.efd {
                let _ = e.write(1);
            }
        }
    }
}

/// Starts `switch` on a new thread named `vecswitch-worker`.
pub fn spawn(switch: Switch) -> std::io::Result<SwitchHandle> {
    let (tx, rx) = mpsc::channel();
    let idle_policy = Arc::new(AtomicU8::new(IdlePolicy::default().to_u8()));
    let flag = Arc::clone(&idle_policy);
    let wake = Arc::new(Wake::new());
    let worker_wake = Arc::clone(&wake);
    let thread = std::thread::Builder::new()
        .name("vecswitch-worker".into())
        .spawn(move || run(switch, rx, &flag, &worker_wake))?;
    Ok(SwitchHandle {
        tx,
        wake,
        thread: Some(thread),
        idle_policy,
    })
}

/// What one message asks of the loop: go on or stop.
fn handle(sw: &mut Switch, msg: Msg) -> bool {
    match msg {
        Msg::Call(f) => {
            let t0 = sw.now_ns();
            f(sw);
            let t = sw.now_ns().saturating_sub(t0);
            sw.note_control_call(t);
            true
        }
        Msg::Stop => false,
    }
}

/// One idle sleep in `poll(2)` on the ports' descriptors and the worker's eventfd (module doc,
/// "Waiting on the ports"), or `None` when a port must be polled. `Some(msg)`: what the channel
/// held after the wait (a call or a stop, or nothing).
fn wait_on_ports(
    sw: &mut Switch,
    rx: &Receiver<Msg>,
    wake: &Wake,
) -> Option<Result<Option<Msg>, ()>> {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let efd = wake.efd.as_ref()?;
    wake.waiting.store(true, Ordering::SeqCst);
    // The last look at the channel, after `waiting` is set: a call sent before it is seen here,
    // one sent after it writes the eventfd.
    let pending = match rx.try_recv() {
        Ok(m) => Some(Ok(Some(m))),
        Err(TryRecvError::Disconnected) => Some(Err(())),
        Err(TryRecvError::Empty) => None,
    };
    if let Some(p) = pending {
        wake.waiting.store(false, Ordering::SeqCst);
        return Some(p);
    }
    let waited = {
        let Some(fds) = sw.rx_wait_fds() else {
            wake.waiting.store(false, Ordering::SeqCst);
            return None;
        };
        let mut pfds: Vec<PollFd<'_>> = std::iter::once(efd.as_fd())
            .chain(fds)
            .map(|fd| PollFd::new(fd, PollFlags::POLLIN))
            .collect();
        let ms = IDLE_WAIT_MAX.as_millis() as u16;
        // Interrupted (EINTR) counts as woken: the loop polls again either way.
        nix::poll::poll(&mut pfds, PollTimeout::from(ms)).map_or(true, |n| n > 0)
    };
    wake.waiting.store(false, Ordering::SeqCst);
    let _ = efd.read(); // EAGAIN when nobody wrote: fine
    sw.note_idle_wait(IDLE_WAIT_MAX, waited);
    Some(match rx.try_recv() {
        Ok(m) => Ok(Some(m)),
        Err(TryRecvError::Empty) => Ok(None),
        Err(TryRecvError::Disconnected) => Err(()),
    })
}

fn run(mut sw: Switch, rx: Receiver<Msg>, idle_policy: &AtomicU8, wake: &Wake) -> Switch {
    let idle_before_sleep_ns = IDLE_BEFORE_SLEEP.as_nanos() as u64;
    let idle_before_wait_ns = IDLE_BEFORE_WAIT.as_nanos() as u64;
    let rt_slice_ns = RT_RUN_SLICE.as_nanos() as u64;
    // When the current run of empty polls began (the switch's clock, ns).
    let mut idle_since: Option<u64> = None;
    let mut sleep = IDLE_SLEEP_MIN;
    // The real-time break (module doc), re-read after every control call (one may change the
    // policy), and when the worker last woke from a sleep or a break.
    let mut rt = rt_break(WorkerSched::of_current_thread().ok());
    let mut awake_since = sw.now_ns();
    // The idle policy, re-read after every control call like `rt`.
    let mut policy = IdlePolicy::from_u8(idle_policy.load(Ordering::Relaxed));
    loop {
        let received = sw.poll_once();
        sw.run_timers(); // the features' timers (e.g. LACP), see `Feature::timers`
        if let Some(pause) = rt {
            let now = sw.now_ns();
            if now.saturating_sub(awake_since) >= rt_slice_ns {
                sw.note_rt_break(pause);
                let msg = match rx.recv_timeout(pause) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return sw,
                };
                awake_since = sw.now_ns();
                if let Some(m) = msg {
                    if !handle(&mut sw, m) {
                        return sw;
                    }
                    rt = rt_break(WorkerSched::of_current_thread().ok());
                    policy = IdlePolicy::from_u8(idle_policy.load(Ordering::Relaxed));
                }
                continue;
            }
        }
        let sleepy = if received > 0 {
            idle_since = None;
            sleep = IDLE_SLEEP_MIN;
            false
        } else {
            let now = sw.now_ns();
            let since = *idle_since.get_or_insert(now);
            match policy {
                IdlePolicy::Sleep => true,
                IdlePolicy::Busy => false,
                IdlePolicy::Poll => now.saturating_sub(since) >= idle_before_sleep_ns,
            }
        };
        // Then at most one control call, never a queue of them, so every call is followed by a
        // poll: a caller that queues its next call while the worker is descheduled right after
        // answering the last one would otherwise find the worker draining calls every time it
        // runs, and the ports would not be polled at all (seen in CI on a loaded 2-core host: 20
        // calls answered in a row, 1,000 frames left waiting; test `a_queued_call_waits_for_a_poll`).
        // Asked only when the worker would sleep anyway (no clock read on the busy path).
        let waited = if sleepy
            && idle_since.is_some_and(|s| sw.now_ns().saturating_sub(s) >= idle_before_wait_ns)
        {
            wait_on_ports(&mut sw, &rx, wake)
        } else {
            None
        };
        let msg = if let Some(w) = waited {
            match w {
                Ok(m) => m,
                Err(()) => return sw,
            }
        } else if !sleepy {
            match rx.try_recv() {
                Ok(m) => Some(m),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => return sw,
            }
        } else {
            sw.note_idle_sleep(sleep);
            match rx.recv_timeout(sleep) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => {
                    sleep = (sleep * 2).min(IDLE_SLEEP_MAX);
                    None
                }
                Err(RecvTimeoutError::Disconnected) => return sw,
            }
        };
        if sleepy {
            awake_since = sw.now_ns();
        }
        if let Some(m) = msg {
            if !handle(&mut sw, m) {
                return sw;
            }
            rt = rt_break(WorkerSched::of_current_thread().ok());
            policy = IdlePolicy::from_u8(idle_policy.load(Ordering::Relaxed));
        }
    }
}

impl SwitchHandle {
    /// Runs `f` on the switch between two poll iterations and returns its result. `f` runs on the
    /// worker thread (so a call can also set that thread's CPU affinity).
    pub fn call<R, F>(&self, f: F) -> Result<R, WorkerGone>
    where
        R: Send + 'static,
        F: FnOnce(&mut Switch) -> R + Send + 'static,
    {
        let (rtx, rrx) = mpsc::sync_channel(1);
        let call: Call = Box::new(move |sw| {
            // The caller may have given up waiting; then nobody wants the result.
            let _ = rtx.send(f(sw));
        });
        self.tx.send(Msg::Call(call)).map_err(|_| WorkerGone)?;
        self.wake.kick();
        rrx.recv().map_err(|_| WorkerGone)
    }

    /// Queues `f` to run on the switch between two poll iterations, like [`SwitchHandle::call`],
    /// and returns at once without waiting for it (the control plane waits with a deadline:
    /// `vecswitch_control::controller`).
    pub fn post<F>(&self, f: F) -> Result<(), WorkerGone>
    where
        F: FnOnce(&mut Switch) + Send + 'static,
    {
        self.tx
            .send(Msg::Call(Box::new(f)))
            .map_err(|_| WorkerGone)?;
        self.wake.kick();
        Ok(())
    }

    /// Gives the worker thread `sched` (policy and priority), from the worker itself, and returns
    /// what the thread has afterwards (read back, not assumed).
    pub fn set_scheduling(&self, sched: WorkerSched) -> Result<WorkerSched, SchedError> {
        let gone = |_| SchedError::Failed {
            sched,
            reason: WorkerGone.to_string(),
        };
        self.call(move |_| {
            sched.apply_to_current_thread()?;
            WorkerSched::of_current_thread()
        })
        .map_err(gone)?
    }

    /// Sets what the worker does after a poll that found nothing ([`IdlePolicy`]); in force from
    /// the worker's next iteration (the change travels as a control call).
    pub fn set_idle_policy(&self, policy: IdlePolicy) -> Result<(), WorkerGone> {
        let flag = Arc::clone(&self.idle_policy);
        self.call(move |_| flag.store(policy.to_u8(), Ordering::Relaxed))
    }

    /// The worker's idle policy.
    pub fn idle_policy(&self) -> IdlePolicy {
        IdlePolicy::from_u8(self.idle_policy.load(Ordering::Relaxed))
    }

    /// The worker thread's current scheduling.
    pub fn scheduling(&self) -> Result<WorkerSched, SchedError> {
        self.call(|_| WorkerSched::of_current_thread())
            .map_err(|_| SchedError::Failed {
                sched: WorkerSched::OTHER,
                reason: WorkerGone.to_string(),
            })?
    }

    /// Stops the worker and gives the switch back.
    pub fn stop(mut self) -> Result<Switch, WorkerGone> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<Switch, WorkerGone> {
        let t = self.thread.take().ok_or(WorkerGone)?;
        let _ = self.tx.send(Msg::Stop);
        self.wake.kick();
        t.join().map_err(|_| WorkerGone)
    }

    /// Whether the worker thread is still running.
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for SwitchHandle {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default budget (950 ms of 1 s) gives a 66 µs break per ms of running; no budget, or a
    /// budget of the whole period, no break; half the period, a break longer than the slice.
    #[test]
    fn rt_breaks_keep_a_worker_inside_the_kernel_budget() {
        let b = rt_break_for(950_000, 1_000_000).unwrap();
        assert!((65..=67).contains(&b.as_micros()), "{b:?}");
        let share = b.as_secs_f64() / (b.as_secs_f64() + RT_RUN_SLICE.as_secs_f64());
        assert!(share > 0.05, "asleep {share}");
        assert_eq!(rt_break_for(-1, 1_000_000), None);
        assert_eq!(rt_break_for(1_000_000, 1_000_000), None);
        assert!(rt_break_for(500_000, 1_000_000).unwrap() > RT_RUN_SLICE);
    }

    #[test]
    fn sched_text_round_trips_and_bad_values_name_what_is_accepted() {
        for (t, want) in [
            ("fifo:10", "fifo:10"),
            ("FIFO:99", "fifo:99"),
            ("rr:1", "rr:1"),
            ("other", "other"),
            (" normal ", "other"),
        ] {
            let s: WorkerSched = t.parse().unwrap();
            assert_eq!(s.to_string(), want);
            assert_eq!(want.parse::<WorkerSched>().unwrap(), s);
        }
        for (bad, why) in [
            ("fifo", "needs a priority"),
            ("fifo:0", "out of range"),
            ("fifo:100", "out of range"),
            ("rr:x", "out of range"),
            ("other:3", "no priority"),
            ("deadline:1", "unknown policy"),
        ] {
            let e = bad.parse::<WorkerSched>().unwrap_err().to_string();
            assert!(
                e.contains(bad) && e.contains(why) && e.contains("fifo:N"),
                "{e}"
            );
        }
    }

    #[test]
    fn idle_policy_text_round_trips_and_bad_values_name_what_is_accepted() {
        for (t, want) in [("poll", IdlePolicy::Poll), (" SLEEP ", IdlePolicy::Sleep)] {
            let p: IdlePolicy = t.parse().unwrap();
            assert_eq!(p, want);
            assert_eq!(p.to_string().parse::<IdlePolicy>().unwrap(), p);
        }
        let e = "yield".parse::<IdlePolicy>().unwrap_err().to_string();
        assert!(e.contains("yield") && e.contains("`sleep`"), "{e}");
    }

    #[test]
    fn not_permitted_says_what_is_needed() {
        let e = SchedError::NotPermitted {
            sched: "fifo:10".parse().unwrap(),
            priority: 10,
        }
        .to_string();
        assert!(
            e.contains("fifo:10") && e.contains("CAP_SYS_NICE") && e.contains("RLIMIT_RTPRIO"),
            "{e}"
        );
    }

    /// On the worker thread itself, read back from the kernel: a real-time policy where this
    /// process may set one (root, CI), the named EPERM error otherwise; `other` always works.
    #[test]
    fn worker_thread_gets_the_policy_or_a_clear_error() {
        let sw = Switch::new(crate::SwitchConfig::default());
        let h = spawn(sw).unwrap();
        assert_eq!(h.scheduling().unwrap(), WorkerSched::OTHER);
        let fifo: WorkerSched = "fifo:3".parse().unwrap();
        match h.set_scheduling(fifo) {
            Ok(got) => assert_eq!(got, fifo),
            Err(SchedError::NotPermitted { .. }) => {
                assert!(!is_root(), "EPERM as root");
            }
            Err(e) => panic!("unexpected: {e}"),
        }
        assert_eq!(
            h.set_scheduling(WorkerSched::OTHER).unwrap(),
            WorkerSched::OTHER
        );
        // Back to the default: nice 0 too (proc(5) stat field 19).
        let nice = h
            .call(|_| {
                let st = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
                let rest = st[st.rfind(')').unwrap() + 1..].to_string();
                rest.split_whitespace().nth(19 - 3).unwrap().to_string()
            })
            .unwrap();
        assert_eq!(nice, "0");
        // Only the worker thread changed, not the caller's.
        assert_eq!(
            WorkerSched::of_current_thread().unwrap(),
            WorkerSched::OTHER
        );
        h.stop().unwrap();
    }

    /// Effective uid 0, read from /proc (this crate has no libc/nix dependency).
    fn is_root() -> bool {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
            })
            .unwrap_or(false)
    }
}
