//! Running a suite's tests on a [`Measurer`]: one test ([`run_test`]), or every test of one
//! device and frame size ([`run_for_dut_observed`]).

use super::{secs, DutSpec, FlowMode, FrameSize, GoalSpec, ScaleSpec, Suite, TestSpec};
use crate::measurer::Measurer;
use crate::procedures::back_to_back::{back_to_back, BackToBackConfig};
use crate::procedures::failover::failover;
use crate::procedures::latency::{latency_at, LatencyConfig};
use crate::procedures::linear::{linear_sweep, LinearSweepConfig};
use crate::procedures::mlrsearch::{mlrsearch, mlrsearch_repeated, MlrConfig};
use crate::procedures::rfc2889::{address_caching_capacity, address_learning_rate, AddressDevice};
use crate::procedures::soak::{soak, SoakConfig};
use crate::procedures::throughput::{throughput, ThroughputConfig};
use crate::results::{Outcome, TestRecord};
use crate::{LabError, LineRate, Load};

/// Runs one test on `m`. `throughput_fps` is the throughput measured earlier for the same DUT and
/// frame size (required by latency, back-to-back and soak). Scale sweeps are the caller's loop
/// (it must reconfigure the DUT); this runs one point.
pub fn run_test<M: Measurer + ?Sized>(
    m: &mut M,
    spec: &TestSpec,
    line: &LineRate,
    throughput_fps: Option<f64>,
) -> Result<Outcome, LabError> {
    run_test_with_limit(m, spec, line, throughput_fps, None)
}

