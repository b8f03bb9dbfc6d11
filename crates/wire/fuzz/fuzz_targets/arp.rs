//! Fuzz the ARP view and repr: never panic; an Ethernet/IPv4 packet re-emits to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_wire_fuzz::arp(data));
