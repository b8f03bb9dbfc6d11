//! [`GenMeasurer`]: the lab's [`Measurer`] backed by the real traffic generator on a topology's
//! generator ports.
//!
//! Each [`Measurer::trial`] becomes one [`Generator::run_trial`]: the procedure's [`Load`] is the
//! total over all streams, so each transmitting port gets `load / transmitting ports` (the
//! generator's [`Rate`] is per port). The [`TrialReport`] maps onto the lab's [`TrialResult`]:
//!
//! | TrialResult | from the TrialReport |
//! |---|---|
//! | `offered_frames` | `tx` (frames actually sent in the measured phase) |
//! | `received_frames` | Σ streams' `rx_unique` (duplicates do not hide loss) |
//! | `tester_limited` | the report's `tester_limited` **or** offered < intended × (1 − tolerance) (lab's rule, tolerance 0.1 % unless set) — except on memif when the DUT refused frames (below) |
//! | `latency` | the streams' latency combined with [`LatencyStats::combine`] (streams with samples) |
//! | `actual_duration` | `tx_seconds + drain_seconds` |
//!
//! Loss is counted against offered frames (RFC 2544 §26.3, RFC 1242 §3.6) and a tester-limited
//! trial is never DUT loss (DESIGN.md). On memif the generator's transmit ring is the DUT's receive
//! ring: when the DUT does not drain it the generator's frames are refused (back-pressure). A NIC
//! would drop them, so for memif testbeds ([`Judging::backpressure_is_dut`]) frames the generator
//! could not place after a refusal count as offered and lost, and the trial is not tester-limited. Every raw report is kept ([`GenMeasurer::reports`]) for
//! the results' provenance. Between trials the measurer checks that the DUT and VNF processes still
//! run and that no stop (Ctrl-C) was requested.

use std::collections::BTreeSet;
use std::time::Duration;

use vecswitch_gen::{Generator, Latency, Rate, StreamSpec, TrialLength, TrialReport, TrialSpec};
use vecswitch_lab::{BurstResult, LabError, LatencyStats, Load, Measurer, TrialResult};
use vecswitch_ports::Port;

use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::topology::Testbed;

/// The real generator as a [`Measurer`].
pub struct GenMeasurer<'a> {
    gen: Generator,
    streams: Vec<StreamSpec>,
    warmup: Duration,
    drain: Duration,
    testbed: Option<&'a Testbed>,
    reports: Vec<TrialReport>,
    judging: Judging,
}

impl std::fmt::Debug for GenMeasurer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenMeasurer")
            .field("gen", &self.gen)
            .field("streams", &self.streams.len())
            .field("reports", &self.reports.len())
            .finish()
    }
}

/// The default streams: IPv4/UDP frames of `frame_size` bytes (FCS included) from port 0 to 1,
/// and back from 1 to 0 when `bidirectional` (VSPERF's default traffic).
pub fn default_streams(frame_size: u16, bidirectional: bool) -> Vec<StreamSpec> {
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = vecswitch_gen::SizeSpec::Fixed(frame_size);
    let mut v = vec![s.clone()];
    if bidirectional {
        v.push(s.reversed());
    }
    v
}

/// Like [`default_streams`] for any size specification, e.g. a mix (`SizeSpec::imix()`).
pub fn streams_for(size: &vecswitch_gen::SizeSpec, bidirectional: bool) -> Vec<StreamSpec> {
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = size.clone();
    let mut v = vec![s.clone()];
    if bidirectional {
        v.push(s.reversed());
    }
    v
}

fn map_latency(l: &Latency) -> LatencyStats {
    LatencyStats {
        min_ns: l.min_ns as f64,
        avg_ns: l.avg_ns,
        max_ns: l.max_ns as f64,
        p50_ns: l.p50_ns as f64,
        p90_ns: l.p90_ns as f64,
        p99_ns: l.p99_ns as f64,
        p99_9_ns: l.p99_9_ns as f64,
        p99_99_ns: l.p99_99_ns as f64,
        jitter_mean_ns: l.jitter_avg_ns,
        jitter_max_ns: l.jitter_max_ns as f64,
        samples: l.samples,
    }
}

