//! RFC 2889 §5.7 / §5.8 address trials on a running bridge DUT through the lab's two generator
//! ports: [`AddressDevice`] for [`GenMeasurer`], by the two-port filtering method
//! ([`AddressMethod::TwoPortFiltering`]; `vecswitch_lab::procedures::rfc2889` explains it).
//!
//! One trial of N addresses at R frames/s:
//!
//! 1. **Empty table.** The DUT forgets what it learned ([`crate::Dut::flush_mac_table`]:
//!    vecswitch `mac flush`, the kernel bridge's `fdb_flush`, OVS `fdb/flush`), as RFC 2889
//!    §5.7.2 asks between trials; static entries stay.
//! 2. **Learning.** Port 0 sends N frames at R, frame i from B + i to [`STATION`], a station
//!    behind port 1 that never sends: the bridge learns each source on its port 0 and floods the
//!    frame to port 1, where the generator counts it (`learning_received`: a bridge that dropped
//!    them would otherwise pass the test below). B is [`LEARN_BASE`] with the trial's number in
//!    its fourth byte ([`trial_base`]): each trial uses addresses the one before did not, so what a
//!    device cached from it (OVS's megaflows, say) cannot answer for its table.
//! 3. **Test.** Port 0 sends N frames, frame i to B + i from B (learned on port 0 already, so no
//!    new entry), at min(R, [`TEST_FPS`]) — the test phase looks at the
//!    table, not at the forwarding rate. A learned destination is behind the port the frame came
//!    in by, so the bridge filters the frame (IEEE 802.1Q-2018 §8.6.3: never forwarded back out
//!    of its reception port); an unknown one is flooded to port 1. `flooded` = test frames
//!    received on port 1 (RFC 2889 §5.7.3: flooding means the address was not in the table).
//!
//! Frames use the block's frame size (the measurer's first stream; RFC 2889 asks 64 bytes). If the
//! generator could not send every frame of a phase (late slots dropped on a loaded host) or its
//! receive side dropped frames, the attempt is the tester's failure, not the device's: it is made
//! again from step 1, up to [`TESTER_ATTEMPTS`] times, and then the trial returns an error naming
//! the shortfall (the search stops there). Every phase's generator report is kept in
//! [`GenMeasurer::reports`] with the device's counter deltas.

use std::time::Duration;

use vecswitch_gen::{Field, FieldMode, FieldRange, Rate, SizeSpec, StreamSpec, TrialLength};
use vecswitch_gen::{TrialReport, TrialSpec};
use vecswitch_lab::procedures::rfc2889::{
    AddressCounts, AddressDevice, AddressMethod, AddressObservation,
};
use vecswitch_lab::LabError;

use crate::measurer::GenMeasurer;

/// First learned source address of trial 0 (locally administered; [`trial_base`]).
pub const LEARN_BASE: [u8; 6] = [0x02, 0x28, 0x89, 0x00, 0x00, 0x00];
/// The learning frames' destination: a station behind port 1 that never sends (so it is never
/// learned and every learning frame is flooded there), outside every trial's addresses.
pub const STATION: [u8; 6] = [0x02, 0x28, 0x8a, 0xff, 0xff, 0xfe];
/// Highest rate of the test phase, frames/s.
pub const TEST_FPS: f64 = 10_000.0;
/// Attempts of one trial before a tester shortfall is an error.
pub const TESTER_ATTEMPTS: u32 = 3;
/// Pause after the flush, for the DUT to apply it.
const FLUSH_SETTLE: Duration = Duration::from_millis(50);
/// Receive time after each phase's last frame.
const DRAIN: Duration = Duration::from_millis(200);
/// Schedule slots later than this are dropped (and the attempt is the tester's failure). Every
/// slot is an address, so a dropped one would be an address never learned: the threshold is long,
/// and a descheduled generator catches up by sending its backlog at once — which only makes a
/// learning phase harder for the device (a result can only come out lower; on a loaded 2-core
/// host 100 of 300 slots of a 60 ms phase were more than 20 ms late).
const LATE_THRESHOLD: Duration = Duration::from_secs(1);

/// The first address of trial `k`: [`LEARN_BASE`] with `k mod 128` in its fourth byte. Trials
/// of up to 65,536 addresses use disjoint ranges for 128 trials in a row (more addresses overlap
/// the next trial's range, which only loses that protection); every range stays below
/// [`STATION`] and leaves the low 32 bits room to count up.
pub fn trial_base(k: usize) -> [u8; 6] {
    let mut b = LEARN_BASE;
    b[3] = (k % 128) as u8;
    b
}

/// The learning phase's stream: `n` frames from `base` + i to [`STATION`], port 0 → 1.
pub fn learning_stream(base: [u8; 6], n: u32, size: SizeSpec) -> StreamSpec {
    address_stream("rfc2889-learning", base, STATION, Field::SrcMac, n, size)
}

