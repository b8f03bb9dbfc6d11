//! The neighbour table: an IP address on an interface → MAC, static or learned, and the
//! incomplete entries of addresses being resolved with the packets waiting for them (ARP, RFC 826,
//! for IPv4; Neighbor Discovery, RFC 4861 §7.2, for IPv6; the pending queue and retries as RFC
//! 1122 §2.3.2.2 asks: "SHOULD save (rather than discard) at least one (the latest) packet", and
//! RFC 4861 §7.2.2, bounded). One implementation serves both families ([`NeighborAddr`]:
//! `Ipv4Addr` keyed by a `u32`, `Ipv6Addr` by a `u128`); IPv6 keeps no NUD states beyond
//! incomplete / resolved (RFC 4861 §7.3.2's REACHABLE/STALE/PROBE are not modelled: a resolved
//! entry ages like an ARP one).
//!
//! Entries live in slots (stable indices) with a hash index by `(interface, address)`. The table
//! holds at most `limit` entries; an incomplete entry counts. Learned entries age out
//! `neighbor_age_s` after their last confirmation ([`NeighborTable::age`]); incomplete ones are
//! given up after their last request went unanswered for a second.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::net::{Ipv4Addr, Ipv6Addr};

use vecswitch_wire::EthernetAddress;

use crate::interface::SwIfIdx;

/// An address family's neighbour address, with the integer key the table hashes.
pub trait NeighborAddr: Copy + Eq + fmt::Debug + fmt::Display {
    /// The address as an integer (host order).
    type Key: Copy + Eq + Hash + fmt::Debug;
    /// The key of the address.
    fn key(self) -> Self::Key;
}

impl NeighborAddr for Ipv4Addr {
    type Key = u32;
    #[inline]
    fn key(self) -> u32 {
        u32::from(self)
    }
}

impl NeighborAddr for Ipv6Addr {
    type Key = u128;
    #[inline]
    fn key(self) -> u128 {
        u128::from(self)
    }
}

/// One neighbour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbor<A = Ipv4Addr> {
    pub iface: SwIfIdx,
    pub ip: A,
    /// `None` while incomplete (an ARP request or neighbor solicitation is out).
    pub mac: Option<EthernetAddress>,
    pub is_static: bool,
    /// Switch second of the last confirmation (or of creation).
    pub updated_s: u32,
    /// ARP requests sent while incomplete, and when the last one went.
    pub requests: u32,
    pub last_request_s: u32,
    /// Packets waiting for the MAC (buffer handles, already rewritten but for the MACs).
    pub pending: Vec<u32>,
}

impl<A> Neighbor<A> {
    /// An entry made at switch second `now`: static or learned with its MAC, or incomplete
    /// (`mac` `None`, no request sent yet), no packet waiting.
    pub fn new(
        iface: SwIfIdx,
        ip: A,
        mac: Option<EthernetAddress>,
        is_static: bool,
        now: u32,
    ) -> Self {
        Neighbor {
            iface,
            ip,
            mac,
            is_static,
            updated_s: now,
            requests: 0,
            last_request_s: now,
            pending: Vec::new(),
        }
    }
}

/// Why an entry could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighborError {
    /// The table holds `limit` entries.
    Full,
}

/// A multiplicative hash for the table's small fixed keys (interface, address): the keys come
/// from the switch's own configuration and from ARP of subnets it serves, and the table is
/// bounded (`neighbor_limit`), so SipHash's flooding resistance is not worth its ~100
/// instructions per packet on the forwarding path.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^ (x >> 29)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).rotate_left(5);
        }
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.0 = (self.0 << 16) ^ i as u64;
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.0 = (self.0 << 32) ^ i as u64;
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        // The interface identifier (low half) varies most between neighbours of one subnet.
        self.0 = (self.0 << 32) ^ (i as u64) ^ ((i >> 64) as u64).rotate_left(29);
    }
}

