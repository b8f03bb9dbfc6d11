//! The engine: a [`Generator`] owns one or two ports and a buffer pool and runs [`TrialSpec`]s on one
//! thread, returning a [`TrialReport`].
//!
//! A trial has four phases: wait for the links, warm-up (frames flagged as warm-up in their
//! signature, counted apart), the measured phase (every tx port paced by its own [`Pacer`], every
//! port polled for receive between batches), and the drain (receive only, until every frame sent has
//! arrived or the drain time is over). Loss is counted after the drain.
//!
//! **Every schedule slot is accounted for, once.** Each slot of a port's pacing schedule ends as
//! exactly one of: *sent* (the port took the frame), *refused* (`tx_burst` took fewer: ring full,
//! socket buffer full — counted per port and per stream in `tx_refused`), or *not sent* (dropped as
//! late by the [`Pacer`], or never reached because the ports stalled or the time ran out). A refused
//! frame is **never offered again** within the trial (no retry): its slot is spent. A refused frame
//! does **not** consume a sequence number: sequence numbers number the frames that entered the
//! device (so the receive analysis counts loss, duplicates and reordering over what the device
//! got, and flows keep their even spread); the refusals are counted beside them.
//!
//! The generator knows its limits. It measures, over the measured phase, its busy and idle time
//! (an iteration of the send loop with nothing due and nothing received is idle) and its
//! [`Lateness`] against the schedule. The report says `tester_limited`, with reasons, when late
//! slots were dropped beyond the tolerance ("tester late"), when the ports stalled, when it
//! attempted fewer frames than intended, or when ports refused frames while it had no idle time
//! (its own CPU was the limit). Frames refused while it had CPU to spare are the path throttling
//! the sender: the report says `back_pressured`, **not** tester-limited (METHODOLOGY.md,
//! "Back-pressure"). Late slots that fall due right after a transmit call the path throttled
//! (it refused frames: the ring or socket budget was full) are counted apart
//! ([`Lateness::slots_dropped_blocked`]): they are the device slowing the sender, not the
//! generator being descheduled, and the time spent in such calls counts as idle.
//!
//! **Held calls.** A path can throttle the sender without refusing anything: on veth the kernel
//! runs the device's path inside the sender's `sendto` (bridge, qdisc, and the softirqs a tc
//! shaper's timer raises), and a shaper out of tokens keeps the sender in the call, draining
//! its queue at the shaper's rate, for up to milliseconds per call — the generator then sends
//! exactly the shaper's rate and refuses nothing (issue 25: a tbf of 100 kfps, a 14.88 Mfps
//! trial offered 100,043 fps, every late slot taken as "tester late"). A transmit call slower
//! than [`HELD_CALL_MIN_NS`] and half the late threshold counts as **held** by the path when
//! the sending thread's run delay ([`crate::waits`]) grew by less than half the call since the
//! last reading: the thread was on its CPU, in the kernel, doing the device's work. A slow call
//! the thread waited through (preempted) is the generator's own lateness, never the device's.
//! A held call is throttled like a refusing one (its late slots are back-pressure, its time
//! counts as idle), and so are the late slots of the backlog it left, dropped at polls within
//! the late threshold of each other until the port catches up with its schedule (the generator
//! was not away in between). `tx_held_calls` counts held calls per port. The report
//! also gives the receive window (first and last frame of the measured phase received, and how
//! many came after the send phase): a path that back-pressured the sender returns the frames its
//! transmit ring held over a window longer than the send phase, and rates are taken over it.
//!
//! Transmit timestamps are taken right before the `tx_burst` call: the batch is built, then stamped
//! (one time for the whole batch: a software port hands the batch over at once, the spacing of its
//! frames on the link is not known), then offered. Receive timestamps are read right after
//! `rx_burst` returns, before the frames are parsed.
//! Frames of an earlier trial that arrive late (transmit time before the phase began) are counted
//! as `rx_stale`, never as received: they cannot hide the loss of the current trial.
//!
//! Streams with unique flows ([`crate::FlowOrder::Unique`], new-session rates) never repeat a
//! tuple over the generator's life: it keeps the tuples used so far, starts every phase
//! (warm-up, measured) past them and advances by the phase's frames (the most any unique stream
//! sent); a phase that would run past the space fails naming it ([`crate::flow::check_unique`]).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use vecswitch_buffer::{Pool, DATA_SIZE};
use vecswitch_ports::{LinkState, Port, PortStats};

use crate::analyze::{StreamAnalyzer, StreamRx};
use crate::rate::{Clock, Lateness, Pacer, Rate};
use crate::rx::{find_signature, RxError};
use crate::signature::{self, Layout};
use crate::stream::{SizeRaised, StreamBuilder, StreamSpec};
use crate::waits::{ThreadRunDelay, WaitClock};
use crate::GenError;

/// Frames built and offered to a port per `tx_burst` call.
pub const TX_BATCH: usize = 32;
/// Frames asked of a port per `rx_burst` call.
pub const RX_BATCH: usize = 256;
/// Buffers in the generator's pool.
const POOL_BUFFERS: u32 = 4096;
/// A trial in which refusals came with at least this share of idle send-loop time is back-pressure
/// (the generator had CPU to spare); with less, the generator's own CPU was the limit.
pub const BACKPRESSURE_IDLE_MIN: f64 = 0.10;

/// A transmit call is taken as held by the path only when it lasted longer than this and than
/// half the port's late threshold (module doc, "held calls"): shorter calls are the ports' and
/// the kernel's ordinary cost.
pub const HELD_CALL_MIN_NS: u64 = 100_000;

/// How long the measured phase lasts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrialLength {
    /// Send for this long (at the rate: `rate × duration` frames per tx port).
    Duration(Duration),
    /// Send exactly this many frames per tx port.
    Count(u64),
}

/// One trial: what to send, how fast, for how long.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialSpec {
    pub streams: Vec<StreamSpec>,
    /// Offered load of each transmitting port (its streams share it equally).
    pub rate: Rate,
    pub length: TrialLength,
    /// Traffic sent before the measured phase (to fill MAC tables and caches); not counted.
    pub warmup: Duration,
    /// Receive-only time after the last frame before loss is counted.
    pub drain: Duration,
    /// Frames sent back to back per burst (1 = evenly spaced).
    pub burst: u32,
    /// Relative shortfall of offered load tolerated before the trial is marked tester-limited.
    pub tolerance: f64,
    /// How long to wait for the ports' links to come up.
    pub link_timeout: Duration,
    /// How long the ports may refuse every frame (tx ring full, link gone) before the generator
    /// stops sending; the trial is then tester-limited.
    pub stall_timeout: Duration,
    /// Schedule slots due longer ago than this — or than one transmit batch ([`TX_BATCH`] frames,
    /// or a burst) of the schedule, whichever is longer — are dropped, never sent as a catch-up
    /// burst ([`Pacer::with_late_threshold`]); counted as not sent. The largest backlog the
    /// generator ever sends at once is thus one batch or this much of the schedule.
    pub late_threshold: Duration,
    /// Per-interval statistics of the measured phase (a soak): the stream runs on unchanged, and
    /// at every multiple of this interval the generator notes where each stream's sequence
    /// numbers stand; each received frame is charged to the interval it was *sent* in, whenever
    /// it arrives ([`TrialReport::intervals`]). `None`: no intervals.
    pub interval: Option<Duration>,
}

impl TrialSpec {
    /// A trial of `streams` at `rate` for `length`, no warm-up, 100 ms drain, smooth pacing, 0.1 %
    /// tolerance, 5 s link timeout, 1 s stall timeout, 200 µs late threshold.
    pub fn new(streams: Vec<StreamSpec>, rate: Rate, length: TrialLength) -> TrialSpec {
        TrialSpec {
            streams,
            rate,
            length,
            warmup: Duration::ZERO,
            drain: Duration::from_millis(100),
            burst: 1,
            tolerance: 0.001,
            link_timeout: Duration::from_secs(5),
            stall_timeout: Duration::from_secs(1),
            late_threshold: Duration::from_micros(200),
            interval: None,
        }
    }
}

/// The late threshold of a port paced at `fps`: the spec's, but never less than one transmit
/// batch (or burst) of the schedule (see [`TrialSpec::late_threshold`]).
fn late_threshold_ns(spec: &TrialSpec, fps: Option<f64>) -> u64 {
    let t = u64::try_from(spec.late_threshold.as_nanos()).unwrap_or(u64::MAX);
    let batch = (TX_BATCH as u64).max(spec.burst as u64) as f64;
    match fps {
        Some(f) if f > 0.0 => t.max((batch * 1e9 / f).min(u64::MAX as f64) as u64),
        _ => t,
    }
}

