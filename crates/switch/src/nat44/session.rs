//! The NAT44 session table: sessions in a slab of cache-line slots (indices stay valid until the
//! session is removed), found from either side through two [`Index`]es keyed by the 6-tuple
//! (VRF 0, protocol, two addresses, two ports): `in2out` by (protocol, inside address, inside
//! port, remote address, remote port), `out2in` by (protocol, remote address, remote port,
//! outside address, outside port). ICMP query sessions use the echo identifier as both ports of
//! their side (remote port 0).
//!
//! Each session stores both rewrites and the RFC 1624 checksum deltas of the in2out rewrite
//! (`d_ip` for the IPv4 header, `d_l4` for the TCP/UDP/ICMP checksum, which also covers the port
//! or identifier); out2in applies their one's complement negation, so a packet's checksums are
//! updated with one addition each.
//!
//! What a translated packet touches (issue 11, 1M sessions): one bucket line of an index
//! ([`super::index`]) and one session slot ([`Session`] is 64 bytes or less, and a slot is
//! aligned to 64 bytes, so the key, both rewrites, the deltas, the time and the TCP state are in
//! one line). The nodes look both up in stages over a vector ([`super::staged`]): every packet's
//! bucket is loaded before any is read, then every found session's slot before any is
//! rewritten. The per-host counts are read only when a session is made or removed.
//!
//! The slab is a [`HugeVec`] and the indexes' buckets [`vecswitch_buffer::huge::HugeSlice`]s:
//! from 2 MiB each is its own mapping advised for 2 MiB pages before it is written (1M
//! sessions: a 64 MiB slab and two 32 MiB indexes on ~64 huge pages instead of ~32,000 4-KiB
//! ones), so the staged lookups' misses are cache misses only, not TLB misses and page walks
//! as well. [`SessionTable::memory`] says what they got.

use std::hash::Hasher;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use vecswitch_buffer::huge::{HugeVec, Memory};
use vecswitch_wire::checksum;

use super::index::{Hashed, Index, Key, MAX_SLOTS};
use super::translate::{ICMP, TCP};
use crate::hash::{MixHasher, MixMap};

/// Ports (or ICMP identifiers) tried for a new session before it is refused as `out-of-ports`.
pub const MAX_PORT_TRIES: u32 = 256;
/// First port of the dynamic range the allocator walks (the inside port itself is tried first).
pub const PORT_MIN: u16 = 1024;

/// The inside side of a session: protocol, inside endpoint, remote endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FlowKey {
    pub proto: u8,
    pub in_addr: Ipv4Addr,
    pub in_port: u16,
    pub rem_addr: Ipv4Addr,
    pub rem_port: u16,
}

/// The packed key of a direction's hash table: protocol, two addresses, two ports.
#[inline]
pub fn pack(proto: u8, a: Ipv4Addr, ap: u16, b: Ipv4Addr, bp: u16) -> u128 {
    (proto as u128) << 96
        | (u32::from(a) as u128) << 64
        | (ap as u128) << 48
        | (u32::from(b) as u128) << 16
        | bp as u128
}

/// TCP state of a session, for its timeout (RFC 7857 §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TcpState {
    /// Not TCP.
    None,
    /// Opening: a SYN has been seen from one side only (transitory).
    SynSent,
    /// SYNs seen from both sides (the established timeout).
    Established,
    /// A RST, or FINs from both sides (transitory).
    Closing,
}

/// One translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session {
    pub key: FlowKey,
    pub out_addr: Ipv4Addr,
    pub out_port: u16,
    pub tcp: TcpState,
    /// TCP flags seen: SYN from inside, SYN from outside, FIN from inside, FIN from outside.
    pub seen: u8,
    pub created_ns: u64,
    pub last_ns: u64,
    pub pkts_in2out: u64,
    pub pkts_out2in: u64,
    /// RFC 1624 delta of the in2out rewrite for the IPv4 header checksum (the address).
    pub d_ip: u16,
    /// RFC 1624 delta of the in2out rewrite for the L4 checksum (address and port).
    pub d_l4: u16,
}

/// TCP flag bits of [`Session::seen`].
pub const SEEN_SYN_IN: u8 = 1;
pub const SEEN_SYN_OUT: u8 = 2;
pub const SEEN_FIN_IN: u8 = 4;
pub const SEEN_FIN_OUT: u8 = 8;

