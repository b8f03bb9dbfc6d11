//! The L2 feature: cross-connects (E-Line) and bridge domains (E-LAN) over interfaces.
//!
//! - Nodes, one per file: [`l2_xconnect`] (`l2-xconnect`), [`l2_learn`] (`l2-learn`), [`l2_fwd`]
//!   (`l2-fwd`), [`l2_flood`] (`l2-flood`); registered by [`L2Feature`].
//! - Tables: [`mac_table::MacTable`] (the MAC table of all bridge domains; fast path `learn`,
//!   `lookup`; control: static entries, flush, incremental aging) and the [`Bridge`]s.
//! - Control: [`control`] — the `Switch` methods on these tables (bridges, members, xconnects,
//!   static MACs, `show bridges`, `show mac`); [`ctl`] — the `[[xconnect]]` and `[[bridge]]`
//!   sections with their `ctl` verbs, and the `mac flush` action (the generic control path).
//! - [`BridgeSettings`]: what a bridge domain does (learn, forward, flood, unknown-unicast flood,
//!   MAC age, MAC limit).
//! - [`format_mac`] / [`parse_mac`]: the `aa:bb:cc:dd:ee:ff` text form used by `show mac` and the
//!   control API.
//!
//! ```text
//!                                 ┌─► l2-xconnect ──────────────────┐
//! interface-rx ─► (input arc) ─► ethernet-input ─► l2-learn ─► l2-fwd ─┼─► (output arc) ─► interface-output
//!                                 └──────────────────► l2-fwd ─► l2-flood ┘  (copies emitted into the graph)
//! ```

pub mod config;
pub mod control;
pub mod ctl;
pub mod l2_flood;
pub mod l2_fwd;
pub mod l2_learn;
pub mod l2_xconnect;
pub mod mac_table;

use serde::{Deserialize, Serialize};
use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Graph, GraphError, Next};

use crate::feature::{Feature, Stage};
use crate::interface::{Service, ServiceInput, ServiceKind, SwIfIdx};
use crate::state::SwitchState;

pub use l2_flood::L2Flood;
pub use l2_fwd::L2Fwd;
pub use l2_learn::L2Learn;
pub use l2_xconnect::L2Xconnect;

/// The L2 feature as registered in the graph: its four forwarding nodes.
#[derive(Debug, Clone, Copy)]
pub struct L2Feature;

impl Feature for L2Feature {
    fn name(&self) -> &'static str {
        "l2"
    }

    fn services(&self) -> &'static [ServiceInput] {
        SERVICES
    }

    fn register(&self, graph: &mut Graph<SwitchState>, stage: Stage) -> Result<(), GraphError> {
        if stage == Stage::Forward {
            graph.add(Box::new(L2Xconnect));
            graph.add(Box::new(L2Learn));
            graph.add(Box::new(L2Fwd));
            graph.add(Box::new(L2Flood));
        }
        Ok(())
    }

    fn shows(&self) -> &'static [crate::ctl::Show] {
        ctl::SHOWS
    }

    fn actions(&self) -> &'static [crate::ctl::Action] {
        ctl::ACTIONS
    }
}

/// What the L2 feature takes from `ethernet-input` ([`Feature::services`]): a cross-connect's
/// frames go to `l2-xconnect`; a bridge member's to `l2-learn` when its bridge learns, else to
/// `l2-fwd`.
pub static SERVICES: &[ServiceInput] = &[
    ServiceInput {
        kind: ServiceKind::Xconnect,
        nodes: &["l2-xconnect"],
        pick: xconnect_node,
    },
    ServiceInput {
        kind: ServiceKind::Bridge,
        nodes: &["l2-learn", "l2-fwd"],
        pick: bridge_node,
    },
];

/// A cross-connect's node: `l2-xconnect`.
fn xconnect_node(_: &SwitchState, _: Service) -> Option<usize> {
    Some(0)
}

/// A bridge member's node: `l2-learn` (0) if its bridge learns, else `l2-fwd` (1); `None` when
/// the bridge is gone.
fn bridge_node(st: &SwitchState, s: Service) -> Option<usize> {
    match s {
        Service::Bridge { bd } => st.bridge(bd).map(|b| usize::from(!b.settings.learn)),
        _ => None,
    }
}

/// One bridge domain.
#[derive(Debug, Clone)]
pub struct Bridge {
    pub name: String,
    pub settings: BridgeSettings,
    /// Member interfaces, in the order they were added (flooding order).
    pub members: Vec<SwIfIdx>,
}

/// Destination and source MAC of a packet. `None` only for a packet shorter than 12 bytes, which
/// `ethernet-input` never lets through (it drops runts); nodes still check rather than index.
#[inline]
pub(crate) fn macs(pool: &Pool, h: u32) -> Option<([u8; 6], [u8; 6])> {
    let d = pool.data(h).get(..12)?;
    let mut dst = [0u8; 6];
    let mut src = [0u8; 6];
    dst.copy_from_slice(&d[..6]);
    src.copy_from_slice(&d[6..12]);
    Some((dst, src))
}

/// Packets per stage group in [`staged`]: the home slots of one group are prefetched together
/// (64 cache lines, 4 KiB: they stay in L1 until the body reads them; more than the ~24 misses a
/// core keeps in flight, so the group's last prefetches wait for its first to land).
pub(crate) const STAGE_GROUP: usize = 64;

/// Which address of a frame a MAC-table node looks up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Addr {
    Dst,
    Src,
}

