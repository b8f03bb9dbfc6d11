//! NAT44 control: interface roles, settings, `show nat44 sessions|summary` (typed answers), the
//! expiry timer. Methods on [`Switch`].

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use vecswitch_buffer::huge::Memory;

use super::index::MAX_SLOTS;
use super::session::TcpState;
use super::translate::{ICMP, TCP, UDP};
use super::{hairpin, in2out, out2in, AddrPool, Nat44Settings, Role};
use crate::error::SwitchError;
use crate::interface::{SwIfIdx, OUTPUT_ARC};
use crate::ip::IP4_UNICAST_ARC;
use crate::runtime::Switch;

/// How often (switch time) the expiry sweep runs, and how many session slots each step visits.
pub const SWEEP_EVERY_NS: u64 = 100_000_000;
pub const SWEEP_SLOTS: usize = 4096;

/// Most addresses in the pool of outside addresses.
pub const MAX_POOL: u64 = 65_536;

/// One line of `show nat44 sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nat44SessionInfo {
    pub index: u32,
    /// `tcp`, `udp` or `icmp`.
    pub proto: String,
    pub inside: String,
    pub outside: String,
    pub remote: String,
    pub tcp_state: TcpState,
    /// Seconds since the last packet, and the idle timeout that applies now.
    pub idle_s: u64,
    pub timeout_s: u64,
    pub packets_in2out: u64,
    pub packets_out2in: u64,
}

/// `show nat44 sessions`: one page of the session table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nat44Sessions {
    pub total: usize,
    pub sessions: Vec<Nat44SessionInfo>,
}

/// `show nat44 summary`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nat44Summary {
    pub inside_interfaces: Vec<String>,
    /// Outside interfaces with their outside address.
    pub outside_interfaces: Vec<(String, Ipv4Addr)>,
    /// The pool of outside addresses (`first-last` ranges; empty: masquerade).
    #[serde(default)]
    pub pool: Vec<String>,
    #[serde(default)]
    pub hairpinning: bool,
    pub sessions: usize,
    pub tcp: usize,
    pub tcp_established: usize,
    pub tcp_transitory: usize,
    pub udp: usize,
    pub icmp: usize,
    pub inside_hosts: usize,
    pub max_sessions: u32,
    pub sessions_created: u64,
    pub sessions_expired: u64,
    pub settings: Nat44Settings,
    /// The session slab's and indexes' memory: size, and whether on huge pages
    /// (`vecswitch_buffer::huge`).
    #[serde(default)]
    pub memory: Memory,
}

fn proto_name(p: u8) -> &'static str {
    match p {
        TCP => "tcp",
        UDP => "udp",
        ICMP => "icmp",
        _ => "other",
    }
}

