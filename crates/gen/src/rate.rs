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
//! frames in quanta (a batch, or a configured burst), so a sender that falls behind catches up at full
//! speed and the offered count over a trial matches the intended one to within one quantum.

use serde::Serialize;
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

/// Decides how many frames are due: frame `k` (0-based) is due at `start + k × 1e9 / fps` ns.
#[derive(Debug, Clone)]
pub struct Pacer {
    start_ns: u64,
    /// Nanoseconds per frame, `None` = unlimited.
    interval_ns: Option<f64>,
    /// Frames are released in multiples of this (1 = smooth; N = bursts of N back-to-back).
    quantum: u64,
    /// Frames released so far.
    released: u64,
    /// Total frames to release, if counted.
    limit: Option<u64>,
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
        }
    }

    /// Frames due at `now_ns` and not yet released, at most `max`. Releases them: the caller must
    /// send them (or call [`Pacer::unrelease`] for those it could not).
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
        let n = target.saturating_sub(self.released).min(max);
        self.released += n;
        n
    }

    /// Gives back `n` released frames that were not sent; they are due again at once.
    pub fn unrelease(&mut self, n: u64) {
        self.released -= n.min(self.released);
    }

    /// Frames released so far.
    pub fn released(&self) -> u64 {
        self.released
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
    fn pacer_unrelease_and_limit() {
        let mut p = Pacer::new(0, None, 1, Some(100));
        assert_eq!(p.due(0, 64), 64);
        p.unrelease(10);
        assert_eq!(p.due(0, 64), 46);
        assert!(p.finished());
        assert_eq!(p.due(0, 64), 0);
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
