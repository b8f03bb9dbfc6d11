//! `vecswitch soak`: a long run at 90 % of a measured NDR through a learning, aging bridge,
//! reporting loss per interval, buffers in use and the switch's memory (RSS) over time (issue 14
//! item 7; what EANTC's overnight runs and seed 002's 12-hour zero-drop run look for).
//!
//! ```text
//! vecswitch soak [--duration 1h] [--interval 10s] [--percent 90] [--frame-size 64]
//!                [--mac-age 10] [--ndr-fps FPS | --search-trial 1s --max-fps 2000000]
//!                [--strict] [-o soak.json]
//! ```
//!
//! It starts its own `vecswitch run` (this binary) with two memif server ports in one bridge
//! (learning on, `mac_age_s = --mac-age`, so aging scans run all along), connects the generator to
//! them as memif clients (in this process), finds the NDR with the lab's RFC 2544 throughput
//! search (zero loss; skipped with `--ndr-fps`), and runs the lab's soak procedure
//! (`vecswitch_lab::procedures::soak`: one continuous bidirectional stream read per interval,
//! through `testbed::GenMeasurer`) at `--percent` of it. Meanwhile a sampler thread reads the
//! switch's `show buffers` (over its control socket) and `VmRSS` (from /proc) once per interval.
//! The report: one line per interval (offered, lost, loss, buffers in use, RSS), the totals, the
//! buffers in use before and after the run, and the RSS growth from the end of the first interval
//! to the end; the whole record goes to `-o` as JSON. With `--strict` the exit status is 1 when a
//! frame was lost, the buffers did not come back to their baseline, or the RSS grew by more than
//! 10 % (`make soak`, 60 s). No namespaces, no root: memif sockets in a private run directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;
use vecswitch_lab::procedures::soak::{soak, SoakConfig};
use vecswitch_lab::procedures::throughput::{throughput, ThroughputConfig};
use vecswitch_lab::Load;
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::{LinkState, Port};
use vecswitch_testbed::{default_streams, GenMeasurer};

/// RSS growth (end of the first interval to the end) above which `--strict` fails.
const RSS_GROWTH_LIMIT: f64 = 0.10;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Length of the soak stream (e.g. 1h, 60s).
    #[arg(long, default_value = "1h")]
    duration: String,
    /// Length of each reported interval.
    #[arg(long, default_value = "10s")]
    interval: String,
    /// Load as a percentage of the measured NDR.
    #[arg(long, default_value_t = 90.0)]
    percent: f64,
    /// Frame size in bytes, FCS included (RFC 2544 sizes: 64..=1518).
    #[arg(long, default_value_t = 64)]
    frame_size: u16,
    /// The bridge's MAC age, seconds (aging runs all along; the streams' stations stay fresh).
    #[arg(long, default_value_t = 10)]
    mac_age: u32,
    /// Use this NDR (frames/s, both directions together) instead of searching for it.
    #[arg(long)]
    ndr_fps: Option<f64>,
    /// Duration of each trial of the NDR search.
    #[arg(long, default_value = "1s")]
    search_trial: String,
    /// Highest load the NDR search tries (frames/s, both directions together).
    #[arg(long, default_value_t = 2_000_000.0)]
    max_fps: f64,
    /// Shortfall of offered frames tolerated before a trial or interval is tester-limited, percent
    /// (a shared 2-core host loses milliseconds per second to preemption).
    #[arg(long, default_value_t = 1.0)]
    tester_tolerance_percent: f64,
    /// Exit with status 1 on any loss, buffers not back to baseline, or RSS growth above 10 %.
    #[arg(long)]
    strict: bool,
    /// Where to write the record (JSON).
    #[arg(short, long, default_value = "soak.json")]
    output: PathBuf,
}

