//! `firewall-input6`: the firewall on the IPv6 packets an interface receives to route (an
//! `ip6-unicast` arc feature, enabled on every interface with an ACL) — the IPv6 twin of
//! `firewall-input`, with the same ACL, the same conntrack table and the same decision
//! ([`super::firewall_input::decide`]); only the parse differs.
//!
//! The parse follows what nftables matches on (`meta l4proto`, `th sport/dport`, `icmpv6 type`):
//! the upper-layer header after the extension headers (hop-by-hop 0, routing 43, destination
//! options 60, fragment 44; RFC 8200 §4). Tracked as Linux's conntrack does: TCP segments that
//! may open a connection (SYN without ACK, or a plain ACK), UDP datagrams, ICMPv6 echo requests
//! (128; the identifier plays the port, the reply is 129). ICMPv6 errors (destination
//! unreachable 1, packet too big 2, time exceeded 3, parameter problem 4; RFC 4443 §3) are
//! related when their embedded header belongs to a reflected connection and they go back to the
//! embedded packet's source (`nf_conntrack_inet_error`).
//!
//! Next: the `ip6-unicast` arc. Drops: `rule-deny`, `default-deny`, `fragment` (a non-first
//! fragment: no ports to match), `bad-l4-header` (shorter than the TCP, UDP or ICMPv6 header, or
//! an extension header chain running past the packet or longer than 8 headers),
//! `conntrack-full`, `ips-match`. Counters: `established`, `related`, `permitted`,
//! `connections-tracked`, `ips-scanned`. Trace: `src S dst D hlim H plen L nh N`.

use std::net::Ipv6Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Next, Node, NodeInfo};

use super::acl::{PacketKey, ICMPV6, TCP, UDP};
use super::conntrack::Tuple;
use super::firewall_input::{be16, payload_at, tcp_may_open, Counter, DropReason, Parsed};
use crate::ip::IP6_UNICAST_ARC;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "firewall-input6";

const ON: Next = Next::arc(IP6_UNICAST_ARC);

/// Most extension headers walked before the upper-layer header.
const MAX_EXTENSION_HEADERS: usize = 8;

fn addr_at(b: &[u8], at: usize) -> Ipv6Addr {
    let mut o = [0u8; 16];
    o.copy_from_slice(&b[at..at + 16]);
    Ipv6Addr::from(o)
}

/// The upper-layer protocol of the IPv6 packet `ip[..end]` and its offset, past the extension
/// headers (RFC 8200 §4); `Err(Fragment)` for a non-first fragment.
fn upper(ip: &[u8], end: usize) -> Result<(u8, usize), DropReason> {
    let mut nh = ip[6];
    let mut off = 40;
    for _ in 0..MAX_EXTENSION_HEADERS {
        match nh {
            // Hop-by-hop, routing, destination options: length in 8-octet units, not counting
            // the first 8 (RFC 8200 §4.3, §4.4, §4.6).
            0 | 43 | 60 => {
                let h = ip.get(off..(off + 2).min(end)).filter(|h| h.len() == 2);
                let h = h.ok_or(DropReason::BadL4Header)?;
                nh = h[0];
                off += (h[1] as usize + 1) * 8;
            }
            // Fragment (RFC 8200 §4.5): 8 octets, the offset in the top 13 bits of bytes 2-3.
            44 => {
                if off + 8 > end {
                    return Err(DropReason::BadL4Header);
                }
                if be16(ip, off + 2) >> 3 != 0 {
                    return Err(DropReason::Fragment);
                }
                nh = ip[off];
                off += 8;
            }
            _ => return Ok((nh, off)),
        }
        if off > end {
            return Err(DropReason::BadL4Header);
        }
    }
    Err(DropReason::BadL4Header)
}

/// The tuple of an IPv6 packet `ip` (header at the start, `ip[..end]` its bytes) as conntrack
/// keys it, and whether it may open a connection; `embedded`: the copy in an ICMPv6 error (only
/// the first 8 L4 bytes are required).
fn tuple(ip: &[u8], end: usize, embedded: bool) -> Option<(Tuple, bool)> {
    if end < 40 || ip.len() < end {
        return None;
    }
    let (src, dst) = (addr_at(ip, 8), addr_at(ip, 24));
    let (proto, at) = upper(ip, end).ok()?;
    let l4 = ip.get(at..end)?;
    if l4.len() < 8 {
        return None;
    }
    match proto {
        TCP | UDP => {
            let may_open = proto == UDP || (!embedded && l4.len() > 13 && tcp_may_open(l4[13]));
            Some((
                Tuple::v6(proto, src, be16(l4, 0), dst, be16(l4, 2)),
                may_open,
            ))
        }
        ICMPV6 => match l4[0] {
            128 => Some((Tuple::v6(ICMPV6, src, be16(l4, 4), dst, 0), true)),
            129 => Some((Tuple::v6(ICMPV6, src, 0, dst, be16(l4, 4)), false)),
            _ => None,
        },
        _ => None,
    }
}

