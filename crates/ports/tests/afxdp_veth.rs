//! AF_XDP port over a veth pair whose far end sits in a network namespace the test creates, with
//! an AF_PACKET port (frame mode) on the far end as the independent peer. Needs root
//! (CAP_NET_ADMIN, CAP_BPF); the [`VethLab`] guard (crates/testsupport) deletes the namespace and
//! the veth pair when the test ends, panics included, and dropping the port detaches its XDP
//! program.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::af_xdp::{AfXdpConfig, AfXdpError, AfXdpPort, XdpMode};
use vecswitch_ports::loopback::packet_from_bytes;
use vecswitch_ports::pcap::Capture;
use vecswitch_ports::testing::marked_frame;
use vecswitch_ports::testing::wait_up;
use vecswitch_ports::Port;
use vecswitch_testsupport::tool::ip;
use vecswitch_testsupport::VethLab;

const MAGIC: u32 = 0x7846_5350; // "xFSP"

/// An AF_XDP port on the host end (in `mode`) and an AF_PACKET port on the far end.
fn ports(lab: &VethLab, mode: XdpMode) -> (AfXdpPort, AfPacketPort) {
    let xdp = AfXdpPort::open(AfXdpConfig {
        mode,
        ..AfXdpConfig::new("xdp", lab.host())
    })
    .expect("open AF_XDP port on the host end");
    let pc = AfPacketConfig {
        rx_mode: RxMode::Frame,
        ..AfPacketConfig::new("peer", lab.peer())
    };
    let peer = AfPacketPort::open_in_netns(pc, &lab.netns_path()).expect("open far end in netns");
    wait_up(&xdp);
    wait_up(&peer);
    (xdp, peer)
}

fn test_frame(dir: u8, seq: u32, len: usize) -> Vec<u8> {
    marked_frame(MAGIC, dir, seq, len)
}

/// Sends `count` test frames of `len` bytes from `tx` in bursts of `burst`, retrying what the
/// port could not take (it counts those in `tx_dropped`), and receives them on `rx`. Returns the
/// frames received that carry our magic and direction, in order, and how many sends were refused.
fn transfer(
    tx: &mut dyn Port,
    rx: &mut dyn Port,
    pool: &mut Pool,
    dir: u8,
    len: usize,
    count: u32,
) -> (Vec<Vec<u8>>, u64) {
    let mut got = Vec::new();
    let mut refused = 0;
    let mut next = 0u32;
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while (got.len() as u32) < count {
        assert!(
            Instant::now() < deadline,
            "dir {dir} len {len}: only {} of {count} frames arrived ({} sent)",
            got.len(),
            next
        );
        if next < count {
            let n = (count - next).min(32);
            let hs: Vec<u32> = (0..n)
                .map(|k| packet_from_bytes(pool, &test_frame(dir, next + k, len)).unwrap())
                .collect();
            let sent = tx.tx_burst(pool, &hs);
            refused += (hs.len() - sent) as u64;
            next += sent as u32;
            pool.free_bulk(&hs);
        } else {
            tx.poll_control();
        }
        out.clear();
        rx.rx_burst(pool, &mut out, 256);
        for &h in &out {
            let mut f = Vec::new();
            pool.copy_out(h, &mut f);
            if f.len() >= 23 && f[14..18] == MAGIC.to_be_bytes() && f[18] == dir {
                got.push(f);
            }
        }
        pool.free_bulk(&out);
    }
    (got, refused)
}

fn check_in_order(frames: &[Vec<u8>], dir: u8, len: usize) {
    for (seq, f) in frames.iter().enumerate() {
        assert_eq!(
            f,
            &test_frame(dir, seq as u32, len),
            "dir {dir} frame {seq} of {len} bytes differs"
        );
    }
}

