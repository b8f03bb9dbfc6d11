//! The ACL lookup by mask shape (VPP's hash ACL idea, tuple space search): rules are grouped by
//! the shape of what they match — source and destination prefix lengths, and whether protocol,
//! source port, destination port and ICMP type are given exactly — and each group is a hash table
//! from the rule's masked fields to the lowest rule index with them. A packet is masked once per
//! shape and looked up; the first match is the lowest index found. Rules with a port *range* (not
//! one port, not all) cannot be hashed: they are walked, in order, only while they could still
//! beat the best index found. So the cost grows with the number of distinct shapes and ranged
//! rules, not with the number of rules; [`super::acl::Acl::classify`] (the linear walk) stays the
//! reference the tests compare with.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::acl::{Acl, Hit, PacketKey, PortRange, Rule};
use crate::ip::Ipv4Prefix;
use crate::nat44::session::MixHasher;

/// One mask shape and its rules.
#[derive(Debug, Clone)]
struct Shape {
    src_mask: u32,
    dst_mask: u32,
    proto: bool,
    sport: bool,
    dport: bool,
    icmp: bool,
    /// The lowest rule index of this shape (to skip shapes that cannot win).
    first: u32,
    table: HashMap<u128, u32, BuildHasherDefault<MixHasher>>,
}

/// What of a packet a shape keeps, packed: source, destination, protocol, ports, ICMP type.
#[inline]
fn pack(src: u32, dst: u32, proto: u8, sport: u16, dport: u16, icmp: u8) -> u128 {
    (src as u128) << 96
        | (dst as u128) << 64
        | (proto as u128) << 40
        | (sport as u128) << 24
        | (dport as u128) << 8
        | icmp as u128
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
    shapes: Vec<Shape>,
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
            let (sm, dm) = (Ipv4Prefix::mask(r.src.len), Ipv4Prefix::mask(r.dst.len));
            let shape = (
                sm,
                dm,
                r.proto.is_some(),
                sport.is_some(),
                dport.is_some(),
                r.icmp_type.is_some(),
            );
            let s =
                match c.shapes.iter_mut().position(|s| {
                    (s.src_mask, s.dst_mask, s.proto, s.sport, s.dport, s.icmp) == shape
                }) {
                    Some(k) => &mut c.shapes[k],
                    None => {
                        c.shapes.push(Shape {
                            src_mask: sm,
                            dst_mask: dm,
                            proto: shape.2,
                            sport: shape.3,
                            dport: shape.4,
                            icmp: shape.5,
                            first: i,
                            table: HashMap::default(),
                        });
                        c.shapes.last_mut().expect("just pushed")
                    }
                };
            let key = pack(
                u32::from(r.src.addr) & sm,
                u32::from(r.dst.addr) & dm,
                r.proto.map_or(0, |p| p.0),
                sport.unwrap_or(0),
                dport.unwrap_or(0),
                r.icmp_type.unwrap_or(0),
            );
            // Rules come in order: the first one with this key is the one that matches first.
            s.table.entry(key).or_insert(i);
        }
        c.shapes.sort_by_key(|s| s.first);
        c
    }

    /// Distinct mask shapes (hash probes per lookup at most).
    pub fn shapes(&self) -> usize {
        self.shapes.len()
    }

    /// The first rule of `rules` (the ACL this was compiled from) matching `k`.
    #[inline]
    pub fn classify(&self, rules: &[Rule], k: &PacketKey) -> Hit {
        let mut best = u32::MAX;
        let (src, dst) = (u32::from(k.src), u32::from(k.dst));
        for s in &self.shapes {
            if s.first >= best {
                break;
            }
            let key = pack(
                src & s.src_mask,
                dst & s.dst_mask,
                if s.proto { k.proto } else { 0 },
                if s.sport { k.sport } else { 0 },
                if s.dport { k.dport } else { 0 },
                if s.icmp { k.icmp_type } else { 0 },
            );
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
    use crate::firewall::acl::{Action, Proto};
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::net::Ipv4Addr;

    /// Random ACLs and packets from small pools (so that rules and packets meet): the compiled
    /// lookup gives the linear walk's answer for every packet.
    #[test]
    fn the_shape_lookup_equals_the_linear_walk() {
        let mut r = ChaCha8Rng::seed_from_u64(11);
        let mut below = |n: u32| r.next_u32() % n;
        let addrs = [
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            [10, 0, 1, 9],
            [192, 0, 2, 1],
            [192, 0, 2, 200],
            [203, 0, 113, 7],
        ];
        let ports = [0u16, 22, 53, 80, 443, 1000, 5000];
        let ranges = ["22", "53", "80", "0-65535", "1-1023", "1000-6000", "0"];
        let mut checked = 0;
        for _ in 0..200 {
            let n = 1 + below(60) as usize;
            let rules: Vec<Rule> = (0..n)
                .map(|_| {
                    let mut x = Rule::any(match below(3) {
                        0 => Action::Deny,
                        1 => Action::Permit,
                        _ => Action::PermitReflect,
                    });
                    if below(2) == 0 {
                        let a = Ipv4Addr::from(addrs[below(6) as usize]);
                        x.src = Ipv4Prefix::new(a, [0u8, 8, 24, 31, 32][below(5) as usize])
                            .unwrap()
                            .network();
                    }
                    if below(2) == 0 {
                        let a = Ipv4Addr::from(addrs[below(6) as usize]);
                        x.dst = Ipv4Prefix::new(a, [16u8, 24, 32][below(3) as usize])
                            .unwrap()
                            .network();
                    }
                    match below(4) {
                        0 => {}
                        1 => {
                            x.proto = Some(Proto(1));
                            if below(2) == 0 {
                                x.icmp_type = Some([0u8, 3, 8][below(3) as usize]);
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
            let c = Classifier::new(&acl);
            for _ in 0..200 {
                let proto = [1u8, 6, 17, 47][below(4) as usize];
                let mut k = PacketKey::new(
                    addrs[below(6) as usize].into(),
                    addrs[below(6) as usize].into(),
                    proto,
                );
                if proto == 6 || proto == 17 {
                    k.has_ports = true;
                    k.sport = ports[below(7) as usize];
                    k.dport = ports[below(7) as usize];
                }
                if proto == 1 {
                    k.icmp_type = [0u8, 3, 8, 11][below(4) as usize];
                }
                assert_eq!(
                    c.classify(&acl.rules, &k),
                    acl.classify(&k),
                    "{k:?} {acl:?}"
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 40_000);
    }

    #[test]
    fn many_rules_of_few_shapes_make_few_shapes() {
        let acl = crate::firewall::testing::acl(100, Action::Permit);
        assert_eq!(Classifier::new(&acl).shapes(), 2);
    }
}
