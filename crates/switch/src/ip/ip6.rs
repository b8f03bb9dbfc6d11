//! The IPv6 side of the `ip` feature's tables: prefixes ([`Ipv6Prefix`]), the IPv6 addresses of
//! an interface with its link-local address ([`Ip6Interface`]), table 0's IPv6 routes, FIB,
//! adjacencies and neighbours ([`Ip6State`], the family-generic [`super::Tables`] for IPv6), and the
//! address arithmetic Neighbor Discovery needs: the EUI-64 link-local address (RFC 4291 §2.5.1
//! and appendix A, RFC 2464 §5), the solicited-node multicast address (RFC 4291 §2.7.1) and its
//! Ethernet multicast MAC (RFC 2464 §7).
//!
//! The same tables, adjacency, neighbour and route types serve both families (generic over the
//! family, [`super::family`]); the ICMP error token bucket, the per-packet metadata and the
//! settings are shared with IPv4 in [`super::IpState`].

use std::net::Ipv6Addr;

use vecswitch_wire::EthernetAddress;

use super::family::{PrefixOps, V6};
use super::prefix_text;

/// An IPv6 prefix `addr/len`. As an interface address the host bits are kept
/// (`2001:db8::1/64`); as a route they must be zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ipv6Prefix {
    pub addr: Ipv6Addr,
    pub len: u8,
}

impl Ipv6Prefix {
    /// `addr/len`; `len` must be ≤ 128.
    pub fn new(addr: Ipv6Addr, len: u8) -> Result<Ipv6Prefix, Prefix6Error> {
        if len > 128 {
            return Err(Prefix6Error::Length(len.to_string()));
        }
        Ok(Ipv6Prefix { addr, len })
    }

    /// The netmask of a prefix length (`len` ≤ 128).
    #[inline]
    pub const fn mask(len: u8) -> u128 {
        if len == 0 {
            0
        } else {
            u128::MAX << (128 - len as u32)
        }
    }

    /// The prefix with its host bits cleared.
    pub fn network(self) -> Ipv6Prefix {
        PrefixOps::<V6>::net(self)
    }

    /// Whether `a` is inside the prefix.
    #[inline]
    pub fn contains(self, a: Ipv6Addr) -> bool {
        PrefixOps::<V6>::holds(self, a)
    }

    /// Whether the host bits are zero.
    pub fn is_network(self) -> bool {
        PrefixOps::<V6>::is_net(self)
    }

    /// The FIB key `(network, length)`.
    pub fn key(self) -> (u128, u8) {
        (u128::from(self.network().addr), self.len)
    }
}

/// Why an IPv6 prefix did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Prefix6Error {
    #[error("invalid IPv6 address {0:?}: accepted an address such as 2001:db8::1 (RFC 4291 §2.2)")]
    Address(String),
    #[error("invalid prefix length {0:?}: accepted 0 to 128")]
    Length(String),
}

prefix_text!(Ipv6Prefix, Ipv6Addr, 128, Prefix6Error);

/// Whether `a` is link-local unicast (fe80::/10, RFC 4291 §2.5.6).
#[inline]
pub fn is_link_local(a: Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// The link-local address of an interface with MAC `mac`: fe80::/64 and the modified EUI-64
/// interface identifier (RFC 4291 appendix A: the MAC's halves around ff:fe, the
/// universal/local bit inverted; RFC 2464 §5).
pub fn link_local_from_mac(mac: EthernetAddress) -> Ipv6Addr {
    let m = mac.0;
    Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        m[0] ^ 0x02,
        m[1],
        m[2],
        0xff,
        0xfe,
        m[3],
        m[4],
        m[5],
    ])
}

/// The solicited-node multicast address of `a` (RFC 4291 §2.7.1: ff02::1:ff00:0/104 and the low
/// 24 bits of `a`).
pub fn solicited_node(a: Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::from([
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, o[13], o[14], o[15],
    ])
}