/// The neighbour table of one family.
#[derive(Debug, Clone)]
pub struct NeighborTable<A: NeighborAddr = Ipv4Addr> {
    slots: Vec<Option<Neighbor<A>>>,
    free: Vec<u32>,
    index: HashMap<(SwIfIdx, A::Key), u32, BuildHasherDefault<KeyHasher>>,
    /// Next slot the incremental aging looks at.
    cursor: usize,
}

impl<A: NeighborAddr> Default for NeighborTable<A> {
    fn default() -> Self {
        NeighborTable {
            slots: Vec::new(),
            free: Vec::new(),
            index: HashMap::default(),
            cursor: 0,
        }
    }
}

impl<A: NeighborAddr> NeighborTable<A> {
    /// Entries (static, learned and incomplete).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The slot of `(iface, ip)`.
    #[inline]
    pub fn find(&self, iface: SwIfIdx, ip: A) -> Option<u32> {
        if self.index.is_empty() {
            return None;
        }
        self.index.get(&(iface, ip.key())).copied()
    }

    /// Slot `hint` if it holds `(iface, ip)` (a cached slot, checked), else the slot found by
    /// hash.
    #[inline]
    pub fn find_hinted(&self, hint: u32, iface: SwIfIdx, ip: A) -> Option<u32> {
        match self.get(hint) {
            Some(n) if n.iface == iface && n.ip == ip => Some(hint),
            _ => self.find(iface, ip),
        }
    }

    /// The entry in slot `i`.
    #[inline]
    pub fn get(&self, i: u32) -> Option<&Neighbor<A>> {
        self.slots.get(i as usize).and_then(Option::as_ref)
    }

    /// The entry in slot `i`, writable.
    #[inline]
    pub fn get_mut(&mut self, i: u32) -> Option<&mut Neighbor<A>> {
        self.slots.get_mut(i as usize).and_then(Option::as_mut)
    }

    /// The MAC of `(iface, ip)` if it is resolved.
    #[inline]
    pub fn mac(&self, iface: SwIfIdx, ip: A) -> Option<EthernetAddress> {
        self.find(iface, ip)
            .and_then(|i| self.get(i))
            .and_then(|n| n.mac)
    }

    /// Adds an entry (the caller checked `(iface, ip)` is not there) if fewer than `limit` are.
    pub fn insert(&mut self, n: Neighbor<A>, limit: u32) -> Result<u32, NeighborError> {
        if self.index.len() >= limit as usize {
            return Err(NeighborError::Full);
        }
        let key = (n.iface, n.ip.key());
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(n);
                i
            }
            None => {
                self.slots.push(Some(n));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(key, i);
        Ok(i)
    }

    /// Removes slot `i` and gives back the entry (its pending packets are the caller's to free).
    pub fn remove(&mut self, i: u32) -> Option<Neighbor<A>> {
        let n = self.slots.get_mut(i as usize)?.take()?;
        self.index.remove(&(n.iface, n.ip.key()));
        self.free.push(i);
        Some(n)
    }