/// The test phase's stream: `n` frames from `base` to `base` + i, port 0 → 1 (only flooded ones
/// arrive).
pub fn test_stream(base: [u8; 6], n: u32, size: SizeSpec) -> StreamSpec {
    address_stream("rfc2889-test", base, base, Field::DstMac, n, size)
}

/// `n` frames from port 0 to 1, from `src` to `dst`, with `field` counting up from its value in
/// frame 0.
fn address_stream(
    name: &str,
    src: [u8; 6],
    dst: [u8; 6],
    field: Field,
    n: u32,
    size: SizeSpec,
) -> StreamSpec {
    let mut s = StreamSpec::ipv4(0, 1);
    s.name = name.into();
    s.src_mac = src;
    s.dst_mac = dst;
    s.size = size;
    s.flows = n;
    s.ranges = vec![FieldRange {
        field,
        count: n,
        mode: FieldMode::Increment,
    }];
    s
}

/// One phase: exactly `n` frames of `stream` at `fps`.
fn phase(stream: StreamSpec, fps: f64, n: u32, tolerance: f64) -> TrialSpec {
    let mut spec = TrialSpec::new(
        vec![stream],
        Rate::Pps(fps),
        TrialLength::Count(u64::from(n)),
    );
    spec.drain = DRAIN;
    spec.tolerance = tolerance;
    spec.late_threshold = LATE_THRESHOLD;
    spec
}

/// The tester's shortfall in a phase (it did not send all `n` frames, or dropped some it
/// received), as a sentence; `None` when it did its part.
fn tester_shortfall(r: &TrialReport, n: u32, fps: f64, what: &str) -> Option<String> {
    let sent = r.streams.first().map_or(0, |s| s.tx);
    let rx_dropped: u64 = r.ports.iter().map(|p| p.port_stats.rx_dropped).sum();
    (sent < u64::from(n) || rx_dropped > 0).then(|| {
        format!(
            "tester-limited RFC 2889 {what} phase: sent {sent} of {n} frames at {fps:.0} frames/s, \
             dropped {rx_dropped} at its receive side"
        )
    })
}

impl GenMeasurer<'_> {
    /// One address trial after `flush` emptied the table (module doc).
    fn address_trial(
        &mut self,
        addresses: u32,
        learn_rate_fps: f64,
        flush: impl Fn(&Self) -> Result<(), LabError>,
    ) -> Result<AddressObservation, LabError> {
        if addresses == 0 || !(learn_rate_fps > 0.0 && learn_rate_fps.is_finite()) {
            return Err(LabError::invalid(
                "rfc2889 trial",
                format!("{addresses} addresses at {learn_rate_fps} frames/s"),
                "at least 1 address at a positive, finite rate",
            ));
        }
        let size = self
            .streams()
            .first()
            .map_or(SizeSpec::Fixed(64), |s| s.size.clone());
        let tolerance = self.judging().tolerance;
        let test_fps = learn_rate_fps.min(TEST_FPS);
        let mut shortfall = String::new();
        for _ in 0..TESTER_ATTEMPTS {
            // Two generator reports per attempt: the count of reports numbers the attempts.
            let base = trial_base(self.reports().len() / 2);
            let learn = phase(
                learning_stream(base, addresses, size.clone()),
                learn_rate_fps,
                addresses,
                tolerance,
            );
            let test = phase(
                test_stream(base, addresses, size.clone()),
                test_fps,
                addresses,
                tolerance,
            );
            self.before_trial(learn_rate_fps)?;
            flush(&*self)?;
            std::thread::sleep(FLUSH_SETTLE);
            let (lr, _) = self.run(&learn, learn_rate_fps)?;
            if let Some(s) = tester_shortfall(&lr, addresses, learn_rate_fps, "learning") {
                shortfall = s;
                continue;
            }
            let (tr, _) = self.run(&test, test_fps)?;
            if let Some(s) = tester_shortfall(&tr, addresses, test_fps, "test") {
                shortfall = s;
                continue;
            }
            let n = u64::from(addresses);
            let flooded = tr.streams.first().map_or(0, |s| s.rx.rx_unique);
            return Ok(AddressObservation {
                counts: AddressCounts {
                    learning_sent: n,
                    test_sent: n,
                    // Two-port method: the frames kept off the monitor port (AddressMethod doc).
                    test_received: n.saturating_sub(flooded),
                    flooded,
                },
                learning_received: Some(lr.streams.first().map_or(0, |s| s.rx.rx_unique)),
            });
        }
        Err(LabError::Trial {
            load_fps: learn_rate_fps,
            reason: format!(
                "{shortfall}, {TESTER_ATTEMPTS} attempts in a row (lower the rate, or run on a \
                 quieter host)"
            ),
        })
    }
}