/// How a trial report's shortfalls are judged ([`trial_result_with`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judging {
    /// Relative shortfall of offered frames tolerated before a trial is tester-limited
    /// (0.001 = the lab's 99.9 % rule).
    pub tolerance: f64,
    /// The generator's transmit ring is the DUT's receive ring (memif): frames the DUT refused
    /// (ring full) are the DUT's loss, as a NIC would drop them, not the tester's limit.
    pub backpressure_is_dut: bool,
}

impl Default for Judging {
    fn default() -> Judging {
        Judging {
            tolerance: 1.0 - vecswitch_lab::measurer::TESTER_LIMIT_TOLERANCE,
            backpressure_is_dut: false,
        }
    }
}

/// Maps a generator report onto the lab's trial result (see the module doc's table).
pub fn trial_result(load: Load, duration: Duration, r: &TrialReport) -> TrialResult {
    trial_result_with(load, duration, r, Judging::default())
}

/// [`trial_result`] with explicit [`Judging`]. With `backpressure_is_dut` and frames refused by
/// the DUT's ring, the frames the generator could not place count as offered and lost (offered =
/// max(sent, intended)) and the trial is not tester-limited: a DUT that cannot drain its receive
/// ring fails the load, as RFC 2544 §26.1 counts frames a device fails to forward. Otherwise a
/// trial is tester-limited when the generator says so or offered < intended × (1 − tolerance).
pub fn trial_result_with(
    load: Load,
    duration: Duration,
    r: &TrialReport,
    j: Judging,
) -> TrialResult {
    let received: u64 = r.streams.iter().map(|s| s.rx.rx_unique).sum();
    let actual = Duration::from_secs_f64((r.tx_seconds + r.drain_seconds).max(0.0));
    let refused: u64 = r.ports.iter().map(|p| p.tx_refused).sum();
    let mut t = TrialResult::new(load, duration, r.tx, received, actual);
    if j.backpressure_is_dut && refused > 0 {
        t.offered_frames = r.tx.max(t.intended_frames);
        t.tester_limited = false;
    } else {
        t.tester_limited =
            (r.tx as f64) < t.intended_frames as f64 * (1.0 - j.tolerance) || r.tester_limited;
    }
    let lat: Vec<LatencyStats> = r
        .streams
        .iter()
        .filter(|s| s.rx.latency.samples > 0)
        .map(|s| map_latency(&s.rx.latency))
        .collect();
    t.latency = LatencyStats::combine(&lat);
    t
}

