//! Regression (issue 8, the fair veth comparison; docs/BENCHMARKS.md §5 "Whose ceiling the veth
//! NDRs are"): a busy-polling DUT's veth receive runs on the DUT's CPU, not on the sender's.
//!
//! Without a placement the kernel runs the NAPI of a native-XDP veth end inside the sender's
//! `veth_xmit`, i.e. on the generator's CPU in the generator's own thread; the lab now gives the
//! DUT's veth ends threaded NAPI with the kthreads pinned to the DUT CPU
//! ([`CorePlan::dut_kernel_rx`]). (An AF_PACKET end has no NAPI; RPS places its backlog work,
//! off the DUT CPU: tests/afpacket_lowrate.rs.) The test builds phy2phy-veth, starts the DUT, records the
//! `napi:napi_poll` tracepoint on every CPU (`perf record -a`) during a 3 s trial at a low rate,
//! and checks per CPU and per context that every poll of the DUT ends was made by one of the
//! DUT's NAPI threads on the DUT's CPU and none by this process (the generator), and that the
//! trial lost nothing. Root; the namespaces and veth pairs are the testbed's (removed by its guards
//! also when an assert fails), the perf child is killed by a guard. (Own test binary.)

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{phy2phy_veth_with, vecswitch_bin};
use vecswitch_lab::{Load, Measurer};
use vecswitch_testbed::placement::{KernelRx, NAPI_THREAD_PRIORITY};
use vecswitch_testbed::{default_streams, generator_placement, DutKind, GenMeasurer};

/// `perf record -e napi:napi_poll -a -- sleep 600` into a file; killed on drop.
struct PerfRecord {
    child: Option<Child>,
    out: PathBuf,
}

