//! ICMPv6 errors the switch sends about a packet it cannot deliver (RFC 4443 §3): time exceeded
//! (hop limit, §3.3), destination unreachable (no route, beyond the scope of the source address,
//! address unreachable, port unreachable; §3.1) and packet too big with the next-hop MTU (§3.2;
//! IPv6 routers never fragment). The error is a new packet; the offending one is dropped by its
//! node with its own reason.
//!
//! No error is sent (RFC 4443 §2.4(e)) about an ICMPv6 error message or a redirect, about a packet
//! to an IPv6 multicast address or sent as a link-layer multicast or broadcast (except a packet
//! too big, §2.4(e.3)), or about a packet whose source is not a unicast address (unspecified,
//! multicast, loopback); such requests are counted as `icmp-suppressed`. Errors share the token
//! bucket of IPv4's (RFC 4443 §2.4(f); [`super::IpState::icmp_token`]); those over the rate are
//! counted as `icmp-rate-limited`.
//!
//! The error carries as much of the offending packet as fits in the minimum IPv6 MTU of 1280
//! bytes (§2.4(c)), comes from the receive interface's address best suited to the offending
//! source ([`super::ip6::Ip6Interface::source_for`]), with hop limit 64, and goes to
//! `ip6-lookup` like any packet to route.

use std::net::Ipv6Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Next};
use vecswitch_wire::{IpProtocol, Ipv6Packet};

use super::icmp::Sent;
use crate::state::SwitchState;

/// The IPv6 minimum MTU (RFC 8200 §5): an ICMPv6 error is at most this long.
pub const MIN_MTU: usize = 1280;

/// Which error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmp6Error {
    /// Type 3 code 0: hop limit exceeded in transit.
    TimeExceeded,
    /// Type 1 code 0: no route to destination.
    NoRoute,
    /// Type 1 code 2: beyond the scope of the source address (a link-local source to forward).
    BeyondScope,
    /// Type 1 code 3: address unreachable (neighbour resolution failed).
    AddressUnreachable,
    /// Type 1 code 4: port unreachable.
    PortUnreachable,
    /// Type 2: packet too big, with the next-hop MTU.
    PacketTooBig { mtu: u32 },
}

impl Icmp6Error {
    /// Type, code and the 4 bytes after the checksum.
    pub fn fields(self) -> (u8, u8, u32) {
        match self {
            Icmp6Error::TimeExceeded => (3, 0, 0),
            Icmp6Error::NoRoute => (1, 0, 0),
            Icmp6Error::BeyondScope => (1, 2, 0),
            Icmp6Error::AddressUnreachable => (1, 3, 0),
            Icmp6Error::PortUnreachable => (1, 4, 0),
            Icmp6Error::PacketTooBig { mtu } => (2, 0, mtu),
        }
    }
}

/// Whether `a` may be the subject of an ICMPv6 error (the offending packet's source).
fn unicast(a: Ipv6Addr) -> bool {
    !(a.is_unspecified() || a.is_loopback() || a.is_multicast())
}

/// Builds the error about packet `h` (still owned by the caller) and emits it to `to` (the
/// caller's edge to `ip6-lookup`), as IPv4's errors go ([`super::icmp::emit_error`]).
pub fn send_error(cx: &mut Cx<'_, SwitchState>, h: u32, err: Icmp6Error, to: Next) -> Sent {
    let bytes = error_bytes(cx.pool, cx.state, h, err);
    super::icmp::emit_error(cx, h, bytes, 0x86dd, to)
}

/// The whole error frame (a blank Ethernet header that `ip6-rewrite` fills, IPv6, ICMPv6), or
/// `None` if RFC 4443 §2.4(e) forbids an error about this packet or the receive interface has no
/// IPv6 address.
pub fn error_bytes(pool: &Pool, st: &SwitchState, h: u32, err: Icmp6Error) -> Option<Vec<u8>> {
    let hdr = pool.header(h);
    let data = pool.data(h);
    let too_big = matches!(err, Icmp6Error::PacketTooBig { .. });
    if data.first().is_some_and(|b| b & 1 != 0) && !too_big {
        return None; // link-layer multicast or broadcast
    }
    let ip = data.get(hdr.l3_offset as usize..)?;
    let view = Ipv6Packet::new_checked(ip).ok()?;
    let (src, dst) = (view.src_addr(), view.dst_addr());
    if !unicast(src) || (dst.is_multicast() && !too_big) {
        return None;
    }
    // Not about an ICMPv6 error message or a redirect (RFC 4443 §2.4(e.1), §2.4(e.2)). A packet
    // whose extension headers do not parse is not examined further: the error is about it.
    if let Ok(up) = view.upper_layer() {
        if up.protocol == IpProtocol::ICMPV6 && up.fragment.is_none_or(|f| f.offset == 0) {
            let t = *ip.get(up.offset)?;
            if t < 128 || t == 137 {
                return None;
            }
        }
    }
    let me = st.ip.v6.iface(hdr.rx_port)?;
    let from = me.source_for(src)?;
    let total = (40 + view.payload_len() as usize).min(ip.len());
    let quoted = &ip[..total.min(MIN_MTU - 48)];
    let icmp_len = 8 + quoted.len();
    let mut f = vec![0u8; 14 + 40 + icmp_len];
    f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    let p = &mut f[14..];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&(icmp_len as u16).to_be_bytes());
    p[6] = 58;
    p[7] = 64;
    p[8..24].copy_from_slice(&from.octets());
    p[24..40].copy_from_slice(&src.octets());
    let (t, code, rest) = err.fields();
    let m = &mut p[40..];
    m[0] = t;
    m[1] = code;
    m[4..8].copy_from_slice(&rest.to_be_bytes());
    m[8..].copy_from_slice(quoted);
    fill_icmp6_checksum(p);
    Some(f)
}

/// Computes and writes the ICMPv6 checksum (RFC 4443 §2.3: over the RFC 8200 §8.1 pseudo-header
/// and the message) of the IPv6 packet `p` whose upper layer follows the fixed header.
pub fn fill_icmp6_checksum(p: &mut [u8]) {
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&p[8..24]).unwrap_or([0; 16]));
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&p[24..40]).unwrap_or([0; 16]));
    let mut m = vecswitch_wire::Icmpv6Packet::new_unchecked(&mut p[40..]);
    m.fill_checksum(&src, &dst);
}
