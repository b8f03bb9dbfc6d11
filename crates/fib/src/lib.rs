//! vecswitch-fib: IPv4 and IPv6 forwarding tables.
//!
//! Two types per family:
//!
//! - [`Ip4Rib`] / [`Ip6Rib`] — the control plane's route set: `(prefix, len) -> 1..=8 next
//!   hops`. Cheap to edit, not meant for the packet path.
//! - [`Ip4Fib`] / [`Ip6Fib`] — the data plane's compiled table, read by a worker:
//!   [`lookup`](Fib::lookup) and the staged [`lookup_batch`](Fib::lookup_batch).
//!
//! ```
//! use std::net::Ipv4Addr;
//! use vecswitch_fib::Ip4Rib;
//!
//! let mut rib = Ip4Rib::new();
//! rib.add(Ipv4Addr::new(0, 0, 0, 0), 0, &[1]).unwrap();          // default route -> adjacency 1
//! rib.add(Ipv4Addr::new(10, 0, 0, 0), 8, &[2, 3]).unwrap();      // ECMP over adjacencies 2 and 3
//! let mut fib = rib.build();                                      // full compile (control side)
//! assert_eq!(fib.lookup(u32::from(Ipv4Addr::new(192, 0, 2, 1)), 0), Some(1));
//! assert!(matches!(fib.lookup(u32::from(Ipv4Addr::new(10, 1, 2, 3)), 7), Some(2 | 3)));
//! fib.add(Ipv4Addr::new(10, 1, 0, 0), 16, &[4]).unwrap();         // incremental, in place
//! assert_eq!(fib.lookup(u32::from(Ipv4Addr::new(10, 1, 2, 3)), 7), Some(4));
//! ```
//!
//! **Next hops** ([`NextHop`], a `u32`) are chosen by the user (the switch's adjacency index).
//! A route has 1 to [`MAX_ECMP`] of them; the flow hash passed to the lookup picks one
//! (`flow_hash % n`), so a flow stays on one next hop and different hashes spread over all of
//! them. Repeating a next hop in the list weights it.
//!
//! **Bad input**: a length above 32 (128) and an address with bits set after the prefix length
//! are *rejected* (not masked) with a [`FibError`] naming the field, the value and what is
//! accepted; `add` of an existing prefix replaces its next hops (like `ip route replace`).
//!
//! **Publishing** (DESIGN.md rule 5): build the `Fib` on the control side with
//! [`Rib::build`] (1,000,000 routes take seconds, none of it on the worker), then move it into
//! the worker in one closure (a pointer swap — `Fib` is `Send`); single-route changes go to the
//! worker as closures calling [`Fib::add`] / [`Fib::remove`], which change the table in place.
//! The worker never takes a lock.
//!
//! # The data-plane structure, and why
//!
//! A poptrie-style compressed multibit trie (module `trie`; Asai & Ohara, SIGCOMM 2015): a
//! direct-pointing top level of 2^18 entries (1 MiB; the paper's s = 18), then nodes of
//! stride 6 whose 64 slots are two 64-bit bitmaps (child / start of a leaf run) plus two base
//! indices — a child or a leaf is found with one `popcount`. Leaves hold resolved next-hop
//! groups, so a lookup is one walk with no backtracking. Compared, for 1,000,000 IPv4 routes:
//!
//! | | memory | dependent loads per lookup (/24) | update of one /24 |
//! |---|---|---|---|
//! | DIR-24-8 (DPDK `rte_lpm`) | 64 MiB fixed `tbl24` + 1 KiB per `tbl8`; the same 64 MiB for 1 route | 1 (2 past /24) | 1 entry (a /8: 65,536) |
//! | 16-8-8 mtrie (VPP) | 256 KiB + 1 KiB per ply, one ply per /16 holding a longer route: ~64 MiB | 2 (3 past /24) | ≤ 256 entries |
//! | **this poptrie** | 1 MiB + 24 B per node + 4 B per leaf run: **22 B per route** (measured) | 3: top, node, leaf (4 past /24) | rebuild of one /18's subtree (µs) |
//!
//! The footprint decides the 1M-route case: every lookup of a spread-out destination misses the
//! caches whatever the structure, and a 22 MiB trie of which the upper levels stay cached costs
//! fewer misses and far fewer TLB misses than 64 MiB of `tbl24` touched at random; the extra
//! dependent loads are partly overlapped by the staged batch lookup ([`Fib::lookup_batch`] walks
//! one level for a whole vector before the next, so the misses of up to 64 packets are in flight
//! together; measured 0.85× the time of single lookups at 1M IPv4 routes). The same code
//! serves IPv6, where DIR-24-8 or 8-bit plies would cost kilobytes per route (rte_lpm6 sizes its
//! tbl8 pool for that): a /48 is 5 nodes deep but shares its upper nodes with the other routes
//! of its allocation (measured: 78 B per route for 1M routes, BENCHMARKS.md "FIB").
//!
//! **Updates in place**: a route longer than /18 rebuilds the subtree of one top entry from the
//! route set kept in the `Fib` (µs for IPv4; the freed blocks are reused by size). A route of
//! length `l <= 18` recomputes 2^(18-l) top entries and their subtrees: a /8 in a 1M-route
//! table takes milliseconds, a default route a full rebuild (~2 s). For those, build on the
//! control side ([`Rib::build`]) and swap, rather than calling [`Fib::add`] on the worker.
#![forbid(unsafe_code)]