impl Switch {
    /// Gives interface `iface` a NAT44 role (`None`: none). An outside interface translates to
    /// its first IPv4 address (masquerade), so it must have one; its features are enabled
    /// (`nat44-out2in` on `ip4-unicast`, `nat44-in2out` on `interface-output`).
    pub fn nat44_set_interface(
        &mut self,
        iface: &str,
        role: Option<Role>,
    ) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        let outside = if role == Some(Role::Outside) {
            let a = self
                .state
                .ip
                .iface(idx)
                .and_then(|f| f.primary())
                .ok_or_else(|| SwitchError::InvalidValue {
                    field: "nat44 outside interface",
                    value: iface.to_string(),
                    accepted: "an interface with an IPv4 address (its first address is the outside address)",
                })?;
            Some(a)
        } else {
            None
        };
        let on = outside.is_some();
        let hairpin = role == Some(Role::Inside) && self.state.nat44.hairpinning;
        self.set_interface_feature(iface, IP4_UNICAST_ARC, out2in::NAME, on)?;
        self.set_interface_feature(iface, OUTPUT_ARC, in2out::NAME, on)?;
        self.set_interface_feature(iface, IP4_UNICAST_ARC, hairpin::NAME, hairpin)?;
        let nat = &mut self.state.nat44;
        let i = idx as usize;
        if nat.roles.len() <= i {
            nat.roles.resize(i + 1, None);
            nat.outside_addr.resize(i + 1, None);
        }
        nat.roles[i] = role;
        nat.outside_addr[i] = outside;
        Ok(())
    }

    /// The role of `iface`.
    pub fn nat44_interface(&self, iface: &str) -> Result<Option<Role>, SwitchError> {
        Ok(self.state.nat44.role(self.iface_idx(iface)?))
    }

    /// The NAT44 settings.
    pub fn nat44_settings(&self) -> Nat44Settings {
        self.state.nat44.settings
    }

    /// Changes the NAT44 settings (timeouts apply to existing sessions from now on; lower limits
    /// refuse new sessions until the table shrinks below them).
    pub fn set_nat44_settings(&mut self, s: Nat44Settings) -> Result<(), SwitchError> {
        let check = |field: &'static str, v: u32| {
            if v == 0 {
                Err(SwitchError::InvalidValue {
                    field,
                    value: v.to_string(),
                    accepted: "1 or more",
                })
            } else {
                Ok(())
            }
        };
        check("tcp_established_s", s.tcp_established_s)?;
        check("tcp_transitory_s", s.tcp_transitory_s)?;
        check("udp_s", s.udp_s)?;
        check("icmp_s", s.icmp_s)?;
        check("max_sessions", s.max_sessions)?;
        if s.max_sessions > MAX_SLOTS {
            return Err(SwitchError::InvalidValue {
                field: "max_sessions",
                value: s.max_sessions.to_string(),
                accepted: "1 to 16777215 (the session index's 24 bits)",
            });
        }
        check("max_sessions_per_host", s.max_sessions_per_host)?;
        self.state.nat44.settings = s;
        Ok(())
    }

    /// Sets the pool of outside addresses (ranges `(first, last)`, inclusive; empty: each
    /// outside interface masquerades to its own address). Sessions whose outside address is no
    /// longer an outside address are removed. At most 65,536 addresses; ranges may not be
    /// reversed or overlap.
    pub fn set_nat44_pool(&mut self, ranges: &[(Ipv4Addr, Ipv4Addr)]) -> Result<(), SwitchError> {
        let pool = AddrPool::new(ranges);
        let given: u64 = ranges
            .iter()
            .map(|&(a, b)| (u32::from(b) as u64 + 1).saturating_sub(u32::from(a) as u64))
            .sum();
        if pool.len() != given || ranges.iter().any(|&(a, b)| a > b) {
            return Err(SwitchError::InvalidValue {
                field: "nat44 pool",
                value: format!("{ranges:?}"),
                accepted: "ranges first-last with first <= last that do not overlap",
            });
        }
        if pool.len() > MAX_POOL {
            return Err(SwitchError::InvalidValue {
                field: "nat44 pool",
                value: format!("{} addresses", pool.len()),
                accepted: "at most 65536 addresses",
            });
        }
        let nat = &mut self.state.nat44;
        nat.pool = pool;
        let stale: Vec<u32> = nat
            .sessions
            .iter()
            .filter(|(_, s)| !nat.is_outside_addr(s.out_addr))
            .map(|(i, _)| i)
            .collect();
        for i in stale {
            nat.sessions.remove(i);
        }
        Ok(())
    }

    /// The pool of outside addresses.
    pub fn nat44_pool(&self) -> Vec<(Ipv4Addr, Ipv4Addr)> {
        self.state.nat44.pool.ranges().collect()
    }

    /// Turns hairpinning on or off (`nat44-hairpin` on every inside interface).
    pub fn set_nat44_hairpinning(&mut self, on: bool) -> Result<(), SwitchError> {
        let inside: Vec<String> = (0..self.state.nat44.roles.len())
            .filter(|&i| self.state.nat44.roles[i] == Some(Role::Inside))
            .map(|i| self.iface_name(i as SwIfIdx))
            .collect();
        for name in &inside {
            self.set_interface_feature(name, IP4_UNICAST_ARC, hairpin::NAME, on)?;
        }
        self.state.nat44.hairpinning = on;
        Ok(())
    }

    /// Removes every session.
    pub fn nat44_clear_sessions(&mut self) {
        self.state.nat44.sessions.clear();
    }

    /// The expiry timer: at most every [`SWEEP_EVERY_NS`] of switch time, removes the idle
    /// sessions among the next [`SWEEP_SLOTS`] slots. Returns how many it removed.
    pub fn nat44_expire_step(&mut self) -> usize {
        let now = self.now_ns();
        let nat = &mut self.state.nat44;
        if nat.sessions.is_empty() || now.saturating_sub(nat.last_sweep_ns) < SWEEP_EVERY_NS {
            return 0;
        }
        nat.last_sweep_ns = now;
        let settings = nat.settings;
        nat.sessions
            .expire_step(now, SWEEP_SLOTS, |s| settings.timeout_ns(s))
    }

    /// `show nat44 sessions`: up to `max` sessions from the `start`-th, in table order.
    pub fn show_nat44_sessions(&self, start: usize, max: usize) -> Nat44Sessions {
        let now = self.now_ns();
        let nat = &self.state.nat44;
        let sessions = nat
            .sessions
            .iter()
            .skip(start)
            .take(max)
            .map(|(i, s)| Nat44SessionInfo {
                index: i,
                proto: proto_name(s.key.proto).to_string(),
                inside: format!("{}:{}", s.key.in_addr, s.key.in_port),
                outside: format!("{}:{}", s.out_addr, s.out_port),
                remote: format!("{}:{}", s.key.rem_addr, s.key.rem_port),
                tcp_state: s.tcp,
                idle_s: now.saturating_sub(s.last_ns) / 1_000_000_000,
                timeout_s: nat.timeout_ns(s) / 1_000_000_000,
                packets_in2out: s.pkts_in2out,
                packets_out2in: s.pkts_out2in,
            })
            .collect();
        Nat44Sessions {
            total: nat.sessions.len(),
            sessions,
        }
    }

    /// `show nat44 summary`.
    pub fn show_nat44_summary(&self) -> Nat44Summary {
        let nat = &self.state.nat44;
        let mut inside = Vec::new();
        let mut outside = Vec::new();
        for (i, r) in nat.roles.iter().enumerate() {
            let name = self.iface_name(i as SwIfIdx);
            match r {
                Some(Role::Inside) => inside.push(name),
                Some(Role::Outside) => {
                    if let Some(a) = nat.outside_addr(i as SwIfIdx) {
                        outside.push((name, a));
                    }
                }
                None => {}
            }
        }
        let tcp = |st: TcpState| {
            nat.sessions
                .iter()
                .filter(|(_, s)| s.key.proto == TCP && s.tcp == st)
                .count()
        };
        Nat44Summary {
            inside_interfaces: inside,
            outside_interfaces: outside,
            pool: nat.pool.ranges().map(|(a, b)| format!("{a}-{b}")).collect(),
            hairpinning: nat.hairpinning,
            sessions: nat.sessions.len(),
            tcp: nat.sessions.count_proto(TCP),
            tcp_established: tcp(TcpState::Established),
            tcp_transitory: tcp(TcpState::SynSent) + tcp(TcpState::Closing),
            udp: nat.sessions.count_proto(UDP),
            icmp: nat.sessions.count_icmp(),
            inside_hosts: nat.sessions.hosts(),
            max_sessions: nat.settings.max_sessions,
            sessions_created: nat.sessions.created,
            sessions_expired: nat.sessions.expired,
            settings: nat.settings,
            memory: nat.sessions.memory(),
        }
    }
}
