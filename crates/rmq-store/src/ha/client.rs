//! The slave's side (RocketMQ's `HAClient`): one thread connects to the master's HA address,
//! reports this CommitLog's max offset (at connect, after each batch it appended, and every
//! `haSendHeartbeatInterval` ms), and appends each frame at its offset. A frame whose offset is
//! not where this CommitLog ends (when it is not empty) closes the connection before anything
//! is written, as does a malformed one; the thread reconnects with a backoff (0.2 s doubling
//! to 5 s). A master silent for `haHousekeepingInterval` ms is dropped the same way. With
//! [`super::HaTls::client`] set (the broker's `tls.enable`) the connection runs TLS.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rmq_common::time::now_millis;

use super::tls::TlsDuplex;
use super::{close_socket, HaService, FRAME_HEADER_SIZE};
use crate::error::{IoContext, Result};
use crate::flush::Waker;
use crate::store::MessageStore;

/// Bytes per second, counted by one thread and read by any.
#[derive(Default)]
pub struct Rate {
    sec: AtomicI64,
    cur: AtomicU64,
    last: AtomicU64,
}

impl Rate {
    pub(crate) fn add(&self, n: u64, now_ms: i64) {
        let s = now_ms / 1000;
        let sec = self.sec.load(Ordering::Relaxed);
        if sec != s {
            let prev = if sec == s - 1 {
                self.cur.load(Ordering::Relaxed)
            } else {
                0
            };
            self.last.store(prev, Ordering::Relaxed);
            self.cur.store(0, Ordering::Relaxed);
            self.sec.store(s, Ordering::Relaxed);
        }
        self.cur.fetch_add(n, Ordering::Relaxed);
    }

    /// Bytes in the last whole second.
    pub(crate) fn per_second(&self) -> i64 {
        let now = now_millis() / 1000;
        let v = match self.sec.load(Ordering::Relaxed) {
            s if s == now => self.last.load(Ordering::Relaxed),
            s if s == now - 1 => self.cur.load(Ordering::Relaxed),
            _ => 0,
        };
        i64::try_from(v).unwrap_or(i64::MAX)
    }
}

/// What the slave's client shows (Apache 5.x's `HAClientRuntimeInfo`, plus a byte total).
#[derive(Debug, Clone)]
pub struct HaClientInfo {
    /// The master's HA address followed.
    pub master_addr: String,
    /// Bytes received in the last second.
    pub transferred_byte_in_second: i64,
    /// This CommitLog's max offset.
    pub max_offset: i64,
    /// Last read from the master (ms since the epoch; 0: never).
    pub last_read_timestamp: i64,
    /// Last report to the master.
    pub last_write_timestamp: i64,
    /// Whether connected to the master now.
    pub is_activated: bool,
    /// Bytes received since the client started (frames and headers).
    pub received_total: u64,
}

struct State {
    addr: Mutex<String>,
    generation: AtomicU64,
    stop: AtomicBool,
    waker: Waker,
    active: AtomicBool,
    last_read: AtomicI64,
    last_write: AtomicI64,
    received: AtomicU64,
    rate: Rate,
}

/// A running client.
pub struct HaClient {
    state: Arc<State>,
    thread: Option<JoinHandle<()>>,
}

impl HaClient {
    /// Its figures; `max_offset` is this CommitLog's.
    #[must_use]
    pub fn info(&self, max_offset: i64) -> HaClientInfo {
        let s = &self.state;
        HaClientInfo {
            master_addr: s
                .addr
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            transferred_byte_in_second: s.rate.per_second(),
            max_offset,
            last_read_timestamp: s.last_read.load(Ordering::Relaxed),
            last_write_timestamp: s.last_write.load(Ordering::Relaxed),
            is_activated: s.active.load(Ordering::Acquire),
            received_total: s.received.load(Ordering::Relaxed),
        }
    }
}

