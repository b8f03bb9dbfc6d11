//! The seed-004 firewall policy, written once and rendered for both firewalls of the chain:
//! vecswitch's `[[firewall]]` ACLs (`vecswitch-firewall`) and nftables (`kernel-firewall`).
//!
//! Seed 004: "rules to deny access to certain IP ranges; and to only allow access to the
//! Internet for a number of ports, while blocking any connection attempts from the outside …
//! a set of 100 rules". Here, on the firewall's left (inside, client) port, in order, first match
//! wins, default deny:
//!
//! | rules | what |
//! |---|---|
//! | 0 | deny the range around the server's extra address ([`super::routed::denied_range`]: an illegal destination the lab can reach) |
//! | 1–3 | deny three /28 source ranges of the client subnet (hosts not allowed out) |
//! | 4–91 | deny 88 destination /24s of 198.18.0.0/15 (RFC 2544 §C.2.2's benchmark range: "certain IP ranges") |
//! | 92–99 | permit (tracked, replies pass) TCP 80, 443, 21, the FTP passive range [`crate::l7::servers::PASV_PORTS`], TCP and UDP 53, UDP 123, ICMP echo request |
//!
//! On the right (outside) port: no rules, default deny — replies of tracked connections pass
//! before the rules (conntrack), every connection attempt from outside is dropped.
//!
//! Each range rule names an IPv4 and an IPv6 prefix (the IPv6 ones: the client's and server's
//! `fd12:…` subnets, and 2001:2::/48, RFC 5180 §5's IPv6 benchmarking range, for the 88 /64s).
//! Both renderings filter both families and agree rule for rule: a rule with prefixes is written
//! once per family (nftables `ip …` / `ip6 …` in table `inet`; vecswitch one `[[firewall]]` rule
//! with the IPv4 prefix and one with the IPv6 prefix, `firewall-input` / `firewall-input6`,
//! docs/NAT.md), a rule without prefixes once for both, and the echo permit as ICMP type 8 and
//! ICMPv6 type 128 (RFC 4443 §4.1). 92 × 2 + 7 + 2 = 193 rules on each side.
//!
//! IPS mode ([`ips_patterns`], seed 004's "advanced mode"): vecswitch's firewall searches the
//! payload of what it lets through for byte patterns (docs/NAT.md, "IPS mode");
//! [`Policy::vecswitch_firewalls`] turns it on on both ports when given patterns. nftables has no
//! equivalent — its raw payload expressions (`@th,OFFSET,LEN`) compare bytes at a fixed offset,
//! they do not search a payload for a set of strings (iptables' `xt_string` did, and is neither
//! installed nor loadable here) — so the kernel chain has no IPS scenario.

use std::fmt::Write;

use vecswitch_switch::firewall::config::FirewallConfig;
use vecswitch_switch::firewall::ips::IpsConfig;
use vecswitch_switch::firewall::{Action, PortRange, Proto, Rule};
use vecswitch_switch::ip::config::{IpPrefix, IpPrefixError};

use crate::error::{Error, Result};

/// What a rule does with the packets it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Deny,
    /// Let the packet through and track its connection (vecswitch `permit-reflect`, nftables
    /// `accept` behind `ct state established,related accept`).
    Permit,
}

/// One rule: every field given must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRule {
    /// Source prefix, `[IPv4, IPv6]`.
    pub src: Option<[String; 2]>,
    /// Destination prefix, `[IPv4, IPv6]`.
    pub dst: Option<[String; 2]>,
    /// `tcp`, `udp` or `icmp` (echo request, both families).
    pub proto: Option<&'static str>,
    /// Destination port range (TCP, UDP).
    pub dport: Option<(u16, u16)>,
    pub verdict: Verdict,
}

impl PolicyRule {
    fn deny_dst(p: [String; 2]) -> PolicyRule {
        PolicyRule {
            src: None,
            dst: Some(p),
            proto: None,
            dport: None,
            verdict: Verdict::Deny,
        }
    }

    fn permit(proto: &'static str, dport: Option<(u16, u16)>) -> PolicyRule {
        PolicyRule {
            src: None,
            dst: None,
            proto: Some(proto),
            dport,
            verdict: Verdict::Permit,
        }
    }
}

/// The inside rules (the outside has none: default deny).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub inside: Vec<PolicyRule>,
}

/// A TCP port of the server that the policy does not open (an illegal destination port).
pub const DENIED_PORT: u16 = 23;

