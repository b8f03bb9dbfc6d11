//! Replays the wire fuzz corpus (crates/wire/fuzz/seeds and regressions) through the fuzz targets'
//! bodies on the stable toolchain: a parser regression on any checked-in input fails `make test`.

#[path = "../fuzz/replay.rs"]
mod replay;
#[path = "../fuzz/src/lib.rs"]
mod targets;

#[test]
fn wire_fuzz_corpus_replays() {
    replay::replay(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"),
        targets::TARGETS,
    );
}
