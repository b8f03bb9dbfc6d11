//! The data-plane structure: a poptrie-style compressed multibit trie (Asai & Ohara, "Poptrie: A
//! Compressed Trie with Population Count for Fast and Scalable Software IP Routing Table Lookup",
//! SIGCOMM 2015), written for this crate from the paper's description.
//!
//! - **Top level**: a direct-pointing array of 2^18 `u32` entries indexed by the first 18 bits of
//!   the address (1 MiB; the paper's "direct pointing" with s = 18, its best setting; VPP's
//!   16-8-8 ip4_mtrie uses 16). With 18, an IPv4 /19–/24 — most of a BGP table — is the top
//!   entry, one node and one leaf; with 16 it was two nodes. An entry is a leaf
//!   (a next-hop group id, 0 = no route) or, with bit 31 set, the index of a node.
//! - **Nodes**: stride 6 (64 slots), 24 bytes each: `vector` (bit *i* set = slot *i* is a child
//!   node), `leafvec` (bit *i* set = slot *i* is a leaf whose group differs from the previous leaf
//!   slot's), `base1` (index of the node's first child; the children are contiguous) and `base0`
//!   (index of its first leaf in the leaf array; only distinct runs are stored). Slot *i*'s child
//!   is `base1 + popcount(vector & (2^i - 1))`, its leaf `leaves[base0 + popcount(leafvec &
//!   (2^(i+1) - 1)) - 1]`. An IPv4 /24 is found in the top entry, two nodes and one leaf; a
//!   64-slot node whose slots all inherit one route costs 24 + 4 bytes instead of VPP's 1 KiB ply.
//! - Leaves hold the *resolved* group (the longest route covering the slot, inherited from above),
//!   so a lookup never backtracks.
//!
//! **Updates**: a route longer than /18 changes the subtree of one top entry: that subtree is
//! rebuilt from the route set (the routes under that /18 — a handful in a 1M-route table) and
//! the old one's blocks go to free lists by size, which later builds reuse. A route of /18 or
//! shorter changes 2^(18-len) top entries, each rewritten (a leaf) or rebuilt (a node): a /8
//! costs 1,024 entries, a default route in a full table is a full rebuild. Costs are measured in
//! docs/BENCHMARKS.md (FIB).

use std::marker::PhantomData;

use crate::family::Family;
use crate::group::GroupId;
use crate::routes::Routes;

/// Bits resolved by the top level.
pub(crate) const TOP_BITS: u32 = 18;
/// Bits resolved per node.
pub(crate) const STRIDE: u32 = 6;
/// Top-level or state flag: "this is a node index", not a leaf.
const NODE: u32 = 1 << 31;

/// One 64-slot node (see the module doc).
#[derive(Debug, Clone, Copy, Default)]
struct Node {
    vector: u64,
    leafvec: u64,
    base1: u32,
    base0: u32,
}

/// A route as the builder sees it: left-aligned prefix, length, group.
type R = (u128, u8, GroupId);

/// The compiled table.
#[derive(Debug, Clone)]
pub(crate) struct Trie<F: Family> {
    /// A fixed-size array, so that indexing it with [`TOP_BITS`] bits needs no bounds check.
    top: Box<[u32; 1 << TOP_BITS]>,
    nodes: Vec<Node>,
    leaves: Vec<GroupId>,
    /// Free blocks of nodes / leaves, indexed by block size (1..=64).
    free_nodes: Vec<Vec<u32>>,
    free_leaves: Vec<Vec<u32>>,
    _f: PhantomData<F>,
}

impl<F: Family> Trie<F> {
    fn empty() -> Self {
        Self {
            top: vec![0; 1 << TOP_BITS]
                .into_boxed_slice()
                .try_into()
                .expect("2^TOP_BITS entries"),
            nodes: Vec::new(),
            leaves: Vec::new(),
            free_nodes: vec![Vec::new(); 65],
            free_leaves: vec![Vec::new(); 65],
            _f: PhantomData,
        }
    }

    /// Full build from a route set.
    pub(crate) fn build(routes: &Routes) -> Self {
        let mut t = Self::empty();
        t.rebuild_range(routes, 0, 0);
        t
    }

