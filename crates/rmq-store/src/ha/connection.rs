//! The master's side of one slave (RocketMQ's `HAConnection`): a reader thread takes the
//! slave's 8-byte offset reports (the first is where to start, later ones are acks that
//! release SYNC_MASTER waiters), a writer thread streams CommitLog frames from there with
//! `sendfile`, or an empty frame after `haSendHeartbeatInterval` idle. Over TLS (see
//! [`super::tls`]) both go through one shared TLS connection and the CommitLog bytes are read
//! and encrypted instead of sent with `sendfile`.
//!
//! Bad input is refused with one log line naming the peer and the fix, and the connection is
//! closed: a negative offset or one past this master's CommitLog (garbage, or a slave that is
//! ahead: it must be truncated, see `truncate_commit_log`), or an offset before the oldest
//! byte this master still has (the slave must be re-seeded).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use rmq_common::time::now_millis;

use super::tls::TlsDuplex;
use super::{close_socket, FRAME_HEADER_SIZE};
use crate::error::{IoContext, Result};
use crate::flush::Waker;
use crate::store::MessageStore;

/// One connected slave.
pub struct HaConnection {
    stream: TcpStream,
    /// The TLS session over `stream`, when the slave connected with TLS.
    tls: Option<TlsDuplex>,
    /// The slave's address.
    pub addr: SocketAddr,
    /// Where the slave asked to start (-1 until its first report).
    request_offset: AtomicI64,
    /// The slave's last reported offset.
    ack_offset: AtomicI64,
    /// The next byte to send.
    next_transfer: AtomicI64,
    closed: AtomicBool,
    waker: Waker,
    /// Body bytes sent: total, and per-second figures.
    sent_total: AtomicU64,
    rate: super::client::Rate,
}

/// What the runtime info shows of one slave.
#[derive(Debug, Clone)]
pub struct HaConnectionInfo {
    /// The slave's address.
    pub addr: String,
    /// Its last acknowledged offset.
    pub slave_ack_offset: i64,
    /// Master max offset minus that.
    pub diff: i64,
    /// Whether `diff` is below `haMaxGapNotInSync`.
    pub in_sync: bool,
    /// Bytes sent in the last second.
    pub transferred_byte_in_second: i64,
    /// The next offset to send.
    pub transfer_from_where: i64,
    /// Body bytes sent since the slave connected.
    pub transferred_total: u64,
}

