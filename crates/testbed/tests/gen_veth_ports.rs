//! The generator's veth ends opened as each [`GenVethPort`] type, through the phy2phy-veth
//! topology with the Linux bridge as DUT: frames cross both ways and the ports are the type asked
//! for. (Own test binary; needs root, as CI runs.)

use std::time::Duration;

use vecswitch_lab::{Load, Measurer};
use vecswitch_testbed::dut::linux_bridge::LinuxBridgeDut;
use vecswitch_testbed::{
    default_streams, open_generator_ports_as, GenMeasurer, GenVethPort, Link, PortEnd, Testbed,
    Topology,
};

#[test]
fn generator_veth_ports_of_every_type_carry_traffic_through_the_linux_bridge() {
    for (kind, describe) in [
        (GenVethPort::AfPacket, "af_packet "),
        (GenVethPort::AfXdp, "xdp skb"),
        (GenVethPort::AfXdpNative, "xdp native"),
        (
            GenVethPort::AfXdpBatched,
            "napi-defer 2 gro-flush-timeout 200 us",
        ),
    ] {
        let mut tb = Testbed::build(Topology::Phy2Phy { link: Link::Veth }).unwrap();
        let ports = open_generator_ports_as(tb.wiring(), kind).unwrap();
        for p in &ports {
            assert!(
                p.describe().contains(describe),
                "{}: {}",
                kind.as_str(),
                p.describe()
            );
        }
        if kind == GenVethPort::AfXdpBatched {
            // Each generator end got its pfifo qdisc (a full peer ring pushes back, no drop).
            for end in &tb.wiring().gen_ports {
                if let PortEnd::Veth { netns, ifname, .. } = end {
                    let out = std::process::Command::new("ip")
                        .args(["netns", "exec", netns, "tc", "qdisc", "show", "dev", ifname])
                        .output()
                        .expect("ip netns exec tc (iproute2)");
                    let q = String::from_utf8_lossy(&out.stdout);
                    assert!(
                        q.contains("pfifo") && q.contains("limit 1000"),
                        "{ifname}: {q}"
                    );
                }
            }
        }
        tb.start(Box::new(LinuxBridgeDut::new())).unwrap();
        let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, true))
            .unwrap()
            .warmup(Duration::from_millis(100))
            .drain(Duration::from_millis(300));
        let r = m
            .trial(Load::fps(2_000.0), Duration::from_millis(500))
            .unwrap();
        assert!(r.offered_frames > 0, "{}: {r:?}", kind.as_str());
        // 1 000 frames/s per direction: the bridge loses nothing on an idle machine; allow 1 %
        // for a loaded CI host, which still proves both directions crossed.
        assert!(
            r.received_frames * 100 >= r.offered_frames * 99,
            "{}: {r:?}",
            kind.as_str()
        );
        let rep = m.reports().last().unwrap();
        assert!(
            rep.streams.iter().all(|s| s.rx.rx_unique > 0),
            "{}: {:?}",
            kind.as_str(),
            rep.streams
        );
        drop(m);
        tb.stop().unwrap();
    }
}
