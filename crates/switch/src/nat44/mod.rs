//! NAT44 endpoint-dependent masquerade (RFC 4787 behaviour as FD.io VPP's `nat44-ed` implements
//! it; RFC 7857 timeouts): inside hosts share the outside address of the outside interface.
//!
//! ```text
//! inside iface ─► ip4-input ─► ip4-lookup ─► ip4-rewrite ─► (interface-output arc of the
//!                                                            outside iface: nat44-in2out) ─► out
//! outside iface ─► ip4-input ─► (ip4-unicast arc: nat44-out2in) ─► ip4-lookup ─► … ─► inside
//! ```
//!
//! - Nodes, one per file: [`in2out`] (`nat44-in2out`, an `interface-output` arc feature of the
//!   outside interfaces — the source is rewritten after routing, as the kernel's masquerade does
//!   in POSTROUTING; only packets received on an inside interface are translated) and [`out2in`]
//!   (`nat44-out2in`, an `ip4-unicast` arc feature of the outside interfaces: the destination is
//!   rewritten before `ip4-lookup` routes the packet to the inside host).
//! - Tables ([`Nat44State`], the `nat44` field of `SwitchState`): the interface roles, the
//!   settings and the [`session::SessionTable`] (sessions keyed both ways by the 6-tuple, with
//!   both rewrites and their precomputed RFC 1624 checksum deltas, TCP state for the timeouts).
//! - The byte work: [`translate`] (rewrites of TCP, UDP, ICMP echo and ICMP errors with their
//!   embedded header).
//! - Control: [`control`] (`Switch::nat44_*`, `show nat44 sessions|summary` as typed data).
//!
//! **Port allocation** (per inside host, [`session::SessionTable::allocate`]): the mapping is
//! endpoint-dependent (the out2in key holds the remote endpoint), so an outside port is unique per
//! (protocol, remote address, remote port) only. A new session first tries the inside port itself
//! (port preservation, as Linux's `nf_nat` does when the tuple stays unique); if that outside
//! tuple is taken, it walks the dynamic range 1024–65535 from a start derived from the inside host
//! and port (a hash, so that hosts spread over the range) in steps of one, trying at most
//! [`session::MAX_PORT_TRIES`] ports; none free → the packet is dropped as `out-of-ports`. A host
//! may hold at most `max_sessions_per_host` sessions (`host-session-limit`), the switch
//! `max_sessions` (`session-limit`): exhaustion is a counted drop, never a crash.

pub mod config;
pub mod control;
pub mod ctl;
pub mod in2out;
pub mod out2in;
pub mod session;
pub mod testing;
pub mod translate;

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use vecswitch_graph::{Graph, GraphError};

use crate::feature::{Feature, Stage};
use crate::interface::{SwIfIdx, OUTPUT_ARC};
use crate::ip::IP4_UNICAST_ARC;
use crate::state::SwitchState;

pub use in2out::Nat44In2Out;
pub use out2in::Nat44Out2In;
pub use session::{Session, SessionTable, TcpState};

/// Position of `nat44-in2out` on the output arc (before `mtu-check` at 100).
pub const IN2OUT_ORDER: u16 = 50;
/// Position of `nat44-out2in` on the `ip4-unicast` arc (before the firewall).
pub const OUT2IN_ORDER: u16 = 10;

/// The NAT44 feature as registered in the graph.
#[derive(Debug, Clone, Copy)]
pub struct Nat44Feature;

impl Feature for Nat44Feature {
    fn name(&self) -> &'static str {
        "nat44"
    }

    fn register(&self, graph: &mut Graph<SwitchState>, stage: Stage) -> Result<(), GraphError> {
        match stage {
            Stage::Forward => {
                graph.add(Box::new(Nat44Out2In));
                graph.add_feature(IP4_UNICAST_ARC, out2in::NAME, OUT2IN_ORDER)?;
            }
            Stage::Output => {
                graph.add(Box::new(Nat44In2Out));
                graph.add_feature(OUTPUT_ARC, in2out::NAME, IN2OUT_ORDER)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn timers(&self, switch: &mut crate::Switch) {
        switch.nat44_expire_step();
    }

    fn shows(&self) -> &'static [crate::ctl::Show] {
        ctl::SHOWS
    }
}

/// The role of an interface for NAT44.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Its hosts are translated when their packets leave by an outside interface.
    Inside,
    /// Packets leaving by it from an inside interface get its outside address; packets arriving
    /// for that address are translated back.
    Outside,
}

/// NAT44 timeouts and limits (the feature's serde config; defaults: RFC 7857 §2 and REQ-5 of
/// RFC 5382 / REQ-8 of RFC 4787).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Nat44Settings {
    /// Idle timeout of an established TCP session, seconds (RFC 7857 §3.2: 2 h 4 min).
    pub tcp_established_s: u32,
    /// Idle timeout of a TCP session that is opening or closing, seconds (RFC 7857 §3.2: 4 min).
    pub tcp_transitory_s: u32,
    /// Idle timeout of a UDP session, seconds (RFC 4787 REQ-5: at least 2 min; 5 min recommended).
    pub udp_s: u32,
    /// Idle timeout of an ICMP query session, seconds (RFC 5508 REQ-1: 60 s).
    pub icmp_s: u32,
    /// Most sessions at once; beyond it new sessions are dropped (`session-limit`).
    pub max_sessions: u32,
    /// Most sessions of one inside host (`host-session-limit`).
    pub max_sessions_per_host: u32,
}

impl Default for Nat44Settings {
    fn default() -> Self {
        Nat44Settings {
            tcp_established_s: 7440,
            tcp_transitory_s: 240,
            udp_s: 300,
            icmp_s: 60,
            max_sessions: 65_536,
            max_sessions_per_host: 16_384,
        }
    }
}

/// Everything the NAT44 nodes read and write.
#[derive(Debug, Default)]
pub struct Nat44State {
    pub settings: Nat44Settings,
    /// Role of each interface, by interface index (`None`: NAT does not look at it).
    pub roles: Vec<Option<Role>>,
    /// The outside address of each outside interface, by interface index.
    pub outside_addr: Vec<Option<Ipv4Addr>>,
    pub sessions: SessionTable,
    /// Switch time of the last expiry sweep step.
    pub last_sweep_ns: u64,
}

impl Nat44State {
    /// The role of interface `i`.
    #[inline]
    pub fn role(&self, i: SwIfIdx) -> Option<Role> {
        self.roles.get(i as usize).copied().flatten()
    }

    /// The outside address of interface `i`, if it is an outside interface.
    #[inline]
    pub fn outside_addr(&self, i: SwIfIdx) -> Option<Ipv4Addr> {
        self.outside_addr.get(i as usize).copied().flatten()
    }

    /// Whether `a` is the outside address of some outside interface.
    #[inline]
    pub fn is_outside_addr(&self, a: Ipv4Addr) -> bool {
        self.outside_addr.contains(&Some(a))
    }

    /// The idle timeout of a session, nanoseconds.
    #[inline]
    pub fn timeout_ns(&self, s: &Session) -> u64 {
        let st = &self.settings;
        let secs = match s.key.proto {
            translate::TCP if s.tcp == TcpState::Established => st.tcp_established_s,
            translate::TCP => st.tcp_transitory_s,
            translate::UDP => st.udp_s,
            _ => st.icmp_s,
        };
        secs as u64 * 1_000_000_000
    }
}
