//! The two tasks of a connection. The reader decodes frames, hands responses to the requests
//! waiting for them and starts the handling of requests (inline when cheap, as a task
//! otherwise); it stops reading while the connection's budget is spent, and closes a
//! connection that has been idle, or that stalls in the middle of a frame, for too long. The
//! writer owns the socket's write half and sends what is queued, coalescing command replies
//! into one write and sending file regions with `writev` or `sendfile`.
//!
//! Both tasks are generic over the stream (monomorphised: a plain TCP connection runs exactly
//! the code it ran before TLS existed). Over TLS the bytes must be encrypted in user space, so
//! file regions are copied from the mapped pages through the TLS stream instead of `sendfile`.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use rmq_protocol::{codec, RemotingCommand};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, Interest};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::budget::{Budget, Charge, InFlight};
use crate::connection::{
    BoxFuture, Connection, FileRegion, Outgoing, Reply, RequestHandler, RequestTimer,
};

/// When the reader gives up on a connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReadSettings {
    /// Close after this long without traffic either way (servers only).
    pub(crate) idle_timeout: Option<Duration>,
    /// Close when a started frame gets no more bytes for this long.
    pub(crate) frame_stall_timeout: Option<Duration>,
    /// The server shutting down.
    pub(crate) server_stop: Option<watch::Receiver<bool>>,
    /// Times the answers (servers with an RPC latency metric); the connection keeps it.
    pub(crate) timer: Option<Arc<dyn RequestTimer>>,
}

impl ReadSettings {
    /// A client's connection: it lives as long as its owner keeps it.
    pub(crate) fn client() -> Self {
        Self::default()
    }
}

/// What ended a wait of the reader.
enum Wake {
    Read(io::Result<usize>),
    /// The budget has room again for the frames already in the buffer.
    Room,
    Quiet,
    Stop,
}

/// The write side of a connection's stream.
pub(crate) trait WireWrite: AsyncWrite + Unpin + Send + 'static {
    /// The socket itself when bytes reach it unchanged (so `sendfile` may write to it);
    /// `None` over TLS.
    fn raw_socket(&self) -> Option<&TcpStream>;
}

impl WireWrite for OwnedWriteHalf {
    fn raw_socket(&self) -> Option<&TcpStream> {
        Some(self.as_ref())
    }
}

impl WireWrite for tokio::io::WriteHalf<tokio_rustls::TlsStream<TcpStream>> {
    fn raw_socket(&self) -> Option<&TcpStream> {
        None
    }
}

