//! Offered load and pacing: [`Rate`] (pps, bps, percent of a nominal [`LinkSpeed`], or unlimited),
//! resolved to frames per second by [`Rate::fps`]; the [`Pacer`] that says how many frames are due at
//! a given time; the [`Clock`] it reads ([`MonoClock`] in real runs, a fake clock in tests).
//!
//! Line rate counts the 20 bytes each frame costs on the wire beyond its size (7 B preamble, 1 B start
//! of frame delimiter, 12 B inter-frame gap, IEEE 802.3 §4.4.2): 10 Gbit/s at 64 B frames is
//! 10e9 / ((64 + 20) × 8) = 14,880,952 frames/s (RFC 2544 §20 "maximum frame rate").
//!
//! `bps` rates count Ethernet frame bits including the FCS but not preamble and gap (layer 2 bits,
//! as VSPERF's `throughput_rx_mbps` does).
//!
//! Pacing is a schedule, not a sleep: frame `k` is due at `start + k / fps`. The pacer releases due
//! frames in quanta (a batch, or a configured burst).
//!
//! **When the sender is late** (descheduled, preempted, or simply slower than the rate) the pacer
//! never sends the backlog as a catch-up burst: a slot whose due time lies more than the *late
//! threshold* in the past is dropped from the schedule and counted ([`Lateness::slots_dropped`]);
//! such frames are *not sent* (not offered to the device). What remains due after dropping is at
//! most `threshold × fps` frames, so the largest burst a pause can cause is bounded by the
//! threshold. The pacer also measures how far behind the schedule the sender was
//! ([`Lateness::max_behind_ns`]) and for how long beyond the threshold
//! ([`Lateness::time_behind_ns`]). A trial whose dropped share exceeds its tolerance is
//! tester-limited ("tester late"; METHODOLOGY.md, "When the tester is late").

use serde::{Deserialize, Serialize};
use std::time::Instant;

use crate::GenError;

/// Bytes each frame costs on the wire besides its size: preamble 7 + SFD 1 + inter-frame gap 12.
pub const WIRE_OVERHEAD: u64 = 20;

/// Nominal link speeds for `percent of line rate` loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LinkSpeed {
    G1,
    G10,
    G25,
    G40,
    G100,
}

impl LinkSpeed {
    /// Bits per second.
    pub fn bps(self) -> u64 {
        match self {
            LinkSpeed::G1 => 1_000_000_000,
            LinkSpeed::G10 => 10_000_000_000,
            LinkSpeed::G25 => 25_000_000_000,
            LinkSpeed::G40 => 40_000_000_000,
            LinkSpeed::G100 => 100_000_000_000,
        }
    }

    /// Parses `1G`, `10G`, `25G`, `40G`, `100G` (case-insensitive, `GE`/`Gbps` suffixes accepted).
    pub fn parse(s: &str) -> Result<LinkSpeed, GenError> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.trim_end_matches("bps").trim_end_matches('e');
        Ok(match t {
            "1g" => LinkSpeed::G1,
            "10g" => LinkSpeed::G10,
            "25g" => LinkSpeed::G25,
            "40g" => LinkSpeed::G40,
            "100g" => LinkSpeed::G100,
            _ => {
                return Err(GenError::Config {
                    field: "link speed".into(),
                    value: s.into(),
                    accepted: "1G, 10G, 25G, 40G, 100G".into(),
                })
            }
        })
    }

    /// Maximum frames per second at mean frame size `size` (with FCS), RFC 2544 §20.
    pub fn line_rate_fps(self, size: f64) -> f64 {
        self.bps() as f64 / ((size + WIRE_OVERHEAD as f64) * 8.0)
    }
}

/// Offered load of one transmitting port.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rate {
    /// Frames per second.
    Pps(f64),
    /// Layer-2 bits per second (frame incl. FCS, no preamble/gap).
    Bps(f64),
    /// Percent of the line rate of a nominal link (preamble and gap counted).
    Percent { percent: f64, link: LinkSpeed },
    /// As fast as the generator can (back-to-back, calibration).
    Max,
}

