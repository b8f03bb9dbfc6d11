//! ICMP errors the switch sends about a packet it cannot deliver (RFC 792; RFC 1812 §4.3.2):
//! time exceeded in transit, destination unreachable (network, protocol, port) and fragmentation
//! needed with the next-hop MTU (RFC 1191 §4). The error is a new packet; the offending one is
//! dropped by its node with its own reason.
//!
//! No error is sent (RFC 1812 §4.3.2.7, RFC 1122 §3.2.2) about an ICMP error, a fragment other
//! than the first, a packet to a broadcast or multicast address (IP or link layer), or from an
//! address that is not a unicast host (0.0.0.0, 127/8, multicast, broadcast); such packets are
//! counted as `icmp-suppressed`. Errors are limited by the token bucket of [`super::IpState`]
//! (RFC 1812 §4.3.2.8); those over the rate are counted as `icmp-rate-limited`.
//!
//! The error carries the offending IP header and the first 8 bytes of its payload (RFC 792), comes
//! from the receive interface's address in the subnet of the offending source (or its first
//! address), with TTL 64, and goes to `ip4-lookup` like any packet to route.

use std::net::Ipv4Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Next};
use vecswitch_wire::checksum;

use crate::state::SwitchState;

/// Which error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpError {
    /// Type 11 code 0: TTL exceeded in transit.
    TimeExceeded,
    /// Type 3 code 0: network unreachable (no route).
    NetUnreachable,
    /// Type 3 code 2: protocol unreachable.
    ProtocolUnreachable,
    /// Type 3 code 3: port unreachable.
    PortUnreachable,
    /// Type 3 code 4: fragmentation needed and DF set, with the next-hop MTU (RFC 1191 §4).
    FragmentationNeeded { mtu: u16 },
}

impl IcmpError {
    /// Type, code and the 4 bytes after the checksum.
    pub fn fields(self) -> (u8, u8, u32) {
        match self {
            IcmpError::TimeExceeded => (11, 0, 0),
            IcmpError::NetUnreachable => (3, 0, 0),
            IcmpError::ProtocolUnreachable => (3, 2, 0),
            IcmpError::PortUnreachable => (3, 3, 0),
            IcmpError::FragmentationNeeded { mtu } => (3, 4, mtu as u32),
        }
    }
}

/// What became of a requested error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Made and emitted.
    Sent,
    /// Not allowed for this packet (RFC 1812 §4.3.2.7) or no source address.
    Suppressed,
    /// Over the rate.
    RateLimited,
    /// No buffer.
    NoBuffer,
}

/// Whether an unicast host address may be the subject of an ICMP error (source of the packet).
fn unicast_host(a: Ipv4Addr) -> bool {
    !(a.is_unspecified() || a.is_loopback() || a.is_multicast() || a.is_broadcast())
}

/// Builds the error about packet `h` (still owned by the caller) and emits it to `to` (the
/// caller's edge to `ip4-lookup`).
pub fn send_error(cx: &mut Cx<'_, SwitchState>, h: u32, err: IcmpError, to: Next) -> Sent {
    let bytes = error_bytes(cx.pool, cx.state, h, err);
    emit_error(cx, h, bytes, 0x0800, to)
}

/// Sends the error frame `bytes` (`None`: not allowed, [`Sent::Suppressed`]) about packet `h` of
/// EtherType `ethertype` to `to`, if the shared token bucket has a token and the pool a buffer:
/// received on `h`'s interface, made by the switch (no TTL decrement, no adjacency yet). Both
/// families' errors go out this way.
pub(crate) fn emit_error(
    cx: &mut Cx<'_, SwitchState>,
    h: u32,
    bytes: Option<Vec<u8>>,
    ethertype: u16,
    to: Next,
) -> Sent {
    let Some(bytes) = bytes else {
        return Sent::Suppressed;
    };
    if !cx.state.ip.icmp_token(cx.now_ns) {
        return Sent::RateLimited;
    }
    let Some(e) = cx.pool.alloc() else {
        return Sent::NoBuffer;
    };
    cx.pool.write_packet(e, &bytes);
    let rx = cx.pool.header(h).rx_port;
    let hdr = cx.pool.header_mut(e);
    hdr.l3_offset = 14;
    hdr.ethertype = ethertype;
    hdr.rx_port = rx;
    *cx.state.ip.meta_mut(e) = super::PktMeta {
        adj: super::ADJ_DROP,
        local: true,
    };
    cx.emit.push(e, to);
    Sent::Sent
}

/// The whole error frame (a blank Ethernet header that `ip4-rewrite` fills, IPv4, ICMP), or `None`
/// if RFC 1812 §4.3.2.7 forbids an error about this packet or the receive interface has no
/// address.
pub fn error_bytes(pool: &Pool, st: &SwitchState, h: u32, err: IcmpError) -> Option<Vec<u8>> {
    let hdr = pool.header(h);
    let data = pool.data(h);
    if data.first().is_some_and(|b| b & 1 != 0) {
        return None; // link-layer broadcast or multicast
    }
    let ip = data.get(hdr.l3_offset as usize..)?;
    let ihl = (*ip.first()? as usize & 0x0f) * 4;
    if ip.len() < ihl || ihl < 20 {
        return None;
    }
    let total = (u16::from_be_bytes([ip[2], ip[3]]) as usize).clamp(ihl, ip.len());
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let frag_offset = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
    if !unicast_host(src) || dst.is_multicast() || dst.is_broadcast() || frag_offset != 0 {
        return None;
    }
    if ip[9] == 1 {
        // About ICMP: only about queries (echo, timestamp, information, address mask).
        let t = *ip.get(ihl)?;
        if !matches!(t, 0 | 8 | 13 | 14 | 15 | 16 | 17 | 18) {
            return None;
        }
    }
    let me = st.ip.iface(hdr.rx_port)?;
    let from = me.addr_for(src).or(me.primary())?;
    let quoted = &ip[..(ihl + 8).min(total)];
    let icmp_len = 8 + quoted.len();
    let ip_len = 20 + icmp_len;
    let mut f = vec![0u8; 14 + ip_len];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let p = &mut f[14..];
    p[0] = 0x45;
    p[1] = 0xc0; // precedence internetwork control (RFC 1812 §4.3.2.5, as Linux sends)
    p[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 1;
    p[12..16].copy_from_slice(&from.octets());
    p[16..20].copy_from_slice(&src.octets());
    let c = checksum::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    let (t, code, rest) = err.fields();
    let m = &mut p[20..];
    m[0] = t;
    m[1] = code;
    m[4..8].copy_from_slice(&rest.to_be_bytes());
    m[8..].copy_from_slice(quoted);
    let c = checksum::checksum(m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    Some(f)
}
