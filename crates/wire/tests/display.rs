//! The one-line `Display` forms of the reprs, which packet traces print.

use vecswitch_wire::*;

#[test]
fn l2_and_arp() {
    let mac = |b| EthernetAddress([2, 0, 0, 0, 0, b]);
    let e = EthernetRepr {
        src_addr: mac(1),
        dst_addr: EthernetAddress::BROADCAST,
        ethertype: EtherType::ARP,
    };
    assert_eq!(e.to_string(), "02:00:00:00:00:01 > ff:ff:ff:ff:ff:ff arp");

    let mut f = vec![
        2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xa8, 0, 10, 0x81, 0, 0, 20, 0x08, 0x00,
    ];
    f.resize(60, 0);
    assert_eq!(
        L2Header::parse(&f).unwrap().to_string(),
        "02:00:00:00:00:01 > 02:00:00:00:00:02 vlan 10/20 ipv4"
    );
    f[12] = 0;
    f[13] = 46;
    assert_eq!(
        L2Header::parse(&f).unwrap().to_string(),
        "02:00:00:00:00:01 > 02:00:00:00:00:02 llc len 46"
    );
    let v = VlanRepr {
        pcp: 3,
        dei: true,
        vid: 100,
        ethertype: EtherType::IPV6,
    };
    assert_eq!(v.to_string(), "vlan 100 pcp 3 dei ipv6");

    let a = ArpRepr {
        operation: ArpOperation::REQUEST,
        source_hardware_addr: mac(1),
        source_protocol_addr: Ipv4Addr::new(10, 0, 0, 1),
        target_hardware_addr: EthernetAddress::ZERO,
        target_protocol_addr: Ipv4Addr::new(10, 0, 0, 2),
    };
    assert_eq!(
        a.to_string(),
        "arp request who-has 10.0.0.2 tell 10.0.0.1 (02:00:00:00:00:01)"
    );
    let r = ArpRepr {
        operation: ArpOperation::REPLY,
        ..a
    };
    assert_eq!(r.to_string(), "arp reply 10.0.0.1 is-at 02:00:00:00:00:01");
}

#[test]
fn l3_and_l4() {
    let ip = Ipv4Repr::new(
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        IpProtocol::UDP,
        12,
    );
    assert_eq!(
        ip.to_string(),
        "ipv4 10.0.0.1 > 10.0.0.2 udp ttl 64 len 12 df"
    );
    let frag = Ipv4Repr {
        dont_frag: false,
        more_frags: true,
        frag_offset: 1480,
        ..ip
    };
    assert_eq!(
        frag.to_string(),
        "ipv4 10.0.0.1 > 10.0.0.2 udp ttl 64 len 12 frag 1480+"
    );
    let ip6 = Ipv6Repr::new(
        "2001:db8::1".parse().unwrap(),
        "2001:db8::2".parse().unwrap(),
        IpProtocol::TCP,
        20,
    );
    assert_eq!(
        ip6.to_string(),
        "ipv6 2001:db8::1 > 2001:db8::2 tcp hlim 64 len 20"
    );
    assert_eq!(
        UdpRepr {
            src_port: 1,
            dst_port: 2,
            payload_len: 3
        }
        .to_string(),
        "udp 1 > 2 len 3"
    );
    let t = TcpRepr {
        src_port: 40000,
        dst_port: 80,
        seq_number: 1,
        ack_number: 2,
        flags: TcpFlags::SYN | TcpFlags::ACK,
        window: 512,
        urgent: 0,
        options: TcpOptions::EMPTY,
        payload_len: 0,
    };
    assert_eq!(
        t.to_string(),
        "tcp 40000 > 80 [S.] seq 1 ack 2 win 512 len 0"
    );
}

#[test]
fn icmp() {
    assert_eq!(
        Icmpv4Repr::EchoReply {
            ident: 1,
            seq_no: 2,
            data_len: 56
        }
        .to_string(),
        "icmp echo-reply id 1 seq 2 len 56"
    );
    let te = Icmpv4Repr::Other {
        msg_type: Icmpv4Message::TIME_EXCEEDED,
        code: 0,
        rest_of_header: 0,
        data_len: 28,
    };
    assert_eq!(te.to_string(), "icmp time-exceeded code 0 len 28");
    let ns = Icmpv6Repr::NeighborSolicit {
        target_addr: "fe80::2".parse().unwrap(),
        source_lladdr: Some(EthernetAddress([2, 0, 0, 0, 0, 1])),
    };
    assert_eq!(
        ns.to_string(),
        "icmpv6 neighbor-solicitation who-has fe80::2 from 02:00:00:00:00:01"
    );
    let na = Icmpv6Repr::NeighborAdvert {
        router: false,
        solicited: true,
        override_flag: true,
        target_addr: "fe80::2".parse().unwrap(),
        target_lladdr: None,
    };
    assert_eq!(
        na.to_string(),
        "icmpv6 neighbor-advertisement fe80::2 solicited override"
    );
}
