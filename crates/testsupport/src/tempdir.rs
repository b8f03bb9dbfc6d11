//! A temporary directory with a unique name, removed on drop (also when the test panics).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A unique directory under the system temp dir: `vecswitch-<tag>-<pid>-<n>`; removed on drop.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "vecswitch-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p)
            .unwrap_or_else(|e| panic!("create temp dir {}: {e}", p.display()));
        TempDir(p)
    }

    pub fn dir(&self) -> &Path {
        &self.0
    }

    /// `name` inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// `name` inside the directory as a string (socket paths in configs and vdev arguments).
    pub fn sock(&self, name: &str) -> String {
        self.path(name)
            .to_str()
            .expect("UTF-8 temp path")
            .to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_dirs_differ_and_vanish_on_drop() {
        let (a, b) = (TempDir::new("ts"), TempDir::new("ts"));
        assert_ne!(a.dir(), b.dir());
        std::fs::write(a.path("f"), "x").unwrap();
        let p = a.dir().to_path_buf();
        drop(a);
        assert!(!p.exists());
        assert!(b.dir().is_dir());
    }
}
