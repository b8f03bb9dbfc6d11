//! Single-node tests: each node run alone (`graph::testing::run_node` / `run`) on every burst size,
//! with the expected decision of every packet (and every packet a node makes) computed from how the
//! packet was built.

mod common;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_graph::testing::{run, run_node};
use vecswitch_graph::{Next, Node};
use vecswitch_ports::loopback::{pair, pair_with_capacity, LoopbackPort, Replay};
use vecswitch_ports::Port;
use vecswitch_switch::interface::{
    ethernet_input, interface_output, EthernetInput, InterfaceOutput, InterfaceRx, Service,
    INPUT_ARC, TO_OUTPUT,
};
use vecswitch_switch::l2::{l2_flood, l2_fwd, l2_learn, l2_xconnect};
use vecswitch_switch::l2::{Bridge, BridgeSettings, L2Flood, L2Fwd, L2Learn, L2Xconnect};
use vecswitch_switch::state::{PortSlot, RxRun, SwitchState};

fn sink(name: &str) -> Box<dyn Port> {
    Box::new(
        Replay::new(name, vec![vec![0u8; 60]])
            .unwrap()
            .with_limit(0),
    )
}

fn add_port(
    st: &mut SwitchState,
    name: &str,
    port: Box<dyn Port>,
    service: Service,
    admin_up: bool,
) {
    let idx = st.ports.len() as u16;
    st.insert_port(idx, PortSlot::new(name, port));
    let iface = st.interface_mut(idx).unwrap();
    iface.service = service;
    iface.admin_up = admin_up;
}

fn add_bridge(st: &mut SwitchState, name: &str, settings: BridgeSettings, members: Vec<u16>) {
    st.bridges.push(Some(Bridge {
        name: name.into(),
        settings,
        members,
    }));
}

/// Ports: 0 xconnect→1, 1 bridge 0 (learns), 2 bridge 1 (no learning), 3 no service, 4 admin-down.
fn classify_state() -> SwitchState {
    let mut st = SwitchState::new(1024);
    add_port(&mut st, "x0", sink("x0"), Service::Xconnect { to: 1 }, true);
    add_port(&mut st, "b0", sink("b0"), Service::Bridge { bd: 0 }, true);
    add_port(&mut st, "b1", sink("b1"), Service::Bridge { bd: 1 }, true);
    add_port(&mut st, "none", sink("none"), Service::None, true);
    add_port(
        &mut st,
        "down",
        sink("down"),
        Service::Xconnect { to: 0 },
        false,
    );
    add_bridge(&mut st, "learns", BridgeSettings::default(), vec![1]);
    add_bridge(
        &mut st,
        "quiet",
        BridgeSettings {
            learn: false,
            ..Default::default()
        },
        vec![2],
    );
    st
}