    /// Every entry, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &Neighbor<A>> {
        self.slots.iter().flatten()
    }

    /// Looks at up to `budget` slots from where the last call stopped and removes learned entries
    /// older than `age_s` (0: learned entries never age) and incomplete entries whose last request
    /// (of `max_requests`) went unanswered for a second. Returns the removed entries (their pending
    /// packets are the caller's). Incomplete entries that may still ask again are returned in
    /// `retry` (slot indices).
    pub fn age(
        &mut self,
        now_s: u32,
        age_s: u32,
        max_requests: u32,
        budget: usize,
        retry: &mut Vec<u32>,
    ) -> Vec<Neighbor<A>> {
        let mut gone = Vec::new();
        let n = self.slots.len();
        for _ in 0..budget.min(n) {
            self.cursor = if self.cursor + 1 >= n {
                0
            } else {
                self.cursor + 1
            };
            let i = self.cursor as u32;
            let Some(e) = self.get(i) else { continue };
            let expired = match e.mac {
                _ if e.is_static => false,
                Some(_) => age_s != 0 && now_s.saturating_sub(e.updated_s) >= age_s,
                None => {
                    let quiet = now_s.saturating_sub(e.last_request_s) >= 1;
                    if quiet && e.requests < max_requests {
                        retry.push(i);
                    }
                    quiet && e.requests >= max_requests
                }
            };
            if expired {
                gone.extend(self.remove(i));
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_neighbours_are_keyed_by_interface_and_address() {
        let mut t: NeighborTable<Ipv6Addr> = NeighborTable::default();
        let a: Ipv6Addr = "2001:db8::2".parse().unwrap();
        let b: Ipv6Addr = "2001:db8:1::2".parse().unwrap();
        for (iface, ip, m) in [(1, a, 1), (1, b, 2), (2, a, 3)] {
            let n = Neighbor {
                iface,
                ip,
                mac: Some(EthernetAddress([2, 0, 0, 0, 0, m])),
                is_static: false,
                updated_s: 0,
                requests: 0,
                last_request_s: 0,
                pending: Vec::new(),
            };
            t.insert(n, 10).unwrap();
        }
        assert_eq!(t.mac(1, a).unwrap().0[5], 1);
        assert_eq!(t.mac(1, b).unwrap().0[5], 2);
        assert_eq!(t.mac(2, a).unwrap().0[5], 3);
        assert_eq!(t.mac(2, b), None);
    }

    fn n(ip: [u8; 4], mac: Option<u8>) -> Neighbor {
        Neighbor {
            iface: 1,
            ip: Ipv4Addr::from(ip),
            mac: mac.map(|b| EthernetAddress([2, 0, 0, 0, 0, b])),
            is_static: false,
            updated_s: 10,
            requests: 1,
            last_request_s: 10,
            pending: Vec::new(),
        }
    }

    #[test]
    fn the_limit_holds_and_slots_are_reused() {
        let mut t: NeighborTable = NeighborTable::default();
        let a = t.insert(n([10, 0, 0, 1], Some(1)), 2).unwrap();
        t.insert(n([10, 0, 0, 2], None), 2).unwrap();
        assert_eq!(
            t.insert(n([10, 0, 0, 3], None), 2),
            Err(NeighborError::Full)
        );
        assert_eq!(t.mac(1, Ipv4Addr::new(10, 0, 0, 1)).unwrap().0[5], 1);
        assert_eq!(t.mac(1, Ipv4Addr::new(10, 0, 0, 2)), None, "incomplete");
        assert_eq!(
            t.mac(2, Ipv4Addr::new(10, 0, 0, 1)),
            None,
            "other interface"
        );
        t.remove(a).unwrap();
        assert_eq!(t.insert(n([10, 0, 0, 3], None), 2), Ok(a));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn aging_removes_old_learned_and_given_up_incomplete_entries_only() {
        let mut t: NeighborTable = NeighborTable::default();
        t.insert(n([10, 0, 0, 1], Some(1)), 10).unwrap();
        let mut s = n([10, 0, 0, 2], Some(2));
        s.is_static = true;
        t.insert(s, 10).unwrap();
        let mut inc = n([10, 0, 0, 3], None);
        inc.requests = 3;
        t.insert(inc, 10).unwrap();
        t.insert(n([10, 0, 0, 4], None), 10).unwrap(); // one request so far: retry
        let mut retry = Vec::new();
        let gone = t.age(11, 300, 3, 100, &mut retry);
        assert_eq!(gone.len(), 1, "the incomplete entry out of requests");
        assert_eq!(gone[0].ip, Ipv4Addr::new(10, 0, 0, 3));
        assert_eq!(retry.len(), 1);
        retry.clear();
        let gone = t.age(310, 300, 3, 100, &mut retry);
        assert_eq!(gone.len(), 1, "the learned entry, not the static one");
        assert_eq!(gone[0].ip, Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(t.len(), 2);
    }
}
