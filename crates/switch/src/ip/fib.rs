//! [`Fib4`]: table 0's data-plane FIB as the IP nodes see it — a thin wrapper so that the nodes
//! do not depend on how the FIB is built. Built from the routes (`(network, length, adjacencies)`)
//! by the control calls; `ip4-lookup` calls [`Fib4::lookup_batch`] once per vector.
//!
//! The structure itself (a multibit trie for batched lookup with prefetch) is the `fib` crate's
//! (issue 10 item 3). Until that crate is merged, this is a reference longest-prefix match: one
//! hash map per prefix length, searched from /32 down — correct, not fast.

use std::collections::HashMap;

use super::{AdjIdx, Ipv4Prefix};

/// The data-plane FIB of one table.
#[derive(Debug, Clone, Default)]
pub struct Fib4 {
    /// Routes by length: network → adjacencies (ECMP).
    by_len: Vec<HashMap<u32, Vec<AdjIdx>>>,
    /// Lengths that have routes, longest first.
    lens: Vec<u8>,
    routes: usize,
}

impl Fib4 {
    /// A FIB of `routes`.
    pub fn build<'a>(routes: impl Iterator<Item = (u32, u8, &'a [AdjIdx])>) -> Fib4 {
        let mut by_len: Vec<HashMap<u32, Vec<AdjIdx>>> = vec![HashMap::new(); 33];
        let mut n = 0;
        for (net, len, paths) in routes {
            if len > 32 || paths.is_empty() {
                continue;
            }
            by_len[len as usize].insert(net & Ipv4Prefix::mask(len), paths.to_vec());
            n += 1;
        }
        let lens = (0..=32u8)
            .rev()
            .filter(|&l| !by_len[l as usize].is_empty())
            .collect();
        Fib4 {
            by_len,
            lens,
            routes: n,
        }
    }

    /// The adjacency for `dst`, ECMP chosen by `flow_hash`.
    #[inline]
    pub fn lookup(&self, dst: u32, flow_hash: u32) -> Option<AdjIdx> {
        for &l in &self.lens {
            if let Some(p) = self.by_len[l as usize].get(&(dst & Ipv4Prefix::mask(l))) {
                return Some(p[flow_hash as usize % p.len()]);
            }
        }
        None
    }

    /// [`Fib4::lookup`] for a vector: `out[i]` for `dst[i]`, `flow_hash[i]`.
    #[inline]
    pub fn lookup_batch(&self, dst: &[u32], flow_hash: &[u32], out: &mut [Option<AdjIdx>]) {
        for ((d, h), o) in dst.iter().zip(flow_hash).zip(out.iter_mut()) {
            *o = self.lookup(*d, *h);
        }
    }

    /// Routes in the FIB.
    pub fn routes(&self) -> usize {
        self.routes
    }
}
