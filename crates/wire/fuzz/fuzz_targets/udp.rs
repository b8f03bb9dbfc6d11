//! Fuzz the UDP view and repr: never panic; what parses re-emits to the same bytes; a filled
//! checksum verifies. The first 8 input bytes are the IPv4 source and destination.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vecswitch_wire::{IpAddr, Ipv4Addr, UdpPacket, UdpRepr};

fuzz_target!(|data: &[u8]| {
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
});
