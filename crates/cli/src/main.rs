//! `vecswitch`: the switch, its control client, the traffic generator and the benchmark lab in one
//! binary. Each subcommand lives in its own module; `main` parses, dispatches and maps errors to exit
//! codes once.
#![forbid(unsafe_code)]

mod bench_cmd;
mod ctl_cmd;
mod gen_cmd;
mod report_cmd;
mod run_cmd;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "vecswitch", version, about = "A user-space NFV dataplane and the lab that measures it")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

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
