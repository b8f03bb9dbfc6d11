//! Fuzz the ICMPv4 and ICMPv6 views and reprs (the first input byte picks which): never panic;
//! echo and other messages re-emit to the same bytes; NDP messages re-parse to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vecswitch_wire::{Icmpv4Packet, Icmpv4Repr, Icmpv6Packet, Icmpv6Repr, Ipv6Addr};

fuzz_target!(|data: &[u8]| {
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
});
