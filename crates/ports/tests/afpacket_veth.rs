//! AF_PACKET port over a veth pair whose far end sits in a network namespace the test creates.
//! Needs root (CAP_NET_ADMIN for `ip`, CAP_NET_RAW for the sockets); the [`VethLab`] guard
//! (crates/testsupport) deletes the namespace and the veth pair when the test ends, panics
//! included. Each test runs in both receive modes ([`MODES`]): TPACKET_V3 blocks and TPACKET_V2
//! frames.

use std::process::Command;
use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketError, AfPacketPort, RxMode};
use vecswitch_ports::loopback::packet_from_bytes;
use vecswitch_ports::testing::{marked_frame, wait_up};
use vecswitch_ports::{LinkState, Port};
use vecswitch_testsupport::tool::ip;
use vecswitch_testsupport::VethLab;

/// IEEE 802 "local experimental" EtherType: no kernel protocol will answer or forward it.
const ETHERTYPE: u16 = 0x88b5;
const MAGIC: u32 = 0x7665_6373; // "vecs"
/// Every veth test runs once per receive mode.
const MODES: [RxMode; 2] = [RxMode::Block, RxMode::Frame];

/// The default config of `name` on `interface` in receive mode `mode`.
fn cfg(name: &str, interface: &str, mode: RxMode) -> AfPacketConfig {
    AfPacketConfig {
        rx_mode: mode,
        ..AfPacketConfig::new(name, interface)
    }
}

/// Our port on the host end and a second one on the far end, inside the namespace.
fn ports(lab: &VethLab, frame_size: u32, mode: RxMode) -> (AfPacketPort, AfPacketPort) {
    let mut hc = cfg("host", lab.host(), mode);
    hc.frame_size = frame_size;
    let mut pc = cfg("peer", lab.peer(), mode);
    pc.frame_size = frame_size;
    let host = AfPacketPort::open(hc).expect("open host end");
    let peer = AfPacketPort::open_in_netns(pc, &lab.netns_path()).expect("open far end in netns");
    wait_up(&host);
    wait_up(&peer);
    (host, peer)
}

fn test_frame(dir: u8, seq: u32, len: usize) -> Vec<u8> {
    marked_frame(MAGIC, dir, seq, len)
}

/// (direction, seq) of one of our test frames; None for anything else.
fn parse(bytes: &[u8]) -> Option<(u8, u32)> {
    if bytes.len() < 23
        || bytes[12..14] != ETHERTYPE.to_be_bytes()
        || bytes[14..18] != MAGIC.to_be_bytes()
    {
        return None;
    }
    Some((
        bytes[18],
        u32::from_be_bytes(bytes[19..23].try_into().unwrap()),
    ))
}

struct Received {
    ours: Vec<Vec<u8>>,
    foreign: u64,
}

fn drain(port: &mut AfPacketPort, pool: &mut Pool, dir: u8, into: &mut Received, own_dir: u8) {
    let mut got = Vec::new();
    port.rx_burst(pool, &mut got, 256);
    let mut bytes = Vec::new();
    for &h in &got {
        pool.copy_out(h, &mut bytes);
        match parse(&bytes) {
            Some((d, _)) if d == dir => into.ours.push(bytes.clone()),
            Some((d, _)) => assert_ne!(
                d,
                own_dir,
                "{} received its own outgoing frame",
                port.name()
            ),
            None => into.foreign += 1,
        }
    }
    pool.free_bulk(&got);
}

