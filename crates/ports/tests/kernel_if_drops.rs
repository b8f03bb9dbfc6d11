//! Frames the kernel drops after a port's socket let them go are counted (issue 8 item 5,
//! `crates/ports/src/ifstats.rs`): on veth, `veth_xmit` frees a frame its peer cannot take and
//! counts it only in the sending device's `tx_dropped`, while an AF_XDP socket reports the frame
//! as sent (its descriptor completes; `sendto` says `EBUSY`). In the lab that
//! happens when the peer's receive queue — its NAPI ring or the per-CPU backlog — is full
//! (docs/BENCHMARKS.md §5 "Where the frames lost with the placement went"); here the peer's
//! MTU, smaller than the frame, makes `veth_xmit` take the same drop path for exactly the
//! frames the test chooses, at any load.
//!
//! Each test: a veth pair from the test's namespace into a namespace of its own
//! ([`VethLab`], deleted with the pair even when an assert fails), the far end's MTU lowered to
//! 1000; an AF_XDP port on the near end sends 200 small frames and 50 frames of 1200 bytes
//! interleaved; an AF_PACKET or AF_XDP port on the far end counts what arrives. Exact: far end
//! received == 200; the sender's `tx_packets` == 200, `tx_dropped` == 50,
//! `kernel-interface-tx-dropped` == 50; the far end's `kernel-peer-tx-dropped` == 50 (read
//! through the veth link in the other namespace); after `clear_stats` all 0. AF_PACKET as the
//! sender re-sends what veth dropped, then gives up (last tests). Root.

use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::af_xdp::{AfXdpConfig, AfXdpPort};
use vecswitch_ports::loopback::packet_from_bytes;
use vecswitch_ports::testing::wait_up;
use vecswitch_ports::{LinkState, Port};
use vecswitch_testsupport::VethLab;

/// IEEE 802 "local experimental" EtherType: no kernel protocol answers or forwards it.
const ETHERTYPE: u16 = 0x88b5;
const SMALL: u32 = 200;
const BIG: u32 = 50;
const BIG_LEN: usize = 1200;
const FAR_MTU: &str = "1000";

fn frame(seq: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x31]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x32]);
    f[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    f[14..18].copy_from_slice(&seq.to_be_bytes());
    f
}

fn lower_far_mtu(lab: &VethLab) {
    lab.ns().ip(&["link", "set", lab.peer(), "mtu", FAR_MTU]);
}

fn far_end(lab: &VethLab) -> AfPacketPort {
    lower_far_mtu(lab);
    let pc = AfPacketConfig {
        rx_mode: RxMode::Frame,
        ..AfPacketConfig::new("far", lab.peer())
    };
    let far = AfPacketPort::open_in_netns(pc, &lab.netns_path()).expect("open far end in netns");
    wait_up(&far);
    far
}

