//! The LAG case of seed 001 as DUTs: two 2-port groups with an E-Line between them, on topology
//! `phy2phy-lag` ([`crate::lag`]: the tester's LACP groups behind each generator port).
//!
//! | driver | name | how |
//! |---|---|---|
//! | [`VecswitchLagDut`] | `vecswitch-lag` | `vecswitch-xconnect`'s AF_PACKET ports on the four member ends, no service; then a reload adds `[[bond]]` `lag0` (`dut0`, `dut1`) and `lag1` (`dut2`, `dut3`), `mode = "lacp"`, `hash = "l34"`, `lacp_rate = "fast"`, and an `[[xconnect]]` `lag0` ↔ `lag1` |
//! | [`OvsLagDut`] | `ovs-lag` | `ovs`'s daemons; one `netdev` bridge with `ovs-vsctl add-bond br0 bond0 dut0 dut1 lacp=active bond_mode=balance-tcp other_config:lacp-time=fast` (and `bond1` over `dut2`, `dut3`), afxdp members (system ports if OVS refuses afxdp), one `actions=NORMAL` flow |
//!
//! OVS's E-Line is a two-port learning bridge: OpenFlow's `output:` names an interface, and a bond
//! (one OVS port over several interfaces) is served only by the `NORMAL` action, which picks the
//! member by the bond's hash — so no port-to-port rules as `ovs` uses. With two ports, after the
//! learning trial the bridge forwards each frame to the other bond, as a cross-connect does.
//!
//! Both drivers spread the generator's streams over [`crate::lag::LAG_FLOWS`] UDP source ports
//! ([`Dut::shape_streams`]) and read their counters over the four members.

use vecswitch_gen::StreamSpec;

use crate::dut::counters::{sum_ports, DeviceCounters};
use crate::dut::ovs::OvsDut;
use vecswitch_control::config::{Config, XconnectConfig};

use crate::dut::vecswitch::{
    config, parse_internal_drops, parse_ports, parse_runtime, to_toml, write_and_reload, Mode,
    VecswitchDut,
};
use crate::dut::{version_line, Dut};
use crate::error::{Error, Result};
use crate::lag::{dut_groups, lacp_bond, spread_flows, MEMBERS};
use crate::placement::PlacedProcess;
use crate::topology::Wiring;

/// The DUT's bonds, one per group (vecswitch's; OVS's are `bond0`, `bond1`).
pub const BONDS: [&str; 2] = ["lag0", "lag1"];

/// `c` with the `[[bond]]`s of `vecswitch-lag` over `groups` ([`lacp_bond`]) and the
/// `[[xconnect]]` between them.
pub fn with_lag(c: &mut Config, groups: &[[String; MEMBERS]; 2]) {
    for (bond, members) in BONDS.iter().zip(groups) {
        c.bonds.push(lacp_bond(bond, members.to_vec()));
    }
    c.xconnects.push(XconnectConfig::both(BONDS[0], BONDS[1]));
}

/// The wiring without port pairs: the wrapped driver starts its ports (or daemons) and connects
/// nothing; the LAG driver adds the bonds.
fn bare(w: &Wiring) -> Wiring {
    Wiring {
        pairs: Vec::new(),
        ..w.clone()
    }
}

/// The four members' names, group A's first.
fn member_names(groups: &[[String; MEMBERS]; 2]) -> Vec<String> {
    groups.iter().flatten().cloned().collect()
}

/// `vecswitch-lag`: vecswitch's LACP bonds and an E-Line between them (module doc).
#[derive(Debug)]
pub struct VecswitchLagDut {
    inner: VecswitchDut,
    bin: std::path::PathBuf,
    /// Control socket and the members, once set up.
    state: Option<(std::path::PathBuf, Vec<String>)>,
}

impl VecswitchLagDut {
    pub fn new(bin: std::path::PathBuf) -> VecswitchLagDut {
        VecswitchLagDut {
            inner: VecswitchDut::new(bin.clone(), Mode::Xconnect),
            bin,
            state: None,
        }
    }

    fn show(&self, ctl: &std::path::Path, what: &str) -> Result<String> {
        crate::lag::ctl_show(&self.bin, ctl, what)
    }
}

/// An answer of the device the driver could not read.
fn unreadable(what: &str, answer: &str) -> Error {
    Error::Invalid {
        field: "LAG DUT counters",
        value: format!("{what}: {}", answer.chars().take(300).collect::<String>()),
        expected: "the counters of the four member ports".into(),
    }
}

