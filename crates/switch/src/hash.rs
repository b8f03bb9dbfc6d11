//! Hashing shared by the features' flow tables (NAT44 sessions, firewall conntrack and rule
//! shapes): a neutral home, so that no feature imports another's to hash its keys.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash-class hasher for packed keys (a multiply and a fold, seeded by the table).
#[derive(Debug, Default, Clone, Copy)]
pub struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^ (x >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(5) ^ *b as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u128(&mut self, i: u128) {
        let v = (i as u64) ^ ((i >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = (self.0 ^ v).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u128(i as u128);
    }
}

/// A `HashMap` hashed with [`MixHasher`].
pub type MixMap<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;