/// Sends the test's frames from `tx` (every 5th one too long for the far end), keeps flushing
/// until the far end has every small frame and `tx` has nothing left to hand over, and returns
/// how many of ours the far end received.
fn send_and_count(tx: &mut dyn Port, far: &mut dyn Port, pool: &mut Pool) -> u64 {
    let frames: Vec<Vec<u8>> = (0..SMALL + BIG)
        .map(|i| frame(i, if i % 5 == 4 { BIG_LEN } else { 60 }))
        .collect();
    assert_eq!(
        frames.iter().filter(|f| f.len() == BIG_LEN).count(),
        BIG as usize
    );
    let mut next = 0usize;
    let mut got = 0u64;
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if next < frames.len() {
            let end = (next + 16).min(frames.len());
            let hs: Vec<u32> = frames[next..end]
                .iter()
                .map(|f| packet_from_bytes(pool, f).unwrap())
                .collect();
            let sent = tx.tx_burst(pool, &hs);
            pool.free_bulk(&hs);
            next += sent;
        } else {
            tx.poll_control();
        }
        out.clear();
        far.rx_burst(pool, &mut out, 256);
        for &h in &out {
            let mut f = Vec::new();
            pool.copy_out(h, &mut f);
            if f.len() >= 18 && f[12..14] == ETHERTYPE.to_be_bytes() {
                got += 1;
            }
        }
        pool.free_bulk(&out);
        let s = tx.stats();
        if next == frames.len()
            && got >= u64::from(SMALL)
            && s.tx_packets + s.tx_dropped >= u64::from(SMALL + BIG)
        {
            // Anything late would show up within a moment.
            std::thread::sleep(Duration::from_millis(100));
            out.clear();
            far.rx_burst(pool, &mut out, 256);
            got += out.len() as u64;
            pool.free_bulk(&out);
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{}: {next} of {} offered, {got} received, stats {s:?}, errors {:?}",
            tx.name(),
            frames.len(),
            tx.error_counters()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn counter(p: &dyn Port, reason: &str) -> u64 {
    p.error_counters()
        .into_iter()
        .find(|(r, _)| *r == reason)
        .unwrap_or_else(|| panic!("{}: no {reason:?} in {:?}", p.name(), p.error_counters()))
        .1
}

fn check(tx: &mut dyn Port, far: &mut dyn Port, lab: &VethLab) {
    let mut pool = Pool::new(2048);
    tx.clear_stats();
    far.clear_stats();
    let got = send_and_count(tx, far, &mut pool);
    let s = tx.stats();
    eprintln!(
        "{}: far end got {got}; {s:?}; errors {:?}; describe {}; far end rx_dropped {}",
        tx.name(),
        tx.error_counters(),
        tx.describe(),
        lab.ns().counter(lab.peer(), "rx_dropped")
    );
    assert_eq!(got, u64::from(SMALL), "{}: far end received", tx.name());
    assert_eq!(s.tx_packets, u64::from(SMALL), "{}: {s:?}", tx.name());
    assert_eq!(s.tx_dropped, u64::from(BIG), "{}: {s:?}", tx.name());
    assert_eq!(counter(tx, "kernel-interface-tx-dropped"), u64::from(BIG));
    assert!(
        tx.describe()
            .contains(&format!("interface tx_dropped {BIG}")),
        "{}",
        tx.describe()
    );
    // Every frame offered is either received or in a named drop counter.
    assert_eq!(
        got + counter(tx, "kernel-interface-tx-dropped"),
        u64::from(SMALL + BIG)
    );
    // The receiving side counts the same frames as lost on their way in: its veth peer's
    // `tx_dropped`, read through the link into the other namespace.
    assert_eq!(
        counter(far, "kernel-peer-tx-dropped"),
        u64::from(BIG),
        "{}",
        far.describe()
    );
    assert_eq!(
        far.stats().rx_packets,
        u64::from(SMALL),
        "{:?}",
        far.stats()
    );
    tx.clear_stats();
    assert_eq!(counter(tx, "kernel-interface-tx-dropped"), 0);
    assert_eq!((tx.stats().tx_packets, tx.stats().tx_dropped), (0, 0));
}

#[test]
fn af_xdp_counts_frames_the_interface_dropped_after_the_socket() {
    let lab = VethLab::new("vskd");
    let mut far = far_end(&lab);
    let mut xdp = AfXdpPort::open(AfXdpConfig::new("xdp", lab.host())).expect("open AF_XDP port");
    wait_up(&xdp);
    check(&mut xdp, &mut far, &lab);
}

#[test]
fn af_xdp_counts_frames_its_veth_peer_dropped_on_the_way_in() {
    let lab = VethLab::new("vskd");
    lower_far_mtu(&lab);
    let mut far = AfXdpPort::open_in_netns(AfXdpConfig::new("farx", lab.peer()), &lab.netns_path())
        .expect("open AF_XDP port on the far end");
    wait_up(&far);
    let mut xdp = AfXdpPort::open(AfXdpConfig::new("xdp", lab.host())).expect("open AF_XDP port");
    wait_up(&xdp);
    check(&mut xdp, &mut far, &lab);
}

/// AF_PACKET does not lose a frame `veth_xmit` dropped at once: the kernel puts its TX slot back
/// to "send request" and the next kick sends it again; the interface's `tx_dropped` counts the
/// attempts (`kernel-interface-tx-dropped-resent`), not losses. A frame the peer can never take
/// (longer than its MTU) would hold the ring for good, so after `TX_STALL_LIMIT` (100 ms) of
/// refusals the port drops it (`tx-stalled-dropped`) and the frames behind it go out again.
#[test]
fn af_packet_resends_what_veth_dropped_then_gives_up_and_the_ring_moves_on() {
    let lab = VethLab::new("vskd");
    let mut far = far_end(&lab);
    let mut afp = af_packet_sender(&lab);
    let mut pool = Pool::new(256);
    let h = packet_from_bytes(&mut pool, &frame(0, BIG_LEN)).unwrap();
    assert_eq!(afp.tx_burst(&mut pool, &[h]), 1);
    pool.free_bulk(&[h]);
    for _ in 0..5 {
        afp.poll_control();
    }
    let resent = counter(&afp, "kernel-interface-tx-dropped-resent");
    let x = afp.af_packet_stats();
    eprintln!("{x:?}; {}", afp.describe());
    // Within the limit: dropped once per kick, not given up, never counted as sent.
    assert!(resent >= 2, "{x:?}");
    assert_eq!(afp.stats().tx_packets, 0, "{:?}", afp.stats());
    assert_eq!(x.tx_in_flight, 1, "{x:?}");
    assert_eq!(x.tx_stalled_dropped, 0, "{x:?}");
    // The far end counts each dropped copy through its link.
    assert!(
        counter(&far, "kernel-peer-tx-dropped") >= resent,
        "{}",
        far.describe()
    );
    assert_eq!(far.stats().rx_packets, 0);

    // Past the limit the frame is given up, counted once, and the ring is free again.
    std::thread::sleep(Duration::from_millis(150));
    afp.poll_control();
    let x = afp.af_packet_stats();
    assert_eq!(x.tx_stalled_dropped, 1, "{x:?}; {}", afp.describe());
    assert_eq!(x.tx_in_flight, 0, "{x:?}");
    assert_eq!(afp.stats().tx_dropped, 1, "{:?}", afp.stats());
    assert_eq!(counter(&afp, "tx-stalled-dropped"), 1);
    let attempts = counter(&afp, "kernel-interface-tx-dropped-resent");
    for _ in 0..5 {
        afp.poll_control();
    }
    assert_eq!(
        counter(&afp, "kernel-interface-tx-dropped-resent"),
        attempts,
        "re-sent after it was given up"
    );
    assert_eq!(send_small(&mut afp, &mut pool, 1..=10), 10);
    assert_eq!(
        receive_ours(&mut far, &mut pool, 10),
        (1..=10).collect::<Vec<_>>()
    );
    assert_eq!(afp.stats().tx_packets, 10, "{:?}", afp.stats());
}

/// An AF_PACKET port on the near end, up, its counters cleared.
fn af_packet_sender(lab: &VethLab) -> AfPacketPort {
    let mut afp =
        AfPacketPort::open(AfPacketConfig::new("afp", lab.host())).expect("open AF_PACKET port");
    wait_up(&afp);
    afp.clear_stats();
    afp
}

/// One burst of 60-byte test frames numbered `seqs` from `afp`; returns how many it placed.
fn send_small(afp: &mut AfPacketPort, pool: &mut Pool, seqs: impl Iterator<Item = u32>) -> usize {
    let hs: Vec<u32> = seqs
        .map(|i| packet_from_bytes(pool, &frame(i, 60)).unwrap())
        .collect();
    let placed = afp.tx_burst(pool, &hs);
    pool.free_bulk(&hs);
    placed
}

/// Receives until `want` of the test's frames arrived (or 5 s passed, then a moment more for
/// anything late) and returns their sequence numbers in arrival order.
fn receive_ours(far: &mut dyn Port, pool: &mut Pool, want: usize) -> Vec<u32> {
    let mut seqs = Vec::new();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut settle = None;
    loop {
        out.clear();
        far.rx_burst(pool, &mut out, 256);
        for &h in &out {
            let mut f = Vec::new();
            pool.copy_out(h, &mut f);
            if f.len() >= 18 && f[12..14] == ETHERTYPE.to_be_bytes() {
                seqs.push(u32::from_be_bytes(f[14..18].try_into().unwrap()));
            }
        }
        pool.free_bulk(&out);
        let now = Instant::now();
        if seqs.len() >= want && settle.is_none() {
            settle = Some(now + Duration::from_millis(100));
        }
        if settle.is_some_and(|t| now >= t) || now >= deadline {
            return seqs;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A veth whose peer is down has no carrier: the kernel drops every frame and `tpacket_snd` puts
/// it back to "send request". The port gives such frames up at the second refused kick and
/// counts them (`tx-link-down`) instead of re-sending them at every idle poll (the lab's LAG
/// failover once showed 27,454 kernel drops on a member for 19 frames lost) and delivering them,
/// stale, when the link returns: after the peer comes back, only the frames sent then arrive.
#[test]
fn af_packet_drops_frames_for_a_link_that_is_down_and_sends_nothing_stale() {
    let lab = VethLab::new("vskl");
    let mut far = far_end(&lab);
    let mut afp = af_packet_sender(&lab);
    let mut pool = Pool::new(256);
    lab.ns().ip(&["link", "set", lab.peer(), "down"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    while afp.link() != LinkState::Down {
        assert!(
            Instant::now() < deadline,
            "the carrier never went: {}",
            afp.describe()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // 40 frames in 4 bursts while the link is down, with idle polls between them as the
    // worker does.
    for b in 0..4u32 {
        send_small(&mut afp, &mut pool, 100 + b * 10..110 + b * 10);
        for _ in 0..3 {
            afp.poll_control();
        }
    }
    for _ in 0..50 {
        afp.poll_control();
    }
    let x = afp.af_packet_stats();
    eprintln!("{x:?}; {}", afp.describe());
    assert_eq!(x.tx_in_flight, 0, "frames left waiting for the link: {x:?}");
    assert_eq!(x.tx_link_down, 40, "{x:?}");
    assert_eq!(afp.stats().tx_dropped, 40, "{:?}", afp.stats());
    assert_eq!(afp.stats().tx_packets, 0, "{:?}", afp.stats());
    // Attempts: at most two per burst (the refused kick and the one that gives up), not one
    // per idle poll.
    let attempts = counter(&afp, "kernel-interface-tx-dropped-resent");
    assert!(attempts <= 8, "{attempts} kernel drops for 4 bursts: {x:?}");

    lab.ns().ip(&["link", "set", lab.peer(), "up"]);
    wait_up(&afp);
    wait_up(&far);
    assert_eq!(send_small(&mut afp, &mut pool, 0..10), 10);
    assert_eq!(
        receive_ours(&mut far, &mut pool, 10),
        (0..10).collect::<Vec<_>>(),
        "exactly the frames sent after the link returned"
    );
    assert_eq!(afp.stats().tx_packets, 10, "{:?}", afp.stats());
    assert_eq!(afp.af_packet_stats().tx_link_down, 40);
}

/// Both ends in namespaces of their own, as in the lab (generator and DUT namespaces): each end
/// is the first interface of its namespace, so both have the same ifindex, and the peer is found
/// by its namespace id, not mistaken for the interface itself.
#[test]
fn the_peer_is_read_across_namespaces_with_the_same_ifindex() {
    use vecswitch_testsupport::{Netns, Veth};
    let (na, nb) = (Netns::new("vska"), Netns::new("vskb"));
    let (a, b) = (
        vecswitch_testsupport::unique_name("vska"),
        vecswitch_testsupport::unique_name("vskb"),
    );
    let _veth = Veth::create(&a, Some(&na), &b, Some(&nb), None);
    nb.ip(&["link", "set", &b, "mtu", FAR_MTU]);
    let index =
        |ns: &Netns, ifname: &str| ns.exec(&["cat", &format!("/sys/class/net/{ifname}/ifindex")]);
    assert_eq!(
        index(&na, &a),
        index(&nb, &b),
        "both ends should be ifindex 2 in fresh namespaces"
    );
    let mut tx = AfXdpPort::open_in_netns(AfXdpConfig::new("xa", &a), &na.path()).expect("open a");
    let mut far = AfPacketPort::open_in_netns(
        AfPacketConfig {
            rx_mode: RxMode::Frame,
            ..AfPacketConfig::new("fb", &b)
        },
        &nb.path(),
    )
    .expect("open b");
    wait_up(&tx);
    wait_up(&far);
    let mut pool = Pool::new(2048);
    tx.clear_stats();
    far.clear_stats();
    let got = send_and_count(&mut tx, &mut far, &mut pool);
    assert_eq!(got, u64::from(SMALL));
    assert_eq!(counter(&tx, "kernel-interface-tx-dropped"), u64::from(BIG));
    assert_eq!(
        counter(&far, "kernel-peer-tx-dropped"),
        u64::from(BIG),
        "{}",
        far.describe()
    );
}
