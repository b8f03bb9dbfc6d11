//! Corpus replay on the stable toolchain: every checked-in input of every fuzz target goes
//! through the same function the cargo-fuzz target calls, so a regression fails `make test`
//! without nightly or cargo-fuzz. Each crate's `tests/fuzz_corpus.rs` includes this file and its
//! fuzz crate's `src/lib.rs` by path (see docs/FUZZING.md).
//!
//! Layout of a fuzz crate `crates/<crate>/fuzz/`:
//! - `fuzz_targets/<target>.rs`: one-line libFuzzer entry points calling `src/lib.rs`;
//! - `seeds/<target>/`: the corpus (meaningful seeds plus what `scripts/fuzz.sh --merge` kept);
//! - `regressions/<target>/`: every input that ever found a bug, named after it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// A fuzz target: its name (the file name under `fuzz_targets/`) and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Largest corpus, all targets of one crate together (keeps the repository small).
pub const MAX_CORPUS_BYTES: u64 = 2 << 20;

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(non-string panic)".into())
}

/// Replays `<fuzz_dir>/seeds/<target>/*` and `<fuzz_dir>/regressions/<target>/*` through each
/// target; fails naming every input that panicked, every target with no seed, every target in
/// `fuzz_targets/` missing from `targets`, and a corpus over [`MAX_CORPUS_BYTES`].
pub fn replay(fuzz_dir: &Path, targets: &[Target]) {
    let mut failures = Vec::new();
    let mut summary = Vec::new();
    let mut bytes = 0u64;

    let declared: Vec<String> = files(&fuzz_dir.join("fuzz_targets"))
        .iter()
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect();
    for d in &declared {
        if !targets.iter().any(|(n, _)| n == d) {
            failures.push(format!(
                "fuzz_targets/{d}.rs is not replayed: add it to the crate's TARGETS"
            ));
        }
    }
    for &(name, f) in targets {
        if !declared.iter().any(|d| d == name) {
            failures.push(format!("{name}: no fuzz_targets/{name}.rs"));
        }
        let seeds = files(&fuzz_dir.join("seeds").join(name));
        let regressions = files(&fuzz_dir.join("regressions").join(name));
        if seeds.is_empty() {
            failures.push(format!(
                "{name}: no seed in {}",
                fuzz_dir.join("seeds").join(name).display()
            ));
        }
        for p in seeds.iter().chain(&regressions) {
            let data = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            bytes += data.len() as u64;
            if let Err(e) = catch_unwind(AssertUnwindSafe(|| f(&data))) {
                failures.push(format!("{}: panicked: {}", p.display(), panic_text(&*e)));
            }
        }
        summary.push(format!(
            "{name}: {} seeds + {} regressions",
            seeds.len(),
            regressions.len()
        ));
    }
    if bytes > MAX_CORPUS_BYTES {
        failures.push(format!(
            "corpus of {} is {bytes} bytes, over {MAX_CORPUS_BYTES}: minimize it (scripts/fuzz.sh --merge)",
            fuzz_dir.display()
        ));
    }
    eprintln!("replayed {}: {}", fuzz_dir.display(), summary.join("; "));
    assert!(
        failures.is_empty(),
        "{} corpus replay failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
