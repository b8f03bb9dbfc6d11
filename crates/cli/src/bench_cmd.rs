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
//! This needs root (namespaces) and the peer programs the drivers use.
//!
//! `--simulate` runs against the lab's seeded simulated DUTs (no network, no root): each
//! `[[dut]]` of the suite needs a `sim` model. Without a suite it runs the lab's demo (every
//! procedure, two simulated devices). Either way it shows what a run produces and feeds
//! `vecswitch report`.

use std::path::PathBuf;

use anyhow::{bail, Context};
use vecswitch_lab::results::{GeneratorInfo, Provenance, RunResults};
use vecswitch_lab::LabError;
use vecswitch_testbed as testbed;
use vecswitch_lab::sim::SimDut;
use vecswitch_lab::suite::{run_for_dut, Suite};

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
    let run = match (&args.suite, args.simulate) {
        (None, true) => vecswitch_lab::demo::simulated_run(args.seed, command).context("simulated demo run")?,
        (Some(path), true) => simulate_suite(path, args.seed, command)?,
        (Some(path), false) => real_suite(path, command)?,
        (None, false) => bail!("`vecswitch bench` needs a SUITE.toml (see docs/METHODOLOGY.md), or --simulate for the demo"),
    };
    run.save(&args.output).with_context(|| format!("writing {}", args.output.display()))?;
    let rows: usize = run.tests.iter().map(|t| t.rows().len()).sum();
    eprintln!("wrote {} ({} tests, {} result rows)", args.output.display(), run.tests.len(), rows);
    Ok(())
}

fn read_suite(path: &PathBuf) -> anyhow::Result<(Suite, serde_json::Value)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading suite {}", path.display()))?;
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
        for &size in &suite.frame_sizes {
            let line = suite.line(size)?;
            let mut m = SimDut::new(sim.model(), seed).with_buffer(sim.buffer_frames()).with_line_rate(line.max_fps());
            // Simulated devices have no tables: scale points re-run the same model.
            let records = run_for_dut(&suite, dut, &line, &mut m, &mut |_, _, _| Ok(()))
                .with_context(|| format!("{} at {size} B", dut.name))?;
            run.tests.extend(records);
        }
    }
    Ok(run)
}

fn real_suite(path: &PathBuf, command: Vec<String>) -> anyhow::Result<RunResults> {
    let (suite, config) = read_suite(path)?;
    if suite.flows.is_some_and(|f| f > 1) {
        bail!("flows = {} in {}: only 1 flow per direction is wired to the generator yet", suite.flows.unwrap_or(0), path.display());
    }
    testbed::signal::install_stop_handler().context("installing the Ctrl-C handler")?;
    let stale = testbed::cleanup_stale(testbed::DEFAULT_PREFIX);
    eprintln!("bench: stale resources of earlier runs: {stale:?}");
    let bin = std::env::current_exe().context("locating the vecswitch binary for the vecswitch drivers")?;
    let mut run = RunResults::new(Provenance::collect(command, Some(config)));
    // The generator is not calibrated per run yet: no limits recorded, so reports show none.
    run.generator = Some(GeneratorInfo { name: "vecswitch-gen".into(), calibrated_limits: Vec::new() });
    for (i, dut) in suite.duts.iter().enumerate() {
        let topology: testbed::Topology =
            dut.topology.parse().with_context(|| format!("dut[{i}].topology"))?;
        let kind = testbed::DutKind::parse(&dut.name, bin.clone()).with_context(|| format!("dut[{i}].name"))?;
        for &size in &suite.frame_sizes {
            let line = suite.line(size)?;
            let size16 = u16::try_from(size).context("frame size")?;
            eprintln!("bench: {} on {} at {size} B", dut.name, dut.topology);
            let mut tb = testbed::Testbed::build(topology.clone()).with_context(|| format!("building {}", dut.topology))?;
            let ports = tb.open_generator_ports().context("opening the generator ports")?;
            tb.start(kind.build()).with_context(|| format!("starting {}", dut.name))?;
            let describe = tb.describe_dut();
            let records = {
                let tbr = &tb;
                let mut m = testbed::GenMeasurer::for_testbed(tbr, ports, testbed::default_streams(size16, suite.bidirectional))
                    .context("generator")?;
                vecswitch_lab::suite::run_for_dut(&suite, dut, &line, &mut m, &mut |_, sc, point| {
                    let n = u32::try_from(point).map_err(|_| LabError::invalid("test.scale.points", point, "at most 4294967295"))?;
                    let scale = if sc.kind == "flows" { testbed::Scale::Flows(n) } else { testbed::Scale::MacEntries(n) };
                    tbr.configure_scale(scale).map_err(|e| LabError::Dut(e.to_string()))
                })
            };
            let placement = tb.placement(testbed::generator_placement());
            let stopped = tb.stop();
            let mut records = records.with_context(|| format!("{} at {size} B", dut.name))?;
            stopped.with_context(|| format!("stopping {}", dut.name))?;
            let setup = serde_json::json!({ "topology": dut.topology, "dut": describe, "placement": placement });
            for r in &mut records {
                r.setup = Some(setup.clone());
            }
            run.tests.extend(records);
        }
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_suite_covers_every_dut_size_and_test() {
        let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/suites/simulated.toml"));
        let run = simulate_suite(&path, 1, vec!["test".into()]).unwrap();
        // 2 DUTs × 3 frame sizes × 5 tests.
        assert_eq!(run.tests.len(), 30);
        assert!(run.provenance.config.as_ref().unwrap().get("dut").is_some());
        let ovs_1518 = run
            .tests
            .iter()
            .find(|t| t.vswitch == "ovs" && t.frame_size == 1518 && t.outcome.name() == "throughput")
            .unwrap();
        let row = &ovs_1518.rows()[0];
        // The sporadic model's capacity is 0.84 Mfps, above 1518-byte line rate (812 744 fps).
        let fps = row["throughput_rx_fps"].num().unwrap();
        assert!(fps > 0.99 * 812_743.8 && fps <= 812_744.0, "{fps}");
    }

    #[test]
    fn simulate_without_sim_model_names_the_dut() {
        let dir = std::env::temp_dir().join(format!("vecswitch-bench-nosim-{}", std::process::id()));
        std::fs::write(&dir, "name = \"x\"\n[[dut]]\nname = \"ovs\"\ntopology = \"phy2phy-veth\"\n[[test]]\nprocedure = \"throughput\"\n").unwrap();
        let e = simulate_suite(&dir, 1, vec![]).unwrap_err().to_string();
        let _ = std::fs::remove_file(&dir);
        assert!(e.contains("dut[0] (ovs)") && e.contains("sim"), "{e}");
    }
}
