//! The L2 MAC table: one preallocated open-addressing hash table shared by all bridge domains, keyed
//! by (bridge domain, MAC address), holding the port a station was seen on, when it was last seen and
//! whether the entry is static.
//!
//! Design (why not `HashMap`): the table is read and written per packet by the worker that owns it,
//! so it must never allocate, rehash or stop on the fast path. It is sized once (`max_entries`,
//! 1,000,000 or more) with at least twice as many slots, so linear probing stays short (expected
//! ≈1.5 probes for a hit at the maximum load of 1/2). Deletion uses backward shifting, so there are
//! no tombstones and probe lengths do not degrade as stations come and go.
//!
//! The hash is a seeded 64-bit finaliser (the MurmurHash3 `fmix64` mixing steps, a handful of
//! multiplies and shifts — the cost class of FxHash) over the packed 64-bit key. Source MACs are
//! chosen by whoever sends traffic, so the seed is random per table: a sender cannot aim its addresses
//! at one probe chain without knowing it. The per-bridge limit bounds what one bridge can take.
//!
//! Aging is incremental: [`MacTable::age_step`] examines a bounded number of slots from a cursor, so
//! the worker spreads a sweep of the whole table over many poll iterations and never stops to scan it.
//! Static entries never age and are never moved by learning.
//!
//! **Staged lookups** (issue 10 item 5, as VPP's bihash nodes do: `clib_bihash_hash` →
//! `clib_bihash_prefetch_bucket` → `clib_bihash_search_inline_with_hash`): the fast-path nodes
//! first compute [`MacTable::hashed`] for every packet of a vector and [`MacTable::prefetch`] each
//! home slot, then call [`MacTable::learn_hashed`] / [`MacTable::lookup_hashed`]. The loads of the
//! first stage are independent of each other, so the misses of a table larger than the caches are
//! in flight together instead of one after the other. [`MacTable::learn`] and
//! [`MacTable::lookup`] are the same two steps for one key.
//!
//! **Huge pages**: the slots are a [`HugeSlice`] (`vecswitch_buffer::huge`): a table of 2 MiB or
//! more (from 65,536 entries: 131,072 slots of 16 bytes) is its own mapping advised
//! `MADV_HUGEPAGE` before it is written, so that 1M entries (32 MiB) take 16 TLB entries instead
//! of 8,192 4-KiB pages' worth: the staged prefetch hides cache misses, not page walks
//! (docs/BENCHMARKS.md §3.3). [`MacTable::memory`] says what the table got.

use std::hash::{BuildHasher, Hasher};

use vecswitch_buffer::huge::{HugeSlice, Memory};

/// Port number stored in a slot (the switch's port index).
pub type PortId = u16;

/// What [`MacTable::learn`] did with a source address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LearnOutcome {
    /// Already known on this port; its time was refreshed.
    Refreshed,
    /// New entry added.
    Learned,
    /// Known on another port; moved to this one (a station move).
    Moved { from: PortId },
    /// A static entry on another port; left where it is.
    StaticKept,
    /// The bridge already holds its limit of learned entries; not learned.
    LimitReached,
    /// Every slot the table may use is taken; not learned.
    TableFull,
}

/// A key with its home slot computed by [`MacTable::hashed`]: the first stage of a staged
/// lookup. Valid for the table that computed it (its seed and size never change).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hashed {
    key: u64,
    home: usize,
}

impl Hashed {
    /// The bridge domain of the key.
    #[inline]
    pub fn bd(self) -> u16 {
        unpack(self.key).0
    }

    /// The MAC address of the key.
    #[inline]
    pub fn mac(self) -> [u8; 6] {
        unpack(self.key).1
    }
}

/// One entry as the control side sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub bd: u16,
    pub mac: [u8; 6],
    pub port: PortId,
    pub is_static: bool,
    /// Seconds (of the switch's clock) when the station was last seen or the entry was added.
    pub last_seen_s: u32,
}