impl Session {
    /// This session's key in index `d`.
    #[inline]
    pub fn index_key(&self, d: Dir) -> Key {
        let k = &self.key;
        match d {
            Dir::In2Out => in2out_key(k),
            Dir::Out2In => out2in_key(
                k.proto,
                k.rem_addr,
                k.rem_port,
                self.out_addr,
                self.out_port,
            ),
        }
    }

    /// Advances the TCP state on a segment with `flags` (the TCP header's flag byte) seen in the
    /// in2out (`inbound == false`) or out2in direction.
    pub fn tcp_update(&mut self, flags: u8, inbound: bool) {
        const FIN: u8 = 0x01;
        const SYN: u8 = 0x02;
        const RST: u8 = 0x04;
        const ACK: u8 = 0x10;
        if flags & RST != 0 {
            self.tcp = TcpState::Closing;
            return;
        }
        if flags & SYN != 0 {
            if self.tcp == TcpState::Closing && !inbound && flags & ACK == 0 {
                // A new connection on the same tuple (the previous one closed): start again.
                self.seen = 0;
                self.tcp = TcpState::SynSent;
            }
            self.seen |= if inbound { SEEN_SYN_OUT } else { SEEN_SYN_IN };
        }
        if flags & FIN != 0 {
            self.seen |= if inbound { SEEN_FIN_OUT } else { SEEN_FIN_IN };
        }
        self.tcp = if self.seen & (SEEN_FIN_IN | SEEN_FIN_OUT) == SEEN_FIN_IN | SEEN_FIN_OUT {
            TcpState::Closing
        } else if self.seen & (SEEN_SYN_IN | SEEN_SYN_OUT) == SEEN_SYN_IN | SEEN_SYN_OUT {
            TcpState::Established
        } else if self.tcp == TcpState::Closing {
            TcpState::Closing
        } else {
            TcpState::SynSent
        };
    }
}

/// RFC 1624 eqn. 3's `~m + m'` for a 32-bit and a 16-bit field, folded: the delta to add to `~HC`.
#[inline]
pub fn delta(old_addr: Ipv4Addr, new_addr: Ipv4Addr, old_port: u16, new_port: u16) -> (u16, u16) {
    let (o, n) = (u32::from(old_addr), u32::from(new_addr));
    let ip = (!o >> 16) as u64 + (!o & 0xffff) as u64 + (n >> 16) as u64 + (n & 0xffff) as u64;
    let l4 = ip + (!old_port) as u64 + new_port as u64;
    (checksum::fold(ip), checksum::fold(l4))
}

/// Applies a folded delta to checksum `hc` (RFC 1624 eqn. 3: `HC' = ~(~HC + Σ(~m + m'))`).
#[inline]
pub fn apply(hc: u16, d: u16) -> u16 {
    !checksum::fold(!hc as u64 + d as u64)
}

type Map<K> = MixMap<K, u32>;

/// Why a session could not be made (each a drop reason of `nat44-in2out`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateError {
    /// The table holds `max_sessions`.
    SessionLimit,
    /// The inside host holds `max_sessions_per_host`.
    HostLimit,
    /// No outside port free for this remote endpoint within [`MAX_PORT_TRIES`].
    OutOfPorts,
}

/// Which of the two indexes: by the inside 6-tuple or by the outside one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    In2Out,
    Out2In,
}

/// The in2out index key of inside flow `k`.
#[inline]
pub fn in2out_key(k: &FlowKey) -> Key {
    Key::new(k.proto, k.in_addr, k.in_port, k.rem_addr, k.rem_port)
}

/// The out2in index key of a packet from remote endpoint (`rem`, `rem_port`) to the outside
/// endpoint (`out`, `out_port`).
#[inline]
pub fn out2in_key(proto: u8, rem: Ipv4Addr, rem_port: u16, out: Ipv4Addr, out_port: u16) -> Key {
    Key::new(proto, rem, rem_port, out, out_port)
}

/// A session slot: one cache line, so that a packet's translation (its key to check, the
/// rewrite, the checksum deltas, the time and TCP state to update) reads and writes one line.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
struct Slot(Option<Session>);

const _: () = assert!(std::mem::size_of::<Slot>() == 64);

/// The sessions and their two indexes. See the module doc.
#[derive(Debug, Default)]
pub struct SessionTable {
    slots: HugeVec<Slot>,
    free: Vec<u32>,
    in2out: Index,
    out2in: Index,
    per_host: Map<u32>,
    /// Next slot the expiry sweep looks at.
    sweep: usize,
    /// Sessions made, and removed because they were idle past their timeout.
    pub created: u64,
    pub expired: u64,
}

