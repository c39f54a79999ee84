//! The one way rmq replaces a small file it persists (RocketMQ's `MixAll.string2File`, made
//! durable and safe on a full disk): `topics.json`, `consumerOffset.json`,
//! `subscriptionGroup.json` (rmq-broker), the timer checkpoint (here), and through
//! `rmq._rmq.write_file_atomic` every file Python persists (`delayOffset.json`, a broadcasting
//! consumer's `offsets.json`, the broker config, Spark's commit records).
//!
//! The new content goes to `<name>.tmp`, is synced, the old file is kept as `<name>.bak` (a
//! hard link: no space needed), and the temp file is renamed over the name, then the
//! directory is synced. A crash leaves the old or the new file, never a torn one; a failed
//! write (ENOSPC) removes the temp file and leaves the old file as it was, and the error
//! names the file and the step that failed.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// What [`write_file_atomic`] does besides the replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicWrite {
    /// Keep the previous version as `<name>.bak`.
    pub backup: bool,
    /// Sync the file before the rename and the directory after it (durable when it returns).
    pub sync: bool,
}

/// A failed [`write_file_atomic`]: the step and the file it failed on.
#[derive(Debug, thiserror::Error)]
#[error("{step} {}: {source}", path.display())]
pub struct FileWriteError {
    /// What was being done ("writing", "renaming into", ...).
    pub step: &'static str,
    /// The file it was done to.
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

/// `path` with `suffix` appended to its name.
#[must_use]
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Writers of one process take turns: they share the `.tmp` name of a file.
static WRITING: Mutex<()> = Mutex::new(());

/// Replace `path` with `data` atomically (see the module doc).
///
/// # Errors
/// The step that failed and its file; `path` is unchanged then and no temp file is left.
pub fn write_file_atomic(path: &Path, data: &[u8], how: AtomicWrite) -> Result<(), FileWriteError> {
    let _turn = WRITING.lock().unwrap_or_else(PoisonError::into_inner);
    let err = |step, p: &Path| {
        let p = p.to_path_buf();
        move |source| FileWriteError {
            step,
            path: p,
            source,
        }
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).map_err(err("creating the directory", dir))?;
    let tmp = with_suffix(path, ".tmp");
    let written = write_tmp(&tmp, path, data, how.sync);
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if how.backup && path.exists() {
        if let Err(e) = keep_backup(path) {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(err("renaming into", path)(e));
    }
    if how.sync {
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(err("syncing the directory", dir))?;
    }
    Ok(())
}

fn write_tmp(tmp: &Path, target: &Path, data: &[u8], sync: bool) -> Result<(), FileWriteError> {
    let err = |step| {
        let p = tmp.to_path_buf();
        move |source| FileWriteError {
            step,
            path: p,
            source,
        }
    };
    let mut f = fs::File::create(tmp).map_err(err("creating"))?;
    if let Ok(m) = fs::metadata(target) {
        // The new version keeps the old one's permissions (an operator's chmod of a config
        // file survives a rewrite).
        f.set_permissions(m.permissions())
            .map_err(err("setting the permissions of"))?;
    }
    f.write_all(data).map_err(err("writing"))?;
    if sync {
        f.sync_all().map_err(err("syncing"))?;
    }
    Ok(())
}

/// `path`'s current version as `<path>.bak`: a hard link made under a temp name and renamed,
/// or a copy where links are not supported.
fn keep_backup(path: &Path) -> Result<(), FileWriteError> {
    let bak = with_suffix(path, ".bak");
    let bak_tmp = with_suffix(path, ".bak.tmp");
    let _ = fs::remove_file(&bak_tmp);
    let made = fs::hard_link(path, &bak_tmp).or_else(|_| fs::copy(path, &bak_tmp).map(|_| ()));
    let done = made
        .map_err(|source| FileWriteError {
            step: "backing up to",
            path: bak.clone(),
            source,
        })
        .and_then(|()| {
            fs::rename(&bak_tmp, &bak).map_err(|source| FileWriteError {
                step: "backing up to",
                path: bak.clone(),
                source,
            })
        });
    if done.is_err() {
        let _ = fs::remove_file(&bak_tmp);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: AtomicWrite = AtomicWrite {
        backup: true,
        sync: true,
    };

    #[test]
    fn replaces_keeps_a_backup_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/topics.json");
        write_file_atomic(&p, b"one", BOTH).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
        assert!(!with_suffix(&p, ".bak").exists(), "nothing to back up yet");
        write_file_atomic(&p, b"two", BOTH).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read(with_suffix(&p, ".bak")).unwrap(), b"one");
        let names: Vec<_> = fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        write_file_atomic(&p, b"old", BOTH).unwrap();
        // The temp name taken by a directory: creating it fails.
        fs::create_dir(with_suffix(&p, ".tmp")).unwrap();
        let e = write_file_atomic(&p, b"new", BOTH).unwrap_err();
        assert!(e.to_string().contains("x.json.tmp"), "{e}");
        assert_eq!(fs::read(&p).unwrap(), b"old");
    }
}
