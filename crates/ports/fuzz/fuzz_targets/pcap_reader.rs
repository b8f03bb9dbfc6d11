//! Fuzz the pcap reader: any bytes as a capture file (both byte orders, micro- and nanosecond
//! magic); never panic, bounded allocation, records re-write and re-read the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_ports_fuzz::pcap_reader(data));