/// Sends `count` frames of `len` bytes from `tx` to `rx`, in bursts of up to 32, and checks that `rx`
/// receives exactly those frames, in order, byte for byte.
fn exchange(
    tx: &mut AfPacketPort,
    rx: &mut AfPacketPort,
    pool: &mut Pool,
    dir: u8,
    len: usize,
    count: u32,
) {
    let tx_before = tx.stats();
    let rx_before = rx.stats();
    let mut recv = Received {
        ours: Vec::new(),
        foreign: 0,
    };
    let mut own = Received {
        ours: Vec::new(),
        foreign: 0,
    };
    let mut seq = 0u32;
    let deadline = Instant::now() + Duration::from_secs(20);
    while seq < count {
        let n = (count - seq).min(32);
        let pkts: Vec<u32> = (seq..seq + n)
            .map(|s| packet_from_bytes(pool, &test_frame(dir, s, len)).expect("pool"))
            .collect();
        let sent = tx.tx_burst(pool, &pkts);
        pool.free_bulk(&pkts);
        // A full TX ring is not an error: the frames after `sent` are retried.
        seq += sent as u32;
        drain(rx, pool, dir, &mut recv, 0xff);
        drain(tx, pool, 0xff, &mut own, dir);
        assert!(
            Instant::now() < deadline,
            "sending timed out at {seq}/{count}"
        );
    }
    while (recv.ours.len() as u32) < count && Instant::now() < deadline {
        drain(rx, pool, dir, &mut recv, 0xff);
        std::thread::sleep(Duration::from_millis(1));
    }
    // A little longer, to catch duplicates or frames that should not have come.
    let settle = Instant::now() + Duration::from_millis(50);
    while Instant::now() < settle {
        drain(rx, pool, dir, &mut recv, 0xff);
        drain(tx, pool, 0xff, &mut own, dir);
    }
    assert_eq!(recv.ours.len() as u32, count, "{len}-byte frames received");
    for (i, f) in recv.ours.iter().enumerate() {
        assert_eq!(f.len(), len);
        assert_eq!(
            f,
            &test_frame(dir, i as u32, len),
            "frame {i} of {len} bytes differs"
        );
    }
    let (ts, rs) = (tx.stats(), rx.stats());
    assert_eq!(ts.tx_packets - tx_before.tx_packets, u64::from(count));
    assert_eq!(
        ts.tx_bytes - tx_before.tx_bytes,
        u64::from(count) * len as u64
    );
    assert_eq!(ts.tx_dropped - tx_before.tx_dropped, 0);
    assert_eq!(
        rs.rx_packets - rx_before.rx_packets,
        u64::from(count) + recv.foreign
    );
    assert_eq!(rs.rx_dropped - rx_before.rx_dropped, 0);
    assert_eq!(rx.af_packet_stats().kernel_drops, 0);
}

#[test]
fn afpacket_veth_exact_counts_both_directions_60_1514_9000() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(9000));
        // 16 KiB slots carry 9000-byte frames (TX, and RX in frame mode).
        let (mut host, mut peer) = ports(&lab, 16384, mode);
        assert_eq!(host.mtu(), 9000);
        let mut pool = Pool::new(8192);
        for (len, count) in [(60usize, 1000u32), (1514, 300), (9000, 100)] {
            exchange(&mut peer, &mut host, &mut pool, 1, len, count);
            exchange(&mut host, &mut peer, &mut pool, 2, len, count);
        }
        assert_eq!(pool.in_use(), 0);
        let d = host.describe();
        assert!(d.contains(lab.host()), "{d}");
        let version = match mode {
            RxMode::Block => "tpacket_v3",
            RxMode::Frame => "tpacket_v2",
        };
        assert!(d.contains(version), "{d}");
    }
}

#[test]
fn afpacket_frame_mode_frames_longer_than_the_rx_slot_are_counted_truncated() {
    let lab = VethLab::with_mtu("vsafp", Some(1500));
    let mut host = AfPacketPort::open(cfg("host", lab.host(), RxMode::Frame)).unwrap();
    // 1024-byte RX slots hold frames up to 1024 - 66 bytes.
    let pc = AfPacketConfig {
        frame_size: 1024,
        ..cfg("peer", lab.peer(), RxMode::Frame)
    };
    let mut peer = AfPacketPort::open_in_netns(pc, &lab.netns_path()).unwrap();
    wait_up(&host);
    wait_up(&peer);
    let mut pool = Pool::new(64);
    let frames = [
        test_frame(1, 0, 1514),
        test_frame(1, 1, 958),
        test_frame(1, 2, 959),
    ];
    let pkts: Vec<u32> = frames
        .iter()
        .map(|f| packet_from_bytes(&mut pool, f).unwrap())
        .collect();
    assert_eq!(host.tx_burst(&mut pool, &pkts), 3);
    pool.free_bulk(&pkts);
    let mut recv = Received {
        ours: Vec::new(),
        foreign: 0,
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while peer.af_packet_stats().rx_truncated < 2 && Instant::now() < deadline {
        drain(&mut peer, &mut pool, 1, &mut recv, 0xff);
    }
    drain(&mut peer, &mut pool, 1, &mut recv, 0xff);
    assert_eq!(recv.ours, vec![frames[1].clone()]);
    assert_eq!(peer.af_packet_stats().rx_truncated, 2);
    assert_eq!(peer.stats().rx_dropped, 2);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn afpacket_frames_too_long_for_slot_or_mtu_are_counted_not_sent() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        // Default 2048-byte TX slots: 2000 bytes at most (2016 in frame mode); MTU 1500 allows 1514 bytes, 1518 with an
        // 802.1Q tag.
        let (mut host, mut peer) = ports(&lab, 2048, mode);
        let mut pool = Pool::new(64);
        let mut q_tagged = test_frame(1, 3, 1518);
        q_tagged[12..14].copy_from_slice(&[0x81, 0x00]);
        q_tagged[14..16].copy_from_slice(&[0x00, 0x64]);
        q_tagged[16..18].copy_from_slice(&ETHERTYPE.to_be_bytes());
        let frames = [
            test_frame(1, 0, 1600), // over the MTU
            test_frame(1, 1, 9000), // over the slot
            test_frame(1, 2, 1514), // fits
            test_frame(1, 4, 1518), // untagged 1518: over the MTU
            q_tagged.clone(),       // tagged 1518: fits
        ];
        let pkts: Vec<u32> = frames
            .iter()
            .map(|f| packet_from_bytes(&mut pool, f).unwrap())
            .collect();
        assert_eq!(host.tx_burst(&mut pool, &pkts), 2);
        pool.free_bulk(&pkts);
        let s = host.stats();
        assert_eq!(s.tx_packets, 2);
        assert_eq!(s.tx_dropped, 3);
        assert_eq!(host.af_packet_stats().tx_too_long, 3);
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while got.len() < 2 && Instant::now() < deadline {
            peer.rx_burst(&mut pool, &mut got, 256);
        }
        std::thread::sleep(Duration::from_millis(20));
        peer.rx_burst(&mut pool, &mut got, 256);
        let mut bytes = Vec::new();
        let seen: Vec<Vec<u8>> = got
            .iter()
            .map(|&h| {
                pool.copy_out(h, &mut bytes);
                bytes.clone()
            })
            .collect();
        pool.free_bulk(&got);
        assert_eq!(seen, vec![frames[2].clone(), q_tagged]);
    }
}