impl Dut for VecswitchLagDut {
    fn name(&self) -> &str {
        "vecswitch-lag"
    }

    fn describe(&self) -> String {
        format!(
            "{}; LAG: bonds {} (dut0, dut1) and {} (dut2, dut3), LACP fast, hash l34, E-Line between them",
            self.inner.describe(),
            BONDS[0],
            BONDS[1]
        )
    }

    /// Starts the switch with the four member ports and no service, then reloads the config
    /// with the bonds and the E-Line.
    fn setup(&mut self, w: &Wiring) -> Result<()> {
        let groups = dut_groups(self.name(), w)?;
        self.inner.setup(&bare(w))?;
        let ctl = w.run_dir.join("dut.ctl");
        let path = w.run_dir.join("dut.toml");
        let mut c = config(&w.dut_ports, &[], Mode::Xconnect, &ctl, Some(w.cores.dut));
        with_lag(&mut c, &groups);
        write_and_reload(&self.bin, &ctl, &path, &to_toml(&c), 20)?;
        self.state = Some((ctl, member_names(&groups)));
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        self.state = None;
        self.inner.teardown()
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        self.inner.processes()
    }

    fn check_alive(&mut self) -> Result<()> {
        self.inner.check_alive()
    }

    /// The member ports (rx, tx, ring drops, tx-failed; LACPDUs included), the drop reasons of
    /// `show errors`, the poll loop's busy clocks and idle polls.
    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        let Some((ctl, members)) = self.state.clone() else {
            return Ok(None);
        };
        let ports = self.show(&ctl, "ports")?;
        let errors = self.show(&ctl, "errors")?;
        let runtime = self.show(&ctl, "runtime")?;
        let p = parse_ports(&ports).ok_or_else(|| unreadable("show ports", &ports))?;
        let internal =
            parse_internal_drops(&errors).ok_or_else(|| unreadable("show errors", &errors))?;
        let (busy, idle, polls) =
            parse_runtime(&runtime).ok_or_else(|| unreadable("show runtime", &runtime))?;
        let mut c = sum_ports(&p, &members, Some(internal))
            .ok_or_else(|| unreadable("show ports", &ports))?;
        c.busy_clocks = Some(busy);
        c.idle_polls = Some(idle);
        c.total_polls = Some(polls);
        Ok(Some(c))
    }

    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        spread_flows(streams);
        Ok(())
    }
}

/// The `&str`s of `v`, for the command runners.
fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `ovs-lag`: Open vSwitch's LACP bonds on a learning bridge (module doc).
#[derive(Debug, Default)]
pub struct OvsLagDut {
    inner: OvsDut,
    /// `(interface, type)` of each member: `afxdp` or `system`.
    member_types: Vec<(String, String)>,
}

impl OvsLagDut {
    pub fn new() -> OvsLagDut {
        OvsLagDut::default()
    }

    /// Whether OVS opened `ifname` (no error, an OpenFlow port number).
    fn opened(&self, ifname: &str) -> bool {
        let err = self
            .inner
            .vsctl(&["get", "interface", ifname, "error"])
            .unwrap_or_default();
        let ofport = self
            .inner
            .vsctl(&["get", "interface", ifname, "ofport"])
            .unwrap_or_default();
        let err = err.trim().trim_matches('"');
        (err.is_empty() || err == "[]") && ofport.trim().parse::<i64>().is_ok_and(|p| p > 0)
    }

    /// Adds bond `bond` over `members` with LACP, afxdp members if OVS takes them, else system
    /// ports; returns the type used.
    fn add_bond(&self, bond: &str, members: &[String; MEMBERS]) -> Result<&'static str> {
        let mut args: Vec<String> = vec!["add-bond".into(), "br0".into(), bond.into()];
        args.extend(members.iter().cloned());
        args.extend(
            [
                "lacp=active",
                "bond_mode=balance-tcp",
                "other_config:lacp-time=fast",
            ]
            .map(String::from),
        );
        let mut afxdp = args.clone();
        for m in members {
            afxdp.extend(["--", "set", "interface", m.as_str(), "type=afxdp"].map(String::from));
        }
        self.inner.vsctl(&refs(&afxdp))?;
        // OVS opens the interfaces when vswitchd reconfigures; vsctl waits for that.
        if members.iter().all(|m| self.opened(m)) {
            return Ok("afxdp");
        }
        tracing::warn!(bond, "afxdp members failed; falling back to system ports");
        self.inner.vsctl(&["del-port", "br0", bond])?;
        self.inner.vsctl(&refs(&args))?;
        Ok("system")
    }
}

