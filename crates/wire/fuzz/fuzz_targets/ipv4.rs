//! Fuzz the IPv4 view and repr: never panic; a header re-emits to the same bytes (except the
//! reserved flag bit and the checksum, which emit recomputes); TTL decrement keeps a valid
//! checksum valid.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_wire_fuzz::ipv4(data));
