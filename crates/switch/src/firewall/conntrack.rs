//! Connection tracking for the firewall: connections a `permit-reflect` let through, keyed by their
//! originator's 5-tuple ([`Tuple`]: protocol, source, source port, destination, destination port,
//! of IPv4 or IPv6; an ICMP or ICMPv6 echo uses its identifier as the requester's port and 0 as
//! the other, as NAT44 does). A packet
//! whose tuple, or whose reversed tuple, is a tracked connection is *established*; an ICMP error
//! about such a packet is *related*. Entries expire after the idle timeouts of
//! [`super::FirewallSettings`] (the RFC 7857 values, as NAT44's) and are bounded in number.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::hash::MixHasher;

/// A connection's tuple as one of its packets carries it: protocol, source and port,
/// destination and port, of IPv4 (addresses in the low 32 bits) or IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuple {
    pub v6: bool,
    pub proto: u8,
    pub src: u128,
    pub sport: u16,
    pub dst: u128,
    pub dport: u16,
}

impl Hash for Tuple {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        let rest = (self.proto as u128) << 32
            | (self.sport as u128) << 16
            | self.dport as u128
            | (self.v6 as u128) << 40;
        h.write_u128(self.src ^ self.dst.rotate_left(61) ^ rest.rotate_left(80));
    }
}

impl Tuple {
    /// An IPv4 tuple.
    pub fn v4(proto: u8, src: Ipv4Addr, sport: u16, dst: Ipv4Addr, dport: u16) -> Tuple {
        Tuple {
            v6: false,
            proto,
            src: u32::from(src) as u128,
            sport,
            dst: u32::from(dst) as u128,
            dport,
        }
    }

    /// An IPv6 tuple.
    pub fn v6(proto: u8, src: Ipv6Addr, sport: u16, dst: Ipv6Addr, dport: u16) -> Tuple {
        Tuple {
            v6: true,
            proto,
            src: u128::from(src),
            sport,
            dst: u128::from(dst),
            dport,
        }
    }

    /// The tuple of the other direction.
    #[inline]
    pub fn reversed(self) -> Tuple {
        Tuple {
            src: self.dst,
            sport: self.dport,
            dst: self.src,
            dport: self.sport,
            ..self
        }
    }

    /// Address `a` of this tuple's family.
    pub fn addr(&self, a: u128) -> IpAddr {
        if self.v6 {
            IpAddr::V6(Ipv6Addr::from(a))
        } else {
            IpAddr::V4(Ipv4Addr::from(a as u32))
        }
    }
}

/// One tracked connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conn {
    /// The originator's tuple.
    pub tuple: Tuple,
    /// Whether a packet was seen from the responder (TCP: its SYN-ACK makes the connection
    /// established for the timeout).
    pub replied: bool,
    /// Let through by a `permit-reflect`: its packets are established (pass before the rules).
    /// A connection a plain `permit` let through is tracked too (as the kernel tracks every
    /// connection) but its packets still meet the rules, until a `permit-reflect` takes it.
    pub reflect: bool,
    pub last_ns: u64,
    pub packets: u64,
}

/// Whether a packet went the originator's way or the reply's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Original,
    Reply,
}

/// The tracked connections. See the module doc.
#[derive(Debug, Default)]
pub struct Conntrack {
    slots: Vec<Option<Conn>>,
    free: Vec<u32>,
    index: HashMap<Tuple, u32, BuildHasherDefault<MixHasher>>,
    sweep: usize,
    pub created: u64,
    pub expired: u64,
}

impl Conntrack {
    /// Connections tracked.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The connection at `i`.
    pub fn get(&self, i: u32) -> Option<&Conn> {
        self.slots.get(i as usize)?.as_ref()
    }

    /// Every connection.
    pub fn iter(&self) -> impl Iterator<Item = &Conn> {
        self.slots.iter().flatten()
    }

    /// The connection of a packet with tuple `t`, and the packet's direction in it.
    #[inline]
    pub fn find(&self, t: Tuple) -> Option<(u32, Dir)> {
        if let Some(&i) = self.index.get(&t) {
            return Some((i, Dir::Original));
        }
        self.index.get(&t.reversed()).map(|&i| (i, Dir::Reply))
    }

    /// Notes a packet of connection `i` in direction `d` at `now_ns`.
    #[inline]
    pub fn touch(&mut self, i: u32, d: Dir, now_ns: u64) {
        if let Some(Some(c)) = self.slots.get_mut(i as usize) {
            c.last_ns = now_ns;
            c.packets += 1;
            if d == Dir::Reply {
                c.replied = true;
            }
        }
    }

