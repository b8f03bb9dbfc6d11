//! Connection tracking for the firewall: connections a `permit-reflect` let through, keyed by their
//! originator's 5-tuple (protocol, source, source port, destination, destination port; an ICMP
//! echo uses its identifier as the requester's port and 0 as the other, as NAT44 does). A packet
//! whose tuple, or whose reversed tuple, is a tracked connection is *established*; an ICMP error
//! about such a packet is *related*. Entries expire after the idle timeouts of
//! [`super::FirewallSettings`] (the RFC 7857 values, as NAT44's) and are bounded in number.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::net::Ipv4Addr;

use crate::nat44::session::{pack, MixHasher};

/// One tracked connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conn {
    pub proto: u8,
    pub src: Ipv4Addr,
    pub sport: u16,
    pub dst: Ipv4Addr,
    pub dport: u16,
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
    index: HashMap<u128, u32, BuildHasherDefault<MixHasher>>,
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

    /// The connection of a packet with this tuple, and the packet's direction in it.
    #[inline]
    pub fn find(
        &self,
        proto: u8,
        src: Ipv4Addr,
        sport: u16,
        dst: Ipv4Addr,
        dport: u16,
    ) -> Option<(u32, Dir)> {
        if let Some(&i) = self.index.get(&pack(proto, src, sport, dst, dport)) {
            return Some((i, Dir::Original));
        }
        self.index
            .get(&pack(proto, dst, dport, src, sport))
            .map(|&i| (i, Dir::Reply))
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

    /// Tracks a new connection (`reflect`: see [`Conn::reflect`]); `false` when `limit` connections are tracked already.
    #[allow(clippy::too_many_arguments)]
    pub fn insert(
        &mut self,
        proto: u8,
        src: Ipv4Addr,
        sport: u16,
        dst: Ipv4Addr,
        dport: u16,
        now_ns: u64,
        limit: u32,
        reflect: bool,
    ) -> bool {
        let key = pack(proto, src, sport, dst, dport);
        if self.index.contains_key(&key) {
            return true;
        }
        if self.len() >= limit as usize {
            return false;
        }
        let c = Conn {
            proto,
            src,
            sport,
            dst,
            dport,
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
        self.index.insert(key, i);
        self.created += 1;
        true
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
            self.index
                .remove(&pack(c.proto, c.src, c.sport, c.dst, c.dport));
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
        assert!(ct.insert(17, a, 5000, b, 53, 0, 10, true));
        assert_eq!(ct.find(17, a, 5000, b, 53), Some((0, Dir::Original)));
        assert_eq!(ct.find(17, b, 53, a, 5000), Some((0, Dir::Reply)));
        assert_eq!(ct.find(17, b, 53, a, 5001), None);
        assert_eq!(ct.find(6, b, 53, a, 5000), None);
        assert!(!ct.insert(17, a, 5001, b, 53, 0, 1, true), "limit");
        ct.touch(0, Dir::Reply, 5);
        assert!(ct.get(0).unwrap().replied);
        assert_eq!(ct.expire_step(100, 10, |_| 200), 0);
        assert_eq!(ct.expire_step(300, 10, |_| 200), 1);
        assert!(ct.is_empty());
    }
}
