//! The body of the switch fuzz target: `fuzz_targets/l2_frames.rs` calls it under libFuzzer
//! (nightly), and `crates/switch/tests/fuzz_corpus.rs` replays the checked-in corpus through it on
//! stable (this file is included there by path).

/// A target: the name of its file under `fuzz_targets/` and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target of this crate.
pub const TARGETS: &[Target] = &[("l2_frames", l2_frames)];

/// Arbitrary bytes, cut into frames (a length byte, an optional extension byte, the frame), through
/// ethernet-input, a bridge (learn, forward, flood) and an xconnect. Must never panic; every buffer
/// must return to the pool (checked inside `fuzz_frames`).
pub fn l2_frames(data: &[u8]) {
    vecswitch_switch::testing::fuzz_frames(data);
}
