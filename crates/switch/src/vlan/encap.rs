//! The two values a sub-interface is configured with, each written as VPP's CLI writes it and
//! parsed by one `FromStr` (the config file and the control command share it):
//!
//! - [`Encap`], what the sub-interface matches (VPP's `create sub-interfaces <if> <id> …`):
//!   `dot1q N`, `dot1ad N`, either followed by `inner-dot1q M` or `inner-dot1q any`, then
//!   optionally `exact-match`; or `default`; or `untagged`. VIDs 1–4094 (0 is a priority tag,
//!   4095 reserved: IEEE 802.1Q-2018 Table 9-2).
//! - [`TagRewrite`], what is done to the tags of frames received on it (VPP's `set interface l2
//!   tag-rewrite`): `disable`, `pop 1`, `pop 2`, `push dot1q|dot1ad N [M]`, `translate 1-1|2-1
//!   dot1q|dot1ad N`, `translate 1-2|2-2 dot1q|dot1ad N M`. The first pushed tag has the TPID named
//!   (0x8100 or 0x88a8), a second one is always a C-tag (0x8100), as in VPP's `l2_vtr.c`.
//!
//! [`Vtr`] is the byte-level form of a rewrite (tags to pop, tags to push) and [`Vtr::ingress`] /
//! [`Vtr::egress`] derive it from a sub-interface's encap and rewrite: the egress operation is the
//! exact inverse of the ingress one — pop what was pushed, push back the tags the encap matched
//! (VPP `l2vtr_configure`).

use std::fmt;
use std::str::FromStr;

use vecswitch_wire::{EtherType, L2Tag};

pub use crate::interface::subif::{push_tag, Vtr};
use crate::interface::subif::{InnerMatch, SubMatch};

/// Largest VID a sub-interface matches or pushes (4095 is reserved).
pub const VID_MAX: u16 = 4094;

/// The TPID of an outer tag: 802.1Q C-tag or 802.1ad S-tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tpid {
    /// `dot1q`: 0x8100.
    Dot1q,
    /// `dot1ad`: 0x88a8.
    Dot1ad,
}

impl Tpid {
    /// The TPID on the wire.
    pub const fn ethertype(self) -> EtherType {
        match self {
            Tpid::Dot1q => EtherType::VLAN,
            Tpid::Dot1ad => EtherType::QINQ,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Tpid::Dot1q => "dot1q",
            Tpid::Dot1ad => "dot1ad",
        }
    }
}

/// The inner tag a two-tag sub-interface matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Inner {
    /// No inner tag given: a single-tag sub-interface.
    None,
    /// `inner-dot1q any`.
    Any,
    /// `inner-dot1q M`.
    Vid(u16),
}

/// What a sub-interface matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encap {
    /// `dot1q|dot1ad N [inner-dot1q M|any] [exact-match]`.
    Tagged {
        tpid: Tpid,
        outer: u16,
        inner: Inner,
        /// `exact-match`: only frames with exactly the tags given (a `dot1q 10` sub-interface
        /// without it also takes double-tagged frames whose outer tag is 10).
        exact: bool,
    },
    /// `default`: tagged frames no other sub-interface takes.
    Default,
    /// `untagged`: frames without a tag (instead of the main interface).
    Untagged,
}

impl Encap {
    /// Tags with a configured value (VPP's `cfg_tags`): what a pop may remove and an egress push
    /// can put back. `inner-dot1q any` has one, `default` and `untagged` none.
    pub const fn exact_tags(&self) -> usize {
        match self {
            Encap::Tagged {
                inner: Inner::Vid(_),
                ..
            } => 2,
            Encap::Tagged { .. } => 1,
            Encap::Default | Encap::Untagged => 0,
        }
    }

