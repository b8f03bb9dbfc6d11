//! Real sockets, real time: two vecswitch switches, each with an LACP bond over two AF_PACKET
//! ports, joined by two veth pairs, negotiate with each other on their worker threads (the worker
//! drives the bond timers) and carry frames between two host ports; cutting one veth moves the
//! traffic to the other. The kernel-peer version of this test is crates/testbed/tests/lacp_guest.rs
//! (the Linux bonding driver in a QEMU guest); this one needs only root and veths.
//!
//! ```text
//!  netns W:  ha ══ pa(probe)        a0 ══ b0         hb ══ pb(probe)
//!            switch A: host=ha, lag over a0,a1  ⇄  switch B: lag over b0,b1, host=hb
//!                                    a1 ══ b1
//! ```
//! Names carry the pid; the [`Lab`] guard deletes the namespace (and so every veth) on drop.
//! Namespace guard from crates/testsupport, the probe from bond_probe/.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_switch::bond::lacp::MuxState;
use vecswitch_switch::bond::{BondMode, BondSettings, HashPolicy, LacpRate};
use vecswitch_switch::{Switch, SwitchConfig, SwitchHandle};
use vecswitch_testsupport::{Netns, Veth};

mod bond_probe;
use bond_probe::Probe;

const MAGIC: u32 = 0x6c61_6731; // "lag1"
/// Added to the sequence numbers of frames sent from B's host, so the directions never mix.
const H_OFF: u32 = 1 << 24;

/// One namespace holding every veth pair; the guards (crates/testsupport) delete the pairs, then
/// the namespace.
struct Lab {
    _veths: Vec<Veth>,
    ns: Netns,
}

impl Lab {
    fn new() -> Lab {
        let ns = Netns::new("vsbw");
        let _veths = [("a0", "b0"), ("a1", "b1"), ("ha", "pa"), ("hb", "pb")]
            .into_iter()
            .map(|(a, b)| Veth::create(a, Some(&ns), b, Some(&ns), None))
            .collect();
        Lab { _veths, ns }
    }
}

fn probe(lab: &Lab, ifname: &str) -> Probe {
    Probe::open(lab.ns.name(), ifname, MAGIC)
}

fn switch(lab: &Lab, host: &str, members: [&str; 2]) -> SwitchHandle {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 8192,
        mac_table_entries: 1024,
        ..Default::default()
    });
    for ifname in [host, members[0], members[1]] {
        let port = AfPacketPort::open_in_netns(AfPacketConfig::new(ifname, ifname), &lab.ns.path())
            .unwrap_or_else(|e| panic!("AF_PACKET on {ifname}: {e}"));
        sw.add_port(ifname, Box::new(port)).unwrap();
    }
    let settings = BondSettings {
        mode: BondMode::Lacp,
        hash: HashPolicy::L2,
        lacp_rate: LacpRate::Fast,
    };
    sw.create_bond("lag", settings).unwrap();
    for m in members {
        sw.add_bond_member("lag", m).unwrap();
    }
    sw.add_xconnect(host, "lag").unwrap();
    sw.add_xconnect("lag", host).unwrap();
    vecswitch_switch::spawn(sw).unwrap()
}

fn active(sw: &SwitchHandle) -> Vec<String> {
    sw.call(|sw| sw.show_bond()[0].active.clone()).unwrap()
}

