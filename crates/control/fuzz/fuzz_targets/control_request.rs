//! Fuzz the control protocol's request parsing (one JSON line from the control socket): never
//! panic; a refusal says why; what parses encodes and parses back to the same request.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_control_fuzz::control_request(data));