impl Rate {
    /// Parses `50%@10G`, `100%` (10G assumed), `1Mpps`, `250kpps`, `1000pps`, `1Gbps`, `500Mbps`,
    /// `max`.
    pub fn parse(s: &str) -> Result<Rate, GenError> {
        let bad = || GenError::Config {
            field: "rate".into(),
            value: s.into(),
            accepted: "PCT%[@1G|10G|25G|40G|100G] (e.g. 50%@10G), N[k|M|G]pps (e.g. 1Mpps), \
                       N[k|M|G]bps (e.g. 1Gbps), or max"
                .into(),
        };
        let t = s.trim();
        if t.eq_ignore_ascii_case("max") {
            return Ok(Rate::Max);
        }
        if let Some((pct, rest)) = t.split_once('%') {
            let percent: f64 = pct.trim().parse().map_err(|_| bad())?;
            let link = match rest.trim().strip_prefix('@') {
                Some(l) => LinkSpeed::parse(l)?,
                None if rest.trim().is_empty() => LinkSpeed::G10,
                None => return Err(bad()),
            };
            let r = Rate::Percent { percent, link };
            r.validate()?;
            return Ok(r);
        }
        let lower = t.to_ascii_lowercase();
        let (num, is_pps) = if let Some(n) = lower.strip_suffix("pps") {
            (n, true)
        } else if let Some(n) = lower.strip_suffix("bps") {
            (n, false)
        } else {
            return Err(bad());
        };
        let (num, mult) = match num.chars().last() {
            Some('k') => (&num[..num.len() - 1], 1e3),
            Some('m') => (&num[..num.len() - 1], 1e6),
            Some('g') => (&num[..num.len() - 1], 1e9),
            _ => (num, 1.0),
        };
        let v: f64 = num.trim().parse().map_err(|_| bad())?;
        let r = if is_pps {
            Rate::Pps(v * mult)
        } else {
            Rate::Bps(v * mult)
        };
        r.validate()?;
        Ok(r)
    }

    /// Checks the value is positive and finite (and a percent at most 100).
    pub fn validate(&self) -> Result<(), GenError> {
        let (ok, v) = match *self {
            Rate::Pps(v) | Rate::Bps(v) => (v.is_finite() && v > 0.0, v),
            Rate::Percent { percent, .. } => (
                percent.is_finite() && percent > 0.0 && percent <= 100.0,
                percent,
            ),
            Rate::Max => (true, 0.0),
        };
        if ok {
            Ok(())
        } else {
            Err(GenError::Config {
                field: "rate".into(),
                value: v.to_string(),
                accepted: "a positive finite rate; percent in (0, 100]".into(),
            })
        }
    }

    /// Frames per second for frames of mean size `mean_size` (with FCS); `None` for [`Rate::Max`].
    pub fn fps(&self, mean_size: f64) -> Option<f64> {
        match *self {
            Rate::Pps(p) => Some(p),
            Rate::Bps(b) => Some(b / (mean_size * 8.0)),
            Rate::Percent { percent, link } => {
                Some(link.line_rate_fps(mean_size) * percent / 100.0)
            }
            Rate::Max => None,
        }
    }
}

/// A monotonic clock in nanoseconds since some fixed origin.
pub trait Clock {
    fn now_ns(&self) -> u64;
}

/// The real clock: `std::time::Instant` (CLOCK_MONOTONIC) since the clock was created.
#[derive(Debug, Clone, Copy)]
pub struct MonoClock {
    origin: Instant,
}

impl MonoClock {
    pub fn new() -> MonoClock {
        MonoClock {
            origin: Instant::now(),
        }
    }
}

impl Default for MonoClock {
    fn default() -> Self {
        MonoClock::new()
    }
}

impl Clock for MonoClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
}

/// How late a sender was against its pacing schedule over a trial (one port, or the sum/maximum
/// over ports).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lateness {
    /// Slots due more than this long ago are dropped (0: the pacer never drops, e.g. unpaced).
    pub threshold_ns: u64,
    /// Largest lateness of the oldest due slot seen at any poll of the schedule.
    pub max_behind_ns: u64,
    /// Time spent behind the schedule by more than the threshold (sum of the excess at each drop).
    pub time_behind_ns: u64,
    /// Schedule slots dropped because they were late (frames not sent: the would-be catch-up).
    pub slots_dropped: u64,
    /// How many times slots were dropped (pauses that put the sender beyond the threshold).
    pub late_events: u64,
    /// Largest gap between two consecutive transmit calls that sent frames (set by the engine).
    pub max_gap_ns: u64,
    /// Of `slots_dropped`, those dropped right after a transmit call the path throttled (it
    /// refused frames: ring or socket budget full): the device's back-pressure slowed the
    /// sender, not descheduling (set by the engine; METHODOLOGY.md, "Back-pressure").
    #[serde(default)]
    pub slots_dropped_blocked: u64,
}

