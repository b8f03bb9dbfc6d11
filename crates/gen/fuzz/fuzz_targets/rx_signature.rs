//! Fuzzes the receive path: any bytes as a received frame go through `find_signature` (Ethernet,
//! VLAN tags, IPv4/IPv6, UDP, signature) and, when a signature is found, through the sequence and
//! timestamp extension and the stream analyzer, with the "frames sent" bound and the receive time
//! taken from the input too. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_gen_fuzz::rx_signature(data));
