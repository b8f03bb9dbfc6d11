//! The bodies of the wire fuzz targets, one plain function per target: `fuzz_targets/<t>.rs`
//! calls it under libFuzzer (nightly), and `crates/wire/tests/fuzz_corpus.rs` replays the checked-in
//! corpus through it on stable (this file is included there by path). Each function must never
//! panic on any input except where an assertion states a property of the parser.

use vecswitch_wire::{
    ArpPacket, ArpRepr, Error, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr, Icmpv6Packet,
    Icmpv6Repr, IpAddr, Ipv4Addr, Ipv4Packet, Ipv4Repr, Ipv6Addr, Ipv6Packet, Ipv6Repr, L2Header,
    TcpPacket, TcpRepr, UdpPacket, UdpRepr, VlanRepr, VlanTag,
};

/// A target: the name of its file under `fuzz_targets/` and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target of this crate.
pub const TARGETS: &[Target] = &[
    ("l2", l2),
    ("arp", arp),
    ("ipv4", ipv4),
    ("ipv6", ipv6),
    ("udp", udp),
    ("tcp", tcp),
    ("icmp", icmp),
];

/// Fuzz `L2Header::parse` and the Ethernet/VLAN views: never panic; what parses re-emits to the
/// same bytes; errors carry a listed reason.
pub fn l2(data: &[u8]) {
    match L2Header::parse(data) {
        Ok(h) => {
            assert!(h.l3_offset <= data.len());
            assert_eq!(h.l3_offset, h.header_len());
            let mut out = vec![0u8; h.header_len()];
            assert_eq!(h.emit(&mut out), Ok(h.header_len()));
            assert_eq!(&out[..], &data[..h.header_len()]);
        }
        Err(e) => assert!(Error::REASONS.contains(&e.reason())),
    }
    if let Ok(f) = EthernetFrame::new_checked(data) {
        let r = EthernetRepr::parse(&f).unwrap();
        assert_eq!(r.ethertype, f.ethertype());
        if let Ok(t) = VlanTag::new_checked(f.payload()) {
            let v = VlanRepr::parse(&t).unwrap();
            let mut b = [0u8; 4];
            v.emit(&mut VlanTag::new_unchecked(&mut b[..]));
            assert_eq!(&b[..], &f.payload()[..4]);
        }
    }
}

/// Fuzz the ARP view and repr: never panic; an Ethernet/IPv4 packet re-emits to the same bytes.
pub fn arp(data: &[u8]) {
    let p = ArpPacket::new_unchecked(data);
    if p.check_len().is_ok() {
        let _ = (
            p.source_hardware_addr(),
            p.source_protocol_addr(),
            p.target_hardware_addr(),
            p.target_protocol_addr(),
        );
    }
    if let Ok(r) = ArpRepr::parse(&p) {
        let mut out = [0u8; ArpRepr::PACKET_LEN];
        r.emit(&mut ArpPacket::new_unchecked(&mut out[..]));
        assert_eq!(&out[..], &data[..ArpRepr::PACKET_LEN]);
    }
}

/// Fuzz the IPv4 view and repr: never panic; a header re-emits to the same bytes (except the
/// reserved flag bit and the checksum, which emit recomputes); TTL decrement keeps a valid
/// checksum valid.
pub fn ipv4(data: &[u8]) {
    let p = Ipv4Packet::new_unchecked(data);
    if p.check_len().is_ok() {
        let _ = (p.header(), p.options(), p.payload(), p.frag_offset());
    }
    if let Ok(r) = Ipv4Repr::parse(&p) {
        assert!(p.verify_checksum());
        assert_eq!(r.buffer_len(), usize::from(p.total_len()));
    }
    if let Ok(r) = Ipv4Repr::parse_ignoring_checksum(&p) {
        let hl = r.header_len();
        let mut out = vec![0u8; r.buffer_len()];
        let mut q = Ipv4Packet::new_unchecked(&mut out[..]);
        r.emit(&mut q);
        assert!(q.verify_checksum());
        let mut want = data[..hl].to_vec();
        want[6] &= 0x7f; // the reserved flag bit is not part of the repr
        for b in [&mut want[..], &mut out[..hl]] {
            b[10] = 0;
            b[11] = 0;
        }
        assert_eq!(&out[..hl], &want[..]);

        // RFC 1624: an incremental update keeps a valid checksum valid.
        let mut copy = data.to_vec();
        let mut m = Ipv4Packet::new_unchecked(&mut copy[..]);
        if m.verify_checksum() {
            m.decrement_ttl();
            assert!(m.verify_checksum());
        }
        let mut q = Ipv4Packet::new_unchecked(&mut out[..]);
        q.fill_checksum();
        q.set_src_addr_incremental(std::net::Ipv4Addr::new(192, 0, 2, 1));
        assert!(q.verify_checksum());
    }
}

/// Fuzz the IPv6 view and repr: never panic; a valid fixed header re-emits to the same bytes; the
/// extension-header walk stays inside the packet.
pub fn ipv6(data: &[u8]) {
    let p = Ipv6Packet::new_unchecked(data);
    if let Ok(r) = Ipv6Repr::parse(&p) {
        assert_eq!(r.payload_len, p.payload().len());
        let mut out = [0u8; 40];
        r.emit(&mut Ipv6Packet::new_unchecked(&mut out[..]));
        assert_eq!(&out[..], &data[..40]);
        if let Ok(u) = p.upper_layer() {
            assert!(u.offset >= 40 && u.offset <= 40 + r.payload_len);
        }
    }
}