pub(crate) async fn read_loop<R: AsyncRead + Unpin>(
    mut rd: R,
    conn: &Connection,
    handler: &Arc<dyn RequestHandler>,
    mut close: watch::Receiver<bool>,
    mut settings: ReadSettings,
) {
    let budget = Arc::clone(conn.budget());
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut after_big = false;
    loop {
        // Frames stay in the buffer while the budget is spent; `held` says one is waiting.
        let mut held = false;
        loop {
            if budget.must_wait() {
                held = !buf.is_empty();
                break;
            }
            let announced = announced_frame(&buf);
            match codec::decode(&mut buf) {
                Ok(Some(cmd)) => {
                    after_big = announced.is_some_and(|n| n >= BIG_FRAME);
                    dispatch(conn, handler, cmd);
                }
                Ok(None) => break,
                Err(e) => {
                    log::warn!(
                        "closing connection from {}: malformed frame: {e}",
                        conn.peer()
                    );
                    return;
                }
            }
        }
        // A partial frame is waited for with the stall timeout, a quiet connection with the
        // idle timeout; both measured from the last traffic either way.
        let limit = if buf.is_empty() {
            settings.idle_timeout
        } else {
            settings.frame_stall_timeout.or(settings.idle_timeout)
        };
        let wake = {
            let stop = async {
                match &mut settings.server_stop {
                    Some(s) => {
                        let _ = s.changed().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let read_at_most = read_limit(&buf, after_big);
            let read = async {
                read_when_room(&budget, conn).await;
                if held {
                    None
                } else if let Some(n) = read_at_most {
                    Some(rd.read_buf(&mut (&mut buf).limit(n)).await)
                } else {
                    Some(rd.read_buf(&mut buf).await)
                }
            };
            tokio::select! {
                read = read => read.map_or(Wake::Room, Wake::Read),
                () = quiet_for(&budget, limit) => Wake::Quiet,
                _ = close.changed() => Wake::Stop,
                () = stop => Wake::Stop,
            }
        };
        match wake {
            Wake::Read(Ok(0) | Err(_)) | Wake::Stop => return,
            Wake::Read(Ok(_)) => budget.touch(),
            Wake::Room => {}
            Wake::Quiet => {
                let waited = limit.unwrap_or_default().as_secs();
                if buf.is_empty() {
                    log::info!(
                        "closing connection from {}: no traffic for {waited} s",
                        conn.peer()
                    );
                } else {
                    log::warn!(
                        "closing connection from {}: a frame stalled for \
                         {waited} s after {} bytes",
                        conn.peer(),
                        buf.len()
                    );
                }
                return;
            }
        }
    }
}

/// Frames of at least this many bytes (length field included) are read without a copy: the
/// reads stop at the frame's end, and the frame after one starts with its length alone.
const BIG_FRAME: usize = 32 * 1024;

/// The whole length (prefix included) of the frame at the front of `buf`, once its prefix
/// is there.
fn announced_frame(buf: &[u8]) -> Option<usize> {
    let p = buf.get(..codec::LENGTH_FIELD_BYTES)?;
    let length = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
    Some(usize::try_from(length).ok()? + codec::LENGTH_FIELD_BYTES)
}

/// How much the next read may take, when not as much as fits. For a big frame (whose room
/// `codec::decode` reserved) exactly the rest of it: the body lands in place and the next
/// frame's bytes are not read into this frame's buffer, to be copied out into a bigger one
/// of their own. Right after a big frame (big bodies come in runs) only the next length
/// prefix, so that a big successor gets its room before its bytes arrive; small frames read
/// as much as fits, many per read.
fn read_limit(buf: &[u8], after_big: bool) -> Option<usize> {
    match announced_frame(buf) {
        Some(total) if total >= BIG_FRAME => total.checked_sub(buf.len()).filter(|&n| n > 0),
        None if after_big => Some(codec::LENGTH_FIELD_BYTES - buf.len()),
        _ => None,
    }
}

/// Wait until the budget lets the reader read again; log once when it has to wait.
async fn read_when_room(budget: &Budget, conn: &Connection) {
    if budget.must_wait() {
        log::info!(
            "not reading from {} until it reads its replies ({})",
            conn.peer(),
            budget.describe()
        );
        budget.room_to_read().await;
    }
}

/// Resolves once the connection has had no traffic for `limit` (never without a limit).
async fn quiet_for(budget: &Budget, limit: Option<Duration>) {
    let Some(limit) = limit else {
        return std::future::pending().await;
    };
    loop {
        let idle = budget.idle_for();
        if idle >= limit {
            return;
        }
        tokio::time::sleep(limit.saturating_sub(idle)).await;
    }
}

/// A request being timed: the server's timer, the request's code and when it was decoded.
struct Timing {
    timer: Arc<dyn RequestTimer>,
    code: i32,
    started: Instant,
}

/// The answer to a request that outlives its handler's first poll: it holds the request's
/// place in the connection's budget (the reader stops reading while too many wait) and its
/// timing until [`send`](Self::send). A handler that answers from elsewhere (a store's
/// group-commit round calls back) takes one with [`Connection::reply_later`] and returns
/// `None`; dropped unsent, it frees the place and the peer gets no answer.
pub struct LaterReply {
    conn: Connection,
    slot: InFlight,
    timing: Option<Timing>,
    oneway: bool,
}

impl LaterReply {
    fn new(conn: &Connection, code: i32, oneway: bool, started: Option<Instant>) -> Self {
        let timing = conn.timer().zip(started).map(|(timer, started)| Timing {
            timer: Arc::clone(timer),
            code,
            started,
        });
        Self {
            conn: conn.clone(),
            slot: conn.budget().start_request(),
            timing,
            oneway,
        }
    }

    /// Queue the reply (none for a oneway request) and free the request's place.
    pub fn send(self, reply: Reply) {
        if let Some(t) = &self.timing {
            t.timer.answered(t.code, reply.code(), t.started.elapsed());
        }
        if !self.oneway {
            self.conn.send_reply(reply, false);
        }
        drop(self.slot);
    }
}

impl Connection {
    /// Answer `request` later, from outside its handling: see [`LaterReply`].
    #[must_use]
    pub fn reply_later(&self, request: &RemotingCommand) -> LaterReply {
        let started = self.timer().map(|_| Instant::now());
        LaterReply::new(self, request.code, request.is_oneway(), started)
    }
}

fn dispatch(conn: &Connection, handler: &Arc<dyn RequestHandler>, cmd: RemotingCommand) {
    if cmd.is_response() {
        conn.complete(cmd);
        return;
    }
    let oneway = cmd.is_oneway();
    let (code, started) = (cmd.code, conn.timer().map(|_| Instant::now()));
    // Only requests that outlive this call take a budget slot: one answered inline is done
    // (and its reply charged) before the reader goes on.
    if !handler.run_inline(&cmd) {
        let later = LaterReply::new(conn, code, oneway, started);
        tokio::spawn(reply_when_done(handler.handle(conn.clone(), cmd), later));
        return;
    }
    let mut handling = handler.handle(conn.clone(), cmd);
    match handling
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Some(reply)) => {
            if let (Some(t), Some(started)) = (conn.timer(), started) {
                t.answered(code, reply.code(), started.elapsed());
            }
            if !oneway {
                conn.send_reply(reply, true);
            }
        }
        Poll::Ready(None) => {}
        // It has to wait (a full store queue, a replica's ack): the rest is a task, whose
        // first poll registers its own waker.
        Poll::Pending => {
            let later = LaterReply::new(conn, code, oneway, started);
            tokio::spawn(reply_when_done(handling, later));
        }
    }
}

/// Await a request's handling and send its reply, if any.
async fn reply_when_done(handling: BoxFuture<Option<Reply>>, later: LaterReply) {
    if let Some(reply) = handling.await {
        later.send(reply);
    }
}

/// Bytes written in one go, per counter, released from the budget once written.
#[derive(Default)]
struct Written {
    replies: usize,
    requests: usize,
}

impl Written {
    fn add(&mut self, item: &Outgoing) {
        match item.charge {
            Charge::Reply => self.replies += item.weight,
            Charge::Request => self.requests += item.weight,
        }
    }
}

pub(crate) async fn write_loop<W: WireWrite>(
    mut wr: W,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    transfer_by_heap: bool,
    peer: SocketAddr,
    budget: Arc<Budget>,
    mut close: watch::Receiver<bool>,
) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut next: Option<Outgoing> = None;
    loop {
        let item = if let Some(r) = next.take() {
            r
        } else {
            tokio::select! {
                r = rx.recv() => match r { Some(r) => r, None => break },
                _ = close.changed() => break,
            }
        };
        let mut written = Written::default();
        written.add(&item);
        let result = match item.reply {
            Reply::Command(cmd) => {
                buf.clear();
                encode_or_log(&cmd, &mut buf, peer);
                // Let the tasks that are ready run first, then coalesce what they queued
                // into one write: one `sendto` per burst instead of one per reply. A reply
                // the reader made inline needs no yield (see `Outgoing::from_reader`), and
                // a yield costs a wake-up of the other worker, which on small machines
                // was the broker's largest source of context switches.
                if !item.from_reader {
                    tokio::task::yield_now().await;
                }
                while buf.len() < 256 * 1024 {
                    match rx.try_recv() {
                        Ok(more) => {
                            if let Reply::Command(cmd) = &more.reply {
                                written.add(&more);
                                encode_or_log(cmd, &mut buf, peer);
                            } else {
                                next = Some(more);
                                break;
                            }
                        }
                        Err(_) => break,
                    }
                }
                wr.write_all(&buf).await
            }
            Reply::WithFileRegions { command, regions } => {
                write_regions(&mut wr, &command, &regions, transfer_by_heap).await
            }
        };
        // TLS keeps what the socket did not take yet in its own buffer (a no-op on TCP).
        let result = match result {
            Ok(()) => wr.flush().await,
            e => e,
        };
        budget.release(written.replies, written.requests);
        if let Err(e) = result {
            log::warn!("write to {peer} failed, closing: {e}");
            break;
        }
        budget.touch();
    }
    let _ = wr.shutdown().await;
}

