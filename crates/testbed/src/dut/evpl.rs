//! The tagged case of seed 001: an EVPL (MEF 6.3 Ethernet Virtual Private Line) from an 802.1Q
//! single-tagged UNI to an 802.1ad double-tagged ENNI, as a DUT of the lab.
//!
//! The generator's port 0 is the customer's UNI: its frames carry C-tag [`CVLAN`]. Port 1 is the
//! partner operator's ENNI: its frames carry S-tag [`SVLAN`] (TPID 0x88a8) over the same C-tag.
//! Going out of the ENNI the device pushes the S-tag; coming back it pops it.
//! [`Dut::traffic_tags`] tells the bench which tags each port's frames carry ([`dut_streams`]).
//!
//! | driver | name | how |
//! |---|---|---|
//! | [`VecswitchEvplDut`] | `vecswitch-evpl` | `vecswitch-xconnect`'s ports; then a reload adds sub-interface `dut0.10` (`dot1q 10 exact-match`, `tag-rewrite = "push dot1ad 300"`), `dut1.300` (`dot1ad 300 inner-dot1q 10`) and an `[[xconnect]]` between them (examples/mef-evpl-uni-enni.toml) |
//! | [`OvsEvplDut`] | `ovs-evpl` | `ovs-bridge`'s learning bridge; the UNI port `vlan_mode=dot1q-tunnel tag=300 cvlans=10` (OVS's Q-in-Q: pushes an 802.1ad S-tag over the customer's tag), the ENNI port a trunk of VLAN 300, `other_config:vlan-limit=2` |
//!
//! What OVS lacks for the seed's MEF cases (as the seed found for OVS 2.x): no tag *translation*
//! (an S-VLAN rewritten to another at the ENNI, `translate 1-1`/`2-2` in vecswitch) short of
//! OpenFlow `set_field` rules written by hand, and no per-interface C-tag exact match with
//! selective service multiplexing beyond `cvlans` on a dot1q-tunnel port. Its EVPL here is an E-LAN
//! on VLAN 300 (MAC learning) rather than a cross-connect. Measured against the untagged path in
//! the same run: `vecswitch-xconnect` and `ovs-bridge` (docs/suites/l2-services.toml).

use vecswitch_gen::{SizeSpec, StreamSpec, VlanSpec};

use crate::dut::counters::DeviceCounters;
use crate::dut::ovs::OvsDut;
use vecswitch_control::config::{Config, XconnectConfig};
use vecswitch_switch::vlan::{Encap, Inner, SubInterfaceConfig, TagRewrite, Tpid};

use crate::dut::vecswitch::{config, to_toml, write_and_reload, Mode, VecswitchDut};
use crate::dut::{unsupported_wiring, Dut};
use crate::error::Result;
use crate::placement::PlacedProcess;
use crate::topology::{PortEnd, Testbed, Wiring};

/// The EVPL's C-VLAN on the UNI.
pub const CVLAN: u16 = 10;
/// The EVPL's S-VLAN on the ENNI.
pub const SVLAN: u16 = 300;

/// Tags of the frames on the generator's port 0 (UNI: C-tag) and port 1 (ENNI: S-tag, C-tag).
pub fn evpl_tags() -> [Vec<VlanSpec>; 2] {
    [
        vec![VlanSpec::dot1q(CVLAN)],
        vec![VlanSpec::dot1ad(SVLAN), VlanSpec::dot1q(CVLAN)],
    ]
}

/// The streams the bench sends through the testbed's DUT: [`crate::streams_for`], each stream's
/// frames tagged as the DUT's service expects on the port it leaves from
/// ([`Dut::traffic_tags`]; untagged when the DUT names none). Through a chain with routed VNFs:
/// the built-in tester's routed streams ([`crate::chain::tester_streams`]).
pub fn dut_streams(tb: &Testbed, size: &SizeSpec, bidirectional: bool) -> Vec<StreamSpec> {
    let mut streams = crate::chain::tester_streams(tb, size, bidirectional)
        .unwrap_or_else(|| crate::streams_for(size, bidirectional));
    if let Some(tags) = tb.with_dut(|d| d.traffic_tags()).flatten() {
        for s in &mut streams {
            if let Some(t) = tags.get(s.tx_port) {
                s.vlans = t.clone();
            }
        }
    }
    streams
}