    /// Recompute the top entries (and their subtrees) of the region `start/pl`, `pl <=
    /// TOP_BITS`, from the route set: 2^(TOP_BITS-pl) entries.
    fn rebuild_range(&mut self, routes: &Routes, start: u128, pl: u8) {
        let s0 = (start >> (128 - TOP_BITS)) as usize;
        let s1 = s0 + (1 << (TOP_BITS - pl as u32));
        let end = start | (u128::MAX.checked_shr(pl as u32).unwrap_or(0));
        // Free the old subtrees; the roots (blocks of 1) too.
        for s in s0..s1 {
            let old = self.top[s];
            if old & NODE != 0 {
                self.free_below(old & !NODE);
                self.free_nodes[1].push(old & !NODE);
            }
        }
        // Routes shorter than the region, covering it.
        let base = if pl == 0 {
            0
        } else {
            routes.covering(start, pl - 1)
        };
        self.top[s0..s1].fill(base);
        let inside: Vec<R> = routes
            .map
            .range((start, pl)..=(end, u8::MAX))
            .map(|(&(b, l), &g)| (b, l, g))
            .collect();
        // Paint the routes of /TOP_BITS or shorter. The route set is sorted by address, then by
        // length, so a covering route is painted before the routes it covers.
        for &(bits, len, g) in inside.iter().filter(|r| r.1 as u32 <= TOP_BITS) {
            let s = (bits >> (128 - TOP_BITS)) as usize;
            self.top[s..s + (1 << (TOP_BITS - len as u32))].fill(g);
        }
        // One subtree per top entry that has longer routes under it.
        let deep: Vec<R> = inside
            .into_iter()
            .filter(|r| r.1 as u32 > TOP_BITS)
            .collect();
        let mut i = 0;
        while i < deep.len() {
            let s = (deep[i].0 >> (128 - TOP_BITS)) as usize;
            let n = deep[i..].partition_point(|r| (r.0 >> (128 - TOP_BITS)) as usize == s);
            let root = self.alloc_nodes(1);
            let inherited = self.top[s];
            self.build_node(root, &deep[i..i + n], TOP_BITS, inherited);
            self.top[s] = NODE | root;
            i += n;
        }
    }

    /// Build the node at `idx` for the region at bit offset `off` holding `routes` (all inside
    /// the region, sorted; those of length `<= off` are already in `inherited` and are skipped).
    fn build_node(&mut self, idx: u32, routes: &[R], off: u32, inherited: GroupId) {
        let mut leaf = [inherited; 64];
        let mut vector = 0u64;
        for &(bits, len, g) in routes {
            let len = len as u32;
            if len <= off {
                continue;
            }
            if len <= off + STRIDE {
                let rel = len - off;
                let first = (((bits << off) >> (128 - rel)) as usize) << (STRIDE - rel);
                leaf[first..first + (1 << (STRIDE - rel))].fill(g);
            } else {
                vector |= 1 << ((bits << off) >> (128 - STRIDE));
            }
        }
        // Leaves: one per run of equal groups among the leaf slots.
        let mut leafvec = 0u64;
        let mut runs = [0u32; 64];
        let mut nruns = 0;
        for (slot, &g) in leaf.iter().enumerate() {
            if vector & (1 << slot) == 0 && (nruns == 0 || runs[nruns - 1] != g) {
                leafvec |= 1 << slot;
                runs[nruns] = g;
                nruns += 1;
            }
        }
        let base0 = self.alloc_leaves(nruns);
        self.leaves[base0 as usize..base0 as usize + nruns].copy_from_slice(&runs[..nruns]);
        let nchildren = vector.count_ones() as usize;
        let base1 = self.alloc_nodes(nchildren);
        self.nodes[idx as usize] = Node {
            vector,
            leafvec,
            base1,
            base0,
        };
        // Children, in slot order; the routes of one slot are contiguous in the sorted slice.
        let mut rest = routes;
        let mut k = 0;
        while !rest.is_empty() {
            let slot = ((rest[0].0 << off) >> (128 - STRIDE)) as u32;
            let n = rest.partition_point(|r| ((r.0 << off) >> (128 - STRIDE)) as u32 == slot);
            if vector & (1 << slot) != 0 {
                self.build_node(base1 + k, &rest[..n], off + STRIDE, leaf[slot as usize]);
                k += 1;
            }
            rest = &rest[n..];
        }
        debug_assert_eq!(k as usize, nchildren);
    }

