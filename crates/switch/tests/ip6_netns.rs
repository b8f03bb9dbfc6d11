//! vecswitch as an IPv6 router between two Linux hosts (issue 10's namespace test, IPv6 half).
//! Two network namespaces, each a host with an address in its own /64 on a veth whose other end
//! is an AF_PACKET port of a switch running on its worker thread; the switch routes between the
//! two subnets. Checked: `busybox ping -6` passes both ways; Neighbor Discovery is resolved both
//! ways with the kernel as neighbour (the hosts' `ip -6 neigh` shows the switch's MAC, the
//! switch's `show ip6 neighbors` the hosts'); the switch's link-local address answers; a ping
//! with hop limit 1 to the far host makes the sender's kernel count an ICMPv6 time exceeded
//! (`Icmp6InTimeExcds` in the namespace's /proc/net/snmp6) that the switch sent.
//!
//! Needs root (namespaces, veth, AF_PACKET), `ip` (iproute2) and `busybox`; scripts/setup.sh
//! installs them. Every name carries the pid; the [`Lab`] guard deletes the namespaces (and so
//! the veths) when the test ends, panics included. Duplicate address detection is off in the
//! namespaces (`nodad`, `accept_dad=0`) so that the hosts' addresses are usable at once.

use std::net::Ipv6Addr;
use std::process::Command;
use std::time::{Duration, Instant};

use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_ports::{LinkState, Port};
use vecswitch_switch::{spawn, Switch, SwitchConfig};

