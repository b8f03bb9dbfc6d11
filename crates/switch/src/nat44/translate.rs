//! The byte work of NAT44: what a packet is ([`parse`]) and its rewrites ([`rewrite`],
//! [`rewrite_icmp_error`]), with incremental checksum updates (RFC 1624) — no checksum is
//! recomputed over the payload.
//!
//! Translated: TCP and UDP (ports), ICMP echo request/reply (the identifier plays the port,
//! RFC 5508 §3.1), and ICMP errors (destination unreachable, source quench, time exceeded,
//! parameter problem) whose embedded header is translated with the outer one (RFC 5508 §4.2,
//! RFC 4787 §9 "ICMP destination unreachable behaviour"). Not translated (named drop reasons):
//! fragments (no reassembly), other ICMP types, other protocols, L4 headers shorter than their
//! fixed part.

use std::net::Ipv4Addr;

use vecswitch_wire::checksum;

use super::session::apply;

/// IPv4 protocol numbers (IANA).
pub const ICMP: u8 = 1;
pub const TCP: u8 = 6;
pub const UDP: u8 = 17;

/// A packet NAT cannot translate, and why (the nodes' drop reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Untranslatable {
    /// A fragment (MF set or a fragment offset): the ports are not in every fragment.
    Fragment,
    /// Shorter than the TCP (20), UDP (8) or ICMP (8) header, or an ICMP error whose embedded
    /// header and first 8 bytes are not all there (RFC 792 promises them).
    BadL4Header,
    /// Not TCP, UDP or ICMP.
    UnsupportedProtocol,
    /// An ICMP type that is neither an echo nor an error.
    UnsupportedIcmp,
}

/// The endpoints of a TCP/UDP segment or an ICMP echo, and where its port fields and checksum
/// are (offsets from the start of the L4 header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    pub proto: u8,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    /// Source port; for an ICMP echo request the identifier, for an echo reply 0.
    pub sport: u16,
    /// Destination port; for an ICMP echo reply the identifier, for an echo request 0.
    pub dport: u16,
    /// Offset of the IPv4 header in the slice given to [`parse`].
    pub ip_off: usize,
    /// Offset of the L4 header in the slice given to [`parse`].
    pub l4_off: usize,
    /// TCP flags (0 for other protocols).
    pub tcp_flags: u8,
}

impl Flow {
    /// Whether this is an ICMP echo request (identifier in `sport`).
    #[inline]
    pub fn is_echo_request(&self) -> bool {
        self.proto == ICMP && self.dport == 0
    }

    /// Offset (from the L4 header) of the source port field, if it has one.
    fn sport_at(&self) -> Option<usize> {
        match self.proto {
            ICMP if self.is_echo_request() => Some(4),
            ICMP => None,
            _ => Some(0),
        }
    }

    /// Offset (from the L4 header) of the destination port field, if it has one.
    fn dport_at(&self) -> Option<usize> {
        match self.proto {
            ICMP if self.is_echo_request() => None,
            ICMP => Some(4),
            _ => Some(2),
        }
    }

    /// Offset (from the L4 header) of the checksum.
    fn csum_at(&self) -> usize {
        match self.proto {
            TCP => 16,
            UDP => 6,
            _ => 2,
        }
    }
}

/// What [`parse`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// A TCP segment, a UDP datagram or an ICMP echo.
    Flow(Flow),
    /// An ICMP error (its own header at `icmp_off`) about the embedded packet `inner`.
    IcmpError { icmp_off: usize, inner: Flow },
}

/// Reads the endpoints of the IPv4 packet at `ip[off..]` (header length and total length as
/// `ip4-input` checked them, or as [`parse`] checks an embedded one); `embedded`: the packet is
/// the copy inside an ICMP error (only its first 8 L4 bytes are required, its total length may
/// exceed what is there, and it may not itself be an error).
fn flow(ip: &[u8], off: usize, embedded: bool) -> Result<Parsed, Untranslatable> {
    let h = ip.get(off..off + 20).ok_or(Untranslatable::BadL4Header)?;
    if h[0] >> 4 != 4 {
        return Err(Untranslatable::BadL4Header);
    }
    let ihl = (h[0] as usize & 0x0f) * 4;
    if ihl < 20 {
        return Err(Untranslatable::BadL4Header);
    }
    let proto = h[9];
    let frag = u16::from_be_bytes([h[6], h[7]]);
    let src = Ipv4Addr::new(h[12], h[13], h[14], h[15]);
    let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
    // An embedded first fragment still carries its ports: only the offset matters there.
    if frag & 0x1fff != 0 || (!embedded && frag & 0x2000 != 0) {
        return Err(Untranslatable::Fragment);
    }
    let total = u16::from_be_bytes([h[2], h[3]]) as usize;
    let l4_off = off + ihl;
    let end = if embedded {
        ip.len()
    } else {
        (off + total).min(ip.len())
    };
    let l4 = ip.get(l4_off..end).unwrap_or(&[]);
    let need = match (proto, embedded) {
        (TCP, false) => 20,
        (TCP | UDP | ICMP, _) => 8,
        _ => return Err(Untranslatable::UnsupportedProtocol),
    };
    if l4.len() < need {
        return Err(Untranslatable::BadL4Header);
    }
    let be16 = |i: usize| u16::from_be_bytes([l4[i], l4[i + 1]]);
    let mut f = Flow {
        proto,
        src,
        dst,
        sport: 0,
        dport: 0,
        ip_off: off,
        l4_off,
        tcp_flags: 0,
    };
    match proto {
        TCP | UDP => {
            f.sport = be16(0);
            f.dport = be16(2);
            if proto == TCP {
                f.tcp_flags = l4.get(13).copied().unwrap_or(0);
            }
        }
        _ => match l4[0] {
            // Echo request (8) and reply (0), RFC 792.
            8 => f.sport = be16(4),
            0 => f.dport = be16(4),
            3 | 4 | 11 | 12 if !embedded => {
                let inner = match flow(ip, l4_off + 8, true)? {
                    Parsed::Flow(i) => i,
                    Parsed::IcmpError { .. } => return Err(Untranslatable::UnsupportedIcmp),
                };
                return Ok(Parsed::IcmpError {
                    icmp_off: l4_off,
                    inner,
                });
            }
            _ => return Err(Untranslatable::UnsupportedIcmp),
        },
    }
    Ok(Parsed::Flow(f))
}

