//! Fuzz the memif control-message parser (records arrive from another process over the control
//! socket): never panic; a record that parses re-emits to a record that parses the same way.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_ports_fuzz::memif_control(data));