impl<'a> GenMeasurer<'a> {
    /// A measurer on `ports` sending `streams`.
    pub fn new(ports: Vec<Box<dyn Port>>, streams: Vec<StreamSpec>) -> Result<GenMeasurer<'a>> {
        let gen = Generator::new(ports).map_err(|e| Error::Invalid {
            field: "generator ports",
            value: e.to_string(),
            expected: "1 or 2 ports".into(),
        })?;
        Ok(GenMeasurer {
            gen,
            streams,
            warmup: Duration::ZERO,
            drain: Duration::from_millis(100),
            testbed: None,
            reports: Vec::new(),
            judging: Judging::default(),
        })
    }

    /// A measurer on `ports` (from [`Testbed::open_generator_ports`], opened before the DUT
    /// started) that pins the calling thread (which runs the trials) to the generator CPU and
    /// checks the testbed's processes before every trial.
    pub fn for_testbed(
        tb: &'a Testbed,
        ports: Vec<Box<dyn Port>>,
        streams: Vec<StreamSpec>,
    ) -> Result<GenMeasurer<'a>> {
        pin_current_thread(tb.wiring().cores.generator)?;
        let mut m = GenMeasurer::new(ports, streams)?;
        m.testbed = Some(tb);
        m.judging.backpressure_is_dut = tb.wiring().topology.link() == crate::topology::Link::Memif;
        Ok(m)
    }

    /// Relative shortfall of offered frames tolerated before a trial is tester-limited (default
    /// 0.001). A shared machine that stalls the generator for a few milliseconds per second needs
    /// more; the offered frames are what loss is counted against either way.
    pub fn tolerance(mut self, t: f64) -> Self {
        self.judging.tolerance = t;
        self
    }

    /// Whether frames refused by the ports are the DUT's loss (memif; see [`trial_result_with`]).
    /// [`GenMeasurer::for_testbed`] sets it from the topology.
    pub fn backpressure_is_dut(mut self, yes: bool) -> Self {
        self.judging.backpressure_is_dut = yes;
        self
    }

    /// How shortfalls are judged (see [`trial_result_with`]).
    pub fn judging(&self) -> Judging {
        self.judging
    }

    /// Traffic sent before each measured phase (MAC learning, caches); not counted.
    pub fn warmup(mut self, d: Duration) -> Self {
        self.warmup = d;
        self
    }

    /// Receive-only time after the last frame before loss is counted.
    pub fn drain(mut self, d: Duration) -> Self {
        self.drain = d;
        self
    }

    /// Every raw generator report so far, in order.
    pub fn reports(&self) -> &[TrialReport] {
        &self.reports
    }

    /// The testbed, if the measurer was made with [`GenMeasurer::for_testbed`].
    pub fn testbed(&self) -> Option<&Testbed> {
        self.testbed
    }

    fn tx_ports(&self) -> usize {
        self.streams
            .iter()
            .map(|s| s.tx_port)
            .collect::<BTreeSet<_>>()
            .len()
            .max(1)
    }

    fn before_trial(&mut self, load_fps: f64) -> Result<(), LabError> {
        if crate::signal::stop_requested() {
            return Err(LabError::Trial {
                load_fps,
                reason: "stop requested (signal)".into(),
            });
        }
        if let Some(tb) = self.testbed {
            tb.check_alive().map_err(|e| LabError::Trial {
                load_fps,
                reason: e.to_string(),
            })?;
        }
        Ok(())
    }

    fn run(&mut self, spec: &TrialSpec, load_fps: f64) -> Result<TrialReport, LabError> {
        let r = self.gen.run_trial(spec).map_err(|e| LabError::Trial {
            load_fps,
            reason: e.to_string(),
        })?;
        self.reports.push(r.clone());
        Ok(r)
    }
}

impl Measurer for GenMeasurer<'_> {
    fn trial(&mut self, load: Load, duration: Duration) -> Result<TrialResult, LabError> {
        self.before_trial(load.fps)?;
        if load.fps <= 0.0 || !load.fps.is_finite() || duration.is_zero() {
            // Nothing to offer: an empty trial, not an error of the DUT.
            return Ok(TrialResult::new(load, duration, 0, 0, Duration::ZERO));
        }
        let per_port = load.fps / self.tx_ports() as f64;
        let mut spec = TrialSpec::new(
            self.streams.clone(),
            Rate::Pps(per_port),
            TrialLength::Duration(duration),
        );
        spec.warmup = self.warmup;
        spec.drain = self.drain;
        spec.tolerance = self.judging.tolerance;
        let r = self.run(&spec, load.fps)?;
        Ok(trial_result_with(load, duration, &r, self.judging))
    }

    /// Sends `frames` split evenly over the transmitting ports (rounded down to a multiple of
    /// their count, at least one per port) at the generator's maximum rate (RFC 9004 §5.3).
    fn burst(&mut self, frames: u64) -> Result<BurstResult, LabError> {
        // A burst has no intended rate (line rate); errors report it as load 0 and say "burst".
        self.before_trial(0.0).map_err(|e| burst_error(frames, e))?;
        let n = self.tx_ports() as u64;
        let per_port = (frames / n).max(1);
        let mut spec = TrialSpec::new(
            self.streams.clone(),
            Rate::Max,
            TrialLength::Count(per_port),
        );
        spec.warmup = self.warmup;
        spec.drain = self.drain;
        let r = self.run(&spec, 0.0).map_err(|e| burst_error(frames, e))?;
        let intended = per_port * n;
        let received: u64 = r.streams.iter().map(|s| s.rx.rx_unique).sum();
        // The burst's send time is the measured phase's (first frame to last frame placed):
        // RFC 9004's procedure compares the rate it gives with the line rate it assumes.
        let mut b = BurstResult::new(
            intended,
            r.tx,
            received,
            Duration::from_secs_f64(r.tx_seconds.max(0.0)),
        );
        b.tester_limited |= r.tester_limited;
        Ok(b)
    }
}