/// Exact counts both ways, 60- and 1514-byte frames, contents checked frame by frame, and the
/// port counters agree with what crossed; in native and in SKB mode.
#[test]
fn af_xdp_exchanges_exact_counts_with_af_packet_both_ways() {
    for mode in [XdpMode::Native, XdpMode::Skb] {
        let lab = VethLab::new("vsxd");
        let (mut xdp, mut peer) = ports(&lab, mode);
        assert_eq!(xdp.mode(), mode);
        let mut pool = Pool::new(4096);
        let count = 2000;
        for len in [60usize, 1514] {
            xdp.clear_stats();
            peer.clear_stats();
            // AF_XDP -> AF_PACKET.
            let (got, refused) = transfer(&mut xdp, &mut peer, &mut pool, 1, len, count);
            assert_eq!(got.len(), count as usize, "{mode} len {len} xdp->peer");
            check_in_order(&got, 1, len);
            // AF_PACKET -> AF_XDP.
            let (got, _) = transfer(&mut peer, &mut xdp, &mut pool, 2, len, count);
            assert_eq!(got.len(), count as usize, "{mode} len {len} peer->xdp");
            check_in_order(&got, 2, len);
            // Nothing else crosses this veth: the counters are exact.
            let s = xdp.stats();
            assert_eq!(s.tx_packets, u64::from(count), "{mode} len {len}: {s:?}");
            assert_eq!(s.tx_bytes, u64::from(count) * len as u64);
            assert_eq!(s.tx_dropped, refused, "refusals are counted, nothing else");
            assert_eq!(s.rx_packets, u64::from(count), "{mode} len {len}: {s:?}");
            assert_eq!(s.rx_bytes, u64::from(count) * len as u64);
            assert_eq!(s.rx_dropped, 0, "{:?}", xdp.af_xdp_stats());
            assert_eq!(xdp.af_xdp_stats().tx_pending, 0);
        }
        assert_eq!(pool.in_use(), 0, "every buffer back in the pool");
        let shown = |lab: &VethLab| ip(&["link", "show", "dev", lab.host()]);
        assert!(shown(&lab).contains("prog/xdp"), "{}", shown(&lab));
        drop(xdp);
        assert!(
            !shown(&lab).contains("prog/xdp"),
            "the program stays attached after the port dropped: {}",
            shown(&lab)
        );
    }
}

struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What crossed the AF_XDP port, captured by the pcap wrapper and read back by tshark: the
/// frames sent (60 and 1514 bytes) then the frames received, with their lengths and EtherType.
#[test]
fn af_xdp_traffic_captured_to_pcap_is_read_by_tshark() {
    let lab = VethLab::new("vsxd");
    let (xdp, mut peer) = ports(&lab, XdpMode::Auto);
    let file = TempFile(std::env::temp_dir().join(format!(
        "vecswitch-afxdp-{}-{}.pcap",
        std::process::id(),
        lab.ns().name()
    )));
    let mut cap = Capture::create(xdp, &file.0).expect("create pcap");
    let mut pool = Pool::new(1024);
    let (got, refused) = transfer(&mut cap, &mut peer, &mut pool, 1, 60, 5);
    assert_eq!((got.len(), refused), (5, 0));
    let (got, refused) = transfer(&mut cap, &mut peer, &mut pool, 1, 1514, 5);
    assert_eq!((got.len(), refused), (5, 0));
    let (got, _) = transfer(&mut peer, &mut cap, &mut pool, 2, 60, 5);
    assert_eq!(got.len(), 5);
    cap.finish().expect("flush pcap");

    let lines: Vec<String> =
        vecswitch_testsupport::tshark::fields(&file.0, &[], &["frame.len", "eth.src", "eth.type"])
            .into_iter()
            .map(|row| row.join(","))
            .collect();
    let mut expected = Vec::new();
    expected.extend(std::iter::repeat_n("60,02:00:00:00:00:21,0x88b5", 5));
    expected.extend(std::iter::repeat_n("1514,02:00:00:00:00:21,0x88b5", 5));
    expected.extend(std::iter::repeat_n("60,02:00:00:00:00:22,0x88b5", 5));
    assert_eq!(lines, expected);
}