/// What stage 1 of [`staged`] reads of a packet: its bridge, its receive port and the hashed
/// address (`None` for a frame too short to hold one, which `ethernet-input` never lets through).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Staged {
    pub(crate) bd: u16,
    pub(crate) rx: u16,
    pub(crate) mac: Option<mac_table::Hashed>,
}

/// Runs a MAC-table node over a vector in stages, as VPP's bihash nodes do (issue 10 item 5).
/// For each group of up to [`STAGE_GROUP`] packets: stage 1 reads every packet's bridge and
/// address `addr`, hashes it ([`mac_table::MacTable::hashed`]) and prefetches its home slot
/// ([`mac_table::MacTable::prefetch`], a software prefetch; group addresses, never looked up,
/// are not prefetched); stage 2 runs `body` — the node's per-packet logic, written once — on each
/// packet in order. The prefetches of stage 1 are independent and retire at once, so the table's
/// cache (and TLB) misses of a whole group overlap. `body` may change the table (learning): a
/// hashed key stays valid, its home slot does not depend on the contents.
#[inline(always)]
pub(crate) fn staged(
    cx: &mut Cx<'_, SwitchState>,
    pkts: &[u32],
    nexts: &mut [Next],
    addr: Addr,
    mut body: impl FnMut(&mut Cx<'_, SwitchState>, u32, Staged) -> Next,
) {
    let mut stage = [Staged::default(); STAGE_GROUP];
    for (pkts, nexts) in pkts.chunks(STAGE_GROUP).zip(nexts.chunks_mut(STAGE_GROUP)) {
        for (&h, st) in pkts.iter().zip(stage.iter_mut()) {
            let hdr = cx.pool.header(h);
            let (bd, rx) = (hdr.bd, hdr.rx_port);
            let mac = macs(cx.pool, h).map(|(dst, src)| {
                let m = if addr == Addr::Dst { dst } else { src };
                let k = cx.state.macs.hashed(bd, &m);
                if !is_group(&m) {
                    cx.state.macs.prefetch(k);
                }
                k
            });
            *st = Staged { bd, rx, mac };
        }
        for ((&h, n), &st) in pkts.iter().zip(nexts.iter_mut()).zip(stage.iter()) {
            *n = body(cx, h, st);
        }
    }
}

/// Default MAC age, seconds (as in VPP and Linux bridges: 300 s).
pub const DEFAULT_MAC_AGE_S: u32 = 300;
/// Default most learned entries per bridge domain.
pub const DEFAULT_MAC_LIMIT: u32 = 1_000_000;

/// What a bridge domain does. Every field can be changed while traffic flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BridgeSettings {
    /// Learn source MACs (`l2-learn`).
    pub learn: bool,
    /// Forward known unicast by the MAC table (`l2-fwd`); when off, every frame is dropped after
    /// learning (`forwarding-disabled`).
    pub forward: bool,
    /// Flood broadcast and multicast frames to every other member (`l2-flood`).
    pub flood: bool,
    /// Flood unicast frames whose destination is not in the table.
    pub uu_flood: bool,
    /// Seconds after which a learned entry not seen again is removed; 0 = never.
    pub mac_age_s: u32,
    /// Most learned entries this bridge may hold; further stations are not learned
    /// (`mac-limit-reached`). Static entries do not count.
    pub mac_limit: u32,
}

impl Default for BridgeSettings {
    fn default() -> Self {
        BridgeSettings {
            learn: true,
            forward: true,
            flood: true,
            uu_flood: true,
            mac_age_s: DEFAULT_MAC_AGE_S,
            mac_limit: DEFAULT_MAC_LIMIT,
        }
    }
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn format_mac(mac: &[u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]
    )
}

/// Parses `aa:bb:cc:dd:ee:ff` (or with `-` separators); `None` if it is not six hex bytes.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut n = 0;
    for part in s.split([':', '-']) {
        if n == 6 || part.len() != 2 {
            return None;
        }
        out[n] = u8::from_str_radix(part, 16).ok()?;
        n += 1;
    }
    (n == 6).then_some(out)
}

/// True for group (broadcast or multicast) addresses: the I/G bit, IEEE 802-2014 §8.2.
#[inline]
pub fn is_group(mac: &[u8; 6]) -> bool {
    mac[0] & 1 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_text_roundtrip_and_rejects() {
        let m = [0x02, 0xab, 0, 1, 0xff, 0x10];
        assert_eq!(format_mac(&m), "02:ab:00:01:ff:10");
        assert_eq!(parse_mac("02:ab:00:01:ff:10"), Some(m));
        assert_eq!(parse_mac("02-AB-00-01-FF-10"), Some(m));
        for bad in [
            "",
            "02:ab:00:01:ff",
            "02:ab:00:01:ff:10:11",
            "0g:ab:00:01:ff:10",
            "2:ab:00:01:ff:10",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
        assert!(is_group(&[0xff; 6]) && is_group(&[0x01, 0, 0x5e, 0, 0, 1]) && !is_group(&m));
    }

    #[test]
    fn settings_default_and_deserialize_partial() {
        let s: BridgeSettings =
            serde_json::from_str(r#"{"uu_flood": false, "mac_limit": 5}"#).unwrap();
        assert_eq!(
            s,
            BridgeSettings {
                uu_flood: false,
                mac_limit: 5,
                ..BridgeSettings::default()
            }
        );
        assert!(serde_json::from_str::<BridgeSettings>(r#"{"flod": true}"#).is_err());
    }
}
