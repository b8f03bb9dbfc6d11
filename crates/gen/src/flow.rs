//! Flows: which header fields vary from frame to frame ([`FieldRange`]) and how a flow index picks
//! their values ([`FieldMode`]).
//!
//! Frame `n` of a stream belongs to flow `n mod flows`. Flow `i` gives each ranged field the value
//! `start + k`, where `k = i mod count` ([`FieldMode::Increment`]) or `k = permute(i mod count)`
//! ([`FieldMode::Random`]: a seeded bijection of `0..count`, so the values are shuffled but still all
//! distinct). Values are a pure function of the frame number: a run is reproducible from its seed, and
//! a frame the port refused can be rebuilt identically.
//!
//! **Unique flows** ([`FlowOrder::Unique`], for new-session rates): frame `n` gets tuple number
//! `t = base + n` and no tuple repeats. The ranges are the digits of a mixed-radix number: the
//! first range's offset is `t mod count₀`, the second's `(t / count₀) mod count₁`, and so on
//! ([`unique_offsets`]), so the stream has `Π countᵢ` distinct tuples ([`unique_space`]; e.g.
//! 64,000 source ports × 1024 destination ports = 65,536,000). The generator advances `base` by
//! the frames of every phase it sends (warm-up, each trial), so a later trial never repeats a
//! tuple of an earlier one; past the space it fails naming it ([`check_unique`]) instead of
//! silently wrapping.

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

/// How frame numbers map to flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowOrder {
    /// Frame `n` is flow `n mod flows`: the flows repeat (the default).
    #[default]
    Cycle,
    /// Frame `n` is tuple `base + n` of the ranges' mixed-radix space: no tuple repeats
    /// ([`unique_offsets`]); the generator sets `base` per phase.
    Unique,
}

/// Distinct tuples of unique flows over `ranges`: the product of their counts (1 without ranges).
pub fn unique_space(ranges: &[FieldRange]) -> u64 {
    ranges
        .iter()
        .fold(1u64, |a, r| a.saturating_mul(u64::from(r.count.max(1))))
}

/// The offset of each range (in order) for tuple `t` of unique flows: the digits of `t` in the
/// mixed radix of the counts, each through its range's mode (a [`FieldMode::Random`] digit is
/// permuted, still a bijection). `t` wraps at [`unique_space`]; [`check_unique`] refuses that.
#[inline]
pub fn unique_offset(ranges: &[FieldRange], t: u64, i: usize) -> u64 {
    let mut t = t % unique_space(ranges);
    for r in &ranges[..i] {
        t /= u64::from(r.count.max(1));
    }
    ranges[i].offset(t)
}

/// The offsets of every range for tuple `t` (see [`unique_offset`]).
pub fn unique_offsets(ranges: &[FieldRange], t: u64) -> Vec<u64> {
    (0..ranges.len())
        .map(|i| unique_offset(ranges, t, i))
        .collect()
}

/// Fails when tuples `base .. base + frames` do not fit in the unique space of `ranges` (the
/// stream would repeat a tuple).
pub fn check_unique(ranges: &[FieldRange], base: u64, frames: u64) -> Result<(), GenError> {
    let space = unique_space(ranges);
    if base.saturating_add(frames) > space {
        return Err(GenError::Config {
            field: "unique flows".into(),
            value: format!("tuples {base}..{}", base.saturating_add(frames)),
            accepted: format!(
                "at most {space} tuples over all phases and trials of the generator (the product \
                 of the ranges' counts); widen the ranges or send fewer frames"
            ),
        });
    }
    Ok(())
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

    fn ports(p: u32, d: u32, random: bool) -> Vec<FieldRange> {
        let mode = |seed| {
            if random {
                FieldMode::Random { seed }
            } else {
                FieldMode::Increment
            }
        };
        vec![
            FieldRange {
                field: Field::SrcPort,
                count: p,
                mode: mode(7),
            },
            FieldRange {
                field: Field::DstPort,
                count: d,
                mode: mode(9),
            },
        ]
    }

    /// Unique flows never repeat a tuple within the space, whatever the base, and are a pure
    /// function of the tuple number.
    #[test]
    fn unique_flows_do_not_repeat_and_rebuild() {
        for random in [false, true] {
            let r = ports(1000, 37, random);
            assert_eq!(unique_space(&r), 37_000);
            let seen: HashSet<Vec<u64>> = (0..37_000).map(|t| unique_offsets(&r, t)).collect();
            assert_eq!(seen.len(), 37_000, "random={random}");
            // A later phase (base advanced) continues without meeting the earlier tuples.
            let first: HashSet<Vec<u64>> = (0..10_000).map(|t| unique_offsets(&r, t)).collect();
            assert!((10_000..37_000).all(|t| !first.contains(&unique_offsets(&r, t))));
            assert_eq!(unique_offsets(&r, 12_345), unique_offsets(&r, 12_345));
            assert!(unique_offsets(&r, 5)
                .iter()
                .zip(&r)
                .all(|(&o, r)| o < u64::from(r.count)));
        }
        // Increment: the first range is the fastest digit.
        let r = ports(3, 5, false);
        assert_eq!(unique_offsets(&r, 0), vec![0, 0]);
        assert_eq!(unique_offsets(&r, 1), vec![1, 0]);
        assert_eq!(unique_offsets(&r, 3), vec![0, 1]);
        assert_eq!(unique_offsets(&r, 14), vec![2, 4]);
        assert_eq!(unique_space(&[]), 1);
    }

    #[test]
    fn unique_space_exhaustion_is_an_error_naming_the_space() {
        let r = ports(64_000, 1024, false);
        assert_eq!(unique_space(&r), 65_536_000);
        assert!(check_unique(&r, 0, 65_536_000).is_ok());
        assert!(check_unique(&r, 65_000_000, 536_000).is_ok());
        let e = check_unique(&r, 65_000_000, 536_001)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unique flows") && e.contains("65536000") && e.contains("65536001"),
            "{e}"
        );
        assert!(check_unique(&r, u64::MAX, 1).is_err());
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
