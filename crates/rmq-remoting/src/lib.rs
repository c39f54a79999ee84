//! The transport under every rmq process: a tokio TCP server and client speaking RocketMQ's
//! remoting frames (see `rmq-protocol` for the bytes).
//!
//! Each connection has one reader task, which decodes frames and runs each request in a task
//! of its own (a held pull must not stall the connection), and one writer task, which owns the
//! socket's write half and sends replies in the order they are ready. Responses are matched to
//! requests by `opaque`; that works both ways, so a server can ask its clients (transaction
//! check-back) on the same connection. A reply may carry its body as file regions, which go out
//! with `sendfile` (zero copy) when the server was built with `transfer_by_heap = false`.
//!
//! TLS (rustls): a server given a [`tls::ServerTls`] in [`ServerConfig::tls`] accepts TLS
//! connections (and, in permissive mode, plain ones too: told apart by the first byte, 0x16
//! for a TLS handshake, which no frame can start with); a client calls [`connect_tls`] with a
//! [`tls::ClientTls`]. Over TLS file regions are copied through the TLS stream.
//!
//! A malformed or oversized frame closes only that connection, with one log line naming the
//! peer and the error. What one peer can make the process hold is bounded (`budget.rs`): a
//! peer that does not read its replies stops being read; idle connections and frames that
//! stall half-way are closed; a server at its connection limit closes its longest-idle
//! connection to admit a new one.
//!
//! | module | owns |
//! |---|---|
//! | `connection` | [`Connection`], [`Reply`], [`RequestHandler`], [`connect`] |
//! | `io` | the reader and writer tasks of a connection, [`LaterReply`] |
//! | `server` | [`serve`], [`serve_listeners`] (several ports, one table), [`ServerConfig`], the open-connection table |
//! | `budget` | [`ConnectionLimits`] and the per-connection accounting |
//! | `tls` | [`tls::ServerTls`] and [`tls::ClientTls`] from RocketMQ's `tls.*` settings (rustls) |

mod budget;
mod connection;
mod error;
mod io;
mod server;
pub mod tls;

pub use budget::ConnectionLimits;
pub use connection::{
    connect, connect_tls, BoxFuture, Connection, FileRegion, Reply, RequestHandler, RequestTimer,
};
pub use error::RemotingError;
pub use io::LaterReply;
pub use server::{serve, serve_listeners, ServerConfig, ServerHandle};
