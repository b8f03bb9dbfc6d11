//! `vecswitch run` with two `type = "af_xdp"` ports cross-connected between two network
//! namespaces the test creates (needs root, as CI runs): frames sent by an AF_PACKET socket in
//! one namespace arrive, counted exactly, in the other, both ways, and `show ports` shows the
//! XDP statistics. The guard deletes the namespaces and veth pairs whatever happens.

use std::time::Duration;

use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::testing;
use vecswitch_testsupport::{RunningSwitch, TempDir, VethLab};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");
/// This file's test frames (`vecswitch_ports::testing::marked_frame`: EtherType 0x88b5, which
/// nothing in the kernel answers).
const MAGIC: u32 = 0x7843_4146; // "xCAF"

/// Namespaces `ns[i]` holding veth end `peer[i]`, whose other end `host[i]` the switch opens, and
/// a temporary directory; the guards (crates/testsupport) remove them on drop.
struct Lab {
    labs: [VethLab; 2],
    host: [String; 2],
    dir: TempDir,
}

impl Lab {
    fn new() -> Lab {
        let labs = [VethLab::new("vsxc"), VethLab::new("vsxc")];
        let host = [labs[0].host().to_string(), labs[1].host().to_string()];
        Lab {
            labs,
            host,
            dir: TempDir::new("ctl-afxdp"),
        }
    }

    fn peer_port(&self, i: usize) -> AfPacketPort {
        let c = AfPacketConfig {
            rx_mode: RxMode::Frame,
            ..AfPacketConfig::new(&format!("peer{i}"), self.labs[i].peer())
        };
        AfPacketPort::open_in_netns(c, &self.labs[i].netns_path())
            .expect("open AF_PACKET port in the namespace")
    }
}

/// The shared sender/collector (`vecswitch_ports::testing::send_and_count`) with this file's
/// magic: the sequence numbers of direction `dir` that `rx` received, each frame checked intact.
fn send_and_count(
    tx: &mut AfPacketPort,
    rx: &mut AfPacketPort,
    pool: &mut Pool,
    dir: u8,
    len: usize,
    count: u32,
) -> Vec<u32> {
    testing::send_and_count(
        tx,
        rx,
        pool,
        MAGIC,
        dir,
        len,
        count,
        Duration::from_secs(10),
    )
}

#[test]
fn af_xdp_ports_cross_connected_between_namespaces_count_every_frame() {
    let lab = Lab::new();
    let cfg = lab.dir.path("s.toml");
    let sock = lab.dir.path("ctl.sock");
    std::fs::write(&cfg, config(&lab, "")).unwrap();
    let sw = RunningSwitch::start(BIN, &cfg, &sock);
    let ports = sw.json("show ports");
    for (i, p) in ports.as_array().unwrap().iter().enumerate() {
        let d = p["describe"].as_str().unwrap();
        assert!(
            d.starts_with(&format!("af_xdp {}", lab.host[i])) && d.contains("xdp native"),
            "{p}"
        );
        assert!(d.contains("rx_fill_ring_empty_descs"), "{p}");
    }

    let mut a = lab.peer_port(0);
    let mut b = lab.peer_port(1);
    let mut pool = Pool::new(2048);
    let count = 1000;
    let mut bytes = 0;
    for len in [60usize, 1514] {
        let ab = send_and_count(&mut a, &mut b, &mut pool, 1, len, count);
        assert_eq!(ab, (0..count).collect::<Vec<_>>(), "a->b {len} B");
        let ba = send_and_count(&mut b, &mut a, &mut pool, 2, len, count);
        assert_eq!(ba, (0..count).collect::<Vec<_>>(), "b->a {len} B");
        bytes += u64::from(count) * len as u64;
    }

    // The switch's counters: each port received and sent exactly what crossed, nothing lost.
    let ports = sw.json("show ports");
    for p in ports.as_array().unwrap() {
        let s = &p["stats"];
        assert_eq!(s["rx_packets"], 2 * count, "{p}");
        assert_eq!(s["tx_packets"], 2 * count, "{p}");
        assert_eq!(s["rx_bytes"], bytes, "{p}");
        assert_eq!(s["tx_bytes"], bytes, "{p}");
        assert_eq!(s["rx_dropped"], 0, "{p}");
        assert_eq!(s["tx_dropped"], 0, "{p}");
    }
    let text = String::from_utf8_lossy(&sw.ctl("show ports").stdout).to_string();
    assert!(text.contains("xdp rx_dropped 0 rx_ring_full 0"), "{text}");

    // A backend key changes: x0 is re-created at once on the same interface and queue (the
    // kernel releases the old socket's queue in deferred work) and forwarding goes on.
    std::fs::write(&cfg, config(&lab, "rx_size = 1024\n")).unwrap();
    let out = sw.ctl("reload");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ports = sw.json("show ports");
    assert!(
        ports[0]["describe"].as_str().unwrap().contains("rx 1024"),
        "{}",
        ports[0]
    );
    let ab = send_and_count(&mut a, &mut b, &mut pool, 3, 60, 200);
    assert_eq!(ab, (0..200).collect::<Vec<_>>(), "a->b after reload");
    let ba = send_and_count(&mut b, &mut a, &mut pool, 4, 60, 200);
    assert_eq!(ba, (0..200).collect::<Vec<_>>(), "b->a after reload");
}

fn config(lab: &Lab, extra_x0: &str) -> String {
    format!(
        "[[port]]\nname = \"x0\"\ntype = \"af_xdp\"\ninterface = \"{}\"\n{extra_x0}\
         [[port]]\nname = \"x1\"\ntype = \"af_xdp\"\ninterface = \"{}\"\nmode = \"native\"\n\
         [[xconnect]]\nports = [\"x0\", \"x1\"]\n",
        lab.host[0], lab.host[1]
    )
}
