//! The suite keys whose values are names from a fixed list ([`SearchMax`], [`FlowMode`],
//! [`ScaleKind`]) and the trial policy ([`Policy`]): typed when the file is read, so a misspelt
//! value is an error at load naming the key, the value and the accepted names, and the code
//! after it matches variants, not strings.

use std::fmt;
use std::str::FromStr;

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

use crate::procedures::throughput::TrialPolicy;
use crate::LabError;

/// Declares a key's enum of names: its variants, the name of each, the key it is read from (for
/// errors), and string serde / [`FromStr`] / [`fmt::Display`] from that one list.
macro_rules! named_enum {
    (
        $(#[$doc:meta])*
        pub enum $ty:ident at $key:literal {
            $($(#[$vdoc:meta])* $variant:ident = $name:literal,)*
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $ty {
            $($(#[$vdoc])* $variant,)*
        }

        impl $ty {
            /// Every accepted name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($name),*];
            /// The suite key this is read from, as errors name it.
            pub const KEY: &'static str = $key;
            const EXPECTED: &'static str = concat!("one of:" $(, " ", $name)*);

            /// The name as a suite spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)*
                }
            }
        }

        impl FromStr for $ty {
            type Err = LabError;
            fn from_str(s: &str) -> Result<Self, LabError> {
                match s {
                    $($name => Ok($ty::$variant),)*
                    _ => Err(LabError::invalid($key, format!("{s:?}"), $ty::EXPECTED)),
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(de::Error::custom)
            }
        }
    };
}

named_enum! {
    /// A search's highest load (`search_max` of `throughput` and `mlrsearch`).
    #[derive(Default)]
    pub enum SearchMax at "test.search_max" {
        /// Line rate (RFC 2544; the default).
        #[default]
        LineRate = "line-rate",
        /// The generator's calibrated limit when the bench run measured one, else line rate.
        GeneratorLimit = "generator-limit",
    }
}

impl SearchMax {
    /// The highest load searched: `line_fps`, or the generator's limit (at most line rate) when
    /// this is [`SearchMax::GeneratorLimit`] and a positive limit is known.
    pub fn top(self, line_fps: f64, generator_limit_fps: Option<f64>) -> f64 {
        match (self, generator_limit_fps) {
            (SearchMax::GeneratorLimit, Some(g)) if g > 0.0 && g.is_finite() => g.min(line_fps),
            _ => line_fps,
        }
    }
}

named_enum! {
    /// How a throughput test's frames use the flows (`flow_mode`).
    #[derive(Default)]
    pub enum FlowMode at "test.flow_mode" {
        /// Frame n is flow n mod flows (the default).
        #[default]
        Cycle = "cycle",
        /// No frame repeats a 5-tuple: every frame a new session (the new-session rate).
        Unique = "unique",
    }
}

named_enum! {
    /// What a scale sweep's points count (`scale.kind`; see [`super::ScaleSpec`]).
    pub enum ScaleKind at "test.scale.kind" {
        /// Static MAC entries on the egress port.
        MacEntries = "mac-entries",
        /// IPv4 /32 routes toward the egress side.
        Routes = "routes",
        /// Rules the traffic does not match.
        Flows = "flows",
        /// NAT44 sessions (distinct UDP flows from the inside).
        Sessions = "sessions",
        /// Firewall rules, the permit last.
        Rules = "rules",
    }
}

impl ScaleKind {
    /// Whether a point must be at least 1 (a route, a session, the permit rule).
    pub fn needs_one(self) -> bool {
        matches!(
            self,
            ScaleKind::Routes | ScaleKind::Sessions | ScaleKind::Rules
        )
    }

    /// Whether the traffic is spread over the table (one destination per entry).
    pub fn spreads_traffic(self) -> bool {
        matches!(
            self,
            ScaleKind::MacEntries | ScaleKind::Routes | ScaleKind::Sessions
        )
    }
}

/// A throughput test's trial policy as a suite spells it (`single`, `best-of-N`, `worst-of-N`),
/// read into a [`TrialPolicy`] at load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy(pub TrialPolicy);

impl Default for Policy {
    fn default() -> Policy {
        Policy(TrialPolicy::Single)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            TrialPolicy::Single => f.write_str("single"),
            TrialPolicy::BestOf(n) => write!(f, "best-of-{n}"),
            TrialPolicy::WorstOf(n) => write!(f, "worst-of-{n}"),
        }
    }
}

impl FromStr for Policy {
    type Err = LabError;
    fn from_str(s: &str) -> Result<Policy, LabError> {
        parse_policy(s).map(Policy)
    }
}

impl Serialize for Policy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

/// Parses `best-of-5`, `worst-of-3`, `single`.
pub fn parse_policy(s: &str) -> Result<TrialPolicy, LabError> {
    const EXPECTED: &str = "single, best-of-N or worst-of-N with N >= 1";
    let n = |rest: &str| {
        rest.parse::<u32>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| LabError::invalid("test.policy", s, EXPECTED))
    };
    if s == "single" {
        Ok(TrialPolicy::Single)
    } else if let Some(rest) = s.strip_prefix("best-of-") {
        Ok(TrialPolicy::BestOf(n(rest)?))
    } else if let Some(rest) = s.strip_prefix("worst-of-") {
        Ok(TrialPolicy::WorstOf(n(rest)?))
    } else {
        Err(LabError::invalid("test.policy", s, EXPECTED))
    }
}