/// Bad configs give errors naming the field, the value and what is accepted; an interface that
/// does not exist is named too. Nothing is opened, so no namespace is needed.
#[test]
fn af_xdp_bad_config_names_the_field() {
    let err = AfXdpPort::open(AfXdpConfig::new("x", "vsx-nonexistent")).unwrap_err();
    assert!(matches!(err, AfXdpError::NoSuchInterface { .. }), "{err}");
    assert!(
        err.to_string().contains("interface = \"vsx-nonexistent\""),
        "{err}"
    );

    let mut c = AfXdpConfig::new("x", "lo");
    c.rx_size = 1000;
    let err = AfXdpPort::open(c).unwrap_err().to_string();
    assert!(
        err.contains("rx_size = 1000") && err.contains("power of two"),
        "{err}"
    );

    let mut c = AfXdpConfig::new("x", "lo");
    c.frame_size = 3000;
    let err = AfXdpPort::open(c).unwrap_err().to_string();
    assert!(
        err.contains("frame_size = 3000") && err.contains("2048 or 4096"),
        "{err}"
    );

    let err = "turbo".parse::<XdpMode>().unwrap_err().to_string();
    assert!(
        err.contains("mode = \"turbo\"") && err.contains("\"native\""),
        "{err}"
    );
}

/// On an interface whose driver has no native XDP (a bridge device), `mode = native` fails naming the mode
/// and `mode = auto` falls back to SKB mode.
#[test]
fn af_xdp_native_mode_without_driver_support_fails_and_auto_falls_back_to_skb() {
    let lab = VethLab::new("vsxd");
    let nodrv = format!("{}b", lab.peer());
    ip(&[
        "-n",
        lab.ns().name(),
        "link",
        "add",
        &nodrv,
        "type",
        "bridge",
    ]);
    ip(&["-n", lab.ns().name(), "link", "set", &nodrv, "up"]);
    let cfg = |mode| AfXdpConfig {
        mode,
        ..AfXdpConfig::new("d", &nodrv)
    };
    let err = AfXdpPort::open_in_netns(cfg(XdpMode::Native), &lab.netns_path()).unwrap_err();
    assert!(matches!(err, AfXdpError::Attach { .. }), "{err}");
    assert!(err.to_string().contains("mode = native"), "{err}");
    let mut port = AfXdpPort::open_in_netns(cfg(XdpMode::Auto), &lab.netns_path())
        .expect("auto mode falls back to SKB mode");
    assert_eq!(port.mode(), XdpMode::Skb);
    assert!(port.describe().contains("xdp skb"), "{}", port.describe());
    // Re-opened at once (a port re-created on reload): the kernel releases the old socket's
    // queue in deferred work, which the open waits for instead of failing with EBUSY.
    for _ in 0..3 {
        drop(port);
        port = AfXdpPort::open_in_netns(cfg(XdpMode::Skb), &lab.netns_path())
            .expect("re-open right after close");
    }
}

