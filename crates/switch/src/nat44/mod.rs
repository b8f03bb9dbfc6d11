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
//!   both rewrites and their precomputed RFC 1624 checksum deltas, TCP state for the timeouts),
//!   found through two [`index::Index`]es (bucketised hash tables of 16-byte entries). Both
//!   nodes look sessions up in stages over the vector ([`staged`]: hash and load every bucket,
//!   then every session, then translate), so that at 1M sessions the cache misses overlap.
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
pub mod hairpin;
pub mod in2out;
pub mod index;
pub mod out2in;
pub mod session;
pub(crate) mod staged;
pub mod testing;
pub mod translate;

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use vecswitch_graph::{Graph, GraphError};

use crate::feature::{Feature, Stage};
use crate::interface::{SwIfIdx, OUTPUT_ARC};
use crate::ip::IP4_UNICAST_ARC;
use crate::state::SwitchState;

pub use hairpin::Nat44Hairpin;
pub use in2out::Nat44In2Out;
pub use out2in::Nat44Out2In;
pub use session::{Session, SessionTable, TcpState};

/// Position of `nat44-in2out` on the output arc (before `mtu-check` at 100).
pub const IN2OUT_ORDER: u16 = 50;
/// Position of `nat44-out2in` on the `ip4-unicast` arc (before the firewall).
pub const OUT2IN_ORDER: u16 = 10;
/// Position of `nat44-hairpin` on the `ip4-unicast` arc of the inside interfaces (after the
/// firewall at 20: the inside ACL sees the packet as the host sent it).
pub const HAIRPIN_ORDER: u16 = 30;

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
                graph.add(Box::new(Nat44Hairpin));
                graph.add_feature(IP4_UNICAST_ARC, hairpin::NAME, HAIRPIN_ORDER)?;
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
    /// Most sessions at once; beyond it new sessions are dropped (`session-limit`). At most
    /// [`index::MAX_SLOTS`] (16,777,215: the session index's 24 bits).
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
    /// The pool of outside addresses (empty: each outside interface masquerades to its own).
    pub pool: AddrPool,
    /// Hairpinning on (`nat44-hairpin` enabled on the inside interfaces).
    pub hairpinning: bool,
    pub sessions: SessionTable,
    /// Switch time of the last expiry sweep step.
    pub last_sweep_ns: u64,
}

/// A pool of outside addresses: inclusive ranges, in the order configured, without overlaps.
/// An inside host's address is chosen by a hash of the host's address (paired pooling, RFC 4787
/// §4.1 REQ-2: every session of one inside host has the same outside address), see
/// [`AddrPool::for_host`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddrPool {
    ranges: Vec<(u32, u32)>,
    total: u64,
}

impl AddrPool {
    /// A pool of the ranges `(first, last)` (each `first <= last`, none overlapping another:
    /// `[nat44]`'s validation checks both; a range that breaks them is skipped).
    pub fn new(ranges: &[(Ipv4Addr, Ipv4Addr)]) -> AddrPool {
        let mut p = AddrPool::default();
        for &(a, b) in ranges {
            let (a, b) = (u32::from(a), u32::from(b));
            if a > b || p.ranges.iter().any(|&(x, y)| a <= y && x <= b) {
                continue;
            }
            p.ranges.push((a, b));
            p.total += (b - a) as u64 + 1;
        }
        p
    }

