//! `vecswitch run` with an offloaded `[[xconnect]]` (`offload = "xdp"`) between two `af_xdp`
//! ports whose veth peers sit in two namespaces the test creates (needs root, `ethtool`): the
//! kernel forwards every frame (exact counts both ways, contents checked), `show ports` says the
//! ports are offloaded and counts what their XDP programs saw, the switch itself sends nothing;
//! a reload turns the offload off (frames then cross the graph) and on again; a config that
//! cannot be offloaded is refused naming the field and leaves the switch as it was; a far end
//! without NAPI loses every redirected frame, and `show ports`/`show errors` count each one;
//! `ctl xconnect del` of one direction keeps the other offloaded.
//! The guards delete the namespaces and veth pairs whatever happens.

use std::time::Duration;

use serde_json::Value;
use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::testing;
use vecswitch_testsupport::tool::require;
use vecswitch_testsupport::{RunningSwitch, TempDir, VethLab};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");
/// This file's test frames (`vecswitch_ports::testing::marked_frame`).
const MAGIC: u32 = 0x7843_5846; // "xCXF"

struct Lab {
    labs: [VethLab; 2],
    dir: TempDir,
}

impl Lab {
    fn new() -> Lab {
        Lab {
            labs: [VethLab::new("vsxo"), VethLab::new("vsxo")],
            dir: TempDir::new("ctl-xdp-offload"),
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

    /// GRO on the far end gives it a NAPI, which frames redirected into its peer need.
    fn gro(&self, i: usize, on: bool) {
        let ethtool = require("ethtool");
        let lab = &self.labs[i];
        lab.ns().exec(&[
            ethtool.to_str().expect("utf-8 path"),
            "-K",
            lab.peer(),
            "gro",
            if on { "on" } else { "off" },
        ]);
    }

    fn config(&self, x0_mode: &str, offload: &str) -> String {
        format!(
            "[[port]]\nname = \"x0\"\ntype = \"af_xdp\"\ninterface = \"{}\"\nmode = \"{x0_mode}\"\n\
             [[port]]\nname = \"x1\"\ntype = \"af_xdp\"\ninterface = \"{}\"\nmode = \"native\"\n\
             [[xconnect]]\nports = [\"x0\", \"x1\"]\noffload = \"{offload}\"\n",
            self.labs[0].host(),
            self.labs[1].host()
        )
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
    wait: Duration,
) -> Vec<u32> {
    testing::send_and_count(tx, rx, pool, MAGIC, dir, len, count, wait)
}

fn reload(sw: &RunningSwitch) -> (bool, String) {
    let out = sw.ctl("reload");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn offloaded(ports: &Value, i: usize) -> bool {
    ports[i]["describe"]
        .as_str()
        .expect("describe")
        .starts_with("OFFLOADED in-kernel xconnect")
}

fn error_count(sw: &RunningSwitch, reason: &str) -> u64 {
    sw.json("show errors")
        .as_array()
        .expect("errors")
        .iter()
        .filter(|e| e["reason"] == reason)
        .map(|e| e["count"].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn offloaded_xconnect_forwards_in_the_kernel_counts_everything_and_reloads() {
    let lab = Lab::new();
    lab.gro(0, true);
    lab.gro(1, true);
    let cfg = lab.dir.path("s.toml");
    let sock = lab.dir.path("ctl.sock");
    std::fs::write(&cfg, lab.config("native", "xdp")).unwrap();
    let sw = RunningSwitch::start(BIN, &cfg, &sock);
    let ports = sw.json("show ports");
    assert!(offloaded(&ports, 0) && offloaded(&ports, 1), "{ports}");

    let mut a = lab.peer_port(0);
    let mut b = lab.peer_port(1);
    let mut pool = Pool::new(2048);
    let count = 1000u32;
    let all: Vec<u32> = (0..count).collect();
    let wait = Duration::from_secs(2);
    let mut bytes = 0;
    for len in [60usize, 1514] {
        let ab = send_and_count(&mut a, &mut b, &mut pool, 1, len, count, wait);
        assert_eq!(ab, all, "a->b {len} B");
        let ba = send_and_count(&mut b, &mut a, &mut pool, 2, len, count, wait);
        assert_eq!(ba, all, "b->a {len} B");
        bytes += u64::from(count) * len as u64;
    }
    // Counted by the XDP programs; the switch's worker sent nothing.
    let ports = sw.json("show ports");
    for p in ports.as_array().unwrap() {
        let s = &p["stats"];
        assert_eq!(s["rx_packets"], 2 * count, "{p}");
        assert_eq!(s["rx_bytes"], bytes, "{p}");
        assert_eq!(
            (&s["rx_dropped"], &s["tx_dropped"]),
            (&0.into(), &0.into()),
            "{p}"
        );
        assert_eq!(s["tx_packets"], 0, "offloaded frames skip the switch: {p}");
    }
    assert_eq!(error_count(&sw, "kernel-xdp-redirect-failed"), 0);

    // Offload off by reload: the frames cross the graph (the worker sends them now).
    std::fs::write(&cfg, lab.config("native", "none")).unwrap();
    let (ok, text) = reload(&sw);
    assert!(ok, "{text}");
    let ports = sw.json("show ports");
    assert!(!offloaded(&ports, 0) && !offloaded(&ports, 1), "{ports}");
    assert_eq!(
        send_and_count(&mut a, &mut b, &mut pool, 3, 60, 200, wait),
        (0..200).collect::<Vec<_>>()
    );
    let ports = sw.json("show ports");
    assert_eq!(ports[1]["stats"]["tx_packets"], 200, "{}", ports[1]);
    assert_eq!(
        ports[0]["stats"]["rx_packets"],
        2 * count + 200,
        "{}",
        ports[0]
    );

    // A config that cannot be offloaded (x0 in SKB mode) is refused naming the field; nothing
    // changed (x0 keeps its native-mode socket, the xconnect stays in the switch).
    std::fs::write(&cfg, lab.config("skb", "xdp")).unwrap();
    let (ok, text) = reload(&sw);
    assert!(!ok, "{text}");
    assert!(
        text.contains("xconnect[0].offload")
            && text.contains("skb")
            && text.contains("\"none\" or \"xdp\""),
        "{text}"
    );
    let ports = sw.json("show ports");
    assert!(!offloaded(&ports, 0), "{ports}");
    assert!(
        ports[0]["describe"]
            .as_str()
            .unwrap()
            .contains("xdp native"),
        "{ports}"
    );

    // Offload on again, with b's far end without NAPI: every frame a sends is redirected, refused
    // by veth and counted, at x0 (its interface's rx_dropped).
    lab.gro(1, false);
    let mut b = lab.peer_port(1);
    std::fs::write(&cfg, lab.config("native", "xdp")).unwrap();
    let (ok, text) = reload(&sw);
    assert!(ok, "{text}");
    let out = sw.ctl("clear counters");
    assert!(out.status.success());
    let lost = 300;
    let got = send_and_count(
        &mut a,
        &mut b,
        &mut pool,
        4,
        60,
        lost,
        Duration::from_millis(500),
    );
    assert!(got.is_empty(), "{got:?}");
    let ports = sw.json("show ports");
    let s = &ports[0]["stats"];
    assert_eq!(
        (&s["rx_packets"], &s["rx_dropped"]),
        (&lost.into(), &lost.into()),
        "{}",
        ports[0]
    );
    assert_eq!(
        error_count(&sw, "kernel-xdp-redirect-failed"),
        u64::from(lost)
    );

    // An offloaded port cannot be set down (the kernel would forward regardless): refused, nothing
    // changed.
    let out = sw.ctl("port down x1");
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && text.contains("admin = \"down\""),
        "{text}"
    );
    let ports = sw.json("show ports");
    assert!(
        offloaded(&ports, 1) && ports[1]["admin_up"] == true,
        "{ports}"
    );

    // A sub-interface over an offloaded port would never receive a frame: the verb's change is
    // validated as a whole config, refused naming the offload and the sub-interface, nothing made.
    let out = sw.ctl("subinterface add x0 10 dot1q 10 exact-match");
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success()
            && text.contains("xconnect[0].offload")
            && text.contains("sub-interface `x0.10`"),
        "{text}"
    );
    let subs = sw.json("show subinterfaces");
    assert_eq!(subs.as_array().map(Vec::len), Some(0), "{subs}");
    assert!(offloaded(&sw.json("show ports"), 0));

    // `ctl xconnect del x0` removes x0 -> x1 (x0's program goes back to its socket) and keeps the
    // other direction, still in the kernel.
    let out = sw.ctl("xconnect del x0");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ports = sw.json("show ports");
    assert!(!offloaded(&ports, 0) && offloaded(&ports, 1), "{ports}");
}
