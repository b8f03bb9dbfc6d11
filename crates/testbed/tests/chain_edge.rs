//! Seed 004's edge service chain (issue 12): the L7 mix with illegal flows through vecswitch's
//! firewall and router-with-NAT VNFs, and through the kernel's (nftables) peers; the
//! `edge-chain.toml` suite whole. Asserted: every transaction completes, every illegal flow is
//! denied on the client side and counted by the firewall's drops; without a firewall the same
//! illegal flows get through and the run says so; the VNF configs are accepted by
//! `vecswitch run --check`.
//!
//! Root (namespaces, veth) except the config check; needs nginx, vsftpd, dnsmasq-base, ethtool,
//! nftables (scripts/setup.sh) and the `vecswitch` binary (`cargo build -p vecswitch-cli`).

mod common;

use std::time::Duration;

use common::built_vecswitch as vecswitch;
use vecswitch_testbed::chain;
use vecswitch_testbed::l7::illegal::IllegalKind;
use vecswitch_testbed::l7::suite::{run_suite, L7Suite};
use vecswitch_testbed::l7::{Class, L7Bed, L7Report, Profile};
use vecswitch_testbed::{DutKind, Link, MemifRole, PortEnd, Topology, VnfKind};

/// 4 s at 20 transactions/s (80), with 5 illegal flows per 100 (4: each kind at least once).
fn profile(ipv6: bool, illegal: u32) -> Profile {
    Profile {
        rate_tps: 20.0,
        duration: Duration::from_secs(4),
        ipv6,
        illegal_per_100: illegal,
        ..Profile::default()
    }
}

fn complete(r: &L7Report) {
    eprintln!("{}", r.summary_line());
    assert_eq!(r.transactions, 80, "{r:#?}");
    assert_eq!(r.failed, 0, "{r:#?}");
    for c in Class::ALL {
        let cr = r.class(c).unwrap_or_else(|| panic!("no {c:?} in {r:#?}"));
        assert_eq!(cr.completed, cr.transactions, "{c:?}");
    }
    assert!(r.mean_ttfb_ns().is_some_and(|t| t > 0.0));
}

fn denied(r: &L7Report) {
    let i = r.illegal.as_ref().expect("illegal flows sent");
    assert_eq!(i.sent, 4, "{i:#?}");
    assert_eq!((i.denied, i.passed), (4, 0), "{i:#?}");
    assert_eq!(i.listener_accepts, 0, "{i:#?}");
    assert_eq!(i.kinds.len(), 3, "{i:#?}");
    // The firewall saw and dropped every attempt (a SYN each, retransmissions on top).
    let drops = i.device_drops.expect("a firewall VNF in the chain");
    assert!(
        drops >= i.sent,
        "firewall drops {drops} < {} attempts",
        i.sent
    );
    assert!(r.clean());
}

