//! Replays the control fuzz corpus (crates/control/fuzz/seeds and regressions: request lines,
//! valid and not) through the fuzz target's body on the stable toolchain: a regression on any
//! checked-in input fails `make test`.

#[path = "../../wire/fuzz/replay.rs"]
mod replay;
#[path = "../fuzz/src/lib.rs"]
mod targets;

use std::path::Path;

use vecswitch_control::protocol::{parse_request, COMMANDS};

#[test]
fn control_fuzz_corpus_replays() {
    replay::replay(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"),
        targets::TARGETS,
    );
}

/// The seeds hold a valid request for every command, so fuzzing starts inside each variant.
#[test]
fn control_seeds_cover_every_command() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/control_request");
    let mut seen = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let line = std::fs::read_to_string(e.unwrap().path()).unwrap();
        if parse_request(&line).is_ok() {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            seen.insert(v["cmd"].as_str().unwrap().to_string());
        }
    }
    let missing: Vec<_> = COMMANDS.iter().filter(|c| !seen.contains(**c)).collect();
    assert!(missing.is_empty(), "no valid seed for {missing:?}");
}
