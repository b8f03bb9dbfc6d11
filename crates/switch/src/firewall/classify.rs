//! The ACL lookup by mask shape (VPP's hash ACL idea, tuple space search): rules are grouped by
//! the shape of what they match — source and destination prefix lengths, and whether protocol,
//! source port, destination port and ICMP type are given exactly — and each group is a hash table
//! from the rule's masked fields to the lowest rule index with them. A packet is masked once per
//! shape and looked up; the first match is the lowest index found. Rules with a port *range* (not
//! one port, not all) cannot be hashed: they are walked, in order, only while they could still
//! beat the best index found. So the cost grows with the number of distinct shapes and ranged
//! rules, not with the number of rules; [`super::acl::Acl::classify`] (the linear walk) stays the
//! reference the tests compare with. IPv4 and IPv6 rules have their own shapes (a rule without
//! prefixes is in both lists); a packet probes its family's.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use super::acl::{addr, mask, Acl, Family, Hit, PacketKey, PortRange, Rule};
use crate::hash::MixHasher;

/// What of a packet a shape keeps: masked source and destination, and protocol, ports and ICMP
/// type packed in `rest`. Equality is on every field; the hash folds them into one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ShapeKey {
    src: u128,
    dst: u128,
    rest: u64,
}

impl Hash for ShapeKey {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u128(self.src ^ self.dst.rotate_left(61) ^ self.rest as u128);
    }
}

#[inline]
fn rest(proto: u8, sport: u16, dport: u16, icmp: u8) -> u64 {
    (proto as u64) << 40 | (sport as u64) << 24 | (dport as u64) << 8 | icmp as u64
}

/// One mask shape and its rules.
#[derive(Debug, Clone)]
struct Shape {
    src_mask: u128,
    dst_mask: u128,
    proto: bool,
    sport: bool,
    dport: bool,
    icmp: bool,
    /// The lowest rule index of this shape (to skip shapes that cannot win).
    first: u32,
    table: HashMap<ShapeKey, u32, BuildHasherDefault<MixHasher>>,
}

/// An exact port (`Some`), any port (`None` inside `Some`), or a range that cannot be hashed.
fn exact(r: Option<PortRange>) -> Result<Option<u16>, ()> {
    match r {
        None => Ok(None),
        Some(PortRange { lo: 0, hi: 65535 }) => Ok(None),
        Some(PortRange { lo, hi }) if lo == hi => Ok(Some(lo)),
        Some(_) => Err(()),
    }
}

/// The compiled lookup of one ACL. See the module doc.
#[derive(Debug, Clone, Default)]
pub struct Classifier {
    /// The shapes of the rules that apply to IPv4 packets (`[0]`) and IPv6 packets (`[1]`); a
    /// rule without prefixes is in both.
    shapes: [Vec<Shape>; 2],
    /// Indices of the rules with a port range, ascending.
    ranged: Vec<u32>,
}

impl Classifier {
    /// Compiles `acl`.
    pub fn new(acl: &Acl) -> Classifier {
        let mut c = Classifier::default();
        for (i, r) in acl.rules.iter().enumerate() {
            let i = i as u32;
            let (Ok(sport), Ok(dport)) = (exact(r.sport), exact(r.dport)) else {
                c.ranged.push(i);
                continue;
            };
            let (sm, dm) = (mask(r.src), mask(r.dst));
            let shape = (
                sm,
                dm,
                r.proto.is_some(),
                sport.is_some(),
                dport.is_some(),
                r.icmp_type.is_some(),
            );
            let key = ShapeKey {
                src: addr(r.src) & sm,
                dst: addr(r.dst) & dm,
                rest: rest(
                    r.proto.map_or(0, |p| p.0),
                    sport.unwrap_or(0),
                    dport.unwrap_or(0),
                    r.icmp_type.unwrap_or(0),
                ),
            };
            let families: &[usize] = match r.family() {
                Family::V4 => &[0],
                Family::V6 => &[1],
                Family::Both => &[0, 1],
            };
            for &f in families {
                let list = &mut c.shapes[f];
                let s = match list.iter().position(|s| {
                    (s.src_mask, s.dst_mask, s.proto, s.sport, s.dport, s.icmp) == shape
                }) {
                    Some(k) => &mut list[k],
                    None => {
                        list.push(Shape {
                            src_mask: sm,
                            dst_mask: dm,
                            proto: shape.2,
                            sport: shape.3,
                            dport: shape.4,
                            icmp: shape.5,
                            first: i,
                            table: HashMap::default(),
                        });
                        list.last_mut().expect("just pushed")
                    }
                };
                // Rules come in order: the first one with this key is the one that matches first.
                s.table.entry(key).or_insert(i);
            }
        }
        for list in &mut c.shapes {
            list.sort_by_key(|s| s.first);
        }
        c
    }

