//! Fuzz the TCP view, repr and option iterator: never panic; what parses re-emits to the same bytes
//! (reserved bits aside); MSS clamping keeps a valid checksum valid. The first 8 input bytes are
//! the IPv4 source and destination.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vecswitch_wire::{IpAddr, Ipv4Addr, TcpPacket, TcpRepr};

fuzz_target!(|data: &[u8]| {
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
});
