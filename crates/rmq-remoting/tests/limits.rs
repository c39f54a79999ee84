//! What one peer can make a server hold: a client that never reads its replies stops being
//! read (and loses nothing once it reads again), idle connections and stalled frames are
//! closed, and a full server admits a new client by closing its longest-idle connection.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rmq_protocol::{codec, ExtFields, RemotingCommand};
use rmq_remoting::{
    serve, BoxFuture, Connection, ConnectionLimits, Reply, RequestHandler, ServerConfig,
    ServerHandle,
};

/// Answers every request with a body of `reply_bytes`, counting the requests it handled.
struct Big {
    reply_bytes: usize,
    handled: AtomicUsize,
}

impl RequestHandler for Big {
    fn handle(&self, _conn: Connection, req: RemotingCommand) -> BoxFuture<Option<Reply>> {
        self.handled.fetch_add(1, Ordering::SeqCst);
        let resp = RemotingCommand::response_to(&req, 0, None)
            .with_body(Bytes::from(vec![7u8; self.reply_bytes]));
        Box::pin(async move { Some(Reply::Command(resp)) })
    }
}

async fn server(reply_bytes: usize, config: ServerConfig) -> (ServerHandle, Arc<Big>) {
    let h = Arc::new(Big {
        reply_bytes,
        handled: AtomicUsize::new(0),
    });
    let s = serve("127.0.0.1:0".parse().unwrap(), h.clone(), config)
        .await
        .unwrap();
    (s, h)
}

fn request_frame(opaque: i32) -> Vec<u8> {
    let mut cmd = RemotingCommand::new_request(9001, ExtFields::new());
    cmd.opaque = opaque;
    let mut buf = BytesMut::new();
    codec::encode(&cmd, &mut buf).unwrap();
    buf.to_vec()
}

/// Read whole frames off a blocking socket until `n` responses have come.
fn read_responses(s: &mut TcpStream, n: usize) -> usize {
    let mut buf = BytesMut::new();
    let mut got = 0;
    let mut chunk = vec![0u8; 1 << 16];
    while got < n {
        let k = s.read(&mut chunk).unwrap();
        assert!(k > 0, "server closed after {got} of {n} responses");
        buf.extend_from_slice(&chunk[..k]);
        while let Some(cmd) = codec::decode(&mut buf).unwrap() {
            assert!(cmd.is_response());
            got += 1;
        }
    }
    got
}

/// Whether the server closed `s` within `within` (reads EOF or a reset).
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => panic!("unexpected bytes"),
        Err(e) => e.kind() == ErrorKind::ConnectionReset,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_stops_being_read_and_loses_nothing() {
    let limits = ConnectionLimits {
        max_queued_reply_bytes: 1 << 20,
        max_in_flight_requests: 64,
        ..ConnectionLimits::default()
    };
    let (srv, h) = server(
        64 * 1024,
        ServerConfig {
            limits,
            ..ServerConfig::default()
        },
    )
    .await;
    let addr = srv.local_addr();
    let h2 = Arc::clone(&h);
    let (sent, answered) = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_nonblocking(true).unwrap();
        // Write requests and never read, until the server has not taken a byte for 1 s.
        let mut sent = 0usize;
        let mut pending: Vec<u8> = Vec::new();
        let mut last_progress = Instant::now();
        while last_progress.elapsed() < Duration::from_secs(1) && sent < 200_000 {
            if pending.is_empty() {
                pending = request_frame(i32::try_from(sent).unwrap());
                sent += 1;
            }
            match s.write(&pending) {
                Ok(n) => {
                    pending.drain(..n);
                    last_progress = Instant::now();
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("{e}"),
            }
        }
        let handled_while_not_reading = h2.handled.load(Ordering::SeqCst);
        // Read everything back while finishing the frame that was cut short.
        s.set_nonblocking(false).unwrap();
        let mut reader = s.try_clone().unwrap();
        let reading = std::thread::spawn(move || read_responses(&mut reader, sent));
        s.write_all(&pending).unwrap();
        (sent, (handled_while_not_reading, reading.join().unwrap()))
    })
    .await
    .unwrap();
    let (handled_while_not_reading, got) = answered;
    // The server stopped after about 1 MiB of queued replies, 64 requests in flight and what
    // the kernel's socket buffers hold (a few MiB on loopback): far fewer than the client
    // tried to send.
    assert!(sent < 200_000, "the server read all {sent} requests");
    assert!(
        handled_while_not_reading * 64 * 1024 < 32 << 20,
        "{handled_while_not_reading} replies of 64 KiB were made for a client that reads none"
    );
    assert_eq!(got, sent, "every request is answered once the client reads");
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_and_stalled_frames_are_closed() {
    let (srv, _h) = server(
        16,
        ServerConfig {
            idle_timeout: Some(Duration::from_millis(1500)),
            frame_stall_timeout: Some(Duration::from_millis(300)),
            ..ServerConfig::default()
        },
    )
    .await;
    let addr = srv.local_addr();
    tokio::task::spawn_blocking(move || {
        // The start of a 16 MiB frame, then nothing: closed by the stall timeout, well
        // before the idle timeout.
        let mut stalled = TcpStream::connect(addr).unwrap();
        let t0 = Instant::now();
        stalled.write_all(&(16_i32 << 20).to_be_bytes()).unwrap();
        stalled.write_all(&[0u8; 100]).unwrap();
        assert!(closed_within(&mut stalled, Duration::from_secs(5)));
        assert!(
            t0.elapsed() < Duration::from_millis(1400),
            "{:?}",
            t0.elapsed()
        );
        // A quiet connection is closed after the idle timeout; a busy one is not.
        let mut quiet = TcpStream::connect(addr).unwrap();
        let mut busy = TcpStream::connect(addr).unwrap();
        let t0 = Instant::now();
        for i in 0..8 {
            busy.write_all(&request_frame(i)).unwrap();
            read_responses(&mut busy, 1);
            std::thread::sleep(Duration::from_millis(300));
        }
        assert!(closed_within(&mut quiet, Duration::from_secs(5)));
        assert!(t0.elapsed() >= Duration::from_millis(1400));
        busy.write_all(&request_frame(99)).unwrap();
        assert_eq!(
            read_responses(&mut busy, 1),
            1,
            "a busy connection stays open"
        );
    })
    .await
    .unwrap();
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_server_closes_its_longest_idle_connection_for_a_new_one() {
    let (srv, _h) = server(
        16,
        ServerConfig {
            max_connections: 2,
            ..ServerConfig::default()
        },
    )
    .await;
    let addr: SocketAddr = srv.local_addr();
    tokio::task::spawn_blocking(move || {
        let mut idle = TcpStream::connect(addr).unwrap();
        let mut active = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        active.write_all(&request_frame(1)).unwrap();
        read_responses(&mut active, 1);
        let mut newcomer = TcpStream::connect(addr).unwrap();
        newcomer.write_all(&request_frame(2)).unwrap();
        assert_eq!(
            read_responses(&mut newcomer, 1),
            1,
            "the newcomer is served"
        );
        assert!(
            closed_within(&mut idle, Duration::from_secs(5)),
            "the idle one went"
        );
        active.write_all(&request_frame(3)).unwrap();
        assert_eq!(read_responses(&mut active, 1), 1, "the active one stays");
    })
    .await
    .unwrap();
    srv.shutdown().await;
}