    /// The tags this encap matches, outermost first, as far as they have values.
    pub fn tags(&self) -> ([L2Tag; 2], usize) {
        let none = push_tag(EtherType::VLAN, 0);
        match *self {
            Encap::Tagged {
                tpid, outer, inner, ..
            } => {
                let o = push_tag(tpid.ethertype(), outer);
                match inner {
                    Inner::Vid(i) => ([o, push_tag(EtherType::VLAN, i)], 2),
                    _ => ([o, none], 1),
                }
            }
            _ => ([none, none], 0),
        }
    }
}

impl Encap {
    /// What the interface layer's sub-interface table matches for this encap.
    pub const fn matching(&self) -> SubMatch {
        match *self {
            Encap::Tagged {
                tpid,
                outer,
                inner,
                exact,
            } => SubMatch::Tagged {
                dot1ad: matches!(tpid, Tpid::Dot1ad),
                outer,
                inner: match inner {
                    Inner::None => InnerMatch::None,
                    Inner::Any => InnerMatch::Any,
                    Inner::Vid(v) => InnerMatch::Vid(v),
                },
                exact,
            },
            Encap::Default => SubMatch::Default,
            Encap::Untagged => SubMatch::Untagged,
        }
    }
}

/// Accepted forms of an encap, for error messages.
pub const ENCAP_ACCEPTED: &str = "`dot1q N` or `dot1ad N` (N 1-4094), optionally followed by `inner-dot1q M` (M 1-4094) or `inner-dot1q any`, then optionally `exact-match`; or `default`; or `untagged`";

/// Accepted forms of a tag rewrite, for error messages.
pub const REWRITE_ACCEPTED: &str = "`disable`, `pop 1`, `pop 2`, `push dot1q|dot1ad N [M]`, `translate 1-1 dot1q|dot1ad N`, `translate 2-1 dot1q|dot1ad N`, `translate 1-2 dot1q|dot1ad N M`, `translate 2-2 dot1q|dot1ad N M` (VIDs 1-4094)";

/// A value that did not parse: the text and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub field: &'static str,
    pub value: String,
    pub accepted: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} {:?}: accepted {}",
            self.field, self.value, self.accepted
        )
    }
}

impl std::error::Error for ParseError {}

fn vid(s: Option<&str>) -> Option<u16> {
    s?.parse::<u16>().ok().filter(|v| (1..=VID_MAX).contains(v))
}

fn tpid(s: Option<&str>) -> Option<Tpid> {
    match s? {
        "dot1q" => Some(Tpid::Dot1q),
        "dot1ad" => Some(Tpid::Dot1ad),
        _ => None,
    }
}

impl FromStr for Encap {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Encap, ParseError> {
        let err = || ParseError {
            field: "encap",
            value: s.to_string(),
            accepted: ENCAP_ACCEPTED,
        };
        let w: Vec<&str> = s.split_whitespace().collect();
        match w.as_slice() {
            ["default"] => return Ok(Encap::Default),
            ["untagged"] => return Ok(Encap::Untagged),
            _ => {}
        }
        let mut it = w.iter().copied();
        let tpid = tpid(it.next()).ok_or_else(err)?;
        let outer = vid(it.next()).ok_or_else(err)?;
        let mut inner = Inner::None;
        let mut exact = false;
        let mut next = it.next();
        if next == Some("inner-dot1q") {
            inner = match it.next() {
                Some("any") => Inner::Any,
                v => Inner::Vid(vid(v).ok_or_else(err)?),
            };
            next = it.next();
        }
        if next == Some("exact-match") {
            exact = true;
            next = it.next();
        }
        if next.is_some() {
            return Err(err());
        }
        Ok(Encap::Tagged {
            tpid,
            outer,
            inner,
            exact,
        })
    }
}