/// The DUT's port names on the generator's links (UNI, ENNI), or why the wiring does not fit.
fn uni_enni(name: &str, w: &Wiring) -> Result<(String, String)> {
    if w.dut_ports.len() != 2 || w.pairs != [(0, 1)] {
        return Err(unsupported_wiring(
            name,
            w,
            "the EVPL joins the DUT's two generator-facing ports; use phy2phy-memif or phy2phy-veth",
        ));
    }
    Ok((
        w.dut_ports[0].name().to_string(),
        w.dut_ports[1].name().to_string(),
    ))
}

/// `c` with the `[[subinterface]]`s and the `[[xconnect]]` of the EVPL between `uni` and
/// `enni`: `uni.10` takes C-tag 10 alone and pushes S-tag 300 (`dot1q 10 exact-match`, `push
/// dot1ad 300`), `enni.300` takes S-tag 300 over C-tag 10 (`dot1ad 300 inner-dot1q 10`).
pub fn with_evpl(c: &mut Config, uni: &str, enni: &str) {
    let u = SubInterfaceConfig {
        parent: uni.to_string(),
        id: u32::from(CVLAN),
        encap: Encap::Tagged {
            tpid: Tpid::Dot1q,
            outer: CVLAN,
            inner: Inner::None,
            exact: true,
        },
        tag_rewrite: TagRewrite::Push {
            tpid: Tpid::Dot1ad,
            tags: [SVLAN, 0],
            n: 1,
        },
    };
    let e = SubInterfaceConfig {
        parent: enni.to_string(),
        id: u32::from(SVLAN),
        encap: Encap::Tagged {
            tpid: Tpid::Dot1ad,
            outer: SVLAN,
            inner: Inner::Vid(CVLAN),
            exact: false,
        },
        tag_rewrite: TagRewrite::Disabled,
    };
    c.xconnects.push(XconnectConfig::both(&u.name(), &e.name()));
    c.subinterfaces.extend([u, e]);
}

/// The [`Dut`] methods both EVPL drivers hand to the driver they wrap (`inner`), and their tags.
macro_rules! evpl_delegation {
    () => {
        fn teardown(&mut self) -> Result<()> {
            self.inner.teardown()
        }

        fn processes(&self) -> Vec<PlacedProcess> {
            self.inner.processes()
        }

        fn check_alive(&mut self) -> Result<()> {
            self.inner.check_alive()
        }

        fn counters(&mut self) -> Result<Option<DeviceCounters>> {
            self.inner.counters()
        }

        fn traffic_tags(&self) -> Option<[Vec<VlanSpec>; 2]> {
            Some(evpl_tags())
        }
    };
}

/// `vecswitch-evpl`: vecswitch's EVPL between sub-interfaces (module doc).
#[derive(Debug)]
pub struct VecswitchEvplDut {
    inner: VecswitchDut,
    bin: std::path::PathBuf,
}

impl VecswitchEvplDut {
    pub fn new(bin: std::path::PathBuf) -> VecswitchEvplDut {
        VecswitchEvplDut {
            inner: VecswitchDut::new(bin.clone(), Mode::Xconnect),
            bin,
        }
    }
}

impl Dut for VecswitchEvplDut {
    fn name(&self) -> &str {
        "vecswitch-evpl"
    }

    fn describe(&self) -> String {
        format!(
            "{}; EVPL: UNI dot1q {CVLAN}, push dot1ad {SVLAN}; ENNI dot1ad {SVLAN} inner-dot1q {CVLAN}",
            self.inner.describe()
        )
    }

