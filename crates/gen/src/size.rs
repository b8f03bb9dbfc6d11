//! Frame sizes: one fixed size or a named/custom mix ([`SizeSpec`]), resolved into a deterministic
//! [`SizeSequence`] that gives the size of the n-th frame of a stream.
//!
//! Sizes are Ethernet frame sizes **including the 4-byte FCS**, as RFC 2544 §9 counts them: a 64-byte
//! frame puts 60 bytes on a memif or veth link (the kernel and memif carry no FCS).
//!
//! A mix is a list of `(size, weight)`. Its sequence repeats with a period of `sum(weights)` frames
//! (percentages are scaled to integers first), and within one period every size appears exactly its
//! weight times, in an order shuffled once with a seeded RNG. So the proportions are exact over each
//! period and the order is the same for the same seed.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::GenError;

/// Bytes of the Ethernet FCS, counted in frame sizes but not put on memif/veth links.
pub const FCS_LEN: usize = 4;
/// Smallest Ethernet frame size (with FCS), IEEE 802.3 §3.2.8.
pub const MIN_FRAME: u16 = 64;
/// Largest frame size the generator builds (jumbo frames).
pub const MAX_FRAME: u16 = 9000;
/// Longest period of a mix, in frames (bounds the memory of the shuffled order).
pub const MAX_MIX_PERIOD: u64 = 1_000_000;

/// Frame size of a stream, as configured.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizeSpec {
    /// Every frame has this size (with FCS).
    Fixed(u16),
    /// A mix of sizes with integer weights (e.g. IMIX 64:7, 570:4, 1518:1).
    Mix {
        name: String,
        parts: Vec<(u16, u32)>,
    },
}

impl SizeSpec {
    /// Classic simple IMIX: 64/570/1518 bytes at 7:4:1 (EANTC/Cisco VPP report, seed 000).
    pub fn imix() -> SizeSpec {
        SizeSpec::Mix {
            name: "imix".into(),
            parts: vec![(64, 7), (570, 4), (1518, 1)],
        }
    }

    /// TRex's IMIX profile: 64/594/1518 bytes at 28:16:4.
    pub fn imix_trex() -> SizeSpec {
        SizeSpec::Mix {
            name: "imix-trex".into(),
            parts: vec![(64, 28), (594, 16), (1518, 4)],
        }
    }

    /// Spirent TCPv4 IMIX: 72/74/576/1500 bytes at 58.67/2/23.66/15.67 % (Cisco/Intel white paper,
    /// seed 002). Percentages are scaled by 100 to integers, so the period is 10,000 frames.
    pub fn imix_spirent_tcpv4() -> SizeSpec {
        SizeSpec::Mix {
            name: "imix-spirent-tcpv4".into(),
            parts: vec![(72, 5867), (74, 200), (576, 2366), (1500, 1567)],
        }
    }

