//! Fuzz the IPv6 view and repr: never panic; a valid fixed header re-emits to the same bytes; the
//! extension-header walk stays inside the packet.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_wire_fuzz::ipv6(data));