impl PerfRecord {
    fn start(tag: &str) -> PerfRecord {
        vecswitch_testsupport::tool::require("perf");
        let out =
            std::env::temp_dir().join(format!("veth-placement-{tag}-{}.data", std::process::id()));
        let child = Command::new("perf")
            .args(["record", "-q", "-e", "napi:napi_poll", "-a", "-o"])
            .arg(&out)
            .args(["--", "sleep", "600"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("perf record");
        // perf opens the tracepoint on every CPU before it records anything.
        std::thread::sleep(Duration::from_millis(700));
        PerfRecord {
            child: Some(child),
            out,
        }
    }

    /// Stops recording and returns `perf script` lines: `comm tid [cpu] ... device DEV ...`.
    fn stop(&mut self) -> String {
        if let Some(mut c) = self.child.take() {
            // perf records for as long as its command runs: end the command (`sleep`), and perf
            // writes its file and exits by itself (a SIGINT to perf can leave the file empty).
            let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", c.id()))
                .unwrap_or_default();
            for pid in children.split_whitespace() {
                let _ = Command::new("kill").arg(pid).status();
            }
            let st = c.wait().expect("perf record wait");
            assert!(
                st.success() || st.code() == Some(143) || st.signal() == Some(15),
                "perf record: {st}"
            );
        }
        let out = Command::new("perf")
            .args(["script", "-F", "comm,tid,cpu,trace", "-i"])
            .arg(&self.out)
            .output()
            .expect("perf script");
        assert!(
            out.status.success(),
            "perf script: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for PerfRecord {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(&self.out);
    }
}

/// One `perf script -F comm,tid,cpu,trace` line: (tid, cpu, comm, device), e.g.
/// `napi/dut0-8193   4242 [001] napi poll on napi struct 0x... for device dut0 work 1 budget 64`
/// (a thread's name may hold spaces: the tid is the last word before `[cpu]`).
fn parse_poll(line: &str) -> Option<(u32, usize, String, String)> {
    let (left, right) = line.split_once(" [")?;
    let left = left.trim_end();
    let (comm, tid) = left.rsplit_once(char::is_whitespace)?;
    let tid: u32 = tid.parse().ok()?;
    let (cpu, trace) = right.split_once(']')?;
    let cpu: usize = cpu.trim().parse().ok()?;
    let device = trace.split("device ").nth(1)?.split_whitespace().next()?;
    Some((tid, cpu, comm.trim().to_string(), device.to_string()))
}

fn this_process_tids() -> Vec<u32> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn dut_receive_runs_on_the_dut_cpu(kind: DutKind, tag: &str) {
    let (tb, ports) = phy2phy_veth_with(kind);
    let cores = tb.wiring().cores;
    assert_ne!(cores.dut, cores.generator, "needs two CPUs: {cores:?}");
    assert_eq!(
        cores.dut_kernel_rx(true),
        KernelRx::ThreadedNapi {
            cpu: cores.dut,
            priority: NAPI_THREAD_PRIORITY,
            backlog_cpu: cores.generator,
        }
    );

    // The placement: one NAPI thread per DUT end, pinned to the DUT CPU above the worker, and
    // the record says so.
    let napi: Vec<_> = tb.napi_threads().to_vec();
    let dut_ends: Vec<String> = tb
        .wiring()
        .dut_ports
        .iter()
        .map(|p| p.name().to_string())
        .collect();
    for end in &dut_ends {
        assert!(
            napi.iter().any(|t| &t.ifname == end),
            "no NAPI thread for {end}: {napi:?}"
        );
    }
    let placement = tb.placement(generator_placement());
    let want = format!("cpus {} SCHED_FIFO {NAPI_THREAD_PRIORITY}", cores.dut);
    for line in placement
        .kernel_rx
        .iter()
        .filter(|l| l.contains("(dut side)"))
    {
        let rps = format!("rps_cpus {:x};", 1u64 << cores.dut);
        assert!(
            line.contains(&rps) && line.contains(&want),
            "{line}: expected {rps} and {want}"
        );
    }

    let mut perf = PerfRecord::start(tag);
    let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, true))
        .unwrap()
        .warmup(Duration::from_millis(500))
        .drain(Duration::from_millis(500));
    // 2,000 frames/s each way for 3 s: far below what this path carries. (A loaded host may
    // send fewer; the checks are on counts, not on the rate.)
    let r = m.trial(Load::fps(4_000.0), Duration::from_secs(3)).unwrap();
    let script = perf.stop();
    assert!(r.offered_frames >= 1_000, "{r:?}");
    assert_eq!(r.received_frames, r.offered_frames, "frames lost: {r:?}");

    // Every poll of the DUT ends: by which context, on which CPU.
    let names: Vec<&str> = napi.iter().map(|t| t.name.as_str()).collect();
    let ours = this_process_tids();
    let mut by_napi_thread: BTreeMap<usize, u64> = BTreeMap::new();
    let mut by_generator: BTreeMap<usize, u64> = BTreeMap::new();
    for (tid, cpu, comm, device) in script.lines().filter_map(parse_poll) {
        if !dut_ends.contains(&device) {
            continue;
        }
        if names.contains(&comm.as_str()) {
            *by_napi_thread.entry(cpu).or_default() += 1;
        } else if ours.contains(&tid) {
            *by_generator.entry(cpu).or_default() += 1;
        }
        // Anything else polled another run's device of the same name (other namespaces).
    }
    assert!(
        by_generator.is_empty(),
        "the DUT ends' NAPI ran in the generator's threads (per CPU): {by_generator:?}"
    );
    // A poll takes at most 64 frames (the NAPI weight): every frame that crossed a DUT end went
    // through one of its threads' polls only if there were at least frames / 64 of them.
    let total: u64 = by_napi_thread.values().sum();
    assert!(
        total * 64 >= r.received_frames,
        "the DUT's NAPI threads polled {total} times for {} frames: {by_napi_thread:?}",
        r.received_frames
    );
    assert_eq!(
        by_napi_thread.keys().copied().collect::<Vec<_>>(),
        vec![cores.dut],
        "NAPI thread polls per CPU: {by_napi_thread:?}"
    );
    tb.check_alive().unwrap();
}

#[test]
fn afxdp_duts_veth_receive_runs_in_napi_threads_on_the_dut_cpu() {
    dut_receive_runs_on_the_dut_cpu(
        DutKind::VecswitchXconnectAfxdp {
            bin: vecswitch_bin(),
        },
        "afxdp",
    );
}