/// The table is full: no entry can be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the MAC table is full ({max_entries} entries)")]
pub struct TableFull {
    pub max_entries: usize,
}

const STATIC: u16 = 1;

/// One slot; `key == 0` is empty. 16 bytes, four to a cache line.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
struct Slot {
    key: u64,
    port: PortId,
    flags: u16,
    last_seen_s: u32,
}

const _: () = assert!(core::mem::size_of::<Slot>() == 16);

#[derive(Debug, Clone, Copy, Default)]
struct BdCount {
    learned: u32,
    statics: u32,
}

/// The MAC table of all bridge domains. See the module doc.
#[derive(Debug)]
pub struct MacTable {
    slots: HugeSlice<Slot>,
    mask: usize,
    len: usize,
    max_entries: usize,
    seed: u64,
    counts: Vec<BdCount>,
    age_cursor: usize,
    /// Learned entries a configuration change flushed, kept for that change's undo
    /// ([`crate::l2::control`], `Switch::remove_bridge_member_held`).
    pub(crate) held: HeldMacs,
}

/// Learned entries flushed by a configuration change, by bridge and interface *name* (a bridge or
/// port re-created by an undo may get another index), valid only during the poll iteration
/// (`polls`) in which they were flushed: the whole change set of a reload and its undo run in one
/// control call, and the worker polls between any two calls, so a later, unrelated re-add never
/// brings back stale entries.
#[derive(Debug, Default)]
pub(crate) struct HeldMacs {
    pub(crate) polls: u64,
    /// (bridge, interface, MAC, last seen, switch seconds).
    pub(crate) entries: Vec<(String, String, [u8; 6], u32)>,
}

/// Packs (bridge domain, MAC) into a never-zero key: MAC in the low 48 bits, `bd + 1` above.
#[inline]
fn pack(bd: u16, mac: &[u8; 6]) -> u64 {
    let m = u64::from_be_bytes([0, 0, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]]);
    ((bd as u64 + 1) << 48) | m
}

#[inline]
fn unpack(key: u64) -> (u16, [u8; 6]) {
    let b = key.to_be_bytes();
    (
        ((key >> 48) - 1) as u16,
        [b[2], b[3], b[4], b[5], b[6], b[7]],
    )
}

impl MacTable {
    /// A table that holds up to `max_entries` entries (over all bridges), with a random hash seed.
    pub fn new(max_entries: usize) -> MacTable {
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        MacTable::with_seed(max_entries, seed)
    }

    /// A table with a chosen hash seed (for reproducible tests and benchmarks).
    pub fn with_seed(max_entries: usize, seed: u64) -> MacTable {
        let max_entries = max_entries.max(1);
        let n = (max_entries * 2).next_power_of_two().max(16);
        MacTable {
            // Written once here (16 bytes × slots: 32 MiB for 1M entries), never resized; on huge
            // pages from 2 MiB (module doc).
            slots: HugeSlice::new(n, Slot::default()),
            mask: n - 1,
            len: 0,
            max_entries,
            seed,
            counts: Vec::new(),
            age_cursor: 0,
            held: HeldMacs::default(),
        }
    }

    /// Entries in the table (all bridges).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most entries the table holds.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Number of slots (a power of two, at least `2 × max_entries`).
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The slots' memory: its size and whether it is on huge pages ("huge pages: yes, 32.0 MiB").
    pub fn memory(&self) -> Memory {
        self.slots.memory()
    }

    /// Learned (dynamic) entries of bridge `bd`.
    pub fn learned_count(&self, bd: u16) -> u32 {
        self.counts.get(bd as usize).map_or(0, |c| c.learned)
    }

    /// Static entries of bridge `bd`.
    pub fn static_count(&self, bd: u16) -> u32 {
        self.counts.get(bd as usize).map_or(0, |c| c.statics)
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        // MurmurHash3 fmix64 over the seeded key.
        let mut x = key ^ self.seed;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^= x >> 33;
        x as usize & self.mask
    }

