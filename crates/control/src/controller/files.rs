//! The files the controller reads and writes for its clients, and where it may: the config file
//! a `reload` reads ([`Controller::reload_path`], [`read_config`]), the file `save` writes
//! atomically ([`Controller::save_path`], [`Controller::save`]) — both only in the directory of
//! the file the switch was started with — and the pcap file a `capture` creates inside the capture
//! directory ([`create_capture_file`]).

use super::{ControlError, Controller};
use crate::config::{Config, ParseError};
use crate::protocol::Saved;
use std::path::{Path, PathBuf};

/// Resolves `file` inside the capture directory `dir` (relative names inside it; absolute paths
/// only if inside it; no `..`) and creates it there on the calling (control) thread: exclusively
/// (`O_CREAT|O_EXCL`, so an existing file, symlink or FIFO in the way is refused and never
/// followed or opened), mode 0640, in a directory created 0750 if missing. Returns the new path
/// and the open file (which the capture's writer thread writes; the worker never opens it).
pub(crate) fn create_capture_file(
    dir: &Path,
    file: &str,
) -> Result<(PathBuf, std::fs::File), ControlError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let err = |reason: String| ControlError::CapturePath {
        value: file.to_string(),
        dir: dir.display().to_string(),
        reason,
    };
    let given = Path::new(file);
    if given
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(err("`..` is not accepted".into()));
    }
    let rel = if given.is_absolute() {
        given
            .strip_prefix(dir)
            .map_err(|_| err("an absolute path outside the capture directory".into()))?
    } else {
        given
    };
    if rel.as_os_str().is_empty() {
        return Err(err("names the capture directory itself, not a file".into()));
    }
    let path = dir.join(rel);
    let parent = path.parent().unwrap_or(dir);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o750)
        .create(parent)
        .map_err(|e| err(format!("cannot create directory {}: {e}", parent.display())))?;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o640)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .map_err(|e| {
            let why = if e.kind() == std::io::ErrorKind::AlreadyExists {
                "already exists (a capture never overwrites, follows a link or opens a special file)"
                    .to_string()
            } else {
                e.to_string()
            };
            err(format!("cannot create {}: {why}", path.display()))
        })?;
    Ok((path, f))
}

/// Reads the config file at `path` (resolved through links by [`Controller::reload_path`]) for
/// `reload`: opened without blocking or following a link (`O_NONBLOCK | O_NOFOLLOW`: a FIFO or a
/// link swapped in after `reload_path` looked cannot hang the control plane or lead elsewhere)
/// and read only if it is a regular file.
pub(super) fn read_config(path: &Path) -> Result<Config, ControlError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let read_err = |source| ParseError::Read {
        path: path.display().to_string(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(read_err)?;
    if !f.metadata().map_err(read_err)?.is_file() {
        return Err(read_err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ))
        .into());
    }
    let mut text = String::new();
    f.read_to_string(&mut text).map_err(read_err)?;
    Ok(Config::from_toml(&text, &path.display().to_string())?)
}

impl Controller {
    /// The file to reload: the one the switch runs from, or `path` if it is in the directory of
    /// the file the switch was started with (resolved through links: a link there pointing
    /// elsewhere is refused), so a control client cannot make the switch read arbitrary files.
    pub(super) fn reload_path(&self, path: Option<PathBuf>) -> Result<PathBuf, ControlError> {
        let Some(path) = path else {
            let p = self.config_path.clone().ok_or(ControlError::NoReloadPath)?;
            return Ok(std::fs::canonicalize(&p).unwrap_or(p));
        };
        let refused = |reason: &str| ControlError::ReloadPath {
            value: path.display().to_string(),
            reason: reason.to_string(),
            dir: self.allowed_dir(),
        };
        let Some(dir) = &self.reload_dir else {
            return Err(refused("the switch was not started from a file"));
        };
        let real = std::fs::canonicalize(&path)
            .map_err(|e| refused(&format!("cannot resolve it: {e}")))?;
        if real.parent() != Some(dir.as_path()) {
            return Err(refused(
                "not in the directory of the file the switch was started with",
            ));
        }
        if !std::fs::metadata(&real)
            .map(|m| m.is_file())
            .unwrap_or(false)
        {
            return Err(refused("not a regular file"));
        }
        Ok(real)
    }

    /// The directory `reload PATH` reads from and `save PATH` writes to, for messages.
    pub(super) fn allowed_dir(&self) -> String {
        self.reload_dir.as_ref().map_or_else(
            || "(none: not started from a file)".into(),
            |d| d.display().to_string(),
        )
    }