impl SessionTable {
    /// An empty table whose indexes hash with `seed` (reproducible benchmarks; the switch's
    /// tables have random seeds).
    pub fn with_seed(seed: u64) -> SessionTable {
        SessionTable {
            in2out: Index::with_seed(seed),
            out2in: Index::with_seed(seed ^ 0x5bd1_e995),
            ..SessionTable::default()
        }
    }

    /// Sessions in the table.
    pub fn len(&self) -> usize {
        self.in2out.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.in2out.is_empty()
    }

    /// Inside hosts with at least one session.
    pub fn hosts(&self) -> usize {
        self.per_host.len()
    }

    /// The index of direction `d` (for staged lookups: [`Index::hashed`], [`Index::prefetch`],
    /// [`Index::get`]).
    #[inline]
    pub fn index_for(&self, d: Dir) -> &Index {
        match d {
            Dir::In2Out => &self.in2out,
            Dir::Out2In => &self.out2in,
        }
    }

    /// Prefetches session slot `i` so that its cache line is on its way (the second stage of a
    /// staged lookup, after the index's; [`vecswitch_buffer::prefetch::prefetch_read`]). Changes
    /// nothing.
    #[inline(always)]
    pub fn prefetch(&self, i: u32) {
        if let Some(s) = self.slots.get(i as usize) {
            vecswitch_buffer::prefetch::prefetch_read(s);
        }
    }

    /// The memory of the slab and both indexes (size; huge pages only if all three are).
    pub fn memory(&self) -> Memory {
        self.slots
            .memory()
            .plus(&self.in2out.memory())
            .plus(&self.out2in.memory())
    }

    /// The session at `i`.
    #[inline]
    pub fn get(&self, i: u32) -> Option<&Session> {
        self.slots.get(i as usize)?.0.as_ref()
    }

    /// The session at `i`, writable.
    #[inline]
    pub fn get_mut(&mut self, i: u32) -> Option<&mut Session> {
        self.slots.get_mut(i as usize)?.0.as_mut()
    }

