//! The Python logger name of a Rust log target: `rmq_broker::x` → `rmq::broker::x`.
//!
//! rmq-py's log bridge files every Rust record under the `rmq` Python logger with this mapping.
//! It lives here, outside rmq-py, so its test runs in `cargo test`: rmq-py is built as an
//! extension module (PYO3_BUILD_EXTENSION_MODULE, no libpython linked), so a test executable
//! of that crate cannot link, and rmq-py has no Rust tests of its own (`test = false`).

/// The Python logger name of a Rust log target, in `::` form (pyo3-log turns `::` into `.`):
/// `rmq_broker::x` → `rmq::broker::x`; `None` for targets outside the rmq crates.
#[must_use]
pub fn python_logger_name(target: &str) -> Option<String> {
    let rest = target.strip_prefix("rmq_")?;
    let (krate, path) = rest.split_once("::").unwrap_or((rest, ""));
    let mut out = String::with_capacity(target.len() + 2);
    out.push_str("rmq::");
    out.push_str(krate);
    if !path.is_empty() {
        out.push_str("::");
        out.push_str(path);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::python_logger_name;

    #[test]
    fn rmq_crates_map_under_the_rmq_logger() {
        assert_eq!(
            python_logger_name("rmq_broker::processor::pull_message").as_deref(),
            Some("rmq::broker::processor::pull_message")
        );
        assert_eq!(
            python_logger_name("rmq_remoting").as_deref(),
            Some("rmq::remoting")
        );
        assert_eq!(python_logger_name("tokio::runtime"), None);
    }
}