/// [`run_test`] knowing the generator's calibrated limit (frames/s) for this topology and size,
/// which a throughput test with `search_max = "generator-limit"` searches up to.
pub fn run_test_with_limit<M: Measurer + ?Sized>(
    m: &mut M,
    spec: &TestSpec,
    line: &LineRate,
    throughput_fps: Option<f64>,
    generator_limit_fps: Option<f64>,
) -> Result<Outcome, LabError> {
    let max = line.max_fps();
    let need = || {
        throughput_fps.filter(|x| *x > 0.0).ok_or_else(|| {
            LabError::invalid(
                "throughput",
                "not measured",
                "a throughput or mlrsearch test earlier in the suite that found a rate",
            )
        })
    };
    Ok(match spec {
        TestSpec::Throughput {
            trial_duration_s,
            loss_tolerance_percent,
            resolution_percent,
            policy,
            verify,
            learning_s,
            learning_percent,
            search_max,
            flow_mode,
            ..
        } => {
            let top = search_max.top(max, generator_limit_fps);
            // The lowest load searched is one resolution step: a device that fails there has no
            // throughput at this resolution ("no load passed"), rather than a trivial 0 frames/s.
            let res = top * resolution_percent / 100.0;
            let mut c = ThroughputConfig::new(
                res.min(top / 2.0),
                top,
                secs("trial_duration_s", *trial_duration_s)?,
            );
            c.loss_tolerance = loss_tolerance_percent / 100.0;
            c.resolution_fps = res;
            c.policy = policy.0;
            c.verify = *verify;
            if *learning_s > 0.0 {
                c.learning = Some((
                    Load::percent_of(*learning_percent, line),
                    secs("learning_s", *learning_s)?,
                ));
            }
            if *flow_mode == FlowMode::Unique {
                // The new-session rate: every frame of every trial a new 5-tuple; back to
                // repeating flows afterwards, also when the search failed.
                m.set_unique_flows(true)?;
                let r = throughput(m, &c);
                m.set_unique_flows(false)?;
                Outcome::Throughput(r?)
            } else {
                Outcome::Throughput(throughput(m, &c)?)
            }
        }
        TestSpec::Latency {
            fractions_percent,
            trial_duration_s,
            repetitions,
            ..
        } => {
            let c = LatencyConfig {
                fractions: fractions_percent.iter().map(|p| p / 100.0).collect(),
                trial_duration: secs("trial_duration_s", *trial_duration_s)?,
                repetitions: *repetitions,
            };
            Outcome::Latency(latency_at(m, need()?, &c)?)
        }
        TestSpec::Linear {
            start_percent,
            end_percent,
            step_percent,
            trial_duration_s,
            ..
        } => {
            let c = LinearSweepConfig {
                line: *line,
                start_pct: *start_percent,
                end_pct: *end_percent,
                step_pct: *step_percent,
                trial_duration: secs("trial_duration_s", *trial_duration_s)?,
            };
            Outcome::LinearSweep(linear_sweep(m, &c)?)
        }
        TestSpec::Back2back {
            repetitions,
            max_burst_s,
            resolution_frames,
            ..
        } => {
            let mut c = BackToBackConfig::new(max, need()?);
            c.repetitions = *repetitions;
            c.max_burst = (max * max_burst_s).ceil() as u64;
            c.resolution_frames = *resolution_frames;
            Outcome::BackToBack(back_to_back(m, &c)?)
        }
        TestSpec::Mlrsearch {
            goals,
            min_percent,
            search_max,
            searches,
            ..
        } => {
            let top = search_max.top(max, generator_limit_fps);
            let mut c = MlrConfig::ndr_pdr((max * min_percent / 100.0).min(top / 2.0), top);
            if !goals.is_empty() {
                c.goals = goals.iter().map(GoalSpec::goal).collect::<Result<_, _>>()?;
            }
            Outcome::Mlrsearch(if *searches == 1 {
                mlrsearch(m, &c)?
            } else {
                mlrsearch_repeated(m, &c, *searches)?
            })
        }
        TestSpec::Soak {
            percent_of_throughput,
            duration_s,
            interval_s,
            ..
        } => {
            let c = SoakConfig {
                load: Load::fps(need()? * percent_of_throughput / 100.0),
                total: secs("duration_s", *duration_s)?,
                interval: secs("interval_s", *interval_s)?,
            };
            Outcome::Soak(soak(m, &c)?)
        }
        TestSpec::Failover { .. } => match spec.failover_config(line)? {
            Some(c) => Outcome::Failover(Box::new(failover(m, &c)?)),
            None => unreachable!("a failover test has a failover config"),
        },
        TestSpec::Rfc2889Caching { .. } | TestSpec::Rfc2889Learning { .. } => {
            match (spec.caching_config(), spec.learning_config()) {
                (Some(c), _) => {
                    Outcome::AddressCaching(address_caching_capacity(address_device(m)?, &c)?)
                }
                (_, Some(c)) => {
                    Outcome::AddressLearning(address_learning_rate(address_device(m)?, &c)?)
                }
                (None, None) => unreachable!("an RFC 2889 test has one of the two configs"),
            }
        }
    })
}

/// The measurer's address device, or an error saying the RFC 2889 tests need one.
fn address_device<M: Measurer + ?Sized>(m: &mut M) -> Result<&mut dyn AddressDevice, LabError> {
    m.address_device().ok_or_else(|| {
        LabError::invalid(
            "test.procedure",
            "rfc2889-caching / rfc2889-learning",
            "a device the measurer can drive with per-address learning and test frames (a real \
             bridge DUT on a two-port topology; simulated devices have none)",
        )
    })
}

/// Called before each scale point: `(measurer, the test's scale spec, the point)`.
pub type Reconfigure<'a> =
    dyn FnMut(&mut dyn Measurer, &ScaleSpec, u64) -> Result<(), LabError> + 'a;

/// Runs every test of `suite` for one DUT and frame size on `m` and returns the records.
///
/// The caller owns the topology: it builds it for `dut`, makes the measurer, calls this, and tears
/// down. `reconfigure(m, scale, point)` is called before each point of a scale sweep (the testbed
/// maps it to `Dut::configure_scale`). The throughput found by the first throughput or mlrsearch
/// test feeds the latency, back-to-back and soak tests that follow.
pub fn run_for_dut(
    suite: &Suite,
    dut: &DutSpec,
    line: &LineRate,
    m: &mut dyn Measurer,
    reconfigure: &mut Reconfigure<'_>,
) -> Result<Vec<TestRecord>, LabError> {
    let size = FrameSize::Bytes(line.frame_size);
    let r = run_for_dut_observed(suite, dut, &size, None, m, reconfigure, &mut ())?;
    match r.error {
        Some(e) => Err(e),
        None => Ok(r.records),
    }
}

