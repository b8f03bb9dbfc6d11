//! `ovs-router`: Open vSwitch as an IPv4 router programmed with OpenFlow, one rule per route —
//! how seed 000's OVS-DPDK forwarded to N destinations — with the address plan of
//! [`crate::dut::router`].
//!
//! It runs OVS exactly as the `ovs` driver does ([`OvsDut`]: private daemons, userspace `netdev`
//! datapath, afxdp ports with the system-port fallback) and then replaces the bridge's
//! port-to-port rules with a router's:
//!
//! ```text
//! priority=0,actions=drop
//! priority=10,ip,in_port=IN,dl_dst=IN_MAC,nw_dst=16.0.0.i,actions=mod_dl_src:OUT_MAC,mod_dl_dst:NH_MAC,dec_ttl,output:OUT
//! ```
//!
//! `IN_MAC`/`OUT_MAC` are the DUT's veth ends' MACs, `NH_MAC` the generator's receiving port's
//! (the static neighbour; OVS resolves nothing). Scale: [`Scale::Routes`] writes the rules of the
//! new routes to a file and loads them as one OpenFlow 1.4 bundle ([`OvsDut::load_flows`]:
//! `ovs-ofctl -O OpenFlow14 --bundle add-flows`, within [`crate::dut::ovs::LOAD_BUDGET`]; a
//! smaller point deletes every route rule, `del-flows BRIDGE ip,in_port=IN`, and loads its set
//! anew), then checks that `ovs-ofctl dump-aggregate BRIDGE ip,in_port=IN` counts N; the time
//! of each load and vswitchd's memory after it are in the placement note
//! ([`OvsRouterDut::loads`]). Points above [`crate::dut::ovs::MAX_RULES`] fail at once with the
//! reason (docs/TESTBED.md, "OVS's tables").
//! OVS's own datapath flow limit (`other_config:flow-limit`, default 200,000 megaflows) is left
//! at its default, as the seed's OVS had it: past it, OVS's revalidators evict flows and frames
//! take the slow path — part of what the sweep measures.

use std::fmt::Write as _;

use vecswitch_gen::StreamSpec;

use crate::dut::counters::DeviceCounters;
use crate::dut::ovs::{check_rules, load_list, OvsDut, RuleCheck, RuleLoad};
use crate::dut::router::{self, mac_text, route_dst};
use crate::dut::{Dut, Scale};
use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::topology::{PortEnd, Wiring};

/// Which bridge and ports the rules use, and the MACs they rewrite to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterPorts {
    pub bridge: String,
    pub ingress: String,
    pub egress: String,
    pub ingress_mac: [u8; 6],
    pub egress_mac: [u8; 6],
    pub next_hop_mac: [u8; 6],
}

/// The OpenFlow rule of route `i`.
pub fn route_rule(p: &RouterPorts, i: u32) -> String {
    format!(
        "priority=10,ip,in_port={},dl_dst={},nw_dst={},actions=mod_dl_src:{},mod_dl_dst:{},dec_ttl,output:{}",
        p.ingress,
        mac_text(p.ingress_mac),
        route_dst(i),
        mac_text(p.egress_mac),
        mac_text(p.next_hop_mac),
        p.egress
    )
}

/// The `add-flows` file taking the table from `from` to `to` routes (empty when shrinking).
pub fn add_rules(p: &RouterPorts, from: u32, to: u32) -> String {
    let mut s = String::with_capacity(160 * to.saturating_sub(from) as usize);
    for i in from..to {
        let _ = writeln!(s, "{}", route_rule(p, i));
    }
    s
}

/// The `del-flows` match of every route rule (non-strict: the rules are more specific).
pub fn all_routes_match(p: &RouterPorts) -> String {
    format!("ip,in_port={}", p.ingress)
}

/// The OVS router DUT.
#[derive(Debug, Default)]
pub struct OvsRouterDut {
    ovs: OvsDut,
    wiring: Option<Wiring>,
    ports: Option<RouterPorts>,
    routes: u32,
    loads: Vec<RuleLoad>,
}

impl OvsRouterDut {
    pub fn new() -> OvsRouterDut {
        OvsRouterDut::default()
    }

    /// Every rule load so far, in order.
    pub fn loads(&self) -> &[RuleLoad] {
        &self.loads
    }

    /// The ports and MACs the rules use, once set up.
    pub fn router_ports(&self) -> Option<&RouterPorts> {
        self.ports.as_ref()
    }

