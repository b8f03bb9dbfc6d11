//! `vecswitch bench`: run benchmark procedures and write a results document.
//!
//! ```text
//! vecswitch bench SUITE.toml --simulate [--seed N] [-o results.json]
//! vecswitch bench --simulate [--seed N] [-o results.json]     # built-in demo suite
//! ```
//!
//! `--simulate` runs against the lab's seeded simulated DUTs (no network, no root): each
//! `[[dut]]` of the suite needs a `sim` model. Without a suite it runs the lab's demo (every
//! procedure, two simulated devices). Either way it shows what a run produces and feeds
//! `vecswitch report`. Real DUTs (`vecswitch bench SUITE.toml` without `--simulate`) plug in through
//! the testbed's topologies, DUT drivers and generator-backed measurer.

use std::path::PathBuf;

use anyhow::{bail, Context};
use vecswitch_lab::results::{Provenance, RunResults};
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
        (_, false) => bail!(
            "`vecswitch bench` runs only with --simulate for now: suites against real DUTs are not wired to the testbed yet"
        ),
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