#[test]
fn afpacket_tx_slot_limit_is_frame_size_minus_the_mode_header() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        // MTU 9000: only the 2048-byte slot limits what is sent.
        let lab = VethLab::with_mtu("vsafp", Some(9000));
        let mut host = AfPacketPort::open(cfg("host", lab.host(), mode)).unwrap();
        // The receiver in block mode takes any length up to its block.
        let mut peer =
            AfPacketPort::open_in_netns(cfg("peer", lab.peer(), RxMode::Block), &lab.netns_path())
                .unwrap();
        wait_up(&host);
        wait_up(&peer);
        let limit = host.config().max_tx_frame();
        assert_eq!(
            limit,
            match mode {
                RxMode::Block => 2048 - 48,
                RxMode::Frame => 2048 - 32,
            }
        );
        let mut pool = Pool::new(64);
        let frames = [test_frame(1, 0, limit), test_frame(1, 1, limit + 1)];
        let pkts: Vec<u32> = frames
            .iter()
            .map(|f| packet_from_bytes(&mut pool, f).unwrap())
            .collect();
        assert_eq!(host.tx_burst(&mut pool, &pkts), 1);
        pool.free_bulk(&pkts);
        assert_eq!(host.af_packet_stats().tx_too_long, 1);
        let mut recv = Received {
            ours: Vec::new(),
            foreign: 0,
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while recv.ours.is_empty() && Instant::now() < deadline {
            drain(&mut peer, &mut pool, 1, &mut recv, 0xff);
        }
        assert_eq!(recv.ours, vec![frames[0].clone()]);
        assert_eq!(pool.in_use(), 0);
    }
}

/// A frame of `len` bytes with the given VLAN tags (TPID, TCI) after the MAC addresses.
fn tagged_frame(seq: u32, len: usize, tags: &[(u16, u16)]) -> Vec<u8> {
    let mut f = test_frame(3, seq, len);
    let mut at = 12;
    for &(tpid, tci) in tags {
        f[at..at + 2].copy_from_slice(&tpid.to_be_bytes());
        f[at + 2..at + 4].copy_from_slice(&tci.to_be_bytes());
        at += 4;
    }
    f[at..at + 2].copy_from_slice(&ETHERTYPE.to_be_bytes());
    f
}

#[test]
fn afpacket_vlan_tags_arrive_as_sent_both_directions() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let (mut host, mut peer) = ports(&lab, 2048, mode);
        let mut pool = Pool::new(256);
        let frames = vec![
            tagged_frame(0, 64, &[(0x8100, 100)]),
            tagged_frame(1, 64, &[(0x8100, 0x6000)]), // priority-tagged: VID 0, PCP 3
            tagged_frame(2, 1518, &[(0x8100, 4094)]),
            tagged_frame(3, 68, &[(0x88a8, 200), (0x8100, 300)]), // Q-in-Q
            tagged_frame(4, 1514, &[(0x88a8, 10), (0x8100, 20)]),
            test_frame(3, 5, 60),
        ];
        for round in 0..2 {
            let (tx, rx) = if round == 0 {
                (&mut host, &mut peer)
            } else {
                (&mut peer, &mut host)
            };
            let pkts: Vec<u32> = frames
                .iter()
                .map(|f| packet_from_bytes(&mut pool, f).unwrap())
                .collect();
            assert_eq!(tx.tx_burst(&mut pool, &pkts), frames.len());
            pool.free_bulk(&pkts);
            let mut got = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(5);
            while got.len() < frames.len() && Instant::now() < deadline {
                rx.rx_burst(&mut pool, &mut got, 256);
            }
            let mut bytes = Vec::new();
            let seen: Vec<Vec<u8>> = got
                .iter()
                .map(|&h| {
                    pool.copy_out(h, &mut bytes);
                    bytes.clone()
                })
                .collect();
            pool.free_bulk(&got);
            assert_eq!(seen, frames, "{} -> {}", tx.name(), rx.name());
        }
        assert_eq!(pool.in_use(), 0);
    }
}