impl fmt::Display for Encap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Encap::Default => f.write_str("default"),
            Encap::Untagged => f.write_str("untagged"),
            Encap::Tagged {
                tpid,
                outer,
                inner,
                exact,
            } => {
                write!(f, "{} {outer}", tpid.word())?;
                match inner {
                    Inner::None => {}
                    Inner::Any => f.write_str(" inner-dot1q any")?,
                    Inner::Vid(v) => write!(f, " inner-dot1q {v}")?,
                }
                if exact {
                    f.write_str(" exact-match")?;
                }
                Ok(())
            }
        }
    }
}

/// The tag rewrite of a sub-interface (VPP `l2_vtr_op_t`), applied to frames it receives; its
/// inverse is applied to frames it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TagRewrite {
    /// `disable`: tags left as they are.
    #[default]
    Disabled,
    /// `pop N` (1 or 2).
    Pop(u8),
    /// `push TPID N [M]`: one or two tags pushed.
    Push { tpid: Tpid, tags: [u16; 2], n: u8 },
    /// `translate P-N TPID …`: `pop` tags replaced by `n` tags.
    Translate {
        pop: u8,
        tpid: Tpid,
        tags: [u16; 2],
        n: u8,
    },
}

impl TagRewrite {
    /// Tags removed from a received frame.
    pub const fn pops(&self) -> usize {
        match *self {
            TagRewrite::Pop(p) | TagRewrite::Translate { pop: p, .. } => p as usize,
            _ => 0,
        }
    }

    /// Tags put on a received frame (after the pops), outermost first.
    pub fn pushes(&self) -> ([L2Tag; 2], usize) {
        match *self {
            TagRewrite::Push { tpid, tags, n } | TagRewrite::Translate { tpid, tags, n, .. } => (
                [
                    push_tag(tpid.ethertype(), tags[0]),
                    push_tag(EtherType::VLAN, tags[1]),
                ],
                n as usize,
            ),
            _ => ([push_tag(EtherType::VLAN, 0); 2], 0),
        }
    }
}

impl FromStr for TagRewrite {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<TagRewrite, ParseError> {
        let err = || ParseError {
            field: "tag-rewrite",
            value: s.to_string(),
            accepted: REWRITE_ACCEPTED,
        };
        let w: Vec<&str> = s.split_whitespace().collect();
        let tags = |n: usize, rest: &[&str]| -> Result<(Tpid, [u16; 2]), ParseError> {
            if rest.len() != n + 1 {
                return Err(err());
            }
            let t = tpid(rest.first().copied()).ok_or_else(err)?;
            let a = vid(rest.get(1).copied()).ok_or_else(err)?;
            let b = if n == 2 {
                vid(rest.get(2).copied()).ok_or_else(err)?
            } else {
                0
            };
            Ok((t, [a, b]))
        };
        match w.as_slice() {
            ["disable"] | ["disabled"] => Ok(TagRewrite::Disabled),
            ["pop", "1"] => Ok(TagRewrite::Pop(1)),
            ["pop", "2"] => Ok(TagRewrite::Pop(2)),
            ["push", rest @ ..] => {
                let n = rest.len().saturating_sub(1);
                if !(1..=2).contains(&n) {
                    return Err(err());
                }
                let (tpid, tags) = tags(n, rest)?;
                Ok(TagRewrite::Push {
                    tpid,
                    tags,
                    n: n as u8,
                })
            }
            ["translate", op, rest @ ..] => {
                let (pop, n) = match *op {
                    "1-1" => (1, 1),
                    "1-2" => (1, 2),
                    "2-1" => (2, 1),
                    "2-2" => (2, 2),
                    _ => return Err(err()),
                };
                let (tpid, tags) = tags(n as usize, rest)?;
                Ok(TagRewrite::Translate { pop, tpid, tags, n })
            }
            _ => Err(err()),
        }
    }
}

