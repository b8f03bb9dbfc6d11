//! Real peer: vecswitch's LACP against the Linux kernel's bonding driver in 802.3ad mode.
//!
//! ```text
//!  netns K (kernel)                 netns V (vecswitch's ports)            netns H
//!  bond0 (802.3ad, lacp_rate fast)
//!    ├─ k0 ══ veth ══ v0 ─┐
//!    └─ k1 ══ veth ══ v1 ─┴─ bond "lag" (lacp fast) ⇄ xconnect ⇄ hv ══ veth ══ h
//! ```
//!
//! vecswitch runs on its worker thread (`worker::spawn`, which drives the bond timers) with
//! AF_PACKET ports opened in V. The test sends numbered frames (EtherType 0x88b5, IEEE "local
//! experimental") with AF_PACKET sockets of its own on K's bond0 and on H's h, and checks:
//! - the kernel reports one aggregator holding both ports, whose partner is vecswitch's bond
//!   (`/proc/net/bonding/bond0`: "Partner Mac Address" = the bond's MAC, both slaves' "Aggregator
//!   ID" = the active aggregator's);
//! - frames pass both ways, exact counts, over both members;
//! - taking k0 down moves the traffic to k1 within one fast LACP timeout (3 s): every frame sent
//!   later than 3 s after the cut arrives, the lost ones are counted (sent − received, by
//!   sequence number) and were all sent within those 3 s.
//!
//! Needs root and the kernel's bonding driver (CONFIG_BONDING, module `bonding`). Ignored by
//! default because the lab machine's kernel has no bonding driver (there the real peer is Open
//! vSwitch's LACP: `bond_ovs.rs`, which runs everywhere OVS is installed); run it with
//! `cargo test -p vecswitch-switch --test bond_kernel -- --ignored` (CI, root). Without the driver
//! it fails saying so. Namespaces and veths carry the pid; the [`Lab`] guard deletes them when
//! the test ends, panics included.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_switch::bond::{BondMode, BondSettings, HashPolicy, LacpRate};
use vecswitch_switch::{Switch, SwitchConfig, SwitchHandle};
use vecswitch_testsupport::{unique_name, Netns, Veth};

mod bond_probe;
use bond_probe::Probe;

const MAGIC: u32 = 0x6c61_6730; // "lag0"
/// Added to the sequence numbers of frames sent from h, so the two directions never mix.
const H_OFF: u32 = 1 << 24;

/// The namespaces and veths of one test; the guards (crates/testsupport) delete the pairs, then
/// the namespaces (and the bond in K with them).
struct Lab {
    _veths: Vec<Veth>,
    k: Netns,
    v: Netns,
    h: Netns,
    /// Interface names: k0, k1, v0, v1, h, hv.
    ifs: [String; 6],
}

impl Lab {
    fn new() -> Lab {
        let (k, v, h) = (Netns::new("vsbk"), Netns::new("vsbv"), Netns::new("vsbh"));
        let ifs = ["vbk0", "vbk1", "vbv0", "vbv1", "vbh", "vbhv"].map(unique_name);
        let [k0, k1, v0, v1, hh, hv] = &ifs;
        let _veths = [(k0, &k, v0, &v), (k1, &k, v1, &v), (hh, &h, hv, &v)]
            .into_iter()
            .map(|(a, ans, b, bns)| Veth::create(a, Some(ans), b, Some(bns), None))
            .collect();
        if let Err(e) = k.try_exec(&[
            "ip",
            "link",
            "add",
            "bond0",
            "type",
            "bond",
            "mode",
            "802.3ad",
            "lacp_rate",
            "fast",
            "miimon",
            "100",
            "xmit_hash_policy",
            "layer2",
        ]) {
            panic!(
                "cannot create a kernel bond ({e}): this test needs the Linux bonding driver \
                 (CONFIG_BONDING=m or y, `modprobe bonding`)"
            );
        }
        for kx in [k0, k1] {
            // A slave is enslaved down, then brought up with the bond.
            k.ip(&["link", "set", kx, "down"]);
            k.ip(&["link", "set", kx, "master", "bond0"]);
        }
        k.ip(&["link", "set", "bond0", "up"]);
        for kx in [k0, k1] {
            k.ip(&["link", "set", kx, "up"]);
        }
        Lab {
            _veths,
            k,
            v,
            h,
            ifs,
        }
    }

    fn bonding(&self) -> String {
        self.k.exec(&["cat", "/proc/net/bonding/bond0"])
    }

    fn tx_packets(&self, ifname: &str) -> u64 {
        self.k.counter(ifname, "tx_packets")
    }
}