    /// Every session with its index.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Session)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.0.as_ref().map(|s| (i as u32, s)))
    }

    /// The session of an inside flow.
    #[inline]
    pub fn find_in2out(&self, k: &FlowKey) -> Option<u32> {
        self.in2out.find(in2out_key(k))
    }

    /// The session of a packet from remote endpoint (`rem`, `rem_port`) to the outside endpoint
    /// (`out`, `out_port`).
    #[inline]
    pub fn find_out2in(
        &self,
        proto: u8,
        rem: Ipv4Addr,
        rem_port: u16,
        out: Ipv4Addr,
        out_port: u16,
    ) -> Option<u32> {
        self.out2in
            .find(out2in_key(proto, rem, rem_port, out, out_port))
    }

    /// The session of `h` (a key of index `d`) given `cand`, what a staged lookup found for it
    /// earlier in the vector: `cand` if that slot still holds a session with this key (a packet
    /// between the stages may have removed or made sessions), else a new lookup.
    #[inline]
    pub fn confirm(&self, d: Dir, h: Hashed, cand: Option<u32>) -> Option<u32> {
        if let Some(i) = cand {
            if self.get(i).is_some_and(|s| s.index_key(d) == h.key()) {
                return Some(i);
            }
        }
        self.index_for(d).get(h)
    }

    /// Makes a session for inside flow `k` behind outside address `out` at time `now_ns`, with
    /// an outside port chosen as the module doc of `nat44` describes.
    pub fn create(
        &mut self,
        k: FlowKey,
        out: Ipv4Addr,
        max_sessions: u32,
        max_per_host: u32,
        now_ns: u64,
    ) -> Result<u32, CreateError> {
        if self.len() >= max_sessions.min(MAX_SLOTS) as usize {
            return Err(CreateError::SessionLimit);
        }
        let host = u32::from(k.in_addr);
        if self.per_host.get(&host).copied().unwrap_or(0) >= max_per_host {
            return Err(CreateError::HostLimit);
        }
        let port = self.allocate(&k, out).ok_or(CreateError::OutOfPorts)?;
        let (d_ip, mut d_l4) = delta(k.in_addr, out, k.in_port, port);
        if k.proto == ICMP {
            // The ICMP checksum has no pseudo header: only the identifier counts (RFC 792).
            d_l4 = checksum::fold((!k.in_port) as u64 + port as u64);
        }
        let s = Session {
            key: k,
            out_addr: out,
            out_port: port,
            tcp: if k.proto == TCP {
                TcpState::SynSent
            } else {
                TcpState::None
            },
            seen: 0,
            created_ns: now_ns,
            last_ns: now_ns,
            pkts_in2out: 0,
            pkts_out2in: 0,
            d_ip,
            d_l4,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Slot(Some(s));
                i
            }
            None => {
                self.slots.push(Slot(Some(s)));
                (self.slots.len() - 1) as u32
            }
        };
        self.in2out.insert(s.index_key(Dir::In2Out), i);
        self.out2in.insert(s.index_key(Dir::Out2In), i);
        *self.per_host.entry(host).or_insert(0) += 1;
        self.created += 1;
        Ok(i)
    }

    /// The outside port (ICMP: identifier) for flow `k` behind `out`: the inside port if that
    /// outside tuple is free, else the first free one walking the dynamic range from a start
    /// hashed from the inside host and port; `None` after [`MAX_PORT_TRIES`].
    pub fn allocate(&self, k: &FlowKey, out: Ipv4Addr) -> Option<u16> {
        let free = |p: u16| {
            self.out2in
                .find(out2in_key(k.proto, k.rem_addr, k.rem_port, out, p))
                .is_none()
        };
        if free(k.in_port) {
            return Some(k.in_port);
        }
        let span = (u16::MAX - PORT_MIN) as u32 + 1;
        let mut h = MixHasher::default();
        h.write_u128(pack(
            k.proto,
            k.in_addr,
            k.in_port,
            Ipv4Addr::UNSPECIFIED,
            0,
        ));
        let start = (h.finish() % span as u64) as u32;
        (0..MAX_PORT_TRIES)
            .map(|t| PORT_MIN + ((start + t) % span) as u16)
            .find(|&p| free(p))
    }

    /// Removes session `i`.
    pub fn remove(&mut self, i: u32) -> Option<Session> {
        let s = self.slots.get_mut(i as usize)?.0.take()?;
        self.in2out.remove(s.index_key(Dir::In2Out));
        self.out2in.remove(s.index_key(Dir::Out2In));
        let host = u32::from(s.key.in_addr);
        if let Some(c) = self.per_host.get_mut(&host) {
            *c -= 1;
            if *c == 0 {
                self.per_host.remove(&host);
            }
        }
        self.free.push(i);
        Some(s)
    }
    /// Looks at up to `slots` slots from where the last step stopped and removes the sessions
    /// idle for longer than `timeout_ns(session)`; returns how many.
    pub fn expire_step(
        &mut self,
        now_ns: u64,
        slots: usize,
        timeout_ns: impl Fn(&Session) -> u64,
    ) -> usize {
        let n = self.slots.len();
        if n == 0 {
            return 0;
        }
        let mut removed = 0;
        for _ in 0..slots.min(n) {
            self.sweep = (self.sweep + 1) % n;
            let i = self.sweep as u32;
            if let Some(s) = self.get(i) {
                if now_ns.saturating_sub(s.last_ns) > timeout_ns(s) {
                    self.remove(i);
                    removed += 1;
                }
            }
        }
        self.expired += removed as u64;
        removed
    }

    /// Removes every session (the indexes keep their seeds).
    pub fn clear(&mut self) {
        *self = SessionTable {
            in2out: Index::with_seed(self.in2out.seed()),
            out2in: Index::with_seed(self.out2in.seed()),
            created: self.created,
            expired: self.expired,
            ..SessionTable::default()
        };
    }

    /// Sessions of protocol `proto`.
    pub fn count_proto(&self, proto: u8) -> usize {
        self.iter().filter(|(_, s)| s.key.proto == proto).count()
    }

    /// ICMP sessions.
    pub fn count_icmp(&self) -> usize {
        self.count_proto(ICMP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nat44::translate::UDP;

    fn key(port: u16, rem_port: u16) -> FlowKey {
        FlowKey {
            proto: UDP,
            in_addr: Ipv4Addr::new(10, 0, 0, 2),
            in_port: port,
            rem_addr: Ipv4Addr::new(192, 0, 2, 9),
            rem_port,
        }
    }

    const OUT: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);

    #[test]
    fn inside_port_is_kept_when_free_and_moved_when_taken() {
        let mut t = SessionTable::default();
        let a = t.create(key(5000, 53), OUT, 10, 10, 0).unwrap();
        assert_eq!(t.get(a).unwrap().out_port, 5000);
        // Another inside host with the same port to the same remote endpoint: moved.
        let mut k2 = key(5000, 53);
        k2.in_addr = Ipv4Addr::new(10, 0, 0, 3);
        let b = t.create(k2, OUT, 10, 10, 0).unwrap();
        let pb = t.get(b).unwrap().out_port;
        assert_ne!(pb, 5000);
        assert!(pb >= PORT_MIN);
        // The same port to another remote endpoint: endpoint-dependent, so kept.
        let mut k3 = k2;
        k3.rem_port = 54;
        let c = t.create(k3, OUT, 10, 10, 0).unwrap();
        assert_eq!(t.get(c).unwrap().out_port, 5000);
        assert_eq!(t.find_out2in(UDP, k2.rem_addr, 53, OUT, pb), Some(b));
        assert_eq!(t.find_in2out(&k3), Some(c));
        assert_eq!(t.len(), 3);
        assert_eq!(t.hosts(), 2);
        t.remove(b);
        assert_eq!(t.find_out2in(UDP, k2.rem_addr, 53, OUT, pb), None);
        assert_eq!(t.hosts(), 2);
        t.remove(c);
        assert_eq!(t.hosts(), 1);
    }

    #[test]
    fn limits_are_refused_with_their_reason() {
        let mut t = SessionTable::default();
        t.create(key(1, 1), OUT, 2, 1, 0).unwrap();
        assert_eq!(
            t.create(key(2, 1), OUT, 2, 1, 0),
            Err(CreateError::HostLimit)
        );
        let mut k = key(3, 1);
        k.in_addr = Ipv4Addr::new(10, 0, 0, 7);
        t.create(k, OUT, 2, 5, 0).unwrap();
        k.in_addr = Ipv4Addr::new(10, 0, 0, 8);
        assert_eq!(t.create(k, OUT, 2, 5, 0), Err(CreateError::SessionLimit));
    }

    #[test]
    fn ports_run_out_after_the_tries() {
        let mut t = SessionTable::default();
        // Take the inside port and every port the walk would try, from other hosts.
        let k = key(4000, 80);
        let span = (u16::MAX - PORT_MIN) as u32 + 1;
        let mut h = MixHasher::default();
        h.write_u128(pack(UDP, k.in_addr, 4000, Ipv4Addr::UNSPECIFIED, 0));
        let start = (h.finish() % span as u64) as u32;
        let mut taken: Vec<u16> = (0..MAX_PORT_TRIES)
            .map(|t| PORT_MIN + ((start + t) % span) as u16)
            .collect();
        taken.push(4000);
        for (n, p) in taken.into_iter().enumerate() {
            let mut o = key(p, 80);
            o.in_addr = Ipv4Addr::from(0x0b00_0000 + n as u32);
            let i = t.create(o, OUT, 100_000, 10, 0).unwrap();
            assert_eq!(t.get(i).unwrap().out_port, p);
        }
        assert_eq!(
            t.create(k, OUT, 100_000, 10, 0),
            Err(CreateError::OutOfPorts)
        );
    }

    #[test]
    fn tcp_states_follow_the_handshake_and_the_close() {
        let mut s = Session {
            key: key(1, 2),
            out_addr: OUT,
            out_port: 1,
            tcp: TcpState::SynSent,
            seen: 0,
            created_ns: 0,
            last_ns: 0,
            pkts_in2out: 0,
            pkts_out2in: 0,
            d_ip: 0,
            d_l4: 0,
        };
        s.tcp_update(0x02, false);
        assert_eq!(s.tcp, TcpState::SynSent);
        s.tcp_update(0x12, true);
        assert_eq!(s.tcp, TcpState::Established);
        s.tcp_update(0x11, false);
        assert_eq!(s.tcp, TcpState::Established, "half-closed stays");
        s.tcp_update(0x11, true);
        assert_eq!(s.tcp, TcpState::Closing);
        s.tcp_update(0x02, false);
        assert_eq!(s.tcp, TcpState::SynSent, "a new SYN reopens");
        s.tcp_update(0x04, true);
        assert_eq!(s.tcp, TcpState::Closing);
    }

    #[test]
    fn expiry_removes_only_idle_sessions() {
        let mut t = SessionTable::default();
        let a = t.create(key(1, 1), OUT, 10, 10, 0).unwrap();
        let b = t.create(key(2, 1), OUT, 10, 10, 0).unwrap();
        t.get_mut(b).unwrap().last_ns = 50;
        assert_eq!(t.expire_step(100, 10, |_| 60), 1);
        assert!(t.get(a).is_none());
        assert!(t.get(b).is_some());
        assert_eq!(t.expired, 1);
    }
}
