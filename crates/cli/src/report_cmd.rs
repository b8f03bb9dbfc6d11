//! `vecswitch report`: render a results document or compare two.
//!
//! ```text
//! vecswitch report html|md|csv RESULTS.json [-o FILE]
//! vecswitch report compare A.json B.json [--threshold PCT]
//! ```
//!
//! Rendering writes to stdout unless `-o` names a file. `compare` prints what regressed from A to
//! B beyond the threshold (default 5 %) and exits non-zero when anything did, so CI can gate on it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use vecswitch_lab::report;
use vecswitch_lab::results::RunResults;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Self-contained HTML report with charts.
    Html(RenderArgs),
    /// VSPERF-style Markdown.
    Md(RenderArgs),
    /// CSV with VSPERF column names.
    Csv(RenderArgs),
    /// List what regressed from A to B.
    Compare(CompareArgs),
}

#[derive(Debug, clap::Args)]
struct RenderArgs {
    /// Results document (schema vecswitch.results/1).
    results: PathBuf,
    /// Write here instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct CompareArgs {
    /// Baseline results.
    a: PathBuf,
    /// New results.
    b: PathBuf,
    /// Percent change beyond which a metric counts as regressed.
    #[arg(long, default_value_t = 5.0)]
    threshold: f64,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    match args.cmd {
        Cmd::Html(a) => render(&a, report::html::render),
        Cmd::Md(a) => render(&a, report::markdown::render),
        Cmd::Csv(a) => render(&a, report::csv::render),
        Cmd::Compare(a) => compare(&a),
    }
}

fn load(path: &Path) -> anyhow::Result<RunResults> {
    RunResults::load(path).with_context(|| format!("reading results {}", path.display()))
}

fn render(a: &RenderArgs, f: fn(&RunResults) -> String) -> anyhow::Result<()> {
    let run = load(&a.results)?;
    let text = f(&run);
    match &a.output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

fn compare(a: &CompareArgs) -> anyhow::Result<()> {
    if !(a.threshold.is_finite() && a.threshold >= 0.0) {
        bail!("invalid --threshold {}: expected a percentage >= 0", a.threshold);
    }
    let (ra, rb) = (load(&a.a)?, load(&a.b)?);
    let c = report::compare(&ra, &rb, a.threshold);
    print!("{}", c.render());
    if c.has_regressions() {
        bail!("{} metric(s) regressed by more than {}%", c.regressions.len(), a.threshold);
    }
    Ok(())
}