#[test]
fn ethernet_input_classifies_validates_and_sets_header_fields() {
    use ethernet_input::DropReason as D;
    // The edges the features registered (`Feature::services`), by name.
    let e = |node: &str| ethernet_input::edge_to(node).expect("an edge of ethernet-input");
    let bad = malformed();
    for burst in BURSTS {
        let mut pool = Pool::new(600);
        let mut st = classify_state();
        let mut pkts = Vec::new();
        let mut expect = Vec::new();
        for i in 0..burst {
            // Cycle through: 5 ports with a good frame, a Q-in-Q frame, an 802.3 frame and each
            // malformed kind (on a bridge port).
            let kind = i % (7 + bad.len());
            let (rx, bytes, want) = match kind {
                0 => (0u16, frame(mac(1), mac(2), 60), e("l2-xconnect")),
                1 => (1, frame(mac(1), mac(2), 60), e("l2-learn")),
                2 => (2, frame(mac(1), mac(2), 60), e("l2-fwd")),
                3 => (3, frame(mac(1), mac(2), 60), D::NoService.next()),
                4 => (4, frame(mac(1), mac(2), 60), D::AdminDown.next()),
                5 => (
                    1,
                    tagged(mac(1), mac(2), &[(0x88a8, 100), (0x8100, 200)]),
                    e("l2-learn"),
                ),
                6 => {
                    let mut f = frame(mac(1), mac(2), 60);
                    f[12..14].copy_from_slice(&46u16.to_be_bytes()); // exact 802.3 length
                    (1, f, e("l2-learn"))
                }
                k => {
                    let (reason, bytes) = &bad[k - 7];
                    let want = D::NAMES.iter().position(|n| n == reason).unwrap();
                    (1, bytes.clone(), Next::drop(want as u16))
                }
            };
            let h = packet(&mut pool, &bytes);
            pool.header_mut(h).rx_port = rx;
            pkts.push(h);
            expect.push((kind, want));
        }
        let nexts = run_node(&mut EthernetInput, &mut pool, &mut st, &pkts);
        for (i, ((kind, want), got)) in expect.iter().zip(&nexts).enumerate() {
            assert_eq!(got, want, "burst {burst} packet {i} kind {kind}");
            let h = pool.header(pkts[i]);
            match kind {
                1 => assert_eq!(
                    (h.l3_offset, h.vlan, h.inner_vlan, h.ethertype, h.bd),
                    (14, 0, 0, 0x0800, 0)
                ),
                2 => assert_eq!(h.bd, 1),
                5 => assert_eq!(
                    (h.l3_offset, h.vlan, h.inner_vlan, h.ethertype),
                    (22, 100, 200, 0x0800)
                ),
                6 => assert_eq!((h.l3_offset, h.ethertype), (14, 46)),
                _ => {}
            }
        }
        pool.free_bulk(&pkts);
        assert_eq!(pool.in_use(), 0);
    }
}

#[test]
fn ethernet_input_reason_names_cover_the_wire_l2_errors() {
    let names = ethernet_input::DropReason::NAMES;
    for r in [
        "runt",
        "truncated-vlan-tag",
        "too-many-vlan-tags",
        "bad-length-field",
    ] {
        assert!(vecswitch_wire::Error::REASONS.contains(&r));
        assert!(names.contains(&r), "{r}");
    }
    assert_eq!(
        EthernetInput.info().next_nodes,
        &[
            "l2-xconnect",
            "l2-learn",
            "l2-fwd",
            "ip4-input",
            "arp-input",
            "ip6-input"
        ]
    );
}

#[test]
fn l2_xconnect_sets_tx_port_for_every_burst() {
    for burst in BURSTS {
        let mut pool = Pool::new(300);
        let mut st = classify_state();
        let pkts: Vec<u32> = (0..burst)
            .map(|i| {
                let h = packet(&mut pool, &frame(mac(1), mac(2), 60));
                // Every 4th packet comes from a bridge port: not an xconnect.
                pool.header_mut(h).rx_port = if i % 4 == 3 { 1 } else { 0 };
                h
            })
            .collect();
        let nexts = run_node(&mut L2Xconnect, &mut pool, &mut st, &pkts);
        for (i, n) in nexts.iter().enumerate() {
            if i % 4 == 3 {
                assert_eq!(*n, l2_xconnect::DropReason::NoXconnect.next());
            } else {
                assert_eq!(*n, TO_OUTPUT);
                assert_eq!(pool.header(pkts[i]).tx_port, 1);
            }
        }
        pool.free_bulk(&pkts);
    }
}

fn bridge_state(members: u16, settings: BridgeSettings) -> SwitchState {
    let mut st = SwitchState::new(4096);
    for p in 0..members {
        add_port(
            &mut st,
            &format!("p{p}"),
            sink("p"),
            Service::Bridge { bd: 0 },
            true,
        );
    }
    add_bridge(&mut st, "br", settings, (0..members).collect());
    st
}

fn bridged(pool: &mut Pool, bytes: &[u8], rx: u16) -> u32 {
    let h = packet(pool, bytes);
    let hdr = pool.header_mut(h);
    hdr.rx_port = rx;
    hdr.bd = 0;
    h
}