/// Follow the master at `addr` ("" stops following); the same address again is a no-op.
pub(crate) fn update_master_address(
    ha: &HaService,
    store: &Arc<MessageStore>,
    addr: &str,
) -> Result<()> {
    if addr.is_empty() {
        stop(ha);
        return Ok(());
    }
    let mut slot = ha.client.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(c) = slot.as_ref() {
        let mut cur = c.state.addr.lock().unwrap_or_else(PoisonError::into_inner);
        if *cur != addr {
            log::info!("HA: master address changes from {cur} to {addr}");
            addr.clone_into(&mut cur);
            c.state.generation.fetch_add(1, Ordering::AcqRel);
            c.state.waker.wake();
        }
        return Ok(());
    }
    let state = Arc::new(State {
        addr: Mutex::new(addr.to_owned()),
        generation: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        waker: Waker::default(),
        active: AtomicBool::new(false),
        last_read: AtomicI64::new(0),
        last_write: AtomicI64::new(0),
        received: AtomicU64::new(0),
        rate: Rate::default(),
    });
    let (st, weak) = (Arc::clone(&state), Arc::downgrade(store));
    let thread = std::thread::Builder::new()
        .name("rmq-ha-client".into())
        .spawn(move || run(&st, &weak))
        .ctx(|| "starting thread rmq-ha-client".into())?;
    log::info!("HA: following the master at {addr}");
    *slot = Some(HaClient {
        state,
        thread: Some(thread),
    });
    Ok(())
}

