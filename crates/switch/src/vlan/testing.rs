//! Setups for the VLAN benchmarks (`benches/l2.rs`, group `vlan`) and the instruction-count
//! example (`examples/vlan_packets.rs`): a `loopback::Replay` source port `src` and a counting
//! port `sink`, 64-byte frames (60 without FCS, RFC 2544 §9) with the tags each case needs, and
//! one cross-connect — the same shape as `crate::testing::xconnect_switch`, so that the figures
//! compare with its untagged path.

use vecswitch_ports::loopback::Replay;

use super::SubInterfaceConfig;
use crate::testing::station;
use crate::{Switch, SwitchConfig};

/// The tagged cases measured against the untagged cross-connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// `src.10` (`dot1q 10`, `pop 1`) → `sink`: C-tagged in, untagged out (a UNI's ingress).
    Dot1qPop,
    /// `src` → `sink.10` (`dot1q 10`, `pop 1`): untagged in, C-tag pushed back on egress.
    Dot1qPush,
    /// `src.100` (`dot1ad 100 inner-dot1q 20`, `translate 2-2 dot1ad 300 400`) → `sink.300`
    /// (`dot1ad 300 inner-dot1q 400`): both tags rewritten on ingress, the egress filter on the
    /// way out.
    Dot1adTranslate22,
}

impl Case {
    /// Every case, with the name the bench and the example use.
    pub const ALL: [(Case, &'static str); 3] = [
        (Case::Dot1qPop, "dot1q-pop1"),
        (Case::Dot1qPush, "dot1q-push1"),
        (Case::Dot1adTranslate22, "dot1ad-translate-2-2"),
    ];
}

/// A 60-byte frame from station 0 to station 1 with `tags` (TPID, VID) after the addresses.
pub fn frame(tags: &[(u16, u16)]) -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(&station(1));
    f.extend_from_slice(&station(0));
    for &(tpid, vid) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    f.resize(60, 0);
    f
}

fn sub(parent: &str, id: u32, encap: &str, rw: &str) -> SubInterfaceConfig {
    SubInterfaceConfig {
        parent: parent.to_string(),
        id,
        encap: encap.parse().expect("valid encap"),
        tag_rewrite: rw.parse().expect("valid rewrite"),
    }
}

/// The switch of `case`; `src` replays `limit` frames in all (or endlessly).
pub fn vlan_switch(case: Case, limit: Option<u64>) -> Switch {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 8192,
        mac_table_entries: 1024,
        ..Default::default()
    });
    let tags: &[(u16, u16)] = match case {
        Case::Dot1qPop => &[(0x8100, 10)],
        Case::Dot1qPush => &[],
        Case::Dot1adTranslate22 => &[(0x88a8, 100), (0x8100, 20)],
    };
    let t = vec![frame(tags)];
    let src = Replay::new("src", t.clone()).expect("non-empty templates");
    let src = match limit {
        Some(n) => src.with_limit(n),
        None => src,
    };
    let sink = Replay::new("sink", t)
        .expect("non-empty templates")
        .with_limit(0);
    sw.add_port("src", Box::new(src)).expect("fresh switch");
    sw.add_port("sink", Box::new(sink)).expect("fresh switch");
    let (from, to) = match case {
        Case::Dot1qPop => {
            sw.add_subinterface(&sub("src", 10, "dot1q 10", "pop 1"))
                .expect("valid");
            ("src.10", "sink")
        }
        Case::Dot1qPush => {
            sw.add_subinterface(&sub("sink", 10, "dot1q 10", "pop 1"))
                .expect("valid");
            ("src", "sink.10")
        }
        Case::Dot1adTranslate22 => {
            sw.add_subinterface(&sub(
                "src",
                100,
                "dot1ad 100 inner-dot1q 20",
                "translate 2-2 dot1ad 300 400",
            ))
            .expect("valid");
            sw.add_subinterface(&sub("sink", 300, "dot1ad 300 inner-dot1q 400", "disable"))
                .expect("valid");
            ("src.100", "sink.300")
        }
    };
    sw.add_xconnect(from, to).expect("interfaces exist");
    sw
}
