//! `vecswitch bench`: run benchmark procedures and write a results document.
//!
//! ```text
//! vecswitch bench SUITE.toml --simulate [--seed N] [-o results.json]
//! vecswitch bench --simulate [--seed N] [-o results.json]     # built-in demo suite
//! ```
//!
//! Without `--simulate`, for every `[[dut]]` and frame size it builds the topology with the testbed
//! crate (namespaces, veth/memif links, run directory — all removed afterwards, also on Ctrl-C),
//! starts the DUT driver, drives the real generator through `GenMeasurer`, maps scale points to
//! `Testbed::configure_scale`, and records the DUT description and CPU placement with each test.
//! This needs root (namespaces) and the peer programs the drivers use. A `[[dut]]` with
//! `topology = "external"` names a device the lab does not start: its `ports` are opened as the
//! generator's, and its optional `counters_command` gives the device's counters. A suite's
//! `[device_cost]` table runs trials at fixed loads after each device's tests and records each
//! device's busy time per packet (`device_cost` in the results, a table in the report), at its
//! fixed loads and at one load per topology × frame size (`load_percent` of the group's lowest
//! NDR, `vecswitch_lab::device_cost::GroupLoads`, kept for the group's later rounds).
//!
//! A test that asks for repeated searches (`searches = N`) is run in N **rounds**
//! (`Suite::blocks`): every device and size of a round, each on a freshly built topology and a
//! freshly started device, before the next round — so that the repeats sample what varies
//! between process starts, interleaved across devices (A B C A B C). Each record says its round
//! (`setup.round`); the report merges a cell's rounds into a median and an interval.
//!
//! Before the first DUT of each topology and frame size it calibrates the generator on that kind
//! of link without a DUT (`testbed::calibrate_testbed`) and records the limit in
//! `generator.calibrated_limits` and beside every result. Progress (block, procedure, trial, load,
//! time left) goes to stderr. The results file is rewritten after every DUT × frame size; on
//! Ctrl-C the run stops after the current trial, tears down and saves what was measured with
//! `stopped` set (exit status 1). A DUT that fails to start is listed in `failures` and the run
//! carries on with the others.
//!
//! `--simulate` runs against the lab's seeded simulated DUTs (no network, no root): each
//! `[[dut]]` of the suite needs a `sim` model. Without a suite it runs the lab's demo (every
//! procedure, two simulated devices). Either way it shows what a run produces and feeds
//! `vecswitch report`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use vecswitch_lab::cpu_check::CpuWatch;
use vecswitch_lab::progress::{estimate_block_secs, Progress};
use vecswitch_lab::results::{CalibratedLimit, GeneratorInfo, Provenance, RunResults};
use vecswitch_lab::sim::SimDut;
use vecswitch_lab::suite::{run_for_dut_observed, DutRun, FrameSize, Suite};
use vecswitch_lab::{LabError, LineRate};
use vecswitch_testbed as testbed;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Suite file (TOML, see docs/METHODOLOGY.md).
    suite: Option<PathBuf>,
    /// Run against simulated DUTs (seeded, deterministic) instead of a real topology.
    #[arg(long)]
    simulate: bool,
    /// Seed for the simulated DUTs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the results document (JSON, schema vecswitch.results/1).
    #[arg(short, long, default_value = "results.json")]
    output: PathBuf,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    let command: Vec<String> = std::env::args().collect();
    // Application traffic (an `[l7]` table): its own procedure and results (issue 12).
    if let (Some(path), false) = (&args.suite, args.simulate) {
        if crate::l7_cmd::is_l7_suite(path)? {
            return crate::l7_cmd::main(path, &args.output, command);
        }
    }
    let run = match (&args.suite, args.simulate) {
        (None, true) => vecswitch_lab::demo::simulated_run(args.seed, command).context("simulated demo run")?,
        (Some(path), true) => simulate_suite(path, args.seed, command)?,
        (Some(path), false) => real_suite(path, command, &args.output)?,
        (None, false) => bail!("`vecswitch bench` needs a SUITE.toml (see docs/METHODOLOGY.md), or --simulate for the demo"),
    };
    run.save(&args.output)
        .with_context(|| format!("writing {}", args.output.display()))?;
    let rows: usize = run.tests.iter().map(|t| t.rows().len()).sum();
    eprintln!(
        "wrote {} ({} tests, {} result rows)",
        args.output.display(),
        run.tests.len(),
        rows
    );
    for f in &run.failures {
        eprintln!("bench: not measured: {f}");
    }
    if let Some(why) = &run.stopped {
        // A non-zero exit status: the results file holds what was measured before the stop.
        bail!("{why}; partial results in {}", args.output.display());
    }
    Ok(())
}