impl Lateness {
    /// Adds another port's lateness: counts and times add, maxima take the maximum.
    pub fn merge(&mut self, o: &Lateness) {
        self.threshold_ns = self.threshold_ns.max(o.threshold_ns);
        self.max_behind_ns = self.max_behind_ns.max(o.max_behind_ns);
        self.time_behind_ns += o.time_behind_ns;
        self.slots_dropped += o.slots_dropped;
        self.late_events += o.late_events;
        self.max_gap_ns = self.max_gap_ns.max(o.max_gap_ns);
        self.slots_dropped_blocked += o.slots_dropped_blocked;
    }

    /// Slots dropped because the sender itself was late (descheduled, preempted, too slow), not
    /// behind a throttled send.
    pub fn slots_dropped_descheduled(&self) -> u64 {
        self.slots_dropped
            .saturating_sub(self.slots_dropped_blocked)
    }
}

/// Decides how many frames are due: frame `k` (0-based) is due at `start + k × 1e9 / fps` ns.
#[derive(Debug, Clone)]
pub struct Pacer {
    start_ns: u64,
    /// Nanoseconds per frame, `None` = unlimited.
    interval_ns: Option<f64>,
    /// Frames are released in multiples of this (1 = smooth; N = bursts of N back-to-back).
    quantum: u64,
    /// Schedule slots consumed so far: released to the caller, or dropped as late.
    released: u64,
    /// Total frames to release, if counted.
    limit: Option<u64>,
    /// Drop slots due more than this long ago (`None`: never drop, catch up at full speed).
    late_after_ns: Option<u64>,
    lateness: Lateness,
}

impl Pacer {
    /// A pacer starting at `start_ns` for `fps` frames per second (`None` = as fast as possible),
    /// releasing frames in multiples of `quantum` (bursts), at most `limit` in all.
    pub fn new(start_ns: u64, fps: Option<f64>, quantum: u64, limit: Option<u64>) -> Pacer {
        Pacer {
            start_ns,
            interval_ns: fps.map(|f| 1e9 / f),
            quantum: quantum.max(1),
            released: 0,
            limit,
            late_after_ns: None,
            lateness: Lateness::default(),
        }
    }

    /// Drops schedule slots due more than `threshold_ns` before the time [`Pacer::due`] is asked
    /// (never a catch-up burst; see the module doc). Without it the pacer releases the backlog.
    pub fn with_late_threshold(mut self, threshold_ns: u64) -> Pacer {
        self.late_after_ns = Some(threshold_ns);
        self.lateness.threshold_ns = threshold_ns;
        self
    }

    /// The lateness measured so far.
    pub fn lateness(&self) -> Lateness {
        self.lateness
    }

    /// Frames due at `now_ns` and not yet released, at most `max`. Releases them: the caller sends
    /// them or counts them refused; a released slot is never released again (no retry). Slots
    /// later than the late threshold are dropped first and counted in [`Pacer::lateness`].
    pub fn due(&mut self, now_ns: u64, max: u64) -> u64 {
        let target = match self.interval_ns {
            None => u64::MAX,
            Some(iv) => {
                let elapsed = now_ns.saturating_sub(self.start_ns) as f64;
                // Frame k is due at k × iv, so floor(elapsed / iv) + 1 frames are due.
                let due = (elapsed / iv).floor() as u64 + 1;
                // Round down to whole quanta (bursts): a burst goes when its first frame is due.
                let q = self.quantum;
                (due.div_ceil(q)).saturating_mul(q)
            }
        };
        let target = match self.limit {
            Some(l) => target.min(l),
            None => target,
        };
        if let (Some(iv), true) = (self.interval_ns, target > self.released) {
            // The oldest slot not yet released, and how late it is now.
            let oldest = self.start_ns + (self.released as f64 * iv) as u64;
            let behind = now_ns.saturating_sub(oldest);
            self.lateness.max_behind_ns = self.lateness.max_behind_ns.max(behind);
            if let Some(th) = self.late_after_ns.filter(|&th| behind > th) {
                // Keep the slots due at or after `now − th`, from a whole quantum (bursts stay whole).
                let cutoff = (now_ns - th).saturating_sub(self.start_ns) as f64;
                let q = self.quantum;
                let keep_from = ((cutoff / iv).ceil() as u64).div_ceil(q).saturating_mul(q);
                let keep_from = keep_from.min(target);
                if keep_from > self.released {
                    self.lateness.slots_dropped += keep_from - self.released;
                    self.lateness.late_events += 1;
                    self.lateness.time_behind_ns += behind - th;
                    self.released = keep_from;
                }
            }
        }
        let n = target.saturating_sub(self.released).min(max);
        self.released += n;
        n
    }

