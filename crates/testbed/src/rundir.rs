//! Run identity and the per-run directory.
//!
//! A [`RunId`] (`vtb<pid>-<seq>`) prefixes every resource one testbed run creates — namespace names,
//! DPDK file prefixes, the run directory — so that runs side by side never collide and
//! [`crate::cleanup_stale`] can tell leftovers of a dead process (its pid no longer exists) from a
//! run still in progress. A [`RunDir`] holds the run's sockets, configs and process logs; it is
//! removed on `Drop`, except while panicking (a failing test keeps its logs; the path is printed)
//! or after [`RunDir::keep`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::{Error, Result};

/// Prefix of every resource name the testbed creates.
pub const DEFAULT_PREFIX: &str = "vtb";

/// Where run directories go unless `VECSWITCH_TESTBED_DIR` says otherwise.
pub fn base_dir() -> PathBuf {
    std::env::var_os("VECSWITCH_TESTBED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/vecswitch-testbed"))
}

/// A unique name for one testbed run: `<prefix><pid>-<seq>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RunId(String);

impl RunId {
    /// A fresh id for this process with the default prefix.
    pub fn new() -> RunId {
        RunId::with_prefix(DEFAULT_PREFIX)
    }

    /// A fresh id with `prefix` (letters only keeps names valid everywhere they are used).
    pub fn with_prefix(prefix: &str) -> RunId {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        RunId(format!("{prefix}{}-{seq}", std::process::id()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for RunId {
    fn default() -> Self {
        RunId::new()
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// If `name` was made by a run id with `prefix` (`<prefix><pid>-...`), the pid of the process that
/// made it.
pub fn owner_pid(prefix: &str, name: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() || !rest[digits.len()..].starts_with('-') {
        return None;
    }
    digits.parse().ok()
}

/// Whether a process with this pid exists.
pub fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The directory of one run: sockets, generated configs, process logs.
#[derive(Debug)]
pub struct RunDir {
    id: RunId,
    path: PathBuf,
    keep: bool,
}

impl RunDir {
    /// Creates `<base_dir>/<id>` with a fresh [`RunId`].
    pub fn create() -> Result<RunDir> {
        RunDir::create_in(&base_dir(), RunId::new())
    }

    /// Creates `<base>/<id>`.
    pub fn create_in(base: &Path, id: RunId) -> Result<RunDir> {
        let path = base.join(id.as_str());
        std::fs::create_dir_all(&path).map_err(|source| Error::Io {
            what: "creating run directory",
            path: path.clone(),
            source,
        })?;
        Ok(RunDir {
            id,
            path,
            keep: false,
        })
    }

    pub fn id(&self) -> &RunId {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A path inside the run directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Keeps the directory after `Drop` (to read logs of a run that went wrong).
    pub fn keep(&mut self) {
        self.keep = true;
    }

    /// Writes `contents` to `name` inside the run directory; returns the path.
    pub fn write(&self, name: &str, contents: &str) -> Result<PathBuf> {
        let p = self.file(name);
        std::fs::write(&p, contents).map_err(|source| Error::Io {
            what: "writing",
            path: p.clone(),
            source,
        })?;
        Ok(p)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if self.keep || std::thread::panicking() {
            eprintln!(
                "testbed: keeping run directory {} (logs)",
                self.path.display()
            );
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_unique_and_carry_the_pid() {
        let a = RunId::new();
        let b = RunId::new();
        assert_ne!(a, b);
        assert_eq!(
            owner_pid(DEFAULT_PREFIX, a.as_str()),
            Some(std::process::id())
        );
        assert_eq!(
            owner_pid(DEFAULT_PREFIX, &format!("{a}-gen")),
            Some(std::process::id())
        );
    }

    #[test]
    fn owner_pid_rejects_foreign_names() {
        assert_eq!(owner_pid("vtb", "vtbx-1"), None);
        assert_eq!(owner_pid("vtb", "other123-1"), None);
        assert_eq!(owner_pid("vtb", "vtb123"), None);
        assert_eq!(owner_pid("vtb", "vtb77-dut"), Some(77));
    }

    #[test]
    fn run_dir_is_removed_on_drop_unless_kept() {
        let base = std::env::temp_dir().join(format!("vtb-unit-{}", std::process::id()));
        let d = RunDir::create_in(&base, RunId::new()).unwrap();
        let p = d.write("x.toml", "a = 1").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a = 1");
        let dir = d.path().to_path_buf();
        drop(d);
        assert!(!dir.exists());
        let mut k = RunDir::create_in(&base, RunId::new()).unwrap();
        k.keep();
        let kept = k.path().to_path_buf();
        drop(k);
        assert!(kept.exists());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
