//! Fuzz the IPv6 view and repr: never panic; a valid fixed header re-emits to the same bytes; the
//! extension-header walk stays inside the packet.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vecswitch_wire::{Ipv6Packet, Ipv6Repr};

fuzz_target!(|data: &[u8]| {
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
});
