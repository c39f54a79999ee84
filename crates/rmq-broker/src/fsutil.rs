//! Safe config-file writes (RocketMQ's `MixAll.string2File`, made durable) and reads that
//! fall back to the `.bak` copy.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::BrokerError;

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn io<'a>(
    context: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> BrokerError + 'a {
    move |source| BrokerError::Io {
        context,
        path: path.to_path_buf(),
        source,
    }
}

/// Write `data` to `path`: a `.tmp` file, fsynced, the old file kept as `.bak`, then an
/// atomic rename and a directory fsync. A crash leaves the old or the new file, never a torn one.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> Result<(), BrokerError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    fs::create_dir_all(dir).map_err(io("creating config directory", dir))?;
    let tmp = with_suffix(path, ".tmp");
    {
        let mut f = fs::File::create(&tmp).map_err(io("creating", &tmp))?;
        f.write_all(data).map_err(io("writing", &tmp))?;
        f.sync_all().map_err(io("syncing", &tmp))?;
    }
    if path.exists() {
        let bak = with_suffix(path, ".bak");
        fs::copy(path, &bak).map_err(io("backing up to", &bak))?;
    }
    fs::rename(&tmp, path).map_err(io("renaming into", path))?;
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Read and parse `path`, or its `.bak` when `path` is missing or unreadable as `T`.
/// `Ok(None)` when neither exists.
pub(crate) fn load_json<T>(path: &Path) -> Result<Option<T>, BrokerError>
where
    T: serde::de::DeserializeOwned,
{
    let parse = |p: &Path| -> Result<Option<T>, BrokerError> {
        match fs::read(p) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(None),
            Ok(bytes) => rmq_protocol::json_compat::from_slice(&bytes)
                .map(Some)
                .map_err(|reason| BrokerError::BadFile {
                    path: p.to_path_buf(),
                    reason,
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io("reading", p)(e)),
        }
    };
    match parse(path) {
        Ok(Some(v)) => Ok(Some(v)),
        first => {
            let bak = with_suffix(path, ".bak");
            match parse(&bak) {
                Ok(Some(v)) => {
                    log::warn!(
                        "{} missing or unreadable, loaded {}",
                        path.display(),
                        bak.display()
                    );
                    Ok(Some(v))
                }
                _ => first,
            }
        }
    }
}
