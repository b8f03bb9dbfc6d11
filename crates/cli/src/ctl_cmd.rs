//! `vecswitch ctl [--socket PATH] [--json] <command...>`: sends one request to a running switch and
//! prints the answer — aligned tables for people, or with `--json` the raw JSON answer line for
//! programs. The command words mirror `vppctl` (see `vecswitch_control::command`). Exits non-zero
//! when the switch refuses the request.

use anyhow::{bail, Context};
use std::path::PathBuf;
use std::time::Duration;
use vecswitch_control::command::{parse_words, USAGE};
use vecswitch_control::config::DEFAULT_CONTROL_SOCKET;
use vecswitch_control::render::render;
use vecswitch_control::server::request;

#[derive(Debug, clap::Args)]
#[command(after_help = USAGE)]
pub struct Args {
    /// Control socket of the switch.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_CONTROL_SOCKET)]
    socket: PathBuf,
    /// Print the raw JSON answer instead of tables.
    #[arg(long)]
    json: bool,
    /// Seconds to wait for the answer.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    timeout: u64,
    /// The command, e.g. `show runtime` or `bridge member add br0 p2`.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("current directory")?;
    let req = match parse_words(&args.command, &cwd) {
        Ok(r) => r,
        Err(e) => bail!("{e}\n{USAGE}"),
    };
    let resp = request(&args.socket, &req, Duration::from_secs(args.timeout.max(1)))?;
    if args.json {
        println!("{}", resp.to_line());
        if !resp.ok {
            std::process::exit(1);
        }
        return Ok(());
    }
    if !resp.ok {
        bail!(
            "{}",
            resp.error.unwrap_or_else(|| "the switch refused the request".into())
        );
    }
    let data = resp.data.unwrap_or(serde_json::Value::Null);
    print!("{}", render(&req, &data));
    Ok(())
}