#[test]
fn vecswitch_vnf_configs_pass_vecswitch_run_check() {
    let bin = vecswitch();
    let dir = std::env::temp_dir().join(format!("chain-edge-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let chain = vec![
        VnfKind::VecswitchFirewall { bin: bin.clone() },
        VnfKind::VecswitchRouterNat { bin: bin.clone() },
    ];
    for (k, kind) in chain.iter().enumerate() {
        let ends: Vec<PortEnd> = (0..2)
            .map(|s| PortEnd::Memif {
                name: format!("v{}", 2 * k + s),
                socket: dir.join(format!("vnf{}.sock", 2 * k + s)),
                id: 0,
                role: MemifRole::Client,
            })
            .collect();
        let toml = chain::vecswitch_vnf_toml(kind, &chain, k, &ends, &dir.join("vnf.ctl"), 0);
        let path = dir.join(format!("vnf{k}.toml"));
        std::fs::write(&path, &toml).unwrap();
        let out = std::process::Command::new(&bin)
            .args(["run", "--check", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}\n{}\n{toml}",
            kind.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn illegal_flows_without_a_firewall_get_through_and_the_run_says_so() {
    let p = profile(false, 5);
    let mut bed = L7Bed::direct(&p).unwrap();
    let r = bed.run(&p).unwrap();
    complete(&r);
    let i = r.illegal.as_ref().unwrap();
    assert_eq!((i.sent, i.passed), (4, 4), "{i:#?}");
    // From outside and to the denied port reach the listeners; the denied range is nginx's.
    let n = |k: IllegalKind| i.kinds.iter().find(|x| x.kind == k).unwrap().sent;
    assert_eq!(
        i.listener_accepts,
        n(IllegalKind::FromOutside) + n(IllegalKind::DeniedPort)
    );
    assert_eq!(i.device_drops, None);
    assert!(!r.clean());
    assert!(i.errors[0].contains("got through"), "{:?}", i.errors);
}

#[test]
fn vecswitch_firewall_and_router_nat_vnfs_complete_the_mix_and_deny_illegal_flows() {
    let bin = vecswitch();
    let topo = Topology::new_chain(
        Link::Veth,
        vec![
            VnfKind::VecswitchFirewall { bin: bin.clone() },
            VnfKind::VecswitchRouterNat { bin: bin.clone() },
        ],
    )
    .unwrap();
    assert_eq!(
        topo.to_string(),
        "chain-veth:vecswitch-firewall+vecswitch-router-nat"
    );
    let p = profile(false, 5);
    let dut = DutKind::VecswitchXconnect { bin: bin.clone() }.build();
    let mut bed = L7Bed::through(topo, dut, &p).unwrap();
    let r = bed.run(&p).unwrap();
    complete(&r);
    denied(&r);
    // NAT: the router's sessions are the client's connections, translated to its outside
    // address (10.12.3.254, the server's gateway).
    let run_dir = bed.testbed().unwrap().run_dir().path().to_path_buf();
    let ctl = chain::vnf_ctl(&run_dir, 1);
    let out = std::process::Command::new(&bin)
        .args(["ctl", "--socket"])
        .arg(&ctl)
        .args(["show", "nat44", "sessions"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("10.12.3.254"),
        "{text}"
    );
    // IPv6 is routed (no NAT66) and, on main, not filtered by vecswitch's firewall: the mix
    // completes; no illegal flows (see docs/suites/edge-chain.toml).
    complete(&bed.run(&profile(true, 0)).unwrap());
}

#[test]
fn kernel_firewall_and_router_nat_complete_the_mix_and_deny_illegal_flows_in_both_families() {
    let topo: Topology = "chain-veth:kernel-firewall+kernel-router-nat"
        .parse()
        .unwrap();
    let p = profile(false, 5);
    let mut bed = L7Bed::through(topo, DutKind::LinuxBridge.build(), &p).unwrap();
    let r = bed.run(&p).unwrap();
    complete(&r);
    denied(&r);
    let r6 = bed.run(&profile(true, 5)).unwrap();
    complete(&r6);
    denied(&r6);
    // The masquerade: the router's conntrack holds the client's connections to the server.
    let ns = &bed.testbed().unwrap().vnf_netns()[1];
    let rules = ns.exec("nft", &["list", "table", "ip", "l7nat"]).unwrap();
    assert!(rules.contains("masquerade"), "{rules}");
}

#[test]
fn edge_chain_suite_prints_seed_004s_table_for_both_sides_clean() {
    let bin = vecswitch();
    let suite = L7Suite::parse(include_str!("../../../docs/suites/edge-chain.toml")).unwrap();
    let t0 = std::time::Instant::now();
    let res = run_suite(&suite, bin, &mut |l| eprintln!("{l}"));
    let table = res.table_markdown();
    eprintln!("{table}\n({:.0} s)", t0.elapsed().as_secs_f64());
    assert!(res.failures.is_empty(), "{table}");
    assert!(res.all_clean(), "{table}");
    assert!(
        table.contains("| L7 throughput (Mbit/s) | L1 line rate (%) | avg TTFB (ms) |"),
        "{table}"
    );
    let rows: Vec<&str> = table.lines().filter(|l| l.contains(" | ipv")).collect();
    assert_eq!(rows.len(), 16, "{table}");
    for d in &suite.duts {
        let label = format!("| {} |", d.label());
        assert_eq!(
            rows.iter().filter(|r| r.starts_with(&label)).count(),
            2,
            "{label}: {table}"
        );
    }
    // Illegal flows went through every firewall scenario's IPv4 run and none got through.
    let fw_rows = rows
        .iter()
        .filter(|r| r.contains("firewall") && r.contains("| ipv4 |"))
        .count();
    assert_eq!(fw_rows, 4, "{table}");
    for r in rows
        .iter()
        .filter(|r| r.contains("firewall") && r.contains("| ipv4 |"))
    {
        assert!(r.contains(" / 0 |"), "{r}");
    }
}