mod error;
mod family;
mod group;
mod routes;
mod trie;

use std::marker::PhantomData;

pub use error::FibError;
pub use family::{Family, V4, V6};

use routes::Routes;
use trie::{Trie, BATCH};

/// Sizes of a [`Fib`] ([`Fib::stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FibStats {
    /// Routes.
    pub routes: usize,
    /// Live 64-slot trie nodes (24 bytes each).
    pub trie_nodes: usize,
    /// Live leaves (4 bytes each).
    pub trie_leaves: usize,
    /// Bytes of the data-plane structure (top level 1 MiB + nodes + leaves, with free blocks).
    pub trie_bytes: usize,
    /// Bytes of the route set and next-hop groups kept beside it for incremental updates.
    pub route_set_bytes: usize,
}

/// A next hop as chosen by the user (the switch uses its adjacency index).
pub type NextHop = u32;

/// Most next hops per route (ECMP).
pub const MAX_ECMP: usize = 8;

/// Control-plane route set of one family. See the crate doc.
#[derive(Debug, Clone)]
pub struct Rib<F: Family> {
    routes: Routes,
    _f: PhantomData<F>,
}

/// IPv4 RIB: `add(Ipv4Addr, len 0..=32, next hops)`.
pub type Ip4Rib = Rib<V4>;
/// IPv6 RIB: `add(Ipv6Addr, len 0..=128, next hops)`.
pub type Ip6Rib = Rib<V6>;

impl<F: Family> Default for Rib<F> {
    fn default() -> Self {
        Self {
            routes: Routes::default(),
            _f: PhantomData,
        }
    }
}

impl<F: Family> Rib<F> {
    /// An empty RIB.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add the route `addr/len -> nhs`, or replace the next hops of an existing one.
    ///
    /// Errors: `len` above the address width, host bits set, 0 or more than [`MAX_ECMP`] next
    /// hops.
    pub fn add(&mut self, addr: F::Addr, len: u8, nhs: &[NextHop]) -> Result<(), FibError> {
        self.routes.add::<F>(addr, len, nhs).map(|_| ())
    }

    /// Remove the route `addr/len`. Errors: invalid prefix, or not in the table.
    pub fn remove(&mut self, addr: F::Addr, len: u8) -> Result<(), FibError> {
        self.routes.remove::<F>(addr, len).map(|_| ())
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes.map.len()
    }

    /// True when there is no route.
    pub fn is_empty(&self) -> bool {
        self.routes.map.is_empty()
    }

    /// The next hops of the route `addr/len`, if present (exact match, not a lookup).
    pub fn get(&self, addr: F::Addr, len: u8) -> Option<&[NextHop]> {
        let bits = routes::check_prefix::<F>(addr, len).ok()?;
        let g = *self.routes.map.get(&(bits, len))?;
        Some(self.routes.groups.get(g).next_hops())
    }