/// 802.1Q-tagged and Q-in-Q frames cross both ways byte for byte (the tag stays in the frame:
/// XDP runs before the kernel takes a tag out into the skb), in native and SKB mode.
#[test]
fn af_xdp_keeps_vlan_tags_both_ways() {
    for mode in [XdpMode::Native, XdpMode::Skb] {
        let lab = VethLab::new("vsxd");
        let (mut xdp, mut peer) = ports(&lab, mode);
        let mut pool = Pool::new(1024);
        let tagged = |dir: u8, seq: u32, outer: u16| {
            let mut f = test_frame(dir, seq, 64);
            // Insert tags after the MAC addresses: outer (TPID `outer`, VID 100), then 802.1Q VID 200.
            let mut tags = Vec::new();
            tags.extend_from_slice(&outer.to_be_bytes());
            tags.extend_from_slice(&100u16.to_be_bytes());
            if outer == 0x88a8 {
                tags.extend_from_slice(&0x8100u16.to_be_bytes());
                tags.extend_from_slice(&200u16.to_be_bytes());
            }
            f.splice(12..12, tags);
            f
        };
        for (dir, outer) in [(1u8, 0x8100u16), (1, 0x88a8), (2, 0x8100), (2, 0x88a8)] {
            let sent: Vec<Vec<u8>> = (0..20).map(|s| tagged(dir, s, outer)).collect();
            let hs: Vec<u32> = sent
                .iter()
                .map(|f| packet_from_bytes(&mut pool, f).unwrap())
                .collect();
            let (tx, rx): (&mut dyn Port, &mut dyn Port) = if dir == 1 {
                (&mut xdp, &mut peer)
            } else {
                (&mut peer, &mut xdp)
            };
            assert_eq!(tx.tx_burst(&mut pool, &hs), hs.len());
            pool.free_bulk(&hs);
            let mut got = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(5);
            while got.len() < sent.len() && Instant::now() < deadline {
                tx.poll_control();
                let mut out = Vec::new();
                rx.rx_burst(&mut pool, &mut out, 64);
                for &h in &out {
                    let mut f = Vec::new();
                    pool.copy_out(h, &mut f);
                    if f.len() > 26 && f[12..14] == outer.to_be_bytes() {
                        got.push(f);
                    }
                }
                pool.free_bulk(&out);
            }
            assert_eq!(got, sent, "{mode} dir {dir} outer {outer:#06x}");
        }
    }
}

/// With busy polling on (SO_BUSY_POLL, SO_PREFER_BUSY_POLL, SO_BUSY_POLL_BUDGET) the port opens,
/// says so, and frames cross both ways, counted exactly.
#[test]
fn af_xdp_with_busy_polling_exchanges_frames() {
    let lab = VethLab::new("vsxd");
    let mut xdp = AfXdpPort::open(AfXdpConfig {
        busy_poll_us: 20,
        busy_poll_budget: 16,
        ..AfXdpConfig::new("xdp", lab.host())
    })
    .expect("open with busy polling");
    assert!(
        xdp.describe().contains("busy-poll 20 us"),
        "{}",
        xdp.describe()
    );
    let mut peer = AfPacketPort::open_in_netns(
        AfPacketConfig {
            rx_mode: RxMode::Frame,
            ..AfPacketConfig::new("peer", lab.peer())
        },
        &lab.netns_path(),
    )
    .expect("open far end");
    wait_up(&xdp);
    wait_up(&peer);
    let mut pool = Pool::new(1024);
    let (got, _) = transfer(&mut xdp, &mut peer, &mut pool, 1, 60, 300);
    check_in_order(&got, 1, 60);
    let (got, _) = transfer(&mut peer, &mut xdp, &mut pool, 2, 60, 300);
    check_in_order(&got, 2, 60);
    assert_eq!(xdp.stats().rx_packets, 300);
    assert_eq!(xdp.stats().tx_packets, 300);
}

