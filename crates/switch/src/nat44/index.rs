//! The session index of NAT44: a bucketised hash table of 16-byte entries, one per session and
//! direction, mapping a packed 6-tuple ([`Key`]) to a session's slot.
//!
//! Why not `std::collections::HashMap` (issue 11, "1M sessions ≥ 0.8× of 1k"): at 1M sessions
//! every lookup misses the caches, and a `HashMap` lookup cannot be split into "hash and
//! prefetch" and "probe" stages. Here, as in VPP's bihash (`clib_bihash_16_8`, which nat44-ed
//! uses), a lookup is [`Index::hashed`] (stage 1), [`Index::prefetch`] of the bucket's cache line
//! (stage 2) and [`Index::get`] (stage 3): the nodes run stage 1 and 2 for a whole group of
//! packets first, so that the misses of the group are in flight together.
//!
//! Layout: a bucket is one 64-byte cache line of [`WAYS`] entries; an entry is one `u128`, the
//! key in its high 104 bits (two IPv4 addresses, two ports, the protocol) and the slot index
//! plus one in its low 24 bits (0: an empty entry). A key lives in its home bucket (its hash
//! masked) or, when that bucket is full, in the next bucket with room (linear probing by
//! bucket): a lookup reads the home bucket and goes on only while the buckets it reads are full.
//! The table doubles when it would hold more than one entry per two ways (at most half full:
//! ≈ 14 % of buckets overflow, so a lookup reads 1.1–1.2 lines on average), and a removal moves
//! back an entry of a later bucket of the same run into the hole (backward shifting, as the MAC
//! table does with slots), so there are no tombstones. The hash is seeded (random per table,
//! fixed for benchmarks): inside hosts choose their keys, and must not be able to aim them at one
//! bucket run.
//!
//! The buckets are a [`HugeSlice`] (`vecswitch_buffer::huge`): from 2 MiB (32,768 buckets, past
//! 65,536 entries) each table is its own mapping advised for 2 MiB pages before it is written,
//! so that the lookups of 1M sessions (two 32 MiB indexes and a 64 MiB slab) miss the caches but
//! not the TLB as well (docs/NAT.md "NAT44 at 1M sessions on huge pages").

use std::hash::{BuildHasher, Hasher};
use std::net::Ipv4Addr;

use vecswitch_buffer::huge::{HugeSlice, Memory};

/// Entries per bucket (one cache line of 16-byte entries).
pub const WAYS: usize = 4;

/// Bits of an entry that hold the slot index plus one.
const VAL_BITS: u32 = 24;
const VAL_MASK: u128 = (1 << VAL_BITS) - 1;

/// The most slots an index can point to: slot indices 0 to `MAX_SLOTS - 1`.
pub const MAX_SLOTS: u32 = (1 << VAL_BITS) - 1;

/// Buckets of the first table (grown from nothing on the first insert).
const MIN_BUCKETS: usize = 16;

/// A 6-tuple packed for an index: address `a` (bits 96–127), address `b` (64–95), port `a`
/// (48–63), port `b` (32–47), protocol (24–31); the low 24 bits are zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Key(u128);

impl Key {
    /// The key of (protocol, `a`:`ap`, `b`:`bp`).
    #[inline]
    pub fn new(proto: u8, a: Ipv4Addr, ap: u16, b: Ipv4Addr, bp: u16) -> Key {
        Key((u32::from(a) as u128) << 96
            | (u32::from(b) as u128) << 64
            | (ap as u128) << 48
            | (bp as u128) << 32
            | (proto as u128) << 24)
    }

    /// Whether entry `e` holds this key.
    #[inline]
    fn held_by(self, e: u128) -> bool {
        e & !VAL_MASK == self.0 && e & VAL_MASK != 0
    }
}

/// A key with its hash: stage 1 of a staged lookup ([`Index::hashed`]). Valid for the index
/// that computed it as long as that index lives (its seed never changes; a growth changes the
/// bucket the hash selects, not the hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hashed {
    key: Key,
    hash: u64,
}

impl Hashed {
    /// The key.
    #[inline]
    pub fn key(&self) -> Key {
        self.key
    }
}

/// One cache line of entries.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket([u128; WAYS]);

const _: () = assert!(core::mem::size_of::<Bucket>() == 64);