impl HaConnection {
    /// Serve the slave on `stream` (over `tls` when it connected with TLS): register it and
    /// start its two threads.
    pub(crate) fn start(
        store: &Arc<MessageStore>,
        stream: TcpStream,
        tls: Option<TlsDuplex>,
    ) -> Result<()> {
        let addr = stream
            .peer_addr()
            .ctx(|| "reading a slave's address".into())?;
        let _ = stream.set_nodelay(true);
        let c = Arc::new(Self {
            stream,
            tls,
            addr,
            request_offset: AtomicI64::new(-1),
            ack_offset: AtomicI64::new(-1),
            next_transfer: AtomicI64::new(-1),
            closed: AtomicBool::new(false),
            waker: Waker::default(),
            sent_total: AtomicU64::new(0),
            rate: super::client::Rate::default(),
        });
        let reader = c.stream.try_clone().ctx(|| "cloning an HA socket".into())?;
        store
            .ha()
            .connections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Arc::clone(&c));
        let how = if c.tls.is_some() { " over TLS" } else { "" };
        log::info!("HA: slave {addr} connected{how}");
        let (c1, s1) = (Arc::clone(&c), Arc::downgrade(store));
        let (c2, s2) = (Arc::clone(&c), Arc::downgrade(store));
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .ctx(|| format!("starting thread {name}"))
        };
        let r = spawn(
            "rmq-ha-read",
            Box::new(move || {
                c1.read_loop(reader, &s1);
                c1.finish(&s1);
            }),
        );
        let w = spawn(
            "rmq-ha-write",
            Box::new(move || {
                c2.write_loop(&s2);
                c2.finish(&s2);
            }),
        );
        if let Err(e) = r.and(w) {
            c.finish(&Arc::downgrade(store));
            return Err(e);
        }
        Ok(())
    }

    /// Close the connection (both threads end).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        close_socket(&self.stream);
        self.waker.wake();
    }

    /// Wake the writer (new data for a waiting SYNC_MASTER put).
    pub(crate) fn wake(&self) {
        self.waker.wake();
    }

    fn finish(&self, store: &Weak<MessageStore>) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            log::info!("HA: connection of slave {} closed", self.addr);
        }
        close_socket(&self.stream);
        self.waker.wake();
        if let Some(s) = store.upgrade() {
            s.ha().remove_connection(self);
        }
    }

    /// This slave's figures against the master's `max` offset.
    #[must_use]
    pub fn info(&self, max: i64, max_gap: i64) -> HaConnectionInfo {
        let ack = self.ack_offset.load(Ordering::Acquire);
        let diff = max - ack.max(0);
        HaConnectionInfo {
            addr: self.addr.to_string(),
            slave_ack_offset: ack,
            diff,
            in_sync: ack >= 0 && diff < max_gap,
            transferred_byte_in_second: self.rate.per_second(),
            transfer_from_where: self.next_transfer.load(Ordering::Acquire),
            transferred_total: self.sent_total.load(Ordering::Relaxed),
        }
    }

    fn refuse(&self, what: &str) {
        log::error!("HA: slave {} {what}; closing its connection", self.addr);
        self.close();
    }

    fn read_loop(&self, mut s: TcpStream, store: &Weak<MessageStore>) {
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        let mut raw = [0u8; 8 * 1024];
        // Report bytes not yet a whole 8-byte offset (plaintext over TLS).
        let mut pending: Vec<u8> = Vec::with_capacity(64);
        // A TLS slave's first report often comes in one read with its last handshake message.
        if self.tls.is_some() {
            let Some(st) = store.upgrade() else { return };
            if !self.on_bytes(&st, &[], &mut pending) {
                return;
            }
        }
        let mut last_read = Instant::now();
        while !self.closed.load(Ordering::Acquire) {
            let Some(st) = store.upgrade() else { return };
            let housekeeping = st.ha().settings.housekeeping;
            match s.read(&mut raw) {
                Ok(0) => return,
                Ok(n) => {
                    last_read = Instant::now();
                    if !self.on_bytes(&st, &raw[..n], &mut pending) {
                        return;
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return,
            }
            if last_read.elapsed() > housekeeping {
                log::warn!(
                    "HA: slave {} silent for {} ms (haHousekeepingInterval); dropping it",
                    self.addr,
                    last_read.elapsed().as_millis()
                );
                return;
            }
        }
    }

    /// Bytes read from the slave (decrypted first over TLS): act on the last whole report in
    /// `pending`. False when the connection must close.
    fn on_bytes(&self, st: &MessageStore, raw: &[u8], pending: &mut Vec<u8>) -> bool {
        match &self.tls {
            None => pending.extend_from_slice(raw),
            Some(t) => match t.receive(raw, pending) {
                Ok(true) => {}
                Ok(false) => return false,
                Err(e) => {
                    log::warn!("HA: TLS from slave {} failed: {e}", self.addr);
                    return false;
                }
            },
        }
        let whole = pending.len() - pending.len() % 8;
        if whole == 0 {
            return true;
        }
        let last = i64::from_be_bytes(pending[whole - 8..whole].try_into().unwrap_or([0; 8]));
        pending.drain(..whole);
        self.on_report(st, last)
    }

    /// One offset report; false when the connection must close.
    fn on_report(&self, st: &MessageStore, offset: i64) -> bool {
        let max = st.get_max_phy_offset();
        if offset < 0 || offset > max {
            self.refuse(&format!(
                "reported CommitLog offset {offset}, but this master's CommitLog ends at \
                 {max}: it is not a RocketMQ slave, or its CommitLog is ahead of this \
                 master's (truncate the slave's CommitLog to at most {max} before it rejoins)"
            ));
            return false;
        }
        if self.request_offset.load(Ordering::Acquire) < 0 {
            let min = st.get_min_phy_offset();
            if offset != 0 && offset < min {
                self.refuse(&format!(
                    "asked for CommitLog offset {offset}, but this master keeps data only from \
                     {min}: re-seed the slave (empty its store directory) and restart it"
                ));
                return false;
            }
            log::info!("HA: slave {} requests data from offset {offset}", self.addr);
            self.request_offset.store(offset, Ordering::Release);
            self.waker.wake();
        }
        self.ack_offset.store(offset, Ordering::Release);
        st.ha().transfer.notify(offset);
        true
    }

    fn write_loop(&self, store: &Weak<MessageStore>) {
        let mut s = &self.stream;
        let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
        let mut last_write = Instant::now();
        while !self.closed.load(Ordering::Acquire) {
            let Some(st) = store.upgrade() else { return };
            let req = self.request_offset.load(Ordering::Acquire);
            if req < 0 {
                drop(st);
                self.waker.wait(Duration::from_millis(10));
                continue;
            }
            let settings = &st.ha().settings;
            let mut next = self.next_transfer.load(Ordering::Acquire);
            if next < 0 {
                next = if req == 0 {
                    let max = st.get_max_phy_offset();
                    (max - max % settings.file_size).max(0)
                } else {
                    req
                };
                log::info!("HA: sending slave {} data from offset {next}", self.addr);
                self.next_transfer.store(next, Ordering::Release);
            }
            let sent = match st.commit_log_region(next, settings.batch) {
                Some((file, pos, len)) => {
                    let header = frame_header(next, len);
                    // The bytes go from the file with `sendfile` when it holds them; from the
                    // mapping otherwise (the append window's, see `mmap::segment`) and over TLS.
                    let ok = match (&self.tls, file.read(pos, len)) {
                        (None, _) if file.on_file(pos, len) => {
                            send_header_more(&self.stream, &header).is_ok()
                                && send_region(&self.stream, file.file(), pos as u64, len).is_ok()
                        }
                        (None, Some(bytes)) => send_all(&self.stream, &[&header, bytes]).is_ok(),
                        (Some(t), Some(bytes)) => t.send(&[&header, bytes]).is_ok(),
                        (_, None) => false,
                    };
                    if !ok {
                        return;
                    }
                    self.sent_total.fetch_add(len as u64, Ordering::Relaxed);
                    self.rate.add(len as u64, now_millis());
                    self.next_transfer.store(
                        next + i64::try_from(len).unwrap_or(i64::MAX),
                        Ordering::Release,
                    );
                    true
                }
                None => false,
            };
            if sent {
                last_write = Instant::now();
                continue;
            }
            if last_write.elapsed() > settings.heartbeat {
                let beat = frame_header(next, 0);
                let sent = match &self.tls {
                    None => s.write_all(&beat),
                    Some(t) => t.send(&[&beat]),
                };
                if sent.is_err() {
                    return;
                }
                last_write = Instant::now();
            }
            drop(st);
            self.waker.wait(Duration::from_millis(10));
        }
    }
}

/// The 12-byte header of a master frame.
#[must_use]
pub fn frame_header(offset: i64, len: usize) -> [u8; FRAME_HEADER_SIZE] {
    let mut h = [0u8; FRAME_HEADER_SIZE];
    h[..8].copy_from_slice(&offset.to_be_bytes());
    h[8..].copy_from_slice(&i32::try_from(len).unwrap_or(i32::MAX).to_be_bytes());
    h
}

/// Send `len` bytes of `file` from `pos` with `sendfile(2)`: page cache to socket, no copy
/// through user space.
fn send_region(
    sock: &TcpStream,
    file: &std::fs::File,
    mut pos: u64,
    len: usize,
) -> std::io::Result<()> {
    let end = pos + len as u64;
    while pos < end {
        let left = usize::try_from(end - pos).unwrap_or(usize::MAX);
        match rustix::fs::sendfile(sock, file, Some(&mut pos), left) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    ErrorKind::WriteZero,
                    "sendfile sent nothing",
                ))
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Send every byte of `parts`, in order, on the blocking socket.
fn send_all(sock: &TcpStream, parts: &[&[u8]]) -> std::io::Result<()> {
    use std::io::Write;
    let mut slices: Vec<std::io::IoSlice<'_>> =
        parts.iter().map(|p| std::io::IoSlice::new(p)).collect();
    let mut s = &mut slices[..];
    let mut w: &TcpStream = sock;
    while !s.is_empty() {
        match w.write_vectored(s) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    ErrorKind::WriteZero,
                    "the socket accepted no bytes",
                ))
            }
            Ok(n) => std::io::IoSlice::advance_slices(&mut s, n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Send a frame header with `MSG_MORE`, so it leaves in one segment with the body that
/// `sendfile` sends next (the socket has `TCP_NODELAY`, as RocketMQ's).
fn send_header_more(sock: &TcpStream, header: &[u8]) -> std::io::Result<()> {
    let mut at = 0;
    while at < header.len() {
        match rustix::net::send(sock, &header[at..], rustix::net::SendFlags::MORE) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    ErrorKind::WriteZero,
                    "send sent nothing",
                ))
            }
            Ok(n) => at += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
