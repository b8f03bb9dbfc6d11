//! Fuzz `L2Header::parse` and the Ethernet/VLAN views: never panic; what parses re-emits to the
//! same bytes; errors carry a listed reason.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_wire_fuzz::l2(data));
