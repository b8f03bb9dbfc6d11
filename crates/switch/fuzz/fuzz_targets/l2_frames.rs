//! Arbitrary bytes, cut into frames, through ethernet-input, a bridge (learn, forward, flood) and
//! an xconnect. Must never panic; every buffer must return to the pool (checked inside
//! `fuzz_frames`). Run: `cd crates/switch/fuzz && cargo +nightly fuzz run l2_frames`.
//! The same harness runs on stable over the corpus in `crates/switch/tests/fuzz_corpus.rs` and as
//! a proptest in `crates/switch/tests/setups.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vecswitch_switch_fuzz::l2_frames(data));