impl fmt::Display for TagRewrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tags = |f: &mut fmt::Formatter<'_>, tpid: Tpid, tags: [u16; 2], n: u8| {
            write!(f, "{} {}", tpid.word(), tags[0])?;
            if n == 2 {
                write!(f, " {}", tags[1])?;
            }
            Ok(())
        };
        match *self {
            TagRewrite::Disabled => f.write_str("disable"),
            TagRewrite::Pop(p) => write!(f, "pop {p}"),
            TagRewrite::Push { tpid, tags: t, n } => {
                f.write_str("push ")?;
                tags(f, tpid, t, n)
            }
            TagRewrite::Translate {
                pop,
                tpid,
                tags: t,
                n,
            } => {
                write!(f, "translate {pop}-{n} ")?;
                tags(f, tpid, t, n)
            }
        }
    }
}

impl Vtr {
    /// The operation on frames received on a sub-interface with `rewrite`.
    pub fn ingress(rewrite: &TagRewrite) -> Vtr {
        let (push, n) = rewrite.pushes();
        Vtr::new(rewrite.pops() as u8, push, n as u8)
    }

    /// The exact inverse, on frames sent on a sub-interface with `encap` and `rewrite`: pop what
    /// the ingress pushed, push back the tags the ingress popped — the encap's own values (VPP
    /// `l2vtr_configure`: "the push/pop values are always reversed").
    pub fn egress(encap: &Encap, rewrite: &TagRewrite) -> Vtr {
        let (tags, _) = encap.tags();
        Vtr::new(rewrite.pushes().1 as u8, tags, rewrite.pops() as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encaps_parse_and_print_as_vpp_writes_them() {
        for s in [
            "dot1q 10",
            "dot1ad 100",
            "dot1q 10 exact-match",
            "dot1ad 100 inner-dot1q 20",
            "dot1ad 100 inner-dot1q any",
            "dot1q 4094 inner-dot1q 1 exact-match",
            "default",
            "untagged",
        ] {
            let e: Encap = s.parse().unwrap();
            assert_eq!(e.to_string(), s);
        }
        for bad in [
            "",
            "dot1q",
            "dot1q 0",
            "dot1q 4095",
            "dot1x 5",
            "dot1q 10 inner-dot1q",
            "dot1q 10 inner-dot1q 0",
            "dot1q 10 exact-match extra",
            "default 5",
        ] {
            let e = bad.parse::<Encap>().unwrap_err();
            assert_eq!(e.field, "encap");
            assert!(e.to_string().contains("accepted `dot1q N`"), "{e}");
        }
    }

    #[test]
    fn rewrites_parse_and_print() {
        for s in [
            "disable",
            "pop 1",
            "pop 2",
            "push dot1q 10",
            "push dot1ad 100 20",
            "translate 1-1 dot1ad 11",
            "translate 1-2 dot1ad 300 10",
            "translate 2-1 dot1q 42",
            "translate 2-2 dot1ad 300 400",
        ] {
            let r: TagRewrite = s.parse().unwrap();
            assert_eq!(r.to_string(), s);
        }
        for bad in [
            "pop 3",
            "push",
            "push dot1q",
            "push dot1q 1 2 3",
            "translate 2-2 dot1q 5",
            "translate 3-1 dot1q 5",
            "translate 1-1 dot1q 0",
            "swap",
        ] {
            assert_eq!(bad.parse::<TagRewrite>().unwrap_err().field, "tag-rewrite");
        }
    }

    #[test]
    fn egress_is_the_inverse_of_ingress() {
        let e: Encap = "dot1ad 100 inner-dot1q 20".parse().unwrap();
        let r: TagRewrite = "translate 2-1 dot1q 7".parse().unwrap();
        let i = Vtr::ingress(&r);
        assert_eq!((i.pop, i.n, i.push[0].vid), (2, 1, 7));
        let o = Vtr::egress(&e, &r);
        assert_eq!((o.pop, o.n), (1, 2));
        assert_eq!(o.push[0], push_tag(EtherType::QINQ, 100));
        assert_eq!(o.push[1], push_tag(EtherType::VLAN, 20));
        assert!(Vtr::egress(&e, &TagRewrite::Disabled).is_none());
    }
}
