//! Every config in `examples/` parses and validates (`vecswitch run --check`), and a broken copy is
//! refused with the field path, so the examples in the docs cannot rot.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");

fn examples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter(|p| {
            // Only switch configs (other example kinds may live beside them).
            let text = std::fs::read_to_string(p).unwrap();
            text.contains("[[port]]") || text.contains("[switch]")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn control_examples_validate() {
    let ex = examples();
    assert!(
        ex.len() >= 3,
        "expected the switch config examples, found {ex:?}"
    );
    for p in ex {
        let out = Command::new(BIN)
            .args(["run", "--check", "--config"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} does not validate: {}",
            p.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(": ok ("));
    }
}

#[test]
fn control_broken_example_is_refused_with_the_field_path() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/eline-memif.toml");
    let text =
        std::fs::read_to_string(src)
            .unwrap()
            .replacen("ring_size = 1024", "ring_size = 1023", 1);
    let dir = std::env::temp_dir().join(format!("vsw-ctl-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    struct Rm(PathBuf);
    impl Drop for Rm {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _rm = Rm(dir.clone());
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, text).unwrap();
    let out = Command::new(BIN)
        .args(["run", "--check", "--config"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("port[0].ring_size = 1023"), "{e}");
}