/// Parses `10s`, `500ms`, `2m`, `1h`, `1.5s`.
fn parse_duration(flag: &str, s: &str) -> Result<Duration> {
    let t = s.trim();
    let (num, mult) = [("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
        .iter()
        .find_map(|(suffix, m)| t.strip_suffix(suffix).map(|n| (n, *m)))
        .unwrap_or((t, f64::NAN));
    match num.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && (v * mult).is_finite() => Ok(Duration::from_secs_f64(v * mult)),
        _ => bail!("invalid --{flag} {s:?}: accepted a duration such as 60s, 500ms, 10m, 1h"),
    }
}

/// One reading of the switch's state.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Seconds since the soak stream started.
    t_s: f64,
    buffers_in_use: u64,
    rss_kib: u64,
}

/// The switch under soak: a `vecswitch run` child, terminated (then killed) on drop with its run
/// directory removed.
struct Dut {
    child: Child,
    socket: PathBuf,
    dir: PathBuf,
}

impl Dut {
    fn start(dir: &Path, mac_age: u32) -> Result<Dut> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let memif = dir.join("memif.sock");
        let socket = dir.join("ctl.sock");
        let cfg = dir.join("switch.toml");
        let port = |name: &str, id: u32| {
            format!(
                "\n[[port]]\nname = \"{name}\"\ntype = \"memif\"\nsocket = \"{}\"\nid = {id}\nmode = \"polling\"\n",
                memif.display()
            )
        };
        let text = format!(
            "[switch]\nbuffers = 16384\nmac_table_entries = 4096\n{}{}\n[[bridge]]\nname = \"br0\"\nports = [\"p0\", \"p1\"]\nmac_age = {mac_age}\n",
            port("p0", 0),
            port("p1", 1)
        );
        std::fs::write(&cfg, text).with_context(|| format!("writing {}", cfg.display()))?;
        let log = std::fs::File::create(dir.join("switch.log"))?;
        let exe = std::env::current_exe().context("finding this program")?;
        let child = Command::new(exe)
            .args(["run", "--config"])
            .arg(&cfg)
            .arg("--socket")
            .arg(&socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting vecswitch run")?;
        let mut dut = Dut {
            child,
            socket,
            dir: dir.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::os::unix::net::UnixStream::connect(&dut.socket).is_err() {
            if let Some(st) = dut.child.try_wait()? {
                let log = std::fs::read_to_string(dir.join("switch.log")).unwrap_or_default();
                bail!("the switch exited with {st}: {log}");
            }
            if Instant::now() > deadline {
                bail!("the switch's control socket did not appear within 30 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(dut)
    }

    fn memif(&self) -> PathBuf {
        self.dir.join("memif.sock")
    }
}

impl Drop for Dut {
    fn drop(&mut self) {
        let pid = self.child.id() as i32;
        // SIGTERM first (through kill(1): this crate has no unsafe), so that it removes its socket.
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `show buffers`' `in_use`, through `vecswitch ctl` (this binary).
fn buffers_in_use(socket: &Path) -> Result<u64> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe)
        .args(["ctl", "--socket"])
        .arg(socket)
        .args(["--json", "show", "buffers"])
        .output()?;
    if !out.status.success() {
        bail!("ctl show buffers: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    v["data"]["in_use"]
        .as_u64()
        .context("ctl show buffers: no data.in_use")
}

/// The resident set size of process `pid`, KiB (`VmRSS` of /proc/PID/status).
fn rss_kib(pid: u32) -> Result<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .context("no VmRSS in /proc/PID/status")
}

fn sample(socket: &Path, pid: u32, started: Instant) -> Result<Sample> {
    Ok(Sample {
        t_s: started.elapsed().as_secs_f64(),
        buffers_in_use: buffers_in_use(socket)?,
        rss_kib: rss_kib(pid)?,
    })
}

fn memif_client(path: &Path, id: u32) -> Result<Box<dyn Port>> {
    let name = format!("gen{id}");
    let mut p = MemifPort::new(MemifConfig::new(
        &name,
        &path.display().to_string(),
        id,
        Role::Client,
    ))
    .with_context(|| format!("generator memif client {id}"))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while p.link() != LinkState::Up {
        if Instant::now() > deadline {
            bail!("generator memif client {id} did not connect within 20 s");
        }
        p.poll_control();
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(Box::new(p))
}

pub fn main(a: Args) -> Result<()> {
    let total = parse_duration("duration", &a.duration)?;
    let interval = parse_duration("interval", &a.interval)?;
    let search_trial = parse_duration("search-trial", &a.search_trial)?;
    if interval.is_zero() || interval > total {
        bail!(
            "invalid --interval {}: accepted a positive duration not longer than --duration {}",
            a.interval,
            a.duration
        );
    }
    if !(a.percent > 0.0 && a.percent <= 100.0) {
        bail!(
            "invalid --percent {}: accepted 0 < percent <= 100",
            a.percent
        );
    }
    if !(64..=1518).contains(&a.frame_size) {
        bail!(
            "invalid --frame-size {}: accepted 64..=1518 bytes (FCS included)",
            a.frame_size
        );
    }
    if !(0.0..100.0).contains(&a.tester_tolerance_percent) {
        bail!(
            "invalid --tester-tolerance-percent {}: accepted 0 <= percent < 100",
            a.tester_tolerance_percent
        );
    }
    let dir = std::env::temp_dir().join(format!("vecswitch-soak-{}", std::process::id()));
    let dut = Dut::start(&dir, a.mac_age)?;
    let pid = dut.child.id();
    let ports = vec![
        memif_client(&dut.memif(), 0)?,
        memif_client(&dut.memif(), 1)?,
    ];
    let mut m = GenMeasurer::new(ports, default_streams(a.frame_size, true))?
        .backpressure_is_dut(true)
        .tolerance(a.tester_tolerance_percent / 100.0)
        .warmup(Duration::from_millis(200));

    let ndr = match a.ndr_fps {
        Some(f) if f > 0.0 && f.is_finite() => f,
        Some(f) => bail!("invalid --ndr-fps {f}: accepted a rate > 0"),
        None => {
            let mut cfg = ThroughputConfig::new(1000.0, a.max_fps, search_trial);
            cfg.resolution_fps = a.max_fps * 0.01;
            cfg.learning = Some((Load::fps(1000.0), Duration::from_millis(500)));
            eprintln!(
                "soak: searching the NDR (RFC 2544 §26.1, zero loss) up to {:.0} fps, {:?} trials",
                a.max_fps, search_trial
            );
            let r = throughput(&mut m, &cfg)?;
            r.throughput_fps
                .context("no load passed the NDR search (not even 1000 fps): the switch loses frames at any rate")?
        }
    };
    let load = ndr * a.percent / 100.0;
    let n = (total.as_secs_f64() / interval.as_secs_f64()).round() as u32;
    eprintln!(
        "soak: NDR {ndr:.0} fps; {n} × {interval:?} at {load:.0} fps ({}% of it), {} B frames, bridge with learning, MAC age {} s",
        a.percent, a.frame_size, a.mac_age
    );

    let started = Instant::now();
    let baseline = sample(&dut.socket, pid, started)?;
    let samples = Arc::new(Mutex::new(vec![baseline]));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (samples, stop, socket) = (Arc::clone(&samples), Arc::clone(&stop), dut.socket.clone());
        std::thread::spawn(move || {
            let mut next = started + interval;
            while !stop.load(Ordering::Relaxed) {
                if Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                next += interval;
                match sample(&socket, pid, started) {
                    Ok(s) => samples.lock().unwrap_or_else(|p| p.into_inner()).push(s),
                    Err(e) => eprintln!("soak: sample failed: {e:#}"),
                }
            }
        })
    };
    let result = soak(
        &mut m,
        &SoakConfig {
            load: Load::fps(load),
            total: interval * n,
            interval,
        },
    );
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let result = result?;
    // After the stream (and the measurer's drain): every buffer should be back.
    std::thread::sleep(Duration::from_millis(200));
    let after = sample(&dut.socket, pid, started)?;
    let samples = samples.lock().unwrap_or_else(|p| p.into_inner()).clone();

    outln!(
        "{:>8} {:>12} {:>10} {:>10} {:>14} {:>10}",
        "t_s",
        "offered",
        "lost",
        "loss_%",
        "buffers_in_use",
        "rss_kib"
    );
    let iv = interval.as_secs_f64();
    for (i, t) in result.intervals.iter().enumerate() {
        let end = (i + 1) as f64 * iv;
        // The sample taken nearest the end of this interval.
        let s = samples
            .iter()
            .min_by(|x, y| (x.t_s - end).abs().total_cmp(&(y.t_s - end).abs()));
        outln!(
            "{:>8.1} {:>12} {:>10} {:>10.5} {:>14} {:>10}{}",
            end,
            t.offered_frames,
            t.lost_frames(),
            t.loss_ratio() * 100.0,
            s.map_or(0, |s| s.buffers_in_use),
            s.map_or(0, |s| s.rss_kib),
            if t.tester_limited {
                "  tester-limited"
            } else {
                ""
            }
        );
    }
    let rss_first = samples.get(1).unwrap_or(&baseline).rss_kib;
    let rss_last = samples.last().unwrap_or(&baseline).rss_kib;
    let growth = (rss_last as f64 - rss_first as f64) / rss_first.max(1) as f64;
    let buffers_back = after.buffers_in_use <= baseline.buffers_in_use;
    outln!(
        "soak: offered {} lost {} (loss {:.6} %), {} lossy and {} tester-limited of {} intervals; buffers in use {} before, {} after; RSS {} KiB after the first interval, {} KiB at the end ({:+.1} %)",
        result.offered_frames,
        result.lost_frames,
        result.loss_ratio * 100.0,
        result.lossy_intervals,
        result.tester_limited_intervals,
        result.intervals.len(),
        baseline.buffers_in_use,
        after.buffers_in_use,
        rss_first,
        rss_last,
        growth * 100.0
    );
    let record = json!({
        "schema": "vecswitch.soak/1",
        "command": std::env::args().collect::<Vec<_>>(),
        "frame_size": a.frame_size,
        "mac_age_s": a.mac_age,
        "ndr_fps": ndr,
        "ndr_searched": a.ndr_fps.is_none(),
        "percent_of_ndr": a.percent,
        "load_fps": load,
        "soak": result,
        "samples": samples
            .iter()
            .map(|s| json!({"t_s": s.t_s, "buffers_in_use": s.buffers_in_use, "rss_kib": s.rss_kib}))
            .collect::<Vec<_>>(),
        "buffers_before": baseline.buffers_in_use,
        "buffers_after": after.buffers_in_use,
        "rss_growth_ratio": growth,
    });
    std::fs::write(&a.output, serde_json::to_string_pretty(&record)?)
        .with_context(|| format!("writing {}", a.output.display()))?;
    eprintln!("soak: wrote {}", a.output.display());
    drop(m);
    drop(dut);
    if a.strict {
        let mut bad = Vec::new();
        if result.lost_frames > 0 {
            bad.push(format!("{} frames lost", result.lost_frames));
        }
        if !buffers_back {
            bad.push(format!(
                "buffers in use {} after the run, {} before",
                after.buffers_in_use, baseline.buffers_in_use
            ));
        }
        if growth > RSS_GROWTH_LIMIT {
            bad.push(format!(
                "RSS grew {:.1} % (limit {:.0} %)",
                growth * 100.0,
                RSS_GROWTH_LIMIT * 100.0
            ));
        }
        if !bad.is_empty() {
            bail!("soak failed (--strict): {}", bad.join("; "));
        }
    }
    Ok(())
}