/// One stream's results.
#[derive(Debug, Clone, Serialize)]
pub struct StreamReport {
    pub id: u16,
    pub name: String,
    pub tx_port: usize,
    pub rx_port: usize,
    /// Frame sizes (with FCS) the stream sends (after raising).
    pub sizes: Vec<u16>,
    pub sizes_raised: Vec<SizeRaised>,
    pub tx: u64,
    /// Frames of this stream the port refused (not re-offered; no sequence number consumed).
    pub tx_refused: u64,
    /// Bytes sent counting frame sizes with FCS.
    pub tx_bytes: u64,
    #[serde(flatten)]
    pub rx: StreamRx,
    /// Frames of this stream received on another port than `rx_port` (not counted in `rx`).
    pub rx_wrong_port: u64,
    /// `tx − rx_unique` after the drain.
    pub lost: u64,
    /// `lost / tx` (0 when nothing was sent).
    pub loss_ratio: f64,
}

/// One port's results.
#[derive(Debug, Clone, Serialize)]
pub struct PortReport {
    pub index: usize,
    pub name: String,
    /// Frames of the measured phase sent on this port.
    pub tx: u64,
    /// Every frame received on this port in the measured phase and drain (ours, warm-up, foreign).
    pub rx_all: u64,
    /// Their bytes on the link (no FCS).
    pub rx_all_bytes: u64,
    /// Frames received with a valid signature of this trial.
    pub rx_ours: u64,
    /// Frames received without a valid signature of this trial, by reason.
    pub foreign: u64,
    pub foreign_reasons: Vec<(String, u64)>,
    /// Warm-up frames received (any time).
    pub rx_warmup: u64,
    /// Frames with this generator's signature sent before the phase began (late arrivals from an
    /// earlier trial): neither ours nor foreign, never counted as received.
    pub rx_stale: u64,
    /// Frames the port refused (ring full, socket buffer full); never offered again.
    pub tx_refused: u64,
    /// Transmit calls the path held: slow, with the sending thread on its CPU throughout (the
    /// kernel ran the device's path in the call; module doc, "held calls").
    pub tx_held_calls: u64,
    /// Schedule slots intended for this port (`None` for an unpaced, unlimited port).
    pub intended: Option<u64>,
    /// Intended slots neither sent nor refused: dropped as late, or never reached (stall, end of
    /// the trial, no buffer).
    pub not_sent: u64,
    /// The port's lateness against its schedule.
    pub lateness: Lateness,
    /// The port's own counters over the trial.
    pub port_stats: PortStats,
    /// Frames the port's kernel interface dropped after this port had sent them (counted in
    /// `tx`): a veth whose peer — the device's end — had a full receive queue
    /// ([`vecswitch_ports::KERNEL_INTERFACE_TX_DROPPED`]; 0 for ports without such a counter).
    pub kernel_tx_dropped: u64,
    /// Intended offered rate (frames/s), `None` for [`Rate::Max`].
    pub intended_fps: Option<f64>,
    /// Achieved offered rate: frames sent / max(intended duration, time of the last send).
    pub offered_fps: f64,
    /// Layer-2 bits per second offered (frame sizes with FCS).
    pub offered_bps: f64,
}

/// Everything a trial measured (serialised as-is into results files).
#[derive(Debug, Clone, Serialize)]
pub struct TrialReport {
    pub rate: Rate,
    pub length: TrialLength,
    pub streams: Vec<StreamReport>,
    pub ports: Vec<PortReport>,
    pub tx: u64,
    pub rx: u64,
    pub lost: u64,
    pub loss_ratio: f64,
    pub duplicated: u64,
    pub reordered: u64,
    pub foreign: u64,
    /// Seconds from the first to the last frame sent in the measured phase.
    pub tx_seconds: f64,
    /// Seconds spent draining.
    pub drain_seconds: f64,
    /// The receive window: seconds from the measured phase's start to the first and to the last
    /// frame of the measured phase received (both 0 when none came back). A device that
    /// forwards at the offered rate returns the frames over about `tx_seconds`; one that
    /// throttled the sender (back-pressure: the generator's transmit ring and socket held the
    /// excess, which crossed after the send phase) over longer. The forwarding rate is taken over
    /// this window (METHODOLOGY.md, "Back-pressure").
    pub rx_first_seconds: f64,
    pub rx_last_seconds: f64,
    /// Frames of the measured phase received after the send phase ended (in flight at its end,
    /// or held in the generator's transmit ring by a back-pressuring path).
    pub rx_after_send: u64,
    /// Σ ports' intended slots (`None` when a port was unpaced and unlimited).
    pub intended: Option<u64>,
    /// Σ ports' refused frames (never offered again).
    pub tx_refused: u64,
    /// Σ ports' intended slots neither sent nor refused.
    pub not_sent: u64,
    /// Lateness over all ports (counts add, maxima are maxima).
    pub lateness: Lateness,
    /// Seconds of the measured phase's send loop with work (something due or received) …
    pub busy_seconds: f64,
    /// … and with none (the generator had CPU to spare).
    pub idle_seconds: f64,
    /// Ports refused frames while the generator had CPU to spare
    /// (idle ≥ [`BACKPRESSURE_IDLE_MIN`] of the loop): the path throttled the sender. Not
    /// tester-limited on that account.
    pub back_pressured: bool,
    /// The generator could not offer the intended load (see `tester_limited_reasons`).
    pub tester_limited: bool,
    pub tester_limited_reasons: Vec<String>,
    /// Per-interval statistics when the spec asked for them ([`TrialSpec::interval`]), in order.
    /// Each interval's frames sent, refused and received (and their latency) add up to the
    /// trial's: a frame is charged to the interval it was sent in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalReport>,
}

/// One interval of a trial with [`TrialSpec::interval`].
#[derive(Debug, Clone, Serialize)]
pub struct IntervalReport {
    pub index: usize,
    /// Schedule slots dropped as late in this interval, over all ports.
    pub slots_dropped: u64,
    /// Per stream, in the trial's stream order.
    pub streams: Vec<IntervalStream>,
}

/// One stream in one interval.
#[derive(Debug, Clone, Serialize)]
pub struct IntervalStream {
    /// Frames sent in the interval (sequence numbers `[first_seq, first_seq + tx)`).
    pub first_seq: u64,
    pub tx: u64,
    pub tx_refused: u64,
    /// Those frames received (whenever they arrived), their latency.
    pub rx: StreamRx,
}

impl TrialReport {
    /// Idle share of the measured phase's send loop (0 when it did not run).
    pub fn idle_fraction(&self) -> f64 {
        let t = self.busy_seconds + self.idle_seconds;
        if t > 0.0 {
            self.idle_seconds / t
        } else {
            0.0
        }
    }
}

/// Counters another thread can read while a trial runs (for progress lines).
#[derive(Debug, Default)]
pub struct Progress {
    tx: AtomicU64,
    rx: AtomicU64,
    phase: AtomicU8,
}

/// Phase of a running trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Idle,
    Link,
    Warmup,
    Measure,
    Drain,
}

impl Progress {
    /// Frames sent in the current phase so far.
    pub fn sent(&self) -> u64 {
        self.tx.load(Ordering::Relaxed)
    }
    /// Frames with our signature received in the current phase so far.
    pub fn received(&self) -> u64 {
        self.rx.load(Ordering::Relaxed)
    }
    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Relaxed) {
            1 => Phase::Link,
            2 => Phase::Warmup,
            3 => Phase::Measure,
            4 => Phase::Drain,
            _ => Phase::Idle,
        }
    }
    fn set(&self, phase: Phase, tx: u64, rx: u64) {
        self.phase.store(phase as u8, Ordering::Relaxed);
        self.tx.store(tx, Ordering::Relaxed);
        self.rx.store(rx, Ordering::Relaxed);
    }
}

/// Per-stream run state.
#[derive(Debug)]
struct RunStream {
    b: StreamBuilder,
    /// Next sequence number (= frames of this stream sent in the phase).
    next_seq: u64,
    /// Frames of this stream the port refused in the phase.
    refused: u64,
    tx_bytes: u64,
    an: StreamAnalyzer,
    wrong_port: u64,
    /// Whether some of the stream's frames carry the compact signature.
    sends_compact: bool,
    /// Per-interval statistics ([`TrialSpec::interval`]): where each interval began (sequence
    /// number, refused count), and the analysis of the frames sent in it.
    iv_start: Vec<(u64, u64)>,
    iv_an: Vec<StreamAnalyzer>,
}

