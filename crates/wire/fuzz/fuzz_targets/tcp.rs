//! Fuzz the TCP view, repr and option iterator: never panic; what parses re-emits to the same bytes
//! (reserved bits aside); MSS clamping keeps a valid checksum valid. The first 8 input bytes are
//! the IPv4 source and destination.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_wire_fuzz::tcp(data));
