//! Fuzz memif ring handling: the input is written into a shared ring (header, descriptors,
//! buffers) as a hostile peer could, then receive and transmit run over it as server or client.
//! Descriptors outside the region must be dropped and counted, never followed; received packets must
//! be whole; every Pool buffer must come back.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_ports_fuzz::memif_ring(data));
