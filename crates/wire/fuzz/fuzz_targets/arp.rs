//! Fuzz the ARP view and repr: never panic; an Ethernet/IPv4 packet re-emits to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vecswitch_wire::{ArpPacket, ArpRepr};

fuzz_target!(|data: &[u8]| {
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
});