#[test]
fn l2_learn_learns_refreshes_and_counts_moves_for_every_burst() {
    use l2_learn::Counter as C;
    for burst in BURSTS {
        let mut pool = Pool::new(600);
        let mut st = bridge_state(3, BridgeSettings::default());
        st.now_s = 5;
        // Sources repeat every 10 packets: min(burst, 10) distinct stations, all on port 0.
        let pkts: Vec<u32> = (0..burst)
            .map(|i| bridged(&mut pool, &frame(BCAST, mac((i % 10) as u32), 60), 0))
            .collect();
        let r = run(&mut L2Learn, &mut pool, &mut st, &pkts);
        assert!(r.nexts.iter().all(|n| *n == l2_learn::Edge::L2Fwd.next()));
        let distinct = burst.min(10);
        assert_eq!(st.macs.learned_count(0) as usize, distinct);
        assert_eq!(r.counters[C::Learned.index() as usize] as usize, distinct);
        assert_eq!(st.macs.get(0, &mac(0)).unwrap().last_seen_s, 5);
        // The same stations now appear on port 2: each is a station move, once.
        for &h in &pkts {
            pool.header_mut(h).rx_port = 2;
        }
        let r = run(&mut L2Learn, &mut pool, &mut st, &pkts);
        assert_eq!(
            r.counters[C::StationMoves.index() as usize] as usize,
            distinct
        );
        assert_eq!(r.counters[C::Learned.index() as usize], 0);
        assert!((0..distinct as u32).all(|i| st.macs.lookup(0, &mac(i)) == Some(2)));
        pool.free_bulk(&pkts);
    }
}

