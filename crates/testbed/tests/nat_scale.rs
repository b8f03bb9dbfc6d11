//! The NAT / firewall suite's devices at its smallest points (docs/suites/nat-scale.toml):
//! every `[[dut]]` — vecswitch-router-nat on memif and veth and linux-router-nat with 1000
//! sessions, vecswitch-router-fw on memif and veth and linux-router-fw with 1 rule — one 1 s
//! trial at a low rate through the lab's measurer with the traffic shaped as the bench sends it.
//! Every device must forward every frame offered (counts, not speed); each NAT device must also
//! - hold the 1000 sessions (vecswitch `show nat44 summary`, the kernel's nf_conntrack_count, as
//!   the driver's placement note reports them),
//! - rewrite the source address to the outside address 198.19.0.254 with the source ports kept:
//!   tshark reads a capture of the generator's receiving veth (veth topologies, the generator on
//!   AF_PACKET sockets so that the capture sees the frames; over memif there
//!   is no interface to capture, `show nat44 sessions` says the same for the sessions it lists).
//!
//!
//! And the suite's new-session test (`flow_mode = "unique"`) on each NAT device: two trials of
//! unique flows, each emptying the table first; the frames must arrive (at least 90 %: a loaded
//! host may make a memif device refuse a few, never lose one inside) and the table must have
//! gained exactly one session per frame delivered in each trial (the driver's placement note: vecswitch
//! `show nat44 summary`, the kernel's nf_conntrack_count) — the frames were new sessions, not
//! forwarded repeats.
//!
//! Root: namespaces, veth pairs and memif sockets are the testbed's and removed by its guards;
//! the capture process is killed by its guard, also when an assert fails.

mod common;

use std::collections::HashSet;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::built_vecswitch;
use vecswitch_gen::SizeSpec;
use vecswitch_lab::suite::Suite;
use vecswitch_lab::{Load, Measurer};
use vecswitch_testbed::dut::{firewall, nat};
use vecswitch_testbed::gen_ports::GenVethPort;
use vecswitch_testbed::{streams_for, DutKind, GenMeasurer, PortEnd, Scale, Testbed, Topology};
use vecswitch_testsupport::tool::require;
use vecswitch_testsupport::tshark;

/// Sessions of the point (the suite's smallest).
const SESSIONS: u32 = 1000;
/// Frames per second: three frames per session in a 1 s trial, far below every device's rate.
const RATE_FPS: f64 = 3_000.0;

/// A capture running in a namespace; killed on drop.
struct Capture(Child);

