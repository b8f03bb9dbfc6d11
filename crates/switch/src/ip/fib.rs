//! [`Fib`] (and its two instances [`Fib4`], [`Fib6`]): table 0's data-plane FIB as the IP nodes
//! see it — the `fib` crate's [`vecswitch_fib::Fib`] of the family (its structure, batched lookup
//! and ECMP are documented there), behind a thin wrapper so that the nodes and control calls do
//! not depend on how it is built. Next hops are adjacency indices ([`super::AdjIdx`]).
//!
//! Single routes change in place ([`Fib::add`], [`Fib::remove`], incremental in the `fib`
//! crate); a whole table is compiled at once by [`Fib::build`] (bulk loads).
//!
//! [`LookupBatch`] is the first two stages of `ip4-lookup` and `ip6-lookup`, written once: the
//! keys of a whole vector ([`Keys`]: destination and flow hash, read from the family's header),
//! then one staged lookup in the FIB; each node then makes its own decisions.

use vecswitch_buffer::{Pool, FRAME_SIZE};
use vecswitch_fib::{Family, FibError, Rib, V4, V6};
use vecswitch_graph::Cx;

use super::family::IpFamily;
use super::AdjIdx;
use crate::state::SwitchState;

/// The data-plane FIB of one table of family `F`.
#[derive(Debug, Clone)]
pub struct Fib<F: IpFamily> {
    inner: vecswitch_fib::Fib<F>,
}

/// The IPv4 FIB (keys: `u32::from(Ipv4Addr)`).
pub type Fib4 = Fib<V4>;
/// The IPv6 FIB (keys: `u128::from(Ipv6Addr)`).
pub type Fib6 = Fib<V6>;

impl<F: IpFamily> Default for Fib<F> {
    fn default() -> Self {
        Fib {
            inner: vecswitch_fib::Fib::default(),
        }
    }
}

impl<F: IpFamily> Fib<F> {
    /// A FIB of `routes` (`(network, length, adjacencies)`); routes the `fib` crate refuses are
    /// skipped (the control calls checked them already).
    pub fn build<'a>(routes: impl Iterator<Item = (F::Int, u8, &'a [AdjIdx])>) -> Fib<F> {
        let mut rib = Rib::<F>::new();
        for (net, len, paths) in routes {
            // Checked by the control calls (length, host bits, 1 to 8 paths).
            let _ = rib.add(F::fib_addr(net), len, paths);
        }
        Fib { inner: rib.build() }
    }

    /// Adds or replaces one route in place.
    pub fn add(&mut self, net: F::Int, len: u8, paths: &[AdjIdx]) -> Result<(), FibError> {
        self.inner.add(F::fib_addr(net), len, paths)
    }

    /// Removes one route in place.
    pub fn remove(&mut self, net: F::Int, len: u8) -> Result<(), FibError> {
        self.inner.remove(F::fib_addr(net), len)
    }

    /// The adjacency for `dst`, ECMP chosen by `flow_hash`.
    #[inline]
    pub fn lookup(&self, dst: <F as Family>::Key, flow_hash: u32) -> Option<AdjIdx> {
        self.inner.lookup(dst, flow_hash)
    }

    /// [`Fib::lookup`] for a vector: `out[i]` for `dst[i]`, `flow_hash[i]` (the `fib` crate
    /// stages the memory accesses over the batch).
    #[inline]
    pub fn lookup_batch(
        &self,
        dst: &[<F as Family>::Key],
        flow_hash: &[u32],
        out: &mut [Option<AdjIdx>],
    ) {
        self.inner.lookup_batch(dst, flow_hash, out);
    }

    /// Routes in the FIB.
    pub fn routes(&self) -> usize {
        self.inner.routes()
    }

    /// Bytes the FIB's data structure takes.
    pub fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
}

/// How a family's lookup node reads its keys from a packet (checked by the family's input node
/// or made by the switch); constants, so that each use is a direct call.
pub trait Keys: IpFamily {
    /// Destination (host order) and flow hash of a packet.
    const KEYS: fn(&Pool, u32) -> (<Self as Family>::Key, u32);
    /// Destination alone (host order) of a packet.
    const DST: fn(&Pool, u32) -> <Self as Family>::Key;
}

impl Keys for V4 {
    const KEYS: fn(&Pool, u32) -> (u32, u32) = super::ip4_lookup::keys;
    const DST: fn(&Pool, u32) -> u32 = super::ip4_lookup::dst;
}

impl Keys for V6 {
    const KEYS: fn(&Pool, u32) -> (u128, u32) = super::ip6_lookup::keys;
    const DST: fn(&Pool, u32) -> u128 = super::ip6_lookup::dst;
}

/// The flow hashes of a vector when no route has more than one path: they would pick nothing.
static NO_HASHES: [u32; FRAME_SIZE] = [0; FRAME_SIZE];

/// A lookup node's per-vector arrays: after [`LookupBatch::run`], `dst[i]` and `adj[i]` are the
/// destination and the adjacency found (`None`: no route) of the vector's packet `i`.
#[derive(Debug)]
pub struct LookupBatch<F: IpFamily> {
    pub dst: Vec<<F as Family>::Key>,
    pub hash: Vec<u32>,
    pub adj: Vec<Option<AdjIdx>>,
}

impl<F: IpFamily> Default for LookupBatch<F> {
    fn default() -> Self {
        LookupBatch {
            dst: vec![F::bits_key(0); FRAME_SIZE],
            hash: vec![0; FRAME_SIZE],
            adj: vec![None; FRAME_SIZE],
        }
    }
}

impl<F: Keys> LookupBatch<F> {
    /// Stage 1, the keys of the whole vector; stage 2, the FIB's batched lookup. The flow hash
    /// (which picks one of a route's equal-cost paths) is computed only while the table has a
    /// route with more than one path; it then also goes to the buffer header (`flow_hash`, 0:
    /// not computed).
    #[inline]
    pub fn run(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32]) {
        let n = pkts.len();
        let t = F::tables(&cx.state.ip);
        if t.multipath_routes() == 0 {
            for (d, &h) in self.dst.iter_mut().zip(pkts) {
                *d = (F::DST)(cx.pool, h);
            }
            t.fib
                .lookup_batch(&self.dst[..n], &NO_HASHES[..n], &mut self.adj[..n]);
            return;
        }
        for (i, &h) in pkts.iter().enumerate() {
            let (d, fh) = (F::KEYS)(cx.pool, h);
            self.dst[i] = d;
            self.hash[i] = fh;
            cx.pool.header_mut(h).flow_hash = fh;
        }
        F::tables(&cx.state.ip).fib.lookup_batch(
            &self.dst[..n],
            &self.hash[..n],
            &mut self.adj[..n],
        );
    }
}