#[test]
fn afpacket_kernel_ring_overflow_is_counted_in_rx_dropped() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let mut pc = cfg("peer", lab.peer(), mode);
        // One page-sized block per ring: a few dozen small frames fill the RX ring.
        pc.block_size = 4096;
        pc.block_count = 2;
        pc.frame_size = 2048;
        let mut peer = AfPacketPort::open_in_netns(pc, &lab.netns_path()).unwrap();
        let mut host = AfPacketPort::open(cfg("host", lab.host(), mode)).unwrap();
        wait_up(&host);
        wait_up(&peer);
        let mut pool = Pool::new(1024);
        let total = 500u32;
        let mut seq = 0;
        // Send everything before reading anything: the far ring must overflow.
        while seq < total {
            let pkts: Vec<u32> = (seq..(seq + 32).min(total))
                .map(|s| packet_from_bytes(&mut pool, &test_frame(1, s, 60)).unwrap())
                .collect();
            seq += host.tx_burst(&mut pool, &pkts) as u32;
            pool.free_bulk(&pkts);
        }
        // Frames still in the kernel's backlog under load arrive later: wait until every frame is
        // accounted for (received or dropped), then a little longer to see that nothing else comes.
        let mut recv = Received {
            ours: Vec::new(),
            foreign: 0,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            drain(&mut peer, &mut pool, 1, &mut recv, 0xff);
            let drops = peer.af_packet_stats().kernel_drops;
            if recv.ours.len() as u64 + recv.foreign + drops >= u64::from(total)
                || Instant::now() > deadline
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        for _ in 0..10 {
            drain(&mut peer, &mut pool, 1, &mut recv, 0xff);
            std::thread::sleep(Duration::from_millis(2));
        }
        let drops = peer.af_packet_stats().kernel_drops;
        assert!(drops > 0, "a 2-page ring cannot hold {total} frames");
        assert_eq!(
            recv.ours.len() as u64 + recv.foreign + drops,
            u64::from(total)
        );
        assert_eq!(peer.stats().rx_dropped, drops);
        // What did arrive is in order (the kernel drops at the tail, never reorders).
        let seqs: Vec<u32> = recv.ours.iter().map(|f| parse(f).unwrap().1).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(pool.in_use(), 0);
    }
}

#[test]
fn afpacket_missing_interface_error_names_it() {
    let err = AfPacketPort::open(AfPacketConfig::new("p0", "vsnosuchif0")).unwrap_err();
    assert!(
        matches!(err, AfPacketError::NoSuchInterface { ref interface, .. } if interface == "vsnosuchif0")
    );
    let msg = err.to_string();
    assert!(
        msg.contains("vsnosuchif0") && msg.contains("does not exist"),
        "{msg}"
    );
}

#[test]
fn afpacket_missing_netns_error_names_it() {
    let err =
        AfPacketPort::open_in_netns(AfPacketConfig::new("p0", "lo"), "/run/netns/vs-no-such-ns")
            .unwrap_err();
    assert!(err.to_string().contains("vs-no-such-ns"), "{err}");
}

#[test]
fn afpacket_wait_readable_wakes_when_a_frame_arrives() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let (mut host, mut peer) = ports(&lab, 2048, mode);
        let mut pool = Pool::new(64);
        // Nothing sent yet: the wait times out.
        assert!(!peer.wait_readable(Duration::from_millis(20)).unwrap());
        let h = packet_from_bytes(&mut pool, &test_frame(1, 0, 60)).unwrap();
        assert_eq!(host.tx_burst(&mut pool, &[h]), 1);
        pool.free(h);
        // Frame mode: readable at once; block mode: after the kernel retires the block
        // (block_timeout_ms, 1 ms). 5 s is only a safety net.
        assert!(peer.wait_readable(Duration::from_secs(5)).unwrap());
        let mut recv = Received {
            ours: Vec::new(),
            foreign: 0,
        };
        drain(&mut peer, &mut pool, 1, &mut recv, 0xff);
        assert_eq!(recv.ours.len(), 1);
    }
}