fn read_suite(path: &PathBuf) -> anyhow::Result<(Suite, serde_json::Value)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading suite {}", path.display()))?;
    let suite = Suite::parse(&text).with_context(|| format!("suite {}", path.display()))?;
    let config = serde_json::to_value(&suite).context("suite as JSON")?;
    Ok((suite, config))
}

fn simulate_suite(path: &PathBuf, seed: u64, command: Vec<String>) -> anyhow::Result<RunResults> {
    let (suite, config) = read_suite(path)?;
    let mut run = RunResults::new(Provenance::collect(command, Some(config)));
    for (i, dut) in suite.duts.iter().enumerate() {
        let Some(sim) = &dut.sim else {
            bail!("dut[{i}] ({}): --simulate needs a `sim` model, e.g. sim = {{ model = \"fixed\", capacity_mfps = 5 }}", dut.name);
        };
        for size in &suite.frame_sizes {
            let line = suite.line(size)?;
            let mut m = SimDut::new(sim.model(), seed)
                .with_buffer(sim.buffer_frames())
                .with_line_rate(line.max_fps());
            // Simulated devices have no tables: scale points re-run the same model.
            let r = run_for_dut_observed(
                &suite,
                dut,
                size,
                None,
                &mut m,
                &mut |_, _, _| Ok(()),
                &mut (),
            )
            .with_context(|| format!("{} at {}", dut.name, size.label()))?;
            if let Some(e) = r.error {
                return Err(anyhow::Error::new(e).context(format!(
                    "{} at {}",
                    dut.name,
                    size.label()
                )));
            }
            run.tests.extend(r.records);
        }
    }
    Ok(run)
}

/// Seconds of topology build and DUT start-up per block, for the time-left estimate.
const SETUP_ESTIMATE_S: f64 = 3.0;

/// Length of the generator's calibration trial per topology and frame size.
const CALIBRATION_TRIAL: std::time::Duration = std::time::Duration::from_millis(1500);

/// The blocks of a real run: (round, DUT index into the suite's `dut`, frame size), round by
/// round (`Suite::blocks`).
fn blocks(suite: &Suite) -> Vec<(u32, usize, FrameSize)> {
    suite.blocks()
}

/// The calibrated limit as the results record it.
fn calibrated_limit(
    c: &testbed::Calibration,
    size: &FrameSize,
    line: &LineRate,
    topology: &str,
) -> CalibratedLimit {
    CalibratedLimit {
        frame_size: line.frame_size,
        max_fps: c.limit_fps().round(),
        mix: size.mix().map(str::to_string),
        topology: Some(topology.to_string()),
        method: Some(format!(
            "{}, {:.1} s at maximum rate: sent {:.0} frames/s, received {:.0} frames/s",
            c.method,
            c.duration.as_secs_f64(),
            c.tx_fps,
            c.rx_fps
        )),
        latency_floor: c.latency_floor.clone(),
    }
}

/// Marks `run` as stopped early and saves it: what was measured until then is kept.
fn save_partial(run: &mut RunResults, reason: String, output: &Path) -> anyhow::Result<()> {
    run.stopped = Some(reason);
    run.save(output)
        .with_context(|| format!("writing {}", output.display()))
}