    /// Schedule slots consumed so far (released or dropped as late).
    pub fn released(&self) -> u64 {
        self.released
    }

    /// Frames a counted pacer has not released yet (slots never reached: the trial ended early).
    pub fn remaining(&self) -> Option<u64> {
        self.limit.map(|l| l.saturating_sub(self.released))
    }

    /// Whether a counted pacer has released everything.
    pub fn finished(&self) -> bool {
        self.limit.is_some_and(|l| self.released >= l)
    }

    /// The time the frame after the last released one is due (`None` if unlimited).
    pub fn next_due_ns(&self) -> Option<u64> {
        self.interval_ns
            .map(|iv| self.start_ns + (self.released as f64 * iv) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct FakeClock(Cell<u64>);
    impl Clock for FakeClock {
        fn now_ns(&self) -> u64 {
            self.0.get()
        }
    }

    #[test]
    fn line_rate_10g_64b_is_14880952() {
        let fps = Rate::Percent {
            percent: 100.0,
            link: LinkSpeed::G10,
        }
        .fps(64.0)
        .unwrap();
        assert_eq!(fps.floor() as u64, 14_880_952);
        let fps = Rate::Percent {
            percent: 100.0,
            link: LinkSpeed::G10,
        }
        .fps(1518.0)
        .unwrap();
        assert_eq!(fps.floor() as u64, 812_743);
        let fps = Rate::Percent {
            percent: 50.0,
            link: LinkSpeed::G1,
        }
        .fps(64.0)
        .unwrap();
        assert_eq!(fps.floor() as u64, 744_047);
    }

    #[test]
    fn parse_rates() {
        assert_eq!(
            Rate::parse("50%@10G").unwrap(),
            Rate::Percent {
                percent: 50.0,
                link: LinkSpeed::G10
            }
        );
        assert_eq!(
            Rate::parse("100%").unwrap(),
            Rate::Percent {
                percent: 100.0,
                link: LinkSpeed::G10
            }
        );
        assert_eq!(
            Rate::parse("12.5%@25G").unwrap(),
            Rate::Percent {
                percent: 12.5,
                link: LinkSpeed::G25
            }
        );
        assert_eq!(Rate::parse("1Mpps").unwrap(), Rate::Pps(1e6));
        assert_eq!(Rate::parse("250kpps").unwrap(), Rate::Pps(250e3));
        assert_eq!(Rate::parse("1Gbps").unwrap(), Rate::Bps(1e9));
        assert_eq!(Rate::parse("max").unwrap(), Rate::Max);
        assert_eq!(Rate::Bps(1e9).fps(125.0).unwrap(), 1e6);
        for bad in ["", "50", "150%", "0pps", "-1Mpps", "50%@11G", "1Mfps", "x%"] {
            let e = Rate::parse(bad).unwrap_err().to_string();
            assert!(e.contains("accepted"), "{bad}: {e}");
        }
    }

    #[test]
    fn pacer_follows_fake_clock_exactly() {
        let clock = FakeClock(Cell::new(1_000));
        // 1 Mfps = one frame per 1000 ns.
        let mut p = Pacer::new(clock.now_ns(), Some(1e6), 1, None);
        assert_eq!(p.due(clock.now_ns(), 64), 1); // frame 0 due at start
        assert_eq!(p.due(clock.now_ns(), 64), 0);
        clock.0.set(1_000 + 999);
        assert_eq!(p.due(clock.now_ns(), 64), 0);
        clock.0.set(1_000 + 1_000);
        assert_eq!(p.due(clock.now_ns(), 64), 1);
        // Falling behind: 100 µs later 100 frames are due; the batch cap limits one call.
        clock.0.set(1_000 + 101_000);
        assert_eq!(p.due(clock.now_ns(), 64), 64);
        assert_eq!(p.due(clock.now_ns(), 64), 36);
        assert_eq!(p.released(), 102);
        // Over one simulated second polled every 7 µs, exactly 1e6 + 1 frames are released by t=1 s.
        let mut p = Pacer::new(0, Some(1e6), 1, None);
        let mut t = 0;
        while t <= 1_000_000_000 {
            p.due(t, 32);
            t += 7_000;
        }
        let last = t - 7_000;
        assert_eq!(p.released(), last / 1_000 + 1);
    }

    #[test]
    fn pacer_limit_and_no_rerelease() {
        let mut p = Pacer::new(0, None, 1, Some(100));
        assert_eq!(p.due(0, 64), 64);
        // Whatever the caller did with them (sent or refused), released slots never come back.
        assert_eq!(p.due(0, 64), 36);
        assert!(p.finished());
        assert_eq!(p.due(0, 64), 0);
        assert_eq!(p.remaining(), Some(0));
    }

    #[test]
    fn a_10ms_pause_drops_late_slots_and_sends_no_burst() {
        // 1 Mfps (one slot per µs), late threshold 100 µs, 20 ms trial, polled every 5 µs on a
        // simulated clock, with one 10 ms pause (the sender descheduled) at t = 5 ms.
        let clock = FakeClock(Cell::new(0));
        let mut p = Pacer::new(0, Some(1e6), 1, Some(20_000)).with_late_threshold(100_000);
        let mut largest = 0;
        let mut sent = 0;
        while !p.finished() {
            let t = clock.now_ns();
            let n = p.due(t, u64::MAX);
            largest = largest.max(n);
            sent += n;
            clock.0.set(if t == 5_000_000 {
                15_000_000
            } else {
                t + 5_000
            });
        }
        let l = p.lateness();
        // After the pause, slots 5001..=14899 were more than 100 µs late: dropped, never sent.
        assert_eq!(l.slots_dropped, 14_900 - 5_001);
        assert_eq!(l.late_events, 1);
        assert_eq!(l.max_behind_ns, 10_000_000 - 1_000);
        assert_eq!(l.time_behind_ns, 10_000_000 - 1_000 - 100_000);
        // No catch-up burst: the largest release is the threshold's worth of slots (+1 due now).
        assert_eq!(largest, 101);
        assert_eq!(sent + l.slots_dropped, 20_000);
        // Without the threshold the same pause releases the whole backlog at once.
        let mut p = Pacer::new(0, Some(1e6), 1, Some(20_000));
        p.due(5_000_000, u64::MAX);
        assert_eq!(p.due(15_000_000, u64::MAX), 10_000);
        assert_eq!(p.lateness().slots_dropped, 0);
    }

    #[test]
    fn late_slots_are_dropped_in_whole_bursts() {
        // 1000 fps in bursts of 10 (a burst every 10 ms), threshold 1 ms: asked at 35 ms, the
        // bursts due at 10, 20 and 30 ms are all more than 1 ms late and dropped whole; the next
        // burst goes at 40 ms.
        let mut p = Pacer::new(0, Some(1000.0), 10, None).with_late_threshold(1_000_000);
        assert_eq!(p.due(0, 256), 10);
        assert_eq!(p.due(35_000_000, 256), 0);
        assert_eq!(p.lateness().slots_dropped, 30);
        assert_eq!(p.due(40_000_000, 256), 10);
    }

    #[test]
    fn pacer_bursts_release_whole_quanta() {
        // 1000 fps in bursts of 10: a burst every 10 ms.
        let mut p = Pacer::new(0, Some(1000.0), 10, None);
        assert_eq!(p.due(0, 256), 10);
        assert_eq!(p.due(9_999_999, 256), 0);
        assert_eq!(p.due(10_000_000, 256), 10);
        assert_eq!(p.due(10_000_000, 4), 0); // nothing more due
        assert_eq!(p.due(35_000_000, 256), 20);
    }
}
