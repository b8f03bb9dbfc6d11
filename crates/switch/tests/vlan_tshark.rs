//! Tag rewrite as Wireshark sees it: the switch captures a UNI (C-tag 10) and an ENNI (S-tag 300
//! pushed over the C-tag) and tshark reads the tag stacks back from the pcap files. Without
//! tshark the test fails, saying to install it (`make setup` does); it never skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_switch::vlan::SubInterfaceConfig;
use vecswitch_switch::{Switch, SwitchConfig};

/// A temporary file path removed on drop (also when the test fails).
struct TempPath(PathBuf);
impl TempPath {
    fn new(tag: &str) -> TempPath {
        TempPath(
            std::env::temp_dir().join(format!("vecswitch-vlan-{tag}-{}.pcap", std::process::id())),
        )
    }
}
impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Per frame, as tshark decodes it: the outer EtherType/TPID, the 802.1ad S-VID (`ieee8021ad.id`, tshark's
/// `ieee8021ad` dissector), the 802.1Q VIDs and the EtherType after each 802.1Q tag.
fn tshark_tags(path: &Path) -> Vec<String> {
    let out = match Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args([
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-E",
            "aggregator=/",
            "-e",
            "eth.type",
            "-e",
            "ieee8021ad.id",
            "-e",
            "vlan.id",
            "-e",
            "vlan.etype",
        ])
        .output()
    {
        Ok(o) => o,
        Err(e) => panic!("tshark not found ({e}): install it: make setup (apt install tshark)"),
    };
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn tshark_reads_the_tags_the_switch_pushed_and_popped() {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 1024,
        mac_table_entries: 64,
        ..Default::default()
    });
    let (p0, mut uni) = wire("uni");
    let (p1, mut enni) = wire("enni");
    sw.add_port("uni", p0).unwrap();
    sw.add_port("enni", p1).unwrap();
    // UNI: C-tag 10, S-tag 300 pushed (popped again on the way back); ENNI: S-tag 300 over C-tag
    // 10, as it is — one EVPL.
    let sub = |parent: &str, encap: &str, rw: &str| SubInterfaceConfig {
        parent: parent.to_string(),
        id: 10,
        encap: encap.parse().unwrap(),
        tag_rewrite: rw.parse().unwrap(),
    };
    sw.add_subinterface(&sub("uni", "dot1q 10 exact-match", "push dot1ad 300"))
        .unwrap();
    sw.add_subinterface(&sub("enni", "dot1ad 300 inner-dot1q 10", "disable"))
        .unwrap();
    sw.add_xconnect("uni.10", "enni.10").unwrap();
    sw.add_xconnect("enni.10", "uni.10").unwrap();
    let uni_file = TempPath::new("uni");
    let enni_file = TempPath::new("enni");
    sw.capture("uni", &uni_file.0, None).unwrap();
    sw.capture("enni", &enni_file.0, None).unwrap();

    let mut tp = Pool::new(256);
    let c = tagged(mac(1), mac(2), &[(0x8100, 10)]);
    let sc = tagged(mac(1), mac(2), &[(0x88a8, 300), (0x8100, 10)]);
    send(&mut uni, &mut tp, &[c.clone(), c.clone()]);
    while sw.poll_once() > 0 {}
    send(&mut enni, &mut tp, std::slice::from_ref(&sc));
    while sw.poll_once() > 0 {}
    assert_eq!(sw.show_errors(), []);
    assert_eq!(drain(&mut enni, &mut tp), vec![sc.clone(), sc.clone()]);
    assert_eq!(drain(&mut uni, &mut tp), vec![c.clone()]);
    sw.stop_capture("uni").unwrap();
    sw.stop_capture("enni").unwrap();

    let c_tag = "0x8100||10|0x0800";
    let s_c_tags = "0x88a8|300|10|0x0800";
    // The UNI's capture: two C-tagged frames received, one sent back.
    assert_eq!(tshark_tags(&uni_file.0), [c_tag, c_tag, c_tag]);
    // The ENNI's: two frames sent with the S-tag pushed over the C-tag, one received.
    assert_eq!(tshark_tags(&enni_file.0), [s_c_tags, s_c_tags, s_c_tags]);
}