#[test]
fn afpacket_fanout_group_delivers_each_frame_to_exactly_one_member() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let mut members: Vec<AfPacketPort> = (0..2)
            .map(|i| {
                let mut c = cfg(&format!("peer{i}"), lab.peer(), mode);
                c.fanout = Some(4242);
                AfPacketPort::open_in_netns(c, &lab.netns_path()).unwrap()
            })
            .collect();
        let mut hc = cfg("host", lab.host(), mode);
        hc.qdisc_bypass = true;
        let mut host = AfPacketPort::open(hc).unwrap();
        wait_up(&host);
        let mut pool = Pool::new(1024);
        let total = 400u32;
        let mut seq = 0;
        let mut recv: Vec<Received> = (0..2)
            .map(|_| Received {
                ours: Vec::new(),
                foreign: 0,
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(20);
        while seq < total {
            // Vary the source MAC so that the flow hash spreads the frames.
            let pkts: Vec<u32> = (seq..(seq + 16).min(total))
                .map(|s| {
                    let mut f = test_frame(1, s, 60);
                    f[7..11].copy_from_slice(&s.to_be_bytes());
                    packet_from_bytes(&mut pool, &f).unwrap()
                })
                .collect();
            seq += host.tx_burst(&mut pool, &pkts) as u32;
            pool.free_bulk(&pkts);
            for (m, r) in members.iter_mut().zip(recv.iter_mut()) {
                drain(m, &mut pool, 1, r, 0xff);
            }
            assert!(Instant::now() < deadline);
        }
        while recv.iter().map(|r| r.ours.len()).sum::<usize>() < total as usize
            && Instant::now() < deadline
        {
            for (m, r) in members.iter_mut().zip(recv.iter_mut()) {
                drain(m, &mut pool, 1, r, 0xff);
            }
        }
        let mut seqs: Vec<u32> = recv
            .iter()
            .flat_map(|r| r.ours.iter().map(|f| parse(f).unwrap().1))
            .collect();
        seqs.sort_unstable();
        assert_eq!(
            seqs,
            (0..total).collect::<Vec<_>>(),
            "every frame exactly once across the group"
        );
        assert_eq!(host.stats().tx_packets, u64::from(total));
        assert!(host.describe().contains("af_packet"));
        assert_eq!(pool.in_use(), 0);
    }
}

#[test]
fn afpacket_clear_stats_zeroes_counters() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let (mut host, mut peer) = ports(&lab, 2048, mode);
        let mut pool = Pool::new(64);
        exchange(&mut host, &mut peer, &mut pool, 2, 100, 10);
        assert_eq!(host.stats().tx_packets, 10);
        host.clear_stats();
        peer.clear_stats();
        assert_eq!(host.stats(), vecswitch_ports::PortStats::default());
        assert_eq!(peer.stats(), vecswitch_ports::PortStats::default());
        exchange(&mut host, &mut peer, &mut pool, 2, 100, 3);
    }
}

