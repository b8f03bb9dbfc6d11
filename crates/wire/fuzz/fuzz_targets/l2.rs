//! Fuzz `L2Header::parse` and the Ethernet/VLAN views: never panic; what parses re-emits to the
//! same bytes; errors carry a listed reason.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vecswitch_wire::{Error, EthernetFrame, EthernetRepr, L2Header, VlanRepr, VlanTag};

fuzz_target!(|data: &[u8]| {
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
});
