//! Fuzz the ICMPv4 and ICMPv6 views and reprs (the first input byte picks which): never panic;
//! echo and other messages re-emit to the same bytes; NDP messages re-parse to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_wire_fuzz::icmp(data));