/// Puts a token-bucket qdisc on `ifname` that lets about one 60-byte frame through per 5 ms, with
/// a burst of one frame and a queue of `limit` bytes: frames wait in the qdisc (their TX slots stay
/// in flight) and, beyond the queue, are refused (`ENOBUFS`), as a slow or congested link does.
fn slow_qdisc(ifname: &str, limit: u32) {
    let out = Command::new("tc")
        .args([
            "qdisc", "replace", "dev", ifname, "root", "tbf", "rate", "100kbit",
        ])
        .args(["burst", "100", "limit", &limit.to_string()])
        .output()
        .expect("`tc` (iproute2) must be installed: scripts/setup.sh installs it");
    assert!(
        out.status.success(),
        "tc qdisc replace dev {ifname} root tbf: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Drains `port` until `want` frames of direction `dir` arrived (or `deadline`), then a little
/// longer to catch extra ones.
fn receive(port: &mut AfPacketPort, pool: &mut Pool, dir: u8, want: usize, recv: &mut Received) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while recv.ours.len() < want && Instant::now() < deadline {
        drain(port, pool, dir, recv, 0xff);
    }
    let settle = Instant::now() + Duration::from_millis(50);
    while Instant::now() < settle {
        drain(port, pool, dir, recv, 0xff);
    }
}

/// Calls the idle housekeeping of `port` (`poll_control`, which flushes the TX ring) until no frame
/// is in flight, receiving meanwhile on `peer` (direction 1); returns how many calls it took.
fn idle_flush_until_empty(
    port: &mut AfPacketPort,
    peer: &mut AfPacketPort,
    pool: &mut Pool,
    recv: &mut Received,
) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut calls = 0;
    while port.af_packet_stats().tx_in_flight > 0 {
        port.poll_control();
        drain(peer, pool, 1, recv, 0xff);
        calls += 1;
        assert!(
            Instant::now() < deadline,
            "TX ring never drained: {:?}",
            port.af_packet_stats()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    calls
}

/// Regression (issue 8): frames placed in the TX ring whose kick the kernel refused (`ENOBUFS` from
/// the qdisc, `EAGAIN` from the socket buffer) used to be counted as sent at once and then waited
/// in the ring until some later burst happened to kick again. Now they count as sent only when the
/// kernel gives their slot back, and the idle flush hands them over with no further traffic.
#[test]
fn afpacket_frames_refused_by_send_are_flushed_later_and_counted_exactly() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let mut hc = cfg("host", lab.host(), mode);
        // The qdisc is what refuses frames here: do not bypass it.
        hc.qdisc_bypass = false;
        let mut host = AfPacketPort::open(hc).unwrap();
        let mut peer =
            AfPacketPort::open_in_netns(cfg("peer", lab.peer(), mode), &lab.netns_path()).unwrap();
        wait_up(&host);
        wait_up(&peer);
        // One frame through, five queued (300 bytes), the rest refused until the queue drains.
        slow_qdisc(lab.host(), 300);
        let mut pool = Pool::new(256);
        let total = 48u32;
        let pkts: Vec<u32> = (0..total)
            .map(|s| packet_from_bytes(&mut pool, &test_frame(1, s, 60)).unwrap())
            .collect();
        // Every frame fits the ring: all placed, none dropped.
        assert_eq!(host.tx_burst(&mut pool, &pkts), total as usize);
        pool.free_bulk(&pkts);
        let after_burst = host.stats();
        let x = host.af_packet_stats();
        assert!(
            after_burst.tx_packets < u64::from(total) && x.tx_in_flight > 0,
            "the qdisc should have held or refused frames: {after_burst:?} {x:?}"
        );
        assert!(x.tx_deferred_kicks >= 1, "no kick was refused: {x:?}");
        assert_eq!(
            after_burst.tx_packets + x.tx_in_flight,
            u64::from(total),
            "every frame is either sent or in flight"
        );
        assert_eq!(after_burst.tx_dropped, 0);
        // No more traffic: only the idle flush moves the frames left in the ring.
        let mut recv = Received {
            ours: Vec::new(),
            foreign: 0,
        };
        let calls = idle_flush_until_empty(&mut host, &mut peer, &mut pool, &mut recv);
        assert!(calls > 0);
        receive(&mut peer, &mut pool, 1, total as usize, &mut recv);
        assert_eq!(peer.af_packet_stats().kernel_drops, 0);
        let seqs: Vec<u32> = recv.ours.iter().map(|f| parse(f).unwrap().1).collect();
        assert_eq!(
            seqs,
            (0..total).collect::<Vec<_>>(),
            "each frame once, in order"
        );
        let s = host.stats();
        assert_eq!(
            (s.tx_packets, s.tx_bytes, s.tx_dropped),
            (u64::from(total), u64::from(total) * 60, 0)
        );
        assert_eq!(pool.in_use(), 0);
    }
}

#[test]
fn afpacket_full_tx_ring_is_counted_and_drains() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let mut hc = cfg("host", lab.host(), mode);
        // One page per ring: two 2048-byte TX slots.
        hc.block_size = 4096;
        hc.block_count = 1;
        hc.frame_size = 2048;
        hc.qdisc_bypass = false;
        let mut host = AfPacketPort::open(hc).unwrap();
        let mut peer =
            AfPacketPort::open_in_netns(cfg("peer", lab.peer(), mode), &lab.netns_path()).unwrap();
        wait_up(&host);
        wait_up(&peer);
        // Frames wait in the qdisc, so their slots stay in flight and the ring fills.
        slow_qdisc(lab.host(), 10_000);
        let mut pool = Pool::new(64);
        let pkts: Vec<u32> = (0..10)
            .map(|s| packet_from_bytes(&mut pool, &test_frame(1, s, 60)).unwrap())
            .collect();
        let placed = host.tx_burst(&mut pool, &pkts);
        pool.free_bulk(&pkts);
        assert!((2..10).contains(&placed), "placed {placed}");
        let x = host.af_packet_stats();
        assert_eq!(x.tx_ring_full, 10 - placed as u64);
        assert_eq!(host.stats().tx_dropped, 10 - placed as u64);
        let mut recv = Received {
            ours: Vec::new(),
            foreign: 0,
        };
        idle_flush_until_empty(&mut host, &mut peer, &mut pool, &mut recv);
        receive(&mut peer, &mut pool, 1, placed, &mut recv);
        let seqs: Vec<u32> = recv.ours.iter().map(|f| parse(f).unwrap().1).collect();
        assert_eq!(seqs, (0..placed as u32).collect::<Vec<_>>());
        let s = host.stats();
        assert_eq!(
            (s.tx_packets, s.tx_dropped),
            (placed as u64, 10 - placed as u64)
        );
        // Without the qdisc a full ring is kicked and reused within the burst: nothing dropped.
        let out = Command::new("tc")
            .args(["qdisc", "del", "dev", lab.host(), "root"])
            .output()
            .expect("tc");
        assert!(out.status.success());
        host.clear_stats();
        let pkts: Vec<u32> = (0..10)
            .map(|s| packet_from_bytes(&mut pool, &test_frame(1, 100 + s, 60)).unwrap())
            .collect();
        assert_eq!(host.tx_burst(&mut pool, &pkts), 10);
        pool.free_bulk(&pkts);
        let mut recv = Received {
            ours: Vec::new(),
            foreign: 0,
        };
        idle_flush_until_empty(&mut host, &mut peer, &mut pool, &mut recv);
        receive(&mut peer, &mut pool, 1, 10, &mut recv);
        assert_eq!(recv.ours.len(), 10);
        assert_eq!(host.stats().tx_packets, 10);
        assert_eq!(host.af_packet_stats().tx_ring_full, 0);
        assert_eq!(pool.in_use(), 0);
    }
}

