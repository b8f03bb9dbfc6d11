//! `vecswitch run` cross-connects a memif port and a vhost-user port (`type = "vhost_user"`):
//! DPDK testpmd's virtio-user frontend sits on the vhost-user side and echoes every frame back
//! (`io` forwarding), a memif client in this process sends numbered frames on the memif side and
//! reads them back. Both directions of the switch's vhost-user port carry exact counts, checked
//! in `show ports` and in testpmd's own statistics, and every frame comes back intact.
//!
//! The switch and testpmd are stopped by Drop guards (crates/testsupport) and the temp dir
//! removed, even when the test fails. If `dpdk-testpmd` is missing the test fails and says so
//! (`make setup`).

use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};
use vecswitch_buffer::{Pool, DATA_SIZE};
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::{LinkState, Port};
use vecswitch_testsupport::{RunningSwitch, TempDir, TestPmd};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");

/// A running `vecswitch run` (crates/testsupport), killed on drop.
fn start_switch(config: &Path, socket: &Path) -> RunningSwitch {
    RunningSwitch::start(BIN, config, socket)
}

/// Frame `seq` of `len` bytes: unicast MACs, then the sequence number and a pattern.
fn frame(seq: u64, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len)
        .map(|i| (i as u64).wrapping_mul(7).wrapping_add(seq) as u8)
        .collect();
    v[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    v[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    v[12..14].copy_from_slice(&[0x08, 0x00]);
    v[14..22].copy_from_slice(&seq.to_le_bytes());
    v
}

const SIZES: [usize; 5] = [60, 64, 512, 1514, 4000];

fn stat(port: &Value, key: &str) -> u64 {
    port["stats"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {port}"))
}

#[test]
fn xconnect_memif_to_vhost_user_with_testpmd_echo_exact() {
    let d = TempDir::new("vhost-xc");
    let memif = d.path("memif.sock");
    let vhost = d.path("vhost.sock");
    let cfg = d.path("switch.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[switch]
buffers = 4096

[[port]]
name = "m0"
type = "memif"
socket = "{m}"
id = 0

[[port]]
name = "vh0"
type = "vhost_user"
socket = "{v}"
role = "server"

[[xconnect]]
ports = ["m0", "vh0"]
"#,
            m = memif.display(),
            v = vhost.display()
        ),
    )
    .unwrap();
    let sw = start_switch(&cfg, &d.path("ctl.sock"));
    let mut pmd = TestPmd::virtio_user(
        "vsxcvh",
        &format!(
            "net_virtio_user0,path={},queues=1,server=0",
            vhost.display()
        ),
        "io",
        &["--no-flush-rx"],
    );
    let mut peer = MemifPort::new(MemifConfig::new(
        "peer",
        &memif.display().to_string(),
        0,
        Role::Client,
    ))
    .unwrap();
    let t0 = Instant::now();
    loop {
        peer.poll_control();
        let ports = sw.json("show ports");
        if peer.link() == LinkState::Up && ports[1]["link"] == "up" {
            break;
        }
        pmd.check_alive();
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "ports did not come up: {ports}\n{}",
            pmd.output()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let ports = sw.json("show ports");
    assert!(
        ports[1]["describe"]
            .as_str()
            .unwrap()
            .starts_with("vhost-user server"),
        "{ports}"
    );
    // virtio-user tells the backend DRIVER_OK (our link goes up) before testpmd's port start
    // posts its receive buffers; testpmd answers commands once its ports are started.
    let _ = pmd.port_stats();
    pmd.cmd("start");

    const N: u64 = 3_000;
    let mut pool = Pool::new(1024);
    let (mut sent, mut back) = (0u64, 0u64);
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let t0 = Instant::now();
    while back < N {
        // A window of frames in flight: the echo must never find a ring full.
        if sent < N && sent - back < 32 {
            let bytes = frame(sent, SIZES[(sent % SIZES.len() as u64) as usize]);
            let h = pool.alloc().unwrap();
            let first = bytes.len().min(DATA_SIZE);
            assert!(pool.write_packet(h, &bytes[..first]));
            for chunk in bytes[first..].chunks(DATA_SIZE) {
                assert!(pool.append_segment(h, chunk));
            }
            sent += peer.tx_burst(&mut pool, &[h]) as u64;
            pool.free(h);
        }
        out.clear();
        peer.rx_burst(&mut pool, &mut out, 64);
        for &h in &out {
            pool.copy_out(h, &mut buf);
            let want = frame(back, SIZES[(back % SIZES.len() as u64) as usize]);
            assert!(
                buf == want,
                "frame {back} came back different ({} bytes)",
                buf.len()
            );
            back += 1;
        }
        pool.free_bulk(&out);
        peer.poll_control();
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "echo stalled: sent {sent}, back {back}\n{}\n{}",
            sw.json("show ports"),
            pmd.output()
        );
    }
    let (rx, _, tx, _) = pmd.port_stats();
    assert_eq!((rx, tx), (N, N), "testpmd RX/TX-packets");
    let ports = sw.json("show ports");
    let (m0, vh0) = (&ports[0], &ports[1]);
    assert_eq!(
        (stat(m0, "rx_packets"), stat(m0, "tx_packets")),
        (N, N),
        "{m0}"
    );
    assert_eq!(
        (stat(vh0, "rx_packets"), stat(vh0, "tx_packets")),
        (N, N),
        "{vh0}"
    );
    assert_eq!(
        (stat(vh0, "rx_dropped"), stat(vh0, "tx_dropped")),
        (0, 0),
        "{vh0}"
    );
    assert_eq!(pool.in_use(), 0);
}
