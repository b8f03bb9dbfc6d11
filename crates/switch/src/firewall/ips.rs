//! IPS mode (seed 004's "IPS and application control"): the payload of every packet the firewall
//! lets through on an interface (established, related or permitted by a rule) is searched for a
//! configured set of byte patterns with one Aho-Corasick automaton (the `aho-corasick` crate); a
//! packet holding any of them is dropped (`ips-match`) and the pattern's hit counter counts it.
//! Per packet, not per stream: a pattern split over two segments is not seen (no reassembly),
//! as in a stateless packet filter.
//!
//! ```toml
//! [[firewall]]
//! interface = "lan0"
//! default-action = "deny"
//! rules = [ { proto = "tcp", dport = "80", action = "permit-reflect" } ]
//! ips = { patterns = ["/etc/passwd", "cmd.exe", "hex:4d5a90"], case-insensitive = true }
//! ```
//!
//! A pattern is its UTF-8 bytes, or `hex:` and an even number of hex digits for any bytes. The
//! payload is what follows the L4 header (TCP: its data offset; UDP and ICMP: 8 bytes; other
//! protocols: the whole L4 part), up to the IP length.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use serde::{Deserialize, Serialize};

/// Most patterns of one interface, and the longest pattern, bytes.
pub const MAX_PATTERNS: usize = 10_000;
pub const MAX_PATTERN_LEN: usize = 1024;

/// `ips = { … }` of a `[[firewall]]` table.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct IpsConfig {
    /// The byte patterns (see the module doc).
    pub patterns: Vec<String>,
    /// Match ASCII letters regardless of case.
    #[serde(default)]
    pub case_insensitive: bool,
}

/// Why an IPS configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IpsError {
    #[error("ips.patterns is empty: accepted 1 to {MAX_PATTERNS} patterns")]
    NoPatterns,
    #[error("ips.patterns has {0} patterns: accepted 1 to {MAX_PATTERNS}")]
    TooMany(usize),
    #[error("ips.patterns[{index}] {value:?}: accepted a non-empty pattern of at most {MAX_PATTERN_LEN} bytes")]
    Length { index: usize, value: String },
    #[error("ips.patterns[{index}] {value:?}: accepted hex: and an even number of hex digits (hex:4d5a90)")]
    Hex { index: usize, value: String },
    #[error("ips.patterns: the matcher could not be built: {0}")]
    Build(String),
}

/// The bytes of pattern `s` (at `index`, for the message).
pub fn pattern_bytes(index: usize, s: &str) -> Result<Vec<u8>, IpsError> {
    let bytes = match s.strip_prefix("hex:") {
        Some(h) => {
            let bad = || IpsError::Hex {
                index,
                value: s.to_string(),
            };
            if h.len() % 2 != 0 {
                return Err(bad());
            }
            (0..h.len())
                .step_by(2)
                .map(|i| {
                    h.get(i..i + 2)
                        .and_then(|d| u8::from_str_radix(d, 16).ok())
                        .ok_or_else(bad)
                })
                .collect::<Result<Vec<u8>, _>>()?
        }
        None => s.as_bytes().to_vec(),
    };
    if bytes.is_empty() || bytes.len() > MAX_PATTERN_LEN {
        return Err(IpsError::Length {
            index,
            value: s.to_string(),
        });
    }
    Ok(bytes)
}

impl IpsConfig {
    /// Checks the patterns (what [`Ips::new`] would refuse, without building the matcher).
    pub fn validate(&self) -> Result<(), IpsError> {
        match self.patterns.len() {
            0 => return Err(IpsError::NoPatterns),
            n if n > MAX_PATTERNS => return Err(IpsError::TooMany(n)),
            _ => {}
        }
        self.patterns
            .iter()
            .enumerate()
            .try_for_each(|(i, p)| pattern_bytes(i, p).map(|_| ()))
    }
}