/// Encode a command; one that cannot be encoded (a header over 16 MiB) is dropped with a log
/// line rather than sent half-made.
fn encode_or_log(cmd: &RemotingCommand, buf: &mut BytesMut, peer: SocketAddr) {
    let mark = buf.len();
    if let Err(e) = codec::encode(cmd, buf) {
        buf.truncate(mark);
        log::error!("dropping command {} to {peer}: {e}", cmd.code);
    }
}

async fn write_regions<W: WireWrite>(
    wr: &mut W,
    command: &RemotingCommand,
    regions: &[Box<dyn FileRegion>],
    transfer_by_heap: bool,
) -> io::Result<()> {
    let total: usize = regions.iter().map(|r| r.len()).sum();
    let header = codec::encode_header_for_body(command, total)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    if transfer_by_heap {
        let mut out = Vec::with_capacity(header.len() + total);
        out.extend_from_slice(&header);
        for r in regions {
            out.extend_from_slice(r.bytes());
        }
        return wr.write_all(&out).await;
    }
    let runs = file_runs(regions);
    let socket = wr
        .raw_socket()
        .filter(|_| total / runs.clone().count().max(1) >= SENDFILE_MIN_RUN)
        .filter(|_| regions.iter().all(|r| r.on_file()));
    let Some(socket) = socket else {
        // Many small records scattered over the CommitLog: one gathered write straight from
        // the mapped pages beats a sendfile call (and a TCP segment) per record. Over TLS
        // the mapped bytes are copied into TLS records this way whatever their size, and so
        // are records the file does not hold yet (the store's append window).
        let mut slices: Vec<io::IoSlice<'_>> = Vec::with_capacity(regions.len() + 1);
        slices.push(io::IoSlice::new(&header));
        slices.extend(regions.iter().map(|r| io::IoSlice::new(r.bytes())));
        return write_all_vectored(wr, &mut slices).await;
    };
    // Records stored together (a batch, or one queue's burst) leave in one `sendfile` each:
    // the broker never touches their pages, which matters most for pages read back from
    // disk (a new group reading history), whose first touch is the costly part of a pull.
    // A reply of several runs is corked: each `sendfile` call pushes what it sent as a
    // segment of its own otherwise, and on loopback every segment is also the receiver's
    // softirq work and wake-up, charged to this thread.
    let cork = runs.clone().nth(1).is_some();
    if cork {
        rustix::net::sockopt::set_tcp_cork(socket, true)?;
    }
    let sent = send_header_and_runs(socket, &header, runs).await;
    if cork {
        // Uncorked whatever happened; a failed send's own error is the one reported.
        let uncorked = rustix::net::sockopt::set_tcp_cork(socket, false);
        return sent.and(uncorked.map_err(io::Error::from));
    }
    sent
}