#[test]
fn afpacket_interface_deleted_under_the_port_is_link_down_not_a_panic() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let (mut host, _peer) = ports(&lab, 2048, mode);
        assert_eq!(host.link(), LinkState::Up);
        ip(&["link", "del", lab.host()]);
        assert_eq!(host.link(), LinkState::Down);
        let mut pool = Pool::new(64);
        let pkts: Vec<u32> = (0..5)
            .map(|s| packet_from_bytes(&mut pool, &test_frame(1, s, 60)).unwrap())
            .collect();
        for _ in 0..3 {
            host.tx_burst(&mut pool, &pkts);
        }
        pool.free_bulk(&pkts);
        let mut got = Vec::new();
        assert_eq!(host.rx_burst(&mut pool, &mut got, 256), 0);
        // The kernel refuses to send on a vanished interface: the frames come back as tx_dropped.
        let s = host.stats();
        assert_eq!((s.tx_packets, s.tx_bytes, s.tx_dropped), (0, 0, 15));
        assert_eq!(host.af_packet_stats().tx_kick_errors, 3);
        assert_eq!(pool.in_use(), 0);
    }
}

#[test]
fn afpacket_frames_sent_while_link_is_down_are_dropped_and_the_ring_recovers() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let (mut host, mut peer) = ports(&lab, 2048, mode);
        let mut pool = Pool::new(256);
        let burst = |pool: &mut Pool, seqs: std::ops::Range<u32>| -> Vec<u32> {
            seqs.map(|s| packet_from_bytes(pool, &test_frame(1, s, 60)).unwrap())
                .collect()
        };
        ip(&["link", "set", lab.host(), "down"]);
        let down = burst(&mut pool, 0..5);
        assert_eq!(host.tx_burst(&mut pool, &down), 0);
        pool.free_bulk(&down);
        assert_eq!(host.stats().tx_dropped, 5);
        ip(&["link", "set", lab.host(), "up"]);
        wait_up(&host);
        let up = burst(&mut pool, 100..110);
        let mut next = 0;
        let deadline = Instant::now() + Duration::from_secs(10);
        while next < up.len() {
            next += host.tx_burst(&mut pool, &up[next..]);
            assert!(Instant::now() < deadline);
        }
        pool.free_bulk(&up);
        let mut recv = Received {
            ours: Vec::new(),
            foreign: 0,
        };
        while recv.ours.len() < 10 && Instant::now() < deadline {
            drain(&mut peer, &mut pool, 1, &mut recv, 0xff);
        }
        let settle = Instant::now() + Duration::from_millis(50);
        while Instant::now() < settle {
            drain(&mut peer, &mut pool, 1, &mut recv, 0xff);
        }
        // Only the frames sent while up arrive: nothing from the down period leaks out later.
        let seqs: Vec<u32> = recv.ours.iter().map(|f| parse(f).unwrap().1).collect();
        assert_eq!(seqs, (100..110).collect::<Vec<_>>());
        assert_eq!(host.stats().tx_packets, 10);
        assert_eq!(pool.in_use(), 0);
    }
}

