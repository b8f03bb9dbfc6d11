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
//! sender re-sends what veth dropped (last test). Root.

use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::af_xdp::{AfXdpConfig, AfXdpPort};
use vecswitch_ports::loopback::packet_from_bytes;
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

fn wait_up(p: &dyn Port) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while p.link() != LinkState::Up {
        assert!(Instant::now() < deadline, "{} never came up", p.name());
        std::thread::sleep(Duration::from_millis(10));
    }
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

/// AF_PACKET does not lose a frame `veth_xmit` dropped: the kernel puts its TX slot back to
/// "send request" and the next kick sends it again; the interface's `tx_dropped` counts the
/// attempts (`kernel-interface-tx-dropped-resent`), not losses. A frame the peer can never take
/// (longer than its MTU) is re-sent at every kick and holds the ring: the frames behind it wait
/// (documented in the port's stats; not changed here).
#[test]
fn af_packet_resends_what_veth_dropped_and_says_so() {
    let lab = VethLab::new("vskd");
    let far = far_end(&lab);
    let mut afp =
        AfPacketPort::open(AfPacketConfig::new("afp", lab.host())).expect("open AF_PACKET port");
    wait_up(&afp);
    let mut pool = Pool::new(256);
    afp.clear_stats();
    let h = packet_from_bytes(&mut pool, &frame(0, BIG_LEN)).unwrap();
    assert_eq!(afp.tx_burst(&mut pool, &[h]), 1);
    pool.free_bulk(&[h]);
    for _ in 0..5 {
        afp.poll_control();
    }
    let resent = counter(&afp, "kernel-interface-tx-dropped-resent");
    let x = afp.af_packet_stats();
    eprintln!("{x:?}; {}", afp.describe());
    // Dropped once per kick, never given up: never counted as sent, still in flight.
    assert!(resent >= 2, "{x:?}");
    assert_eq!(afp.stats().tx_packets, 0, "{:?}", afp.stats());
    assert_eq!(x.tx_in_flight, 1, "{x:?}");
    // The far end counts each dropped copy through its link.
    assert!(
        counter(&far, "kernel-peer-tx-dropped") >= resent,
        "{}",
        far.describe()
    );
    assert_eq!(far.stats().rx_packets, 0);
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