/// The seed-004 policy for a chain of `hops` routed VNFs ([`super::routed`]).
pub fn seed004(hops: usize) -> Policy {
    let mut inside = vec![PolicyRule::deny_dst(super::routed::denied_range(hops))];
    for host in [208u8, 224, 240] {
        inside.push(PolicyRule {
            src: Some([
                format!("10.12.1.{host}/28"),
                format!("fd12:1::{host:x}/124"),
            ]),
            dst: None,
            proto: None,
            dport: None,
            verdict: Verdict::Deny,
        });
    }
    for i in 0..88u32 {
        inside.push(PolicyRule::deny_dst([
            format!("198.18.{i}.0/24"),
            format!("2001:2:0:{i:x}::/64"),
        ]));
    }
    let pasv = crate::l7::servers::PASV_PORTS;
    for (proto, port) in [
        ("tcp", Some((80, 80))),
        ("tcp", Some((443, 443))),
        ("tcp", Some((21, 21))),
        ("tcp", Some(pasv)),
        ("tcp", Some((53, 53))),
        ("udp", Some((53, 53))),
        ("udp", Some((123, 123))),
        ("icmp", None),
    ] {
        inside.push(PolicyRule::permit(proto, port));
    }
    Policy { inside }
}

/// What the L7 mix itself sends that an IPS pattern of the switch's benchmark set matches: the
/// FTP class logs in as `USER anonymous` (`crate::l7::client`), which is one of them.
const SENT_BY_THE_MIX: [&str; 1] = ["USER anonymous"];

/// The IPS patterns of the IPS scenario: the 100 of the switch's IPS benchmark
/// (`vecswitch_switch::firewall::testing::ips_patterns`: web attacks, shell commands, malware
/// markers, protocol abuse — the set docs/NAT.md's cost per packet was measured with) but those
/// the legitimate mix sends itself ([`SENT_BY_THE_MIX`]): 99. None occurs in the mix, so every
/// transaction must still complete; what IPS mode changes is the cost of searching every packet.
pub fn ips_patterns() -> Vec<String> {
    vecswitch_switch::firewall::testing::ips_patterns()
        .into_iter()
        .filter(|p| !SENT_BY_THE_MIX.contains(&p.as_str()))
        .collect()
}

/// IP protocol numbers of the policy's rules (IANA "Assigned Internet Protocol Numbers").
const PROTO_ICMP: Proto = Proto(1);
const PROTO_TCP: Proto = Proto(6);
const PROTO_UDP: Proto = Proto(17);
const PROTO_ICMPV6: Proto = Proto(58);

/// A prefix of the policy (`10.12.1.208/28`, `fd12:1::d0/124`) as the switch's config holds it.
pub(crate) fn prefix(s: &str) -> Result<IpPrefix> {
    s.parse().map_err(|e: IpPrefixError| Error::Invalid {
        field: "policy prefix",
        value: s.to_string(),
        expected: e.to_string(),
    })
}

fn ports(p: (u16, u16)) -> String {
    if p.0 == p.1 {
        p.0.to_string()
    } else {
        format!("{}-{}", p.0, p.1)
    }
}

impl Policy {
    /// `[[firewall]]` sections for vecswitch: the rules on `left`, default deny on both ports,
    /// each range rule once per family (see the module doc); with `ips`, IPS mode with those
    /// patterns on both ports (requests and responses are searched). `Err` names a prefix of the
    /// policy the switch's parser does not take.
    pub fn vecswitch_firewalls(
        &self,
        left: &str,
        right: &str,
        ips: Option<&[String]>,
    ) -> Result<Vec<FirewallConfig>> {
        let ips = ips.map(|p| IpsConfig {
            patterns: p.to_vec(),
            case_insensitive: false,
        });
        let mut rules = Vec::new();
        for r in &self.inside {
            let action = match r.verdict {
                Verdict::Deny => Action::Deny,
                Verdict::Permit => Action::PermitReflect,
            };
            if r.proto == Some("icmp") {
                // Echo request of both families (RFC 792; RFC 4443 §4.1).
                for (proto, t) in [(PROTO_ICMP, 8), (PROTO_ICMPV6, 128)] {
                    rules.push(Rule {
                        proto: Some(proto),
                        icmp_type: Some(t),
                        ..Rule::any(action)
                    });
                }
                continue;
            }
            let proto = match r.proto {
                None => None,
                Some("tcp") => Some(PROTO_TCP),
                Some("udp") => Some(PROTO_UDP),
                Some(other) => {
                    return Err(Error::Invalid {
                        field: "policy rule proto",
                        value: other.to_string(),
                        expected: "tcp, udp or icmp".into(),
                    })
                }
            };
            let rule = Rule {
                proto,
                dport: r.dport.map(|(lo, hi)| PortRange { lo, hi }),
                ..Rule::any(action)
            };
            // One rule per family when the rule names addresses, else one for both.
            if r.src.is_none() && r.dst.is_none() {
                rules.push(rule);
                continue;
            }
            for fam in 0..2 {
                rules.push(Rule {
                    src: r.src.as_ref().map(|p| prefix(&p[fam])).transpose()?,
                    dst: r.dst.as_ref().map(|p| prefix(&p[fam])).transpose()?,
                    ..rule
                });
            }
        }
        Ok(vec![
            FirewallConfig {
                interface: left.to_string(),
                rules,
                default_action: Action::Deny,
                ips: ips.clone(),
            },
            FirewallConfig {
                interface: right.to_string(),
                rules: Vec::new(),
                default_action: Action::Deny,
                ips,
            },
        ])
    }

