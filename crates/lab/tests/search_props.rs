//! Property tests: on any fixed-capacity or linear-loss device, the searches find the known answer
//! within their stop width, and the back-to-back search finds the simulated buffer.

use std::time::Duration;

use proptest::prelude::*;
use vecswitch_lab::procedures::back_to_back::{back_to_back, BackToBackConfig};
use vecswitch_lab::procedures::mlrsearch::{mlrsearch, MlrConfig, SearchGoal};
use vecswitch_lab::procedures::throughput::{throughput, ThroughputConfig};
use vecswitch_lab::sim::{SimDut, SimModel};

const MAX: f64 = 14_880_952.0;

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn rfc2544_finds_any_capacity(cap in 1_000.0..MAX, seed in 0u64..1000) {
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: cap }, seed);
        let cfg = ThroughputConfig::new(0.0, MAX, Duration::from_secs(1));
        let r = throughput(&mut dut, &cfg).unwrap();
        let x = r.throughput_fps.unwrap();
        prop_assert!(x <= cap + 0.5 && cap - x <= cfg.resolution_fps, "cap {} found {}", cap, x);
        prop_assert!(r.verified);
    }

    #[test]
    fn tester_limit_never_reads_as_dut_loss(cap in 1e5..MAX, limit in 1e5..MAX) {
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: cap }, 1).with_tester_limit(limit);
        let cfg = ThroughputConfig::new(0.0, MAX, Duration::from_secs(1));
        let r = throughput(&mut dut, &cfg).unwrap();
        let x = r.throughput_fps.unwrap();
        // Never above what either could do; flagged whenever the tester was the bottleneck.
        prop_assert!(x <= cap.min(limit) + 0.5, "cap {} limit {} found {}", cap, limit, x);
        if limit < cap * 0.9 {
            prop_assert!(r.tester_limited, "cap {} limit {} found {}", cap, limit, x);
        }
        for t in r.trials.iter().filter(|t| t.tester_limited) {
            prop_assert!(t.offered_fps() <= limit + 1.0);
        }
    }

    #[test]
    fn mlrsearch_brackets_any_knee(knee in 1e5..1e7, slope in 0.1..10.0f64) {
        let mut dut = SimDut::new(SimModel::LinearLoss { knee_fps: knee, slope }, 1);
        let r = mlrsearch(&mut dut, &MlrConfig::ndr_pdr(1e4, MAX)).unwrap();
        let pdr_known = knee * (1.0 + 0.005 / slope);
        for (g, known) in r.goals.iter().zip([knee, pdr_known]) {
            let (l, u) = (g.relevant_lower_bound_fps.unwrap(), g.relevant_upper_bound_fps.unwrap());
            prop_assert!(l <= known * 1.000_001 && u > known * 0.999_999, "{}: {}..{} vs {}", g.goal.name, l, u, known);
            prop_assert!((u - l) / u <= SearchGoal::ndr().relative_width + 1e-12);
        }
    }

    #[test]
    fn back_to_back_finds_any_buffer(buffer in 1u64..100_000, share in 0.05..0.95f64) {
        let cap = share * MAX;
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: cap }, 1).with_buffer(buffer).with_line_rate(MAX);
        let mut cfg = BackToBackConfig::new(MAX, cap);
        cfg.repetitions = 2;
        let r = back_to_back(&mut dut, &cfg).unwrap();
        let expect = buffer as f64 / (1.0 - share);
        prop_assert!((r.average_frames - expect).abs() <= 2.0 + expect * 1e-9, "{} vs {}", r.average_frames, expect);
        prop_assert!((r.corrected_buffer_frames - buffer as f64).abs() <= 2.0, "{}", r.corrected_buffer_frames);
    }
}
