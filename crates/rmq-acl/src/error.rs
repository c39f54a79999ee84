//! Errors of this crate: an ACL file that cannot be read or is wrong, and a failed edit.

use std::path::PathBuf;

/// What went wrong with plain_acl.yml.
#[derive(Debug, thiserror::Error)]
pub enum AclError {
    /// The file cannot be read.
    #[error("cannot read the ACL file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid YAML or a key has a bad value.
    #[error("{}", file_error(.path, *.line, .key, .message))]
    File {
        /// The file.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// The key path (`accounts[0].secretKey`), empty for the document itself.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// An ACL admin request asked for something the file cannot take.
    #[error("{0}")]
    Refused(String),
    /// The new file could not be written.
    #[error("cannot write the ACL file {path}: {reason}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

fn file_error(path: &std::path::Path, line: Option<usize>, key: &str, message: &str) -> String {
    let at = line.map_or(String::new(), |l| format!(":{l}"));
    let key = if key.is_empty() {
        String::new()
    } else {
        format!(": key {key}")
    };
    format!("bad ACL file {}{at}{key}: {message}", path.display())
}
