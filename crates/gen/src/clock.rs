//! The generator's timestamp clock: the CPU's time-stamp counter through the `quanta` crate,
//! scaled to nanoseconds.
//!
//! Why: a profile of the generator sending over AF_XDP at 64 B spent 17 % of its core in
//! `clock_gettime` (`std::time::Instant`, CLOCK_MONOTONIC through the vDSO), which it calls for
//! every transmit burst, every received frame's timestamp and every pacing decision
//! (docs/BENCHMARKS.md §6). Reading the TSC is one instruction and a multiply-shift.
//! CLOCK_MONOTONIC_COARSE is cheaper still but ticks once per jiffy (1–4 ms), far too coarse for
//! latency samples of a few microseconds.
//!
//! [`TscClock`] uses `quanta::Clock`: at creation quanta checks that the TSC is invariant
//! (`constant_tsc` and `nonstop_tsc` in CPUID) and calibrates it against CLOCK_MONOTONIC once per
//! process; where the TSC is not usable it reads CLOCK_MONOTONIC itself, so the clock is always
//! correct and at worst as costly as [`crate::rate::MonoClock`]. The scale comes from a short
//! calibration, so over long intervals the clock may run a few parts in 10^5 fast or slow against
//! CLOCK_MONOTONIC (a 60 s trial paced ±1 ms; latencies, differences of two readings of the same
//! clock, by the same fraction). Readings never go backwards: a TSC read on another CPU that is
//! behind the last reading returns the last reading.

use crate::rate::Clock;

/// Nanoseconds since the clock was created, from the TSC (see the module doc). The mechanism is
/// the switch graph's [`vecswitch_graph::GraphClock`] (one TSC clock for the whole project).
#[derive(Debug, Clone, Default)]
pub struct TscClock(vecswitch_graph::GraphClock);

impl TscClock {
    /// Creates the clock (the first one in a process calibrates the TSC, a few milliseconds).
    pub fn new() -> TscClock {
        TscClock(vecswitch_graph::GraphClock::new())
    }
}

impl Clock for TscClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.0.now_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::MonoClock;
    use std::time::Duration;

    /// Against CLOCK_MONOTONIC over a few sleeps: the elapsed times agree to 1 % plus 200 µs (the
    /// two reads of each pair are not simultaneous and the host may preempt between them), and
    /// readings never decrease.
    #[test]
    fn tsc_clock_tracks_the_monotonic_clock_and_never_goes_back() {
        let tsc = TscClock::new();
        let mono = MonoClock::new();
        let (t0, m0) = (tsc.now_ns(), mono.now_ns());
        let mut prev = t0;
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(20));
            for _ in 0..1000 {
                let t = tsc.now_ns();
                assert!(t >= prev, "went back: {prev} -> {t}");
                prev = t;
            }
        }
        let (t1, m1) = (tsc.now_ns(), mono.now_ns());
        let (dt, dm) = ((t1 - t0) as f64, (m1 - m0) as f64);
        assert!(dm >= 100e6, "slept at least 100 ms: {dm}");
        assert!(
            (dt - dm).abs() <= dm * 0.01 + 200e3,
            "tsc {dt} ns vs monotonic {dm} ns"
        );
    }
}