/// Per-port run state.
#[derive(Debug, Default)]
struct RunPort {
    streams: Vec<usize>,
    rr: usize,
    pacer: Option<Pacer>,
    tx: u64,
    refused: u64,
    rx_ours: u64,
    rx_warmup: u64,
    /// Frames of this generator sent before the current phase began (late arrivals from an
    /// earlier trial or the warm-up): not counted as received.
    rx_stale: u64,
    /// Every frame received (ours, warm-up, foreign) and its bytes on the link.
    rx_all: u64,
    rx_all_bytes: u64,
    foreign: [u64; 8],
    last_tx_ns: u64,
    /// Time of the last transmit call that sent frames (for the largest gap between sends).
    last_send_ns: Option<u64>,
    max_gap_ns: u64,
    intended_fps: Option<f64>,
    /// The port's last transmit call was throttled by the path: it refused frames (the ring or
    /// socket budget was full), or the path held it (slow, and the thread on its CPU throughout:
    /// module doc, "held calls"). Late slots dropped right after such a call are back-pressure
    /// ([`Lateness::slots_dropped_blocked`]), not the generator being descheduled. A slow call
    /// the generator was preempted in does not count.
    throttled: bool,
    /// The schedule backlog being worked off was left by a throttled call: late slots dropped
    /// at polls that follow within the late threshold are back-pressure too. Cleared once the
    /// port caught up with its schedule.
    backlog_blocked: bool,
    /// When the port's schedule was last polled.
    last_due_ns: Option<u64>,
    late_blocked: u64,
    /// Transmit calls the path held (see `throttled`).
    held_calls: u64,
}

const FOREIGN_REASONS: [&str; 8] = [
    "bad-l2",
    "not-ip",
    "bad-ip",
    "ip-fragment",
    "not-udp",
    "bad-udp",
    "no-signature",
    "unknown-stream",
];

fn foreign_index(e: RxError) -> usize {
    match e {
        RxError::BadL2 => 0,
        RxError::NotIp => 1,
        RxError::BadIp => 2,
        RxError::Fragment => 3,
        RxError::NotUdp => 4,
        RxError::BadUdp => 5,
        RxError::NoSignature => 6,
    }
}

