//! The L7 profile (issue 12, seed 004): nginx, vsftpd and dnsmasq in a server namespace, the
//! open-loop client mix (60 % HTTP small, 35 % HTTP large, 4 % FTP, 1 % DNS) in a client
//! namespace, directly and through the Linux bridge and vecswitch (cross-connect and bridge).
//! Each run: about 6 s of arrivals at 20 transactions/s; asserted: every class ran and none
//! failed, TTFB recorded for each, payload and L1 rates consistent with the bytes moved.
//!
//! Root (namespaces, veth); needs nginx, vsftpd, dnsmasq-base and ethtool (scripts/setup.sh).

mod common;

use std::time::Duration;

use common::built_vecswitch as vecswitch;
use vecswitch_testbed::chain::noisy;
use vecswitch_testbed::l7::{Class, L7Bed, L7Report, Profile};
use vecswitch_testbed::{DutKind, Link, Topology, VnfKind};

fn profile(ipv6: bool) -> Profile {
    Profile {
        rate_tps: 20.0,
        duration: Duration::from_secs(6),
        ipv6,
        ..Profile::default()
    }
}

fn check(r: &L7Report) {
    eprintln!("{}", r.summary_line());
    assert_eq!(r.transactions, 120, "{r:#?}");
    assert_eq!(r.failed, 0, "{r:#?}");
    let want = [
        (Class::HttpSmall, 72),
        (Class::HttpLarge, 42),
        (Class::Ftp, 5),
        (Class::Dns, 1),
    ];
    for (c, n) in want {
        let cr = r.class(c).unwrap_or_else(|| panic!("no {c:?} in {r:#?}"));
        assert_eq!(cr.transactions, n, "{c:?}: {r:#?}");
        assert_eq!(cr.completed, n, "{c:?}: {r:#?}");
        let t = cr.ttfb.as_ref().expect("ttfb of completed transactions");
        assert_eq!(t.samples as u64, n);
        assert!(
            t.min_ns > 0 && t.min_ns <= t.p50_ns && t.p50_ns <= t.max_ns,
            "{t:?}"
        );
    }
    let p = &r.profile.sizes;
    let body = 72 * p.http_small as u64 + 42 * p.http_large as u64 + 5 * p.ftp as u64;
    let total: u64 = r.classes.iter().map(|c| c.payload_bytes).sum();
    // DNS adds its message bytes (tens of bytes) to the bodies.
    assert!(total > body && total < body + 1500, "{total} vs {body}");
    // Everything the client received crossed its link: more bytes than the payload.
    assert!(r.l1_to_client.bytes > body, "{:?}", r.l1_to_client);
    assert!(r.l1_to_client.line_rate_percent > 0.0);
}

#[test]
fn l7_direct_link_completes_every_class() {
    let p = profile(false);
    let mut bed = L7Bed::direct(&p).unwrap();
    check(&bed.run(&p).unwrap());
    let p6 = profile(true);
    check(&bed.run(&p6).unwrap());
}

#[test]
fn l7_through_linux_bridge_completes_every_class() {
    let p = profile(false);
    let topo: Topology = "phy2phy-veth".parse().unwrap();
    let mut bed = L7Bed::through(topo, DutKind::LinuxBridge.build(), &p).unwrap();
    check(&bed.run(&p).unwrap());
}

#[test]
fn l7_through_vecswitch_xconnect_completes_every_class() {
    let p = profile(false);
    let topo: Topology = "phy2phy-veth".parse().unwrap();
    let dut = DutKind::VecswitchXconnect { bin: vecswitch() }.build();
    let mut bed = L7Bed::through(topo, dut, &p).unwrap();
    check(&bed.run(&p).unwrap());
}

#[test]
fn l7_through_vecswitch_bridge_completes_every_class_ipv4_and_ipv6() {
    let p = profile(false);
    let topo: Topology = "phy2phy-veth".parse().unwrap();
    let dut = DutKind::VecswitchBridge { bin: vecswitch() }.build();
    let mut bed = L7Bed::through(topo, dut, &p).unwrap();
    check(&bed.run(&p).unwrap());
    check(&bed.run(&profile(true)).unwrap());
}

#[test]
fn l7_through_a_chain_of_kernel_router_and_vecswitch_vnf_ipv4_and_ipv6() {
    // Seed 004's shape: the vSwitch with a vRouter and a second VNF behind it. The client and
    // the server are in two subnets; only the router joins them.
    let p = profile(false);
    let bin = vecswitch();
    let topo = Topology::new_chain(
        Link::Veth,
        vec![
            VnfKind::KernelRouter,
            VnfKind::VecswitchXconnect { bin: bin.clone() },
        ],
    )
    .unwrap();
    assert_eq!(
        topo.to_string(),
        "chain-veth:kernel-router+vecswitch-xconnect"
    );
    let dut = DutKind::VecswitchXconnect { bin }.build();
    let mut bed = L7Bed::through(topo, dut, &p).unwrap();
    let r = bed.run(&p).unwrap();
    check(&r);
    assert!(
        r.placement
            .processes
            .iter()
            .any(|p| p.name == "kernel-router" && p.pid == 0),
        "{:?}",
        r.placement
    );
    check(&bed.run(&profile(true)).unwrap());
    // The router forwarded the traffic: its counters saw at least the client's frames.
    let ns = &bed.testbed().unwrap().vnf_netns()[0];
    let fwd = ns.exec("cat", &["/proc/net/snmp"]).unwrap();
    let forw: u64 = fwd
        .lines()
        .filter(|l| l.starts_with("Ip: "))
        .nth(1)
        .and_then(|l| l.split_whitespace().nth(6))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(forw > 1000, "router ForwDatagrams {forw}");
}

#[test]
fn l7_noisy_neighbour_levels_through_vecswitch() {
    // Seed 003's noisy neighbour: a cache thrasher at 0 (baseline), 10, 50 and 100 % of the LLC
    // beside vecswitch, the L7 mix at each level; all complete, the stressor worked at each.
    let p = Profile {
        rate_tps: 20.0,
        duration: Duration::from_secs(3),
        ..Profile::default()
    };
    let topo: Topology = "phy2phy-veth".parse().unwrap();
    let dut = DutKind::VecswitchXconnect { bin: vecswitch() }.build();
    let mut bed = L7Bed::through(topo, dut, &p).unwrap();
    let cpu = bed.testbed().unwrap().wiring().cores.generator;
    let (cache, levels) = noisy::l7_levels(&mut bed, &p, &[0, 10, 50, 100], cpu).unwrap();
    assert_eq!(levels.len(), 4);
    for l in &levels {
        eprintln!(
            "LLC {} % ({:?}): {}",
            l.percent_of_llc,
            l.stressor,
            l.report.summary_line()
        );
        assert_eq!(l.report.transactions, 60, "{l:?}");
        assert_eq!(l.report.failed, 0, "{l:?}");
        match &l.stressor {
            None => assert_eq!(l.percent_of_llc, 0),
            Some(s) => {
                assert!(s.passes > 0, "{s:?}");
                assert_eq!(
                    s.working_set_bytes,
                    cache.bytes * u64::from(l.percent_of_llc) / 100
                );
                assert_eq!(s.cpu, cpu);
            }
        }
    }
}