    /// Parses `64`, `imix`, `imix-trex`, `imix-spirent-tcpv4`, or a custom mix `64:7,570:4,1518:1`
    /// (`size:weight`, weights integers or decimals such as percentages `72:58.67,...`).
    pub fn parse(s: &str) -> Result<SizeSpec, GenError> {
        let s = s.trim();
        match s {
            "imix" => return Ok(SizeSpec::imix()),
            "imix-trex" => return Ok(SizeSpec::imix_trex()),
            "imix-spirent-tcpv4" => return Ok(SizeSpec::imix_spirent_tcpv4()),
            _ => {}
        }
        let bad = |why: &str| {
            GenError::Config {
            field: "size".into(),
            value: s.into(),
            accepted: format!(
                "{why}; accepted: a frame size {MIN_FRAME}..={MAX_FRAME} (with FCS), imix, imix-trex, \
                 imix-spirent-tcpv4, or size:weight,size:weight,..."
            ),
        }
        };
        if !s.contains(':') {
            let size: u16 = s.parse().map_err(|_| bad("not a number or mix name"))?;
            let spec = SizeSpec::Fixed(size);
            spec.validate()?;
            return Ok(spec);
        }
        // Custom mix: weights may be decimals; scale all by the same power of ten to integers.
        let mut raw = Vec::new();
        let mut decimals = 0usize;
        for part in s.split(',') {
            let (size, weight) = part
                .split_once(':')
                .ok_or_else(|| bad("each part must be size:weight"))?;
            let size: u16 = size
                .trim()
                .parse()
                .map_err(|_| bad("size is not a number"))?;
            let weight = weight.trim();
            if weight.is_empty() || !weight.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return Err(bad("weight is not a non-negative number"));
            }
            if let Some((_, frac)) = weight.split_once('.') {
                decimals = decimals.max(frac.len());
            }
            raw.push((size, weight.to_string()));
        }
        if decimals > 4 {
            return Err(bad("weights with more than 4 decimals"));
        }
        let mut parts = Vec::new();
        for (size, w) in raw {
            let (int, frac) = w.split_once('.').unwrap_or((&w, ""));
            let mut digits = format!("{int}{frac}");
            digits.extend(std::iter::repeat_n('0', decimals - frac.len()));
            let weight: u32 = digits.parse().map_err(|_| bad("weight too large"))?;
            parts.push((size, weight));
        }
        let spec = SizeSpec::Mix {
            name: s.to_string(),
            parts,
        };
        spec.validate()?;
        Ok(spec)
    }

    /// Checks sizes and weights; the error names what is accepted.
    pub fn validate(&self) -> Result<(), GenError> {
        let check_size = |sz: u16| {
            if !(MIN_FRAME..=MAX_FRAME).contains(&sz) {
                return Err(GenError::Config {
                    field: "size".into(),
                    value: sz.to_string(),
                    accepted: format!(
                        "{MIN_FRAME}..={MAX_FRAME} bytes (Ethernet frame size with FCS)"
                    ),
                });
            }
            Ok(())
        };
        match self {
            SizeSpec::Fixed(sz) => check_size(*sz),
            SizeSpec::Mix { name, parts } => {
                if parts.is_empty() {
                    return Err(GenError::Config {
                        field: "size".into(),
                        value: name.clone(),
                        accepted: "a mix with at least one size:weight".into(),
                    });
                }
                for &(sz, _) in parts {
                    check_size(sz)?;
                }
                let period: u64 = parts.iter().map(|&(_, w)| w as u64).sum();
                if period == 0 || period > MAX_MIX_PERIOD {
                    return Err(GenError::Config {
                        field: "size".into(),
                        value: name.clone(),
                        accepted: format!("mix weights summing to 1..={MAX_MIX_PERIOD} frames"),
                    });
                }
                Ok(())
            }
        }
    }

    /// The name users see (`64`, `imix`, ...).
    pub fn name(&self) -> String {
        match self {
            SizeSpec::Fixed(s) => s.to_string(),
            SizeSpec::Mix { name, .. } => name.clone(),
        }
    }

    /// The distinct sizes of this spec.
    pub fn sizes(&self) -> Vec<u16> {
        match self {
            SizeSpec::Fixed(s) => vec![*s],
            SizeSpec::Mix { parts, .. } => {
                let mut v: Vec<u16> = parts.iter().filter(|p| p.1 > 0).map(|p| p.0).collect();
                v.sort_unstable();
                v.dedup();
                v
            }
        }
    }

    /// Mean frame size (with FCS) over one period.
    pub fn mean_size(&self) -> f64 {
        match self {
            SizeSpec::Fixed(s) => *s as f64,
            SizeSpec::Mix { parts, .. } => {
                let total: f64 = parts.iter().map(|&(_, w)| w as f64).sum();
                parts.iter().map(|&(s, w)| s as f64 * w as f64).sum::<f64>() / total
            }
        }
    }
}

/// The resolved, deterministic order of frame sizes of one stream: `size_index(n)` of frame `n`.
///
/// Holds indices into [`SizeSequence::sizes`] so that the frame builder can keep one template per
/// size.
#[derive(Debug, Clone)]
pub struct SizeSequence {
    sizes: Vec<u16>,
    order: Vec<u16>,
}

impl SizeSequence {
    /// Resolves `spec` with `seed` (the shuffle of a mix). `raise_to` maps each configured size to the
    /// size actually built (sizes below a stream's minimum are raised to it; see `stream`).
    pub fn new(spec: &SizeSpec, seed: u64, raise_to: impl Fn(u16) -> u16) -> SizeSequence {
        match spec {
            SizeSpec::Fixed(s) => SizeSequence {
                sizes: vec![raise_to(*s)],
                order: vec![0],
            },
            SizeSpec::Mix { parts, .. } => {
                let mut sizes: Vec<u16> = Vec::new();
                let mut order: Vec<u16> = Vec::new();
                for &(s, w) in parts {
                    let s = raise_to(s);
                    let idx = match sizes.iter().position(|&x| x == s) {
                        Some(i) => i,
                        None => {
                            sizes.push(s);
                            sizes.len() - 1
                        }
                    };
                    order.extend(std::iter::repeat_n(idx as u16, w as usize));
                }
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                order.shuffle(&mut rng);
                SizeSequence { sizes, order }
            }
        }
    }

    /// The distinct sizes built (after raising), indexed by [`SizeSequence::index`].
    pub fn sizes(&self) -> &[u16] {
        &self.sizes
    }

    /// Frames in one period of the sequence.
    pub fn period(&self) -> usize {
        self.order.len()
    }

