//! vecswitch as a router between two Linux hosts (issue 10's namespace test). Two network
//! namespaces, each a host with an address in its own subnet on a veth whose other end is an
//! AF_PACKET port of a switch running on its worker thread; the switch routes between the two
//! subnets. Checked: `busybox ping` passes both ways; ARP is resolved both ways with the kernel as
//! neighbour (the hosts' `ip neigh` shows the switch's MAC, the switch's `show ip neighbors` the
//! hosts'); `ping -t 1` to the far host makes the sender's kernel count an ICMP time exceeded
//! (`Icmp: InTimeExcds` in the namespace's /proc/net/snmp) that the switch sent.
//!
//! Needs root (namespaces, veth, AF_PACKET), `ip` (iproute2) and `busybox`; scripts/setup.sh
//! installs them. Every name carries the pid; the [`Lab`] guard deletes the namespaces (and so
//! the veths) when the test ends, panics included.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_ports::{LinkState, Port};
use vecswitch_switch::{spawn, Switch, SwitchConfig};
use vecswitch_testsupport::tool::require;
use vecswitch_testsupport::{unique_name, Netns, Veth};

/// The two namespaces (hosts) and their veths; the guards (crates/testsupport) delete the pairs,
/// then the namespaces.
struct Lab {
    _veths: Vec<Veth>,
    ns: [Netns; 2],
    host_if: [String; 2],
}

impl Lab {
    fn new() -> Lab {
        require("busybox");
        let ns = [Netns::new("vsipa"), Netns::new("vsipb")];
        let host_if = [unique_name("vsira"), unique_name("vsirb")];
        let mut _veths = Vec::new();
        for i in 0..2 {
            let (ns, hif) = (&ns[i], &host_if[i]);
            _veths.push(Veth::create(hif, None, "eth0", Some(ns), None));
            let addr = format!("10.77.{}.2/24", i + 1);
            let gw = format!("10.77.{}.1", i + 1);
            ns.ip(&["addr", "add", &addr, "dev", "eth0"]);
            ns.ip(&["route", "add", "default", "via", &gw]);
        }
        Lab {
            _veths,
            ns,
            host_if,
        }
    }

    /// Runs `args` in host `i`'s namespace: (success, output or error).
    fn ns(&self, i: usize, args: &[&str]) -> (bool, String) {
        match self.ns[i].try_exec(args) {
            Ok(out) => (true, out),
            Err(e) => (false, e),
        }
    }

    /// `Icmp: InTimeExcds` of host `i`'s kernel.
    fn time_exceeded_received(&self, i: usize) -> u64 {
        let (_, snmp) = self.ns(i, &["cat", "/proc/net/snmp"]);
        let rows: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Icmp:")).collect();
        let names: Vec<&str> = rows[0].split_whitespace().collect();
        let values: Vec<&str> = rows[1].split_whitespace().collect();
        let col = names.iter().position(|n| *n == "InTimeExcds").unwrap();
        values[col].parse().unwrap()
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
fn hosts_in_two_namespaces_talk_through_vecswitch_routing() {
    let lab = Lab::new();
    let mut sw = Switch::new(SwitchConfig {
        buffers: 4096,
        mac_table_entries: 1024,
        ..Default::default()
    });
    sw.add_port("a", port("a", &lab.host_if[0])).unwrap();
    sw.add_port("b", port("b", &lab.host_if[1])).unwrap();
    sw.ip_add_address("a", "10.77.1.1/24".parse().unwrap())
        .unwrap();
    sw.ip_add_address("b", "10.77.2.1/24".parse().unwrap())
        .unwrap();
    let macs: Vec<String> = sw.show_interfaces().iter().map(|i| i.mac.clone()).collect();
    let h = spawn(sw).expect("worker thread");

    // A → B and B → A (each ping's first packet is held while the switch asks ARP for the host).
    let (ok, out) = lab.ns(0, &["busybox", "ping", "-c", "3", "-W", "5", "10.77.2.2"]);
    assert!(ok, "ping A → B failed: {out}");
    assert!(out.contains("3 packets received"), "{out}");
    let (ok, out) = lab.ns(1, &["busybox", "ping", "-c", "3", "-W", "5", "10.77.1.2"]);
    assert!(ok, "ping B → A failed: {out}");
    assert!(out.contains("3 packets received"), "{out}");
    // The routers' own addresses answer too.
    let (ok, out) = lab.ns(0, &["busybox", "ping", "-c", "1", "-W", "5", "10.77.2.1"]);
    assert!(ok, "ping A → switch failed: {out}");

    // ARP both ways: the kernels know the switch's MACs, the switch knows the hosts'.
    for (i, mac) in macs.iter().enumerate() {
        let gw = format!("10.77.{}.1", i + 1);
        let (_, neigh) = lab.ns(i, &["ip", "neigh", "show", &gw]);
        assert!(
            neigh.contains(mac),
            "host {i} has the switch's MAC {mac} for {gw}: {neigh}"
        );
    }
    let hosts: Vec<(Ipv4Addr, Option<String>)> = h
        .call(|sw| sw.show_ip_neighbors(0, 10).unwrap())
        .unwrap()
        .entries
        .into_iter()
        .map(|n| (n.ip, n.mac))
        .collect();
    for i in 0..2 {
        let ip = Ipv4Addr::new(10, 77, i as u8 + 1, 2);
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

    // TTL 1 to the far host: the sender's kernel receives a time exceeded from the switch.
    let before = lab.time_exceeded_received(0);
    let _ = lab.ns(
        0,
        &[
            "busybox",
            "ping",
            "-c",
            "2",
            "-W",
            "2",
            "-t",
            "1",
            "10.77.2.2",
        ],
    );
    let after = lab.time_exceeded_received(0);
    assert_eq!(after - before, 2, "ICMP time exceeded received by host A");
    let errors = h.call(|sw| sw.show_errors()).unwrap();
    let expired = errors
        .iter()
        .find(|e| e.node == "ip4-input" && e.reason == "ttl-expired")
        .map_or(0, |e| e.count);
    assert_eq!(expired, 2, "{errors:?}");
    h.stop().expect("worker stops");
}