    fn set_routes(&mut self, n: u32) -> Result<()> {
        let n = router::check_routes(self.name(), n)?;
        let p = self.ports.clone().ok_or_else(|| Error::Invalid {
            field: "ovs-router state",
            value: "not set up".into(),
            expected: "configure_scale after setup".into(),
        })?;
        if n == self.routes {
            return Ok(());
        }
        check_rules(self.name(), "route rules", n)?;
        let matching = all_routes_match(&p);
        let from = if n < self.routes {
            self.ovs.ofctl(&["del-flows", &p.bridge, &matching])?;
            0
        } else {
            self.routes
        };
        let load = self.ovs.load_flows(
            &p.bridge,
            "routes.flows",
            &add_rules(&p, from, n),
            &RuleCheck {
                matching: &matching,
                expect: u64::from(n),
                what: "route",
            },
        )?;
        eprintln!("{}: {load}", self.name());
        self.loads.push(load);
        self.routes = n;
        Ok(())
    }
}

impl Dut for OvsRouterDut {
    fn name(&self) -> &str {
        "ovs-router"
    }

    fn describe(&self) -> String {
        format!("{}; one OpenFlow rule per route", self.ovs.describe())
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        let (a, b) = router::routed_pair(self.name(), w)?;
        let ingress_mac = router::dut_veth_mac(self.name(), w, a)?;
        let egress_mac = router::dut_veth_mac(self.name(), w, b)?;
        self.ovs.setup(w)?;
        self.wiring = Some(w.clone());
        let ifname = |i: usize| match &w.dut_ports[i] {
            PortEnd::Veth { ifname, .. } => ifname.clone(),
            p => p.name().to_string(),
        };
        let bridge = self
            .ovs
            .bridges()
            .first()
            .cloned()
            .ok_or_else(|| Error::Invalid {
                field: "ovs state",
                value: "no bridge after setup".into(),
                expected: "one bridge for the routed pair".into(),
            })?;
        let p = RouterPorts {
            bridge,
            ingress: ifname(a),
            egress: ifname(b),
            ingress_mac,
            egress_mac,
            next_hop_mac: router::generator_mac(w, b),
        };
        self.ovs.ofctl(&["del-flows", &p.bridge])?;
        self.ovs
            .ofctl(&["add-flow", &p.bridge, "priority=0,actions=drop"])?;
        self.ports = Some(p);
        self.routes = 0;
        self.set_routes(1)
    }

    fn teardown(&mut self) -> Result<()> {
        self.ports = None;
        self.wiring = None;
        self.routes = 0;
        self.ovs.teardown()
    }

    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        match scale {
            Scale::Routes(n) => self.set_routes(n),
            other => Err(Error::Unsupported {
                dut: self.name().into(),
                what: format!("{other:?}"),
                why: "ovs-router scales routes (scale kind `routes`); MAC entries are ovs's".into(),
            }),
        }
    }

    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        let (Some(w), Some(p)) = (&self.wiring, &self.ports) else {
            return Ok(());
        };
        let pair = router::routed_pair(self.name(), w)?;
        router::shape(streams, pair, p.ingress_mac, self.routes.max(1))
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        self.ovs
            .processes()
            .into_iter()
            .map(|mut p| {
                if p.name == "dut-ovs-vswitchd" {
                    p.note = format!(
                        "{}; rule loads (ovs-ofctl --bundle add-flows): {}",
                        p.note,
                        load_list(&self.loads)
                    );
                }
                p
            })
            .collect()
    }

    fn check_alive(&mut self) -> Result<()> {
        self.ovs.check_alive()
    }

    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        self.ovs.counters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports() -> RouterPorts {
        RouterPorts {
            bridge: "br0".into(),
            ingress: "dut0".into(),
            egress: "dut1".into(),
            ingress_mac: [2, 0, 0, 0, 0, 0xa0],
            egress_mac: [2, 0, 0, 0, 0, 0xa1],
            next_hop_mac: [2, 0, 0, 0, 0, 2],
        }
    }

    #[test]
    fn rules_route_rewrite_and_decrement_ttl() {
        let p = ports();
        assert_eq!(
            route_rule(&p, 3),
            "priority=10,ip,in_port=dut0,dl_dst=02:00:00:00:00:a0,nw_dst=16.0.0.3,\
             actions=mod_dl_src:02:00:00:00:00:a1,mod_dl_dst:02:00:00:00:00:02,dec_ttl,output:dut1"
        );
        assert_eq!(add_rules(&p, 0, 2).lines().count(), 2);
        assert_eq!(add_rules(&p, 2, 1), "");
        assert_eq!(all_routes_match(&p), "ip,in_port=dut0");
    }

    #[test]
    fn flow_count_parses() {
        use crate::dut::ovs::parse_flow_count;
        let t = "NXST_AGGREGATE reply (xid=0x4): packet_count=0 byte_count=0 flow_count=2001\n";
        assert_eq!(parse_flow_count(t), Some(2001));
        assert_eq!(parse_flow_count("nothing"), None);
    }
}
