//! A stateful IPv4 and IPv6 firewall: per interface, an ordered rule list ([`acl::Acl`], IPv4 and
//! IPv6 rules together) applied to the packets the interface receives, with connection tracking
//! ([`conntrack::Conntrack`], one table for both families).
//!
//! ```text
//! ip4-input ─► (ip4-unicast arc: nat44-out2in, firewall-input) ─► ip4-lookup
//! ip6-input ─► (ip6-unicast arc: firewall-input6) ─────────────► ip6-lookup
//! ```
//!
//! - Nodes: [`firewall_input`] (`firewall-input`, an `ip4-unicast` arc feature of every interface
//!   with an ACL, after `nat44-out2in`: on an outside interface it sees the inside addresses) and
//!   [`firewall_input6`] (`firewall-input6`, its `ip6-unicast` twin: the same decision after an
//!   IPv6 parse that walks the extension headers).
//!   A packet of a tracked connection (either direction: *established*) or an ICMP error about
//!   one (*related*) passes before the rules — nftables' `ct state established,related accept`;
//!   any other packet meets the rules in order, the first match deciding (`deny`, `permit`,
//!   `permit-reflect`: permit and track the connection), or the ACL's default action.
//! - Tables ([`FirewallState`], the `firewall` field of `SwitchState`): the ACL of each
//!   interface with its per-rule hit counters, the conntrack table and the settings.
//! - Control: [`control`] (`Switch::firewall_*`, `show firewall` as typed data).
//!
//! "Block every connection attempt from outside" is an ACL on the outside interface whose
//! default is `deny`, with `permit-reflect` rules on the inside one: replies to the inside's
//! connections are established, anything else from outside meets the default.
//!
//! Rules match source/destination prefixes, protocol, TCP/UDP port ranges and ICMP type
//! ([`acl::Rule`]); the lookup goes by mask shape ([`classify::Classifier`], VPP's hash ACL
//! idea), the linear walk ([`acl::Acl::classify`]) is kept as the reference. Non-first fragments
//! carry no ports: they are dropped (`fragment`), as are L4 headers shorter than their fixed
//! part (`bad-l4-header`).
//!
//! IPS mode ([`ips`], optional per interface): the payload of what the firewall lets through is
//! searched for a set of byte patterns (Aho-Corasick); a match is dropped (`ips-match`) and
//! counted per pattern.

pub mod acl;
pub mod classify;
pub mod config;
pub mod conntrack;
pub mod control;
pub mod ctl;
pub mod firewall_input;
pub mod firewall_input6;
pub mod ips;
pub mod testing;

use serde::{Deserialize, Serialize};
use vecswitch_graph::{Graph, GraphError};

use crate::feature::{Feature, Stage};
use crate::interface::SwIfIdx;
use crate::ip::{IP4_UNICAST_ARC, IP6_UNICAST_ARC};
use crate::state::SwitchState;

pub use acl::{Acl, Action, PacketKey, PortRange, Proto, Rule};
pub use firewall_input::FirewallInput;
pub use firewall_input6::FirewallInput6;

/// Position of `firewall-input` on the `ip4-unicast` arc (after `nat44-out2in` at 10), and of
/// `firewall-input6` on `ip6-unicast`.
pub const ORDER: u16 = 20;

/// The firewall as registered in the graph.
#[derive(Debug, Clone, Copy)]
pub struct FirewallFeature;

impl Feature for FirewallFeature {
    fn name(&self) -> &'static str {
        "firewall"
    }

    fn register(&self, graph: &mut Graph<SwitchState>, stage: Stage) -> Result<(), GraphError> {
        if stage == Stage::Forward {
            graph.add(Box::new(FirewallInput));
            graph.add_feature(IP4_UNICAST_ARC, firewall_input::NAME, ORDER)?;
            graph.add(Box::new(FirewallInput6));
            graph.add_feature(IP6_UNICAST_ARC, firewall_input6::NAME, ORDER)?;
        }
        Ok(())
    }

    fn timers(&self, switch: &mut crate::Switch) {
        switch.firewall_expire_step();
    }

    fn shows(&self) -> &'static [crate::ctl::Show] {
        ctl::SHOWS
    }
}

/// Conntrack timeouts and size (the feature's serde config; the timeouts are NAT44's RFC 7857
/// values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FirewallSettings {
    /// Idle timeout of a TCP connection that has seen its reply, seconds.
    pub tcp_established_s: u32,
    /// Idle timeout of a TCP connection still opening, seconds.
    pub tcp_transitory_s: u32,
    pub udp_s: u32,
    pub icmp_s: u32,
    /// Most tracked connections; a `permit-reflect` beyond it drops the packet
    /// (`conntrack-full`).
    pub max_connections: u32,
}

impl Default for FirewallSettings {
    fn default() -> Self {
        FirewallSettings {
            tcp_established_s: 7440,
            tcp_transitory_s: 240,
            udp_s: 300,
            icmp_s: 60,
            max_connections: 65_536,
        }
    }
}

impl FirewallSettings {
    /// The idle timeout of connection `c`, nanoseconds.
    pub fn timeout_ns(&self, c: &conntrack::Conn) -> u64 {
        let s = match c.tuple.proto {
            6 if c.replied => self.tcp_established_s,
            6 => self.tcp_transitory_s,
            17 => self.udp_s,
            _ => self.icmp_s,
        };
        s as u64 * 1_000_000_000
    }
}

/// An interface's ACL with its counters.
#[derive(Debug, Clone)]
pub struct InterfaceAcl {
    pub acl: Acl,
    /// The ACL compiled for the lookup by mask shape.
    pub classifier: classify::Classifier,
    /// Packets each rule decided, by rule index.
    pub hits: Vec<u64>,
    /// Packets the default action decided.
    pub default_hits: u64,
    /// IPS mode: the patterns searched in what the ACL lets through ([`ips`]).
    pub ips: Option<ips::Ips>,
}

/// Everything `firewall-input` reads and writes.
#[derive(Debug, Default)]
pub struct FirewallState {
    pub settings: FirewallSettings,
    /// The ACL of each interface, by interface index.
    pub acls: Vec<Option<InterfaceAcl>>,
    pub conntrack: conntrack::Conntrack,
    /// Switch time of the last expiry sweep step.
    pub last_sweep_ns: u64,
}

impl FirewallState {
    /// The ACL of interface `i`.
    #[inline]
    pub fn acl(&self, i: SwIfIdx) -> Option<&InterfaceAcl> {
        self.acls.get(i as usize)?.as_ref()
    }
}
