//! Safe config-file writes (RocketMQ's `MixAll.string2File`, made durable) and reads that
//! fall back to the `.bak` copy.

use std::fs;
use std::path::Path;

use crate::error::BrokerError;

use rmq_store::atomic_file::{with_suffix, write_file_atomic, AtomicWrite};

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

/// Write `data` to `path` with the store's one atomic replacement
/// ([`rmq_store::atomic_file`]): the old file kept as `.bak`, synced. A crash leaves the old or
/// the new file, never a torn one; a failure (a full disk) leaves the old file and no temp file.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> Result<(), BrokerError> {
    write_file_atomic(
        path,
        data,
        AtomicWrite {
            backup: true,
            sync: true,
        },
    )
    .map_err(|e| BrokerError::Io {
        context: e.step,
        path: e.path,
        source: e.source,
    })
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
