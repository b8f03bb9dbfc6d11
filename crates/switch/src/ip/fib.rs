//! [`Fib4`] and [`Fib6`]: table 0's data-plane FIBs as the IP nodes see them — the `fib` crate's
//! [`vecswitch_fib::Ip4Fib`] and [`vecswitch_fib::Ip6Fib`] (their structure, batched lookup and
//! ECMP are documented there), behind thin wrappers so that the nodes and control calls do not depend on how it is built. Next hops
//! are adjacency indices ([`super::AdjIdx`]).
//!
//! Single routes change in place ([`Fib4::add`], [`Fib4::remove`], incremental in the `fib`
//! crate); a whole table is compiled at once by [`Fib4::build`] (bulk loads).

use std::net::{Ipv4Addr, Ipv6Addr};

use vecswitch_fib::{FibError, Ip4Fib, Ip4Rib, Ip6Fib, Ip6Rib};

use super::AdjIdx;

/// The data-plane FIB of one table.
#[derive(Debug, Clone, Default)]
pub struct Fib4 {
    inner: Ip4Fib,
}

impl Fib4 {
    /// A FIB of `routes` (`(network, length, adjacencies)`); routes the `fib` crate refuses are
    /// skipped (the control calls checked them already).
    pub fn build<'a>(routes: impl Iterator<Item = (u32, u8, &'a [AdjIdx])>) -> Fib4 {
        let mut rib = Ip4Rib::new();
        for (net, len, paths) in routes {
            // Checked by the control calls (length, host bits, 1 to 8 paths).
            let _ = rib.add(Ipv4Addr::from(net), len, paths);
        }
        Fib4 { inner: rib.build() }
    }

    /// Adds or replaces one route in place.
    pub fn add(&mut self, net: u32, len: u8, paths: &[AdjIdx]) -> Result<(), FibError> {
        self.inner.add(Ipv4Addr::from(net), len, paths)
    }

    /// Removes one route in place.
    pub fn remove(&mut self, net: u32, len: u8) -> Result<(), FibError> {
        self.inner.remove(Ipv4Addr::from(net), len)
    }

    /// The adjacency for `dst`, ECMP chosen by `flow_hash`.
    #[inline]
    pub fn lookup(&self, dst: u32, flow_hash: u32) -> Option<AdjIdx> {
        self.inner.lookup(dst, flow_hash)
    }

    /// [`Fib4::lookup`] for a vector: `out[i]` for `dst[i]`, `flow_hash[i]` (the `fib` crate
    /// stages the memory accesses over the batch).
    #[inline]
    pub fn lookup_batch(&self, dst: &[u32], flow_hash: &[u32], out: &mut [Option<AdjIdx>]) {
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

/// The IPv6 data-plane FIB of one table (keys: `u128::from(Ipv6Addr)`).
#[derive(Debug, Clone, Default)]
pub struct Fib6 {
    inner: Ip6Fib,
}

impl Fib6 {
    /// A FIB of `routes` (`(network, length, adjacencies)`); routes the `fib` crate refuses are
    /// skipped (the control calls checked them already).
    pub fn build<'a>(routes: impl Iterator<Item = (u128, u8, &'a [AdjIdx])>) -> Fib6 {
        let mut rib = Ip6Rib::new();
        for (net, len, paths) in routes {
            // Checked by the control calls (length, host bits, 1 to 8 paths).
            let _ = rib.add(Ipv6Addr::from(net), len, paths);
        }
        Fib6 { inner: rib.build() }
    }

    /// Adds or replaces one route in place.
    pub fn add(&mut self, net: u128, len: u8, paths: &[AdjIdx]) -> Result<(), FibError> {
        self.inner.add(Ipv6Addr::from(net), len, paths)
    }

    /// Removes one route in place.
    pub fn remove(&mut self, net: u128, len: u8) -> Result<(), FibError> {
        self.inner.remove(Ipv6Addr::from(net), len)
    }

    /// The adjacency for `dst`, ECMP chosen by `flow_hash`.
    #[inline]
    pub fn lookup(&self, dst: u128, flow_hash: u32) -> Option<AdjIdx> {
        self.inner.lookup(dst, flow_hash)
    }

    /// [`Fib6::lookup`] for a vector (staged over the batch by the `fib` crate).
    #[inline]
    pub fn lookup_batch(&self, dst: &[u128], flow_hash: &[u32], out: &mut [Option<AdjIdx>]) {
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