/// What `/proc/net/bonding/bond0` says (Linux `bond_procfs.c`).
#[derive(Debug, Default, PartialEq)]
struct Report {
    /// "Active Aggregator Info": its "Aggregator ID" and "Partner Mac Address".
    active_id: Option<String>,
    partner_mac: Option<String>,
    /// Per slave: name, "Aggregator ID", and the "system mac address" under "details partner
    /// lacp pdu".
    slaves: Vec<(String, String, String)>,
}

fn parse_bonding(text: &str) -> Report {
    let mut r = Report::default();
    let mut in_active = false;
    let mut in_partner_details = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("Active Aggregator Info") {
            in_active = true;
        }
        if let Some(name) = line.strip_prefix("Slave Interface:") {
            in_active = false;
            in_partner_details = false;
            r.slaves
                .push((name.trim().to_string(), String::new(), String::new()));
        }
        if line.starts_with("details actor lacp pdu") {
            in_partner_details = false;
        }
        if line.starts_with("details partner lacp pdu") {
            in_partner_details = true;
        }
        let value = |prefix: &str| line.strip_prefix(prefix).map(|v| v.trim().to_string());
        if let Some(id) = value("Aggregator ID:") {
            match r.slaves.last_mut() {
                Some(s) if s.1.is_empty() => s.1 = id,
                None if in_active => r.active_id = Some(id),
                _ => {}
            }
        }
        if let Some(mac) = value("Partner Mac Address:") {
            if in_active {
                r.partner_mac = Some(mac);
            }
        }
        if let Some(mac) = value("system mac address:") {
            if in_partner_details {
                if let Some(s) = r.slaves.last_mut() {
                    s.2 = mac;
                }
            }
        }
    }
    r
}

fn vecswitch(lab: &Lab) -> SwitchHandle {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 8192,
        mac_table_entries: 1024,
        ..Default::default()
    });
    let [_, _, v0, v1, _, hv] = &lab.ifs;
    for (name, ifname) in [("v0", v0), ("v1", v1), ("host", hv)] {
        let port = AfPacketPort::open_in_netns(AfPacketConfig::new(name, ifname), &lab.v.path())
            .unwrap_or_else(|e| panic!("AF_PACKET on {ifname}: {e}"));
        sw.add_port(name, Box::new(port)).unwrap();
    }
    let settings = BondSettings {
        mode: BondMode::Lacp,
        hash: HashPolicy::L2,
        lacp_rate: LacpRate::Fast,
    };
    sw.create_bond("lag", settings).unwrap();
    sw.add_bond_member("lag", "v0").unwrap();
    sw.add_bond_member("lag", "v1").unwrap();
    sw.add_xconnect("host", "lag").unwrap();
    sw.add_xconnect("lag", "host").unwrap();
    vecswitch_switch::spawn(sw).unwrap()
}

