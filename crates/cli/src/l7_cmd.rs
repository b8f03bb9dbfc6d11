//! `vecswitch bench SUITE.toml` for a suite with an `[l7]` table (application traffic, issue 12):
//! runs it with `vecswitch_testbed::l7::suite`, prints seed 004's table (Markdown) to stdout and
//! writes every run as JSON (schema `vecswitch.l7-results/1`, with the run's provenance and the
//! table, which `vecswitch report md|html` renders) to the output path. Fails (exit status 1,
//! after writing) when a device could not be measured, a transaction failed or an illegal flow
//! got through: the profile expects none.

use std::path::Path;

use anyhow::{bail, Context};
use vecswitch_lab::results::Provenance;
use vecswitch_testbed::l7::suite::{run_suite, L7Suite};

/// Whether the suite at `path` is an L7 suite.
pub fn is_l7_suite(path: &Path) -> anyhow::Result<bool> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading suite {}", path.display()))?;
    Ok(vecswitch_testbed::l7::suite::is_l7_suite(&text))
}

pub fn main(path: &Path, output: &Path, command: Vec<String>) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading suite {}", path.display()))?;
    let suite = L7Suite::parse(&text).with_context(|| format!("suite {}", path.display()))?;
    vecswitch_testbed::signal::install_stop_handler().context("installing the Ctrl-C handler")?;
    let bin = std::env::current_exe().context("locating the vecswitch binary")?;
    let config = serde_json::to_value(&suite).context("suite as JSON")?;
    let results = run_suite(&suite, bin, &mut |line| eprintln!("l7: {line}"));
    let doc = serde_json::json!({
        "provenance": Provenance::collect(command, Some(config)),
        "table": results.table(),
        "results": results,
    });
    let json = serde_json::to_string_pretty(&doc).context("results as JSON")?;
    std::fs::write(output, json).with_context(|| format!("writing {}", output.display()))?;
    println!("# {}\n\n{}", suite.name, results.table_markdown());
    eprintln!("wrote {}", output.display());
    if !results.all_clean() {
        bail!(
            "the L7 profile expects every transaction to complete: see the failures above and in {}",
            output.display()
        );
    }
    Ok(())
}
