//! `vecswitch run --config FILE.toml [--socket PATH]`: validates the config, binds the control
//! socket, builds the switch, starts its worker, applies the config, then serves the control socket
//! until SIGINT or SIGTERM, and on the way out removes the socket file and stops the worker.

use anyhow::{bail, Context};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use vecswitch_control::config::Config;
use vecswitch_control::controller::Controller;
use vecswitch_control::metrics::{MetricsServer, SharedWorker};
use vecswitch_control::server::{ControlSocket, Served};
use vecswitch_control::validate::validate;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The switch's config file (TOML; see docs/CONTROL.md).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: PathBuf,
    /// Control socket path (overrides `[switch] control_socket`).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Only check the config (parse and validate it whole), print a summary and exit.
    #[arg(long)]
    check: bool,
    /// Worker scheduling: `fifo:N`/`rr:N` (real-time, root or CAP_SYS_NICE) or `other` (default).
    #[arg(long, value_name = "POLICY[:PRIO]")]
    worker_priority: Option<vecswitch_switch::worker::WorkerSched>,
    /// Worker idle policy: `poll` (default, a core of its own; sleeps after 500 µs without a
    /// packet), `busy` (a core of its own, never sleeps, as DPDK and VPP poll) or `sleep` (after
    /// every empty poll, for a core shared with another busy poller such as a PVP VNF).
    #[arg(long, value_name = "POLICY")]
    worker_idle: Option<vecswitch_switch::worker::IdlePolicy>,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    let config_path = std::path::absolute(&args.config)
        .with_context(|| format!("config path {}", args.config.display()))?;
    let cfg = Config::from_file(&config_path)?;
    validate(&cfg)?;
    if args.check {
        outln!(
            "{}: ok ({} ports, {} bridges, {} xconnect directions)",
            config_path.display(),
            cfg.ports.len(),
            cfg.bridges.len(),
            cfg.xconnect_directions().len()
        );
        return Ok(());
    }
    let socket_path = args
        .socket
        .clone()
        .unwrap_or_else(|| PathBuf::from(&cfg.switch.control_socket));

    // Signals first, so that a SIGTERM during start-up still ends in a clean exit.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing signal handlers")?;
    }

    // The socket before the ports: a second `vecswitch run` on the same socket fails here, before
    // it opens anything.
    let socket = ControlSocket::bind(&socket_path)?;

    let sw = vecswitch_switch::Switch::new(vecswitch_switch::SwitchConfig {
        buffers: cfg.switch.buffers,
        mac_table_entries: cfg.switch.mac_table_entries as usize,
        ..Default::default()
    });
    // Shared with the metrics endpoint, which takes its snapshots through it.
    let handle = Arc::new(vecswitch_switch::spawn(sw).context("starting the worker thread")?);
    if let Some(cpu) = cfg.switch.worker_cpu {
        let ids = core_affinity::get_core_ids().unwrap_or_default();
        let Some(id) = ids.iter().copied().find(|c| c.id == cpu as usize) else {
            bail!(
                "switch.worker_cpu = {cpu}: a CPU this process may run on ({})",
                ids.iter()
                    .map(|c| c.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        };
        let pinned = handle
            .call(move |_| core_affinity::set_for_current(id))
            .context("pinning the worker")?;
        if !pinned {
            bail!("switch.worker_cpu = {cpu}: the worker thread could not be pinned to it");
        }
    }
    // `--worker-priority` overrides `[switch] worker_priority` (validated above).
    let sched = match (args.worker_priority, &cfg.switch.worker_priority) {
        (Some(s), _) => Some((s, "--worker-priority")),
        (None, Some(p)) => Some((p.parse()?, "switch.worker_priority")),
        (None, None) => None,
    };
    if let Some((s, from)) = sched {
        handle.set_scheduling(s).context(from)?;
    }
    if let Some(p) = args.worker_idle {
        handle.set_idle_policy(p).context("--worker-idle")?;
    }

    let (nports, nbridges, nxc) = (
        cfg.ports.len(),
        cfg.bridges.len(),
        cfg.xconnect_directions().len(),
    );
    let metrics = match cfg.switch.metrics_listen.as_deref() {
        Some(listen) => Some(MetricsServer::start(listen, Arc::clone(&handle))?),
        None => None,
    };
    let ctl = Controller::start(
        Box::new(SharedWorker(handle)),
        Arc::new(vecswitch_control::ports::open_port),
        cfg,
        Some(config_path.clone()),
    )
    .with_context(|| format!("applying {}", config_path.display()))?;
    eprintln!(
        "vecswitch: running {} ({nports} ports, {nbridges} bridges, {nxc} xconnect directions); control socket {}",
        config_path.display(),
        socket.path().display()
    );
    if let Some(m) = &metrics {
        eprintln!("vecswitch: metrics on http://{}/metrics", m.local_addr());
    }

    let ctl = Arc::new(Mutex::new(ctl));
    let end = socket.serve(Arc::clone(&ctl), &stop);
    drop(socket); // removes the socket file
    drop(metrics); // stops the endpoint, which holds the switch handle too
                   // Dropping the controller drops the SwitchHandle, which stops and joins the worker.
    drop(ctl);
    match end {
        Served::Stopped => {
            eprintln!("vecswitch: signal received, stopped");
            Ok(())
        }
        Served::WorkerGone => {
            bail!("the switch worker thread stopped unexpectedly (see the messages above)")
        }
    }
}
