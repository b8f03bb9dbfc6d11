//! `vecswitch bench`: run benchmark procedures and write a results document.
//!
//! ```text
//! vecswitch bench --simulate [--seed N] -o results.json
//! ```
//!
//! `--simulate` runs every procedure against the lab's seeded simulated DUTs (no network, no
//! root): it shows what a run produces and feeds `vecswitch report`. Suites against real DUTs
//! (`vecswitch bench SUITE.toml`) plug in through the testbed's topology and DUT drivers.

use std::path::PathBuf;

use anyhow::{bail, Context};

#[derive(Debug, clap::Args)]
pub struct Args {
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
    if !args.simulate {
        bail!("`vecswitch bench` needs --simulate for now: suites against real DUTs are not wired yet");
    }
    let command: Vec<String> = std::env::args().collect();
    let run = vecswitch_lab::demo::simulated_run(args.seed, command).context("simulated run")?;
    run.save(&args.output).with_context(|| format!("writing {}", args.output.display()))?;
    let trials: usize = run.tests.iter().map(|t| t.rows().len()).sum();
    eprintln!("wrote {} ({} tests, {} result rows)", args.output.display(), run.tests.len(), trials);
    Ok(())
}