#[test]
#[ignore = "needs the kernel bonding driver (CONFIG_BONDING), which this lab's kernel lacks; run with --ignored as root where it exists"]
fn the_kernel_bond_aggregates_with_vecswitch_and_fails_over_within_one_fast_timeout() {
    let lab = Lab::new();
    let sw = vecswitch(&lab);
    let bond_mac = sw.call(|sw| sw.show_bond()[0].mac.clone()).unwrap();
    let [k0, k1, ..] = lab.ifs.clone();

    // 1. Negotiation: both slaves in the active aggregator, partner = vecswitch's bond.
    let t0 = Instant::now();
    loop {
        let text = lab.bonding();
        let r = parse_bonding(&text);
        let ours = sw.call(|sw| sw.show_bond()[0].active.clone()).unwrap();
        let ok = r.slaves.len() == 2
            && r.active_id.is_some()
            && r.partner_mac.as_deref() == Some(bond_mac.as_str())
            && r.slaves
                .iter()
                .all(|s| Some(&s.1) == r.active_id.as_ref() && s.2 == bond_mac)
            && ours == ["v0", "v1"];
        if ok {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "no aggregate after 15 s; kernel says:\n{text}\nvecswitch: {ours:?}\n{:#?}",
            sw.call(|sw| sw.show_lacp()).unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // 2. Traffic both ways, exact counts, over both members.
    let mut kprobe = Probe::open(lab.k.name(), "bond0", MAGIC);
    let mut hprobe = Probe::open(lab.h.name(), &lab.ifs[4], MAGIC);
    let (k0_before, k1_before) = (lab.tx_packets(&k0), lab.tx_packets(&k1));
    let mut got = BTreeSet::new();
    kprobe.send(0..256);
    hprobe.recv_until(&mut got, 256, Duration::from_secs(5));
    assert_eq!(
        got.len(),
        256,
        "kernel → vecswitch → h: {} of 256",
        got.len()
    );
    let (k0_sent, k1_sent) = (
        lab.tx_packets(&k0) - k0_before,
        lab.tx_packets(&k1) - k1_before,
    );
    assert!(
        k0_sent >= 32 && k1_sent >= 32,
        "kernel spread: k0 {k0_sent}, k1 {k1_sent}"
    );
    let mut got = BTreeSet::new();
    hprobe.send(1000..1256);
    kprobe.recv_until(&mut got, 256, Duration::from_secs(5));
    assert_eq!(
        got.len(),
        256,
        "h → vecswitch → kernel: {} of 256",
        got.len()
    );
    let bond = sw.call(|sw| sw.show_bond()[0].clone()).unwrap();
    assert!(
        bond.counters.tx_packets >= 256 && bond.counters.rx_packets >= 256,
        "{bond:?}"
    );

    // 3. Failover: k0 goes down 1 s into a 6 s stream each way (one frame per 2 ms).
    let mut to_h = BTreeSet::new();
    let mut to_k = BTreeSet::new();
    let mut sent_at: Vec<Duration> = Vec::new();
    let start = Instant::now();
    let mut cut = None;
    let mut seq = 10_000u32;
    while start.elapsed() < Duration::from_secs(6) {
        if cut.is_none() && start.elapsed() >= Duration::from_secs(1) {
            lab.k.ip(&["link", "set", &k0, "down"]);
            cut = Some(start.elapsed());
        }
        sent_at.push(start.elapsed());
        kprobe.send([seq]);
        hprobe.send([seq + H_OFF]);
        seq += 1;
        hprobe.recv(&mut to_h);
        kprobe.recv(&mut to_k);
        std::thread::sleep(Duration::from_millis(2));
    }
    let n = seq - 10_000;
    hprobe.recv_until(&mut to_h, n as usize, Duration::from_secs(1));
    kprobe.recv_until(&mut to_k, n as usize, Duration::from_secs(1));
    let cut = cut.unwrap();
    let deadline = cut + Duration::from_secs(3);
    let errors = sw.call(|sw| sw.show_errors()).unwrap();
    for (dir, got, off) in [("kernel → h", &to_h, 0), ("h → kernel", &to_k, H_OFF)] {
        let lost: Vec<u32> = (10_000..seq)
            .filter(|s| !got.contains(&(s + off)))
            .collect();
        for &s in &lost {
            let t = sent_at[(s - 10_000) as usize];
            assert!(
                t >= cut.saturating_sub(Duration::from_millis(50)) && t <= deadline,
                "{dir}: frame {s} sent at {t:?} lost, outside the 3 s after the cut at {cut:?} \
                 ({} lost of {n}); vecswitch errors {errors:?}",
                lost.len()
            );
        }
        eprintln!("{dir}: {} of {n} frames lost around the cut", lost.len());
    }
    let ours = sw.call(|sw| sw.show_bond()[0].active.clone()).unwrap();
    assert_eq!(ours, ["v1"]);
    let r = parse_bonding(&lab.bonding());
    assert_eq!(r.slaves.len(), 2);
    let k1_slave = r.slaves.iter().find(|s| s.0 == k1).unwrap();
    assert_eq!(
        r.active_id.as_ref(),
        Some(&k1_slave.1),
        "k1 carries on alone: {r:?}"
    );
    drop(sw.stop());
}

#[test]
fn parse_bonding_reads_the_kernel_report() {
    let text = "\
Bonding Mode: IEEE 802.3ad Dynamic link aggregation
802.3ad info
LACP active: on
LACP rate: fast
Active Aggregator Info:
\tAggregator ID: 1
\tNumber of ports: 2
\tPartner Mac Address: 02:fe:b0:00:00:03

Slave Interface: vbk0-1
MII Status: up
Aggregator ID: 1
details actor lacp pdu:
    system priority: 65535
    system mac address: 52:54:00:12:34:56
details partner lacp pdu:
    system priority: 65535
    system mac address: 02:fe:b0:00:00:03
    oper key: 4

Slave Interface: vbk1-1
Aggregator ID: 2
details actor lacp pdu:
    system mac address: 52:54:00:12:34:56
";
    let r = parse_bonding(text);
    assert_eq!(r.active_id.as_deref(), Some("1"));
    assert_eq!(r.partner_mac.as_deref(), Some("02:fe:b0:00:00:03"));
    assert_eq!(r.slaves.len(), 2);
    assert_eq!(
        r.slaves[0],
        ("vbk0-1".into(), "1".into(), "02:fe:b0:00:00:03".into())
    );
    assert_eq!(r.slaves[1].1, "2");
    assert_eq!(r.slaves[1].2, "");
}
