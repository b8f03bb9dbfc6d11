//! Tests of suite parsing, validation and running on simulated devices.

use std::time::Duration;

use vecswitch_gen::flow::MAX_FLOWS;

use super::*;
use crate::measurer::Measurer;
use crate::procedures::rfc2889::AddressDevice;
use crate::procedures::throughput::TrialPolicy;
use crate::results::Outcome;
use crate::sim::{SimDut, SimModel};
use crate::Load;

const EXAMPLE: &str = r#"
name = "phy2phy baseline"
frame_sizes = [64, 1518]
line_rate_gbps = 10

[[dut]]
name = "vecswitch-xconnect"
topology = "phy2phy-memif"
sim = { model = "fixed", capacity_mfps = 5.0, buffer_frames = 2048 }

[[dut]]
name = "ovs"
topology = "phy2phy-veth"
sim = { model = "sporadic", capacity_mfps = 0.8, probability = 0.2, max_lost = 10 }

[[test]]
procedure = "throughput"
trial_duration_s = 1
loss_tolerance_percent = 0.001
policy = "best-of-3"

[[test]]
procedure = "latency"
trial_duration_s = 1
repetitions = 2

[[test]]
procedure = "back2back"
repetitions = 3

[[test]]
procedure = "mlrsearch"
goals = [{ name = "NDR" }, { name = "PDR", loss_percent = 0.5, duration_sum_s = 11 }]

[[test]]
procedure = "throughput"
id = "phy2phy_mac_scale"
trial_duration_s = 1
scale = { kind = "mac-entries", points = [2, 2000, 20000] }
"#;

#[test]
fn example_suite_parses_with_defaults() {
    let s = Suite::parse(EXAMPLE).unwrap();
    assert_eq!(
        s.frame_sizes,
        vec![FrameSize::Bytes(64), FrameSize::Bytes(1518)]
    );
    assert_eq!(s.duts.len(), 2);
    assert_eq!(s.duts[1].deployment(), "phy2phy");
    assert_eq!(s.tests.len(), 5);
    assert_eq!(s.tests[0].id("phy2phy"), "phy2phy_tput");
    assert_eq!(s.tests[4].id("phy2phy"), "phy2phy_mac_scale");
    assert_eq!(s.tests[4].scale().unwrap().points, vec![2, 2000, 20000]);
    let TestSpec::Latency {
        fractions_percent, ..
    } = &s.tests[1]
    else {
        panic!()
    };
    assert_eq!(fractions_percent, &vec![100.0, 90.0, 50.0, 10.0]);
}

#[test]
fn suite_runs_on_simulated_duts() {
    let s = Suite::parse(EXAMPLE).unwrap();
    let line = s.line(&64.into()).unwrap();
    let dut = &s.duts[0];
    let sim = dut.sim.as_ref().unwrap();
    let mut m = SimDut::new(sim.model(), 1)
        .with_buffer(sim.buffer_frames())
        .with_line_rate(line.max_fps());
    let mut thr = None;
    for t in s.tests.iter().filter(|t| t.scale().is_none()) {
        let o = run_test(&mut m, t, &line, thr).unwrap();
        thr = thr.or(found_throughput(&o));
    }
    let x = thr.unwrap();
    assert!(x <= 5e6 && 5e6 - x <= line.max_fps() * 0.001, "{x}");
}

#[test]
fn errors_name_the_key() {
    let bad = EXAMPLE.replace("policy = \"best-of-3\"", "policy = \"best-of-zero\"");
    let e = Suite::parse(&bad).unwrap_err().to_string();
    assert!(e.contains("policy") && e.contains("best-of-zero"), "{e}");
    let bad = EXAMPLE.replace("trial_duration_s = 1\nloss", "trial_duraton_s = 1\nloss");
    let e = Suite::parse(&bad).unwrap_err().to_string();
    assert!(e.contains("trial_duraton_s"), "{e}");
    let bad = EXAMPLE.replace("frame_sizes = [64, 1518]", "frame_sizes = [32]");
    assert!(Suite::parse(&bad)
        .unwrap_err()
        .to_string()
        .contains("frame_size"));
    // Latency before any throughput test.
    let bad = "name = \"x\"\n[[dut]]\nname = \"ovs\"\ntopology = \"phy2phy-veth\"\n[[test]]\nprocedure = \"latency\"\n";
    let e = Suite::parse(bad).unwrap_err().to_string();
    assert!(e.contains("latency") && e.contains("throughput"), "{e}");
    let bad = EXAMPLE.replace("kind = \"mac-entries\"", "kind = \"vlans\"");
    assert!(Suite::parse(&bad)
        .unwrap_err()
        .to_string()
        .contains("test.scale.kind"));
    let routes = EXAMPLE.replace("kind = \"mac-entries\"", "kind = \"routes\"");
    assert!(Suite::parse(&routes).is_ok());
    let bad = routes.replace("points = [2, 2000, 20000]", "points = [0, 2000]");
    let e = Suite::parse(&bad).unwrap_err().to_string();
    assert!(e.contains("test.scale.points") && e.contains("1..="), "{e}");
    let bad = EXAMPLE.replace("points = [2, 2000, 20000]", "points = [5000000000]");
    assert!(Suite::parse(&bad)
        .unwrap_err()
        .to_string()
        .contains("5000000000"));
}

