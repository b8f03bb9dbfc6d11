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

/// The harness itself: a target that panics on a checked-in input fails the replay, naming it.
#[test]
#[should_panic(expected = "seeds/ipv4/udp: panicked: rejects IPv4")]
fn replay_fails_on_a_panicking_target() {
    fn bad(data: &[u8]) {
        assert!(data.first() != Some(&0x45), "rejects IPv4");
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut t: Vec<replay::Target> = targets::TARGETS.to_vec();
    t.iter_mut().find(|(n, _)| *n == "ipv4").unwrap().1 = bad;
    replay::replay(&dir, &t);
}