/// Parses the IPv6 packet `ip` (its header checked by `ip6-input`) for the firewall.
pub fn parse6(ip: &[u8]) -> Result<Parsed, DropReason> {
    let h = ip.get(..40).ok_or(DropReason::BadL4Header)?;
    let end = (40 + be16(h, 4) as usize).min(ip.len());
    let (proto, at) = upper(ip, end)?;
    let l4 = ip.get(at..end).unwrap_or(&[]);
    let need = match proto {
        TCP => 20,
        UDP | ICMPV6 => 8,
        _ => 0,
    };
    if l4.len() < need {
        return Err(DropReason::BadL4Header);
    }
    let mut key = PacketKey::new6(addr_at(h, 8), addr_at(h, 24), proto);
    let mut related_to = None;
    match proto {
        TCP | UDP => {
            key.has_ports = true;
            key.sport = be16(l4, 0);
            key.dport = be16(l4, 2);
        }
        ICMPV6 => {
            key.icmp_type = l4[0];
            if matches!(l4[0], 1..=4) {
                // Only an error sent back to the embedded packet's source is about it.
                let inner = &l4[8..];
                related_to = tuple(inner, inner.len(), true)
                    .map(|t| t.0)
                    .filter(|t| t.src == key.dst);
            }
        }
        _ => {}
    }
    let (tuple, may_open) = match tuple(ip, end, false) {
        Some((t, o)) => (Some(t), o),
        None => (None, false),
    };
    Ok(Parsed {
        key,
        tuple,
        may_open,
        related_to,
        payload: (at + payload_at(proto, l4), at + l4.len()),
    })
}

/// The `firewall-input6` node.
#[derive(Debug, Default)]
pub struct FirewallInput6;

impl Node<SwitchState> for FirewallInput6 {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            // None: it sends along the `ip6-unicast` arc.
            next_nodes: &[],
            drop_reasons: DropReason::NAMES,
            counters: Counter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            let off = cx.pool.header(h).l3_offset as usize;
            let ip = cx.pool.data(h).get(off..).unwrap_or(&[]);
            *n = match parse6(ip) {
                Ok(p) if is_neighbor_discovery(&p) => ON,
                Ok(p) => super::firewall_input::decide(cx, h, off, &p, ON),
                Err(r) => r.next(),
            };
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        crate::ip::ip6_input::trace_ip6(pool, pkt)
    }
}

