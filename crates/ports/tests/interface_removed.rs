//! An AF_PACKET or AF_XDP port whose interface is deleted under it and created again (issue 14
//! item 3): the port goes down at once with the reason in `describe`, counts what it could not
//! send meanwhile, and once a device of the same name exists again re-opens itself on it (a new
//! ifindex) — in the network namespace it was opened in, although `poll_control` runs on the
//! test's thread in another one — keeping its counters; frames cross again both ways.
//!
//! The port under test sits on a veth end inside a namespace the test creates; its peer, an
//! AF_PACKET port, on the other end in the test's namespace. Needs root (CAP_NET_ADMIN, and
//! CAP_BPF for AF_XDP), as CI runs; the guards delete the namespace and the veth when the test
//! ends, panics included.

use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_ports::af_xdp::{AfXdpConfig, AfXdpPort};
use vecswitch_ports::loopback::packet_from_bytes;
use vecswitch_ports::{LinkState, Port};
use vecswitch_testsupport::{unique_name, Netns, Veth};

/// IEEE 802 "local experimental" EtherType: no kernel protocol answers or forwards it.
const ETHERTYPE: u16 = 0x88b5;

fn frame(tag: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    f[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    f[14] = tag;
    f
}

/// Sends a frame tagged `tag` from `from` until `to` has received one (within 5 s).
fn crosses(from: &mut dyn Port, to: &mut dyn Port, pool: &mut Pool, tag: u8, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut hs = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "{what}: nothing crossed");
        let h = packet_from_bytes(pool, &frame(tag)).unwrap();
        from.tx_burst(pool, &[h]);
        pool.free(h);
        from.poll_control();
        std::thread::sleep(Duration::from_millis(10));
        to.poll_control();
        hs.clear();
        to.rx_burst(pool, &mut hs, 64);
        let got = hs.iter().any(|&h| pool.data(h).get(14) == Some(&tag));
        pool.free_bulk(&hs);
        if got {
            return;
        }
    }
}

/// Calls `poll_control` until `ok` holds (within 5 s).
fn until(port: &mut dyn Port, what: &str, mut ok: impl FnMut(&dyn Port) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        port.poll_control();
        if ok(port) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: link {:?}, {}",
            port.link(),
            port.describe()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn counter(port: &dyn Port, reason: &str) -> u64 {
    port.error_counters()
        .into_iter()
        .find(|(r, _)| *r == reason)
        .unwrap_or_else(|| panic!("{} has no counter {reason}", port.name()))
        .1
}

fn ifindex(describe: &str) -> String {
    describe
        .split("ifindex ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .unwrap_or_else(|| panic!("no ifindex in {describe:?}"))
        .to_string()
}

/// The whole story for one backend; `open` opens the port under test on `dev` inside `ns`.
fn removed_and_recreated(prefix: &str, open: impl Fn(&str, &str) -> Box<dyn Port>) {
    let ns = Netns::new(prefix);
    let (dev, peer_dev) = (unique_name(prefix), unique_name(prefix));
    let veth = Veth::create(&dev, Some(&ns), &peer_dev, None, None);
    let mut port = open(&dev, &ns.path());
    let open_peer = || AfPacketPort::open(AfPacketConfig::new("peer", &peer_dev)).unwrap();
    let mut peer = open_peer();
    let mut pool = Pool::new(256);
    crosses(&mut peer, &mut *port, &mut pool, 1, "before, in");
    crosses(&mut *port, &mut peer, &mut pool, 2, "before, out");
    let rx_before = port.stats().rx_packets;
    let index_before = ifindex(&port.describe());

    drop(peer);
    drop(veth); // ip link del: both ends go
    assert_eq!(
        port.link(),
        LinkState::Down,
        "down at once, before any look"
    );
    until(&mut *port, "the reason shown", |p| {
        p.describe()
            .contains(&format!("down: interface {dev} removed"))
    });
    // What the switch sends meanwhile is counted, not lost silently.
    let tx_dropped = port.stats().tx_dropped;
    let h = packet_from_bytes(&mut pool, &frame(3)).unwrap();
    port.tx_burst(&mut pool, &[h]);
    pool.free(h);
    port.poll_control();
    assert_eq!(
        port.stats().tx_dropped,
        tx_dropped + 1,
        "{}",
        port.describe()
    );
    assert_eq!(port.link(), LinkState::Down);

    let _veth = Veth::create(&dev, Some(&ns), &peer_dev, None, None);
    until(&mut *port, "up on the re-created interface", |p| {
        p.link() == LinkState::Up
    });
    let d = port.describe();
    assert!(
        d.contains("re-opened 1 time on a re-created interface") && !d.contains("down:"),
        "{d}"
    );
    assert_ne!(ifindex(&d), index_before, "a new device: {d}");
    assert_eq!(counter(&*port, "interface-re-opened"), 1);
    assert!(port.stats().rx_packets >= rx_before, "counters kept");
    assert!(port.stats().tx_dropped > tx_dropped, "counters kept");
    let mut peer = open_peer();
    crosses(&mut peer, &mut *port, &mut pool, 4, "after, in");
    crosses(&mut *port, &mut peer, &mut pool, 5, "after, out");
    assert_eq!(counter(&*port, "interface-re-opened"), 1, "re-opened once");
    drop(port);
    drop(peer);
    assert_eq!(pool.stats().in_use, 0);
}

#[test]
fn af_packet_port_goes_down_with_a_reason_and_reopens_on_the_recreated_interface() {
    removed_and_recreated("irp", |dev, ns| {
        Box::new(AfPacketPort::open_in_netns(AfPacketConfig::new("under", dev), ns).unwrap())
    });
}

#[test]
fn af_xdp_port_goes_down_with_a_reason_and_reopens_on_the_recreated_interface() {
    removed_and_recreated("irx", |dev, ns| {
        Box::new(AfXdpPort::open_in_netns(AfXdpConfig::new("under", dev), ns).unwrap())
    });
}