    /// Addresses in the pool.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether the pool is empty (masquerade to the interfaces' addresses).
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The ranges, as configured.
    pub fn ranges(&self) -> impl Iterator<Item = (Ipv4Addr, Ipv4Addr)> + '_ {
        self.ranges
            .iter()
            .map(|&(a, b)| (Ipv4Addr::from(a), Ipv4Addr::from(b)))
    }

    /// Whether `a` is in the pool.
    #[inline]
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        let a = u32::from(a);
        self.ranges.iter().any(|&(x, y)| x <= a && a <= y)
    }

    /// The outside address of inside host `host`: the `n`-th address of the pool (ranges in
    /// order), `n` = MurmurHash3's 64-bit finaliser of the host's address modulo the pool's size.
    /// Unseeded, so a host keeps its address across restarts and on every switch with the same
    /// pool. `None` for an empty pool.
    #[inline]
    pub fn for_host(&self, host: Ipv4Addr) -> Option<Ipv4Addr> {
        if self.total == 0 {
            return None;
        }
        let mut x = u32::from(host) as u64;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^= x >> 33;
        let mut n = x % self.total;
        for &(a, b) in &self.ranges {
            let size = (b - a) as u64 + 1;
            if n < size {
                return Some(Ipv4Addr::from(a + n as u32));
            }
            n -= size;
        }
        None
    }
}

/// What [`Nat44State::in2out_session`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Made {
    /// The session's slot.
    pub slot: u32,
    /// It was made now.
    pub created: bool,
    /// The session found was idle past its timeout and was removed first.
    pub expired: bool,
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

    /// Whether `a` is an outside address: of some outside interface, or in the pool.
    #[inline]
    pub fn is_outside_addr(&self, a: Ipv4Addr) -> bool {
        self.outside_addr.contains(&Some(a)) || self.pool.contains(a)
    }

    /// Whether `a` is the address of some outside interface (the switch's own).
    #[inline]
    pub fn is_interface_addr(&self, a: Ipv4Addr) -> bool {
        self.outside_addr.contains(&Some(a))
    }

    /// The pool address of inside host `host` ([`AddrPool::for_host`]), if there is a pool.
    #[inline]
    pub fn pool_addr_for(&self, host: Ipv4Addr) -> Option<Ipv4Addr> {
        self.pool.for_host(host)
    }

    /// The outside address a session of inside host `host` leaving by interface `tx` gets: the
    /// host's pool address, or without a pool `tx`'s own (masquerade); `None` if `tx` is not an
    /// outside interface.
    #[inline]
    pub fn out_addr_for(&self, tx: SwIfIdx, host: Ipv4Addr) -> Option<Ipv4Addr> {
        let own = self.outside_addr(tx)?;
        Some(self.pool.for_host(host).unwrap_or(own))
    }

    /// The session of inside flow `key`, whose lookup found `found`: a session idle past its
    /// timeout is removed (even if the sweep has not reached it) and one is made behind `out`
    /// if there is none.
    #[inline]
    pub fn in2out_session(
        &mut self,
        key: session::FlowKey,
        found: Option<u32>,
        out: Ipv4Addr,
        now: u64,
    ) -> Result<Made, session::CreateError> {
        let mut expired = false;
        if let Some(i) = found {
            match self.sessions.get(i).copied() {
                Some(s) if now.saturating_sub(s.last_ns) > self.timeout_ns(&s) => {
                    self.sessions.remove(i);
                    self.sessions.expired += 1;
                    expired = true;
                }
                Some(_) => {
                    return Ok(Made {
                        slot: i,
                        created: false,
                        expired,
                    })
                }
                None => {}
            }
        }
        let st = self.settings;
        let slot =
            self.sessions
                .create(key, out, st.max_sessions, st.max_sessions_per_host, now)?;
        Ok(Made {
            slot,
            created: true,
            expired,
        })
    }

    /// The idle timeout of a session, nanoseconds.
    #[inline]
    pub fn timeout_ns(&self, s: &Session) -> u64 {
        self.settings.timeout_ns(s)
    }
}

impl Nat44Settings {
    /// The idle timeout of session `s`, nanoseconds.
    #[inline]
    pub fn timeout_ns(&self, s: &Session) -> u64 {
        let secs = match s.key.proto {
            translate::TCP if s.tcp == TcpState::Established => self.tcp_established_s,
            translate::TCP => self.tcp_transitory_s,
            translate::UDP => self.udp_s,
            _ => self.icmp_s,
        };
        secs as u64 * 1_000_000_000
    }
}
