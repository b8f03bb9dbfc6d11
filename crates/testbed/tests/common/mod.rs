//! Helpers shared by the testbed's integration tests: test frames and a counted exchange over two
//! generator ports.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::Port;

/// EtherType for local experiments (IEEE 802 "Local Experimental Ethertype 1").
pub const ETHERTYPE_EXP: u16 = 0x88b5;

/// A 60-byte frame (64 on the wire with FCS): dst, src, local-experimental EtherType, then a
/// 4-byte tag and a 4-byte sequence number, zero padding.
pub fn frame(dst: [u8; 6], src: [u8; 6], tag: u32, seq: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ETHERTYPE_EXP.to_be_bytes());
    f.extend_from_slice(&tag.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(60, 0);
    f
}

/// (tag, seq) of a test frame, or None for anything else.
pub fn parse(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 22 || bytes[12..14] != ETHERTYPE_EXP.to_be_bytes() {
        return None;
    }
    let tag = u32::from_be_bytes(bytes[14..18].try_into().ok()?);
    let seq = u32::from_be_bytes(bytes[18..22].try_into().ok()?);
    Some((tag, seq))
}

/// What one exchange saw on the receiving port.
#[derive(Debug, Default)]
pub struct Exchange {
    pub sent: u32,
    /// Distinct sequence numbers received with our tag.
    pub received: BTreeSet<u32>,
    pub duplicates: u32,
    /// Frames that were not ours (other tags or not test frames).
    pub foreign: u32,
    /// Bytes of the first frame received with our tag.
    pub first: Option<Vec<u8>>,
}