#[inline]
fn fmix64(mut x: u64) -> u64 {
    // MurmurHash3's 64-bit finaliser.
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The index. See the module doc.
#[derive(Debug, Clone)]
pub struct Index {
    buckets: HugeSlice<Bucket>,
    /// Buckets − 1 (the count is a power of two); 0 while there is no bucket.
    mask: usize,
    len: usize,
    seed: u64,
}

impl Default for Index {
    /// An empty index with a random seed (no memory until the first insert).
    fn default() -> Index {
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        Index::with_seed(seed)
    }
}

impl Index {
    /// An empty index with hash seed `seed` (reproducible tests and benchmarks).
    pub fn with_seed(seed: u64) -> Index {
        Index {
            buckets: HugeSlice::default(),
            mask: 0,
            len: 0,
            seed,
        }
    }

    /// Entries in the index.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Buckets (a power of two, or 0 before the first insert).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// The buckets' memory (size, huge pages or not).
    pub fn memory(&self) -> Memory {
        self.buckets.memory()
    }

    /// Stage 1: `k` with its hash.
    #[inline]
    pub fn hashed(&self, k: Key) -> Hashed {
        let hi = (k.0 >> 64) as u64;
        let lo = (k.0 as u64) >> VAL_BITS;
        Hashed {
            key: k,
            hash: fmix64(fmix64(hi ^ self.seed) ^ lo),
        }
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        hash as usize & self.mask
    }

    /// Stage 2: prefetches `h`'s home bucket ([`vecswitch_buffer::prefetch::prefetch_read`],
    /// `_mm_prefetch` with `_MM_HINT_T0`), so that its cache line (and TLB entry) is on its way
    /// before stage 3 reads it. Changes no result. A prefetch retires at once, so the whole
    /// group's prefetches are in flight together (a plain load kept by `black_box`, used before,
    /// held a reorder-buffer entry until its line came).
    #[inline(always)]
    pub fn prefetch(&self, h: Hashed) {
        if let Some(b) = self.buckets.get(self.home(h.hash)) {
            vecswitch_buffer::prefetch::prefetch_read(b);
        }
    }

    /// Stage 3: the slot of `h`'s key.
    #[inline]
    pub fn get(&self, h: Hashed) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let mut b = self.home(h.hash);
        loop {
            let mut full = true;
            for &e in &self.buckets[b].0 {
                if h.key.held_by(e) {
                    return Some(((e & VAL_MASK) - 1) as u32);
                }
                full &= e != 0;
            }
            if !full {
                return None;
            }
            b = (b + 1) & self.mask;
        }
    }

    /// The slot of key `k` (the three stages at once).
    #[inline]
    pub fn find(&self, k: Key) -> Option<u32> {
        self.get(self.hashed(k))
    }

    /// Adds `k` → `slot`. `k` must be absent (the session table looks first) and `slot` below
    /// [`MAX_SLOTS`]; grows the index when it would be more than half full.
    pub fn insert(&mut self, k: Key, slot: u32) {
        debug_assert!(slot < MAX_SLOTS, "slot {slot} beyond the index's 24 bits");
        debug_assert!(self.find(k).is_none(), "{k:?} already in the index");
        if (self.len + 1) * 2 > self.buckets.len() * WAYS {
            self.grow();
        }
        let h = self.hashed(k).hash;
        self.place(h, k.0 | (slot as u128 + 1));
        self.len += 1;
    }

    /// Puts entry `e` (hash `hash`) in the first bucket with room from its home.
    fn place(&mut self, hash: u64, e: u128) {
        let mut b = self.home(hash);
        loop {
            if let Some(w) = self.buckets[b].0.iter_mut().find(|w| **w == 0) {
                *w = e;
                return;
            }
            b = (b + 1) & self.mask;
        }
    }

    /// Doubles the buckets and places every entry again.
    fn grow(&mut self) {
        let n = (self.buckets.len() * 2).max(MIN_BUCKETS);
        let old = std::mem::replace(&mut self.buckets, HugeSlice::new(n, Bucket::default()));
        self.mask = n - 1;
        for &e in old.iter().flat_map(|b| b.0.iter()) {
            if e != 0 {
                let h = self.hashed(Key(e & !VAL_MASK)).hash;
                self.place(h, e);
            }
        }
    }

    /// Removes `k`; returns its slot.
    pub fn remove(&mut self, k: Key) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let mut b = self.home(self.hashed(k).hash);
        let (mut hole, mut way, slot) = loop {
            let bucket = &self.buckets[b].0;
            if let Some(w) = (0..WAYS).find(|&w| k.held_by(bucket[w])) {
                break (b, w, ((bucket[w] & VAL_MASK) - 1) as u32);
            }
            if bucket.contains(&0) {
                return None;
            }
            b = (b + 1) & self.mask;
        };
        self.buckets[hole].0[way] = 0;
        self.len -= 1;
        // Backward shift: an entry of a later bucket whose home is at or before the hole (its
        // probe run passed through the hole's bucket when that was full) moves into the hole;
        // the hole moves to where it was. The run ends at the first bucket with room that has
        // no such entry.
        let mut c = hole;
        loop {
            c = (c + 1) & self.mask;
            if c == hole {
                return Some(slot);
            }
            let gap = c.wrapping_sub(hole) & self.mask;
            let found = (0..WAYS).find(|&w| {
                let e = self.buckets[c].0[w];
                e != 0 && {
                    let home = self.home(self.hashed(Key(e & !VAL_MASK)).hash);
                    (c.wrapping_sub(home) & self.mask) >= gap
                }
            });
            match found {
                Some(w) => {
                    self.buckets[hole].0[way] = self.buckets[c].0[w];
                    self.buckets[c].0[w] = 0;
                    (hole, way) = (c, w);
                }
                None if self.buckets[c].0.contains(&0) => return Some(slot),
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use std::collections::HashMap;

    fn key(n: u32) -> Key {
        Key::new(
            17,
            Ipv4Addr::from(0x0a00_0000 | (n & 0xff)),
            (n >> 8) as u16,
            Ipv4Addr::new(192, 0, 2, 1),
            53,
        )
    }

    #[test]
    fn keys_differ_in_every_field_and_never_look_empty() {
        let a = Ipv4Addr::new(10, 0, 0, 2);
        let b = Ipv4Addr::new(192, 0, 2, 1);
        let base = Key::new(6, a, 1000, b, 80);
        for other in [
            Key::new(17, a, 1000, b, 80),
            Key::new(6, b, 1000, b, 80),
            Key::new(6, a, 1001, b, 80),
            Key::new(6, a, 1000, a, 80),
            Key::new(6, a, 1000, b, 81),
        ] {
            assert_ne!(base, other);
        }
        assert_eq!(base.0 & VAL_MASK, 0);
        // An all-zero key (protocol 0, addresses 0) is still not "held" by an empty entry.
        assert!(!Key::default().held_by(0));
        let mut ix = Index::with_seed(1);
        ix.insert(Key::default(), 0);
        assert_eq!(ix.find(Key::default()), Some(0));
        assert_eq!(ix.remove(Key::default()), Some(0));
        assert_eq!(ix.find(Key::default()), None);
    }

    #[test]
    fn grows_and_keeps_every_entry() {
        let mut ix = Index::with_seed(7);
        assert_eq!(ix.buckets(), 0);
        assert_eq!(ix.find(key(1)), None);
        for n in 0..10_000 {
            ix.insert(key(n), n);
        }
        assert_eq!(ix.len(), 10_000);
        // At most half full: 10,000 entries need 5,000 buckets of 4 → 8,192.
        assert_eq!(ix.buckets(), 8192);
        for n in 0..10_000 {
            assert_eq!(ix.find(key(n)), Some(n), "{n}");
        }
        assert_eq!(ix.find(key(10_000)), None);
    }

    /// Random inserts and removes on small tables (long bucket runs, wrap-around at the end,
    /// backward shifts) agree with a `HashMap` after every operation, for several seeds.
    #[test]
    fn random_inserts_and_removes_agree_with_a_hashmap() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for seed in 0..20u64 {
            let mut ix = Index::with_seed(seed);
            let mut model: HashMap<Key, u32> = HashMap::new();
            let universe = 40 + (seed as u32 % 5) * 40;
            for step in 0..4000u32 {
                let k = key(rng.next_u32() % universe);
                if let Some(&v) = model.get(&k) {
                    assert_eq!(ix.remove(k), Some(v), "seed {seed} step {step}");
                    model.remove(&k);
                } else {
                    ix.insert(k, step);
                    model.insert(k, step);
                }
                assert_eq!(ix.len(), model.len());
                for n in 0..universe {
                    let k = key(n);
                    assert_eq!(
                        ix.find(k),
                        model.get(&k).copied(),
                        "seed {seed} step {step}"
                    );
                }
            }
            // Emptied, the index finds nothing and takes new entries.
            let keys: Vec<Key> = model.keys().copied().collect();
            for k in keys {
                assert_eq!(ix.remove(k), model.remove(&k));
            }
            assert!(ix.is_empty());
            assert_eq!(ix.remove(key(0)), None);
            ix.insert(key(3), 3);
            assert_eq!(ix.find(key(3)), Some(3));
        }
    }

    /// Every entry of a bucket run that wraps past the last bucket is found, and removing the
    /// head of the run moves the rest back.
    #[test]
    fn runs_that_wrap_around_and_shift_back() {
        let mut ix = Index::with_seed(3);
        ix.insert(key(0), 0);
        let last = ix.buckets() - 1;
        // Keys whose home is the last bucket, enough to fill it and spill into bucket 0.
        let wrap: Vec<Key> = (1..100_000)
            .map(key)
            .filter(|&k| ix.home(ix.hashed(k).hash) == last)
            .take(WAYS + 2)
            .collect();
        assert_eq!(wrap.len(), WAYS + 2);
        ix.remove(key(0));
        for (i, &k) in wrap.iter().enumerate() {
            ix.insert(k, i as u32);
        }
        assert_eq!(
            ix.buckets(),
            MIN_BUCKETS,
            "no growth: the test needs this size"
        );
        for (i, &k) in wrap.iter().enumerate() {
            assert_eq!(ix.find(k), Some(i as u32));
        }
        assert_eq!(ix.remove(wrap[0]), Some(0));
        for (i, &k) in wrap.iter().enumerate().skip(1) {
            assert_eq!(ix.find(k), Some(i as u32));
        }
        // The spilled entries moved back: the last bucket is full again, bucket 0 holds one.
        assert!(!ix.buckets[last].0.contains(&0));
        assert_eq!(ix.buckets[0].0.iter().filter(|&&e| e != 0).count(), 1);
    }
}
