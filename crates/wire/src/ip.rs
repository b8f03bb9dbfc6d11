//! Things IPv4 and IPv6 share: the [`IpProtocol`] number (IPv4 protocol / IPv6 next header).

use core::fmt;

/// An IP protocol number (IANA "Assigned Internet Protocol Numbers").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpProtocol(pub u8);

impl IpProtocol {
    /// IPv6 hop-by-hop options.
    pub const HOP_BY_HOP: IpProtocol = IpProtocol(0);
    /// ICMP for IPv4.
    pub const ICMP: IpProtocol = IpProtocol(1);
    /// TCP.
    pub const TCP: IpProtocol = IpProtocol(6);
    /// UDP.
    pub const UDP: IpProtocol = IpProtocol(17);
    /// IPv6 routing header.
    pub const IPV6_ROUTE: IpProtocol = IpProtocol(43);
    /// IPv6 fragment header.
    pub const IPV6_FRAG: IpProtocol = IpProtocol(44);
    /// ICMP for IPv6.
    pub const ICMPV6: IpProtocol = IpProtocol(58);
    /// IPv6 "no next header".
    pub const IPV6_NO_NEXT: IpProtocol = IpProtocol(59);
    /// IPv6 destination options.
    pub const IPV6_OPTS: IpProtocol = IpProtocol(60);

    /// Short name of well-known protocols.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "hop-by-hop",
            1 => "icmp",
            6 => "tcp",
            17 => "udp",
            43 => "ipv6-route",
            44 => "ipv6-frag",
            58 => "icmpv6",
            59 => "ipv6-no-next",
            60 => "ipv6-opts",
            _ => return None,
        })
    }
}

impl From<u8> for IpProtocol {
    fn from(v: u8) -> Self {
        IpProtocol(v)
    }
}

impl From<IpProtocol> for u8 {
    fn from(v: IpProtocol) -> Self {
        v.0
    }
}

impl fmt::Display for IpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(IpProtocol::UDP.to_string(), "udp");
        assert_eq!(IpProtocol(200).to_string(), "200");
        assert_eq!(u8::from(IpProtocol::ICMPV6), 58);
    }
}
