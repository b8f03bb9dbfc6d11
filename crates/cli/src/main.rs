//! `vecswitch`: the switch, its control client, the traffic generator and the benchmark lab in one
//! binary. Each subcommand lives in its own module; `main` parses, dispatches and maps errors to exit
//! codes once.
#![forbid(unsafe_code)]

/// `println!` for command output: when stdout is a pipe that closed early (`vecswitch ctl show mac |
/// head`), the command ends quietly with success instead of panicking on the broken pipe.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let res = writeln!(std::io::stdout(), $($arg)*);
        $crate::stdout_result(res);
    }};
}

/// `print!` with the same broken-pipe handling as [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let res = write!(std::io::stdout(), $($arg)*);
        $crate::stdout_result(res);
    }};
}

/// Ends the process when writing command output failed: quietly on a closed pipe, with an error
/// otherwise.
fn stdout_result(res: std::io::Result<()>) {
    if let Err(e) = res {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("vecswitch: error: writing to standard output: {e}");
        std::process::exit(1);
    }
}

mod bench_cmd;
mod ctl_cmd;
mod gen_cmd;
mod l7_cmd;
mod report_cmd;
mod run_cmd;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "vecswitch",
    version,
    about = "A user-space NFV dataplane and the lab that measures it"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

// The command is parsed once per process; boxing the large `gen` arguments would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run the switch from a declarative config file.
    Run(run_cmd::Args),
    /// Talk to a running switch over its control socket.
    Ctl(ctl_cmd::Args),
    /// Generate traffic and analyse what comes back.
    Gen(gen_cmd::Args),
    /// Run benchmark procedures (RFC 2544, RFC 9004, MLRsearch, ...) against a device under test.
    Bench(bench_cmd::Args),
    /// Render and compare benchmark results.
    Report(report_cmd::Args),
}

fn main() {
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Run(a) => run_cmd::main(a),
        Cmd::Ctl(a) => ctl_cmd::main(a),
        Cmd::Gen(a) => gen_cmd::main(a),
        Cmd::Bench(a) => bench_cmd::main(a),
        Cmd::Report(a) => report_cmd::main(a),
    };
    if let Err(e) = res {
        eprintln!("vecswitch: error: {e:#}");
        std::process::exit(1);
    }
}
