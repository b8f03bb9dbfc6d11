//! Replays the generator fuzz corpus (crates/gen/fuzz/seeds and regressions: received frames with
//! and without signatures) through the fuzz target's body on the stable toolchain: a regression on
//! any checked-in input fails `make test`.

#[path = "../../wire/fuzz/replay.rs"]
mod replay;
#[path = "../fuzz/src/lib.rs"]
mod targets;

#[test]
fn gen_fuzz_corpus_replays() {
    replay::replay(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"),
        targets::TARGETS,
    );
}