    /// Index into [`SizeSequence::sizes`] of frame `n`.
    #[inline]
    pub fn index(&self, n: u64) -> usize {
        self.order[(n % self.order.len() as u64) as usize] as usize
    }

    /// Size (with FCS) of frame `n`.
    #[inline]
    pub fn size(&self, n: u64) -> u16 {
        self.sizes[self.index(n)]
    }

    /// Mean size over one period (after raising).
    pub fn mean_size(&self) -> f64 {
        self.order
            .iter()
            .map(|&i| self.sizes[i as usize] as f64)
            .sum::<f64>()
            / self.order.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn counts(seq: &SizeSequence, n: u64) -> HashMap<u16, u64> {
        let mut m = HashMap::new();
        for i in 0..n {
            *m.entry(seq.size(i)).or_insert(0) += 1;
        }
        m
    }

    #[test]
    fn imix_proportions_are_exact_per_period() {
        let seq = SizeSequence::new(&SizeSpec::imix(), 7, |s| s);
        assert_eq!(seq.period(), 12);
        let c = counts(&seq, 12 * 1000);
        assert_eq!(c[&64], 7000);
        assert_eq!(c[&570], 4000);
        assert_eq!(c[&1518], 1000);
        // Each single period is exact too, not only the whole run.
        let c = counts(&seq, 12);
        assert_eq!((c[&64], c[&570], c[&1518]), (7, 4, 1));
    }

    #[test]
    fn imix_trex_proportions_are_exact() {
        let seq = SizeSequence::new(&SizeSpec::imix_trex(), 1, |s| s);
        assert_eq!(seq.period(), 48);
        let c = counts(&seq, 48 * 10);
        assert_eq!((c[&64], c[&594], c[&1518]), (280, 160, 40));
    }

    #[test]
    fn spirent_tcpv4_percentages_are_exact_over_10000() {
        let seq = SizeSequence::new(&SizeSpec::imix_spirent_tcpv4(), 3, |s| s);
        assert_eq!(seq.period(), 10_000);
        let c = counts(&seq, 10_000);
        assert_eq!((c[&72], c[&74], c[&576], c[&1500]), (5867, 200, 2366, 1567));
        let mean = (72.0 * 5867.0 + 74.0 * 200.0 + 576.0 * 2366.0 + 1500.0 * 1567.0) / 10_000.0;
        assert!((seq.mean_size() - mean).abs() < 1e-9);
    }

    #[test]
    fn shuffle_is_seeded() {
        let a = SizeSequence::new(&SizeSpec::imix(), 42, |s| s);
        let b = SizeSequence::new(&SizeSpec::imix(), 42, |s| s);
        let c = SizeSequence::new(&SizeSpec::imix(), 43, |s| s);
        let seq = |s: &SizeSequence| (0..12).map(|i| s.size(i)).collect::<Vec<_>>();
        assert_eq!(seq(&a), seq(&b));
        // Different seeds give a different order of the same multiset (12!/(7!4!1!) = 3960 orders).
        assert_ne!(seq(&a), seq(&c));
        let mut sa = seq(&a);
        let mut sc = seq(&c);
        sa.sort_unstable();
        sc.sort_unstable();
        assert_eq!(sa, sc);
    }

    #[test]
    fn parse_named_fixed_and_custom() {
        assert_eq!(SizeSpec::parse("64").unwrap(), SizeSpec::Fixed(64));
        assert_eq!(SizeSpec::parse("imix").unwrap(), SizeSpec::imix());
        assert_eq!(SizeSpec::parse("imix-trex").unwrap(), SizeSpec::imix_trex());
        let custom = SizeSpec::parse("64:3,1518:1").unwrap();
        assert_eq!(custom.sizes(), vec![64, 1518]);
        // Percentages with decimals scale to integers exactly.
        let pct = SizeSpec::parse("72:58.67,74:2,576:23.66,1500:15.67").unwrap();
        match pct {
            SizeSpec::Mix { parts, .. } => {
                assert_eq!(
                    parts,
                    vec![(72, 5867), (74, 200), (576, 2366), (1500, 1567)]
                )
            }
            _ => panic!("expected a mix"),
        }
    }

    #[test]
    fn parse_errors_name_value_and_accepted() {
        for bad in ["63", "9001", "abc", "64:x", "64:0", "", "64:1,70"] {
            let e = SizeSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains("size"), "{bad}: {e}");
            assert!(e.contains("accepted"), "{bad}: {e}");
        }
    }

    #[test]
    fn raised_sizes_merge() {
        let seq = SizeSequence::new(&SizeSpec::parse("64:1,72:1,128:2").unwrap(), 0, |s| {
            s.max(76)
        });
        assert_eq!(seq.sizes(), &[76, 128]);
        let c = counts(&seq, 4);
        assert_eq!((c[&76], c[&128]), (2, 2));
    }
}