    /// All routes, sorted by address then length.
    pub fn iter(&self) -> impl Iterator<Item = (F::Addr, u8, &[NextHop])> + '_ {
        self.routes.map.iter().map(|(&(bits, len), &g)| {
            (
                F::bits_addr(bits),
                len,
                self.routes.groups.get(g).next_hops(),
            )
        })
    }

    /// Compile the data-plane table (full build).
    pub fn build(&self) -> Fib<F> {
        Fib {
            trie: Trie::build(&self.routes),
            routes: self.routes.clone(),
        }
    }
}

/// Data-plane table of one family, read by a worker. See the crate doc.
#[derive(Debug, Clone)]
pub struct Fib<F: Family> {
    /// The route set, kept for incremental updates (a removed route's slots fall back to the
    /// next shorter one).
    routes: Routes,
    trie: Trie<F>,
}

/// IPv4 FIB: `lookup(dst: u32 /* u32::from(Ipv4Addr) */, flow_hash)`.
pub type Ip4Fib = Fib<V4>;
/// IPv6 FIB: `lookup(dst: u128 /* u128::from(Ipv6Addr) */, flow_hash)`.
pub type Ip6Fib = Fib<V6>;

impl<F: Family> Default for Fib<F> {
    fn default() -> Self {
        Rib::<F>::new().build()
    }
}

impl<F: Family> Fib<F> {
    /// Longest-prefix match of `dst` (host byte order); with ECMP, `flow_hash` picks the next
    /// hop. `None`: no route (not even a default route).
    pub fn lookup(&self, dst: F::Key, flow_hash: u32) -> Option<NextHop> {
        self.routes.groups.resolve(self.trie.lookup(dst), flow_hash)
    }

    /// [`lookup`](Self::lookup) for a vector of packets: `out[i] = lookup(dst[i], flow_hash[i])`.
    ///
    /// Panics if the three slices differ in length (a caller bug).
    pub fn lookup_batch(&self, dst: &[F::Key], flow_hash: &[u32], out: &mut [Option<NextHop>]) {
        assert!(
            dst.len() == flow_hash.len() && dst.len() == out.len(),
            "lookup_batch: dst, flow_hash and out must have the same length ({}, {}, {})",
            dst.len(),
            flow_hash.len(),
            out.len()
        );
        let mut groups = [0; BATCH];
        for ((d, h), o) in dst
            .chunks(BATCH)
            .zip(flow_hash.chunks(BATCH))
            .zip(out.chunks_mut(BATCH))
        {
            let groups = &mut groups[..d.len()];
            self.trie.lookup_stages(d, groups);
            for ((o, &g), &h) in o.iter_mut().zip(groups.iter()).zip(h) {
                *o = self.routes.groups.resolve(g, h);
            }
        }
    }

    /// Add or replace one route in place (same rules and errors as [`Rib::add`]).
    pub fn add(&mut self, addr: F::Addr, len: u8, nhs: &[NextHop]) -> Result<(), FibError> {
        let bits = self.routes.add::<F>(addr, len, nhs)?;
        self.trie.update(&self.routes, bits, len);
        Ok(())
    }

    /// Remove one route in place (same rules and errors as [`Rib::remove`]).
    pub fn remove(&mut self, addr: F::Addr, len: u8) -> Result<(), FibError> {
        let bits = self.routes.remove::<F>(addr, len)?;
        self.trie.update(&self.routes, bits, len);
        Ok(())
    }

    /// Bytes of heap memory held: the data-plane trie, plus the route set and groups kept for
    /// updates (see [`stats`](Self::stats) for the split).
    pub fn memory_bytes(&self) -> usize {
        self.trie.memory_bytes() + self.routes.memory_bytes()
    }

    /// Sizes of the compiled structure, for `show ip fib` and the benchmarks.
    pub fn stats(&self) -> FibStats {
        let (nodes, leaves) = self.trie.live();
        FibStats {
            routes: self.routes.map.len(),
            trie_nodes: nodes,
            trie_leaves: leaves,
            trie_bytes: self.trie.memory_bytes(),
            route_set_bytes: self.routes.memory_bytes(),
        }
    }

    /// Number of routes.
    pub fn routes(&self) -> usize {
        self.routes.map.len()
    }
}

// The worker receives a `Fib` built on the control thread, and may share it read-only.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Ip4Fib>();
    send_sync::<Ip6Fib>();
    send_sync::<Ip4Rib>();
    send_sync::<Ip6Rib>();
};