    /// Tracks a new connection with originator tuple `t` (`reflect`: see [`Conn::reflect`]) and
    /// returns its index (that of the tracked one if `t` is); `None` when `limit` connections are
    /// tracked already.
    pub fn insert(&mut self, t: Tuple, now_ns: u64, limit: u32, reflect: bool) -> Option<u32> {
        if let Some(&i) = self.index.get(&t) {
            return Some(i);
        }
        if self.len() >= limit as usize {
            return None;
        }
        let c = Conn {
            tuple: t,
            replied: false,
            reflect,
            last_ns: now_ns,
            packets: 1,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(c);
                i
            }
            None => {
                self.slots.push(Some(c));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(t, i);
        self.created += 1;
        Some(i)
    }

    /// Marks connection `i` reflected (a `permit-reflect` took it).
    pub fn set_reflect(&mut self, i: u32) {
        if let Some(Some(c)) = self.slots.get_mut(i as usize) {
            c.reflect = true;
        }
    }

    /// Stops tracking connection `i`.
    pub fn remove(&mut self, i: u32) {
        if let Some(c) = self.slots.get_mut(i as usize).and_then(Option::take) {
            self.index.remove(&c.tuple);
            self.free.push(i);
        }
    }

    /// Looks at up to `slots` slots and removes connections idle past `timeout_ns(conn)`.
    pub fn expire_step(
        &mut self,
        now_ns: u64,
        slots: usize,
        timeout_ns: impl Fn(&Conn) -> u64,
    ) -> usize {
        let n = self.slots.len();
        let mut removed = 0;
        for _ in 0..slots.min(n) {
            self.sweep = (self.sweep + 1) % n;
            let i = self.sweep as u32;
            if let Some(c) = self.get(i) {
                if now_ns.saturating_sub(c.last_ns) > timeout_ns(c) {
                    self.remove(i);
                    removed += 1;
                }
            }
        }
        self.expired += removed as u64;
        removed
    }

    /// Forgets every connection.
    pub fn clear(&mut self) {
        *self = Conntrack {
            created: self.created,
            expired: self.expired,
            ..Conntrack::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions_find_the_connection() {
        let mut ct = Conntrack::default();
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(
            ct.insert(Tuple::v4(17, a, 5000, b, 53), 0, 10, true),
            Some(0)
        );
        assert_eq!(
            ct.find(Tuple::v4(17, a, 5000, b, 53)),
            Some((0, Dir::Original))
        );
        assert_eq!(
            ct.find(Tuple::v4(17, b, 53, a, 5000)),
            Some((0, Dir::Reply))
        );
        assert_eq!(ct.find(Tuple::v4(17, b, 53, a, 5001)), None);
        assert_eq!(ct.find(Tuple::v4(6, b, 53, a, 5000)), None);
        assert_eq!(
            ct.insert(Tuple::v4(17, a, 5001, b, 53), 0, 1, true),
            None,
            "limit"
        );
        ct.touch(0, Dir::Reply, 5);
        assert!(ct.get(0).unwrap().replied);
        assert_eq!(ct.expire_step(100, 10, |_| 200), 0);
        assert_eq!(ct.expire_step(300, 10, |_| 200), 1);
        assert!(ct.is_empty());
    }

    /// IPv6 connections are found both ways, and an IPv4 tuple whose addresses are an IPv6
    /// tuple's low 32 bits is another connection.
    #[test]
    fn ipv6_connections_and_families_apart() {
        let mut ct = Conntrack::default();
        let (a, b): (Ipv6Addr, Ipv6Addr) = (
            "2001:db8::2".parse().unwrap(),
            "::c000:201".parse().unwrap(),
        );
        let t6 = Tuple::v6(6, a, 40000, b, 443);
        assert_eq!(ct.insert(t6, 0, 10, true), Some(0));
        assert_eq!(ct.find(t6.reversed()), Some((0, Dir::Reply)));
        let t4 = Tuple::v4(
            6,
            Ipv4Addr::new(0, 0, 0, 2),
            40000,
            Ipv4Addr::new(192, 0, 2, 1),
            443,
        );
        assert_eq!(t4.src, t6.src & 0xffff_ffff);
        assert_eq!(ct.find(t4), None);
        assert_eq!(ct.insert(t4, 0, 10, true), Some(1));
        assert_eq!(ct.len(), 2);
        assert_eq!(ct.get(0).unwrap().tuple.addr(t6.src), IpAddr::V6(a));
        ct.remove(0);
        assert_eq!(ct.find(t6), None);
        assert_eq!(ct.find(t4), Some((1, Dir::Original)));
    }
}