    /// Distinct mask shapes of both families (hash probes per lookup at most, per family).
    pub fn shapes(&self) -> usize {
        self.shapes[0].len() + self.shapes[1].len()
    }

    /// The first rule of `rules` (the ACL this was compiled from) matching `k`.
    #[inline]
    pub fn classify(&self, rules: &[Rule], k: &PacketKey) -> Hit {
        let mut best = u32::MAX;
        for s in &self.shapes[k.v6 as usize] {
            if s.first >= best {
                break;
            }
            let key = ShapeKey {
                src: k.src & s.src_mask,
                dst: k.dst & s.dst_mask,
                rest: rest(
                    if s.proto { k.proto } else { 0 },
                    if s.sport { k.sport } else { 0 },
                    if s.dport { k.dport } else { 0 },
                    if s.icmp { k.icmp_type } else { 0 },
                ),
            };
            if let Some(&i) = s.table.get(&key) {
                // A port or ICMP type only matches a packet that has one (the hashed value 0 of
                // a portless packet must not match a rule for port 0).
                if i < best && rules[i as usize].matches(k) {
                    best = i;
                }
            }
        }
        for &i in &self.ranged {
            if i >= best {
                break;
            }
            if rules[i as usize].matches(k) {
                best = i;
                break;
            }
        }
        if best == u32::MAX {
            Hit::Default
        } else {
            Hit::Rule(best)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::firewall::acl::{Action, Proto, ICMP, ICMPV6};
    use crate::ip::config::IpPrefix;
    use crate::ip::{Ipv4Prefix, Ipv6Prefix};
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const ADDRS4: [[u8; 4]; 6] = [
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        [10, 0, 1, 9],
        [192, 0, 2, 1],
        [192, 0, 2, 200],
        [203, 0, 113, 7],
    ];
    const ADDRS6: [&str; 6] = [
        "2001:db8::1",
        "2001:db8::2",
        "2001:db8:0:1::9",
        "2001:db8:ff::1",
        "2001:db8:ff::c8",
        "fd00::7",
    ];

    /// Random ACLs of IPv4, IPv6 and family-less rules and random packets of both families, from
    /// small pools (so that rules and packets meet): the compiled lookup gives the linear walk's
    /// answer for every packet.
    #[test]
    fn the_shape_lookup_equals_the_linear_walk() {
        let mut r = ChaCha8Rng::seed_from_u64(11);
        let mut below = |n: u32| r.next_u32() % n;
        let a6 = |i: u32| ADDRS6[i as usize].parse::<Ipv6Addr>().unwrap();
        let ports = [0u16, 22, 53, 80, 443, 1000, 5000];
        let ranges = ["22", "53", "80", "0-65535", "1-1023", "1000-6000", "0"];
        let mut checked = [0; 2];
        for _ in 0..200 {
            let n = 1 + below(60) as usize;
            let rules: Vec<Rule> = (0..n)
                .map(|_| {
                    let mut x = Rule::any(match below(3) {
                        0 => Action::Deny,
                        1 => Action::Permit,
                        _ => Action::PermitReflect,
                    });
                    // 0: no prefixes (both families), 1: IPv4, 2: IPv6.
                    let family = below(3);
                    let mut prefix = |lens4: &[u8], lens6: &[u8]| -> Option<IpPrefix> {
                        match family {
                            1 => Some(
                                Ipv4Prefix::new(
                                    Ipv4Addr::from(ADDRS4[below(6) as usize]),
                                    lens4[below(lens4.len() as u32) as usize],
                                )
                                .unwrap()
                                .network()
                                .into(),
                            ),
                            2 => Some(
                                Ipv6Prefix::new(
                                    a6(below(6)),
                                    lens6[below(lens6.len() as u32) as usize],
                                )
                                .unwrap()
                                .network()
                                .into(),
                            ),
                            _ => None,
                        }
                    };
                    let (src, dst) = (
                        prefix(&[0, 8, 24, 31, 32], &[0, 32, 48, 64, 127, 128]),
                        prefix(&[16, 24, 32], &[32, 64, 128]),
                    );
                    // With a family, at least one prefix; the other one half the time.
                    if family != 0 {
                        x.src = src;
                        if below(2) == 0 {
                            x.dst = dst;
                        }
                    }
                    match below(4) {
                        0 => {}
                        1 => {
                            x.proto = Some(Proto(if family == 2 { ICMPV6 } else { ICMP }));
                            if below(2) == 0 {
                                x.icmp_type = Some([0u8, 3, 8, 128, 129][below(5) as usize]);
                            }
                        }
                        _ => {
                            x.proto = Some(Proto([6u8, 17][below(2) as usize]));
                            if below(2) == 0 {
                                x.dport = Some(ranges[below(7) as usize].parse().unwrap());
                            }
                            if below(3) == 0 {
                                x.sport = Some(ranges[below(7) as usize].parse().unwrap());
                            }
                        }
                    }
                    x
                })
                .collect();
            let acl = Acl {
                rules,
                default_action: Action::Deny,
            };
            acl.validate().unwrap();
            let c = Classifier::new(&acl);
            for _ in 0..200 {
                let v6 = below(2) == 1;
                let proto = [if v6 { ICMPV6 } else { ICMP }, 6, 17, 47][below(4) as usize];
                let mut k = if v6 {
                    PacketKey::new6(a6(below(6)), a6(below(6)), proto)
                } else {
                    PacketKey::new(
                        ADDRS4[below(6) as usize].into(),
                        ADDRS4[below(6) as usize].into(),
                        proto,
                    )
                };
                if proto == 6 || proto == 17 {
                    k.has_ports = true;
                    k.sport = ports[below(7) as usize];
                    k.dport = ports[below(7) as usize];
                }
                if proto == ICMP || proto == ICMPV6 {
                    k.icmp_type = [0u8, 3, 8, 11, 128, 129][below(6) as usize];
                }
                assert_eq!(
                    c.classify(&acl.rules, &k),
                    acl.classify(&k),
                    "{k:?} {acl:?}"
                );
                checked[v6 as usize] += 1;
            }
        }
        assert_eq!(checked[0] + checked[1], 40_000);
        assert!(checked[0] > 19_000 && checked[1] > 19_000, "{checked:?}");
    }

    #[test]
    fn many_rules_of_few_shapes_make_few_shapes() {
        let acl = crate::firewall::testing::acl(100, Action::Permit);
        assert_eq!(Classifier::new(&acl).shapes(), 2);
    }

    /// An IPv4 rule never matches an IPv6 packet whose low 32 bits are its address, and a rule
    /// without prefixes matches both families.
    #[test]
    fn families_do_not_meet() {
        let mut v4 = Rule::any(Action::Deny);
        v4.src = Some("10.0.0.0/8".parse().unwrap());
        let both = Rule::any(Action::Permit);
        let acl = Acl {
            rules: vec![v4, both],
            default_action: Action::Deny,
        };
        let c = Classifier::new(&acl);
        let k4 = PacketKey::new(Ipv4Addr::new(10, 1, 2, 3), Ipv4Addr::new(10, 0, 0, 1), 17);
        let k6 = PacketKey::new6("::a01:203".parse().unwrap(), "::1".parse().unwrap(), 17);
        assert_eq!(c.classify(&acl.rules, &k4), Hit::Rule(0));
        assert_eq!(c.classify(&acl.rules, &k6), Hit::Rule(1));
        assert_eq!(acl.classify(&k6), Hit::Rule(1));
        assert_eq!(c.shapes(), 3);
    }
}
