//! Fuzz the AF_PACKET receive walk: the input is a TPACKET_V3 or V2 ring image as a buggy kernel
//! (or a bit flip) could leave it; descriptors outside their block or slot are dropped and counted,
//! never followed; every received frame is counted and every pool buffer comes back.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_ports_fuzz::af_packet_rx(data));
