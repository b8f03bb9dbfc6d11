//! `vecswitch ctl [--socket PATH] [--json] [COMMAND...]`: sends a request to a running switch and
//! prints the answer — aligned tables for people, or with `--json` the raw JSON answer line for
//! programs. The command words mirror `vppctl` (see `vecswitch_control::command`). Without a
//! command, reads one command per line from standard input (blank lines and `#` comments skipped),
//! like a `vppctl exec` script. Exits non-zero when the switch refuses a request.

use anyhow::{bail, Context};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Duration;
use vecswitch_control::command::{parse_words, usage, CommandError};
use vecswitch_control::config::DEFAULT_CONTROL_SOCKET;
use vecswitch_control::render::render;
use vecswitch_control::server::request;

#[derive(Debug, clap::Args)]
#[command(after_help = usage())]
pub struct Args {
    /// Control socket of the switch [default: $VECSWITCH_SOCKET, else /run/vecswitch/vecswitch.sock].
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Print the raw JSON answer instead of tables.
    #[arg(long)]
    json: bool,
    /// Seconds to wait for each answer.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    timeout: u64,
    /// The command, e.g. `show runtime` or `bridge member add br0 p2`; none = read commands from
    /// standard input, one per line.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

/// Runs one command; `Err` carries the message for stderr.
/// `--socket`, else `$VECSWITCH_SOCKET`, else the default path.
fn socket(args: &Args) -> PathBuf {
    args.socket
        .clone()
        .or_else(|| {
            std::env::var_os(SOCKET_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONTROL_SOCKET))
}

/// Environment variable naming the control socket when `--socket` is not given.
const SOCKET_ENV: &str = "VECSWITCH_SOCKET";

fn one(args: &Args, words: &[String], cwd: &Path) -> anyhow::Result<()> {
    let req = match parse_words(words, cwd) {
        Ok(r) => r,
        // The error lists the registered shows already.
        Err(e @ CommandError::NoShow { .. }) => bail!("{e}"),
        Err(e) => bail!("{e}\n{}", usage()),
    };
    let resp = request(
        &socket(args),
        &req,
        Duration::from_secs(args.timeout.max(1)),
    )?;
    if args.json {
        outln!("{}", resp.to_line());
        if !resp.ok {
            bail!(
                "{}",
                resp.error
                    .unwrap_or_else(|| "the switch refused the request".into())
            );
        }
        return Ok(());
    }
    if !resp.ok {
        bail!(
            "{}",
            resp.error
                .unwrap_or_else(|| "the switch refused the request".into())
        );
    }
    let data = resp.data.unwrap_or(serde_json::Value::Null);
    out!("{}", render(&req, &data));
    Ok(())
}

pub fn main(args: Args) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("current directory")?;
    if !args.command.is_empty() {
        return one(&args, &args.command, &cwd);
    }
    let mut failed = 0usize;
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.context("reading commands from standard input")?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<String> = line.split_whitespace().map(String::from).collect();
        if let Err(e) = one(&args, &words, &cwd) {
            eprintln!("vecswitch: line {}: `{line}`: {e:#}", n + 1);
            failed += 1;
        }
    }
    if failed > 0 {
        bail!("{failed} command(s) failed");
    }
    Ok(())
}