#[test]
fn run_for_dut_records_every_test_and_scale_point() {
    let s = Suite::parse(EXAMPLE).unwrap();
    let line = s.line(&1518.into()).unwrap();
    let sim = s.duts[1].sim.as_ref().unwrap();
    let mut m = SimDut::new(sim.model(), 3).with_line_rate(line.max_fps());
    let mut seen = Vec::new();
    let recs = run_for_dut(&s, &s.duts[1], &line, &mut m, &mut |_, sc, p| {
        seen.push((sc.kind.name().to_string(), p));
        Ok(())
    })
    .unwrap();
    // 4 plain tests + 3 scale points.
    assert_eq!(recs.len(), 7);
    assert_eq!(
        seen,
        vec![
            ("mac-entries".to_string(), 2),
            ("mac-entries".to_string(), 2000),
            ("mac-entries".to_string(), 20000)
        ]
    );
    assert!(recs
        .iter()
        .all(|r| r.vswitch == "ovs" && r.frame_size == 1518 && r.deployment == "phy2phy"));
    assert_eq!(recs.iter().filter(|r| r.scale.is_some()).count(), 3);
    assert_eq!(recs[2].outcome.name(), "back-to-back");
    // Each scale point's traffic went to one destination per entry.
    let flows: Vec<_> = recs
        .iter()
        .filter(|r| r.scale.is_some())
        .map(|r| r.flows)
        .collect();
    assert_eq!(flows, vec![Some(2), Some(2000), Some(20000)]);
}

#[test]
fn scale_destinations_are_capped_at_the_generators_flows() {
    let sc = |kind: &str| ScaleSpec {
        kind: kind.parse().unwrap(),
        points: vec![],
    };
    assert_eq!(sc("routes").destinations(1), Some(1));
    assert_eq!(sc("routes").destinations(1_000_000), Some(1_000_000));
    assert_eq!(
        sc("routes").destinations(2_000_000),
        Some(u64::from(MAX_FLOWS))
    );
    assert_eq!(sc("mac-entries").destinations(0), Some(1));
    assert_eq!(sc("flows").destinations(100), None);
}

#[test]
fn frame_sizes_accept_named_mixes() {
    let text = EXAMPLE.replace(
        "frame_sizes = [64, 1518]",
        "frame_sizes = [64, \"imix\", \"imix-trex\", \"imix-spirent-tcpv4\"]",
    );
    let s = Suite::parse(&text).unwrap();
    assert_eq!(s.frame_sizes[1], FrameSize::Mix("imix".into()));
    assert_eq!(s.frame_sizes[1].label(), "imix");
    // IMIX 64:7, 570:4, 1518:1: mean 353.83 B, so 10GE carries 10e9 / ((353.83 + 20) × 8) frames/s.
    let line = s.line(&s.frame_sizes[1]).unwrap();
    let mean = (64.0 * 7.0 + 570.0 * 4.0 + 1518.0) / 12.0;
    assert_eq!(line.mean_frame_bytes, Some(mean));
    assert!((line.max_fps() - 10e9 / ((mean + 20.0) * 8.0)).abs() < 1e-6);
    assert_eq!(s.frame_sizes[0].spec().unwrap().name(), "64");
    // Round trip through JSON (the results' provenance keeps the suite): numbers stay numbers.
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(
        v["frame_sizes"],
        serde_json::json!([64, "imix", "imix-trex", "imix-spirent-tcpv4"])
    );
    // An unknown mix names the key, the value and the accepted names.
    let bad = EXAMPLE.replace("frame_sizes = [64, 1518]", "frame_sizes = [64, \"imax\"]");
    let e = Suite::parse(&bad).unwrap_err().to_string();
    assert!(
        e.contains("frame_sizes") && e.contains("imax") && e.contains("imix-trex"),
        "{e}"
    );
    // The generator's custom size:weight syntax works too.
    let custom = EXAMPLE.replace(
        "frame_sizes = [64, 1518]",
        "frame_sizes = [\"64:1,1518:1\"]",
    );
    let s = Suite::parse(&custom).unwrap();
    assert_eq!(
        s.line(&s.frame_sizes[0]).unwrap().mean_frame_bytes,
        Some(791.0)
    );
}

