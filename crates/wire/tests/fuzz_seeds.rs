//! The fuzz seeds (crates/wire/fuzz/seeds) are valid packets, so fuzzing starts from the paths
//! behind every check (checksums included) rather than from the early rejections.

use std::path::Path;

use vecswitch_wire::*;

fn seed(target: &str, name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn addrs(b: &[u8]) -> (IpAddr, IpAddr) {
    (
        Ipv4Addr::new(b[0], b[1], b[2], b[3]).into(),
        Ipv4Addr::new(b[4], b[5], b[6], b[7]).into(),
    )
}

#[test]
fn l2_seeds_parse() {
    assert_eq!(
        L2Header::parse(&seed("l2", "untagged"))
            .unwrap()
            .tag_count(),
        0
    );
    assert_eq!(
        L2Header::parse(&seed("l2", "dot1q")).unwrap().outer_vid(),
        Some(100)
    );
    assert_eq!(L2Header::parse(&seed("l2", "qinq")).unwrap().tag_count(), 2);
    assert!(L2Header::parse(&seed("l2", "llc")).unwrap().is_llc());
}

#[test]
fn l3_seeds_parse_with_valid_checksums() {
    assert!(ArpRepr::parse(&ArpPacket::new_checked(&seed("arp", "request")[..]).unwrap()).is_ok());
    for n in ["udp", "options"] {
        let b = seed("ipv4", n);
        Ipv4Repr::parse(&Ipv4Packet::new_checked(&b[..]).unwrap()).unwrap();
    }
    Ipv6Repr::parse(&Ipv6Packet::new_checked(&seed("ipv6", "udp")[..]).unwrap()).unwrap();
}

#[test]
fn l4_seeds_parse_with_valid_checksums() {
    let b = seed("udp", "dns");
    let (s, d) = addrs(&b);
    UdpRepr::parse(&UdpPacket::new_checked(&b[8..]).unwrap(), &s, &d).unwrap();
    let b = seed("tcp", "syn");
    let (s, d) = addrs(&b);
    let r = TcpRepr::parse(&TcpPacket::new_checked(&b[8..]).unwrap(), &s, &d).unwrap();
    assert!(r.flags.contains(TcpFlags::SYN));
    let b = seed("icmp", "echo4");
    assert!(matches!(
        Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&b[1..]).unwrap()).unwrap(),
        Icmpv4Repr::EchoRequest { .. }
    ));
    let b = seed("icmp", "ns6");
    let (s, d): (Ipv6Addr, Ipv6Addr) = ("fe80::1".parse().unwrap(), "ff02::1".parse().unwrap());
    let r = Icmpv6Repr::parse(&Icmpv6Packet::new_checked(&b[1..]).unwrap(), &s, &d).unwrap();
    assert!(matches!(
        r,
        Icmpv6Repr::NeighborSolicit {
            source_lladdr: Some(_),
            ..
        }
    ));
}
