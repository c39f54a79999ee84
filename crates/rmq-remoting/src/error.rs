//! Errors of the transport.

use std::io;

/// What can go wrong moving frames.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemotingError {
    /// Socket I/O.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The TLS handshake failed (untrusted certificate, the server does not speak TLS, ...).
    #[error(
        "TLS handshake with {peer} failed: {source} (does the server run TLS, and is its \
         certificate signed by the CA you trust?)"
    )]
    Handshake {
        /// The peer.
        peer: String,
        /// rustls' complaint.
        #[source]
        source: io::Error,
    },
    /// The peer sent bytes that are not a valid frame.
    #[error("malformed frame from {peer}: {source}")]
    Protocol {
        /// The peer.
        peer: String,
        /// The codec's complaint.
        #[source]
        source: rmq_protocol::ProtocolError,
    },
    /// No response within the deadline.
    #[error("no response from {peer} to request code {code} within {timeout_ms} ms")]
    Timeout {
        /// The peer.
        peer: String,
        /// Request code.
        code: i32,
        /// The deadline.
        timeout_ms: u128,
    },
    /// The connection closed before the response came.
    #[error("connection to {peer} closed{}", if .detail.is_empty() { String::new() } else { format!(": {}", .detail) })]
    Closed {
        /// The peer.
        peer: String,
        /// Why, when known.
        detail: String,
    },
    /// Too much of this side's own traffic already waits for a peer that is not reading.
    #[error(
        "{queued_bytes} bytes of requests already wait to be sent to {peer}, which is not \
         reading them; retry later or check that peer"
    )]
    Backlog {
        /// The peer.
        peer: String,
        /// Bytes already queued.
        queued_bytes: usize,
    },
}