/// Sends `count` frames tagged `tag` from `tx` (in bursts of 32, retrying what the port did not
/// take) and receives on `rx` until all arrived or `timeout` passed.
#[allow(clippy::too_many_arguments)] // a test helper; each argument is one field of the frame
pub fn exchange(
    pool: &mut Pool,
    tx: &mut Box<dyn Port>,
    rx: &mut Box<dyn Port>,
    dst: [u8; 6],
    src: [u8; 6],
    tag: u32,
    count: u32,
    timeout: Duration,
) -> Exchange {
    let mut ex = Exchange::default();
    let start = Instant::now();
    let mut seq = 0u32;
    let mut got = Vec::new();
    let mut bytes = Vec::new();
    while start.elapsed() < timeout && (ex.received.len() as u32) < count {
        tx.poll_control();
        rx.poll_control();
        // At most WINDOW frames in flight: a test that counts exactly must not overflow a ring
        // when this thread or the device is descheduled on a busy machine (a frame lost then
        // shrinks the window for good, and the count assertions say so).
        const WINDOW: u32 = 128;
        let in_flight = seq.saturating_sub(ex.received.len() as u32);
        if seq < count && in_flight < WINDOW {
            let n = (count - seq).min(32).min(WINDOW - in_flight);
            let mut pkts = Vec::new();
            for i in 0..n {
                let h = pool.alloc().expect("pool has buffers");
                assert!(pool.write_packet(h, &frame(dst, src, tag, seq + i)));
                pkts.push(h);
            }
            let sent = tx.tx_burst(pool, &pkts);
            pool.free_bulk(&pkts);
            seq += sent as u32;
        }
        got.clear();
        rx.rx_burst(pool, &mut got, 256);
        for &h in &got {
            bytes.clear();
            pool.copy_out(h, &mut bytes);
            match parse(&bytes) {
                Some((t, s)) if t == tag => {
                    if ex.first.is_none() {
                        ex.first = Some(bytes.clone());
                    }
                    if !ex.received.insert(s) {
                        ex.duplicates += 1;
                    }
                }
                _ => ex.foreign += 1,
            }
        }
        pool.free_bulk(&got);
        if got.is_empty() {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    ex.sent = seq;
    ex
}

/// Tag of the probe frames [`wait_forwarding`] sends (never one an [`exchange`] counts).
pub const PROBE_TAG: u32 = 0x9e0b_e000;

/// Sends one probe frame from `tx` every 5 ms until one arrives on `rx` (as a tester's learning
/// frames, RFC 2544 §23): a device whose far port is still coming up (a DPDK memif client marks
/// itself connected only when the server's CONNECTED message reaches its interrupt thread, which
/// shares the DUT's CPU with the busy forwarding lcore) drops what it cannot send, and a counted
/// exchange that started then would wait for frames that were never going to come. Returns how
/// many probes it sent; panics naming the direction after `timeout`.
pub fn wait_forwarding(
    pool: &mut Pool,
    tx: &mut Box<dyn Port>,
    rx: &mut Box<dyn Port>,
    dst: [u8; 6],
    src: [u8; 6],
    timeout: Duration,
) -> u32 {
    let start = Instant::now();
    let mut sent = 0u32;
    let mut last_send: Option<Instant> = None;
    let mut got = Vec::new();
    let mut bytes = Vec::new();
    while start.elapsed() < timeout {
        tx.poll_control();
        rx.poll_control();
        if last_send.is_none_or(|t| t.elapsed() >= Duration::from_millis(5)) {
            let h = pool.alloc().expect("pool has buffers");
            assert!(pool.write_packet(h, &frame(dst, src, PROBE_TAG, sent)));
            sent += tx.tx_burst(pool, &[h]) as u32;
            pool.free_bulk(&[h]);
            last_send = Some(Instant::now());
        }
        got.clear();
        rx.rx_burst(pool, &mut got, 256);
        let mut arrived = false;
        for &h in &got {
            bytes.clear();
            pool.copy_out(h, &mut bytes);
            arrived |= matches!(parse(&bytes), Some((PROBE_TAG, _)));
        }
        pool.free_bulk(&got);
        if arrived {
            return sent;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    panic!(
        "no probe frame {} -> {} came through in {timeout:?} ({sent} sent)",
        tx.name(),
        rx.name()
    );
}

/// The `vecswitch` binary built beside this test (`cargo build -p vecswitch-cli`), or
/// `VECSWITCH_BIN`.
pub fn vecswitch_bin() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("VECSWITCH_BIN") {
        return p.into();
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test> -> target/<profile>/vecswitch
    exe.parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("vecswitch"))
        .expect("target directory")
}

/// [`vecswitch_bin`], failing the test with what to build when it is missing.
pub fn built_vecswitch() -> std::path::PathBuf {
    let bin = vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    bin
}

/// Fails a test that hangs instead of letting it hang CI: if the returned guard is still alive
/// after `limit`, prints every thread's stack of this process (with `gdb`, when installed) and
/// `ps`, tears down the registered child processes and namespaces, then aborts the test binary. Dropping the guard (end of the test, also
/// by a panic) disarms it.
pub fn watchdog(test: &'static str, limit: Duration) -> Watchdog {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::Builder::new()
        .name(format!("watchdog-{test}"))
        .spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                let pid = std::process::id().to_string();
                say(format!(
                    "WATCHDOG: {test} still running after {limit:?}; kernel stacks of pid {pid}:"
                ));
                // First what cannot hang: each thread's state and kernel stack. A thread looping
                // in the kernel never stops for gdb (which then waits for good), nor dies.
                say(kernel_stacks(&pid));
                say(format!("user stacks of pid {pid} (gdb, at most 60 s):"));
                let gdb = std::process::Command::new("timeout")
                    .args(["-s", "KILL", "60", "gdb", "-p", &pid, "-batch"])
                    .args(["-ex", "thread apply all bt 30"])
                    .stdin(std::process::Stdio::null())
                    .output();
                match gdb {
                    Ok(o) => say(String::from_utf8_lossy(&o.stdout).into_owned()),
                    Err(e) => say(format!(
                        "(gdb not runnable: {e}; install the Debian package gdb)"
                    )),
                }
                if let Ok(o) = std::process::Command::new("ps")
                    .args(["-eo", "pid,ppid,pgid,stat,pcpu,etime,args"])
                    .output()
                {
                    say(String::from_utf8_lossy(&o.stdout).into_owned());
                }
                // Kill the children and namespaces the testbeds registered, then fail.
                vecswitch_testbed::signal::teardown_registered();
                std::process::abort();
            }
        })
        .expect("spawn the watchdog thread");
    Watchdog { _disarm: tx }
}

/// Every thread of process `pid`: name, state, CPU and kernel stack (`/proc/PID/task/*/stack`).
fn kernel_stacks(pid: &str) -> String {
    let mut out = String::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return format!("(/proc/{pid}/task unreadable)");
    };
    for t in tasks.flatten() {
        let dir = t.path();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let stat = read("stat");
        // Fields after the parenthesised name: state is the first, the CPU the 37th.
        let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        out += &format!(
            "thread {} {} state {} cpu {}\n{}",
            t.file_name().to_string_lossy(),
            read("comm").trim_end(),
            fields.first().unwrap_or(&"?"),
            fields.get(36).unwrap_or(&"?"),
            read("stack")
        );
    }
    out
}

/// Writes to the process's stderr directly: the test harness captures `eprintln!` (also from
/// threads a test spawns) and would lose it when the watchdog aborts.
fn say(s: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{s}");
}