    /// Stage 1 of a staged lookup: the packed key of (`bd`, `mac`) and its home slot.
    #[inline]
    pub fn hashed(&self, bd: u16, mac: &[u8; 6]) -> Hashed {
        let key = pack(bd, mac);
        Hashed {
            key,
            home: self.home(key),
        }
    }

    /// Stage 2 of a staged lookup: prefetches `k`'s home slot, where a lookup or learn of `k`
    /// begins ([`vecswitch_buffer::prefetch::prefetch_read`], `_mm_prefetch` with `_MM_HINT_T0`),
    /// so that its cache line (and TLB entry) is on its way before stage 3 needs it. Changes no
    /// result. A prefetch retires at once, so the prefetches of a whole stage group are in flight
    /// together (a plain load, used before, held a reorder-buffer entry until its line came).
    /// (An entry whose probe run crosses into the next line — rare at load ≤ 1/2 — costs one more
    /// line at stage 3. Slots four to an aligned line with line-aligned homes, as VPP's bihash
    /// buckets are, was measured: +3 % instructions, no gain in time; BENCHMARKS.md §3.3.)
    #[inline(always)]
    pub fn prefetch(&self, k: Hashed) {
        vecswitch_buffer::prefetch::prefetch_read(&self.slots[k.home & self.mask]);
    }

    /// `Ok(slot)` where the key is, or `Err(slot)` of the empty slot where it would go.
    #[inline]
    fn find(&self, key: u64) -> Result<usize, usize> {
        self.find_hashed(Hashed {
            key,
            home: self.home(key),
        })
    }