/// What the IPv4 packet `ip` (from its header to the end of the first segment, header checked by
/// `ip4-input`) is for NAT.
pub fn parse(ip: &[u8]) -> Result<Parsed, Untranslatable> {
    flow(ip, 0, false)
}

/// Which endpoint a rewrite changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Src,
    Dst,
}

fn get16(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]))
}

fn put16(b: &mut [u8], i: usize, v: u16) {
    if let Some(w) = b.get_mut(i..i + 2) {
        w.copy_from_slice(&v.to_be_bytes());
    }
}

/// Rewrites endpoint `side` of flow `f` in `ip` to (`addr`, `port`) and updates the IPv4 header
/// checksum with delta `d_ip` and the L4 checksum with `d_l4` (RFC 1624; [`apply`]). A UDP
/// checksum of 0 (none, RFC 768) stays 0, and a computed 0 is sent as 0xffff. Fields beyond the
/// slice (the embedded copy in an ICMP error may be cut short) are left alone.
pub fn rewrite(
    ip: &mut [u8],
    f: &Flow,
    side: Side,
    addr: Ipv4Addr,
    port: u16,
    d_ip: u16,
    d_l4: u16,
) {
    let (a_at, p_at) = match side {
        Side::Src => (f.ip_off + 12, f.sport_at()),
        Side::Dst => (f.ip_off + 16, f.dport_at()),
    };
    if let Some(a) = ip.get_mut(a_at..a_at + 4) {
        a.copy_from_slice(&addr.octets());
    }
    let hc = f.ip_off + 10;
    if let Some(c) = get16(ip, hc) {
        put16(ip, hc, apply(c, d_ip));
    }
    if let Some(p) = p_at {
        put16(ip, f.l4_off + p, port);
    }
    let lc = f.l4_off + f.csum_at();
    if let Some(c) = get16(ip, lc) {
        if f.proto == UDP && c == 0 {
            return;
        }
        let n = apply(c, d_l4);
        put16(ip, lc, if f.proto == UDP && n == 0 { 0xffff } else { n });
    }
}

/// Rewrites an ICMP error: the outer endpoint `outer_side` to `addr` (outer IPv4 checksum with
/// `d_outer`), and the embedded packet's opposite endpoint (the embedded packet went the other
/// way) to (`addr`, `port`) with `d_ip`/`d_l4`; the ICMP checksum, which covers the embedded
/// bytes, follows with the same RFC 1624 update over the bytes that changed.
#[allow(clippy::too_many_arguments)]
pub fn rewrite_icmp_error(
    ip: &mut [u8],
    icmp_off: usize,
    inner: &Flow,
    outer_side: Side,
    addr: Ipv4Addr,
    port: u16,
    d_outer: u16,
    d_ip: u16,
    d_l4: u16,
) {
    let at = if outer_side == Side::Src { 12 } else { 16 };
    ip[at..at + 4].copy_from_slice(&addr.octets());
    put16(ip, 10, apply(get16(ip, 10).unwrap_or(0), d_outer));
    // The embedded bytes NAT may touch: its header and its first 18 L4 bytes (TCP's checksum
    // included), as far as they are there; an even length from an even offset.
    let start = inner.ip_off;
    let mut end = (inner.l4_off + 18).min(ip.len());
    end -= (end - start) % 2;
    let before = ip[start..end].to_vec();
    let inner_side = if outer_side == Side::Src {
        Side::Dst
    } else {
        Side::Src
    };
    rewrite(ip, inner, inner_side, addr, port, d_ip, d_l4);
    let c = icmp_off + 2;
    let old = get16(ip, c).unwrap_or(0);
    let new = checksum::update_bytes(old, &before, &ip[start..end]);
    put16(ip, c, new);
}