    /// An `nft -f` script: table `inet l7fw` filtering forwarded packets, the rules on `left`,
    /// every connection attempt from `right` dropped; every drop counted.
    pub fn nft(&self, left: &str, right: &str) -> String {
        let mut s = String::from(
            "table inet l7fw {\n  chain forward {\n    type filter hook forward priority filter; policy drop;\n    ct state established,related accept\n",
        );
        let _ = writeln!(s, "    iifname {left:?} jump inside");
        let _ = writeln!(s, "    iifname {right:?} counter drop");
        s.push_str("    counter drop\n  }\n  chain inside {\n");
        for r in &self.inside {
            let verdict = match r.verdict {
                Verdict::Deny => "counter drop",
                Verdict::Permit => "accept",
            };
            let l4 = match (r.proto, r.dport) {
                (Some("icmp"), _) => {
                    let _ = writeln!(s, "    icmp type echo-request {verdict}");
                    let _ = writeln!(s, "    icmpv6 type echo-request {verdict}");
                    continue;
                }
                (Some(p), Some(d)) => Some(format!("{p} dport {}", ports(d))),
                (Some(p), None) => Some(format!("meta l4proto {p}")),
                (None, _) => None,
            };
            // One line per family when the rule names addresses, else one for both.
            let families: &[(usize, &str)] = if r.src.is_some() || r.dst.is_some() {
                &[(0, "ip"), (1, "ip6")]
            } else {
                &[(0, "")]
            };
            for (fam, ip) in families {
                let mut m: Vec<String> = Vec::new();
                if let Some(p) = &r.src {
                    m.push(format!("{ip} saddr {}", p[*fam]));
                }
                if let Some(p) = &r.dst {
                    m.push(format!("{ip} daddr {}", p[*fam]));
                }
                m.extend(l4.clone());
                m.push(verdict.into());
                let _ = writeln!(s, "    {}", m.join(" "));
            }
        }
        s.push_str("    counter drop\n  }\n}\n");
        s
    }
}

/// Packets the nftables firewall dropped: the sum of the `counter packets N … drop` lines of
/// `nft list table inet l7fw`.
pub fn nft_drops(listing: &str) -> u64 {
    listing
        .lines()
        .filter(|l| l.trim_end().ends_with("drop"))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            w.by_ref().find(|x| *x == "packets")?;
            w.next()?.parse::<u64>().ok()
        })
        .sum()
}