impl Dut for OvsLagDut {
    fn name(&self) -> &str {
        "ovs-lag"
    }

    fn describe(&self) -> String {
        let types: Vec<String> = self
            .member_types
            .iter()
            .map(|(i, t)| format!("{i}:{t}"))
            .collect();
        format!(
            "{} (userspace netdev datapath; bonds bond0 (dut0, dut1) and bond1 (dut2, dut3), \
             lacp=active, lacp-time=fast, bond_mode=balance-tcp, on a learning bridge; members {})",
            version_line("ovs-vswitchd", &["--version"]),
            if types.is_empty() {
                "not set up".to_string()
            } else {
                types.join(" ")
            }
        )
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        let groups = dut_groups(self.name(), w)?;
        self.inner.setup(&bare(w))?;
        self.inner.vsctl(&[
            "add-br",
            "br0",
            "--",
            "set",
            "bridge",
            "br0",
            "datapath_type=netdev",
        ])?;
        for (g, members) in groups.iter().enumerate() {
            let t = self.add_bond(&format!("bond{g}"), members)?;
            for m in members {
                self.member_types.push((m.clone(), t.to_string()));
            }
        }
        self.inner.ofctl(&["del-flows", "br0"])?;
        self.inner.ofctl(&["add-flow", "br0", "actions=NORMAL"])?;
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        self.member_types.clear();
        self.inner.teardown()
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        self.inner.processes()
    }

    fn check_alive(&mut self) -> Result<()> {
        self.inner.check_alive()
    }

    /// The members' datapath counters (`dpctl/show -s`; afxdp members' drops from the kernel's
    /// counters of their veth ends, [`super::ovs::kernel_drops`]),
    /// `lost` as internal drops, the PMD and main threads' processing cycles.
    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        if self.member_types.is_empty() {
            return Ok(None);
        }
        let members: Vec<String> = self.member_types.iter().map(|(i, _)| i.clone()).collect();
        self.inner.datapath_counters(&members).map(Some)
    }

    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        spread_flows(streams);
        Ok(())
    }

    /// `ovs-appctl fdb/flush br0`.
    fn flush_mac_table(&mut self) -> Result<()> {
        self.inner.appctl(&["fdb/flush", "br0"]).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::PortEnd;
    use std::path::Path;

    #[test]
    fn vecswitch_lag_config_bonds_each_group_and_cross_connect_the_bonds() {
        let g = [
            ["dut0".to_string(), "dut1".to_string()],
            ["dut2".to_string(), "dut3".to_string()],
        ];
        let ports: Vec<PortEnd> = (0..4)
            .map(|i| PortEnd::Veth {
                name: format!("dut{i}"),
                netns: "ns".into(),
                ifname: format!("dut{i}"),
                mac: String::new(),
            })
            .collect();
        let mut c = config(
            &ports,
            &[],
            Mode::Xconnect,
            Path::new("/r/dut.ctl"),
            Some(1),
        );
        with_lag(&mut c, &g);
        crate::dut::vecswitch::assert_valid_round_trip(&c);
        let s = to_toml(&c);
        for want in [
            "[[bond]]\nname = \"lag0\"\nmode = \"lacp\"\nhash = \"l34\"\nlacp_rate = \"fast\"\n\
             members = [\"dut0\", \"dut1\"]\n",
            "[[bond]]\nname = \"lag1\"\nmode = \"lacp\"\nhash = \"l34\"\nlacp_rate = \"fast\"\n\
             members = [\"dut2\", \"dut3\"]\n",
            "[[xconnect]]\nports = [\"lag0\", \"lag1\"]\n",
        ] {
            assert!(s.contains(want), "missing {want:?} in\n{s}");
        }
        assert_eq!(c.bonds.len(), 2);
        assert_eq!(c.xconnects.len(), 1);
        assert_eq!(member_names(&g), ["dut0", "dut1", "dut2", "dut3"]);
    }

    #[test]
    fn lag_drivers_refuse_other_topologies() {
        let w = crate::dut::test_wiring();
        for mut d in [
            Box::new(VecswitchLagDut::new("/bin/true".into())) as Box<dyn Dut>,
            Box::new(OvsLagDut::new()),
        ] {
            let e = d.setup(&w).unwrap_err().to_string();
            assert!(e.contains("phy2phy-lag") && e.contains(d.name()), "{e}");
        }
    }
}
