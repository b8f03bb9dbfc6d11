//! The soak on the real generator (issue 7 item 9): one continuous stream through testpmd
//! io-forward over memif, with per-interval statistics from the generator
//! (`TrialSpec::interval`), mapped by `GenMeasurer::soak` and run by the lab's soak procedure.
//! The intervals must add up to the stream's totals, the sequence numbers must run on across
//! interval boundaries (no restart, no gap), and the device must have forwarded in every
//! interval. Root (memif sockets in the testbed's run directory, testpmd). Own test binary: it
//! runs alone, not beside the other forwarding tests.

use std::time::Duration;

use vecswitch_lab::procedures::soak::{soak, SoakConfig};
use vecswitch_lab::{Load, Measurer};
use vecswitch_testbed::dut::testpmd::TestpmdDut;
use vecswitch_testbed::{default_streams, GenMeasurer, Link, Testbed, Topology};

#[test]
fn soak_through_testpmd_is_one_stream_with_intervals_that_add_up() {
    let mut tb = Testbed::build(Topology::Phy2Phy { link: Link::Memif }).unwrap();
    let ports = tb.open_generator_ports().unwrap();
    tb.start(Box::new(TestpmdDut::new())).unwrap();
    // As in gen_measurer.rs: a shared 2-core machine makes the unoptimised generator late; at
    // 4 kfps testpmd's answer does not depend on the spacing, and loss is counted against the
    // frames offered either way.
    let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, true))
        .unwrap()
        .tolerance(0.2)
        .late_threshold(Duration::from_millis(500))
        .drain(Duration::from_millis(300));

    // 1. The measurer directly: 5 × 500 ms at 4 kfps (2 kfps per direction).
    let ivs = m
        .soak(Load::fps(4_000.0), Duration::from_millis(500), 5)
        .unwrap();
    assert_eq!(ivs.len(), 5);
    let r = m.reports().last().unwrap().clone();
    assert_eq!(r.intervals.len(), 5, "one generator trial, five intervals");
    let offered: u64 = ivs.iter().map(|t| t.offered_frames).sum();
    let received: u64 = ivs.iter().map(|t| t.received_frames).sum();
    let unique: u64 = r.streams.iter().map(|s| s.rx.rx_unique).sum();
    assert_eq!(offered, r.tx + r.tx_refused, "{:?}", r.intervals);
    assert_eq!(received, unique, "{:?}", r.intervals);
    for (k, s) in r.streams.iter().enumerate() {
        let per: Vec<_> = r.intervals.iter().map(|i| &i.streams[k]).collect();
        assert_eq!(per[0].first_seq, 0);
        for w in per.windows(2) {
            assert_eq!(
                w[0].first_seq + w[0].tx,
                w[1].first_seq,
                "stream {k} restarted"
            );
        }
        assert_eq!(per.iter().map(|i| i.tx).sum::<u64>(), s.tx);
        assert_eq!(
            per.iter().map(|i| i.rx.rx_unique).sum::<u64>(),
            s.rx.rx_unique
        );
        assert_eq!(per.iter().map(|i| i.tx_refused).sum::<u64>(), s.tx_refused);
    }
    for (i, t) in ivs.iter().enumerate() {
        assert_eq!(t.intended_frames, 2_000, "interval {i}");
        assert!(
            t.received_frames > 0,
            "testpmd forwarded nothing in interval {i}: {t:?}"
        );
        let lat = t.latency.clone().expect("latency per interval");
        assert!(lat.samples > 0 && lat.min_ns <= lat.max_ns, "{lat:?}");
    }

    // 2. The lab's soak procedure through it: 3 × 400 ms at 4 kfps.
    let cfg = SoakConfig {
        load: Load::fps(4_000.0),
        total: Duration::from_millis(1_200),
        interval: Duration::from_millis(400),
    };
    let res = soak(&mut m, &cfg).unwrap();
    assert_eq!(res.intervals.len(), 3, "{res:?}");
    let r = m.reports().last().unwrap();
    assert_eq!(r.intervals.len(), 3);
    let unique: u64 = r.streams.iter().map(|s| s.rx.rx_unique).sum();
    assert_eq!(
        res.intervals.iter().map(|i| i.received_frames).sum::<u64>(),
        unique,
        "{res:?}"
    );
}