impl Capture {
    /// Stops the capture as Ctrl-C does (SIGINT: tshark flushes the file) and waits for it.
    fn finish(mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        for _ in 0..50 {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `tshark` on `ifname` in `netns`, writing UDP frames to `pcap`, and waits until it
/// listens (its "Capturing on" line would need stderr parsing; the file appears when it does).
fn capture(netns: &str, ifname: &str, pcap: &std::path::Path) -> Capture {
    require("tshark");
    let child = Command::new("ip")
        .args([
            "netns", "exec", netns, "tshark", "-q", "-i", ifname, "-f", "udp", "-w",
        ])
        .arg(pcap)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(pcap.with_extension("stderr")).expect("tshark's stderr file"))
        .spawn()
        .expect("run tshark");
    let c = Capture(child);
    // tshark's start (its Lua and dissector registration, then dumpcap) took over 10 s once in CI
    // on a fresh clone; 30 s, and what it said if it never starts.
    for _ in 0..300 {
        if pcap.exists() {
            std::thread::sleep(Duration::from_millis(300));
            return c;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let said = std::fs::read_to_string(pcap.with_extension("stderr")).unwrap_or_default();
    panic!("tshark did not start capturing on {ifname} in {netns} within 30 s; it said: {said}");
}

/// Held by each test for its whole run: the two tests' generators would share the host's CPUs
/// (and the first one's AF_PACKET choice), and the first needs its offered load.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// docs/suites/nat-scale.toml, parsed.
fn nat_suite() -> Suite {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/suites/nat-scale.toml");
    Suite::parse(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// `d`'s topology built and its device started: (what it is, the testbed, the generator ports).
fn start(
    d: &vecswitch_lab::suite::DutSpec,
    bin: &std::path::Path,
) -> (String, Testbed, Vec<Box<dyn vecswitch_ports::Port>>) {
    let what = format!("{} on {}", d.name, d.topology);
    let topo: Topology = d.topology.parse().unwrap();
    let mut tb = Testbed::build(topo).unwrap();
    let ports = tb.open_generator_ports().unwrap();
    let dut = DutKind::parse(&d.name, bin.to_path_buf()).unwrap().build();
    tb.start(dut).unwrap_or_else(|e| panic!("{what}: {e}"));
    (what, tb, ports)
}

/// A measurer of `tb`'s generator ports sending the bench's streams of `size`, with the
/// tests' drain.
fn measurer<'a>(
    tb: &'a Testbed,
    ports: Vec<Box<dyn vecswitch_ports::Port>>,
    size: &SizeSpec,
) -> GenMeasurer<'a> {
    GenMeasurer::for_testbed(tb, ports, streams_for(size, false))
        .unwrap()
        .drain(Duration::from_millis(500))
}

/// The notes of the device's placement records, joined: what the bench's placement note says.
fn placement_note(tb: &Testbed) -> String {
    tb.with_dut(|x| x.processes())
        .unwrap()
        .iter()
        .map(|p| p.note.clone())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn nat_scale_suite_devices_translate_1000_sessions_and_filter_with_1_rule() {
    let _serial = serial();
    let bin = built_vecswitch();
    require("nft");
    require("tshark");
    // The generator's veth ports as AF_PACKET sockets: its default, AF_XDP, takes the frames
    // before the kernel's packet taps, so a capture on its receiving veth would see none. (Read
    // when the testbed opens its ports; the other test of this binary, run after or before this
    // one ([`serial`]), works with either.)
    std::env::set_var(GenVethPort::ENV, "af_packet");
    let s = nat_suite();
    let size = s.frame_sizes[0].spec().unwrap();
    let outside = nat::outside_addr();
    let mut ran = Vec::new();
    for d in &s.duts {
        let (what, mut tb, ports) = start(d, &bin);
        let mut m = measurer(&tb, ports, &size).warmup(Duration::from_millis(300));
        let is_nat = d.name.ends_with("-nat");
        let scale = if is_nat {
            Scale::Sessions(SESSIONS)
        } else {
            Scale::Rules(1)
        };
        tb.configure_scale(scale)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut shaped = streams_for(&size, false);
        tb.with_dut(|x| x.shape_streams(&mut shaped))
            .unwrap()
            .unwrap();
        let flows = if is_nat {
            SESSIONS
        } else {
            firewall::FIREWALL_FLOWS
        };
        assert_eq!(shaped[0].flows, flows, "{what}: {shaped:?}");
        let pcap = tb.wiring().run_dir.join("outside.pcap");
        let cap = match &tb.wiring().gen_ports[1] {
            PortEnd::Veth { netns, ifname, .. } if is_nat => Some(capture(netns, ifname, &pcap)),
            _ => None,
        };
        let r = m
            .trial(Load::fps(RATE_FPS), Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            r.offered_frames >= 2 * u64::from(SESSIONS),
            "{what}: the generator offered too little to reach every session: {r:?}"
        );
        assert_eq!(
            r.received_frames, r.offered_frames,
            "{what}: frames lost: {r:?}"
        );
        ran.push(what.clone());
        if !is_nat {
            tb.check_alive().unwrap();
            drop(m);
            tb.stop().unwrap();
            continue;
        }
        // Sessions held, as the bench's placement note reports them.
        let note = placement_note(&tb);
        assert!(
            note.contains(&format!("{SESSIONS} sessions: {SESSIONS} held"))
                && !note.contains("NOT all held"),
            "{what}: {note}"
        );
        if let Some(cap) = cap {
            std::thread::sleep(Duration::from_millis(500));
            cap.finish();
            let rows = tshark::fields(
                &pcap,
                &["-o", "ip.check_checksum:TRUE", "-Y", "udp"],
                &["ip.src", "ip.checksum.status", "udp.srcport", "udp.dstport"],
            );
            assert!(
                rows.len() as u64 >= r.received_frames,
                "{what}: {} frames captured",
                rows.len()
            );
            let mut tuples = HashSet::new();
            for row in &rows {
                assert_eq!(
                    row[0],
                    outside.to_string(),
                    "{what}: source not translated: {row:?}"
                );
                assert_eq!(
                    row[1], "1",
                    "{what}: IPv4 checksum not good (tshark: 0 bad, 1 good, 2 unverified): {row:?}"
                );
                let sp: u16 = row[2].parse().unwrap();
                assert!(
                    sp >= nat::SRC_PORT_BASE,
                    "{what}: source port not kept: {row:?}"
                );
                tuples.insert((row[2].clone(), row[3].clone()));
            }
            assert_eq!(
                tuples.len() as u32,
                SESSIONS,
                "{what}: distinct sessions in the capture"
            );
        } else {
            // memif: the sessions vecswitch lists leave from the outside address, ports kept.
            let out = Command::new(&bin)
                .args(["ctl", "--socket"])
                .arg(tb.wiring().run_dir.join("dut.ctl"))
                .args(["--json", "show", "nat44", "sessions"])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let n = text.matches(&format!("\"{outside}")).count()
                + text.matches(&format!("{outside}:")).count();
            assert!(
                n > 0,
                "{what}: no session with outside address {outside}: {text}"
            );
        }
        tb.check_alive().unwrap();
        drop(m);
        tb.stop().unwrap();
    }
    assert_eq!(ran.len(), 6, "{ran:?}");
}

/// Frames per second of the new-session trials, and the trials.
const NEW_FPS: f64 = 2_000.0;
const NEW_TRIALS: usize = 2;

#[test]
fn nat_devices_make_one_new_session_per_frame_in_unique_trials() {
    let _serial = serial();
    let bin = built_vecswitch();
    require("nft");
    require("conntrack");
    let s = nat_suite();
    // The suite has the test, on the NAT devices.
    let t = s
        .tests
        .iter()
        .find(|t| t.id("x") == "nat_new_sessions")
        .expect("docs/suites/nat-scale.toml: test nat_new_sessions");
    assert!(
        matches!(t, vecswitch_lab::suite::TestSpec::Throughput { flow_mode, .. } if *flow_mode == vecswitch_lab::suite::FlowMode::Unique),
        "{t:?}"
    );
    let size = s.frame_sizes[0].spec().unwrap();
    let mut ran = Vec::new();
    for d in s.duts.iter().filter(|d| d.name.ends_with("-nat")) {
        let (what, mut tb, ports) = start(d, &bin);
        // No warm-up (as the bench): a trial's sessions are its measured frames.
        let mut m = measurer(&tb, ports, &size);
        m.set_unique_flows(true).unwrap();
        let mut delivered = Vec::new();
        for _ in 0..NEW_TRIALS {
            let r = m
                .trial(Load::fps(NEW_FPS), Duration::from_secs(1))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(r.offered_frames >= 100, "{what}: offered too little: {r:?}");
            // A loaded host may deschedule the device for a few ring-fulls (memif refusals);
            // the proof is per frame delivered: each one a session.
            assert!(
                r.received_frames * 10 >= r.offered_frames * 9,
                "{what}: frames lost: {r:?}"
            );
            assert_eq!(
                r.accounting.as_ref().and_then(|a| a.lost_in_device),
                Some(0),
                "{what}: frames lost inside the device (they may or may not have made a session): {r:?}"
            );
            delivered.push(r.received_frames);
        }
        m.set_unique_flows(false).unwrap();
        let note = placement_note(&tb);
        let created = nat::parse_new_session_note(&note)
            .unwrap_or_else(|| panic!("{what}: no new-session counts in the note: {note}"));
        assert_eq!(
            created, delivered,
            "{what}: sessions created per trial vs frames delivered ({note})"
        );
        ran.push(what);
        tb.check_alive().unwrap();
        drop(m);
        tb.stop().unwrap();
    }
    assert_eq!(ran.len(), 3, "{ran:?}");
}
