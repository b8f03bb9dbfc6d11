//! The generator's traffic written to pcap (the ports crate's `Capture` wrapper on the receiving
//! port) and decoded by tshark with IPv4 and UDP checksum validation on: every frame decodes with
//! good checksums, the expected VLAN tags, and the exact size distribution of the mix.
//!
//! Without tshark the tests fail, saying to install it (`make setup` does); they never skip.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use vecswitch_gen::{Generator, Rate, SizeSpec, StreamSpec, TrialLength, TrialSpec, VlanSpec};
use vecswitch_ports::loopback;
use vecswitch_ports::pcap::Capture;
use vecswitch_ports::Port;

/// A scratch directory removed on drop, even when the test fails.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("vecswitch-gen-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("KEEP_PCAP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Fails the test, naming what to install, when tshark cannot run.
fn require_tshark() {
    match Command::new("tshark").arg("--version").output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "tshark --version failed ({}): install tshark: make setup (apt-get install tshark)",
            o.status
        ),
        Err(e) => {
            panic!("tshark not found ({e}): install tshark: make setup (apt-get install tshark)")
        }
    }
}

/// Runs a counted trial of `stream` and captures what port 1 receives into `path`.
fn capture(stream: StreamSpec, frames: u64, path: &std::path::Path) {
    let (a, b) = loopback::pair("a", "b");
    let cap = Capture::create(b, path).unwrap();
    let ports: Vec<Box<dyn Port>> = vec![Box::new(a), Box::new(cap)];
    let mut g = Generator::new(ports).unwrap();
    let r = g
        .run_trial(&TrialSpec::new(
            vec![stream],
            Rate::Max,
            TrialLength::Count(frames),
        ))
        .unwrap();
    assert_eq!((r.tx, r.rx, r.lost), (frames, frames, 0));
    drop(g.into_ports()); // flushes the capture
}

/// tshark's fields, one Vec per frame.
fn tshark_fields(path: &std::path::Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(path);
    cmd.args([
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
        "-T",
        "fields",
        "-E",
        "separator=|",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

/// tshark prints checksum status as a number (1 = good) or a word, depending on its version.
fn good(status: &str) -> bool {
    status == "1" || status.eq_ignore_ascii_case("good")
}

#[test]
fn ipv4_qinq_imix_decodes_with_valid_checksums_and_exact_mix() {
    require_tshark();
    let dir = TempDir::new("pcap4");
    let path = dir.0.join("v4.pcap");
    let mut s = StreamSpec::ipv4(0, 1);
    s.vlans = vec![VlanSpec::dot1ad(100), VlanSpec::dot1q(200)];
    s.size = SizeSpec::imix();
    s.flows = 50;
    s.ranges = vec![vecswitch_gen::FieldRange {
        field: vecswitch_gen::Field::DstIp,
        count: 50,
        mode: vecswitch_gen::FieldMode::Random { seed: 5 },
    }];
    capture(s, 1200, &path);
    let rows = tshark_fields(
        &path,
        &[
            "frame.len",
            "eth.type",
            "ieee8021ad.id",
            "frame.protocols",
            "vlan.id",
            "vlan.etype",
            "ip.checksum.status",
            "udp.checksum.status",
            "ip.dst",
        ],
    );
    assert_eq!(rows.len(), 1200);
    let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
    let mut dsts = std::collections::HashSet::new();
    for r in &rows {
        // frame.len is the bytes on the link; the frame size counts the 4-byte FCS too.
        *sizes.entry(r[0].parse::<u64>().unwrap() + 4).or_default() += 1;
        // Outer 802.1ad S-tag 100, then an 802.1Q C-tag 200, then IPv4.
        assert_eq!(&r[1..3], &["0x88a8", "100"], "{r:?}");
        assert!(
            r[3].starts_with("eth:ethertype:ieee8021ad:ethertype:vlan:ethertype:ip:udp"),
            "{r:?}"
        );
        assert_eq!(&r[4..6], &["200", "0x0800"], "{r:?}");
        assert!(good(&r[6]), "IPv4 checksum {r:?}");
        assert!(good(&r[7]), "UDP checksum {r:?}");
        dsts.insert(r[8].clone());
    }
    assert_eq!(sizes, BTreeMap::from([(64, 700), (570, 400), (1518, 100)]));
    assert_eq!(dsts.len(), 50);
}

#[test]
fn ipv6_frames_decode_with_valid_udp_checksums() {
    require_tshark();
    let dir = TempDir::new("pcap6");
    let path = dir.0.join("v6.pcap");
    let mut s = StreamSpec::ipv6(0, 1);
    s.vlans = vec![VlanSpec::dot1q(7)];
    s.size = SizeSpec::imix_spirent_tcpv4();
    capture(s, 10_000, &path);
    let rows = tshark_fields(
        &path,
        &["frame.len", "ipv6.src", "udp.checksum.status", "vlan.id"],
    );
    assert_eq!(rows.len(), 10_000);
    for r in &rows {
        assert_eq!(r[1], "2001:2::1");
        assert!(good(&r[2]), "UDP checksum {r:?}");
        assert_eq!(r[3], "7");
    }
    // 72 and 74 B are below the 80 B minimum of tagged IPv6 and are raised to it.
    assert_eq!(rows.iter().filter(|r| r[0] == "76").count(), 5867 + 200);
    assert_eq!(rows.iter().filter(|r| r[0] == "572").count(), 2366);
    assert!(
        rows.iter()
            .all(|r| ["76", "572", "1496"].contains(&r[0].as_str())),
        "{:?}",
        &rows[..5]
    );
}