#[test]
fn mix_results_say_the_mix_name() {
    let text = EXAMPLE.replace("frame_sizes = [64, 1518]", "frame_sizes = [\"imix\"]");
    let s = Suite::parse(&text).unwrap();
    let size = FrameSize::Mix("imix".into());
    let line = s.line(&size).unwrap();
    let mut m =
        SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1).with_line_rate(line.max_fps());
    let r = run_for_dut_observed(
        &s,
        &s.duts[0],
        &size,
        None,
        &mut m,
        &mut |_, _, _| Ok(()),
        &mut (),
    )
    .unwrap();
    assert!(r.error.is_none());
    let rec = &r.records[0];
    assert_eq!(rec.frame_mix.as_deref(), Some("imix"));
    assert_eq!(rec.frame_size, 354);
    assert_eq!(rec.topology.as_deref(), Some("phy2phy-memif"));
    let row = &rec.rows()[0];
    assert_eq!(
        row["packet_size"],
        crate::results::Cell::Text("imix".into())
    );
    // Mb/s of frame data use the mean size.
    let fps = row["throughput_rx_fps"].num().unwrap();
    assert!(
        (row["throughput_rx_mbps"].num().unwrap() - fps * line.frame_bytes() * 8.0 / 1e6).abs()
            < 1e-6
    );
}

#[test]
fn per_test_size_and_dut_filters() {
    let text = format!(
        "{EXAMPLE}\n[[test]]\nprocedure = \"throughput\"\nid = \"worst\"\npolicy = \"worst-of-2\"\ntrial_duration_s = 1\nframe_sizes = [64]\nduts = [\"ovs\"]\n"
    );
    let s = Suite::parse(&text).unwrap();
    let worst = s.tests.last().unwrap();
    assert!(worst.applies_to("ovs", &FrameSize::Bytes(64)));
    assert!(!worst.applies_to("ovs", &FrameSize::Bytes(1518)));
    assert!(!worst.applies_to("vecswitch-xconnect", &FrameSize::Bytes(64)));
    let run = |dut: usize, size: u32| {
        let line = s.line(&size.into()).unwrap();
        let mut m = SimDut::new(
            SimModel::Fixed {
                capacity_fps: 0.5e6,
            },
            1,
        )
        .with_line_rate(line.max_fps());
        let r = run_for_dut_observed(
            &s,
            &s.duts[dut],
            &size.into(),
            None,
            &mut m,
            &mut |_, _, _| Ok(()),
            &mut (),
        )
        .unwrap();
        r.records.iter().filter(|r| r.id == "worst").count()
    };
    assert_eq!(run(1, 64), 1);
    assert_eq!(run(1, 1518), 0);
    assert_eq!(run(0, 64), 0);
    // Filters must name sizes and devices of the suite.
    let bad = text.replace("frame_sizes = [64]\nduts", "frame_sizes = [512]\nduts");
    let e = Suite::parse(&bad).unwrap_err().to_string();
    assert!(e.contains("test.frame_sizes") && e.contains("512"), "{e}");
    let bad = text.replace("duts = [\"ovs\"]", "duts = [\"ovs-dpdk\"]");
    let e = Suite::parse(&bad).unwrap_err().to_string();
    assert!(e.contains("test.duts") && e.contains("ovs-dpdk"), "{e}");
}

/// A measurer that fails (as a Ctrl-C stop does) after `ok` trials.
struct StopAfter {
    inner: SimDut,
    ok: usize,
}
impl Measurer for StopAfter {
    fn trial(&mut self, load: Load, d: Duration) -> Result<crate::TrialResult, LabError> {
        if self.ok == 0 {
            return Err(LabError::Trial {
                load_fps: load.fps,
                reason: "stop requested (signal)".into(),
            });
        }
        self.ok -= 1;
        self.inner.trial(load, d)
    }
    fn burst(&mut self, frames: u64) -> Result<crate::BurstResult, LabError> {
        self.inner.burst(frames)
    }
}