/// Told when each test of a suite starts (progress display); every method has a no-op default.
pub trait SuiteObserver {
    /// Test `index` of the suite starts (`scale_point` for each point of a scale sweep).
    fn test_started(&mut self, _index: usize, _spec: &TestSpec, _scale_point: Option<u64>) {}
}

impl SuiteObserver for () {}

/// What [`run_for_dut_observed`] measured: the records of every test that finished, and the
/// error that ended the run early, if any (their records are still valid results).
#[derive(Debug)]
pub struct DutRun {
    pub records: Vec<TestRecord>,
    pub error: Option<LabError>,
}

/// Runs the tests of `suite` that apply to `dut` at `size` ([`TestSpec::applies_to`]) on `m`.
///
/// Like [`run_for_dut`], but for frame-size mixes too, telling `observer` as each test starts,
/// and keeping the records of the tests finished before an error (a stop requested by Ctrl-C
/// surfaces as the measurer's error: what was measured until then is returned in
/// [`DutRun::records`]). Errors before any test ran (an invalid size) are returned as `Err`.
pub fn run_for_dut_observed(
    suite: &Suite,
    dut: &DutSpec,
    size: &FrameSize,
    generator_limit_fps: Option<f64>,
    m: &mut dyn Measurer,
    reconfigure: &mut Reconfigure<'_>,
    observer: &mut dyn SuiteObserver,
) -> Result<DutRun, LabError> {
    let line = suite.line(size)?;
    let mut records = Vec::new();
    let mut thr = None;
    // A scale point's traffic goes to as many destinations as the table has entries (capped).
    let record = |spec: &TestSpec, outcome: Outcome, scale: Option<u64>| TestRecord {
        id: spec.id(dut.deployment()),
        description: format!("{} ({})", spec.procedure(), dut.topology),
        deployment: dut.deployment().to_string(),
        vswitch: dut.name.clone(),
        traffic_type: "udp".into(),
        frame_size: line.frame_size,
        line,
        bidirectional: suite.bidirectional,
        flows: spec
            .scale()
            .zip(scale)
            .and_then(|(sc, p)| sc.destinations(p))
            .or(suite.flows),
        scale,
        setup: None,
        frame_mix: size.mix().map(str::to_string),
        topology: Some(dut.topology.clone()),
        generator_limit_fps,
        outcome,
    };
    for (index, spec) in suite.tests.iter().enumerate() {
        if !spec.applies_to(&dut.name, size) {
            continue;
        }
        // No throughput found (no load passed): nothing to measure latency, bursts or soak at;
        // the throughput record already says so.
        if spec.needs_throughput() && thr.is_none_or(|x| x <= 0.0) {
            continue;
        }
        let step = match spec.scale() {
            Some(sc) => sc.points.iter().try_for_each(|&point| {
                observer.test_started(index, spec, Some(point));
                reconfigure(m, sc, point)?;
                let o = run_test_with_limit(m, spec, &line, thr, generator_limit_fps)?;
                records.push(record(spec, o, Some(point)));
                Ok(())
            }),
            None => {
                observer.test_started(index, spec, None);
                run_test_with_limit(m, spec, &line, thr, generator_limit_fps).map(|o| {
                    thr = thr.or(found_throughput(&o));
                    records.push(record(spec, o, None));
                })
            }
        };
        if let Err(e) = step {
            return Ok(DutRun {
                records,
                error: Some(e),
            });
        }
    }
    Ok(DutRun {
        records,
        error: None,
    })
}

/// The throughput an outcome found, for the tests that follow it.
pub fn found_throughput(o: &Outcome) -> Option<f64> {
    match o {
        Outcome::Throughput(t) => t.throughput_fps,
        // The first goal (NDR by default) decides.
        Outcome::Mlrsearch(m) => m.goals.first().and_then(|g| g.relevant_lower_bound_fps),
        _ => None,
    }
}
