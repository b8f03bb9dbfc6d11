//! Fuzz the IPv4 view and repr: never panic; a header re-emits to the same bytes (except the
//! reserved flag bit and the checksum, which emit recomputes); TTL decrement keeps a valid
//! checksum valid.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vecswitch_wire::{Ipv4Packet, Ipv4Repr};

fuzz_target!(|data: &[u8]| {
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
});