/// The traffic generator.
pub struct Generator {
    ports: Vec<Box<dyn Port>>,
    pool: Pool,
    clock: Box<dyn Clock + Send>,
    /// The sending thread's run delay: tells a transmit call the path held from one the
    /// generator was preempted in ([`crate::waits`]).
    waits: Box<dyn WaitClock + Send>,
    progress: Arc<Progress>,
    scratch: Vec<u8>,
    /// Reassembly of chained (jumbo) received frames.
    rx_scratch: Vec<u8>,
    rx_handles: Vec<u32>,
    tx_handles: Vec<u32>,
    /// Start of the current phase on `clock`: signed frames sent before it are stale.
    phase_start_ns: u64,
    /// Busy and idle time of the current phase's send loop.
    busy_ns: u64,
    idle_ns: u64,
    /// Interval length and the next boundary of the measured phase (None: no intervals), and the
    /// late slots dropped over all ports when each interval began.
    iv: Option<(u64, u64)>,
    iv_late: Vec<u64>,
    /// The measured phase's receive window on `clock` (first, last frame received) and the frames
    /// received after its send phase ended (`send_done_ns`, `u64::MAX` while sending).
    rx_first_ns: Option<u64>,
    rx_last_ns: u64,
    rx_after_send: u64,
    send_done_ns: u64,
    /// Tuples of unique-flow streams used by earlier phases and trials (module doc).
    unique_used: u64,
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field(
                "ports",
                &self
                    .ports
                    .iter()
                    .map(|p| p.name().to_string())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Control polling after the last link came up, before a trial sends ([`Generator::wait_link`]).
pub const LINK_SETTLE: Duration = Duration::from_millis(20);

impl Generator {
    /// A generator on one or two ports (port indices in stream specs refer to this order).
    pub fn new(ports: Vec<Box<dyn Port>>) -> Result<Generator, GenError> {
        if ports.is_empty() || ports.len() > 2 {
            return Err(GenError::Config {
                field: "ports".into(),
                value: ports.len().to_string(),
                accepted: "1 or 2 ports".into(),
            });
        }
        Ok(Generator {
            ports,
            pool: Pool::new(POOL_BUFFERS),
            clock: Box::new(crate::clock::TscClock::new()),
            waits: Box::new(ThreadRunDelay::default()),
            progress: Arc::new(Progress::default()),
            scratch: vec![0u8; crate::size::MAX_FRAME as usize],
            rx_scratch: Vec::with_capacity(crate::size::MAX_FRAME as usize),
            rx_handles: Vec::with_capacity(RX_BATCH),
            tx_handles: Vec::with_capacity(TX_BATCH),
            phase_start_ns: 0,
            busy_ns: 0,
            idle_ns: 0,
            iv: None,
            iv_late: Vec::new(),
            rx_first_ns: None,
            rx_last_ns: 0,
            rx_after_send: 0,
            send_done_ns: u64::MAX,
            unique_used: 0,
        })
    }

    /// Replaces the monotonic clock (timestamps and pacing), e.g. with a simulated one in tests.
    /// Timestamps of frames sent before and after the change are not comparable.
    pub fn with_clock(mut self, clock: Box<dyn Clock + Send>) -> Generator {
        self.clock = clock;
        self
    }

    /// Replaces the source of the sending thread's run delay ([`crate::waits`]), e.g. with a
    /// simulated one in tests.
    pub fn with_waits(mut self, waits: Box<dyn WaitClock + Send>) -> Generator {
        self.waits = waits;
        self
    }

    /// Counters of the running trial, readable from another thread.
    pub fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    /// The ports (e.g. to read their stats).
    pub fn ports(&self) -> &[Box<dyn Port>] {
        &self.ports
    }

    /// Gives the ports back.
    pub fn into_ports(self) -> Vec<Box<dyn Port>> {
        self.ports
    }

    /// Polls the ports' control paths until every link is up; an error names the first port still
    /// down after `timeout`. A link that came up here is given [`LINK_SETTLE`] more of control
    /// polling before the trial sends: a memif server is up when the client's CONNECT arrives,
    /// the client only when our CONNECTED has reached it, and a frame the device forwarded to a
    /// client port one message short of up was lost there (`tx-failed`, seen in CI on the first
    /// trial of a NAT router over memif).
    pub fn wait_link(&mut self, timeout: Duration) -> Result<(), GenError> {
        self.progress.set(Phase::Link, 0, 0);
        let t0 = self.clock.now_ns();
        let mut waited = false;
        loop {
            for p in self.ports.iter_mut() {
                p.poll_control();
            }
            let Some(down) = self.ports.iter().position(|p| p.link() != LinkState::Up) else {
                if waited {
                    let settle = self.clock.now_ns() + LINK_SETTLE.as_nanos() as u64;
                    while self.clock.now_ns() < settle {
                        for p in self.ports.iter_mut() {
                            p.poll_control();
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                return Ok(());
            };
            waited = true;
            if self.clock.now_ns() - t0 > timeout.as_nanos() as u64 {
                return Err(GenError::LinkDown {
                    port: self.ports[down].name().to_string(),
                    waited: timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Runs one trial.
    pub fn run_trial(&mut self, spec: &TrialSpec) -> Result<TrialReport, GenError> {
        spec.rate.validate()?;
        if spec.streams.is_empty() {
            return Err(GenError::Config {
                field: "streams".into(),
                value: "0".into(),
                accepted: "at least one stream".into(),
            });
        }
        if !(0.0..1.0).contains(&spec.tolerance) {
            return Err(GenError::Config {
                field: "tolerance".into(),
                value: spec.tolerance.to_string(),
                accepted: "0 <= tolerance < 1".into(),
            });
        }
        let nports = self.ports.len();
        let mut streams = Vec::with_capacity(spec.streams.len());
        let mut ports: Vec<RunPort> = (0..nports).map(|_| RunPort::default()).collect();
        for (i, s) in spec.streams.iter().enumerate() {
            for (what, p) in [("tx_port", s.tx_port), ("rx_port", s.rx_port)] {
                if p >= nports {
                    return Err(GenError::Config {
                        field: format!("stream {i} {what}"),
                        value: p.to_string(),
                        accepted: format!("a port index 0..{nports}"),
                    });
                }
            }
            let id = u16::try_from(i).unwrap_or(u16::MAX);
            let mut b = StreamBuilder::new(id, s)?;
            b.set_unique_base(self.unique_used);
            let sends_compact = b.sends_compact();
            ports[s.tx_port].streams.push(i);
            streams.push(RunStream {
                b,
                next_seq: 0,
                refused: 0,
                tx_bytes: 0,
                an: StreamAnalyzer::new(),
                wrong_port: 0,
                sends_compact,
                iv_start: Vec::new(),
                iv_an: Vec::new(),
            });
        }
        if spec.burst == 0 {
            return Err(GenError::Config {
                field: "burst".into(),
                value: "0".into(),
                accepted: "1 or more frames".into(),
            });
        }

        self.wait_link(spec.link_timeout)?;

        // Per-port intended rate: the port's streams' mean frame size sets fps for bps/percent rates.
        for port in ports.iter_mut() {
            if port.streams.is_empty() {
                continue;
            }
            let mean = port
                .streams
                .iter()
                .map(|&s| streams[s].b.sizes().mean_size())
                .sum::<f64>()
                / port.streams.len() as f64;
            port.intended_fps = spec.rate.fps(mean);
        }

        // Warm-up.
        if !spec.warmup.is_zero() {
            self.progress.set(Phase::Warmup, 0, 0);
            let start = self.clock.now_ns();
            self.phase_start_ns = start;
            for port in ports.iter_mut() {
                port.pacer = Some(
                    Pacer::new(start, port.intended_fps, spec.burst as u64, None)
                        .with_late_threshold(late_threshold_ns(spec, port.intended_fps)),
                );
            }
            let end = start + spec.warmup.as_nanos() as u64;
            self.send_phase(
                &mut ports,
                &mut streams,
                true,
                Some(end),
                spec.stall_timeout,
            );
            let drain_end = self.clock.now_ns() + spec.drain.as_nanos() as u64;
            self.drain(&mut ports, &mut streams, drain_end, false);
            self.advance_unique(&mut streams)?;
            for s in streams.iter_mut() {
                s.next_seq = 0;
                s.refused = 0;
                s.tx_bytes = 0;
                s.an = StreamAnalyzer::new();
                s.wrong_port = 0;
            }
            for port in ports.iter_mut() {
                let (w, st) = (port.rx_warmup, port.rx_stale);
                *port = RunPort {
                    streams: std::mem::take(&mut port.streams),
                    intended_fps: port.intended_fps,
                    rx_warmup: w,
                    rx_stale: st,
                    ..RunPort::default()
                };
            }
        }

        // Measured phase.
        for p in self.ports.iter_mut() {
            p.clear_stats();
        }
        self.progress.set(Phase::Measure, 0, 0);
        let start = self.clock.now_ns();
        self.phase_start_ns = start;
        let (limit, end, intended_ns) = match spec.length {
            TrialLength::Count(n) => (Some(n), None, None),
            TrialLength::Duration(d) => {
                let d_ns = d.as_nanos() as u64;
                (None, Some(start + d_ns), Some(d_ns))
            }
        };
        for port in ports.iter_mut() {
            let lim = match (limit, port.intended_fps, spec.length) {
                (Some(n), _, _) => Some(n),
                (None, Some(fps), TrialLength::Duration(d)) => {
                    Some((fps * d.as_secs_f64()).round() as u64)
                }
                _ => None,
            };
            if let Some(lim) = lim {
                // Unique flows: a phase that would repeat a tuple is refused before it starts.
                for &i in &port.streams {
                    streams[i].b.check_unique(lim)?;
                }
            }
            port.pacer = Some(
                Pacer::new(start, port.intended_fps, spec.burst as u64, lim)
                    .with_late_threshold(late_threshold_ns(spec, port.intended_fps)),
            );
        }
        self.busy_ns = 0;
        self.idle_ns = 0;
        self.iv = None;
        self.iv_late.clear();
        self.rx_first_ns = None;
        self.rx_last_ns = 0;
        self.rx_after_send = 0;
        self.send_done_ns = u64::MAX;
        if let (Some(iv), Some(_)) = (spec.interval, end) {
            let iv_ns = (iv.as_nanos() as u64).max(1);
            self.iv = Some((iv_ns, start + iv_ns));
            self.iv_late.push(0);
            for s in streams.iter_mut() {
                s.iv_start = vec![(0, 0)];
                s.iv_an = vec![StreamAnalyzer::new()];
            }
        }
        let stalled = self.send_phase(&mut ports, &mut streams, false, end, spec.stall_timeout);
        let tx_done = self.clock.now_ns();
        self.send_done_ns = tx_done;

        // Drain.
        let tx_total: u64 = streams.iter().map(|s| s.next_seq).sum();
        self.progress.set(
            Phase::Drain,
            tx_total,
            ports.iter().map(|p| p.rx_ours).sum(),
        );
        let drain_start = self.clock.now_ns();
        let drain_end = drain_start + spec.drain.as_nanos() as u64;
        self.drain(&mut ports, &mut streams, drain_end, true);
        let drain_seconds = (self.clock.now_ns() - drain_start) as f64 / 1e9;
        self.progress
            .set(Phase::Idle, tx_total, ports.iter().map(|p| p.rx_ours).sum());
        self.advance_unique(&mut streams)?;

        let mut report = self.report(
            spec,
            &ports,
            &streams,
            start,
            tx_done,
            intended_ns,
            drain_seconds,
        );
        if stalled {
            report.tester_limited = true;
            report.tester_limited_reasons.push(format!(
                "the ports refused every frame for {:?}; sending stopped early",
                spec.stall_timeout
            ));
        }
        Ok(report)
    }

    /// After a phase: moves the unique-flow tuples past the most any unique stream sent (module
    /// doc), failing when a stream ran past its space.
    fn advance_unique(&mut self, streams: &mut [RunStream]) -> Result<(), GenError> {
        let Some(sent) = streams
            .iter()
            .filter(|s| s.b.is_unique())
            .map(|s| s.next_seq)
            .max()
        else {
            return Ok(());
        };
        let checked: Result<(), GenError> = streams
            .iter()
            .filter(|s| s.b.is_unique())
            .try_for_each(|s| s.b.check_unique(s.next_seq));
        self.unique_used = self.unique_used.saturating_add(sent);
        for s in streams.iter_mut() {
            s.b.set_unique_base(self.unique_used);
        }
        checked
    }

    /// Tuples the unique-flow streams have used so far ([`crate::FlowOrder::Unique`]).
    pub fn unique_tuples_used(&self) -> u64 {
        self.unique_used
    }

    /// At an interval boundary of the measured phase ([`TrialSpec::interval`]): notes where every
    /// stream's sequence numbers and refusals stand and the late slots dropped so far, and starts
    /// the next interval's analysis. The stream is not touched.
    fn interval_boundary(&mut self, now: u64, ports: &[RunPort], streams: &mut [RunStream]) {
        let Some((iv_ns, next)) = self.iv else {
            return;
        };
        if now < next {
            return;
        }
        self.iv = Some((iv_ns, next + iv_ns));
        let late: u64 = ports
            .iter()
            .filter_map(|p| p.pacer.as_ref())
            .map(|q| q.lateness().slots_dropped)
            .sum();
        self.iv_late.push(late);
        for s in streams.iter_mut() {
            s.iv_start.push((s.next_seq, s.refused));
            s.iv_an.push(StreamAnalyzer::new());
        }
    }

    /// The drain: receives until `end` (or, with `until_all_in`, until every frame sent has
    /// arrived), and keeps handing the ports' transmit rings to the kernel meanwhile
    /// ([`Port::poll_control`]). A kernel port (AF_XDP, AF_PACKET) that the path back-pressured
    /// at the end of the send phase still holds frames the generator placed in its transmit ring
    /// (counted as sent): the kernel takes them only when the port kicks it. Without these kicks
    /// they were never transmitted and showed up as unexplained loss (up to a ring's worth,
    /// ~1,800 frames per trial behind a tc tbf shaper; issue 7 item 3).
    fn drain(
        &mut self,
        ports: &mut [RunPort],
        streams: &mut [RunStream],
        end: u64,
        until_all_in: bool,
    ) {
        let mut iter: u32 = 0;
        loop {
            let got = self.poll_rx(ports, streams);
            if got == 0 || iter & 63 == 0 {
                for p in self.ports.iter_mut() {
                    p.poll_control();
                }
            }
            iter = iter.wrapping_add(1);
            let all_in = streams.iter().all(|s| s.an.rx_unique() >= s.next_seq);
            if self.clock.now_ns() >= end || (until_all_in && all_in && got == 0) {
                break;
            }
        }
    }

    /// Receives without sending: until nothing has arrived for `quiet` (and at least `min` has
    /// passed), or `max` has passed. Counts every frame per port; with no streams running, frames
    /// carrying a signature count as foreign (`unknown-stream`). For peers that send their own
    /// traffic (testpmd `txonly`, a capture replay).
    pub fn listen(&mut self, min: Duration, quiet: Duration, max: Duration) -> Vec<PortReport> {
        let mut ports: Vec<RunPort> = (0..self.ports.len()).map(|_| RunPort::default()).collect();
        for p in self.ports.iter_mut() {
            p.clear_stats();
        }
        let start = self.clock.now_ns();
        self.phase_start_ns = start;
        self.busy_ns = 0;
        self.idle_ns = 0;
        let mut last_rx = start;
        let mut iter = 0u32;
        loop {
            let got = self.poll_rx(&mut ports, &mut []);
            let now = self.clock.now_ns();
            if got > 0 {
                last_rx = now;
            }
            let elapsed = now - start;
            if elapsed >= max.as_nanos() as u64
                || (elapsed >= min.as_nanos() as u64 && now - last_rx >= quiet.as_nanos() as u64)
            {
                break;
            }
            iter = iter.wrapping_add(1);
            if iter & 1023 == 0 {
                let rx: u64 = ports.iter().map(|p| p.rx_all).sum();
                self.progress.set(Phase::Drain, 0, rx);
                for p in self.ports.iter_mut() {
                    p.poll_control();
                }
            }
        }
        self.progress
            .set(Phase::Idle, 0, ports.iter().map(|p| p.rx_all).sum());
        let secs = (self.clock.now_ns() - start) as f64 / 1e9;
        let spec = TrialSpec::new(
            Vec::new(),
            Rate::Max,
            TrialLength::Duration(Duration::from_secs_f64(secs)),
        );
        self.report(&spec, &ports, &[], start, start, None, 0.0)
            .ports
    }

    /// Sends until every pacer is finished or `end` passes, polling receive between batches. Returns
    /// true if it stopped because the ports refused everything for `stall` (then some frames were
    /// never sent).
    fn send_phase(
        &mut self,
        ports: &mut [RunPort],
        streams: &mut [RunStream],
        warmup: bool,
        end: Option<u64>,
        stall: Duration,
    ) -> bool {
        let mut iter: u32 = 0;
        let stall_ns = stall.as_nanos() as u64;
        // Since when the ports have refused everything they were offered: set by a fully refused
        // batch, cleared only by a frame sent (waiting for the schedule in between does not
        // clear it, as refused slots are never offered again).
        let mut refusing_since: Option<u64> = None;
        // The previous iteration's start, whether it had work, and the time it spent in throttled
        // transmit calls (busy/idle accounting: waiting for the path is not the generator's work,
        // it counts as time the generator had to spare).
        let mut prev: Option<(u64, bool, u64)> = None;
        // The sending thread's run delay at the last reading (module doc, "held calls"): read at
        // the start and after every slow transmit call only.
        self.waits.begin();
        let mut waited_at = self.waits.waited_ns();
        loop {
            let now = self.clock.now_ns();
            if let Some((t, worked, blocked)) = prev {
                let d = now.saturating_sub(t);
                if worked {
                    let blocked = blocked.min(d);
                    self.busy_ns += d - blocked;
                    self.idle_ns += blocked;
                } else {
                    self.idle_ns += d;
                }
            }
            if end.is_some_and(|e| now >= e) {
                return false;
            }
            if !warmup {
                self.interval_boundary(now, ports, streams);
            }
            if refusing_since.is_some_and(|t| now.saturating_sub(t) > stall_ns) {
                return true;
            }
            let mut all_done = true;
            let mut stalled = false;
            let mut any_sent = false;
            let mut worked = false;
            let mut blocked_ns = 0;
            // `ports[pi]` is re-borrowed after `self.send_batch(pi, ..)`, which an iterator would hold.
            #[allow(clippy::needless_range_loop)]
            for pi in 0..ports.len() {
                if ports[pi].streams.is_empty() {
                    continue;
                }
                let Some(pacer) = ports[pi].pacer.as_mut() else {
                    continue;
                };
                if pacer.finished() {
                    continue;
                }
                all_done = false;
                let dropped_before = pacer.lateness().slots_dropped;
                let threshold_ns = pacer.lateness().threshold_ns;
                let n = pacer.due(now, TX_BATCH as u64) as usize;
                let late = pacer.lateness().slots_dropped - dropped_before;
                let port = &mut ports[pi];
                if late > 0 {
                    // Behind a throttled or held call, or still working off a backlog that one
                    // left while the generator was not away for anything but the path (this poll
                    // came within the threshold of the last one, or the wait in between was for
                    // the CPU's softirq thread: crate::waits): the device's back-pressure.
                    let gap = port.last_due_ns.map_or(u64::MAX, |t| now.saturating_sub(t));
                    let mut away_for_path = false;
                    if port.backlog_blocked && !port.throttled && gap > threshold_ns {
                        let w = self.waits.waited_ns();
                        if let (Some(a), Some(b)) = (waited_at, w) {
                            away_for_path = b.saturating_sub(a).saturating_mul(2) < gap;
                        }
                        waited_at = w;
                    }
                    let blocked = port.throttled
                        || (port.backlog_blocked && (gap <= threshold_ns || away_for_path));
                    if blocked {
                        port.late_blocked += late;
                    }
                    port.backlog_blocked = blocked;
                } else if n < TX_BATCH {
                    // Caught up with the schedule: no backlog left.
                    port.backlog_blocked = false;
                }
                port.last_due_ns = Some(now);
                if n == 0 {
                    continue;
                }
                worked = true;
                let si = ports[pi].streams[ports[pi].rr];
                ports[pi].rr = (ports[pi].rr + 1) % ports[pi].streams.len();
                let call_start = self.clock.now_ns();
                let (built, sent) = self.send_batch(pi, &mut streams[si], n, warmup, now);
                let call_ns = self.clock.now_ns().saturating_sub(call_start);
                // A call slower than half the late threshold that the thread spent on its CPU
                // (its run delay grew by less than half the call since the last reading) was
                // held by the path (module doc, "held calls"); one it waited through was the
                // generator preempted.
                let mut held_ns = 0;
                if call_ns > HELD_CALL_MIN_NS.max(threshold_ns / 2) {
                    let w = self.waits.waited_ns();
                    if let (Some(a), Some(b)) = (waited_at, w) {
                        let waited = b.saturating_sub(a);
                        if waited.saturating_mul(2) < call_ns {
                            held_ns = call_ns - waited;
                        }
                    }
                    waited_at = w;
                }
                let port = &mut ports[pi];
                port.throttled = sent < built || held_ns > 0;
                if sent < built {
                    blocked_ns += call_ns;
                } else {
                    blocked_ns += held_ns;
                }
                if held_ns > 0 {
                    port.held_calls += 1;
                }
                // No retry: refused frames' slots are spent (module doc); frames not built (no
                // buffer) are not sent.
                port.refused += (built - sent) as u64;
                if sent > 0 {
                    let t = self.clock.now_ns();
                    port.tx += sent as u64;
                    port.last_tx_ns = t;
                    if let Some(p) = port.last_send_ns {
                        port.max_gap_ns = port.max_gap_ns.max(t.saturating_sub(p));
                    }
                    port.last_send_ns = Some(t);
                    any_sent = true;
                } else {
                    stalled = true;
                }
            }
            if any_sent {
                refusing_since = None;
            } else if stalled && refusing_since.is_none() {
                refusing_since = Some(now);
            }
            if all_done {
                return false;
            }
            if self.poll_rx(ports, streams) > 0 {
                worked = true;
            }
            prev = Some((now, worked, blocked_ns));
            iter = iter.wrapping_add(1);
            if iter & 63 == 0 {
                let tx: u64 = ports.iter().map(|p| p.tx).sum();
                let rx: u64 = ports.iter().map(|p| p.rx_ours).sum();
                self.progress.set(
                    if warmup {
                        Phase::Warmup
                    } else {
                        Phase::Measure
                    },
                    tx,
                    rx,
                );
                for p in self.ports.iter_mut() {
                    p.poll_control();
                }
            }
        }
    }

    /// Builds up to `n` frames of stream `s`, stamps them and offers them to port `pi`; returns
    /// (frames built, frames the port took). Refused frames are counted in `s.refused` and consume
    /// no sequence number (module doc).
    fn send_batch(
        &mut self,
        pi: usize,
        s: &mut RunStream,
        n: usize,
        warmup: bool,
        now: u64,
    ) -> (usize, usize) {
        self.tx_handles.clear();
        for k in 0..n {
            let seq = s.next_seq + k as u64;
            let len = s.b.wire_len(seq);
            let h = if len <= DATA_SIZE {
                let Some(h) = self.pool.alloc() else { break };
                if !self.pool.set_len(h, len) {
                    self.pool.free(h);
                    break;
                }
                s.b.build(seq, now, warmup, self.pool.data_mut(h));
                h
            } else {
                let buf = &mut self.scratch[..len];
                s.b.build(seq, now, warmup, buf);
                match vecswitch_ports::loopback::packet_from_bytes(&mut self.pool, buf) {
                    Some(h) => h,
                    None => break,
                }
            };
            self.tx_handles.push(h);
        }
        let built = self.tx_handles.len();
        let sent = if built == 0 {
            0
        } else {
            // The transmit timestamp, as close to the send call as the port allows: one reading
            // for the batch, written into every frame built in a single buffer (chained jumbo
            // frames keep their build time, taken a few hundred ns earlier).
            let ts = self.clock.now_ns();
            for (k, &h) in self.tx_handles.iter().enumerate() {
                let seq = s.next_seq + k as u64;
                if s.b.wire_len(seq) <= DATA_SIZE {
                    s.b.restamp(seq, ts, self.pool.data_mut(h));
                }
            }
            self.ports[pi].tx_burst(&mut self.pool, &self.tx_handles)
        };
        self.pool.free_bulk(&self.tx_handles);
        let sent = sent.min(built);
        for k in 0..sent {
            s.tx_bytes += s.b.frame_size(s.next_seq + k as u64) as u64;
        }
        s.next_seq += sent as u64;
        s.refused += (built - sent) as u64;
        (built, sent)
    }

    /// Receives one burst from every port and analyses it; returns frames received.
    fn poll_rx(&mut self, ports: &mut [RunPort], streams: &mut [RunStream]) -> usize {
        let mut total = 0;
        for pi in 0..self.ports.len() {
            self.rx_handles.clear();
            let n = self.ports[pi].rx_burst(&mut self.pool, &mut self.rx_handles, RX_BATCH);
            if n == 0 {
                continue;
            }
            total += n;
            let rx_ns = self.clock.now_ns();
            ports[pi].rx_all += n as u64;
            for &h in &self.rx_handles {
                let hdr = self.pool.header(h);
                let chained = hdr.total_len as usize != hdr.len as usize;
                let len = hdr.total_len as usize;
                ports[pi].rx_all_bytes += len as u64;
                let res = if chained {
                    self.pool.copy_out(h, &mut self.rx_scratch);
                    find_signature(&self.rx_scratch)
                } else {
                    find_signature(self.pool.data(h))
                };
                let port = &mut ports[pi];
                match res {
                    Err(e) => port.foreign[foreign_index(e)] += 1,
                    Ok(sig) if sig.warmup => port.rx_warmup += 1,
                    Ok(sig) => {
                        let tx_ns = match sig.layout {
                            Layout::Full => sig.tx_ns,
                            Layout::Compact => signature::extend_tx_time(sig.tx_ns as u32, rx_ns),
                        };
                        if tx_ns < self.phase_start_ns {
                            port.rx_stale += 1;
                            continue;
                        }
                        let Some(s) = streams.get_mut(sig.stream as usize) else {
                            port.foreign[7] += 1;
                            continue;
                        };
                        if s.b.spec().rx_port != pi {
                            s.wrong_port += 1;
                            continue;
                        }
                        if sig.layout == Layout::Compact && !s.sends_compact {
                            // A stream that only sends full signatures never sends compact ones.
                            port.foreign[7] += 1;
                            continue;
                        }
                        let bits = sig.layout.seq_bits();
                        let seq = signature::extend(sig.seq as u64, bits, s.an.next_expected());
                        // Frame size as RFC 2544 counts it: bytes on the link + FCS.
                        s.an.record(seq, tx_ns, rx_ns, len + crate::size::FCS_LEN, s.next_seq);
                        if !s.iv_an.is_empty() {
                            // Charged to the interval the frame was sent in.
                            let i = s.iv_start.partition_point(|&(b, _)| b <= seq).max(1) - 1;
                            s.iv_an[i].record(
                                seq,
                                tx_ns,
                                rx_ns,
                                len + crate::size::FCS_LEN,
                                s.next_seq,
                            );
                        }
                        port.rx_ours += 1;
                        // The measured phase's receive window (warm-up frames never get here).
                        self.rx_first_ns.get_or_insert(rx_ns);
                        self.rx_last_ns = rx_ns;
                        if rx_ns > self.send_done_ns {
                            self.rx_after_send += 1;
                        }
                    }
                }
            }
            self.pool.free_bulk(&self.rx_handles);
        }
        total
    }

    #[allow(clippy::too_many_arguments)]
    fn report(
        &self,
        spec: &TrialSpec,
        ports: &[RunPort],
        streams: &[RunStream],
        start: u64,
        tx_done: u64,
        intended_ns: Option<u64>,
        drain_seconds: f64,
    ) -> TrialReport {
        let mut reasons = Vec::new();
        let stream_reports: Vec<StreamReport> = streams
            .iter()
            .map(|s| {
                let rx = s.an.report();
                let lost = s.next_seq.saturating_sub(rx.rx_unique);
                StreamReport {
                    id: s.b.id(),
                    name: s.b.spec().name.clone(),
                    tx_port: s.b.spec().tx_port,
                    rx_port: s.b.spec().rx_port,
                    sizes: s.b.sizes().sizes().to_vec(),
                    sizes_raised: s.b.raised().to_vec(),
                    tx: s.next_seq,
                    tx_refused: s.refused,
                    tx_bytes: s.tx_bytes,
                    rx,
                    rx_wrong_port: s.wrong_port,
                    lost,
                    loss_ratio: if s.next_seq == 0 {
                        0.0
                    } else {
                        lost as f64 / s.next_seq as f64
                    },
                }
            })
            .collect();
        let mut port_reports = Vec::new();
        let (busy, idle) = (self.busy_ns as f64 / 1e9, self.idle_ns as f64 / 1e9);
        let idle_share = if busy + idle > 0.0 {
            idle / (busy + idle)
        } else {
            0.0
        };
        let mut back_pressured = false;
        for (i, p) in ports.iter().enumerate() {
            let last = p.last_tx_ns.max(start);
            let mut secs = (last - start) as f64 / 1e9;
            let mut intended_count = None;
            if let (TrialLength::Count(n), None) = (spec.length, p.intended_fps) {
                // Unpaced but counted (back-to-back bursts): the count is the intent.
                intended_count = Some(n);
            }
            if let Some(fps) = p.intended_fps {
                let intended_secs = match spec.length {
                    TrialLength::Count(n) => n as f64 / fps,
                    TrialLength::Duration(_) => intended_ns.unwrap_or(0) as f64 / 1e9,
                };
                intended_count = Some(match spec.length {
                    TrialLength::Count(n) => n,
                    TrialLength::Duration(d) => (fps * d.as_secs_f64()).round() as u64,
                });
                secs = secs.max(intended_secs);
            }
            let tx_bytes: u64 = p.streams.iter().map(|&s| streams[s].tx_bytes).sum();
            let offered_fps = if secs > 0.0 { p.tx as f64 / secs } else { 0.0 };
            let offered_bps = if secs > 0.0 {
                tx_bytes as f64 * 8.0 / secs
            } else {
                0.0
            };
            let mut lateness = p.pacer.as_ref().map(|q| q.lateness()).unwrap_or_default();
            lateness.max_gap_ns = p.max_gap_ns;
            lateness.slots_dropped_blocked = p.late_blocked;
            // Late slots dropped while the path held the port's transmit ring full are the
            // device's back-pressure; only the others are the generator's own lateness.
            let descheduled = lateness.slots_dropped - p.late_blocked;
            let intended = if p.streams.is_empty() {
                None
            } else {
                intended_count
            };
            let attempted = p.tx + p.refused;
            let not_sent = intended.map_or(0, |n| n.saturating_sub(attempted));
            let name = self.ports[i].name();
            if let (Some(count), false) = (intended, p.streams.is_empty()) {
                let tol = count as f64 * spec.tolerance;
                // RFC 2544 §26.1 offers the intended load or says it did not; each shortfall named.
                if descheduled as f64 > tol {
                    reasons.push(format!(
                        "tester late: port {i} ({name}) {:.3} ms behind its schedule at worst, \
                         {descheduled} slots dropped in {} pauses ({:.3} ms beyond the {} µs \
                         threshold)",
                        lateness.max_behind_ns as f64 / 1e6,
                        lateness.late_events,
                        lateness.time_behind_ns as f64 / 1e6,
                        lateness.threshold_ns / 1000,
                    ));
                }
                let other = not_sent.saturating_sub(lateness.slots_dropped);
                if other as f64 > tol {
                    reasons.push(format!(
                        "port {i} ({name}) attempted {attempted} of {count} intended frames \
                         ({other} never reached: stall, end of trial or no buffer)"
                    ));
                }
                let throttled = p.refused + p.late_blocked;
                if throttled as f64 > tol && spec.rate != Rate::Max {
                    if idle_share >= BACKPRESSURE_IDLE_MIN {
                        back_pressured = true;
                    } else {
                        reasons.push(format!(
                            "tester CPU: port {i} ({name}) refused {} frames (and {} slots were \
                             late behind a throttled send) while the generator had no time to \
                             spare ({:.1} % of its send loop idle)",
                            p.refused,
                            p.late_blocked,
                            idle_share * 100.0
                        ));
                    }
                }
            }
            let foreign: u64 = p.foreign.iter().sum();
            port_reports.push(PortReport {
                index: i,
                name: self.ports[i].name().to_string(),
                tx: p.tx,
                rx_all: p.rx_all,
                rx_all_bytes: p.rx_all_bytes,
                rx_ours: p.rx_ours,
                foreign,
                foreign_reasons: FOREIGN_REASONS
                    .iter()
                    .zip(p.foreign.iter())
                    .filter(|(_, &n)| n > 0)
                    .map(|(r, &n)| (r.to_string(), n))
                    .collect(),
                rx_warmup: p.rx_warmup,
                rx_stale: p.rx_stale,
                tx_refused: p.refused,
                tx_held_calls: p.held_calls,
                intended,
                not_sent,
                lateness,
                port_stats: self.ports[i].stats(),
                kernel_tx_dropped: self.ports[i]
                    .error_counters()
                    .iter()
                    .filter(|(name, _)| *name == vecswitch_ports::KERNEL_INTERFACE_TX_DROPPED)
                    .map(|(_, n)| n)
                    .sum(),
                intended_fps: if p.streams.is_empty() {
                    None
                } else {
                    p.intended_fps
                },
                offered_fps,
                offered_bps,
            });
        }
        let tx: u64 = stream_reports.iter().map(|s| s.tx).sum();
        let rx: u64 = stream_reports.iter().map(|s| s.rx.rx_unique).sum();
        let lost: u64 = stream_reports.iter().map(|s| s.lost).sum();
        let sending: Vec<&PortReport> = port_reports
            .iter()
            .filter(|p| !ports[p.index].streams.is_empty())
            .collect();
        let intended = if sending.is_empty() {
            None
        } else {
            sending.iter().map(|p| p.intended).sum::<Option<u64>>()
        };
        let mut lateness = Lateness::default();
        for p in &sending {
            lateness.merge(&p.lateness);
        }
        let tx_refused = sending.iter().map(|p| p.tx_refused).sum();
        let not_sent = sending.iter().map(|p| p.not_sent).sum();
        TrialReport {
            rate: spec.rate,
            length: spec.length,
            tx,
            rx,
            lost,
            loss_ratio: if tx == 0 {
                0.0
            } else {
                lost as f64 / tx as f64
            },
            duplicated: stream_reports.iter().map(|s| s.rx.duplicated).sum(),
            reordered: stream_reports.iter().map(|s| s.rx.reordered).sum(),
            foreign: port_reports.iter().map(|p| p.foreign).sum(),
            streams: stream_reports,
            ports: port_reports,
            tx_seconds: (tx_done.saturating_sub(start)) as f64 / 1e9,
            drain_seconds,
            rx_first_seconds: self
                .rx_first_ns
                .map_or(0.0, |f| f.saturating_sub(start) as f64 / 1e9),
            rx_last_seconds: self
                .rx_first_ns
                .map_or(0.0, |_| self.rx_last_ns.saturating_sub(start) as f64 / 1e9),
            rx_after_send: self.rx_after_send,
            intended,
            tx_refused,
            not_sent,
            lateness,
            busy_seconds: busy,
            idle_seconds: idle,
            back_pressured,
            tester_limited: !reasons.is_empty(),
            tester_limited_reasons: reasons,
            intervals: self.interval_reports(streams, lateness.slots_dropped),
        }
    }

    fn interval_reports(&self, streams: &[RunStream], total_late: u64) -> Vec<IntervalReport> {
        let n = streams.first().map_or(0, |s| s.iv_an.len());
        (0..n)
            .map(|i| {
                let late_at = |k: usize| self.iv_late.get(k).copied().unwrap_or(total_late);
                IntervalReport {
                    index: i,
                    slots_dropped: late_at(i + 1).saturating_sub(late_at(i)),
                    streams: streams
                        .iter()
                        .map(|s| {
                            let (seq0, ref0) = s.iv_start[i];
                            let (seq1, ref1) = s
                                .iv_start
                                .get(i + 1)
                                .copied()
                                .unwrap_or((s.next_seq, s.refused));
                            IntervalStream {
                                first_seq: seq0,
                                tx: seq1 - seq0,
                                tx_refused: ref1 - ref0,
                                rx: s.iv_an[i].report(),
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    //! Synthetic timelines on a simulated clock: a shaping "device" that throttles its sender the
    //! way a tc tbf shaper behind a veth throttles an AF_XDP/AF_PACKET socket (METHODOLOGY.md,
    //! "Back-pressure"), to check the receive window and the attribution of late slots.

    use super::*;
    use std::collections::VecDeque;
    use vecswitch_ports::loopback::{self, packet_from_bytes, LoopbackPort};

    /// Simulated time shared by the generator's clock and the device: `step` ns per clock read.
    struct SimClock {
        t: Arc<AtomicU64>,
        step: u64,
    }

    impl Clock for SimClock {
        fn now_ns(&self) -> u64 {
            self.t.fetch_add(self.step, Ordering::Relaxed)
        }
    }

    /// Port 0 of the generator: the sender's socket budget (`cap` frames) in front of a shaper
    /// that lets `fps` frames/s through to port 1. A full budget refuses the send; with
    /// `block_ns` a refused send also costs the caller that much time (the kernel running the
    /// device's path in the sender's context).
    struct Shaper {
        out: LoopbackPort,
        queue: VecDeque<Vec<u8>>,
        cap: usize,
        fps: f64,
        t: Arc<AtomicU64>,
        t0: Option<u64>,
        passed: u64,
        block_ns: u64,
        /// A full budget holds the send instead of refusing it: the call returns when the shaper
        /// has made room (the kernel running a tc shaper's dequeue in the sender's `sendto`).
        hold: bool,
        /// While holding, the sender was preempted rather than on its CPU: the held time is
        /// added to this run delay.
        waited: Option<Arc<AtomicU64>>,
    }

    impl Shaper {
        fn release(&mut self, pool: &mut Pool) {
            let now = self.t.load(Ordering::Relaxed);
            let t0 = *self.t0.get_or_insert(now);
            let due = ((now - t0) as f64 * self.fps / 1e9) as u64;
            while self.passed < due {
                let Some(f) = self.queue.pop_front() else {
                    // An idle shaper does not save up credit beyond its bucket.
                    self.passed = due;
                    break;
                };
                let h = packet_from_bytes(pool, &f).unwrap();
                assert_eq!(self.out.tx_burst(pool, &[h]), 1);
                pool.free(h);
                self.passed += 1;
            }
        }
    }

    impl Port for Shaper {
        fn name(&self) -> &str {
            "shaper"
        }
        fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
            self.release(pool);
            self.out.rx_burst(pool, out, max)
        }
        fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
            self.release(pool);
            while self.hold && self.queue.len() + pkts.len() > self.cap {
                let step = (1e9 / self.fps) as u64;
                self.t.fetch_add(step, Ordering::Relaxed);
                if let Some(w) = &self.waited {
                    w.fetch_add(step, Ordering::Relaxed);
                }
                self.release(pool);
            }
            let n = pkts.len().min(self.cap - self.queue.len());
            for &h in &pkts[..n] {
                let mut v = Vec::new();
                pool.copy_out(h, &mut v);
                self.queue.push_back(v);
            }
            if n < pkts.len() {
                self.t.fetch_add(self.block_ns, Ordering::Relaxed);
            }
            n
        }
        fn poll_control(&mut self) {
            // The kick that hands the ring to the kernel: the shaper needs a pool to build
            // frames, which it gets on the next rx/tx call (the drain polls rx every pass).
        }
        fn stats(&self) -> PortStats {
            self.out.stats()
        }
        fn clear_stats(&mut self) {
            self.out.clear_stats()
        }
        fn link(&self) -> LinkState {
            self.out.link()
        }
    }

    fn shaped(cap: usize, fps: f64, block_ns: u64, step: u64) -> Generator {
        shaped_with(cap, fps, block_ns, step, false, false)
    }

    /// The simulated run delay of the sending thread.
    struct SimWaits(Arc<AtomicU64>);

    impl WaitClock for SimWaits {
        fn begin(&mut self) {}
        fn waited_ns(&mut self) -> Option<u64> {
            Some(self.0.load(Ordering::Relaxed))
        }
    }

    fn shaped_with(
        cap: usize,
        fps: f64,
        block_ns: u64,
        step: u64,
        hold: bool,
        preempted: bool,
    ) -> Generator {
        let (a, b) = loopback::pair_with_capacity("a", "b", 1 << 16).unwrap();
        let t = Arc::new(AtomicU64::new(0));
        let waited = Arc::new(AtomicU64::new(0));
        let dev = Shaper {
            out: a,
            queue: VecDeque::new(),
            cap,
            fps,
            t: Arc::clone(&t),
            t0: None,
            passed: 0,
            block_ns,
            hold,
            waited: preempted.then(|| Arc::clone(&waited)),
        };
        Generator::new(vec![Box::new(dev), Box::new(b)])
            .unwrap()
            .with_clock(Box::new(SimClock { t, step }))
            .with_waits(Box::new(SimWaits(waited)))
    }

    fn spec(fps: f64, ms: u64) -> TrialSpec {
        let mut s = TrialSpec::new(
            vec![StreamSpec::ipv4(0, 1)],
            Rate::Pps(fps),
            TrialLength::Duration(Duration::from_millis(ms)),
        );
        s.drain = Duration::from_millis(100);
        s
    }

    #[test]
    fn a_throttled_trial_is_received_over_a_window_longer_than_the_send_phase() {
        // 37.5 kfps offered for 200 ms to a 25 kfps shaper behind a 256-frame budget: the budget
        // still holds ~256 frames when the send phase ends; they cross in the next ~10 ms.
        let mut g = shaped(256, 25_000.0, 0, 100);
        let r = g.run_trial(&spec(37_500.0, 200)).unwrap();
        assert!(r.back_pressured, "{:?}", r.tester_limited_reasons);
        assert_eq!(r.rx, r.tx, "nothing lost inside the shaper");
        assert!(r.rx_after_send >= 250, "{}", r.rx_after_send);
        let window = r.rx_last_seconds - r.rx_first_seconds;
        assert!(
            window > r.tx_seconds + 0.009,
            "{window} vs {}",
            r.tx_seconds
        );
        // Over the send phase the rate reads ~5 % high (the bug of issue 7 item 1); over the
        // receive window it is the shaper's.
        let over_send = r.rx as f64 / r.tx_seconds;
        let over_window = r.rx as f64 / window;
        assert!(over_send > 26_000.0, "{over_send}");
        assert!(
            (over_window - 25_000.0).abs() < 25_000.0 * 0.005,
            "{over_window}"
        );
    }

    #[test]
    fn a_device_at_the_offered_rate_returns_the_frames_over_the_send_phase() {
        let mut g = shaped(256, 25_000.0, 0, 100);
        let r = g.run_trial(&spec(20_000.0, 200)).unwrap();
        assert!(!r.back_pressured && r.tx_refused == 0, "{r:?}");
        assert_eq!((r.tx, r.rx), (4_000, 4_000));
        let window = r.rx_last_seconds - r.rx_first_seconds;
        assert!(
            (window - r.tx_seconds).abs() < 0.001,
            "{window} {}",
            r.tx_seconds
        );
        assert!(r.rx_after_send <= 2, "{}", r.rx_after_send);
    }

    #[test]
    fn late_slots_behind_a_blocked_send_are_back_pressure_not_descheduling() {
        // Every refused send costs the sender 1 ms (the kernel runs the shaper's path in its
        // context): the slots that fall due meanwhile are dropped as late, and counted as the
        // device's back-pressure, not as the generator being descheduled.
        let mut g = shaped(256, 25_000.0, 1_000_000, 100);
        let r = g.run_trial(&spec(37_500.0, 200)).unwrap();
        let l = r.lateness;
        assert!(l.slots_dropped > 0, "{l:?}");
        assert_eq!(l.slots_dropped_blocked, l.slots_dropped, "{l:?}");
        assert_eq!(l.slots_dropped_descheduled(), 0);
        assert!(
            !r.tester_limited_reasons
                .iter()
                .any(|m| m.starts_with("tester late")),
            "{:?}",
            r.tester_limited_reasons
        );
        assert!(r.back_pressured, "{r:?}");
        // Without refusals, the same late slots are the generator's own (a fast device, and a
        // sender that is simply too slow for 1 Mfps on a clock moving 20 µs per read).
        let mut g = shaped(1 << 15, 2e6, 1_000_000, 20_000);
        let r = g.run_trial(&spec(1e6, 10)).unwrap();
        let l = r.lateness;
        assert!(l.slots_dropped > 0 && l.slots_dropped_blocked == 0, "{l:?}");
        assert!(r
            .tester_limited_reasons
            .iter()
            .any(|m| m.starts_with("tester late")));
    }

    #[test]
    fn a_send_the_path_holds_is_back_pressure_without_a_refusal() {
        // Issue 25: a tbf shaper behind a veth keeps the sender in `sendto` while it drains
        // (nothing is refused, the socket budget never fills): asked 37.5 kfps, the generator
        // sends the shaper's 25 kfps, every late slot behind a held call.
        let mut g = shaped_with(256, 25_000.0, 0, 100, true, false);
        let r = g.run_trial(&spec(37_500.0, 200)).unwrap();
        let l = r.lateness;
        assert_eq!(r.tx_refused, 0, "{r:?}");
        assert!(r.ports[0].tx_held_calls > 0, "{:?}", r.ports[0]);
        assert!(l.slots_dropped > 2_000, "{l:?}");
        assert!(
            l.slots_dropped_descheduled() * 100 < l.slots_dropped,
            "{l:?}"
        );
        assert!(r.back_pressured, "{:?}", r.tester_limited_reasons);
        assert!(
            !r.tester_limited_reasons
                .iter()
                .any(|m| m.starts_with("tester late")),
            "{:?}",
            r.tester_limited_reasons
        );
        let window = r.rx_last_seconds - r.rx_first_seconds;
        let fps = r.rx as f64 / window.max(r.tx_seconds);
        assert!((fps - 25_000.0).abs() < 25_000.0 * 0.02, "{fps}");
        // At "line rate" (1 Mfps asked of the same 25 kfps path): the same.
        let mut g = shaped_with(256, 25_000.0, 0, 100, true, false);
        let r = g.run_trial(&spec(1e6, 100)).unwrap();
        let l = r.lateness;
        assert!(
            l.slots_dropped_descheduled() * 100 < l.slots_dropped,
            "{l:?}"
        );
        assert!(r.back_pressured, "{:?}", r.tester_limited_reasons);
    }

    #[test]
    fn a_slow_send_the_generator_was_preempted_in_is_its_own_lateness() {
        // The same timeline, but the sending thread waited for its CPU through the slow calls:
        // the generator was late, the device did not hold it.
        let mut g = shaped_with(256, 25_000.0, 0, 100, true, true);
        let r = g.run_trial(&spec(37_500.0, 200)).unwrap();
        let l = r.lateness;
        assert_eq!(r.ports[0].tx_held_calls, 0, "{:?}", r.ports[0]);
        assert!(l.slots_dropped > 0 && l.slots_dropped_blocked == 0, "{l:?}");
        assert!(!r.back_pressured, "{r:?}");
        assert!(r
            .tester_limited_reasons
            .iter()
            .any(|m| m.starts_with("tester late")));
    }
}
