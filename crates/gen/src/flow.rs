//! Flows: which header fields vary from frame to frame ([`FieldRange`]) and how a flow index picks
//! their values ([`FieldMode`]).
//!
//! Frame `n` of a stream belongs to flow `n mod flows`. Flow `i` gives each ranged field the value
//! `start + k`, where `k = i mod count` ([`FieldMode::Increment`]) or `k = permute(i mod count)`
//! ([`FieldMode::Random`]: a seeded bijection of `0..count`, so the values are shuffled but still all
//! distinct). Values are a pure function of the frame number: a run is reproducible from its seed, and
//! a frame the port refused can be rebuilt identically.

use serde::Serialize;

use crate::GenError;

/// Most distinct flows one stream may have.
pub const MAX_FLOWS: u32 = 1_000_000;

/// A header field that can vary per flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Field {
    SrcMac,
    DstMac,
    SrcIp,
    DstIp,
    SrcPort,
    DstPort,
}

impl Field {
    /// Parses `src-mac`, `dst-mac`, `src-ip`, `dst-ip`, `src-port`, `dst-port`.
    pub fn parse(s: &str) -> Result<Field, GenError> {
        Ok(match s.trim() {
            "src-mac" => Field::SrcMac,
            "dst-mac" => Field::DstMac,
            "src-ip" => Field::SrcIp,
            "dst-ip" => Field::DstIp,
            "src-port" => Field::SrcPort,
            "dst-port" => Field::DstPort,
            other => {
                return Err(GenError::Config {
                    field: "flow field".into(),
                    value: other.into(),
                    accepted: "src-mac, dst-mac, src-ip, dst-ip, src-port, dst-port".into(),
                })
            }
        })
    }

    /// Number of distinct values the field can take above `start` (ports are 16 bits, MACs vary in
    /// their low 32 bits, IPv4 addresses in 32 bits, IPv6 in the low 64 bits).
    pub fn room_above(self, start: u64, ipv6: bool) -> u64 {
        match self {
            Field::SrcPort | Field::DstPort => 0x1_0000u64.saturating_sub(start),
            Field::SrcMac | Field::DstMac => 0x1_0000_0000u64.saturating_sub(start & 0xffff_ffff),
            Field::SrcIp | Field::DstIp if !ipv6 => {
                0x1_0000_0000u64.saturating_sub(start & 0xffff_ffff)
            }
            Field::SrcIp | Field::DstIp => u64::MAX - start,
        }
    }
}

/// How a flow index maps to a field value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FieldMode {
    Increment,
    Random { seed: u64 },
}

/// One varying field: `count` values from the template's value upward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FieldRange {
    pub field: Field,
    /// Distinct values (1..=[`MAX_FLOWS`]).
    pub count: u32,
    pub mode: FieldMode,
}

impl FieldRange {
    /// The offset from the template value used by flow `flow`.
    #[inline]
    pub fn offset(&self, flow: u64) -> u64 {
        let k = flow % self.count as u64;
        match self.mode {
            FieldMode::Increment => k,
            FieldMode::Random { seed } => permute(k, self.count as u64, seed),
        }
    }
}

/// A seeded bijection of `0..n` (cycle-walking over a bijective mix of the next power of two).
pub fn permute(i: u64, n: u64, seed: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    let bits = 64 - (n - 1).leading_zeros();
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let k1 = seed | 1;
    let k2 = seed.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15;
    let half = bits.div_ceil(2);
    let mut x = i;
    loop {
        // Each step is a bijection of the `bits`-bit space: add, multiply by an odd number,
        // xor-shift right.
        for _ in 0..3 {
            x = x.wrapping_add(k2) & mask;
            x = x.wrapping_mul(k1) & mask;
            x ^= x >> half;
        }
        if x < n {
            return x;
        }
    }
}

/// Checks a set of ranges against the stream's flow count and the fields' widths.
pub fn validate(
    ranges: &[FieldRange],
    flows: u32,
    start_of: impl Fn(Field) -> u64,
    ipv6: bool,
) -> Result<(), GenError> {
    if flows == 0 || flows > MAX_FLOWS {
        return Err(GenError::Config {
            field: "flows".into(),
            value: flows.to_string(),
            accepted: format!("1..={MAX_FLOWS}"),
        });
    }
    for r in ranges {
        if r.count == 0 || r.count > MAX_FLOWS {
            return Err(GenError::Config {
                field: format!("{:?} range count", r.field),
                value: r.count.to_string(),
                accepted: format!("1..={MAX_FLOWS}"),
            });
        }
        let room = r.field.room_above(start_of(r.field), ipv6);
        if r.count as u64 > room {
            return Err(GenError::Config {
                field: format!("{:?} range count", r.field),
                value: r.count.to_string(),
                accepted: format!(
                    "at most {room} values above the template's value (the field would wrap)"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn permute_is_a_bijection() {
        for &n in &[1u64, 2, 3, 7, 8, 100, 1000, 65_536, 100_003] {
            let seen: HashSet<u64> = (0..n).map(|i| permute(i, n, 12345)).collect();
            assert_eq!(seen.len() as u64, n, "n={n}");
            assert!(seen.iter().all(|&v| v < n));
        }
    }

    #[test]
    fn permute_depends_on_seed_and_shuffles() {
        let a: Vec<u64> = (0..100).map(|i| permute(i, 100, 1)).collect();
        let b: Vec<u64> = (0..100).map(|i| permute(i, 100, 2)).collect();
        assert_ne!(a, b);
        assert_ne!(a, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn increment_offsets_wrap_at_count() {
        let r = FieldRange {
            field: Field::SrcIp,
            count: 3,
            mode: FieldMode::Increment,
        };
        let v: Vec<u64> = (0..7).map(|f| r.offset(f)).collect();
        assert_eq!(v, vec![0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn validation_names_field_and_limit() {
        let r = [FieldRange {
            field: Field::SrcPort,
            count: 70_000,
            mode: FieldMode::Increment,
        }];
        let e = validate(&r, 70_000, |_| 1024, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("SrcPort") && e.contains("70000") && e.contains("64512"),
            "{e}"
        );
        assert!(validate(&[], 0, |_| 0, false).is_err());
        assert!(validate(&[], 1_000_001, |_| 0, false).is_err());
        let r = [FieldRange {
            field: Field::SrcIp,
            count: 1_000_000,
            mode: FieldMode::Random { seed: 1 },
        }];
        assert!(validate(&r, 1_000_000, |_| 0x0a00_0000, false).is_ok());
    }
}
