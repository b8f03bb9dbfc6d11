//! `vecswitch gen` (placeholder until its module is written).

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn main(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`vecswitch gen` is not built yet")
}
