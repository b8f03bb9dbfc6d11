//! The in-kernel cross-connect of two AF_XDP ports (`AfXdpPort::set_offload`: an XDP program that
//! counts each frame and redirects it to the other port's interface). Two veth pairs, each with
//! its far end in a namespace the test creates ([`VethLab`], deleted when the test ends, panics
//! included); AF_PACKET ports on the far ends send and receive. Needs root (CAP_NET_ADMIN,
//! CAP_BPF), `ethtool` (GRO on the far ends gives them the NAPI that redirected frames need) and
//! `tshark`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::af_xdp::{AfXdpConfig, AfXdpPort, XdpMode};
use vecswitch_ports::pcap::Capture;
use vecswitch_ports::testing::wait_up;
use vecswitch_ports::testing::{self, marked_frame};
use vecswitch_ports::{KernelRedirect, Port};
use vecswitch_testsupport::tool::require;
use vecswitch_testsupport::VethLab;

const MAGIC: u32 = 0x7846_4f46; // "xFOF"

fn frame(dir: u8, seq: u32, len: usize) -> Vec<u8> {
    marked_frame(MAGIC, dir, seq, len)
}

/// Sends `count` frames of `len` bytes from `tx` and asserts that `rx` received every one, in
/// order and unchanged.
fn assert_all_cross(
    tx: &mut dyn Port,
    rx: &mut dyn Port,
    pool: &mut Pool,
    dir: u8,
    len: usize,
    count: u32,
    what: &str,
) {
    let got = send_and_collect(tx, rx, pool, dir, len, count, Duration::from_secs(2));
    assert_eq!(got.len() as u32, count, "{what}, {len} bytes");
    for (seq, f) in got.iter().enumerate() {
        assert_eq!(
            f,
            &frame(dir, seq as u32, len),
            "{what} frame {seq} of {len} bytes"
        );
    }
}

/// Turns GRO on or off on the far end `ifname` in `lab`'s namespace: with GRO on, veth gives
/// the end a NAPI, which is what a frame redirected into its peer needs (drivers/net/veth.c,
/// `veth_xdp_xmit`: no NAPI → `-ENXIO`, the frames dropped and counted in the sender's
/// `tx_dropped`).
fn gro(lab: &VethLab, on: bool) {
    let ethtool = require("ethtool");
    let ethtool = ethtool.to_str().expect("utf-8 path");
    lab.ns().exec(&[
        ethtool,
        "-K",
        lab.peer(),
        "gro",
        if on { "on" } else { "off" },
    ]);
}

/// The shared sender/collector with this file's magic (`vecswitch_ports::testing`).
fn send_and_collect(
    tx: &mut dyn Port,
    rx: &mut dyn Port,
    pool: &mut Pool,
    dir: u8,
    len: usize,
    count: u32,
    wait: Duration,
) -> Vec<Vec<u8>> {
    testing::send_and_collect(tx, rx, pool, MAGIC, dir, len, count, wait)
}

struct TempFile(PathBuf);
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn far_end(lab: &VethLab, name: &str) -> AfPacketPort {
    let pc = AfPacketConfig {
        rx_mode: RxMode::Frame,
        ..AfPacketConfig::new(name, lab.peer())
    };
    AfPacketPort::open_in_netns(pc, &lab.netns_path()).expect("open far end in its namespace")
}

fn xdp_port(lab: &VethLab, name: &str) -> AfXdpPort {
    AfXdpPort::open(AfXdpConfig {
        mode: XdpMode::Native,
        ..AfXdpConfig::new(name, lab.host())
    })
    .expect("open AF_XDP port (native) on the host end")
}

fn error(p: &dyn Port, reason: &str) -> u64 {
    p.error_counters()
        .into_iter()
        .find(|(r, _)| *r == reason)
        .unwrap_or_else(|| panic!("{} has no counter {reason}", p.name()))
        .1
}