/// See [`watchdog`]; dropping it disarms the watchdog.
pub struct Watchdog {
    _disarm: std::sync::mpsc::Sender<()>,
}

/// Fails naming what to install when Open vSwitch or the `vecswitch` binary is missing (the
/// tests that run OVS beside vecswitch).
pub fn require_ovs_and_vecswitch() {
    for p in ["ovs-vswitchd", "ovsdb-server", "ovs-vsctl", "ovs-ofctl"] {
        assert!(
            std::process::Command::new(p)
                .arg("--version")
                .output()
                .is_ok(),
            "{p} not found: install openvswitch-switch (scripts/setup.sh)"
        );
    }
    let bin = vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
}

/// phy2phy-veth with the generator's ports open and `kind` started on it (the vecswitch binary
/// must be built: the assert says how).
pub fn phy2phy_veth_with(
    kind: vecswitch_testbed::DutKind,
) -> (vecswitch_testbed::Testbed, Vec<Box<dyn Port>>) {
    let bin = vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    let mut tb = vecswitch_testbed::Testbed::build(vecswitch_testbed::Topology::Phy2Phy {
        link: vecswitch_testbed::Link::Veth,
    })
    .unwrap();
    let ports = tb.open_generator_ports().unwrap();
    tb.start(kind.build()).unwrap();
    (tb, ports)
}

/// One device's tests of `suite` at `size` through the bench's own path
/// (`run_for_dut_observed`): the generator's measurer on `ports` sending `streams` (tester
/// tolerance 1 %), the searches capped at `generator_limit_fps`, scale points applied by
/// `reconfigure`. Panics if the suite cannot run.
#[allow(clippy::too_many_arguments)] // a test helper: each argument is one input of the bench's path
pub fn run_suite_dut(
    tb: &vecswitch_testbed::Testbed,
    ports: Vec<Box<dyn Port>>,
    streams: Vec<vecswitch_gen::StreamSpec>,
    suite: &vecswitch_lab::suite::Suite,
    dut: &vecswitch_lab::suite::DutSpec,
    size: &vecswitch_lab::suite::FrameSize,
    generator_limit_fps: Option<f64>,
    reconfigure: &mut vecswitch_lab::suite::Reconfigure<'_>,
) -> vecswitch_lab::suite::DutRun {
    let mut m = vecswitch_testbed::GenMeasurer::for_testbed(tb, ports, streams)
        .unwrap()
        .tolerance(0.01);
    vecswitch_lab::suite::run_for_dut_observed(
        suite,
        dut,
        size,
        generator_limit_fps,
        &mut m,
        reconfigure,
        &mut (),
    )
    .unwrap()
}

/// Every stream of the generator's report `rep` lost nothing, got each frame once and on the
/// port it was meant for.
pub fn assert_streams_lossless(rep: &vecswitch_gen::TrialReport) {
    for s in &rep.streams {
        assert_eq!(
            (s.lost, s.rx.rx_unique, s.rx.duplicated, s.rx_wrong_port),
            (0, s.tx, 0, 0),
            "stream {}: {s:?}",
            s.name
        );
    }
}

/// Two namespaces named `gen` and `dev`, joined by veth pairs eg0–ed0 and eg1–ed1, the `dev` ends
/// enslaved to a Linux bridge `br0` (no STP, no forward delay), everything up: the external
/// device that the shaped-bridge tests put a `tc` shaper into. The namespaces (and with them the
/// links) are removed when the returned guards drop, also when a test fails.
pub fn bridge_in_namespaces(
    gen: &str,
    dev: &str,
) -> (vecswitch_testbed::Netns, vecswitch_testbed::Netns) {
    use vecswitch_testbed::{veth_pair, Netns};
    let gen = Netns::create(gen).unwrap();
    let dev = Netns::create(dev).unwrap();
    for i in 0..2 {
        let (g, d) = (format!("eg{i}"), format!("ed{i}"));
        veth_pair(&gen, &g, &dev, &d).unwrap();
        gen.link_up(&g).unwrap();
        dev.link_up(&d).unwrap();
    }
    dev.ip(&[
        "link",
        "add",
        "br0",
        "type",
        "bridge",
        "stp_state",
        "0",
        "forward_delay",
        "0",
    ])
    .unwrap();
    for d in ["ed0", "ed1"] {
        dev.ip(&["link", "set", d, "master", "br0"]).unwrap();
    }
    dev.ip(&["link", "set", "br0", "up"]).unwrap();
    (gen, dev)
}
