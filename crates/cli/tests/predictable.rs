//! Regression guard of predictable forwarding (issue 24, docs/BENCHMARKS.md §14): a memif
//! cross-connect at a fixed moderate rate for several seconds refuses no frame and loses none,
//! and the worker's poll gaps stay below what its receive ring holds at that rate. Counted, not
//! timed: the bound is the ring's capacity in time (4,096 slots at 100 kfps = 41 ms), which a
//! stall must exceed before a frame is lost, not a latency figure of this (shared) host.
//!
//! The switch is started as the lab starts it on a CPU of its own (idle policy `busy`, SCHED_FIFO
//! where the test runs as root, as CI does); the generator is `vecswitch gen` with rings of the
//! same size (a memif connection uses the smaller of the two ends' sizes).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");
const RATE_FPS: u64 = 100_000;
const RING: u64 = 4096;

struct Switch {
    child: Child,
    dir: PathBuf,
}

impl Drop for Switch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ctl(dir: &Path, args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .arg("ctl")
        .arg("--socket")
        .arg(dir.join("ctl.sock"))
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn start_switch() -> Switch {
    let dir = std::env::temp_dir().join(format!("vsw-predictable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut toml = format!(
        "[switch]\ncontrol_socket = \"{}\"\n",
        dir.join("ctl.sock").display()
    );
    for id in 0..2 {
        toml.push_str(&format!(
            "\n[[port]]\nname = \"memif{id}\"\ntype = \"memif\"\nsocket = \"{}\"\nid = {id}\nrole = \"server\"\nring_size = {RING}\n",
            dir.join("memif.sock").display()
        ));
    }
    toml.push_str("\n[[xconnect]]\nports = [\"memif0\", \"memif1\"]\n");
    std::fs::write(dir.join("sw.toml"), toml).unwrap();
    // `/proc/self` belongs to the process's effective user.
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    let prio = if root { "fifo:10" } else { "other" };
    let child = Command::new(BIN)
        .arg("run")
        .arg("--config")
        .arg(dir.join("sw.toml"))
        .args(["--worker-priority", prio, "--worker-idle", "busy"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sw = Switch { child, dir };
    let t0 = Instant::now();
    while !sw.dir.join("ctl.sock").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "switch did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    sw
}

#[test]
fn a_memif_cross_connect_at_a_moderate_rate_refuses_nothing_and_never_stalls_past_its_ring() {
    let sw = start_switch();
    let sock = sw.dir.join("memif.sock");
    let port = |id: u32| format!("memif:{}:{id}:client:{RING}", sock.display());
    let gen = |duration: &str| {
        Command::new(BIN)
            .arg("gen")
            .args(["--port", &port(0), "--port", &port(1)])
            .args(["--rate", &format!("{RATE_FPS}pps"), "--duration", duration])
            .args(["--warmup", "500ms", "--json"])
            .output()
            .unwrap()
    };
    // A first short run connects both ends (and faults their rings in); then counters from zero.
    let first = gen("500ms");
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    ctl(&sw.dir, &["clear", "counters"]);
    let out = gen("5s");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runtime = ctl(&sw.dir, &["show", "runtime"])["data"].clone();
    let l = &runtime["loop"];
    let why = format!("generator: {r}\nswitch: {runtime}");
    assert!(
        r["tx"].as_u64().unwrap() >= 5 * RATE_FPS * 95 / 100,
        "{why}"
    );
    assert_eq!(
        r["tx_refused"], 0,
        "refused by the switch's receive ring: {why}"
    );
    assert_eq!(r["lost"], 0, "{why}");
    assert_eq!(r["tx"], r["rx"], "{why}");
    // Every gap is in the histogram, once.
    let gaps: u64 = l["poll_gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(gaps + 1, l["polls"].as_u64().unwrap(), "{why}");
    // The longest gap stays below what the ring holds at the rate (module doc).
    let ring_ns = RING * 1_000_000_000 / RATE_FPS;
    let max_gap = l["max_poll_gap_ns"].as_u64().unwrap();
    assert!(
        max_gap < ring_ns,
        "longest gap {max_gap} ns ≥ the ring's {ring_ns} ns: {why}"
    );
    // The switch saw what the generator saw: no poll found the ring full, its size is the asked one.
    let ports = ctl(&sw.dir, &["show", "ports"])["data"].clone();
    let rx = ports
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "memif0")
        .unwrap()["rx_ring"]
        .clone();
    assert_eq!(rx["size"], RING, "{rx}");
    assert_eq!(rx["full_polls"], 0, "{rx}");
    assert!(rx["peak"].as_u64().unwrap() < RING, "{rx}");
    assert!(
        runtime["long_gaps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["ring_waiting"].as_u64() < Some(RING)),
        "a long gap filled the ring: {why}"
    );
}