/// The kernel release's (major, minor), from `uname -r` (`/proc/sys/kernel/osrelease`).
fn kernel_version() -> (u32, u32) {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("read osrelease");
    let mut it = r
        .trim()
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// The port's system calls are counted and bounded by counts (issue 8: never a kick per frame):
/// the port raises the kernel's copy-mode budget per kick to its TX ring's size
/// (`XDP_MAX_TX_SKB_BUDGET`, kernel >= 6.17, where it must take), so a burst of 256 frames takes
/// one `sendto` — or one per 32 frames on an older kernel (`TX_BATCH_SIZE` in net/xdp/xsk.c) —,
/// plus at most 4 that found the peer full, and a burst of one frame one kick. Empty receive
/// polls make no `recvfrom` unless busy polling is on (the fill ring of a copy-mode socket never
/// asks for a wake-up) *and* the socket has a NAPI id, and then exactly one per poll that found
/// fewer frames than it asked for; without a NAPI id (veth on 6.18) a busy poll polls nothing
/// and the port makes none (docs/BENCHMARKS.md §5, "Where vecswitch AF_XDP's cycles go").
#[test]
fn af_xdp_kicks_once_per_burst() {
    let lab = VethLab::new("vsxk");
    let (mut xdp, mut peer) = ports(&lab, XdpMode::Native);
    let budget = xdp.tx_budget();
    if kernel_version() >= (6, 17) {
        assert_eq!(
            budget,
            xdp.config().tx_size,
            "kernel >= 6.17 takes XDP_MAX_TX_SKB_BUDGET: {}",
            xdp.describe()
        );
    } else {
        assert_eq!(
            budget,
            32,
            "the kernel's default budget: {}",
            xdp.describe()
        );
    }
    assert!(xdp.describe().contains(&format!("tx budget {budget}")));
    let mut pool = Pool::new(4096);
    let frames = |pool: &mut Pool, n: u32, from: u32| -> Vec<u32> {
        (0..n)
            .map(|k| packet_from_bytes(pool, &test_frame(1, from + k, 60)).unwrap())
            .collect()
    };
    let mut received = 0;
    let mut out = Vec::new();
    let mut receive_all = |peer: &mut AfPacketPort, pool: &mut Pool, want: usize| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while received < want {
            assert!(Instant::now() < deadline, "{received} of {want} arrived");
            out.clear();
            peer.rx_burst(pool, &mut out, 256);
            received += out.len();
            pool.free_bulk(&out);
        }
    };

    let hs = frames(&mut pool, 256, 0);
    assert_eq!(xdp.tx_burst(&mut pool, &hs), 256);
    pool.free_bulk(&hs);
    receive_all(&mut peer, &mut pool, 256);
    let k = xdp.af_xdp_stats();
    let least = 256u64.div_ceil(u64::from(budget));
    assert!(
        (least..=least + 4).contains(&k.tx_kicks),
        "256 frames in one burst with a budget of {budget} took {} kicks: {k:?}",
        k.tx_kicks
    );
    assert_eq!(xdp.stats().tx_packets, 256, "{k:?}");

    for i in 0..10 {
        let hs = frames(&mut pool, 1, 256 + i);
        assert_eq!(xdp.tx_burst(&mut pool, &hs), 1);
        pool.free_bulk(&hs);
    }
    receive_all(&mut peer, &mut pool, 266);
    let k2 = xdp.af_xdp_stats();
    assert_eq!(
        k2.tx_kicks - k.tx_kicks,
        10,
        "one kick per one-frame burst: {k2:?}"
    );
    assert_eq!(xdp.stats().tx_packets, 266);

    // Idle polls: nothing to send, nothing received.
    for _ in 0..1000 {
        xdp.poll_control();
        out.clear();
        assert_eq!(xdp.rx_burst(&mut pool, &mut out, 256), 0);
    }
    let k3 = xdp.af_xdp_stats();
    assert_eq!(
        k3.tx_kicks, k2.tx_kicks,
        "an idle port does not kick: {k3:?}"
    );
    assert_eq!(k3.rx_wakeups, 0, "no recvfrom without busy polling: {k3:?}");
    drop(xdp);

    let mut busy = AfXdpPort::open(AfXdpConfig {
        busy_poll_us: 20,
        ..AfXdpConfig::new("xdp", lab.host())
    })
    .expect("open with busy polling");
    wait_up(&busy);
    let mut empty = 0;
    for _ in 0..100 {
        out.clear();
        if busy.rx_burst(&mut pool, &mut out, 256) == 0 {
            empty += 1;
        }
        pool.free_bulk(&out);
    }
    assert!(empty > 0);
    let expected = if busy.napi_id() != 0 { 100 } else { 0 };
    assert_eq!(
        busy.af_xdp_stats().rx_wakeups,
        expected,
        "busy polling: one recvfrom per poll that found fewer frames than asked for ({empty} empty), \
         none while the socket has no NAPI id: {}",
        busy.describe()
    );
}

