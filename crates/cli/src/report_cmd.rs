//! `vecswitch report` (placeholder until its module is written).

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn main(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`vecswitch report` is not built yet")
}