fn real_suite(path: &PathBuf, command: Vec<String>, output: &Path) -> anyhow::Result<RunResults> {
    let (suite, config) = read_suite(path)?;
    if suite.flows.is_some_and(|f| f > 1) {
        bail!(
            "flows = {} in {}: only 1 flow per direction is wired to the generator yet",
            suite.flows.unwrap_or(0),
            path.display()
        );
    }
    testbed::signal::install_stop_handler().context("installing the Ctrl-C handler")?;
    let stale = testbed::cleanup_stale(testbed::DEFAULT_PREFIX);
    eprintln!("bench: stale resources of earlier runs: {stale:?}");
    let bin = std::env::current_exe()
        .context("locating the vecswitch binary for the vecswitch drivers")?;
    // Every device's driver and topology before the first runs: a misspelt name in the last
    // [[dut]] must not surface hours into the run.
    for (i, dut) in suite.duts.iter().enumerate() {
        testbed::resolve_dut_spec(dut, &bin).with_context(|| {
            format!(
                "dut[{i}] ({}, {}) in {}",
                dut.name,
                dut.topology,
                path.display()
            )
        })?;
    }
    let mut run = RunResults::new(Provenance::collect(command, Some(config)));
    run.generator = Some(GeneratorInfo {
        name: "vecswitch-gen".into(),
        calibrated_limits: Vec::new(),
    });
    let blocks = blocks(&suite);
    // Calibration runs once per topology and frame size, in the first block that needs it.
    let mut to_calibrate = std::collections::BTreeSet::new();
    let estimates = blocks
        .iter()
        .map(|(r, i, f)| {
            let d = &suite.duts[*i];
            let calib = if to_calibrate.insert((d.topology.clone(), f.clone())) {
                CALIBRATION_TRIAL.as_secs_f64() + 1.0
            } else {
                0.0
            };
            let label = format!(
                "{} on {} at {}{}",
                d.name,
                d.topology,
                f.label(),
                round_label(&suite, *r, d, f)
            );
            (
                label,
                estimate_block_secs(&suite.round(*r).tests, &d.name, f, SETUP_ESTIMATE_S + calib),
            )
        })
        .collect();
    let progress = Progress::new(estimates);
    let mut limits: BTreeMap<(String, FrameSize), Option<f64>> = BTreeMap::new();
    let mut failed_duts = std::collections::BTreeSet::new();
    // The device-cost load of each topology × frame size: from the group's lowest NDR (so far),
    // settled once every device of the group has one and kept for its later rounds.
    let mut cell_loads = vecswitch_lab::device_cost::GroupLoads::new(&suite);
    for (b, (round, i, size)) in blocks.iter().enumerate() {
        let dut = &suite.duts[*i];
        if testbed::signal::stop_requested() {
            save_partial(
                &mut run,
                format!(
                    "stopped by a signal before {} on {} at {}",
                    dut.name,
                    dut.topology,
                    size.label()
                ),
                output,
            )?;
            return Ok(run);
        }
        progress.start_block(b);
        if failed_duts.contains(i) {
            eprintln!(
                "bench: skipping {} at {}: it failed at an earlier size",
                dut.name,
                size.label()
            );
            progress.finish_block();
            continue;
        }
        let outcome = run_block(
            &suite,
            (*round, *i),
            size,
            &bin,
            &progress,
            (&mut limits, &mut cell_loads),
            &mut run,
        );
        progress.finish_block();
        match outcome {
            Ok(None) => {}
            Ok(Some(e)) | Err(e) if testbed::signal::stop_requested() => {
                eprintln!("bench: stopped: {e:#}");
                save_partial(
                    &mut run,
                    format!(
                        "stopped by a signal during {} on {} at {}",
                        dut.name,
                        dut.topology,
                        size.label()
                    ),
                    output,
                )?;
                return Ok(run);
            }
            Ok(Some(e)) => {
                // The DUT ran but a test failed: keep going with the next block.
                eprintln!(
                    "bench: {} on {} at {}: {e:#}",
                    dut.name,
                    dut.topology,
                    size.label()
                );
                run.failures.push(format!(
                    "{} on {} at {}: {e:#}",
                    dut.name,
                    dut.topology,
                    size.label()
                ));
            }
            Err(e) => {
                // The topology or the DUT could not be set up: the other sizes would fail alike.
                eprintln!(
                    "bench: {} on {} at {}: {e:#}",
                    dut.name,
                    dut.topology,
                    size.label()
                );
                run.failures.push(format!(
                    "{} on {} at {}: {e:#}",
                    dut.name,
                    dut.topology,
                    size.label()
                ));
                failed_duts.insert(*i);
            }
        }
        // Saved after every block, so an abort (a second Ctrl-C) keeps everything before it.
        run.save(output)
            .with_context(|| format!("writing {}", output.display()))?;
    }
    Ok(run)
}