    fn alloc_nodes(&mut self, n: usize) -> u32 {
        if n == 0 {
            return 0;
        }
        if let Some(i) = self.free_nodes[n].pop() {
            return i;
        }
        let i = self.nodes.len();
        self.nodes.resize(i + n, Node::default());
        u32::try_from(i).expect("FIB: more than 2^31 trie nodes") & !NODE
    }

    fn alloc_leaves(&mut self, n: usize) -> u32 {
        if n == 0 {
            return 0;
        }
        if let Some(i) = self.free_leaves[n].pop() {
            return i;
        }
        let i = self.leaves.len();
        self.leaves.resize(i + n, 0);
        u32::try_from(i).expect("FIB: more than 2^32 trie leaves")
    }

    /// Return the blocks below node `idx` (not `idx` itself) to the free lists.
    fn free_below(&mut self, idx: u32) {
        let node = self.nodes[idx as usize];
        let nchildren = node.vector.count_ones();
        for k in 0..nchildren {
            self.free_below(node.base1 + k);
        }
        if nchildren > 0 {
            self.free_nodes[nchildren as usize].push(node.base1);
        }
        let nleaves = node.leafvec.count_ones() as usize;
        if nleaves > 0 {
            self.free_leaves[nleaves].push(node.base0);
        }
    }

    /// Bring the trie up to date after the route `bits/len` was added, replaced or removed in
    /// `routes`: the top entries it covers (one for a route longer than /TOP_BITS) are recomputed.
    pub(crate) fn update(&mut self, routes: &Routes, bits: u128, len: u8) {
        let pl = len.min(TOP_BITS as u8);
        self.rebuild_range(routes, bits & crate::routes::mask(pl), pl);
    }

    /// One step of the walk: from node `n` at offset `off`, the next state (a node with
    /// [`NODE`] set, or a leaf group). The per-packet body of both lookups.
    #[inline(always)]
    fn step(&self, k: F::Key, off: u32, n: u32) -> u32 {
        let node = &self.nodes[n as usize];
        let bit = 1u64 << F::chunk(k, off);
        if node.vector & bit != 0 {
            NODE | (node.base1 + (node.vector & (bit - 1)).count_ones())
        } else {
            let rank = (node.leafvec & (bit | (bit - 1))).count_ones();
            self.leaves[(node.base0 + rank - 1) as usize]
        }
    }

    /// The group of the longest prefix matching `k` (0 = none).
    #[inline]
    pub(crate) fn lookup(&self, k: F::Key) -> GroupId {
        let mut s = self.top[F::top(k)];
        let mut off = TOP_BITS;
        while s & NODE != 0 {
            s = self.step(k, off, s & !NODE);
            off += STRIDE;
        }
        s
    }

    /// Staged lookup of up to [`BATCH`] keys: all top entries first, then one trie level for all
    /// packets still inside nodes, then the next — as VPP's ip4-lookup node walks its mtrie. The
    /// loads of one stage are independent, so the CPU overlaps their cache misses.
    #[inline]
    pub(crate) fn lookup_stages(&self, keys: &[F::Key], out: &mut [GroupId]) {
        debug_assert!(keys.len() <= BATCH && keys.len() == out.len());
        let mut pending = 0u32;
        for (o, &k) in out.iter_mut().zip(keys) {
            *o = self.top[F::top(k)];
            pending |= *o;
        }
        let mut off = TOP_BITS;
        while pending & NODE != 0 {
            pending = 0;
            for (o, &k) in out.iter_mut().zip(keys) {
                if *o & NODE != 0 {
                    *o = self.step(k, off, *o & !NODE);
                    pending |= *o;
                }
            }
            off += STRIDE;
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.top.len() * 4
            + self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.leaves.capacity() * 4
            + self
                .free_nodes
                .iter()
                .chain(&self.free_leaves)
                .map(|f| f.capacity() * 4)
                .sum::<usize>()
    }

    /// (live nodes, live leaves) — excluding free blocks.
    pub(crate) fn live(&self) -> (usize, usize) {
        let fnodes: usize = self
            .free_nodes
            .iter()
            .enumerate()
            .map(|(n, f)| n * f.len())
            .sum();
        let fleaves: usize = self
            .free_leaves
            .iter()
            .enumerate()
            .map(|(n, f)| n * f.len())
            .sum();
        (self.nodes.len() - fnodes, self.leaves.len() - fleaves)
    }
}

/// Keys per stage group in [`Trie::lookup_stages`].
pub(crate) const BATCH: usize = 64;