/// Exact counts both ways through the kernel, contents unchanged (checked frame by frame here
/// and by tshark on a pcap of what the far end received), the ports' `rx_packets`/`rx_bytes`
/// from the program's counter, nothing reaching the sockets; then a far end without NAPI: veth
/// then refuses redirected frames (it takes `NETDEV_XDP_ACT_NDO_XMIT` off the device whose peer
/// has no NAPI), so every frame is lost at the receiving interface, counted in its `rx_dropped`
/// (ethtool's `rx_queue_0_drops`) and shown by the receiving port as
/// `kernel-xdp-redirect-failed`; then offload off: the frames reach the socket again.
#[test]
fn offloaded_xconnect_forwards_exact_counts_in_the_kernel_and_counts_the_lost() {
    let la = VethLab::new("vsoa");
    let lb = VethLab::new("vsob");
    let mut xa = xdp_port(&la, "xa");
    let mut xb = xdp_port(&lb, "xb");
    let mut fa = far_end(&la, "fa");
    let fb = far_end(&lb, "fb");
    gro(&la, true);
    gro(&lb, true);
    for p in [&xa as &dyn Port, &xb, &fa, &fb] {
        wait_up(p);
    }
    let (ta, tb) = (
        xa.redirect_target().expect("native: a target"),
        xb.redirect_target().expect("native: a target"),
    );
    xa.set_offload(Some(tb)).expect("offload a -> b");
    xb.set_offload(Some(ta)).expect("offload b -> a");
    assert!(xa.describe().starts_with("OFFLOADED"), "{}", xa.describe());

    let file = TempFile(
        std::env::temp_dir().join(format!("vecswitch-xdp-offload-{}.pcap", std::process::id())),
    );
    let mut fb = Capture::create(fb, &file.0).expect("create pcap");
    let mut pool = Pool::new(4096);
    let count = 3000u32;
    for p in [&mut xa as &mut dyn Port, &mut xb, &mut fa, &mut fb] {
        p.clear_stats();
    }
    for len in [60usize, 1514] {
        assert_all_cross(&mut fa, &mut fb, &mut pool, 1, len, count, "a -> b");
        assert_all_cross(&mut fb, &mut fa, &mut pool, 2, len, count, "b -> a");
    }
    // Nothing reached the sockets: the sockets' own receive path is empty.
    let mut out = Vec::new();
    assert_eq!(xa.rx_burst(&mut pool, &mut out, 256), 0);
    assert_eq!(xb.rx_burst(&mut pool, &mut out, 256), 0);
    let bytes = u64::from(count) * (60 + 1514);
    for x in [&xa, &xb] {
        let s = x.stats();
        assert_eq!(
            (s.rx_packets, s.rx_bytes, s.rx_dropped, s.tx_dropped),
            (2 * u64::from(count), bytes, 0, 0),
            "{}: counted by its XDP program, nothing lost",
            x.name()
        );
        let (_, p, b) = x.offload().expect("offloaded");
        assert_eq!((p, b), (2 * u64::from(count), bytes), "{}", x.name());
    }

    fb.finish().expect("flush pcap");
    // What fb received, read by tshark: every frame a -> b, lengths and source unchanged.
    let rows = vecswitch_testsupport::tshark::fields(
        &file.0,
        &["-Y", "eth.src == 02:00:00:00:00:21"],
        &["frame.len", "eth.type"],
    );
    assert_eq!(
        rows.len() as u32,
        2 * count,
        "tshark: a -> b frames in the pcap"
    );
    for (i, r) in rows.iter().enumerate() {
        let len = if (i as u32) < count { "60" } else { "1514" };
        assert_eq!(
            r,
            &[len.to_string(), "0x88b5".to_string()],
            "pcap frame {i}"
        );
    }

    // Loss: fb's end without NAPI. The redirect to b's interface fails on a's: counted there.
    drop(fb);
    gro(&lb, false);
    let mut fb = far_end(&lb, "fb");
    wait_up(&fb);
    for p in [&mut xa as &mut dyn Port, &mut xb, &mut fa, &mut fb] {
        p.clear_stats();
    }
    let lost = 500u32;
    let got = send_and_collect(
        &mut fa,
        &mut fb,
        &mut pool,
        3,
        60,
        lost,
        Duration::from_millis(500),
    );
    assert_eq!(
        got.len(),
        0,
        "a far end without NAPI receives no redirected frame"
    );
    assert_eq!(
        xa.stats().rx_packets,
        u64::from(lost),
        "a's program counted them"
    );
    assert_eq!(
        (
            xa.stats().rx_dropped,
            error(&xa, "kernel-xdp-redirect-failed")
        ),
        (u64::from(lost), u64::from(lost)),
        "a's port places every lost frame: {}",
        xa.describe()
    );

    // Offload off: frames reach a's socket again.
    xa.set_offload(None).expect("offload off");
    assert!(!xa.describe().starts_with("OFFLOADED"));
    assert_eq!(xa.offload(), None);
    let got = send_and_collect(
        &mut fa,
        &mut xa,
        &mut pool,
        4,
        60,
        100,
        Duration::from_secs(1),
    );
    assert_eq!(
        got.len(),
        100,
        "offload off: frames reach the AF_XDP socket"
    );
    assert_eq!(
        xa.stats().rx_packets,
        u64::from(lost) + 100,
        "counts kept across offload off"
    );
}

