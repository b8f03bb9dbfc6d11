//! Rules and ordered rule lists (ACLs): match fields, actions, the packet fields they are matched
//! against ([`PacketKey`]) and the first-match walk ([`Acl::classify`]).
//!
//! One ACL holds IPv4 and IPv6 rules: a rule with an IPv4 prefix matches IPv4 packets only, one
//! with an IPv6 prefix IPv6 packets only, one without prefixes both (as an nftables rule without
//! `ip`/`ip6` matches does in an `inet` table). ICMP types go with `proto = "icmp"` (IPv4, 1) or
//! `proto = "icmpv6"` (IPv6, 58).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ip::config::IpPrefix;
use crate::ip::{Ipv4Prefix, Ipv6Prefix};

/// IP protocol numbers (IANA) the rules name.
pub const ICMP: u8 = 1;
pub const TCP: u8 = 6;
pub const UDP: u8 = 17;
pub const ICMPV6: u8 = 58;

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
    #[error("invalid protocol {0:?}: accepted tcp, udp, icmp, icmpv6 or a protocol number 0-255")]
    Protocol(String),
    #[error(
        "rule {rule}: ports given for protocol {proto}: accepted ports only with proto tcp or udp"
    )]
    PortsWithoutTcpUdp { rule: usize, proto: String },
    #[error(
        "rule {rule}: icmp-type given for protocol {proto}: accepted only with proto icmp or icmpv6"
    )]
    IcmpTypeWithoutIcmp { rule: usize, proto: String },
    #[error("rule {rule}: src {src} and dst {dst} are of different IP families: accepted two IPv4 or two IPv6 prefixes")]
    MixedFamilies {
        rule: usize,
        src: String,
        dst: String,
    },
    #[error("rule {rule}: proto {proto} with {family} prefixes never matches: accepted icmp with IPv4, icmpv6 with IPv6")]
    IcmpFamily {
        rule: usize,
        proto: String,
        family: &'static str,
    },
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
            ICMP => f.write_str("icmp"),
            TCP => f.write_str("tcp"),
            UDP => f.write_str("udp"),
            ICMPV6 => f.write_str("icmpv6"),
            n => write!(f, "{n}"),
        }
    }
}

impl FromStr for Proto {
    type Err = RuleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "icmp" => Ok(Proto(ICMP)),
            "tcp" => Ok(Proto(TCP)),
            "udp" => Ok(Proto(UDP)),
            "icmpv6" | "ipv6-icmp" => Ok(Proto(ICMPV6)),
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

/// Whether prefix `p` (none: any address of either family) holds address `a` of a packet of
/// family `v6` (an IPv4 address in the low 32 bits).
#[inline]
fn holds(p: Option<IpPrefix>, v6: bool, a: u128) -> bool {
    match p {
        None => true,
        Some(IpPrefix::V4(p)) => !v6 && p.contains(Ipv4Addr::from(a as u32)),
        Some(IpPrefix::V6(p)) => v6 && p.contains(Ipv6Addr::from(a)),
    }
}

/// One rule: every field given must match (a missing one matches anything).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Rule {
    /// Source prefix, IPv4 or IPv6 (none: any source of either family).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<IpPrefix>,
    /// Destination prefix, of the source's family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<IpPrefix>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<Proto>,
    /// Source port range (TCP and UDP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sport: Option<PortRange>,
    /// Destination port range (TCP and UDP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dport: Option<PortRange>,
    /// ICMP or ICMPv6 type (with proto icmp or icmpv6 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp_type: Option<u8>,
    pub action: Action,
}

/// The family a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
    /// No prefix given: packets of both families.
    Both,
}

impl Rule {
    /// A rule matching everything with `action`.
    pub fn any(action: Action) -> Rule {
        Rule {
            src: None,
            dst: None,
            proto: None,
            sport: None,
            dport: None,
            icmp_type: None,
            action,
        }
    }

    /// The family of the rule's prefixes (of the source if both are given; [`Rule::validate`]
    /// refuses two families).
    pub fn family(&self) -> Family {
        match self.src.or(self.dst) {
            None => Family::Both,
            Some(IpPrefix::V4(_)) => Family::V4,
            Some(IpPrefix::V6(_)) => Family::V6,
        }
    }

