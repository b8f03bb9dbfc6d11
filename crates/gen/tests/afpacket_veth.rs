//! The generator on AF_PACKET ports over a veth pair that the test creates inside its own network
//! namespace (removed by a guard, with the veths, even when the test fails). Needs root (CI runs
//! tests as root); without it the test fails and says why.

use std::process::Command;
use std::time::Duration;

use vecswitch_gen::{Generator, Rate, SizeSpec, StreamSpec, TrialLength, TrialSpec, VlanSpec};
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_ports::Port;

/// A network namespace with a veth pair `va` — `vb`, both up, IPv6 off (no router solicitations).
struct Netns(String);

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {} (these tests need root and iproute2)",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Netns {
    fn new() -> Netns {
        let name = format!("vsgen{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let ns = Netns(name.clone());
        ip(&[
            "-n", &name, "link", "add", "va", "mtu", "9000", "type", "veth", "peer", "name", "vb",
            "mtu", "9000",
        ]);
        for dev in ["va", "vb"] {
            let _ = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &name,
                    "sysctl",
                    "-qw",
                    &format!("net.ipv6.conf.{dev}.disable_ipv6=1"),
                ])
                .output();
            ip(&["-n", &name, "link", "set", dev, "up"]);
        }
        ns
    }

    fn path(&self) -> String {
        format!("/run/netns/{}", self.0)
    }

    fn port(&self, dev: &str) -> Box<dyn Port> {
        let cfg = AfPacketConfig {
            frame_size: 16384,
            ..AfPacketConfig::new(dev, dev)
        };
        Box::new(AfPacketPort::open_in_netns(cfg, &self.path()).expect("open AF_PACKET port"))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

#[test]
fn veth_pair_bidirectional_imix_with_vlan_arrives_complete() {
    let ns = Netns::new();
    let mut g = Generator::new(vec![ns.port("va"), ns.port("vb")]).unwrap();
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = SizeSpec::parse("64:7,570:4,1518:1,9000:1").unwrap();
    s.vlans = vec![VlanSpec::dot1q(42)];
    let rev = s.reversed();
    let mut spec = TrialSpec::new(vec![s, rev], Rate::Pps(20_000.0), TrialLength::Count(2_600));
    spec.drain = Duration::from_millis(500);
    // This test checks content and counts, not timing: on a loaded machine the sender may be
    // descheduled for milliseconds, and the default late threshold would drop those slots.
    spec.late_threshold = Duration::from_secs(60);
    let r = g.run_trial(&spec).unwrap();
    for st in &r.streams {
        assert_eq!(st.tx, 2_600, "{:?}", r.tester_limited_reasons);
        assert_eq!(st.rx.rx_unique, st.tx, "stream {}", st.name);
        assert_eq!((st.lost, st.rx.duplicated, st.rx_wrong_port), (0, 0, 0));
        // 200 periods of 13 frames: 7×64 + 4×570 + 1518 + 9000 bytes each.
        assert_eq!(st.rx.rx_bytes, 200 * (7 * 64 + 4 * 570 + 1518 + 9000));
    }
}