async fn send_header_and_runs(
    socket: &TcpStream,
    header: &[u8],
    runs: impl Iterator<Item = (&std::fs::File, u64, u64)>,
) -> io::Result<()> {
    socket_send_more(socket, header).await?;
    for (file, start, end) in runs {
        sendfile_all(socket, file, start, end).await?;
    }
    Ok(())
}

/// Byte ranges of one file that consecutive regions fill back to back: `(file, start, end)`.
fn file_runs(
    regions: &[Box<dyn FileRegion>],
) -> impl Iterator<Item = (&std::fs::File, u64, u64)> + Clone {
    let mut rest = regions.iter().peekable();
    std::iter::from_fn(move || {
        let first = rest.next()?;
        let file = first.file();
        let start = first.position();
        let mut end = start + first.len() as u64;
        while let Some(next) =
            rest.next_if(|r| r.position() == end && r.file().as_raw_fd() == file.as_raw_fd())
        {
            end += next.len() as u64;
        }
        Some((file, start, end))
    })
}

/// Send `bytes` with `MSG_MORE`: they leave with the `sendfile` data that follows instead
/// of as a segment of their own (the socket has `TCP_NODELAY`).
async fn socket_send_more(stream: &TcpStream, bytes: &[u8]) -> io::Result<()> {
    let more = rustix::net::SendFlags::MORE;
    write_fully(stream, bytes.len(), "socket accepted no bytes", |done| {
        rustix::net::send(stream, &bytes[done..], more).map_err(io::Error::from)
    })
    .await
}

