//! TLS on the HA port: the master's acceptor under the broker's `tls.server.mode` (permissive:
//! TLS and plain slaves, told apart by the first byte; enforcing: TLS only), the slave's
//! connection with `tls.enable`. The rustls configurations are built by the broker
//! (`rmq_remoting::tls`, from the same `tls.*` keys as its remoting port) and handed in with
//! [`HaTls`].
//!
//! The HA threads use blocking sockets, and a master serves each slave with a reader and a
//! writer thread, so one TLS connection is shared by two threads ([`TlsDuplex`]): the reader
//! reads raw bytes from its own socket handle and feeds them in under the lock, the writer
//! encrypts under the lock and writes outside it (one writer at a time); neither waits on the
//! network while holding the connection. CommitLog bytes cannot go out with `sendfile` over
//! TLS: they are read from the file and encrypted.

use std::collections::HashMap;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{IpAddr, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The HA port's TLS (both `None`: plain, as before).
#[derive(Debug, Clone, Default)]
pub struct HaTls {
    /// The master's acceptor.
    pub server: Option<HaServerTls>,
    /// The slave's connection to its master.
    pub client: Option<Arc<rustls::ClientConfig>>,
}

/// The master's side.
#[derive(Debug, Clone)]
pub struct HaServerTls {
    /// `tls.server.mode = enforcing` (otherwise permissive: plain slaves are served too).
    pub enforcing: bool,
    /// The server configuration (certificate, client verification).
    pub config: Arc<rustls::ServerConfig>,
}

/// Plain slaves refused, by address: one log line per peer per minute.
#[derive(Default)]
pub(crate) struct Refusals(Mutex<HashMap<IpAddr, Instant>>);

impl Refusals {
    fn should_log(&self, peer: IpAddr) -> bool {
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        seen.retain(|_, at| now.duration_since(*at) < Duration::from_secs(60));
        seen.insert(peer, now).is_none()
    }
}

/// A TLS connection shared by a reader and a writer thread.
pub(crate) struct TlsDuplex {
    conn: Mutex<rustls::Connection>,
    /// The socket handle writes go through, held while writing (records stay whole).
    out: Mutex<TcpStream>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn tls_err(e: rustls::Error) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, e)
}

impl TlsDuplex {
    /// Complete the handshake on `sock` (blocking, bounded by its timeouts).
    fn handshake(mut conn: rustls::Connection, sock: &TcpStream) -> io::Result<Self> {
        let mut io = sock.try_clone()?;
        while conn.is_handshaking() {
            conn.complete_io(&mut io)?;
        }
        let d = Self {
            conn: Mutex::new(conn),
            out: Mutex::new(io),
        };
        d.send(&[])?;
        Ok(d)
    }

    /// A master's side of a slave that started a TLS handshake.
    fn accept(config: &Arc<rustls::ServerConfig>, sock: &TcpStream) -> io::Result<Self> {
        let conn = rustls::ServerConnection::new(Arc::clone(config)).map_err(tls_err)?;
        Self::handshake(conn.into(), sock)
    }

    /// A slave's connection to its master at `sock`'s peer.
    pub(crate) fn connect(
        config: &Arc<rustls::ClientConfig>,
        sock: &TcpStream,
    ) -> io::Result<Self> {
        let name = rustls::pki_types::ServerName::IpAddress(sock.peer_addr()?.ip().into());
        let conn = rustls::ClientConnection::new(Arc::clone(config), name).map_err(tls_err)?;
        Self::handshake(conn.into(), sock)
    }

    /// Decrypt `raw` (bytes just read from the socket), appending the plaintext to `plain`.
    /// With `raw` empty, takes only the plaintext rustls already holds: bytes the peer sent
    /// right behind its last handshake message arrive in the same read as that message.
    /// `Ok(false)` once the peer has closed the TLS session.
    pub(crate) fn receive(&self, mut raw: &[u8], plain: &mut Vec<u8>) -> io::Result<bool> {
        let mut open = true;
        {
            let mut conn = lock(&self.conn);
            loop {
                if !raw.is_empty() {
                    conn.read_tls(&mut raw)?;
                    conn.process_new_packets().map_err(tls_err)?;
                }
                let mut chunk = [0u8; 16 * 1024];
                loop {
                    match conn.reader().read(&mut chunk) {
                        Ok(0) => {
                            open = false;
                            break;
                        }
                        Ok(n) => plain.extend_from_slice(&chunk[..n]),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
                if raw.is_empty() {
                    break;
                }
            }
        }
        // A key update or alert may want an answer.
        self.send(&[])?;
        Ok(open)
    }

    /// Encrypt `parts` as one piece of the stream and write it.
    pub(crate) fn send(&self, parts: &[&[u8]]) -> io::Result<()> {
        let mut out = lock(&self.out);
        let mut records = Vec::new();
        {
            let mut conn = lock(&self.conn);
            for part in parts {
                let mut rest = *part;
                loop {
                    // rustls takes plaintext only while its records waiting to go out stay
                    // under its buffer limit (64 KiB): take those out until all fits.
                    let n = conn.writer().write(rest)?;
                    rest = &rest[n..];
                    let mut drained = false;
                    while conn.wants_write() {
                        conn.write_tls(&mut records)?;
                        drained = true;
                    }
                    if rest.is_empty() {
                        break;
                    }
                    if n == 0 && !drained {
                        return Err(io::Error::new(ErrorKind::WriteZero, "TLS took no bytes"));
                    }
                }
            }
            while conn.wants_write() {
                conn.write_tls(&mut records)?;
            }
        }
        out.write_all(&records)
    }
}

/// What a master makes of a new HA connection.
pub(crate) enum Accepted {
    /// A plain slave (permissive mode).
    Plain,
    /// A TLS session after the handshake.
    Tls(Box<TlsDuplex>),
    /// Closed: enforcing refuses plain slaves; failed handshakes.
    Refused,
}

/// Tell a TLS slave from a plain one by the first byte (0x16 starts a handshake; a slave's
/// first 8-byte offset report never does: offsets are below 2^56) and handshake.
pub(crate) fn accept(server: &HaServerTls, sock: &TcpStream, refusals: &Refusals) -> Accepted {
    const HANDSHAKE: u8 = 0x16;
    let Ok(peer) = sock.peer_addr() else {
        return Accepted::Refused;
    };
    let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = sock.set_write_timeout(Some(Duration::from_secs(10)));
    let mut first = [0u8; 1];
    if !matches!(sock.peek(&mut first), Ok(1)) {
        return Accepted::Refused;
    }
    if first[0] != HANDSHAKE {
        if !server.enforcing {
            return Accepted::Plain;
        }
        if refusals.should_log(peer.ip()) {
            log::warn!(
                "HA: closing plain connection from {peer}: tls.server.mode = enforcing \
                 accepts TLS only; set tls.enable = true on the slave (or \
                 tls.server.mode = permissive here)"
            );
        }
        return Accepted::Refused;
    }
    match TlsDuplex::accept(&server.config, sock) {
        Ok(d) => Accepted::Tls(Box::new(d)),
        Err(e) => {
            if refusals.should_log(peer.ip()) {
                log::warn!("HA: TLS handshake with slave {peer} failed, closing: {e}");
            }
            Accepted::Refused
        }
    }
}