/// Packets vecswitch's firewall denied: the drop reasons ending in `deny` (`rule-deny`,
/// `default-deny`) of `firewall-input` and `firewall-input6` in a `ctl --json show errors`
/// answer.
pub fn vecswitch_drops(json: &str) -> Option<u64> {
    let list: Vec<vecswitch_graph::ErrorCount> = crate::dut::vecswitch::answer_data(json)?;
    Some(
        list.iter()
            .filter(|e| {
                (e.node == "firewall-input" || e.node == "firewall-input6")
                    && e.reason.ends_with("deny")
            })
            .map(|e| e.count)
            .sum(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_has_100_rules_of_the_seed_004_shape() {
        let p = seed004(2);
        assert_eq!(p.inside.len(), 100);
        assert_eq!(p.inside[0].dst.as_ref().unwrap()[0], "10.12.3.160/27");
        let permits = p
            .inside
            .iter()
            .filter(|r| r.verdict == Verdict::Permit)
            .count();
        assert_eq!(permits, 8);
        // Denies come first: nothing permitted can reach a denied range.
        assert!(p.inside[..92].iter().all(|r| r.verdict == Verdict::Deny));
        assert!(!p.inside.iter().any(|r| r
            .dport
            .is_some_and(|d| d.0 <= DENIED_PORT && DENIED_PORT <= d.1)));
    }

    #[test]
    fn vecswitch_rendering_is_valid_firewall_config() {
        let fw = seed004(1).vecswitch_firewalls("v0", "v1", None).unwrap();
        assert_eq!(fw.len(), 2);
        // 92 range rules × 2 families + 7 port permits + echo of both families: as nftables.
        assert_eq!(fw[0].rules.len(), 92 * 2 + 7 + 2);
        assert_eq!(fw[1].interface, "v1");
        assert!(fw[1].rules.is_empty());
        assert!(fw[0].ips.is_none() && fw[1].ips.is_none());
        let has = |r: Rule| fw[0].rules.contains(&r);
        let p = |s: &str| Some(prefix(s).unwrap());
        let deny = Rule::any(Action::Deny);
        let permit = Rule::any(Action::PermitReflect);
        assert!(has(Rule {
            dst: p("fd12:2::a0/123"),
            ..deny
        }));
        assert!(has(Rule {
            src: p("fd12:1::d0/124"),
            ..deny
        }));
        assert!(has(Rule {
            dst: p("2001:2:0:57::/64"),
            ..deny
        }));
        assert!(has(Rule {
            dst: p("10.12.2.160/27"),
            ..deny
        }));
        assert!(has(Rule {
            proto: Some(PROTO_ICMPV6),
            icmp_type: Some(128),
            ..permit
        }));
        assert!(has(Rule {
            proto: Some(PROTO_TCP),
            dport: Some(PortRange {
                lo: 30000,
                hi: 30099
            }),
            ..permit
        }));
        assert!(has(Rule {
            proto: Some(PROTO_ICMP),
            icmp_type: Some(8),
            ..permit
        }));
        // Written out, the sections are what the switch's parser and validation take.
        let c = vecswitch_control::config::Config {
            firewall: fw,
            ..Default::default()
        };
        let t = crate::dut::vecswitch::to_toml(&c);
        assert!(t.contains("dport = \"30000-30099\""), "{t}");
        assert!(t.contains("icmp-type = 128"), "{t}");
        crate::dut::vecswitch::assert_round_trip(&c);
    }

    #[test]
    fn nft_rendering_covers_both_families_and_counts_drops() {
        let t = seed004(1).nft("v0", "v1");
        assert!(t.contains("ip daddr 10.12.2.160/27 counter drop\n"), "{t}");
        assert!(t.contains("ip6 daddr fd12:2::a0/123 counter drop\n"), "{t}");
        assert!(t.contains("ip saddr 10.12.1.208/28 counter drop\n"), "{t}");
        assert!(t.contains("tcp dport 30000-30099 accept\n"), "{t}");
        assert!(t.contains("icmpv6 type echo-request accept\n"), "{t}");
        assert!(t.contains("iifname \"v1\" counter drop\n"), "{t}");
        // 92 deny rules × 2 families + 7 port permits + 2 echo permits.
        let rules = t
            .lines()
            .filter(|l| l.ends_with(" drop") || l.ends_with(" accept"))
            .count();
        assert_eq!(rules, 92 * 2 + 7 + 2 + 1 + 1 + 1 + 1, "{t}");
        let listing = "  ip daddr 10.12.2.160/27 counter packets 3 bytes 180 drop\n  tcp dport 80 accept\n  counter packets 4 bytes 240 drop\n";
        assert_eq!(nft_drops(listing), 7);
        let json = r#"{"ok":true,"data":[{"node":"firewall-input","reason":"default-deny","count":5},{"node":"firewall-input","reason":"rule-deny","count":2},{"node":"ip4-input","reason":"bad-checksum","count":9},{"node":"firewall-input","reason":"fragment","count":1}]}"#;
        assert_eq!(vecswitch_drops(json), Some(7));
        let json6 = r#"{"ok":true,"data":[{"node":"firewall-input6","reason":"rule-deny","count":3},{"node":"firewall-input","reason":"ips-match","count":4}]}"#;
        assert_eq!(vecswitch_drops(json6), Some(3));
    }

    #[test]
    fn ips_mode_is_on_both_ports_with_patterns_the_mix_does_not_send() {
        let p = ips_patterns();
        assert_eq!(p.len(), 99);
        assert!(!p.iter().any(|x| x == "USER anonymous"));
        let fw = seed004(1)
            .vecswitch_firewalls("v0", "v1", Some(&p))
            .unwrap();
        for f in &fw {
            assert_eq!(f.ips.as_ref().map(|i| &i.patterns), Some(&p));
        }
        // Patterns with quotes and backslashes survive the TOML round trip.
        assert!(p.iter().any(|x| x.contains('\\')) && p.iter().any(|x| x.contains('\'')));
        let c = vecswitch_control::config::Config {
            firewall: fw,
            ..Default::default()
        };
        crate::dut::vecswitch::assert_round_trip(&c);
    }
}