fn run(cmd: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("`{cmd}` must be installed (scripts/setup.sh): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn must(cmd: &str, args: &[&str]) -> String {
    let (ok, text) = run(cmd, args);
    assert!(ok, "{cmd} {}: {text}", args.join(" "));
    text
}

/// The two namespaces (hosts) and their veths; deleted on drop.
struct Lab {
    ns: [String; 2],
    host_if: [String; 2],
}

impl Lab {
    fn new() -> Lab {
        let id = std::process::id() % 1_000_000;
        let lab = Lab {
            ns: [format!("vs6p{id}a"), format!("vs6p{id}b")],
            host_if: [format!("vs6r{id}a"), format!("vs6r{id}b")],
        };
        for i in 0..2 {
            let (ns, hif) = (&lab.ns[i], &lab.host_if[i]);
            let peer = format!("{hif}p");
            must("ip", &["netns", "add", ns]);
            must(
                "ip",
                &["link", "add", hif, "type", "veth", "peer", "name", &peer],
            );
            let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{hif}/disable_ipv6"), "1");
            must("ip", &["link", "set", &peer, "netns", ns]);
            for key in ["all", "default"] {
                must(
                    "ip",
                    &[
                        "netns",
                        "exec",
                        ns,
                        "sysctl",
                        "-qw",
                        &format!("net.ipv6.conf.{key}.accept_dad=0"),
                    ],
                );
            }
            must("ip", &["-n", ns, "link", "set", &peer, "name", "eth0"]);
            must(
                "ip",
                &[
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.eth0.accept_dad=0",
                ],
            );
            let addr = format!("2001:db8:77:{}::2/64", i + 1);
            let gw = format!("2001:db8:77:{}::1", i + 1);
            must(
                "ip",
                &["-n", ns, "-6", "addr", "add", &addr, "dev", "eth0", "nodad"],
            );
            must("ip", &["-n", ns, "link", "set", "eth0", "up"]);
            must("ip", &["-n", ns, "link", "set", "lo", "up"]);
            must(
                "ip",
                &["-n", ns, "-6", "route", "add", "default", "via", &gw],
            );
            must("ip", &["link", "set", hif, "up"]);
        }
        lab
    }

    fn ns(&self, i: usize, args: &[&str]) -> (bool, String) {
        let mut a = vec!["netns", "exec", &self.ns[i]];
        a.extend_from_slice(args);
        run("ip", &a)
    }

    /// `Icmp6InTimeExcds` of host `i`'s kernel.
    fn time_exceeded_received(&self, i: usize) -> u64 {
        let (_, snmp) = self.ns(i, &["cat", "/proc/net/snmp6"]);
        snmp.lines()
            .find_map(|l| l.strip_prefix("Icmp6InTimeExcds"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no Icmp6InTimeExcds in /proc/net/snmp6: {snmp}"))
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for i in 0..2 {
            let _ = Command::new("ip")
                .args(["link", "del", &self.host_if[i]])
                .output();
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns[i]])
                .output();
        }
    }
}

fn port(name: &str, ifname: &str) -> Box<dyn Port> {
    let p = AfPacketPort::open(AfPacketConfig::new(name, ifname)).expect("open AF_PACKET port");
    let deadline = Instant::now() + Duration::from_secs(5);
    while p.link() != LinkState::Up {
        assert!(Instant::now() < deadline, "{ifname} never came up");
        std::thread::sleep(Duration::from_millis(10));
    }
    Box::new(p)
}

#[test]
fn hosts_in_two_namespaces_talk_ipv6_through_vecswitch_routing() {
    let lab = Lab::new();
    let mut sw = Switch::new(SwitchConfig {
        buffers: 4096,
        mac_table_entries: 1024,
        ..Default::default()
    });
    sw.add_port("a", port("a", &lab.host_if[0])).unwrap();
    sw.add_port("b", port("b", &lab.host_if[1])).unwrap();
    sw.ip6_add_address("a", "2001:db8:77:1::1/64".parse().unwrap())
        .unwrap();
    sw.ip6_add_address("b", "2001:db8:77:2::1/64".parse().unwrap())
        .unwrap();
    let macs: Vec<String> = sw.show_interfaces().iter().map(|i| i.mac.clone()).collect();
    let link_local = sw.show_ip6_interfaces()[0].link_local.unwrap();
    let h = spawn(sw).expect("worker thread");

    // A → B and B → A (each ping's first packet is held while the switch solicits the host).
    let ping = |i: usize, args: &[&str]| {
        let mut a = vec!["busybox", "ping", "-6"];
        a.extend_from_slice(args);
        lab.ns(i, &a)
    };
    let (ok, out) = ping(0, &["-c", "3", "-W", "5", "2001:db8:77:2::2"]);
    assert!(ok, "ping A → B failed: {out}");
    assert!(out.contains("3 packets received"), "{out}");
    let (ok, out) = ping(1, &["-c", "3", "-W", "5", "2001:db8:77:1::2"]);
    assert!(ok, "ping B → A failed: {out}");
    assert!(out.contains("3 packets received"), "{out}");
    // The switch's own addresses answer: the far interface's, and the near link-local one.
    let (ok, out) = ping(0, &["-c", "1", "-W", "5", "2001:db8:77:2::1"]);
    assert!(ok, "ping A → switch failed: {out}");
    let ll = format!("{link_local}%eth0");
    let (ok, out) = ping(0, &["-c", "1", "-W", "5", &ll]);
    assert!(ok, "ping A → switch's link-local {ll} failed: {out}");

    // ND both ways: the kernels know the switch's MACs, the switch knows the hosts'.
    for (i, mac) in macs.iter().enumerate() {
        let gw = format!("2001:db8:77:{}::1", i + 1);
        let (_, neigh) = lab.ns(i, &["ip", "-6", "neigh", "show", &gw]);
        assert!(
            neigh.contains(mac),
            "host {i} has the switch's MAC {mac} for {gw}: {neigh}"
        );
    }
    let hosts: Vec<(Ipv6Addr, Option<String>)> = h
        .call(|sw| sw.show_ip6_neighbors(0, 100).unwrap())
        .unwrap()
        .entries
        .into_iter()
        .map(|n| (n.ip, n.mac))
        .collect();
    for i in 0..2 {
        let ip: Ipv6Addr = format!("2001:db8:77:{}::2", i + 1).parse().unwrap();
        let (_, link) = lab.ns(i, &["ip", "-br", "link", "show", "eth0"]);
        let mac = hosts
            .iter()
            .find(|(a, _)| *a == ip)
            .and_then(|(_, m)| m.clone())
            .unwrap_or_else(|| panic!("switch has no MAC for {ip}: {hosts:?}"));
        assert!(
            link.contains(&mac),
            "switch has {mac} for {ip}; host: {link}"
        );
    }

    // Hop limit 1 to the far host: the sender's kernel receives a time exceeded from the switch.
    // (busybox's `ping -6 -t` does not set the hop limit: host A's interface default does.)
    let hop_limit = |v: &str| {
        let kv = format!("net.ipv6.conf.eth0.hop_limit={v}");
        let (ok, out) = lab.ns(0, &["sysctl", "-qw", &kv]);
        assert!(ok, "{kv}: {out}");
    };
    let before = lab.time_exceeded_received(0);
    hop_limit("1");
    let (_, out) = ping(0, &["-c", "2", "-W", "2", "2001:db8:77:2::2"]);
    hop_limit("64");
    let after = lab.time_exceeded_received(0);
    let errors = h.call(|sw| sw.show_errors()).unwrap();
    assert_eq!(
        after - before,
        2,
        "ICMPv6 time exceeded received by host A: {out} {errors:?}"
    );
    let expired = errors
        .iter()
        .find(|e| e.node == "ip6-input" && e.reason == "hop-limit-expired")
        .map_or(0, |e| e.count);
    assert_eq!(expired, 2, "{errors:?}");
    h.stop().expect("worker stops");
}