/// The compiled patterns of one interface with their hit counters.
#[derive(Debug, Clone)]
pub struct Ips {
    pub config: IpsConfig,
    matcher: AhoCorasick,
    /// Packets dropped for each pattern, by pattern index.
    pub hits: Vec<u64>,
    /// Packets searched.
    pub scanned: u64,
}

impl Ips {
    /// Compiles `config`.
    pub fn new(config: IpsConfig) -> Result<Ips, IpsError> {
        config.validate()?;
        let bytes: Vec<Vec<u8>> = config
            .patterns
            .iter()
            .enumerate()
            .map(|(i, p)| pattern_bytes(i, p))
            .collect::<Result<_, _>>()?;
        // A DFA: the fastest search, its memory is small for the hundreds of patterns an
        // interface holds (the crate falls back to its NFA beyond its size limit).
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .kind(Some(AhoCorasickKind::DFA))
            .ascii_case_insensitive(config.case_insensitive)
            .build(&bytes)
            .or_else(|_| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostFirst)
                    .ascii_case_insensitive(config.case_insensitive)
                    .build(&bytes)
            })
            .map_err(|e| IpsError::Build(e.to_string()))?;
        Ok(Ips {
            hits: vec![0; bytes.len()],
            config,
            matcher,
            scanned: 0,
        })
    }

    /// The first pattern (leftmost in `payload`, the earlier-listed one on a tie) found in
    /// `payload`.
    #[inline]
    pub fn find(&self, payload: &[u8]) -> Option<usize> {
        self.matcher.find(payload).map(|m| m.pattern().as_usize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(patterns: &[&str], ci: bool) -> Ips {
        Ips::new(IpsConfig {
            patterns: patterns.iter().map(|s| s.to_string()).collect(),
            case_insensitive: ci,
        })
        .unwrap()
    }

    #[test]
    fn patterns_are_found_anywhere_in_the_payload_bytes() {
        let i = ips(&["/etc/passwd", "hex:00ff00", "cmd.exe"], false);
        assert_eq!(i.find(b"GET /etc/passwd HTTP/1.1"), Some(0));
        assert_eq!(i.find(b"\x01\x00\xff\x00\x02"), Some(1));
        assert_eq!(i.find(b"run cmd.exe and /etc/passwd"), Some(2), "leftmost");
        assert_eq!(i.find(b"/etc/passw"), None, "a prefix is not a match");
        assert_eq!(i.find(b"CMD.EXE"), None, "case matters by default");
        assert_eq!(i.find(b""), None);
        let ci = ips(&["cmd.exe"], true);
        assert_eq!(ci.find(b"xx CMD.Exe"), Some(0));
    }

    #[test]
    fn bad_patterns_are_refused_with_their_index() {
        let bad = |p: &[&str]| {
            IpsConfig {
                patterns: p.iter().map(|s| s.to_string()).collect(),
                case_insensitive: false,
            }
            .validate()
            .unwrap_err()
        };
        assert_eq!(bad(&[]), IpsError::NoPatterns);
        assert_eq!(
            bad(&["ok", ""]),
            IpsError::Length {
                index: 1,
                value: String::new()
            }
        );
        assert!(matches!(bad(&["hex:abc"]), IpsError::Hex { index: 0, .. }));
        assert!(matches!(
            bad(&["a", "hex:zz"]),
            IpsError::Hex { index: 1, .. }
        ));
        assert!(matches!(bad(&["hex:"]), IpsError::Length { index: 0, .. }));
        let long = "x".repeat(MAX_PATTERN_LEN + 1);
        assert!(matches!(bad(&[&long]), IpsError::Length { index: 0, .. }));
        assert!(bad(&["hex:zz"]).to_string().contains("ips.patterns[0]"));
    }

    #[test]
    fn unknown_fields_are_refused() {
        let e = serde_json::from_value::<IpsConfig>(serde_json::json!({
            "patterns": ["a"], "case_insensitive": true
        }))
        .unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
        let ok: IpsConfig = serde_json::from_value(serde_json::json!({
            "patterns": ["a"], "case-insensitive": true
        }))
        .unwrap();
        assert!(ok.case_insensitive);
    }
}