    /// [`find`](Self::find) from a precomputed home slot.
    #[inline]
    fn find_hashed(&self, k: Hashed) -> Result<usize, usize> {
        let key = k.key;
        let mut i = k.home & self.mask;
        loop {
            let k = self.slots[i].key;
            if k == key {
                return Ok(i);
            }
            if k == 0 {
                return Err(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    fn count_mut(&mut self, bd: u16) -> &mut BdCount {
        let i = bd as usize;
        if self.counts.len() <= i {
            self.counts.resize(i + 1, BdCount::default());
        }
        &mut self.counts[i]
    }

    /// The port `mac` was seen on in bridge `bd`.
    #[inline]
    pub fn lookup(&self, bd: u16, mac: &[u8; 6]) -> Option<PortId> {
        self.lookup_hashed(self.hashed(bd, mac))
    }

    /// [`lookup`](Self::lookup) of a key hashed by [`hashed`](Self::hashed) (stage 3).
    #[inline]
    pub fn lookup_hashed(&self, k: Hashed) -> Option<PortId> {
        self.find_hashed(k).ok().map(|i| self.slots[i].port)
    }

    /// The whole entry for `mac` in bridge `bd`.
    pub fn get(&self, bd: u16, mac: &[u8; 6]) -> Option<Entry> {
        self.find(pack(bd, mac)).ok().map(|i| self.entry_at(i))
    }

    fn entry_at(&self, i: usize) -> Entry {
        let s = self.slots[i];
        let (bd, mac) = unpack(s.key);
        Entry {
            bd,
            mac,
            port: s.port,
            is_static: s.flags & STATIC != 0,
            last_seen_s: s.last_seen_s,
        }
    }

    /// Learns that `mac` is behind `port` in bridge `bd` at `now_s`. `limit` is the most learned
    /// entries bridge `bd` may hold. Never allocates.
    #[inline]
    pub fn learn(
        &mut self,
        bd: u16,
        mac: &[u8; 6],
        port: PortId,
        now_s: u32,
        limit: u32,
    ) -> LearnOutcome {
        self.learn_hashed(self.hashed(bd, mac), port, now_s, limit)
    }

    /// [`learn`](Self::learn) of a key hashed by [`hashed`](Self::hashed) (stage 3).
    #[inline]
    pub fn learn_hashed(
        &mut self,
        k: Hashed,
        port: PortId,
        now_s: u32,
        limit: u32,
    ) -> LearnOutcome {
        let (key, bd) = (k.key, k.bd());
        match self.find_hashed(k) {
            Ok(i) => {
                let s = &mut self.slots[i];
                if s.port == port {
                    if s.last_seen_s != now_s {
                        s.last_seen_s = now_s;
                    }
                    LearnOutcome::Refreshed
                } else if s.flags & STATIC != 0 {
                    LearnOutcome::StaticKept
                } else {
                    let from = s.port;
                    s.port = port;
                    s.last_seen_s = now_s;
                    LearnOutcome::Moved { from }
                }
            }
            Err(i) => {
                if self.learned_count(bd) >= limit {
                    return LearnOutcome::LimitReached;
                }
                if self.len >= self.max_entries {
                    return LearnOutcome::TableFull;
                }
                self.slots[i] = Slot {
                    key,
                    port,
                    flags: 0,
                    last_seen_s: now_s,
                };
                self.len += 1;
                self.count_mut(bd).learned += 1;
                LearnOutcome::Learned
            }
        }
    }

    /// Adds or replaces a static entry (a learned entry for the same address becomes static).
    pub fn add_static(
        &mut self,
        bd: u16,
        mac: &[u8; 6],
        port: PortId,
        now_s: u32,
    ) -> Result<(), TableFull> {
        let key = pack(bd, mac);
        match self.find(key) {
            Ok(i) => {
                let was_static = self.slots[i].flags & STATIC != 0;
                self.slots[i] = Slot {
                    key,
                    port,
                    flags: STATIC,
                    last_seen_s: now_s,
                };
                if !was_static {
                    let c = self.count_mut(bd);
                    c.learned -= 1;
                    c.statics += 1;
                }
            }
            Err(i) => {
                if self.len >= self.max_entries {
                    return Err(TableFull {
                        max_entries: self.max_entries,
                    });
                }
                self.slots[i] = Slot {
                    key,
                    port,
                    flags: STATIC,
                    last_seen_s: now_s,
                };
                self.len += 1;
                self.count_mut(bd).statics += 1;
            }
        }
        Ok(())
    }

    /// Removes the entry for `mac` in bridge `bd`, returning it.
    pub fn remove(&mut self, bd: u16, mac: &[u8; 6]) -> Option<Entry> {
        let i = self.find(pack(bd, mac)).ok()?;
        let e = self.entry_at(i);
        self.remove_at(i);
        Some(e)
    }

    /// Empties slot `i` and shifts later entries of the same probe run back (no tombstones).
    fn remove_at(&mut self, mut i: usize) {
        let (bd, _) = unpack(self.slots[i].key);
        let is_static = self.slots[i].flags & STATIC != 0;
        let c = self.count_mut(bd);
        if is_static {
            c.statics -= 1;
        } else {
            c.learned -= 1;
        }
        self.len -= 1;
        loop {
            let mut j = i;
            loop {
                j = (j + 1) & self.mask;
                let k = self.slots[j].key;
                if k == 0 {
                    self.slots[i] = Slot::default();
                    return;
                }
                let home = self.home(k);
                // The entry at j may move to i only if its home is not cyclically in (i, j].
                let stays = if i <= j {
                    i < home && home <= j
                } else {
                    i < home || home <= j
                };
                if !stays {
                    break;
                }
            }
            self.slots[i] = self.slots[j];
            i = j;
        }
    }

    /// Removes the entries of bridge `bd` (of one port only if `port` is given; static entries too if
    /// `include_static`). Returns how many were removed. A control-side operation: it scans the table.
    pub fn flush(&mut self, bd: u16, port: Option<PortId>, include_static: bool) -> usize {
        self.remove_where(|e| {
            e.bd == bd
                && (port.is_none() || port == Some(e.port))
                && (include_static || !e.is_static)
        })
    }

    /// Removes every entry for which `pred` holds; returns how many. Scans the table.
    pub fn remove_where(&mut self, mut pred: impl FnMut(&Entry) -> bool) -> usize {
        let mut removed = 0;
        let mut i = 0;
        // Removing slot i shifts later entries back into i (and, for a run that wraps, entries from
        // the start of the table, already examined, into the end): re-examine i, never skip ahead.
        while i < self.slots.len() {
            if self.slots[i].key != 0 && pred(&self.entry_at(i)) {
                self.remove_at(i);
                removed += 1;
                continue;
            }
            i += 1;
        }
        removed
    }

    /// Ages out learned entries: examines at most `budget` slots from where the last call stopped and
    /// removes learned entries of bridge `bd` older than `age_s[bd]` seconds (0 or no value: never).
    /// Returns how many entries were removed. Repeated calls sweep the whole table.
    pub fn age_step(&mut self, now_s: u32, budget: usize, age_s: &[u32]) -> usize {
        let mut removed = 0;
        let mut examined = 0;
        let mut i = self.age_cursor & self.mask;
        while examined < budget {
            let s = self.slots[i];
            if s.key != 0 && s.flags & STATIC == 0 {
                let (bd, _) = unpack(s.key);
                let age = age_s.get(bd as usize).copied().unwrap_or(0);
                if age != 0 && now_s.wrapping_sub(s.last_seen_s) >= age {
                    self.remove_at(i);
                    removed += 1;
                    examined += 1;
                    continue; // slot i may now hold a shifted entry
                }
            }
            examined += 1;
            i = (i + 1) & self.mask;
        }
        self.age_cursor = i;
        removed
    }

    /// Every entry (of bridge `bd` only, if given), in slot order.
    pub fn entries(&self, bd: Option<u16>) -> Vec<Entry> {
        self.iter(bd).collect()
    }

    /// [`MacTable::entries`] without collecting them (`show mac` pages a million entries).
    pub fn iter(&self, bd: Option<u16>) -> impl Iterator<Item = Entry> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.key != 0)
            .map(|(i, _)| self.entry_at(i))
            .filter(move |e| bd.is_none() || bd == Some(e.bd))
    }

    /// Slots examined to find `mac` (tests only).
    #[cfg(test)]
    fn probe_len(&self, bd: u16, mac: &[u8; 6]) -> usize {
        let key = pack(bd, mac);
        let mut i = self.home(key);
        let mut n = 1;
        while self.slots[i].key != key && self.slots[i].key != 0 {
            i = (i + 1) & self.mask;
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::{RngCore, SeedableRng};

    fn mac(i: u32) -> [u8; 6] {
        let b = i.to_be_bytes();
        [0x02, 0, b[0], b[1], b[2], b[3]]
    }

    #[test]
    fn pack_roundtrips_and_is_never_zero() {
        for (bd, m) in [
            (0u16, [0u8; 6]),
            (0xfffe, [0xff; 6]),
            (7, [1, 2, 3, 4, 5, 6]),
        ] {
            let k = pack(bd, &m);
            assert_ne!(k, 0);
            assert_eq!(unpack(k), (bd, m));
        }
    }

    #[test]
    fn learn_refresh_move_static_limit() {
        let mut t = MacTable::with_seed(100, 1);
        assert_eq!(t.learn(0, &mac(1), 3, 10, 2), LearnOutcome::Learned);
        assert_eq!(t.learn(0, &mac(1), 3, 11, 2), LearnOutcome::Refreshed);
        assert_eq!(t.get(0, &mac(1)).unwrap().last_seen_s, 11);
        assert_eq!(
            t.learn(0, &mac(1), 4, 12, 2),
            LearnOutcome::Moved { from: 3 }
        );
        assert_eq!(t.lookup(0, &mac(1)), Some(4));
        // Same MAC in another bridge is another entry.
        assert_eq!(t.learn(1, &mac(1), 9, 12, 2), LearnOutcome::Learned);
        assert_eq!(t.learn(0, &mac(2), 4, 12, 2), LearnOutcome::Learned);
        assert_eq!(t.learn(0, &mac(3), 4, 12, 2), LearnOutcome::LimitReached);
        assert_eq!(t.lookup(0, &mac(3)), None);
        t.add_static(0, &mac(5), 7, 12).unwrap();
        assert_eq!(t.learn(0, &mac(5), 8, 13, 2), LearnOutcome::StaticKept);
        assert_eq!(t.lookup(0, &mac(5)), Some(7));
        assert_eq!(
            (t.learned_count(0), t.static_count(0), t.learned_count(1)),
            (2, 1, 1)
        );
        // A learned entry turned static leaves the learned count.
        t.add_static(0, &mac(1), 4, 13).unwrap();
        assert_eq!((t.learned_count(0), t.static_count(0)), (1, 2));
        assert_eq!(t.len(), 4);
    }

    /// The staged form (hash a whole batch first, then learn and look up) gives what one call
    /// per key gives, although the batch's own inserts land between hashing and use.
    #[test]
    fn keys_hashed_before_a_batch_of_inserts_stay_valid() {
        let mut staged = MacTable::with_seed(64, 5);
        let mut plain = MacTable::with_seed(64, 5);
        // 80 learns of 50 keys: new, refreshed and moved outcomes.
        let batch: Vec<(u16, [u8; 6], PortId)> = (0..80u32)
            .map(|i| ((i % 2) as u16, mac(i % 50), (i % 3) as u16))
            .collect();
        let hashed: Vec<Hashed> = batch
            .iter()
            .map(|(bd, m, _)| staged.hashed(*bd, m))
            .collect();
        for (k, (bd, m, port)) in hashed.iter().zip(&batch) {
            assert_eq!((k.bd(), k.mac()), (*bd, *m));
            staged.prefetch(*k);
            assert_eq!(
                staged.learn_hashed(*k, *port, 1, u32::MAX),
                plain.learn(*bd, m, *port, 1, u32::MAX)
            );
        }
        for (k, (bd, m, _)) in hashed.iter().zip(&batch) {
            assert_eq!(staged.lookup_hashed(*k), plain.lookup(*bd, m));
            assert!(staged.lookup_hashed(*k).is_some());
        }
        assert_eq!(staged.len(), plain.len());
    }

    #[test]
    fn table_full_is_reported_not_fatal() {
        let mut t = MacTable::with_seed(3, 1);
        for i in 0..3 {
            assert_eq!(t.learn(0, &mac(i), 1, 0, u32::MAX), LearnOutcome::Learned);
        }
        assert_eq!(t.learn(0, &mac(9), 1, 0, u32::MAX), LearnOutcome::TableFull);
        assert_eq!(
            t.add_static(0, &mac(9), 1, 0),
            Err(TableFull { max_entries: 3 })
        );
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn aging_is_incremental_and_spares_static_and_fresh() {
        let mut t = MacTable::with_seed(1000, 7);
        for i in 0..500 {
            t.learn(0, &mac(i), 1, 0, u32::MAX);
        }
        for i in 500..600 {
            t.learn(0, &mac(i), 1, 250, u32::MAX);
        }
        t.add_static(0, &mac(1000), 2, 0).unwrap();
        let slots = t.slot_count();
        // One small step removes at most what it examined.
        let first = t.age_step(300, 16, &[300]);
        assert!(first <= 16);
        let mut removed = first;
        // A removal counts against the budget too, so a sweep takes a little more than slots / 16 steps.
        for _ in 0..(2 * slots / 16) {
            removed += t.age_step(300, 16, &[300]);
        }
        assert_eq!(removed, 500);
        assert_eq!(t.len(), 101);
        assert!(t.lookup(0, &mac(1000)).is_some());
        assert!((500..600).all(|i| t.lookup(0, &mac(i)) == Some(1)));
        // Age 0 means never.
        assert_eq!(t.age_step(100_000, slots, &[0]), 0);
        // A bridge without an age entry never ages.
        assert_eq!(t.age_step(100_000, slots, &[]), 0);
    }

    #[test]
    fn flush_per_bridge_and_port() {
        let mut t = MacTable::with_seed(1000, 3);
        for i in 0..300 {
            t.learn((i % 3) as u16, &mac(i), (i % 2) as u16, 0, u32::MAX);
        }
        t.add_static(0, &mac(10_000), 1, 0).unwrap();
        let b0p1 = (0..300).filter(|i| i % 3 == 0 && i % 2 == 1).count();
        assert_eq!(t.flush(0, Some(1), false), b0p1);
        assert!(t.lookup(0, &mac(10_000)).is_some());
        assert_eq!(t.flush(0, None, true), 100 - b0p1 + 1);
        assert_eq!(t.len(), 200);
        assert_eq!(t.learned_count(0), 0);
        assert_eq!(t.static_count(0), 0);
        for i in 0..300 {
            let expect = if i % 3 == 0 {
                None
            } else {
                Some((i % 2) as u16)
            };
            assert_eq!(t.lookup((i % 3) as u16, &mac(i)), expect, "{i}");
        }
    }

    /// Random inserts and removals against a reference map: backward-shift deletion keeps every
    /// remaining key reachable.
    #[test]
    fn matches_a_reference_map_under_churn() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
        let mut t = MacTable::with_seed(512, rng.next_u64());
        let mut reference = std::collections::HashMap::new();
        for step in 0..20_000u32 {
            let m = mac(rng.next_u32() % 700);
            if rng.next_u32() % 3 == 0 {
                assert_eq!(
                    t.remove(0, &m).map(|e| e.port),
                    reference.remove(&m),
                    "step {step}"
                );
            } else {
                let port = (rng.next_u32() % 4) as u16;
                let out = t.learn(0, &m, port, step, u32::MAX);
                if out != LearnOutcome::TableFull {
                    reference.insert(m, port);
                }
            }
            assert_eq!(t.len(), reference.len());
        }
        for (m, p) in &reference {
            assert_eq!(t.lookup(0, m), Some(*p));
        }
        assert_eq!(t.entries(None).len(), reference.len());
    }

    #[test]
    fn a_million_entries_keep_probes_short() {
        let n = 1_000_000u32;
        let mut t = MacTable::with_seed(n as usize, 99);
        for i in 0..n {
            assert_eq!(
                t.learn(0, &mac(i), (i % 8) as u16, 0, u32::MAX),
                LearnOutcome::Learned
            );
        }
        assert_eq!(t.len(), n as usize);
        let total: usize = (0..n).step_by(97).map(|i| t.probe_len(0, &mac(i))).sum();
        let mean = total as f64 / (n as f64 / 97.0);
        // Linear probing at load ≤ 1/2 expects ~1.5 probes per hit; allow generous slack.
        assert!(mean < 3.0, "mean probe length {mean}");
        assert_eq!(t.lookup(0, &mac(123_456)), Some((123_456 % 8) as u16));
        // 2^21 slots of 16 bytes, advised for huge pages where the kernel has THP (all the
        // project's hosts: `madvise`).
        let m = t.memory();
        assert_eq!(m.bytes, 32 << 20);
        if vecswitch_buffer::huge::thp_mode() != vecswitch_buffer::huge::Thp::Never {
            assert!(m.huge_pages, "{m}");
        }
        assert!(!MacTable::with_seed(100, 1).memory().huge_pages);
    }
}