/// Call `write(done)`, a non-blocking write of what is left after `done` bytes that returns
/// how many more it wrote, whenever the socket is writable, until `len` bytes are written;
/// `what` says what happened if a call writes nothing.
async fn write_fully(
    stream: &TcpStream,
    len: usize,
    what: &'static str,
    mut write: impl FnMut(usize) -> io::Result<usize>,
) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        stream.writable().await?;
        match stream.try_io(Interest::WRITABLE, || write(done)) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, what)),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Runs of regions shorter than this on average go out with one `writev` instead of one
/// `sendfile` each (measured on 1 KiB records, benches/RESULTS.md, issue 18 eleventh round).
const SENDFILE_MIN_RUN: usize = 8 * 1024;

async fn write_all_vectored<W: WireWrite>(
    wr: &mut W,
    mut slices: &mut [io::IoSlice<'_>],
) -> io::Result<()> {
    while !slices.is_empty() {
        let n = wr.write_vectored(slices).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "socket accepted no bytes",
            ));
        }
        io::IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

/// Send bytes `start..end` of `file` with `sendfile(2)`: from the page cache to the socket
/// without passing through user space.
async fn sendfile_all(
    stream: &TcpStream,
    file: &std::fs::File,
    start: u64,
    end: u64,
) -> io::Result<()> {
    let len = usize::try_from(end - start).unwrap_or(usize::MAX);
    let what = "sendfile wrote nothing (file shorter than the region?)";
    write_fully(stream, len, what, |done| {
        let mut offset = start + done as u64;
        rustix::fs::sendfile(stream, file, Some(&mut offset), len - done).map_err(io::Error::from)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    struct R(std::sync::Arc<std::fs::File>, u64, usize);

    impl FileRegion for R {
        fn file(&self) -> &std::fs::File {
            &self.0
        }
        fn position(&self) -> u64 {
            self.1
        }
        fn len(&self) -> usize {
            self.2
        }
        fn bytes(&self) -> &[u8] {
            &[]
        }
    }

    #[test]
    fn regions_back_to_back_in_one_file_make_one_run() {
        let dir = tempfile::tempdir().unwrap();
        let open = || std::sync::Arc::new(std::fs::File::create(dir.path().join("f")).unwrap());
        let (a, b) = (open(), open());
        let regions: Vec<Box<dyn FileRegion>> = [
            (&a, 0, 10),
            (&a, 10, 5),
            (&a, 15, 1),
            (&a, 20, 4),
            (&b, 24, 4),
            (&a, 28, 2),
        ]
        .into_iter()
        .map(|(f, pos, len)| Box::new(R(std::sync::Arc::clone(f), pos, len)) as Box<dyn FileRegion>)
        .collect();
        let runs: Vec<(u64, u64)> = file_runs(&regions).map(|(_, s, e)| (s, e)).collect();
        assert_eq!(runs, [(0, 16), (20, 24), (24, 28), (28, 30)]);
        assert_eq!(file_runs(&[]).count(), 0);
    }
}