/// The Ethernet destination of IPv6 multicast address `a` (RFC 2464 §7: 33:33 and its low 32
/// bits).
pub fn multicast_mac(a: Ipv6Addr) -> EthernetAddress {
    let o = a.octets();
    EthernetAddress([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

/// The all-nodes multicast address ff02::1 (RFC 4291 §2.7.1).
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// The IPv6 side of one interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ip6Interface {
    /// Global (and unique-local) addresses with their subnet lengths, in the order added.
    pub addrs: Vec<Ipv6Prefix>,
    /// The link-local address (fe80::EUI-64 of the interface's MAC), set with the first address.
    pub link_local: Option<Ipv6Addr>,
}

impl Ip6Interface {
    /// An interface with an IPv6 address routes its IPv6 frames.
    #[inline]
    pub fn routed(&self) -> bool {
        !self.addrs.is_empty()
    }

    /// Whether `a` is one of the interface's addresses (link-local included).
    #[inline]
    pub fn has_addr(&self, a: Ipv6Addr) -> bool {
        self.link_local == Some(a) || self.addrs.iter().any(|p| p.addr == a)
    }

    /// The interface's address whose subnet holds `a`, if any.
    #[inline]
    pub fn addr_for(&self, a: Ipv6Addr) -> Option<Ipv6Addr> {
        self.addrs.iter().find(|p| p.contains(a)).map(|p| p.addr)
    }

    /// The source for a packet the switch sends to `to` from this interface: the link-local
    /// address to a link-local destination, else the address in `to`'s subnet, the first global
    /// address, or the link-local one (RFC 6724 §5 rules 2 and 8, reduced).
    pub fn source_for(&self, to: Ipv6Addr) -> Option<Ipv6Addr> {
        if is_link_local(to) {
            return self.link_local;
        }
        self.addr_for(to)
            .or(self.addrs.first().map(|p| p.addr))
            .or(self.link_local)
    }

    /// Whether `dst` is the solicited-node address of one of the interface's addresses.
    pub fn solicited_for(&self, dst: Ipv6Addr) -> bool {
        self.link_local
            .into_iter()
            .chain(self.addrs.iter().map(|p| p.addr))
            .any(|a| solicited_node(a) == dst)
    }
}

/// Table 0's IPv6 routing state (the `v6` field of [`super::IpState`]).
pub type Ip6State = super::Tables<super::V6>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eui64_solicited_node_and_multicast_mac_match_the_rfc_examples() {
        // RFC 4291 appendix A: 34-56-78-9A-BC-DE → 3656:78ff:fe9a:bcde.
        let ll = link_local_from_mac(EthernetAddress([0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde]));
        assert_eq!(ll, "fe80::3656:78ff:fe9a:bcde".parse::<Ipv6Addr>().unwrap());
        assert!(is_link_local(ll));
        assert!(!is_link_local("fec0::1".parse().unwrap()));
        let a: Ipv6Addr = "2001:db8::12:3456".parse().unwrap();
        assert_eq!(
            solicited_node(a),
            "ff02::1:ff12:3456".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(
            multicast_mac(solicited_node(a)).0,
            [0x33, 0x33, 0xff, 0x12, 0x34, 0x56]
        );
    }

    #[test]
    fn prefixes_parse_check_and_contain() {
        let p: Ipv6Prefix = "2001:db8:1::1/64".parse().unwrap();
        assert!(!p.is_network());
        assert_eq!(p.network().to_string(), "2001:db8:1::/64");
        assert!(p.contains("2001:db8:1::ffff".parse().unwrap()));
        assert!(!p.contains("2001:db8:2::1".parse().unwrap()));
        assert_eq!(
            "2001:db8::/129".parse::<Ipv6Prefix>(),
            Err(Prefix6Error::Length("129".into()))
        );
        assert!(matches!(
            "10.0.0.1/24".parse::<Ipv6Prefix>(),
            Err(Prefix6Error::Address(_))
        ));
        assert_eq!("::/0".parse::<Ipv6Prefix>().unwrap().key(), (0, 0));
    }
}