/// A measurer that records its flow-mode switches and the loads of its trials.
struct UniqueProbe {
    inner: SimDut,
    switches: Vec<bool>,
    unique_trials: Vec<f64>,
    unique: bool,
}
impl Measurer for UniqueProbe {
    fn trial(&mut self, load: Load, d: Duration) -> Result<crate::TrialResult, LabError> {
        if self.unique {
            self.unique_trials.push(load.fps);
        }
        self.inner.trial(load, d)
    }
    fn burst(&mut self, frames: u64) -> Result<crate::BurstResult, LabError> {
        self.inner.burst(frames)
    }
    fn set_unique_flows(&mut self, unique: bool) -> Result<(), LabError> {
        self.switches.push(unique);
        self.unique = unique;
        Ok(())
    }
}

/// `flow_mode = "unique"`: the search runs with unique flows (learning trial included), and
/// the measurer is switched back afterwards; a measurer that cannot is an error naming the
/// key; a bad mode or learning load is refused.
#[test]
fn unique_flow_mode_switches_the_measurer_for_the_search() {
    let base = "name = \"x\"\n[[dut]]\nname = \"ovs\"\ntopology = \"phy2phy-veth\"\n[[test]]\nprocedure = \"throughput\"\ntrial_duration_s = 1\n";
    let s = Suite::parse(&format!(
        "{base}flow_mode = \"unique\"\nlearning_s = 1\nlearning_percent = 1\n"
    ))
    .unwrap();
    let line = s.line(&64.into()).unwrap();
    let sim =
        || SimDut::new(SimModel::Fixed { capacity_fps: 2e6 }, 1).with_line_rate(line.max_fps());
    let mut m = UniqueProbe {
        inner: sim(),
        switches: Vec::new(),
        unique_trials: Vec::new(),
        unique: false,
    };
    let o = run_test(&mut m, &s.tests[0], &line, None).unwrap();
    assert_eq!(m.switches, vec![true, false]);
    let Outcome::Throughput(r) = o else {
        panic!("{o:?}")
    };
    assert_eq!(m.unique_trials.len(), r.trials.len());
    // The learning trial ran at 1 % of line rate.
    assert!((m.unique_trials[0] - line.max_fps() / 100.0).abs() < 1.0);
    let e = run_test(&mut sim(), &s.tests[0], &line, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("flow_mode") && e.contains("unique"), "{e}");
    for (bad, key) in [
        ("flow_mode = \"random\"\n", "test.flow_mode"),
        ("learning_percent = 0\n", "test.learning_percent"),
    ] {
        let e = Suite::parse(&format!("{base}{bad}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{e}");
    }
}

#[test]
fn a_stop_keeps_the_tests_finished_before_it() {
    let s = Suite::parse(EXAMPLE).unwrap();
    let line = s.line(&64.into()).unwrap();
    // Count the trials of the first test (throughput) alone, then stop two trials into the next.
    let mut probe =
        SimDut::new(SimModel::Fixed { capacity_fps: 5e6 }, 1).with_line_rate(line.max_fps());
    let first = run_test(&mut probe, &s.tests[0], &line, None).unwrap();
    let Outcome::Throughput(t) = &first else {
        panic!()
    };
    let n = t.trials.len();
    let mut m = StopAfter {
        inner: SimDut::new(SimModel::Fixed { capacity_fps: 5e6 }, 1).with_line_rate(line.max_fps()),
        ok: n + 1,
    };
    let r = run_for_dut_observed(
        &s,
        &s.duts[0],
        &64.into(),
        None,
        &mut m,
        &mut |_, _, _| Ok(()),
        &mut (),
    )
    .unwrap();
    assert_eq!(r.records.len(), 1, "the throughput test is kept");
    assert_eq!(r.records[0].outcome, first);
    assert!(r.error.unwrap().to_string().contains("stop requested"));
    // run_for_dut (no partial results) reports the same stop as an error.
    let mut m = StopAfter {
        inner: SimDut::new(SimModel::Fixed { capacity_fps: 5e6 }, 1).with_line_rate(line.max_fps()),
        ok: n + 1,
    };
    assert!(run_for_dut(&s, &s.duts[0], &line, &mut m, &mut |_, _, _| Ok(())).is_err());
}

#[test]
fn search_up_to_the_generator_limit() {
    let text = EXAMPLE.replace(
        "policy = \"best-of-3\"",
        "policy = \"single\"\nsearch_max = \"generator-limit\"\nresolution_percent = 1",
    );
    let s = Suite::parse(&text).unwrap();
    let line = s.line(&64.into()).unwrap();
    let limit = 2e6;
    let mut m = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1)
        .with_line_rate(line.max_fps())
        .with_tester_limit(limit);
    let r = run_for_dut_observed(
        &s,
        &s.duts[0],
        &64.into(),
        Some(limit),
        &mut m,
        &mut |_, _, _| Ok(()),
        &mut (),
    )
    .unwrap();
    let rec = &r.records[0];
    assert_eq!(rec.generator_limit_fps, Some(limit));
    let Outcome::Throughput(t) = &rec.outcome else {
        panic!()
    };
    // The first trial asks for the generator's limit, not line rate; the resolution is 1 % of it.
    assert_eq!(t.trials[0].intended_load.fps, limit);
    let x = t.throughput_fps.unwrap();
    assert!(x <= 1e6 && 1e6 - x <= 0.01 * limit, "{x}");
    // Without a measured limit it searches from line rate, as RFC 2544 does.
    let mut m =
        SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1).with_line_rate(line.max_fps());
    let r = run_for_dut_observed(
        &s,
        &s.duts[0],
        &64.into(),
        None,
        &mut m,
        &mut |_, _, _| Ok(()),
        &mut (),
    )
    .unwrap();
    let Outcome::Throughput(t) = &r.records[0].outcome else {
        panic!()
    };
    assert_eq!(t.trials[0].intended_load.fps, line.max_fps());
    let bad = text.replace("search_max = \"generator-limit\"", "search_max = \"gen\"");
    assert!(Suite::parse(&bad)
        .unwrap_err()
        .to_string()
        .contains("test.search_max"));
}