/// Regression (issue 8): a receiver that is away for 20 ms at a time (a descheduled worker) at
/// 20 kfps must lose nothing, in either receive mode, with the default ring geometry: the ring
/// holds more than 20 ms of traffic at that rate (frame mode: 5,248 frames; block mode: at least
/// 128 block timeouts). The old default (8 blocks of 1 MiB, 1 ms timeout) held 8 ms and froze.
#[test]
fn afpacket_receiver_paused_20ms_at_20kfps_has_no_freeze_and_no_drop() {
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let (mut host, peer) = ports(&lab, 2048, mode);
        let total: u32 = 20_000;
        let sender = std::thread::spawn(move || {
            let mut peer = peer;
            let mut pool = Pool::new(512);
            let start = Instant::now();
            let mut seq = 0u32;
            while seq < total {
                // On schedule: 20 frames per millisecond, catching up in bursts of at most 64.
                let due = ((start.elapsed().as_micros() / 50) as u32).min(total);
                let n = due.saturating_sub(seq).min(64);
                if n == 0 {
                    std::thread::sleep(Duration::from_micros(200));
                    continue;
                }
                let pkts: Vec<u32> = (seq..seq + n)
                    .map(|s| packet_from_bytes(&mut pool, &test_frame(2, s, 60)).unwrap())
                    .collect();
                let sent = peer.tx_burst(&mut pool, &pkts);
                pool.free_bulk(&pkts);
                seq += sent as u32;
                assert!(start.elapsed() < Duration::from_secs(20), "sender stuck");
            }
            while peer.flush() > 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            peer.stats()
        });
        let mut pool = Pool::new(4096);
        let mut recv = Received {
            ours: Vec::new(),
            foreign: 0,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last_pause = Instant::now();
        let mut pauses = 0;
        while recv.ours.len() < total as usize && Instant::now() < deadline {
            drain(&mut host, &mut pool, 2, &mut recv, 0xff);
            if last_pause.elapsed() >= Duration::from_millis(100) {
                // The worker is away: nothing reads the ring for 20 ms.
                std::thread::sleep(Duration::from_millis(20));
                pauses += 1;
                last_pause = Instant::now();
            }
        }
        let sent = sender.join().expect("sender thread");
        assert_eq!(sent.tx_packets, u64::from(total));
        assert!(pauses >= 5, "only {pauses} pauses");
        let x = host.af_packet_stats();
        assert_eq!(
            (x.kernel_drops, x.kernel_freeze_q),
            (0, 0),
            "ring overflowed while the receiver was away: {x:?}"
        );
        let seqs: Vec<u32> = recv.ours.iter().map(|f| parse(f).unwrap().1).collect();
        assert_eq!(seqs.len(), total as usize, "frames received");
        assert!(
            seqs.iter().enumerate().all(|(i, &s)| s == i as u32),
            "order"
        );
        assert_eq!(host.stats().rx_dropped, 0);
        assert_eq!(pool.in_use(), 0);
    }
}

/// A UDP datagram from the namespace's own stack leaves the veth peer with its checksum left to
/// offload (veth "offloads" it: `CHECKSUM_PARTIAL`, only the pseudo-header sum in the field); the
/// port completes it, so that the frame the switch sends on is correct on the wire.
#[test]
fn afpacket_checksum_left_to_offload_by_the_veth_peer_is_completed() {
    use vecswitch_wire::checksum::{pseudo_header_v4, sum};
    for mode in MODES {
        eprintln!("rx_mode {mode:?}");
        let lab = VethLab::with_mtu("vsafp", Some(1500));
        let (mut host, _peer) = ports(&lab, 2048, mode);
        ip(&[
            "-n",
            lab.ns().name(),
            "addr",
            "add",
            "10.77.0.1/24",
            "dev",
            lab.peer(),
        ]);
        ip(&[
            "-n",
            lab.ns().name(),
            "neigh",
            "add",
            "10.77.0.2",
            "lladdr",
            "02:00:00:00:00:77",
            "dev",
            lab.peer(),
        ]);
        // bash opens a UDP socket for /dev/udp and printf writes one 1000-byte datagram.
        let st = Command::new("ip")
            .args(["netns", "exec", lab.ns().name(), "bash", "-c"])
            .arg("printf '%1000s' x > /dev/udp/10.77.0.2/9")
            .status()
            .expect("`bash` must be installed");
        assert!(st.success());
        let mut pool = Pool::new(64);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut udp = None;
        while udp.is_none() && Instant::now() < deadline {
            let mut got = Vec::new();
            host.rx_burst(&mut pool, &mut got, 256);
            let mut bytes = Vec::new();
            for &h in &got {
                pool.copy_out(h, &mut bytes);
                if bytes.len() > 42 && bytes[12..14] == [0x08, 0x00] && bytes[23] == 17 {
                    udp = Some(bytes.clone());
                }
            }
            pool.free_bulk(&got);
        }
        let f = udp.expect("the UDP datagram reached the port");
        assert_eq!(&f[36..38], &9u16.to_be_bytes(), "destination port 9");
        let udp_len = u16::from_be_bytes([f[38], f[39]]);
        assert_eq!(udp_len, 1008);
        let pseudo = pseudo_header_v4(
            &"10.77.0.1".parse().unwrap(),
            &"10.77.0.2".parse().unwrap(),
            17,
            u32::from(udp_len),
        );
        let total = vecswitch_wire::checksum::add(pseudo, sum(&f[34..34 + 1008]));
        assert_eq!(total, 0xffff, "UDP checksum verifies (RFC 768)");
        let x = host.af_packet_stats();
        assert!(x.rx_csum_completed >= 1, "{x:?}");
        assert_eq!(x.rx_csum_incomplete, 0, "{x:?}");
        assert_eq!(pool.in_use(), 0);
    }
}