/// SKB mode has no in-kernel cross-connect: the error says why, and the port is unchanged.
#[test]
fn offload_needs_native_mode() {
    let la = VethLab::new("vsoc");
    let mut x = AfXdpPort::open(AfXdpConfig {
        mode: XdpMode::Skb,
        ..AfXdpConfig::new("xs", la.host())
    })
    .expect("open AF_XDP port in SKB mode");
    assert_eq!(x.redirect_target(), None);
    let e = x.set_offload(Some(1)).expect_err("SKB mode is refused");
    assert!(e.to_string().contains("native"), "{e}");
    assert_eq!(x.offload(), None);
}

/// The offload's target interface deleted and created again under its name (a new index): the
/// target port re-opens itself on it, and the source port's redirect follows the name to the new
/// index at its next interface check; frames cross again.
#[test]
fn offload_follows_a_recreated_target_interface() {
    let la = VethLab::new("vsod");
    let lb = VethLab::new("vsoe");
    let mut xa = xdp_port(&la, "xa");
    let mut xb = xdp_port(&lb, "xb");
    let mut fa = far_end(&la, "fa");
    gro(&lb, true);
    let mut fb = far_end(&lb, "fb");
    for p in [&xa as &dyn Port, &xb, &fa, &fb] {
        wait_up(p);
    }
    let old = xb.redirect_target().expect("native");
    xa.set_offload(Some(old)).expect("offload a -> b");
    let mut pool = Pool::new(4096);
    let got = send_and_collect(
        &mut fa,
        &mut fb,
        &mut pool,
        5,
        60,
        100,
        Duration::from_secs(1),
    );
    assert_eq!(got.len(), 100, "before the re-creation");

    // Re-create b's pair under the same names (the far end in its namespace again).
    drop(fb);
    vecswitch_testsupport::tool::ip(&["link", "del", lb.host()]);
    vecswitch_testsupport::tool::ip(&[
        "link",
        "add",
        lb.host(),
        "type",
        "veth",
        "peer",
        "name",
        lb.peer(),
        "netns",
        lb.ns().name(),
    ]);
    vecswitch_testsupport::tool::ip(&["link", "set", lb.host(), "up"]);
    lb.ns().ip(&["link", "set", lb.peer(), "up"]);
    gro(&lb, true);
    // The ports notice in their housekeeping (at most every 100 ms).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        xa.poll_control();
        xb.poll_control();
        let now = xb.redirect_target();
        if now.is_some_and(|n| n != old) && xa.offload().is_some_and(|(to, _, _)| Some(to) == now) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the redirect did not follow: {} / {}",
            xa.describe(),
            xb.describe()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut fb = far_end(&lb, "fb");
    wait_up(&fb);
    let got = send_and_collect(
        &mut fa,
        &mut fb,
        &mut pool,
        6,
        60,
        100,
        Duration::from_secs(1),
    );
    assert_eq!(got.len(), 100, "after the re-creation: {}", xa.describe());
}