    /// Checks the field combinations (`i`: the rule's position, for the message).
    pub fn validate(&self, i: usize) -> Result<(), RuleError> {
        let p = self.proto.map(|p| p.0);
        let proto = || self.proto.map_or("any".into(), |p| p.to_string());
        if (self.sport.is_some() || self.dport.is_some()) && !matches!(p, Some(TCP | UDP)) {
            return Err(RuleError::PortsWithoutTcpUdp {
                rule: i,
                proto: proto(),
            });
        }
        if self.icmp_type.is_some() && !matches!(p, Some(ICMP | ICMPV6)) {
            return Err(RuleError::IcmpTypeWithoutIcmp {
                rule: i,
                proto: proto(),
            });
        }
        if let (Some(s), Some(d)) = (self.src, self.dst) {
            if s.is_v6() != d.is_v6() {
                return Err(RuleError::MixedFamilies {
                    rule: i,
                    src: s.to_string(),
                    dst: d.to_string(),
                });
            }
        }
        let family = match self.family() {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
            Family::Both => "",
        };
        if matches!(
            (p, self.family()),
            (Some(ICMP), Family::V6) | (Some(ICMPV6), Family::V4)
        ) {
            return Err(RuleError::IcmpFamily {
                rule: i,
                proto: proto(),
                family,
            });
        }
        Ok(())
    }

    /// Whether the rule matches packet `k`.
    #[inline]
    pub fn matches(&self, k: &PacketKey) -> bool {
        holds(self.src, k.v6, k.src)
            && holds(self.dst, k.v6, k.dst)
            && self.proto.is_none_or(|p| p.0 == k.proto)
            && self
                .sport
                .is_none_or(|r| k.has_ports && r.contains(k.sport))
            && self
                .dport
                .is_none_or(|r| k.has_ports && r.contains(k.dport))
            && self
                .icmp_type
                .is_none_or(|t| matches!(k.proto, ICMP | ICMPV6) && k.icmp_type == t)
    }
}

/// The fields of a packet the rules look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketKey {
    /// An IPv6 packet (else IPv4).
    pub v6: bool,
    /// Source and destination addresses (an IPv4 address in the low 32 bits).
    pub src: u128,
    pub dst: u128,
    /// The protocol (IPv6: the upper-layer header's, after the extension headers).
    pub proto: u8,
    /// TCP or UDP (the ports are valid).
    pub has_ports: bool,
    pub sport: u16,
    pub dport: u16,
    /// The ICMP or ICMPv6 type (ICMP only).
    pub icmp_type: u8,
}

impl PacketKey {
    /// An IPv4 packet of protocol `proto` from `src` to `dst`, no ports, ICMP type 0.
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, proto: u8) -> PacketKey {
        PacketKey {
            v6: false,
            src: u32::from(src) as u128,
            dst: u32::from(dst) as u128,
            proto,
            has_ports: false,
            sport: 0,
            dport: 0,
            icmp_type: 0,
        }
    }

    /// An IPv6 packet of protocol `proto` from `src` to `dst`, no ports, ICMP type 0.
    pub fn new6(src: Ipv6Addr, dst: Ipv6Addr, proto: u8) -> PacketKey {
        PacketKey {
            v6: true,
            src: u128::from(src),
            dst: u128::from(dst),
            ..PacketKey::new(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, proto)
        }
    }
}

/// The mask of a rule prefix over a [`PacketKey`] address (none: 0).
#[inline]
pub fn mask(p: Option<IpPrefix>) -> u128 {
    match p {
        None => 0,
        Some(IpPrefix::V4(p)) => Ipv4Prefix::mask(p.len) as u128,
        Some(IpPrefix::V6(p)) => Ipv6Prefix::mask(p.len),
    }
}

/// A rule prefix's address as a [`PacketKey`] address (none: 0).
#[inline]
pub fn addr(p: Option<IpPrefix>) -> u128 {
    match p {
        None => 0,
        Some(IpPrefix::V4(p)) => u32::from(p.addr) as u128,
        Some(IpPrefix::V6(p)) => u128::from(p.addr),
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
