//! Fuzz the UDP view and repr: never panic; what parses re-emits to the same bytes; a filled
//! checksum verifies. The first 8 input bytes are the IPv4 source and destination.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_wire_fuzz::udp(data));