impl AddressDevice for GenMeasurer<'_> {
    fn trial(&mut self, addresses: u32, learn_rate_fps: f64) -> Result<AddressCounts, LabError> {
        self.observe(addresses, learn_rate_fps).map(|o| o.counts)
    }

    /// Flushes the testbed's DUT, then runs the two phases.
    fn observe(
        &mut self,
        addresses: u32,
        learn_rate_fps: f64,
    ) -> Result<AddressObservation, LabError> {
        self.address_trial(addresses, learn_rate_fps, |m| {
            let tb = m.testbed().ok_or_else(|| {
                LabError::Dut(
                    "RFC 2889 address trials need a started bridge DUT (GenMeasurer::for_testbed): \
                     its learned addresses are flushed before every trial"
                        .into(),
                )
            })?;
            tb.with_dut(|d| d.flush_mac_table())
                .unwrap_or_else(|| {
                    Err(crate::Error::Invalid {
                        field: "testbed state",
                        value: "no DUT started".into(),
                        expected: "RFC 2889 trials after Testbed::start".into(),
                    })
                })
                .map_err(|e| LabError::Dut(e.to_string()))
        })
    }

    fn method(&self) -> AddressMethod {
        AddressMethod::TwoPortFiltering
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vecswitch_lab::procedures::rfc2889::{address_caching_capacity, CachingConfig};
    use vecswitch_lab::Measurer;
    use vecswitch_ports::loopback;

    #[test]
    fn learning_and_test_streams_cover_the_same_addresses() {
        let base = trial_base(3);
        let l = learning_stream(base, 1_200, SizeSpec::Fixed(64));
        let t = test_stream(base, 1_200, SizeSpec::Fixed(64));
        assert_eq!((l.tx_port, l.rx_port, t.tx_port, t.rx_port), (0, 1, 0, 1));
        assert_eq!((l.flows, t.flows), (1_200, 1_200));
        assert_eq!(l.ranges[0].field, Field::SrcMac);
        assert_eq!(t.ranges[0].field, Field::DstMac);
        // Sources learned are exactly the destinations tested: same base, same count, same order.
        assert_eq!(l.src_mac, t.dst_mac);
        assert_eq!(t.src_mac, base);
        assert_eq!(base, [0x02, 0x28, 0x89, 3, 0, 0]);
        assert_ne!(trial_base(0), trial_base(1));
        assert_eq!(trial_base(128), trial_base(0));
        assert_eq!(
            (l.ranges[0].count, l.ranges[0].mode),
            (1_200, FieldMode::Increment)
        );
        assert_eq!(
            (t.ranges[0].count, t.ranges[0].mode),
            (1_200, FieldMode::Increment)
        );
        // The station is above every trial's range, and unicast.
        let low = |m: [u8; 6]| u32::from_be_bytes([m[2], m[3], m[4], m[5]]);
        assert!(low(STATION) > low(trial_base(127)) + 65_536);
        assert_eq!(STATION[0] & 1, 0);
    }

    /// Over a plain wire (a loopback pair: no table, every frame reaches the other end) every
    /// test frame arrives at the monitor port: nothing was learned, no trial passes. The
    /// mechanism, without a DUT: the generator's flows, both phases, the counts.
    #[test]
    fn a_wire_learns_nothing() {
        let (a, b) = loopback::pair("a", "b");
        let mut m = GenMeasurer::new(
            vec![Box::new(a), Box::new(b)],
            crate::measurer::default_streams(64, false),
        )
        .unwrap();
        // (A loaded host may deschedule the generator past the late threshold: the trial makes
        // its attempts again, TESTER_ATTEMPTS times.)
        let o = m.address_trial(300, 5_000.0, |_| Ok(())).unwrap();
        assert_eq!(o.learning_received, Some(300));
        assert_eq!(o.counts.flooded, 300);
        assert_eq!(o.counts.test_received, 0);
        assert!(!o.counts.passed());
        // Both phases are kept with the measurer's reports.
        let names: Vec<&str> = m
            .reports()
            .iter()
            .map(|r| r.streams[0].name.as_str())
            .collect();
        assert_eq!(
            names[names.len() - 2..],
            ["rfc2889-learning", "rfc2889-test"]
        );
        // Without a testbed there is nothing to flush: the trait method says what it needs.
        let e = m
            .address_device()
            .unwrap()
            .trial(10, 1_000.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("GenMeasurer::for_testbed"), "{e}");
        let e = address_caching_capacity(
            &mut m,
            &CachingConfig {
                min_addresses: 1,
                max_addresses: 10,
                resolution: 1,
                learn_rate_fps: 1_000.0,
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("flushed"), "{e}");
    }
}