    /// Starts the switch with its ports and no service, then reloads the config with the EVPL.
    fn setup(&mut self, w: &Wiring) -> Result<()> {
        let (uni, enni) = uni_enni(self.name(), w)?;
        let bare = Wiring {
            pairs: Vec::new(),
            ..w.clone()
        };
        self.inner.setup(&bare)?;
        let ctl = w.run_dir.join("dut.ctl");
        let path = w.run_dir.join("dut.toml");
        let mut c = config(&w.dut_ports, &[], Mode::Xconnect, &ctl, Some(w.cores.dut));
        with_evpl(&mut c, &uni, &enni);
        write_and_reload(&self.bin, &ctl, &path, &to_toml(&c), 20)
    }

    evpl_delegation!();
}

/// `ovs-evpl`: OVS's Q-in-Q on a learning bridge (module doc).
#[derive(Debug)]
pub struct OvsEvplDut {
    inner: OvsDut,
}

impl Default for OvsEvplDut {
    fn default() -> OvsEvplDut {
        OvsEvplDut::new()
    }
}

impl OvsEvplDut {
    pub fn new() -> OvsEvplDut {
        OvsEvplDut {
            inner: OvsDut::new().learning(),
        }
    }
}

impl Dut for OvsEvplDut {
    fn name(&self) -> &str {
        "ovs-evpl"
    }

    fn describe(&self) -> String {
        format!(
            "{}; EVPL: UNI dot1q-tunnel tag {SVLAN} cvlans {CVLAN}, ENNI trunk {SVLAN}, vlan-limit 2",
            self.inner.describe()
        )
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        uni_enni(self.name(), w)?;
        self.inner.setup(w)?;
        let ifname = |i: usize| match &w.dut_ports[i] {
            PortEnd::Veth { ifname, .. } => ifname.clone(),
            p => p.name().to_string(),
        };
        let db = format!("--db=unix:{}", w.run_dir.join("ovs/db.sock").display());
        let vsctl = |args: &[&str]| {
            let mut a = vec![db.as_str(), "--timeout=20"];
            a.extend_from_slice(args);
            crate::cmd::run("ovs-vsctl", &a)
        };
        vsctl(&["set", "Open_vSwitch", ".", "other_config:vlan-limit=2"])?;
        vsctl(&[
            "set",
            "port",
            &ifname(0),
            "vlan_mode=dot1q-tunnel",
            &format!("tag={SVLAN}"),
            &format!("cvlans={CVLAN}"),
        ])?;
        vsctl(&[
            "set",
            "port",
            &ifname(1),
            "vlan_mode=trunk",
            &format!("trunks={SVLAN}"),
        ])?;
        Ok(())
    }

    evpl_delegation!();

    fn flush_mac_table(&mut self) -> Result<()> {
        self.inner.flush_mac_table()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn evpl_config_is_the_examples_service() {
        let w = crate::dut::test_wiring();
        let mut c = config(
            &w.dut_ports,
            &[],
            Mode::Xconnect,
            Path::new("/r/c"),
            Some(1),
        );
        with_evpl(&mut c, "phy0", "phy1");
        crate::dut::vecswitch::assert_valid_round_trip(&c);
        let mut c = Config::default();
        with_evpl(&mut c, "dut0", "dut1");
        let s = c.to_toml();
        for line in [
            "parent = \"dut0\"\nid = 10\nencap = \"dot1q 10 exact-match\"\ntag-rewrite = \"push dot1ad 300\"",
            "parent = \"dut1\"\nid = 300\nencap = \"dot1ad 300 inner-dot1q 10\"",
            "[[xconnect]]\nports = [\"dut0.10\", \"dut1.300\"]",
        ] {
            assert!(s.contains(line), "{s}");
        }
        let [uni, enni] = evpl_tags();
        assert_eq!(uni, vec![VlanSpec::dot1q(10)]);
        assert_eq!(enni, vec![VlanSpec::dot1ad(300), VlanSpec::dot1q(10)]);
        // A 64-byte frame still carries the signature under two tags.
        assert!(vecswitch_gen::signature::min_frame_size(2, false) <= 64);
    }
}
