//! Replays the switch fuzz corpus (crates/switch/fuzz/seeds and regressions: frame sequences
//! through a bridge and an xconnect) through the fuzz target's body on the stable toolchain: a
//! regression on any checked-in input fails `make test`.

#[path = "../../wire/fuzz/replay.rs"]
mod replay;
#[path = "../fuzz/src/lib.rs"]
mod targets;

#[test]
fn switch_fuzz_corpus_replays() {
    replay::replay(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"),
        targets::TARGETS,
    );
}