/// ICMPv6 Neighbor Discovery (router solicitation 133, advertisement 134, neighbour solicitation
/// 135, advertisement 136, redirect 137) always passes, whatever the rules say: without it an
/// interface cannot resolve its neighbours (RFC 4890 §4.4.1, traffic that must not be dropped).
/// A solicitation or advertisement sent to the switch's own unicast address is routed to
/// `ip6-local` through the `ip6-unicast` arc, so it meets this node; nftables' forward chain, the
/// firewall's reference, never sees it. (Seen: an outside interface with default deny dropped the
/// advertisements that answered the switch's solicitations, so no IPv6 packet crossed a firewall
/// VNF; `crates/testbed/tests/chain_edge.rs`.)
fn is_neighbor_discovery(p: &Parsed) -> bool {
    p.key.proto == ICMPV6 && (133..=137).contains(&p.key.icmp_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip6(nh: u8, src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0x60, 0, 0, 0];
        h.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        h.extend_from_slice(&[nh, 64]);
        h.extend_from_slice(&src.parse::<Ipv6Addr>().unwrap().octets());
        h.extend_from_slice(&dst.parse::<Ipv6Addr>().unwrap().octets());
        h.extend_from_slice(payload);
        h
    }

    fn tcp(sport: u16, dport: u16, flags: u8) -> Vec<u8> {
        let mut t = sport.to_be_bytes().to_vec();
        t.extend_from_slice(&dport.to_be_bytes());
        t.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        t
    }

    const A: &str = "2001:db8:1::2";
    const R: &str = "2001:db8:ff::9";

    /// Neighbour solicitations and advertisements are recognised as Neighbor Discovery (and so
    /// pass the rules); an echo request is not.
    #[test]
    fn neighbor_discovery_is_recognised() {
        for t in [133u8, 134, 135, 136, 137] {
            let mut icmp = vec![t, 0, 0, 0, 0, 0, 0, 0];
            icmp.extend_from_slice(&[0; 16]);
            let p = parse6(&ip6(58, A, R, &icmp)).unwrap();
            assert!(is_neighbor_discovery(&p), "type {t}");
        }
        let echo = parse6(&ip6(58, A, R, &[128, 0, 0, 0, 0, 1, 0, 1])).unwrap();
        assert!(!is_neighbor_discovery(&echo));
        let tcp = parse6(&ip6(6, A, R, &tcp(40000, 135, 0x02))).unwrap();
        assert!(!is_neighbor_discovery(&tcp));
    }

    #[test]
    fn tcp_udp_and_echo_give_keys_and_tuples() {
        let p = parse6(&ip6(6, A, R, &tcp(40000, 443, 0x02))).unwrap();
        assert!(p.key.v6 && p.key.has_ports);
        assert_eq!((p.key.proto, p.key.sport, p.key.dport), (6, 40000, 443));
        let t = p.tuple.unwrap();
        assert_eq!(
            t,
            Tuple::v6(6, A.parse().unwrap(), 40000, R.parse().unwrap(), 443)
        );
        assert!(p.may_open);
        // A SYN-ACK may not open one (tcp_new calls it invalid).
        assert!(
            !parse6(&ip6(6, R, A, &tcp(443, 40000, 0x12)))
                .unwrap()
                .may_open
        );
        let echo = parse6(&ip6(58, A, R, &[128, 0, 0, 0, 0x12, 0x34, 0, 1])).unwrap();
        assert_eq!(echo.key.icmp_type, 128);
        assert_eq!(echo.tuple.unwrap().sport, 0x1234);
        assert!(echo.may_open);
        let reply = parse6(&ip6(58, R, A, &[129, 0, 0, 0, 0x12, 0x34, 0, 1])).unwrap();
        assert_eq!(reply.tuple.unwrap().reversed(), echo.tuple.unwrap());
        assert!(!reply.may_open);
    }

    #[test]
    fn extension_headers_are_skipped_and_later_fragments_dropped() {
        // Hop-by-hop (8 bytes: next header 60) then destination options (16 bytes: next 17).
        let mut ext = vec![60, 0, 1, 4, 0, 0, 0, 0, 17, 1];
        ext.extend_from_slice(&[1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        ext.extend_from_slice(&[0x13, 0x88, 0, 53, 0, 8, 0, 0]);
        let p = parse6(&ip6(0, A, R, &ext)).unwrap();
        assert_eq!((p.key.proto, p.key.sport, p.key.dport), (17, 5000, 53));
        // A first fragment carries its ports; a later one does not.
        let mut first = vec![17, 0, 0, 1, 0, 0, 0, 7];
        first.extend_from_slice(&[0x13, 0x88, 0, 53, 0, 8, 0, 0]);
        assert_eq!(parse6(&ip6(44, A, R, &first)).unwrap().key.dport, 53);
        let later = [17, 0, 0, 0x10, 0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(parse6(&ip6(44, A, R, &later)), Err(DropReason::Fragment));
        // A chain running past the packet, and a short TCP header.
        assert_eq!(
            parse6(&ip6(0, A, R, &[60, 5, 0, 0, 0, 0, 0, 0])),
            Err(DropReason::BadL4Header)
        );
        assert_eq!(
            parse6(&ip6(6, A, R, &tcp(1, 2, 0x02)[..12])),
            Err(DropReason::BadL4Header)
        );
    }

    #[test]
    fn an_error_back_to_the_source_is_related() {
        let inner = ip6(17, A, R, &[0x13, 0x88, 0, 53, 0, 8, 0, 0]);
        let mut icmp = vec![1, 4, 0, 0, 0, 0, 0, 0];
        icmp.extend_from_slice(&inner);
        let back = parse6(&ip6(58, R, A, &icmp)).unwrap();
        assert_eq!(
            back.related_to,
            Some(Tuple::v6(
                17,
                A.parse().unwrap(),
                5000,
                R.parse().unwrap(),
                53
            ))
        );
        assert_eq!(back.tuple, None);
        // The same error sent elsewhere is about nothing.
        let other = parse6(&ip6(58, R, "2001:db8:1::3", &icmp)).unwrap();
        assert_eq!(other.related_to, None);
    }
}
