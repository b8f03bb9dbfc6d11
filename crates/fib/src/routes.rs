//! The route set shared by the RIB and the FIB: `(prefix, len) -> group`, validated.

use std::collections::BTreeMap;

use crate::family::Family;
use crate::group::{GroupId, Groups};
use crate::{FibError, NextHop, MAX_ECMP};

/// Mask of the first `len` bits of a left-aligned `u128`.
pub(crate) fn mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len as u32)
    }
}

/// Routes keyed by `(left-aligned prefix, len)`: sorted by address, then shorter first, so a
/// covering route always comes before the routes it covers (the build relies on that).
#[derive(Debug, Clone, Default)]
pub(crate) struct Routes {
    pub(crate) map: BTreeMap<(u128, u8), GroupId>,
    pub(crate) groups: Groups,
}

pub(crate) fn prefix_string<F: Family>(bits: u128, len: u8) -> String {
    format!("{:?}/{len}", F::bits_addr(bits))
}

/// Check `len` and the host bits; the left-aligned prefix.
pub(crate) fn check_prefix<F: Family>(addr: F::Addr, len: u8) -> Result<u128, FibError> {
    if len > F::BITS {
        return Err(FibError::PrefixLen {
            family: F::NAME,
            len,
            max: F::BITS,
        });
    }
    let bits = F::addr_bits(addr);
    if bits & !mask(len) != 0 {
        return Err(FibError::HostBits {
            addr: addr.into(),
            len,
            network: F::bits_addr(bits & mask(len)).into(),
        });
    }
    Ok(bits)
}

impl Routes {
    /// Add or replace a route. Returns the left-aligned prefix.
    pub(crate) fn add<F: Family>(
        &mut self,
        addr: F::Addr,
        len: u8,
        nhs: &[NextHop],
    ) -> Result<u128, FibError> {
        let bits = check_prefix::<F>(addr, len)?;
        if nhs.is_empty() || nhs.len() > MAX_ECMP {
            return Err(FibError::NextHopCount {
                prefix: prefix_string::<F>(bits, len),
                count: nhs.len(),
                max: MAX_ECMP,
            });
        }
        let g = self.groups.acquire(nhs);
        if let Some(old) = self.map.insert((bits, len), g) {
            self.groups.release(old);
        }
        Ok(bits)
    }

    /// Remove a route. Returns the left-aligned prefix.
    pub(crate) fn remove<F: Family>(&mut self, addr: F::Addr, len: u8) -> Result<u128, FibError> {
        let bits = check_prefix::<F>(addr, len)?;
        match self.map.remove(&(bits, len)) {
            Some(g) => {
                self.groups.release(g);
                Ok(bits)
            }
            None => Err(FibError::NotFound {
                prefix: prefix_string::<F>(bits, len),
            }),
        }
    }

    /// The longest route covering `bits` among those of length `<= max_len`: its group, or 0.
    pub(crate) fn covering(&self, bits: u128, max_len: u8) -> GroupId {
        for len in (0..=max_len).rev() {
            if let Some(&g) = self.map.get(&(bits & mask(len), len)) {
                return g;
            }
        }
        0
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        // BTreeMap: ~ key + value per entry plus node overhead (B-tree nodes hold up to 11
        // entries with a header); counted as 1.5x the payload.
        self.map.len() * (std::mem::size_of::<(u128, u8)>() + 4) * 3 / 2
            + self.groups.memory_bytes()
    }
}