fn wait_aggregated(a: &SwitchHandle, b: &SwitchHandle) {
    let t0 = Instant::now();
    while active(a) != ["a0", "a1"] || active(b) != ["b0", "b1"] {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no aggregate after 10 s: A {:#?} B {:#?}",
            a.call(|sw| sw.show_lacp()).unwrap(),
            b.call(|sw| sw.show_lacp()).unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn error(sw: &SwitchHandle, node: &'static str, reason: &'static str) -> u64 {
    sw.call(move |sw| {
        sw.show_errors()
            .iter()
            .filter(|e| e.node == node && e.reason == reason)
            .map(|e| e.count)
            .sum()
    })
    .unwrap()
}

/// B stops LACP on b0 (its interface administratively down) while the veth stays up: A hears
/// nothing more on a0 and takes it out of distribution by the short timeout — after about 2–3 s,
/// within 3 s — and every frame A sent into a0 meanwhile is counted by B (`bond-input
/// not-collecting`): sent − received = that count, exactly.
#[test]
fn a_partner_that_stops_lacp_is_timed_out_within_3_s_and_every_lost_frame_is_counted() {
    let lab = Lab::new();
    let a = switch(&lab, "ha", ["a0", "a1"]);
    let b = switch(&lab, "hb", ["b0", "b1"]);
    wait_aggregated(&a, &b);
    let mut pa = probe(&lab, "pa");
    let mut pb = probe(&lab, "pb");
    let mut got = BTreeSet::new();
    let start = Instant::now();
    let mut cut = None;
    let mut out_at = None;
    let mut seq = 0u32;
    while start.elapsed() < Duration::from_secs(5) {
        if cut.is_none() && start.elapsed() >= Duration::from_secs(1) {
            b.call(|sw| sw.set_port_admin("b0", false).unwrap())
                .unwrap();
            cut = Some(start.elapsed());
        }
        if cut.is_some() && out_at.is_none() && !active(&a).contains(&"a0".to_string()) {
            out_at = Some(start.elapsed());
        }
        pa.send([seq]);
        seq += 1;
        pb.recv(&mut got);
        std::thread::sleep(Duration::from_millis(2));
    }
    pb.recv_until(&mut got, seq as usize, Duration::from_secs(1));
    let (cut, out_at) = (cut.unwrap(), out_at.expect("a0 left distribution"));
    let took = out_at - cut;
    assert!(
        took >= Duration::from_millis(1_900) && took <= Duration::from_millis(3_500),
        "a0 left distribution {took:?} after B went silent: accepted 2-3 s (one short timeout \
         after B's last LACPDU, sent at most 1 s before), plus 0.5 s for a loaded machine \
         (the worker's 10 ms tick and this loop's polling can run late)"
    );
    let lacp = a.call(|sw| sw.show_lacp()).unwrap();
    assert_eq!(lacp[0].counters.timeouts, 1, "{:?}", lacp[0]);
    let lost = seq as u64 - got.len() as u64;
    let counted = error(&b, "bond-input", "not-collecting");
    assert!(lost > 0, "some flows were on a0 during the timeout");
    assert_eq!(
        lost, counted,
        "lost {lost} of {seq}, counted by B {counted}"
    );
    eprintln!("{lost} of {seq} frames lost in {took:?}, all counted by B as not-collecting");
    drop(a.stop());
    drop(b.stop());
}

#[test]
fn two_vecswitch_lacp_bonds_over_veths_aggregate_carry_traffic_and_fail_over() {
    let lab = Lab::new();
    let a = switch(&lab, "ha", ["a0", "a1"]);
    let b = switch(&lab, "hb", ["b0", "b1"]);
    let (mac_a, mac_b) = (
        a.call(|sw| sw.show_bond()[0].mac.clone()).unwrap(),
        b.call(|sw| sw.show_bond()[0].mac.clone()).unwrap(),
    );

    // Aggregation: both members collecting/distributing on both sides, each the other's partner
    // (2 s of Aggregate_Wait_Time, then one exchange).
    wait_aggregated(&a, &b);
    for (sw, partner) in [(&a, &mac_b), (&b, &mac_a)] {
        for m in sw.call(|sw| sw.show_lacp()).unwrap() {
            assert_eq!(m.mux_state, MuxState::CollectingDistributing);
            assert_eq!(&m.partner.system, partner);
        }
    }

    // Traffic both ways, exact counts, over both members.
    let mut pa = probe(&lab, "pa");
    let mut pb = probe(&lab, "pb");
    let mut got = BTreeSet::new();
    pa.send(0..256);
    pb.recv_until(&mut got, 256, Duration::from_secs(5));
    assert_eq!(got.len(), 256, "A → B: {} of 256", got.len());
    let mut got = BTreeSet::new();
    pb.send((0..256).map(|s| s + H_OFF));
    pa.recv_until(&mut got, 256, Duration::from_secs(5));
    assert_eq!(got.len(), 256, "B → A: {} of 256", got.len());
    for (sw, ms) in [(&a, ["a0", "a1"]), (&b, ["b0", "b1"])] {
        let tx: Vec<u64> = ms
            .iter()
            .map(|m| {
                let m = m.to_string();
                sw.call(move |sw| sw.port_stats(&m).unwrap().tx_packets)
                    .unwrap()
            })
            .collect();
        assert!(tx.iter().all(|&n| n > 32), "frames sent per member: {tx:?}");
    }

    // Failover: a0 goes down 1 s into a 4 s stream each way (one frame per 2 ms).
    let (mut to_b, mut to_a) = (BTreeSet::new(), BTreeSet::new());
    let mut sent_at = Vec::new();
    let start = Instant::now();
    let mut cut = None;
    let mut seq = 10_000u32;
    while start.elapsed() < Duration::from_secs(4) {
        if cut.is_none() && start.elapsed() >= Duration::from_secs(1) {
            lab.ns.ip(&["link", "set", "a0", "down"]);
            cut = Some(start.elapsed());
        }
        sent_at.push(start.elapsed());
        pa.send([seq]);
        pb.send([seq + H_OFF]);
        seq += 1;
        pb.recv(&mut to_b);
        pa.recv(&mut to_a);
        std::thread::sleep(Duration::from_millis(2));
    }
    let n = (seq - 10_000) as usize;
    pb.recv_until(&mut to_b, n, Duration::from_secs(1));
    pa.recv_until(&mut to_a, n, Duration::from_secs(1));
    let cut = cut.unwrap();
    let deadline = cut + Duration::from_secs(3);
    let errors = (
        a.call(|sw| sw.show_errors()).unwrap(),
        b.call(|sw| sw.show_errors()).unwrap(),
    );
    for (dir, got, off) in [("A → B", &to_b, 0), ("B → A", &to_a, H_OFF)] {
        let lost: Vec<u32> = (10_000..seq)
            .filter(|s| !got.contains(&(s + off)))
            .collect();
        for &s in &lost {
            let t = sent_at[(s - 10_000) as usize];
            assert!(
                t + Duration::from_millis(50) >= cut && t <= deadline,
                "{dir}: frame {s} sent at {t:?} lost, outside the 3 s after the cut at {cut:?} \
                 ({} lost of {n}); errors {errors:?}",
                lost.len()
            );
        }
        eprintln!("{dir}: {} of {n} frames lost around the cut", lost.len());
    }
    assert_eq!(active(&a), ["a1"]);
    assert_eq!(active(&b), ["b1"]);
    drop(a.stop());
    drop(b.stop());
}