/// Fuzz the UDP view and repr: never panic; what parses re-emits to the same bytes; a filled
/// checksum verifies. The first 8 input bytes are the IPv4 source and destination.
pub fn udp(data: &[u8]) {
    if data.len() < 8 {
        return;
    }
    let (addrs, data) = data.split_at(8);
    let src: IpAddr = Ipv4Addr::new(addrs[0], addrs[1], addrs[2], addrs[3]).into();
    let dst: IpAddr = Ipv4Addr::new(addrs[4], addrs[5], addrs[6], addrs[7]).into();
    let p = UdpPacket::new_unchecked(data);
    let _ = UdpRepr::parse(&p, &src, &dst);
    if let Ok(r) = UdpRepr::parse_ignoring_checksum(&p) {
        let mut out = vec![0u8; r.buffer_len()];
        let mut q = UdpPacket::new_unchecked(&mut out[..]);
        r.emit(&mut q);
        q.payload_mut().copy_from_slice(p.payload());
        q.set_checksum(p.checksum());
        assert_eq!(&out[..], &data[..r.buffer_len()]);
        let mut q = UdpPacket::new_unchecked(&mut out[..]);
        q.fill_checksum(&src, &dst);
        assert!(q.verify_checksum(&src, &dst));
    }
}

/// Fuzz the TCP view, repr and option iterator: never panic; what parses re-emits to the same bytes
/// (reserved bits aside); MSS clamping keeps a valid checksum valid. The first 8 input bytes are
/// the IPv4 source and destination.
pub fn tcp(data: &[u8]) {
    if data.len() < 8 {
        return;
    }
    let (addrs, data) = data.split_at(8);
    let src: IpAddr = Ipv4Addr::new(addrs[0], addrs[1], addrs[2], addrs[3]).into();
    let dst: IpAddr = Ipv4Addr::new(addrs[4], addrs[5], addrs[6], addrs[7]).into();
    let p = TcpPacket::new_unchecked(data);
    let _ = TcpRepr::parse(&p, &src, &dst);
    if let Ok(r) = TcpRepr::parse_ignoring_checksum(&p) {
        for o in p.options_iter() {
            let _ = o;
        }
        let mut out = vec![0u8; r.buffer_len()];
        let mut q = TcpPacket::new_unchecked(&mut out[..]);
        r.emit(&mut q);
        q.payload_mut().copy_from_slice(p.payload());
        q.set_checksum(p.checksum());
        let mut want = data.to_vec();
        want[12] &= 0xf0; // reserved bits are not part of the repr
        assert_eq!(out, want);

        let mut q = TcpPacket::new_unchecked(&mut out[..]);
        q.fill_checksum(&src, &dst);
        q.clamp_mss(536);
        assert!(q.verify_checksum(&src, &dst));
    }
}

/// Fuzz the ICMPv4 and ICMPv6 views and reprs (the first input byte picks which): never panic;
/// echo and other messages re-emit to the same bytes; NDP messages re-parse to the same value.
pub fn icmp(data: &[u8]) {
    let Some((&which, data)) = data.split_first() else {
        return;
    };
    if which & 1 == 0 {
        let p = Icmpv4Packet::new_unchecked(data);
        let _ = Icmpv4Repr::parse(&p);
        if let Ok(r) = Icmpv4Repr::parse_ignoring_checksum(&p) {
            let mut out = vec![0u8; r.buffer_len()];
            let mut q = Icmpv4Packet::new_unchecked(&mut out[..]);
            r.emit(&mut q);
            q.data_mut().copy_from_slice(p.data());
            q.set_checksum(p.checksum());
            assert_eq!(out, data);
            let mut q = Icmpv4Packet::new_unchecked(&mut out[..]);
            q.fill_checksum();
            assert!(q.verify_checksum());
        }
    } else {
        let (src, dst): (Ipv6Addr, Ipv6Addr) =
            ("fe80::1".parse().unwrap(), "ff02::1".parse().unwrap());
        let p = Icmpv6Packet::new_unchecked(data);
        if p.check_len().is_ok() {
            let _ = (p.ndp_target_addr(), p.ndp_options().count());
        }
        let _ = Icmpv6Repr::parse(&p, &src, &dst);
        if let Ok(r) = Icmpv6Repr::parse_ignoring_checksum(&p) {
            let mut out = vec![0u8; r.buffer_len()];
            let mut q = Icmpv6Packet::new_unchecked(&mut out[..]);
            r.emit(&mut q);
            match r {
                Icmpv6Repr::NeighborSolicit { .. } | Icmpv6Repr::NeighborAdvert { .. } => {
                    q.fill_checksum(&src, &dst);
                    let again = Icmpv6Repr::parse(
                        &Icmpv6Packet::new_checked(&out[..]).unwrap(),
                        &src,
                        &dst,
                    );
                    assert_eq!(again, Ok(r));
                }
                _ => {
                    q.data_mut().copy_from_slice(p.data());
                    q.set_checksum(p.checksum());
                    assert_eq!(out, data);
                }
            }
        }
    }
}