/// ` (round 2 of 3)` for a cell measured in several rounds, empty otherwise.
fn round_label(
    suite: &Suite,
    round: u32,
    dut: &vecswitch_lab::suite::DutSpec,
    size: &FrameSize,
) -> String {
    match suite.rounds(&dut.name, size) {
        1 => String::new(),
        n => format!(" (round {} of {n})", round + 1),
    }
}

/// Calibrated limits per (topology, size) and the device-cost loads per (topology, size).
type BlockMemory<'a> = (
    &'a mut BTreeMap<(String, FrameSize), Option<f64>>,
    &'a mut vecswitch_lab::device_cost::GroupLoads,
);

/// Runs one DUT at one frame size in one round: build the topology, calibrate the generator
/// (once per topology and size), start the DUT, run the round's tests, tear down. Records (also
/// those finished before a failing test) go into `run`. `Err` = set-up failed; `Ok(Some(e))` = a
/// test failed.
fn run_block(
    suite: &Suite,
    (round, i): (u32, usize),
    size: &FrameSize,
    bin: &Path,
    progress: &Progress,
    (limits, cell_loads): BlockMemory<'_>,
    run: &mut RunResults,
) -> anyhow::Result<Option<anyhow::Error>> {
    let dut = &suite.duts[i];
    let rounds = suite.rounds(&dut.name, size);
    let this_round = suite.round(round);
    let (kind, topology) = testbed::resolve_dut_spec(dut, bin)
        .with_context(|| format!("dut[{i}] ({}, {})", dut.name, dut.topology))?;
    let line = suite.line(size)?;
    let spec = size.spec()?;
    let mut tb = testbed::Testbed::build(topology.clone())
        .with_context(|| format!("building {}", dut.topology))?;
    let key = (dut.topology.clone(), size.clone());
    if topology.is_external() && topology.link() == testbed::Link::Veth {
        // The generator's own ceiling needs a loop without the device; on an external device's
        // interfaces the lab has none (memif is calibrated on an in-process pair as usual).
        if !limits.contains_key(&key) {
            eprintln!(
                "bench: no generator calibration on the external device's interfaces ({} at {})",
                dut.topology,
                size.label()
            );
            limits.insert(key.clone(), None);
        }
    }
    if !limits.contains_key(&key) {
        eprintln!(
            "bench: calibrating the generator on {} at {} (no DUT in the loop)",
            dut.topology,
            size.label()
        );
        let limit = match testbed::calibrate_testbed(&tb, &spec, CALIBRATION_TRIAL) {
            Ok(c) => {
                eprintln!(
                    "bench: generator limit on {} at {}: {:.0} frames/s ({})",
                    dut.topology,
                    size.label(),
                    c.limit_fps(),
                    c.method
                );
                if let Some(g) = run.generator.as_mut() {
                    g.calibrated_limits
                        .push(calibrated_limit(&c, size, &line, &dut.topology));
                }
                Some(c.limit_fps().round())
            }
            Err(e) => {
                eprintln!(
                    "bench: calibration on {} at {} failed, no limit recorded: {e}",
                    dut.topology,
                    size.label()
                );
                run.failures.push(format!(
                    "generator calibration on {} at {}: {e}",
                    dut.topology,
                    size.label()
                ));
                None
            }
        };
        limits.insert(key.clone(), limit);
    }
    let limit = limits.get(&key).copied().flatten();
    let mut ports = tb
        .open_generator_ports()
        .context("opening the generator ports")?;
    // How long a cache line takes between the generator's CPU and the device's right now: the
    // host decides it, memif throughput follows it (docs/METHODOLOGY.md, "memif's two modes").
    let cores = tb.wiring().cores;
    let core_to_core = testbed::devcost::core_to_core(
        cores.generator,
        cores.dut,
        20_000,
        std::time::Duration::from_secs(2),
    )
    .map_or_else(
        |e| serde_json::json!({ "error": e.to_string() }),
        |c| serde_json::to_value(c).unwrap_or_default(),
    );
    // (v2v-vm: the guests' outer NICs are the generator's ports, polled while they boot.)
    tb.start_with_generator(kind.build(), &mut ports)
        .with_context(|| format!("starting {}", dut.name))?;
    let describe = tb.describe_dut();
    let result = {
        let tbr = &tb;
        // Tagged as the DUT's service expects (an EVPL's UNI and ENNI), untagged otherwise.
        let mut m = testbed::GenMeasurer::for_testbed(
            tbr,
            ports,
            testbed::dut::evpl::dut_streams(tbr, &spec, suite.bidirectional),
        )
        .context("generator")?;
        if let Some(t) = suite.tester_tolerance_percent {
            m = m.tolerance(t / 100.0);
        }
        let mut pm = progress.measurer(&mut m, line.max_fps());
        let mut progress_observer = progress.clone();
        // Before each test: did anything else use the measuring CPUs? (lab::cpu_check)
        let cores = tbr.wiring().cores;
        let own: Vec<u32> = tbr
            .placement(testbed::generator_placement())
            .processes
            .iter()
            .map(|p| p.pid)
            .chain([std::process::id()])
            .collect();
        let mut observer = CpuWatch::new(
            &mut progress_observer,
            vec![cores.generator, cores.dut, cores.vnf],
            own,
        );
        let r = run_for_dut_observed(
            &this_round,
            dut,
            size,
            limit,
            &mut pm,
            &mut |_, sc, point| {
                let scale = testbed::Scale::of(sc.kind, point).map_err(|e| {
                    LabError::invalid("test.scale", e, "a kind and point the testbed accepts")
                })?;
                tbr.configure_scale(scale)
                    .map_err(|e| LabError::Dut(e.to_string()))
            },
            &mut observer,
        );
        // Device cost after the tests, on the same running device (docs/TESTBED.md).
        if let (
            Some(dc),
            Ok(DutRun {
                error: None,
                records,
            }),
        ) = (&suite.device_cost, &r)
        {
            {
                // The group's load (load_percent): from the lowest NDR of this topology and
                // size known so far, settled once every device of the group has one.
                let thr = records
                    .iter()
                    .find_map(|t| vecswitch_lab::suite::found_throughput(&t.outcome));
                cell_loads.note_throughput(i, size, thr);
                let cell = cell_loads.load(i, size, limit).map(|l| (l.fps, l.basis));
                let mut loads = dc.loads_fps.clone();
                loads.extend(cell.as_ref().map(|c| c.0));
                eprintln!(
                    "bench: device cost of {} at {}: loads {:?} frames/s{}",
                    dut.name,
                    size.label(),
                    loads,
                    cell.as_ref()
                        .map(|c| format!(" ({})", c.1))
                        .unwrap_or_default()
                );
                let rows = dc.trial_duration().and_then(|d| {
                    testbed::devcost::measure_device_cost(
                        tbr,
                        &mut pm,
                        &dut.topology,
                        &size.label(),
                        &loads,
                        d,
                        dc.repetitions,
                    )
                });
                match rows {
                    Ok(mut rows) => {
                        for row in &mut rows {
                            row.round = (rounds > 1).then_some(round + 1);
                            if let Some((l, why)) = &cell {
                                if (row.intended_fps - l).abs() <= l * 1e-9 {
                                    row.load_basis = Some(why.clone());
                                }
                            }
                            eprintln!("bench: device cost: {}", row.summary());
                        }
                        run.device_cost.extend(rows)
                    }
                    Err(e) => run.failures.push(format!(
                        "device cost of {} on {} at {}: {e}",
                        dut.name,
                        dut.topology,
                        size.label()
                    )),
                }
            }
        }
        (r, observer.checks)
    };
    let (result, cpu_checks) = result;
    let placement = tb.placement(testbed::generator_placement());
    // phy2phy-lag: the frames each member carried, the tester's LAG's drops, LACP's state.
    let lag = tb.lag_report().map(|r| {
        r.map_or_else(
            |e| serde_json::json!({ "error": e.to_string() }),
            |l| serde_json::to_value(l).unwrap_or_default(),
        )
    });
    let stopped = tb.stop();
    let DutRun { mut records, error } =
        result.with_context(|| format!("{} at {}", dut.name, size.label()))?;
    let mut setup =
        serde_json::json!({ "topology": dut.topology, "dut": describe, "placement": placement });
    setup["core_to_core"] = core_to_core;
    if let Some(l) = lag {
        setup["lag"] = l;
    }
    if rounds > 1 {
        // Each round on a freshly started device; the report merges the rounds of a cell.
        setup["round"] = serde_json::json!(round + 1);
        setup["rounds"] = serde_json::json!(rounds);
    }
    // The k-th check ran before the k-th record's test (CpuWatch).
    for (i, r) in records.iter_mut().enumerate() {
        let mut s = setup.clone();
        if let Some(c) = cpu_checks.get(i) {
            if c.flagged {
                eprintln!(
                    "bench: {} {} at {}: other processes were busy on the measuring CPUs before \
                     the test: {}",
                    dut.name,
                    r.id,
                    size.label(),
                    c.summary()
                );
            }
            s["cpu_check"] = serde_json::to_value(c).unwrap_or_default();
        }
        r.setup = Some(s);
        if rounds > 1 {
            r.description = format!("{}, round {} of {rounds}", r.description, round + 1);
        }
    }
    run.tests.extend(records);
    if let Err(e) = stopped {
        return Ok(Some(
            anyhow::Error::new(e).context(format!("stopping {}", dut.name)),
        ));
    }
    Ok(error.map(|e| anyhow::Error::new(e).context(format!("{} at {}", dut.name, size.label()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_suite_covers_every_dut_size_and_test() {
        let path = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/suites/simulated.toml"
        ));
        let run = simulate_suite(&path, 1, vec!["test".into()]).unwrap();
        // 2 DUTs × 3 frame sizes × 5 tests.
        assert_eq!(run.tests.len(), 30);
        assert!(run.provenance.config.as_ref().unwrap().get("dut").is_some());
        let ovs_1518 = run
            .tests
            .iter()
            .find(|t| {
                t.vswitch == "ovs" && t.frame_size == 1518 && t.outcome.name() == "throughput"
            })
            .unwrap();
        let row = &ovs_1518.rows()[0];
        // The sporadic model's capacity is 0.84 Mfps, above 1518-byte line rate (812 744 fps).
        let fps = row["throughput_rx_fps"].num().unwrap();
        assert!(fps > 0.99 * 812_743.8 && fps <= 812_744.0, "{fps}");
    }

    #[test]
    fn partial_save_keeps_the_tests_and_says_why() {
        let path = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/suites/simulated.toml"
        ));
        let mut run = simulate_suite(&path, 1, vec!["test".into()]).unwrap();
        run.tests.truncate(7);
        let out = std::env::temp_dir().join(format!(
            "vecswitch-bench-partial-{}.json",
            std::process::id()
        ));
        save_partial(
            &mut run,
            "stopped by a signal during ovs on phy2phy-veth at 256 B".into(),
            &out,
        )
        .unwrap();
        let back = RunResults::load(&out).unwrap();
        let _ = std::fs::remove_file(&out);
        assert_eq!(back.tests.len(), 7);
        assert_eq!(back.tests, run.tests);
        assert!(back
            .stopped
            .as_deref()
            .unwrap()
            .contains("ovs on phy2phy-veth at 256 B"));
    }

    #[test]
    fn calibration_maps_to_the_results_limit() {
        let c = testbed::Calibration {
            size: "imix".into(),
            tx_fps: 5.0e6,
            rx_fps: 4.5e6,
            lost: 10,
            duration: std::time::Duration::from_millis(1500),
            method: "memif server/client pair in one process (no DUT)".into(),
            latency_floor: None,
        };
        let size = FrameSize::Mix("imix".into());
        let suite = Suite::parse("name = \"x\"\nframe_sizes = [\"imix\"]\n[[dut]]\nname = \"a\"\ntopology = \"phy2phy-memif\"\n[[test]]\nprocedure = \"throughput\"\n").unwrap();
        let line = suite.line(&size).unwrap();
        let l = calibrated_limit(&c, &size, &line, "phy2phy-memif");
        // The limit is what came back through the loop, not what was sent.
        assert_eq!(l.max_fps, 4.5e6);
        assert_eq!(l.frame_size, 354);
        assert_eq!(l.mix.as_deref(), Some("imix"));
        assert_eq!(l.topology.as_deref(), Some("phy2phy-memif"));
        assert!(l
            .method
            .as_deref()
            .unwrap()
            .contains("sent 5000000 frames/s, received 4500000 frames/s"));
        // A test of that topology and mix finds it; another topology does not.
        let g = GeneratorInfo {
            name: "g".into(),
            calibrated_limits: vec![l],
        };
        let mut m = SimDut::new(vecswitch_lab::sim::SimModel::Fixed { capacity_fps: 1e6 }, 1)
            .with_line_rate(line.max_fps());
        let mut r = run_for_dut_observed(
            &suite,
            &suite.duts[0],
            &size,
            None,
            &mut m,
            &mut |_, _, _| Ok(()),
            &mut (),
        )
        .unwrap();
        let rec = r.records.remove(0);
        assert_eq!(g.limit_for_test(&rec), Some(4.5e6));
        let mut other = rec.clone();
        other.topology = Some("phy2phy-veth".into());
        assert_eq!(g.limit_for_test(&other), None);
    }

    #[test]
    fn blocks_run_every_dut_at_every_size_in_order() {
        let suite = Suite::parse(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../docs/suites/simulated.toml"
            ))
            .unwrap(),
        )
        .unwrap();
        let b = blocks(&suite);
        assert_eq!(b.len(), suite.duts.len() * suite.frame_sizes.len());
        assert_eq!(b[0], (0, 0, FrameSize::Bytes(64)));
        assert_eq!(b.last().unwrap(), &(0, 1, FrameSize::Bytes(1518)));
    }

    #[test]
    fn simulate_without_sim_model_names_the_dut() {
        let dir =
            std::env::temp_dir().join(format!("vecswitch-bench-nosim-{}", std::process::id()));
        std::fs::write(&dir, "name = \"x\"\n[[dut]]\nname = \"ovs\"\ntopology = \"phy2phy-veth\"\n[[test]]\nprocedure = \"throughput\"\n").unwrap();
        let e = simulate_suite(&dir, 1, vec![]).unwrap_err().to_string();
        let _ = std::fs::remove_file(&dir);
        assert!(e.contains("dut[0] (ovs)") && e.contains("sim"), "{e}");
    }
}