#[test]
fn l2_learn_respects_limit_learning_switch_and_group_sources() {
    use l2_learn::Counter as C;
    let mut pool = Pool::new(64);
    let mut st = bridge_state(
        2,
        BridgeSettings {
            mac_limit: 3,
            ..Default::default()
        },
    );
    let pkts: Vec<u32> = (0..5)
        .map(|i| bridged(&mut pool, &frame(BCAST, mac(i), 60), 0))
        .collect();
    let r = run(&mut L2Learn, &mut pool, &mut st, &pkts);
    assert_eq!(st.macs.learned_count(0), 3);
    assert_eq!(r.counters[C::MacLimitReached.index() as usize], 2);
    // A multicast source is never learned.
    let m = bridged(&mut pool, &frame(BCAST, [0x01, 0, 0x5e, 0, 0, 1], 60), 0);
    st.bridges[0].as_mut().unwrap().settings.mac_limit = 100;
    run_node(&mut L2Learn, &mut pool, &mut st, &[m]);
    assert_eq!(st.macs.learned_count(0), 3);
    // Learning off: nothing new, still forwarded.
    st.bridges[0].as_mut().unwrap().settings.learn = false;
    let n = run_node(&mut L2Learn, &mut pool, &mut st, &pkts);
    assert!(n.iter().all(|n| *n == l2_learn::Edge::L2Fwd.next()));
    assert_eq!(st.macs.learned_count(0), 3);
    // A static entry is not moved by learning.
    st.macs.add_static(0, &mac(50), 1, 0).unwrap();
    st.bridges[0].as_mut().unwrap().settings.learn = true;
    let s = bridged(&mut pool, &frame(BCAST, mac(50), 60), 0);
    let r = run(&mut L2Learn, &mut pool, &mut st, &[s]);
    assert_eq!(st.macs.lookup(0, &mac(50)), Some(1));
    assert_eq!(r.counters[C::StaticMacSeenElsewhere.index() as usize], 1);
    pool.free_bulk(&pkts);
    pool.free_bulk(&[m, s]);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn l2_fwd_decides_per_destination_for_every_burst() {
    use l2_fwd::{DropReason as D, Edge as E};
    for burst in BURSTS {
        for uu_flood in [true, false] {
            let mut pool = Pool::new(300);
            let mut st = bridge_state(
                3,
                BridgeSettings {
                    uu_flood,
                    ..Default::default()
                },
            );
            st.macs.learn(0, &mac(100), 1, 0, u32::MAX);
            st.macs.learn(0, &mac(200), 0, 0, u32::MAX);
            let cases = [
                (mac(100), Some(TO_OUTPUT)),          // known, on port 1
                (mac(200), Some(D::SamePort.next())), // known, on the rx port 0
                (mac(300), None),                     // unknown unicast
                (BCAST, Some(E::L2Flood.next())),
                ([0x01, 0, 0x5e, 1, 2, 3], Some(E::L2Flood.next())),
            ];
            let pkts: Vec<u32> = (0..burst)
                .map(|i| bridged(&mut pool, &frame(cases[i % cases.len()].0, mac(1), 60), 0))
                .collect();
            let nexts = run_node(&mut L2Fwd, &mut pool, &mut st, &pkts);
            for (i, n) in nexts.iter().enumerate() {
                let want = cases[i % cases.len()].1.unwrap_or(if uu_flood {
                    E::L2Flood.next()
                } else {
                    D::UnknownUnicastDisabled.next()
                });
                assert_eq!(*n, want, "burst {burst} packet {i}");
                if i % cases.len() == 0 {
                    assert_eq!(pool.header(pkts[i]).tx_port, 1);
                }
            }
            pool.free_bulk(&pkts);
        }
    }
}

#[test]
fn l2_fwd_honours_flood_and_forward_switches() {
    use l2_fwd::DropReason as D;
    let mut pool = Pool::new(8);
    let mut st = bridge_state(
        2,
        BridgeSettings {
            flood: false,
            ..Default::default()
        },
    );
    let b = bridged(&mut pool, &frame(BCAST, mac(1), 60), 0);
    assert_eq!(
        run_node(&mut L2Fwd, &mut pool, &mut st, &[b]),
        vec![D::FloodDisabled.next()]
    );
    st.bridges[0].as_mut().unwrap().settings.forward = false;
    assert_eq!(
        run_node(&mut L2Fwd, &mut pool, &mut st, &[b]),
        vec![D::ForwardingDisabled.next()]
    );
    pool.header_mut(b).bd = 7;
    assert_eq!(
        run_node(&mut L2Fwd, &mut pool, &mut st, &[b]),
        vec![D::NoBridge.next()]
    );
    pool.free(b);
}

#[test]
fn l2_flood_emits_a_copy_for_every_other_member_for_every_burst() {
    for burst in BURSTS {
        let mut pool = Pool::new(2048);
        let mut st = bridge_state(4, BridgeSettings::default());
        // Port 3 is admin-down: never flooded to.
        st.interface_mut(3).unwrap().admin_up = false;
        let pkts: Vec<u32> = (0..burst)
            .map(|i| {
                bridged(
                    &mut pool,
                    &frame(BCAST, mac(i as u32), 60 + i % 7),
                    (i % 3) as u16,
                )
            })
            .collect();
        let r = run(&mut L2Flood, &mut pool, &mut st, &pkts);
        assert!(r.nexts.iter().all(|n| *n == TO_OUTPUT));
        // Members 0,1,2 are up; each packet goes to the two that are not its rx port: the
        // original to one, an emitted copy (along the output arc too) to the other.
        assert_eq!(r.emitted.len(), burst);
        assert!(r.emitted.iter().all(|&(_, n)| n == TO_OUTPUT));
        assert_eq!(r.counters, vec![0], "no-buffers");
        assert_eq!(pool.in_use() as usize, 2 * burst);
        let mut per_port = [0usize; 4];
        for (i, &h) in pkts.iter().enumerate() {
            let tx = pool.header(h).tx_port;
            assert_ne!(tx, (i % 3) as u16);
            per_port[tx as usize] += 1;
        }
        for &(c, _) in &r.emitted {
            let hdr = *pool.header(c);
            assert_ne!(hdr.tx_port, hdr.rx_port);
            // A copy is byte for byte its original (found by its unique source MAC).
            let orig = pkts
                .iter()
                .find(|&&o| pool.data(o)[6..12] == pool.data(c)[6..12])
                .unwrap();
            assert_eq!(pool.data(c), pool.data(*orig));
            assert_eq!(hdr.rx_port, pool.header(*orig).rx_port);
            per_port[hdr.tx_port as usize] += 1;
        }
        assert_eq!(per_port[3], 0);
        assert_eq!(per_port.iter().sum::<usize>(), 2 * burst);
        let copies: Vec<u32> = r.emitted.iter().map(|&(c, _)| c).collect();
        pool.free_bulk(&copies);
        pool.free_bulk(&pkts);
        assert_eq!(pool.in_use(), 0);
    }
}

#[test]
fn l2_flood_counts_no_buffers_and_drops_when_alone() {
    // 3 packets, 5 members: each needs 3 copies; the pool has room for 2 copies in all.
    let mut pool = Pool::new(5);
    let mut st = bridge_state(5, BridgeSettings::default());
    let pkts: Vec<u32> = (0..3)
        .map(|_| bridged(&mut pool, &frame(BCAST, mac(1), 60), 0))
        .collect();
    let r = run(&mut L2Flood, &mut pool, &mut st, &pkts);
    assert!(r.nexts.iter().all(|n| *n == TO_OUTPUT));
    assert_eq!(r.emitted.len(), 2);
    assert_eq!(
        r.counters[l2_flood::Counter::NoBuffers.index() as usize],
        9 - 2
    );
    let copies: Vec<u32> = r.emitted.iter().map(|&(c, _)| c).collect();
    pool.free_bulk(&copies);
    pool.free_bulk(&pkts);
    // A bridge whose only member is the rx port.
    let mut st = bridge_state(1, BridgeSettings::default());
    let h = bridged(&mut pool, &frame(BCAST, mac(1), 60), 0);
    assert_eq!(
        run_node(&mut L2Flood, &mut pool, &mut st, &[h]),
        vec![l2_flood::DropReason::NoOtherMembers.next()]
    );
    pool.free(h);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn interface_rx_stamps_port_and_time_and_counts_per_interface_for_every_burst() {
    for burst in BURSTS {
        let mut pool = Pool::new(1200);
        let mut st = bridge_state(3, BridgeSettings::default());
        st.rx_ns = 77;
        // Three runs as three polls would queue them: port 2, port 0, port 1.
        let sizes = [burst, burst / 2 + 1, 2];
        let mut pkts = Vec::new();
        let mut want = Vec::new();
        for (port, &n) in [2u16, 0, 1].iter().zip(&sizes) {
            st.rx_runs.push_back(RxRun {
                port: *port,
                count: n as u32,
            });
            for i in 0..n {
                pkts.push(packet(&mut pool, &frame(mac(1), mac(2), 60 + i % 3)));
                want.push((*port, 60 + i % 3));
            }
        }
        // The graph hands the node at most 256 packets at a time; runs continue across calls.
        let nexts = run_node(&mut InterfaceRx, &mut pool, &mut st, &pkts);
        assert!(nexts.iter().all(|&n| n == Next::arc(INPUT_ARC)));
        assert!(st.rx_runs.is_empty());
        for (&h, &(port, len)) in pkts.iter().zip(&want) {
            let hdr = pool.header(h);
            assert_eq!(
                (hdr.rx_port, hdr.rx_ns, hdr.total_len),
                (port, 77, len as u32)
            );
        }
        for (port, &n) in [2u16, 0, 1].iter().zip(&sizes) {
            let c = st.interface(*port).unwrap().counters;
            let bytes: usize = (0..n).map(|i| 60 + i % 3).sum();
            assert_eq!(
                (c.rx_packets, c.rx_bytes),
                (n as u64, bytes as u64),
                "burst {burst}"
            );
        }
        pool.free_bulk(&pkts);
    }
}

fn output_state(capacity_b: usize) -> (SwitchState, LoopbackPort, LoopbackPort) {
    let mut st = SwitchState::new(16);
    let (a, peer_a) = pair("a", "peer-a");
    let (b, peer_b) = pair_with_capacity("b", "peer-b", capacity_b).unwrap();
    add_port(&mut st, "a", Box::new(a), Service::None, true);
    add_port(&mut st, "b", Box::new(b), Service::None, true);
    add_port(&mut st, "down", sink("down"), Service::None, false);
    (st, peer_a, peer_b)
}

#[test]
fn interface_output_sends_per_port_and_defers_frees_for_every_burst() {
    for burst in BURSTS {
        let mut pool = Pool::new(1200);
        let (mut st, mut peer_a, mut peer_b) = output_state(1024);
        let mut node = InterfaceOutput::default();
        let pkts: Vec<u32> = (0..burst)
            .map(|i| {
                let h = packet(&mut pool, &frame(mac(1), mac(i as u32), 60 + i % 5));
                pool.header_mut(h).tx_port = (i % 4) as u16; // a, b, down, (no port 3)
                h
            })
            .collect();
        let nexts = run_node(&mut node, &mut pool, &mut st, &pkts);
        let count = |k: usize| (0..burst).filter(|i| i % 4 == k).count();
        for (i, n) in nexts.iter().enumerate() {
            let want = match i % 4 {
                0 | 1 => Next::CONSUMED,
                2 => interface_output::DropReason::TxAdminDown.next(),
                _ => interface_output::DropReason::NoPort.next(),
            };
            assert_eq!(*n, want, "burst {burst} packet {i}");
        }
        assert_eq!(st.tx_done.len(), count(0) + count(1));
        let got_a = drain(&mut peer_a, &mut pool);
        let got_b = drain(&mut peer_b, &mut pool);
        assert_eq!((got_a.len(), got_b.len()), (count(0), count(1)));
        let tx = |i: u16| st.interface(i).unwrap().counters.tx_packets as usize;
        assert_eq!((tx(0), tx(1), tx(2)), (count(0), count(1), 0));
        // Order within a port is kept.
        let want_a: Vec<Vec<u8>> = (0..burst)
            .filter(|i| i % 4 == 0)
            .map(|i| frame(mac(1), mac(i as u32), 60 + i % 5))
            .collect();
        assert_eq!(got_a, want_a);
        pool.free_bulk(&st.tx_done);
        let dropped: Vec<u32> = pkts
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 4 >= 2)
            .map(|(_, &h)| h)
            .collect();
        pool.free_bulk(&dropped);
        assert_eq!(pool.in_use(), 0, "burst {burst}");
    }
}

#[test]
fn interface_output_counts_tx_failed_when_the_port_is_full() {
    let mut pool = Pool::new(64);
    let (mut st, _peer_a, mut peer_b) = output_state(3);
    let mut node = InterfaceOutput::default();
    let pkts: Vec<u32> = (0..5)
        .map(|_| {
            let h = packet(&mut pool, &frame(mac(1), mac(2), 60));
            pool.header_mut(h).tx_port = 1;
            h
        })
        .collect();
    let nexts = run_node(&mut node, &mut pool, &mut st, &pkts);
    // The queue takes 3: the first three of the 5 packets; the last two fail.
    let failed = interface_output::DropReason::TxFailed.next();
    assert_eq!(
        nexts,
        vec![
            Next::CONSUMED,
            Next::CONSUMED,
            Next::CONSUMED,
            failed,
            failed
        ]
    );
    assert_eq!(st.interface(1).unwrap().counters.tx_packets, 3);
    assert_eq!(drain(&mut peer_b, &mut pool).len(), 3);
    pool.free_bulk(&st.tx_done);
    pool.free_bulk(&pkts[3..]);
    assert_eq!(pool.in_use(), 0);
}