/// Stop following (and wait for the thread).
pub(crate) fn stop(ha: &HaService) {
    let c = ha
        .client
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(mut c) = c {
        c.state.stop.store(true, Ordering::Release);
        c.state.waker.wake();
        if let Some(t) = c.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(st: &State, store: &Weak<MessageStore>) {
    let mut backoff = Duration::from_millis(200);
    let mut failures = 0u32;
    while !st.stop.load(Ordering::Acquire) {
        let addr = st
            .addr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let generation = st.generation.load(Ordering::Acquire);
        let tls = store.upgrade().and_then(|s| s.ha().tls.client.clone());
        match connect(&addr, tls.as_ref()) {
            Ok((s, duplex)) => {
                backoff = Duration::from_millis(200);
                failures = 0;
                st.active.store(true, Ordering::Release);
                let why = session(st, store, &s, duplex.as_ref(), generation);
                st.active.store(false, Ordering::Release);
                close_socket(&s);
                if let Some(why) = why {
                    log::warn!("HA: connection to master {addr} closed: {why}; reconnecting");
                }
            }
            Err(e) => {
                failures += 1;
                if failures == 1 || failures.is_multiple_of(60) {
                    log::warn!(
                        "HA: cannot connect to master {addr} ({e}); retrying (check the \
                         master runs and haMasterAddress / its haListenPort)"
                    );
                }
                st.waker.wait(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
        if store.strong_count() == 0 {
            return;
        }
    }
}

fn connect(
    addr: &str,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> std::io::Result<(TcpStream, Option<TlsDuplex>)> {
    let sa = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::new(ErrorKind::InvalidInput, "no address"))?;
    let s = TcpStream::connect_timeout(&sa, Duration::from_secs(3))?;
    s.set_nodelay(true)?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    let duplex = match tls {
        None => None,
        Some(config) => {
            s.set_read_timeout(Some(Duration::from_secs(10)))?;
            let d = TlsDuplex::connect(config, &s)
                .map_err(|e| std::io::Error::new(e.kind(), format!("TLS handshake failed: {e}")))?;
            Some(d)
        }
    };
    s.set_read_timeout(Some(Duration::from_millis(100)))?;
    Ok((s, duplex))
}

/// Read from the master into `dst`: straight from the socket, or over TLS through `pending`
/// (plaintext decrypted but not yet taken). `Ok(0)` is the end of the stream.
fn read_some(
    mut s: &TcpStream,
    tls: Option<&TlsDuplex>,
    raw: &mut [u8],
    pending: &mut Vec<u8>,
    dst: &mut [u8],
) -> std::io::Result<usize> {
    let Some(t) = tls else {
        return s.read(dst);
    };
    if pending.is_empty() {
        let n = s.read(raw)?;
        if n == 0 || !t.receive(&raw[..n], pending)? && pending.is_empty() {
            return Ok(0);
        }
        if pending.is_empty() {
            // Part of a TLS record: nothing to hand on yet.
            return Err(std::io::Error::new(ErrorKind::WouldBlock, "partial record"));
        }
    }
    let n = pending.len().min(dst.len());
    dst[..n].copy_from_slice(&pending[..n]);
    pending.drain(..n);
    Ok(n)
}

fn report(
    st: &State,
    mut s: &TcpStream,
    tls: Option<&TlsDuplex>,
    offset: i64,
) -> std::io::Result<()> {
    match tls {
        None => s.write_all(&offset.to_be_bytes())?,
        Some(t) => t.send(&[&offset.to_be_bytes()])?,
    }
    st.last_write.store(now_millis(), Ordering::Relaxed);
    Ok(())
}

/// One connection's life; `Some(reason)` when it ended for a reason worth a log line.
fn session(
    st: &State,
    store: &Weak<MessageStore>,
    s: &TcpStream,
    tls: Option<&TlsDuplex>,
    generation: u64,
) -> Option<String> {
    let (heartbeat, housekeeping, batch) = {
        let store = store.upgrade()?;
        let h = &store.ha().settings;
        (h.heartbeat, h.housekeeping, h.batch)
    };
    let cap = FRAME_HEADER_SIZE + batch.max(4 << 20);
    let mut buf = vec![0u8; cap];
    let mut have = 0usize;
    let mut reported = store.upgrade()?.get_max_phy_offset();
    if let Err(e) = report(st, s, tls, reported) {
        return Some(format!("reporting offset {reported} failed: {e}"));
    }
    let mut last_read = Instant::now();
    let mut last_write = Instant::now();
    let (mut raw, mut pending) = (
        vec![0u8; if tls.is_some() { 64 << 10 } else { 0 }],
        Vec::new(),
    );
    loop {
        if st.stop.load(Ordering::Acquire) || st.generation.load(Ordering::Acquire) != generation {
            return None;
        }
        let store = store.upgrade()?;
        match read_some(s, tls, &mut raw, &mut pending, &mut buf[have..]) {
            Ok(0) => return Some("the master closed it".into()),
            Ok(n) => {
                have += n;
                last_read = Instant::now();
                st.last_read.store(now_millis(), Ordering::Relaxed);
                st.received.fetch_add(n as u64, Ordering::Relaxed);
                st.rate.add(n as u64, now_millis());
                let used = match apply_frames(&store, &buf[..have], cap) {
                    Ok(used) => used,
                    Err(why) => return Some(why),
                };
                buf.copy_within(used..have, 0);
                have -= used;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Some(format!("reading failed: {e}")),
        }
        let max = store.get_max_phy_offset();
        if max > reported || last_write.elapsed() > heartbeat {
            if let Err(e) = report(st, s, tls, max) {
                return Some(format!("reporting offset {max} failed: {e}"));
            }
            reported = max;
            last_write = Instant::now();
        }
        if last_read.elapsed() > housekeeping {
            return Some(format!(
                "nothing from the master for {} ms (haHousekeepingInterval)",
                last_read.elapsed().as_millis()
            ));
        }
    }
}

/// Append every whole frame in `buf`; returns the bytes consumed, or why to disconnect.
fn apply_frames(
    store: &MessageStore,
    buf: &[u8],
    cap: usize,
) -> std::result::Result<usize, String> {
    let mut at = 0;
    while buf.len() - at >= FRAME_HEADER_SIZE {
        let h = &buf[at..at + FRAME_HEADER_SIZE];
        let offset = i64::from_be_bytes(h[..8].try_into().unwrap_or([0; 8]));
        let size = i32::from_be_bytes(h[8..].try_into().unwrap_or([0; 4]));
        let Ok(size) = usize::try_from(size) else {
            return Err(format!("malformed frame: body size {size}"));
        };
        if size > cap - FRAME_HEADER_SIZE {
            return Err(format!(
                "a frame of {size} bytes exceeds this slave's {} byte buffer (a garbage \
                 stream, or lower the master's haTransferBatchSize)",
                cap - FRAME_HEADER_SIZE
            ));
        }
        if buf.len() - at - FRAME_HEADER_SIZE < size {
            break;
        }
        let max = store.get_max_phy_offset();
        if max != 0 && max != offset {
            return Err(format!(
                "the master sent data for CommitLog offset {offset}, but this slave's \
                 CommitLog ends at {max}; nothing was written"
            ));
        }
        if size > 0 {
            let body = &buf[at + FRAME_HEADER_SIZE..at + FRAME_HEADER_SIZE + size];
            store
                .append_replicated(offset, body)
                .map_err(|e| format!("appending replicated data failed: {e}"))?;
        }
        at += FRAME_HEADER_SIZE + size;
    }
    Ok(at)
}