fn burst_error(frames: u64, e: LabError) -> LabError {
    match e {
        LabError::Trial { load_fps, reason } => LabError::Trial {
            load_fps,
            reason: format!("burst of {frames} frames: {reason}"),
        },
        other => other,
    }
}

/// Pins the calling thread to `cpu` (the generator runs on the thread that calls the trials).
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).map_err(|source| Error::Sys {
        what: format!("CPU {cpu} for the generator"),
        source,
    })?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(|source| {
        Error::Sys {
            what: format!("pinning the generator thread to CPU {cpu}"),
            source,
        }
    })
}

/// The placement record of the generator: this process, with the CPUs the calling thread may use.
pub fn generator_placement() -> PlacedProcess {
    let cpus = std::fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|l| l.trim().to_string())
        })
        .into_iter()
        .collect();
    PlacedProcess {
        role: "generator".into(),
        name: std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "generator".into()),
        pid: std::process::id(),
        cpus,
        note: "generator thread of this process".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vecswitch_ports::loopback;

    #[test]
    fn refused_frames_are_dut_loss_on_backpressure_links() {
        // A tiny receive queue refuses most of every 32-frame batch: back-pressure.
        let (a, b) = loopback::pair_with_capacity("a", "b", 4).unwrap();
        let mut m = GenMeasurer::new(vec![Box::new(a), Box::new(b)], default_streams(64, false))
            .unwrap()
            .backpressure_is_dut(true);
        let (load, d) = (Load::fps(2e6), Duration::from_millis(200));
        let t = m.trial(load, d).unwrap();
        let r = m.reports()[0].clone();
        let refused: u64 = r.ports.iter().map(|p| p.tx_refused).sum();
        assert!(refused > 0, "the 4-frame queue must refuse frames");
        // Judged as back-pressure: not tester-limited, the unplaced frames count as offered.
        assert!(!t.tester_limited, "{t:?}");
        assert_eq!(t.offered_frames, r.tx.max(t.intended_frames));
        assert!(t.offered_frames >= t.received_frames);
        // The same report judged as a tester's link (veth): tester-limited, offered = sent.
        let v = trial_result(load, d, &r);
        assert!(v.tester_limited);
        assert_eq!(v.offered_frames, r.tx);
    }

    #[test]
    fn tolerance_decides_a_small_shortfall() {
        let (a, b) = loopback::pair("a", "b");
        let mut m =
            GenMeasurer::new(vec![Box::new(a), Box::new(b)], default_streams(64, false)).unwrap();
        let (load, d) = (Load::fps(10_000.0), Duration::from_millis(100));
        m.trial(load, d).unwrap();
        let mut r = m.reports()[0].clone();
        // Pretend 0.5 % of the intended frames were not sent, and the generator did not object.
        let intended = load.frames_in(d.as_secs_f64());
        r.tx = intended - intended / 200;
        r.tester_limited = false;
        let strict = Judging::default();
        let loose = Judging {
            tolerance: 0.01,
            backpressure_is_dut: false,
        };
        assert!(trial_result_with(load, d, &r, strict).tester_limited);
        assert!(!trial_result_with(load, d, &r, loose).tester_limited);
    }
}
