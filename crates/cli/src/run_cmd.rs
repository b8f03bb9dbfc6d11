//! `vecswitch run` (placeholder until its module is written).

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn main(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`vecswitch run` is not built yet")
}