#[test]
fn documented_device_suites_parse() {
    for f in ["device-cost.toml", "external-device.toml"] {
        let path = format!("{}/../../docs/suites/{f}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        // Suites with an `[l7]` table are the testbed's L7 format (its tests load them).
        if toml::from_str::<toml::Table>(&text)
            .unwrap()
            .contains_key("l7")
        {
            continue;
        }
        Suite::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
}

#[test]
fn external_device_keys_go_together() {
    let dut = |extra: &str| {
        Suite::parse(&format!(
            "name = \"x\"\n[[dut]]\n{extra}\n[[test]]\nprocedure = \"throughput\"\n"
        ))
    };
    let s = dut("name = \"external\"\ntopology = \"external\"\nports = [\"afp:a@ns\", \"afp:b@ns\"]\ncounters_command = \"cat /tmp/c\"").unwrap();
    assert_eq!(s.duts[0].ports.as_ref().unwrap().len(), 2);
    assert_eq!(s.duts[0].counters_command.as_deref(), Some("cat /tmp/c"));
    assert_eq!(s.duts[0].deployment(), "external");
    for (extra, names) in [
        ("name = \"external\"\ntopology = \"external\"", "dut.ports"),
        (
            "name = \"external\"\ntopology = \"external\"\nports = [\"afp:a\"]",
            "1 port(s)",
        ),
        (
            "name = \"ovs\"\ntopology = \"phy2phy-veth\"\nports = [\"afp:a\", \"afp:b\"]",
            "dut.ports",
        ),
        (
            "name = \"ovs\"\ntopology = \"phy2phy-veth\"\ncounters_command = \"x\"",
            "dut.counters_command",
        ),
    ] {
        let e = dut(extra).unwrap_err().to_string();
        assert!(e.contains(names), "{extra}: {e}");
    }
}

#[test]
fn device_cost_table_parses_and_checks_its_keys() {
    let base = "name = \"cost\"\n[[dut]]\nname = \"linux-bridge\"\ntopology = \"phy2phy-veth\"\n";
    let s = Suite::parse(&format!(
        "{base}[device_cost]\nloads_fps = [50000, 100000]\n"
    ))
    .unwrap();
    assert!(s.tests.is_empty());
    let d = s.device_cost.unwrap();
    assert_eq!(d.loads_fps, vec![50_000.0, 100_000.0]);
    assert_eq!((d.trial_duration_s, d.repetitions), (5.0, 3));
    let e = Suite::parse(&format!("{base}[device_cost]\nloads_fps = []\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("device_cost.loads_fps"), "{e}");
    let e = Suite::parse(&format!("{base}[device_cost]\nloads_fps = [-1]\n"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("device_cost.loads_fps") && e.contains("-1"),
        "{e}"
    );
    let e = Suite::parse(&format!(
        "{base}[device_cost]\nloads_fps = [1]\nrepetitions = 0\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("device_cost.repetitions"), "{e}");
    let e = Suite::parse(&format!("{base}[device_cost]\nloads = [1]\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("loads"), "{e}");
    // Neither tests nor a device-cost table: nothing to run.
    let e = Suite::parse(base).unwrap_err().to_string();
    assert!(e.contains("[[test]]") && e.contains("[device_cost]"), "{e}");
}

#[test]
fn the_lag_suite_has_a_failover_test_that_checks_its_keys_and_needs_the_hook() {
    let path = format!("{}/../../docs/suites/lag.toml", env!("CARGO_MANIFEST_DIR"));
    let s = Suite::parse(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let t = s
        .tests
        .iter()
        .find(|t| t.procedure() == "failover")
        .expect("a failover test in lag.toml");
    assert_eq!(t.id("phy2phy"), "lag_failover");
    let line = s.line(&s.frame_sizes[0]).unwrap();
    let c = t.failover_config(&line).unwrap().unwrap();
    assert_eq!(
        c.bound,
        Some(Duration::from_secs(3)),
        "one fast LACP timeout"
    );
    assert!(c.down_at < c.duration && c.up_at.is_none_or(|u| u > c.down_at));
    for d in ["vecswitch-lag", "ovs-lag"] {
        assert!(t.applies_to(d, &s.frame_sizes[0]));
    }
    // Bad keys name the key.
    let base = "name = \"x\"\n[[dut]]\nname = \"vecswitch-lag\"\ntopology = \"phy2phy-lag\"\n[[test]]\nprocedure = \"failover\"\n";
    for (extra, key) in [
        ("", "test.load_fps / test.load_percent"),
        (
            "load_fps = 1000\nload_percent = 1",
            "test.load_fps / test.load_percent",
        ),
        ("load_percent = 101", "test.load_fps / test.load_percent"),
        ("load_fps = 1000\ndown_at_s = 6", "failover.down_at_s"),
        ("load_fps = 1000\nup_at_s = 1", "failover.up_at_s"),
        (
            "load_fps = 1000\noutage_bound_ms = -3",
            "test.outage_bound_ms",
        ),
        ("load_fps = 1000\nduts = [\"ovs\"]", "test.duts"),
    ] {
        let e = Suite::parse(&format!("{base}{extra}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{extra:?}: {e}");
    }
    // Defaults: 6 s, down at 2 s, member 0, no learning, no bound.
    let s = Suite::parse(&format!("{base}load_percent = 1\n")).unwrap();
    let c = s.tests[0]
        .failover_config(&s.line(&s.frame_sizes[0]).unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        (c.duration, c.down_at, c.up_at, c.member, c.learning, c.bound),
        (
            Duration::from_secs(6),
            Duration::from_secs(2),
            None,
            0,
            Duration::ZERO,
            None
        )
    );
    // A simulated device cannot take a link down: an error, not a plain trial.
    let mut sim = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1);
    let e = run_test(
        &mut sim,
        &s.tests[0],
        &s.line(&s.frame_sizes[0]).unwrap(),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("failover"), "{e}");
    assert_eq!(sim.trials(), 0);
}

#[test]
fn rfc2889_tests_parse_check_their_keys_and_need_an_address_device() {
    let path = format!(
        "{}/../../docs/suites/l2-services.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let s = Suite::parse(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let TestSpec::Rfc2889Caching {
        max_addresses,
        learn_rate_fps,
        ..
    } = &s.tests[0]
    else {
        panic!("{:?}", s.tests[0])
    };
    assert_eq!((*max_addresses, *learn_rate_fps), (16384, 4000.0));
    assert_eq!(s.tests[0].procedure(), "rfc2889-caching");
    assert_eq!(s.tests[1].procedure(), "rfc2889-learning");
    assert_eq!(s.tests[0].id("phy2phy"), "phy2phy_rfc2889_caching");
    assert_eq!(s.tests[1].id("phy2phy"), "phy2phy_rfc2889_learning");
    // Defaults.
    let base =
        "name = \"x\"\n[[dut]]\nname = \"linux-bridge\"\ntopology = \"phy2phy-veth\"\n[[test]]\n";
    let s = Suite::parse(&format!(
        "{base}procedure = \"rfc2889-caching\"\nmax_addresses = 10\n"
    ))
    .unwrap();
    assert_eq!(
        s.tests[0],
        TestSpec::Rfc2889Caching {
            id: None,
            min_addresses: 1,
            max_addresses: 10,
            resolution: 1,
            learn_rate_fps: 1_000.0,
            duts: None,
        }
    );
    // Bad ranges and unknown devices name the key.
    for (extra, key) in [
        (
            "procedure = \"rfc2889-caching\"\nmax_addresses = 0",
            "test.min_addresses",
        ),
        (
            "procedure = \"rfc2889-caching\"\nmax_addresses = 9\nlearn_rate_fps = -1",
            "test.learn_rate_fps",
        ),
        (
            "procedure = \"rfc2889-caching\"\nmax_addresses = 9\nduts = [\"ovs\"]",
            "test.duts",
        ),
        (
            "procedure = \"rfc2889-learning\"\naddresses = 0\nmax_fps = 10",
            "test.addresses",
        ),
        (
            "procedure = \"rfc2889-learning\"\naddresses = 5\nmin_fps = 100\nmax_fps = 10",
            "test.min_fps",
        ),
        ("procedure = \"rfc2889-learning\"\naddresses = 5", "max_fps"),
    ] {
        let e = Suite::parse(&format!("{base}{extra}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{extra}: {e}");
    }
    // The duts filter applies.
    let s = Suite::parse(&format!(
        "{base}procedure = \"rfc2889-caching\"\nmax_addresses = 9\nduts = [\"linux-bridge\"]\n"
    ))
    .unwrap();
    assert!(s.tests[0].applies_to("linux-bridge", &FrameSize::Bytes(64)));
    assert!(!s.tests[0].applies_to("ovs", &FrameSize::Bytes(64)));
    // A simulated device has no address device: the test says what it needs.
    let mut m = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1);
    let e = run_test(&mut m, &s.tests[0], &LineRate::ten_gig(64), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rfc2889-caching") && e.contains("bridge DUT"),
        "{e}"
    );
}

/// A measurer whose address device is a simulated bridge of 700 entries.
struct SimAddresses(crate::procedures::rfc2889::SimBridge);
impl Measurer for SimAddresses {
    fn trial(&mut self, _: Load, _: Duration) -> Result<crate::TrialResult, LabError> {
        unreachable!("address tests run no RFC 2544 trial")
    }
    fn burst(&mut self, _: u64) -> Result<crate::BurstResult, LabError> {
        unreachable!("address tests run no burst")
    }
    fn address_device(&mut self) -> Option<&mut dyn AddressDevice> {
        Some(&mut self.0)
    }
}

#[test]
fn rfc2889_tests_run_on_the_measurers_address_device_and_make_rows() {
    let text = "name = \"x\"\nframe_sizes = [64]\n[[dut]]\nname = \"vecswitch-bridge\"\ntopology = \"phy2phy-veth\"\n\
        [[test]]\nprocedure = \"rfc2889-caching\"\nmax_addresses = 4096\n\
        [[test]]\nprocedure = \"rfc2889-learning\"\naddresses = 500\nmin_fps = 100\nmax_fps = 100000\nresolution_fps = 100\n";
    let s = Suite::parse(text).unwrap();
    let mut m = SimAddresses(crate::procedures::rfc2889::SimBridge {
        capacity: 700,
        max_learn_fps: 30_000.0,
    });
    let mut pm = crate::progress::Progress::new(vec![]).measurer(&mut m, 1e6);
    let r = run_for_dut_observed(
        &s,
        &s.duts[0],
        &64.into(),
        None,
        &mut pm,
        &mut |_, _, _| Ok(()),
        &mut (),
    )
    .unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(r.records.len(), 2);
    let Outcome::AddressCaching(c) = &r.records[0].outcome else {
        panic!("{:?}", r.records[0].outcome)
    };
    assert_eq!(c.value, Some(700.0));
    let row = &r.records[0].rows()[0];
    assert_eq!(
        row["procedure"],
        crate::results::Cell::Text("rfc2889-caching".into())
    );
    assert_eq!(row["address_capacity"].num(), Some(700.0));
    assert!(row["flooded_frames"].num().unwrap() > 0.0);
    assert!(r.records[0].rows()[0]
        .keys()
        .all(|k| crate::results::COLUMNS.contains(k)));
    let row = &r.records[1].rows()[0];
    let rate = row["learn_rate_fps"].num().unwrap();
    assert!((29_900.0..=30_000.0).contains(&rate), "{rate}");
    assert_eq!(row["address_capacity"].num(), Some(500.0));
    // Results keep the outcome under its procedure name and read it back.
    let v = serde_json::to_value(&r.records[1].outcome).unwrap();
    assert_eq!(v["procedure"], "rfc2889-learning");
    let back: Outcome = serde_json::from_value(v).unwrap();
    assert_eq!(back, r.records[1].outcome);
}

#[test]
fn policies() {
    assert_eq!(parse_policy("single").unwrap(), TrialPolicy::Single);
    assert_eq!(parse_policy("best-of-5").unwrap(), TrialPolicy::BestOf(5));
    assert_eq!(parse_policy("worst-of-2").unwrap(), TrialPolicy::WorstOf(2));
    assert!(parse_policy("worst-of-0").is_err());
    assert!(parse_policy("median").is_err());
}

#[test]
fn tests_needing_throughput_fail_without_it() {
    let mut m = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1);
    let spec = TestSpec::Back2back {
        id: None,
        repetitions: 1,
        max_burst_s: 2.0,
        resolution_frames: 1,
    };
    let e = run_test(&mut m, &spec, &LineRate::ten_gig(64), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("throughput"), "{e}");
}

#[test]
fn misspelt_names_are_rejected_at_load_naming_the_key_the_value_and_the_names() {
    let base = "name = \"x\"\n[[dut]]\nname = \"a\"\ntopology = \"phy2phy-memif\"\n[[test]]\nprocedure = \"throughput\"\n[[test]]\n";
    for (extra, says) in [
        (
            "procedure = \"throughputt\"",
            &["test[1].procedure", "throughputt", "rfc2889-caching"][..],
        ),
        (
            "procedure = \"throughput\"\nsearch_max = \"gen\"",
            &[
                "test[1]",
                "test.search_max",
                "\"gen\"",
                "line-rate generator-limit",
            ],
        ),
        (
            "procedure = \"mlrsearch\"\nsearch_max = \"line\"",
            &["test[1]", "test.search_max", "\"line\"", "generator-limit"],
        ),
        (
            "procedure = \"throughput\"\nscale = { kind = \"vlans\", points = [1] }",
            &[
                "test[1]",
                "test.scale.kind",
                "vlans",
                "mac-entries routes flows sessions rules",
            ],
        ),
        (
            "procedure = \"throughput\"\npolicy = \"median\"",
            &["test[1]", "test.policy", "median", "best-of-N"],
        ),
        (
            "procedure = \"throughput\"\nflow_mode = \"x\"",
            &["test[1]", "test.flow_mode", "\"x\"", "cycle unique"],
        ),
    ] {
        let e = Suite::parse(&format!("{base}{extra}\n"))
            .unwrap_err()
            .to_string();
        for s in says {
            assert!(e.contains(s), "{extra}: {e} (wanted {s:?})");
        }
    }
    // A sim model and an unknown key name their place too.
    let e = Suite::parse("name = \"x\"\n[[dut]]\nname = \"a\"\ntopology = \"t\"\nsim = { model = \"fix\", capacity_mfps = 1 }\n[[test]]\nprocedure = \"throughput\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("dut[0].sim") && e.contains("fix") && e.contains("sporadic"),
        "{e}"
    );
    // The typed values read back as what the file said.
    let s = Suite::parse(&format!(
        "{base}procedure = \"throughput\"\nsearch_max = \"generator-limit\"\npolicy = \"worst-of-3\"\nflow_mode = \"unique\"\nscale = {{ kind = \"sessions\", points = [5] }}\n"
    ))
    .unwrap();
    let TestSpec::Throughput {
        search_max,
        policy,
        flow_mode,
        scale,
        ..
    } = &s.tests[1]
    else {
        panic!("{:?}", s.tests[1])
    };
    assert_eq!(*search_max, SearchMax::GeneratorLimit);
    assert_eq!(policy.0, TrialPolicy::WorstOf(3));
    assert_eq!(*flow_mode, FlowMode::Unique);
    assert_eq!(scale.as_ref().unwrap().kind, ScaleKind::Sessions);
    // And serialize back to the same names.
    let v = serde_json::to_value(&s.tests[1]).unwrap();
    assert_eq!(
        (
            &v["search_max"],
            &v["policy"],
            &v["flow_mode"],
            &v["scale"]["kind"]
        ),
        (
            &serde_json::json!("generator-limit"),
            &serde_json::json!("worst-of-3"),
            &serde_json::json!("unique"),
            &serde_json::json!("sessions")
        )
    );
}

#[test]
fn every_documented_suite_loads() {
    let dir = format!("{}/../../docs/suites", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Suites with an `[l7]` table are the testbed's L7 format (its tests load them).
        if toml::from_str::<toml::Table>(&text)
            .unwrap()
            .contains_key("l7")
        {
            continue;
        }
        Suite::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        n += 1;
    }
    assert!(n >= 10, "{n} suites in {dir}");
}