    /// Where `save` may write: the file the switch runs from (resolved through links: the real
    /// file), or a file directly in the directory of the file the switch was started with — the
    /// same directory `reload PATH` reads from — that is not a symlink or a special file. Every
    /// refusal names `path`, the value and what is accepted.
    fn save_path(&self, path: Option<PathBuf>) -> Result<PathBuf, ControlError> {
        let given = match path {
            Some(p) => p,
            None => {
                let p = self.config_path.clone().ok_or(ControlError::NoSavePath)?;
                std::fs::canonicalize(&p).unwrap_or(p)
            }
        };
        let refused = |reason: &str| ControlError::SavePath {
            value: given.display().to_string(),
            reason: reason.to_string(),
            dir: self.allowed_dir(),
        };
        let Some(dir) = &self.reload_dir else {
            return Err(refused("the switch was not started from a file"));
        };
        if !given.is_absolute() {
            return Err(refused(
                "a relative path (the switch has no directory of yours)",
            ));
        }
        let Some(name) = given.file_name() else {
            return Err(refused("names no file"));
        };
        let parent = given.parent().unwrap_or(Path::new("/"));
        let real_parent = std::fs::canonicalize(parent)
            .map_err(|e| refused(&format!("cannot resolve its directory: {e}")))?;
        if real_parent != *dir {
            return Err(refused(
                "not in the directory of the file the switch was started with",
            ));
        }
        let target = dir.join(name);
        match std::fs::symlink_metadata(&target) {
            Ok(m) if m.file_type().is_symlink() => Err(refused(
                "a symbolic link (save never follows or replaces a link)",
            )),
            Ok(m) if !m.is_file() => Err(refused("not a regular file")),
            Ok(_) => Ok(target),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(target),
            Err(e) => Err(refused(&e.to_string())),
        }
    }

    /// Writes the running config as TOML to `path`, or to the file the switch runs from (only
    /// where [`Controller::save_path`] allows), through a temporary file created exclusively in
    /// the same directory (never following a link; mode of the file it replaces, else 0640) and
    /// renamed over it: a reader sees the old file or the new one, never half of one. Returns the
    /// path and the size written.
    pub fn save(&self, path: Option<PathBuf>) -> Result<Saved, ControlError> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let path = self.save_path(path)?;
        let text = self.running.to_toml();
        let err = |source| ControlError::Save {
            path: path.display().to_string(),
            source,
        };
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(path.file_name().expect("save_path names a file"));
        tmp_name.push(format!(".tmp.{}", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        let mode = std::fs::metadata(&path).map_or(0o640, |m| m.permissions().mode() & 0o7777);
        let mut created = false;
        let mut write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)?;
            created = true;
            f.set_permissions(std::fs::Permissions::from_mode(mode))?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        if let Err(e) = write() {
            if created {
                let _ = std::fs::remove_file(&tmp);
            }
            return Err(err(e));
        }
        Ok(Saved {
            path: path.display().to_string(),
            bytes: text.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    mod capture_path {
        use super::super::{create_capture_file, ControlError};
        use crate::controller::tests::{scratch_dir as dir, Rm};

        fn refused(d: &Rm, file: &str) -> String {
            match create_capture_file(&d.0.join("cap"), file) {
                Err(e @ ControlError::CapturePath { .. }) => e.to_string(),
                other => panic!("{file:?} not refused: {other:?}"),
            }
        }

        #[test]
        fn inside_the_directory_only_created_exclusively_never_following() {
            let d = dir("path");
            let cap = d.0.join("cap");
            // Relative names land inside (directories created); absolute ones inside are accepted.
            let (p, _) = create_capture_file(&cap, "a.pcap").unwrap();
            assert_eq!(p, cap.join("a.pcap"));
            assert!(std::fs::metadata(&p).unwrap().is_file());
            let abs = cap.join("sub/b.pcap");
            assert_eq!(
                create_capture_file(&cap, abs.to_str().unwrap()).unwrap().0,
                abs
            );
            // Outside: refused naming field, value and what is accepted.
            let e = refused(&d, "/etc/passwd");
            assert!(
                e.contains("file = \"/etc/passwd\"") && e.contains("outside the capture directory"),
                "{e}"
            );
            assert!(e.contains("capture_dir"), "{e}");
            assert!(refused(&d, "../x.pcap").contains("`..`"));
            assert!(refused(&d, "sub/../../x.pcap").contains("`..`"));
            assert!(!d.0.join("x.pcap").exists());
            // Existing file: not truncated.
            std::fs::write(cap.join("keep.pcap"), b"data").unwrap();
            assert!(refused(&d, "keep.pcap").contains("already exists"));
            assert_eq!(std::fs::read(cap.join("keep.pcap")).unwrap(), b"data");
            // A symlink in the way (to a file outside) is not followed.
            let target = d.0.join("victim");
            std::fs::write(&target, b"victim").unwrap();
            std::os::unix::fs::symlink(&target, cap.join("link.pcap")).unwrap();
            assert!(refused(&d, "link.pcap").contains("already exists"));
            assert_eq!(std::fs::read(&target).unwrap(), b"victim");
            // A FIFO in the way is not opened (opening it would block).
            let fifo = cap.join("fifo.pcap");
            let st = std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .expect("mkfifo (coreutils)");
            assert!(st.success());
            assert!(refused(&d, "fifo.pcap").contains("already exists"));
        }
    }
}