/// Busy polling with NAPI deferral (the generator's receive ports, docs/BENCHMARKS.md §6.3): the
/// port opened inside a namespace writes `napi_defer_hard_irqs` and `gro_flush_timeout` of *its*
/// interface (read back through that namespace's sysfs) without touching the host's `/sys`;
/// frames arrive exactly — received in the port's own `recvfrom` busy polls where the socket has
/// a NAPI id, and with no `recvfrom` at all where it has none (veth on 6.18: the deferral's
/// watchdog delivers them) —; and frames sent while nobody polls are not stranded: the
/// `gro_flush_timeout` watchdog polls them into the RX ring, where one `rx_burst` finds them
/// without a wake-up.
#[test]
fn af_xdp_busy_polling_with_napi_deferral_in_a_namespace() {
    let lab = VethLab::new("vsxd");
    let cfg = AfXdpConfig {
        busy_poll_us: 20,
        napi_defer_hard_irqs: 2,
        gro_flush_timeout_us: 200,
        ..AfXdpConfig::new("xdp", lab.peer())
    };
    let mut xdp = AfXdpPort::open_in_netns(cfg, &lab.netns_path()).expect("open in netns");
    let sysfs = |f: &str| {
        lab.ns()
            .exec(&["cat", &format!("/sys/class/net/{}/{f}", lab.peer())])
            .trim()
            .to_string()
    };
    assert_eq!(sysfs("napi_defer_hard_irqs"), "2");
    assert_eq!(sysfs("gro_flush_timeout"), "200000");
    assert!(
        std::path::Path::new(&format!("/sys/class/net/{}", lab.host())).exists()
            && !std::path::Path::new(&format!("/sys/class/net/{}", lab.peer())).exists(),
        "the host's /sys still shows the host's namespace"
    );
    assert!(xdp
        .describe()
        .contains("napi-defer 2 gro-flush-timeout 200 us"));
    let mut host = AfPacketPort::open(AfPacketConfig {
        rx_mode: RxMode::Frame,
        ..AfPacketConfig::new("host", lab.host())
    })
    .expect("open host end");
    wait_up(&xdp);
    wait_up(&host);
    let mut pool = Pool::new(4096);
    let (got, _) = transfer(&mut host, &mut xdp, &mut pool, 1, 60, 2000);
    check_in_order(&got, 1, 60);
    assert_eq!(xdp.stats().rx_packets, 2000);
    let k = xdp.af_xdp_stats();
    if xdp.napi_id() == 0 {
        assert_eq!(
            k.rx_wakeups,
            0,
            "no NAPI id: a busy poll polls nothing, so no recvfrom is spent: {}",
            xdp.describe()
        );
    } else {
        assert!(k.rx_wakeups > 0, "received in busy polls: {k:?}");
    }
    assert!(
        xdp.describe()
            .contains(&format!("napi id {}", xdp.napi_id())),
        "{}",
        xdp.describe()
    );

    // Nobody polls for 100 ms: the watchdog must still deliver (each frame in one burst).
    let hs: Vec<u32> = (0..100)
        .map(|k| packet_from_bytes(&mut pool, &test_frame(2, k, 60)).unwrap())
        .collect();
    assert_eq!(host.tx_burst(&mut pool, &hs), 100);
    pool.free_bulk(&hs);
    std::thread::sleep(Duration::from_millis(100));
    let before = xdp.af_xdp_stats().rx_wakeups;
    let mut out = Vec::new();
    // Asking for exactly 100: a full ring makes no busy poll.
    let n = xdp.rx_burst(&mut pool, &mut out, 100);
    pool.free_bulk(&out);
    assert_eq!(n, 100, "{}", xdp.describe());
    assert_eq!(
        xdp.af_xdp_stats().rx_wakeups,
        before,
        "found without a wake-up"
    );
    assert_eq!(xdp.stats().rx_dropped, 0, "{}", xdp.describe());
}
