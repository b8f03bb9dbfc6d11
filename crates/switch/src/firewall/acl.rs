//! Rules and ordered rule lists (ACLs): match fields, actions, the packet fields they are matched
//! against ([`PacketKey`]) and the first-match walk ([`Acl::classify`]).

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ip::Ipv4Prefix;

/// What a rule (or an ACL's default) does with a packet it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Drop it (`rule-deny`, or `default-deny` for the ACL's default).
    Deny,
    /// Let it through, keeping no state: its replies are judged by the rules they meet.
    Permit,
    /// Let it through and track its connection: replies and related ICMP errors pass on any
    /// interface with an ACL before the rules (VPP's permit+reflect).
    PermitReflect,
}

/// An inclusive range of ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortRange {
    pub lo: u16,
    pub hi: u16,
}

impl PortRange {
    /// Whether `p` is in the range.
    #[inline]
    pub fn contains(self, p: u16) -> bool {
        self.lo <= p && p <= self.hi
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

/// Why a rule field did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("invalid port range {0:?}: accepted PORT or LOW-HIGH with 0 ≤ LOW ≤ HIGH ≤ 65535")]
    PortRange(String),
    #[error("invalid protocol {0:?}: accepted tcp, udp, icmp or a protocol number 0-255")]
    Protocol(String),
    #[error(
        "rule {rule}: ports given for protocol {proto}: accepted ports only with proto tcp or udp"
    )]
    PortsWithoutTcpUdp { rule: usize, proto: String },
    #[error("rule {rule}: icmp-type given for protocol {proto}: accepted only with proto icmp")]
    IcmpTypeWithoutIcmp { rule: usize, proto: String },
}

impl FromStr for PortRange {
    type Err = RuleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || RuleError::PortRange(s.to_string());
        let (a, b) = s.split_once('-').unwrap_or((s, s));
        let lo = a.trim().parse::<u16>().map_err(|_| bad())?;
        let hi = b.trim().parse::<u16>().map_err(|_| bad())?;
        if lo > hi {
            return Err(bad());
        }
        Ok(PortRange { lo, hi })
    }
}

impl Serialize for PortRange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PortRange {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// An IP protocol number, written `tcp`, `udp`, `icmp` or as a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Proto(pub u8);

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            1 => f.write_str("icmp"),
            6 => f.write_str("tcp"),
            17 => f.write_str("udp"),
            n => write!(f, "{n}"),
        }
    }
}

impl FromStr for Proto {
    type Err = RuleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "icmp" => Ok(Proto(1)),
            "tcp" => Ok(Proto(6)),
            "udp" => Ok(Proto(17)),
            n => n
                .parse::<u8>()
                .map(Proto)
                .map_err(|_| RuleError::Protocol(s.to_string())),
        }
    }
}

impl Serialize for Proto {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Proto {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

fn any() -> Ipv4Prefix {
    Ipv4Prefix {
        addr: Ipv4Addr::UNSPECIFIED,
        len: 0,
    }
}

/// One rule: every field given must match (a missing one matches anything).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Rule {
    #[serde(default = "any")]
    pub src: Ipv4Prefix,
    #[serde(default = "any")]
    pub dst: Ipv4Prefix,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<Proto>,
    /// Source port range (TCP and UDP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sport: Option<PortRange>,
    /// Destination port range (TCP and UDP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dport: Option<PortRange>,
    /// ICMP type (ICMP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp_type: Option<u8>,
    pub action: Action,
}

impl Rule {
    /// A rule matching everything with `action`.
    pub fn any(action: Action) -> Rule {
        Rule {
            src: any(),
            dst: any(),
            proto: None,
            sport: None,
            dport: None,
            icmp_type: None,
            action,
        }
    }

    /// Checks the field combinations (`i`: the rule's position, for the message).
    pub fn validate(&self, i: usize) -> Result<(), RuleError> {
        let p = self.proto.map(|p| p.0);
        if (self.sport.is_some() || self.dport.is_some()) && !matches!(p, Some(6 | 17)) {
            return Err(RuleError::PortsWithoutTcpUdp {
                rule: i,
                proto: self.proto.map_or("any".into(), |p| p.to_string()),
            });
        }
        if self.icmp_type.is_some() && p != Some(1) {
            return Err(RuleError::IcmpTypeWithoutIcmp {
                rule: i,
                proto: self.proto.map_or("any".into(), |p| p.to_string()),
            });
        }
        Ok(())
    }

    /// Whether the rule matches packet `k`.
    #[inline]
    pub fn matches(&self, k: &PacketKey) -> bool {
        self.src.contains(k.src)
            && self.dst.contains(k.dst)
            && self.proto.is_none_or(|p| p.0 == k.proto)
            && self
                .sport
                .is_none_or(|r| k.has_ports && r.contains(k.sport))
            && self
                .dport
                .is_none_or(|r| k.has_ports && r.contains(k.dport))
            && self
                .icmp_type
                .is_none_or(|t| k.proto == 1 && k.icmp_type == t)
    }
}

/// The fields of a packet the rules look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketKey {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub proto: u8,
    /// TCP or UDP (the ports are valid).
    pub has_ports: bool,
    pub sport: u16,
    pub dport: u16,
    /// The ICMP type (ICMP only).
    pub icmp_type: u8,
}

impl PacketKey {
    /// A packet of protocol `proto` from `src` to `dst`, no ports, ICMP type 0.
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, proto: u8) -> PacketKey {
        PacketKey {
            src,
            dst,
            proto,
            has_ports: false,
            sport: 0,
            dport: 0,
            icmp_type: 0,
        }
    }
}

/// An ordered rule list with a default action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Acl {
    pub rules: Vec<Rule>,
    /// What happens to a packet no rule matches.
    pub default_action: Action,
}

/// Which rule decided: rule `i`, or the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    Rule(u32),
    Default,
}

impl Acl {
    /// The first rule matching `k` (the reference walk, linear in the rules).
    #[inline]
    pub fn classify(&self, k: &PacketKey) -> Hit {
        self.rules
            .iter()
            .position(|r| r.matches(k))
            .map_or(Hit::Default, |i| Hit::Rule(i as u32))
    }

    /// The action of hit `h`.
    #[inline]
    pub fn action(&self, h: Hit) -> Action {
        match h {
            Hit::Rule(i) => self.rules[i as usize].action,
            Hit::Default => self.default_action,
        }
    }

    /// Checks every rule.
    pub fn validate(&self) -> Result<(), RuleError> {
        self.rules
            .iter()
            .enumerate()
            .try_for_each(|(i, r)| r.validate(i))
    }
}
