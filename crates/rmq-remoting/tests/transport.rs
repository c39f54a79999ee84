//! The transport on real sockets: request/response, oneway, server-to-client requests,
//! zero-copy file regions, and bad input that must close only the offending connection.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::{ExtFields, RemotingCommand, ResponseCode, SerializeType};
use rmq_remoting::{
    connect, serve, BoxFuture, Connection, FileRegion, Reply, RequestHandler, ServerConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ECHO: i32 = 9001;
const FILE: i32 = 9002;
const ASK_BACK: i32 = 9003;
const NOTE: i32 = 9004;
const FILE_BIG: i32 = 9005;
const FILE_RUNS: i32 = 9006;

/// A region of a file (which other regions may share, as a pull's records share their
/// CommitLog file).
struct Region {
    file: Arc<std::fs::File>,
    pos: u64,
    data: Vec<u8>,
}

impl FileRegion for Region {
    fn file(&self) -> &std::fs::File {
        &self.file
    }
    fn position(&self) -> u64 {
        self.pos
    }
    fn len(&self) -> usize {
        self.data.len()
    }
    fn bytes(&self) -> &[u8] {
        &self.data
    }
}

/// Regions of 4 KiB: five back to back (one run), one after a gap, and one right after that
/// but through another handle of the file: three runs of 9.3 KiB on average, sent by sendfile.
fn run_regions(dir: &std::path::Path) -> (Vec<Box<dyn FileRegion>>, Vec<u8>) {
    let path = dir.join("runs");
    let content: Vec<u8> = (0..40_960u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(&path, &content).unwrap();
    let shared = Arc::new(std::fs::File::open(&path).unwrap());
    let other = Arc::new(std::fs::File::open(&path).unwrap());
    let mut want = Vec::new();
    let regions = [0, 4096, 8192, 12_288, 16_384, 24_576, 28_672]
        .into_iter()
        .map(|pos| (pos, if pos == 28_672 { &other } else { &shared }))
        .map(|(pos, file)| {
            let data = content[pos..pos + 4096].to_vec();
            want.extend_from_slice(&data);
            Box::new(Region {
                file: Arc::clone(file),
                pos: pos as u64,
                data,
            }) as Box<dyn FileRegion>
        })
        .collect();
    (regions, want)
}

struct Handler {
    dir: tempfile::TempDir,
    notes: AtomicUsize,
}

impl RequestHandler for Handler {
    fn handle(&self, conn: Connection, req: RemotingCommand) -> BoxFuture<Option<Reply>> {
        match req.code {
            ECHO => {
                let mut resp = RemotingCommand::response_to(&req, 0, None);
                resp.body.clone_from(&req.body);
                resp.ext_fields.clone_from(&req.ext_fields);
                Box::pin(async move { Some(Reply::Command(resp)) })
            }
            FILE => {
                // Two regions of one file: bytes 10..20 and 100..150.
                let path = self.dir.path().join("data");
                let mut f = std::fs::File::create(&path).unwrap();
                let content: Vec<u8> = (0..200u8).collect();
                f.write_all(&content).unwrap();
                let regions: Vec<Box<dyn FileRegion>> = vec![
                    Box::new(Region {
                        file: Arc::new(std::fs::File::open(&path).unwrap()),
                        pos: 10,
                        data: content[10..20].to_vec(),
                    }),
                    Box::new(Region {
                        file: Arc::new(std::fs::File::open(&path).unwrap()),
                        pos: 100,
                        data: content[100..150].to_vec(),
                    }),
                ];
                let command = RemotingCommand::response_to(&req, 0, None);
                Box::pin(async move { Some(Reply::WithFileRegions { command, regions }) })
            }
            FILE_BIG => {
                // Two 200 KiB regions: large enough to go out by sendfile.
                let path = self.dir.path().join("big");
                let content: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
                std::fs::write(&path, &content).unwrap();
                let regions: Vec<Box<dyn FileRegion>> =
                    [(1000usize, 200_000usize), (300_000, 200_000)]
                        .into_iter()
                        .map(|(pos, len)| {
                            Box::new(Region {
                                file: Arc::new(std::fs::File::open(&path).unwrap()),
                                pos: pos as u64,
                                data: content[pos..pos + len].to_vec(),
                            }) as Box<dyn FileRegion>
                        })
                        .collect();
                let command = RemotingCommand::response_to(&req, 0, None);
                Box::pin(async move { Some(Reply::WithFileRegions { command, regions }) })
            }
            FILE_RUNS => {
                let (regions, _) = run_regions(self.dir.path());
                let command = RemotingCommand::response_to(&req, 0, None);
                Box::pin(async move { Some(Reply::WithFileRegions { command, regions }) })
            }
            ASK_BACK => Box::pin(async move {
                // Ask the client something on the same connection, answer with its reply.
                let q = RemotingCommand::new_request(ECHO, ExtFields::default())
                    .with_body(b"ping".to_vec());
                let answer = conn.request(q, Duration::from_secs(5)).await.unwrap();
                let mut resp = RemotingCommand::response_to(&req, 0, None);
                resp.body = answer.body;
                Some(Reply::Command(resp))
            }),
            NOTE => {
                self.notes.fetch_add(1, Ordering::SeqCst);
                Box::pin(async { None })
            }
            other => {
                let resp = RemotingCommand::response_to(
                    &req,
                    ResponseCode::REQUEST_CODE_NOT_SUPPORTED.0,
                    Some(format!("request code {other} is not supported")),
                );
                Box::pin(async move { Some(Reply::Command(resp)) })
            }
        }
    }
}

struct ClientEcho;

impl RequestHandler for ClientEcho {
    fn handle(&self, _conn: Connection, req: RemotingCommand) -> BoxFuture<Option<Reply>> {
        let mut resp = RemotingCommand::response_to(&req, 0, None);
        resp.body = Some(
            format!(
                "pong from client to {}",
                String::from_utf8_lossy(req.body.as_deref().unwrap_or(b""))
            )
            .into_bytes()
            .into(),
        );
        Box::pin(async move { Some(Reply::Command(resp)) })
    }
}

async fn server(transfer_by_heap: bool) -> (rmq_remoting::ServerHandle, Arc<Handler>) {
    let h = Arc::new(Handler {
        dir: tempfile::tempdir().unwrap(),
        notes: AtomicUsize::new(0),
    });
    let cfg = ServerConfig {
        transfer_by_heap,
        ..ServerConfig::default()
    };
    let s = serve("127.0.0.1:0".parse().unwrap(), h.clone(), cfg)
        .await
        .unwrap();
    (s, h)
}

const T: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_response_in_both_serializations_and_concurrently() {
    let (srv, _) = server(false).await;
    let c = connect(srv.local_addr(), None, T).await.unwrap();
    for ser in [SerializeType::Json, SerializeType::RocketMq] {
        let mut ext = ExtFields::default();
        ext.insert("topic", "TopicA");
        let req = RemotingCommand::new_request(ECHO, ext)
            .with_body(b"hello".to_vec())
            .with_serialize_type(ser);
        let resp = c.request(req, T).await.unwrap();
        assert!(resp.is_response());
        assert_eq!(
            resp.serialize_type, ser,
            "responses use the request's serialization"
        );
        assert_eq!(resp.body.as_deref(), Some(&b"hello"[..]));
        assert_eq!(resp.ext_fields.get("topic"), Some("TopicA"));
    }
    // 200 requests in flight at once are each matched to their own response.
    let futs: Vec<_> = (0..200)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move {
                let req = RemotingCommand::new_request(ECHO, ExtFields::default())
                    .with_body(format!("m{i}").into_bytes());
                let r = c.request(req, T).await.unwrap();
                assert_eq!(r.body.as_deref(), Some(format!("m{i}").as_bytes()));
            })
        })
        .collect();
    for f in futs {
        f.await.unwrap();
    }
    let r = c
        .request(RemotingCommand::new_request(12345, ExtFields::default()), T)
        .await
        .unwrap();
    assert_eq!(r.code, ResponseCode::REQUEST_CODE_NOT_SUPPORTED.0);
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_and_small_frames_in_one_stream_arrive_intact() {
    // Sizes around the reader's big-frame handling (reads that stop at a big frame's end, a
    // length prefix read alone after one) and past the room decode reserves at once (5 MiB),
    // sent at once so that frames share reads both ways; each body is its own pattern.
    let (srv, _) = server(false).await;
    let c = connect(srv.local_addr(), None, T).await.unwrap();
    let sizes = [
        7usize,
        1 << 20,
        40 << 10,
        100,
        (64 << 10) + 1,
        3 << 20,
        5 << 20,
        (32 << 10) - 300,
        1 << 20,
        1,
    ];
    for round in 0..3u8 {
        let futs: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                let c = c.clone();
                let seed = u8::try_from(i)
                    .unwrap()
                    .wrapping_mul(31)
                    .wrapping_add(round);
                let body: Vec<u8> = (0..size)
                    .map(|j| seed.wrapping_add(u8::try_from(j % 253).unwrap()))
                    .collect();
                tokio::spawn(async move {
                    let req = RemotingCommand::new_request(ECHO, ExtFields::default())
                        .with_body(body.clone());
                    let r = c.request(req, T).await.unwrap();
                    assert!(
                        r.body.as_deref() == Some(&body[..]),
                        "{size}-byte body changed"
                    );
                })
            })
            .collect();
        for f in futs {
            f.await.unwrap();
        }
    }
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oneway_and_server_initiated_requests() {
    let (srv, h) = server(false).await;
    let c = connect(srv.local_addr(), Some(Arc::new(ClientEcho)), T)
        .await
        .unwrap();
    c.oneway(RemotingCommand::new_request(NOTE, ExtFields::default()))
        .await
        .unwrap();
    let r = c
        .request(
            RemotingCommand::new_request(ASK_BACK, ExtFields::default()),
            T,
        )
        .await
        .unwrap();
    assert_eq!(r.body.as_deref(), Some(&b"pong from client to ping"[..]));
    assert_eq!(
        h.notes.load(Ordering::SeqCst),
        1,
        "oneway request reached the handler"
    );
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_regions_arrive_as_one_body_by_sendfile_and_by_copy() {
    for heap in [false, true] {
        let (srv, _) = server(heap).await;
        let c = connect(srv.local_addr(), None, T).await.unwrap();
        let r = c
            .request(RemotingCommand::new_request(FILE, ExtFields::default()), T)
            .await
            .unwrap();
        let want: Vec<u8> = (10..20u8).chain(100..150u8).collect();
        assert_eq!(
            r.body.as_deref(),
            Some(&want[..]),
            "transfer_by_heap={heap}"
        );
        srv.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_of_regions_arrive_in_order_by_sendfile_and_by_copy() {
    for heap in [false, true] {
        let (srv, h) = server(heap).await;
        let c = connect(srv.local_addr(), None, T).await.unwrap();
        let mut round_trips = Vec::new();
        for _ in 0..5 {
            let asked = std::time::Instant::now();
            let r = c
                .request(
                    RemotingCommand::new_request(FILE_RUNS, ExtFields::default()),
                    T,
                )
                .await
                .unwrap();
            round_trips.push(asked.elapsed());
            let (_, want) = run_regions(h.dir.path());
            assert!(
                r.body.as_deref() == Some(&want[..]),
                "transfer_by_heap={heap}"
            );
        }
        // Several runs are sent corked; a reply left corked waits 200 ms for its last segment.
        round_trips.sort();
        assert!(
            round_trips[2] < Duration::from_millis(100),
            "transfer_by_heap={heap}: median round trip {:?}",
            round_trips[2]
        );
        srv.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_frames_close_only_their_connection() {
    let (srv, _) = server(false).await;
    let good = connect(srv.local_addr(), None, T).await.unwrap();
    for garbage in [
        // Length says 64 MiB: over the 16 MiB cap.
        vec![0x04, 0x00, 0x00, 0x00, 0, 0, 0, 0],
        // Serialize type 7 does not exist.
        vec![0, 0, 0, 8, 7, 0, 0, 2, b'{', b'}', 0, 0],
        // Header length larger than the frame.
        vec![0, 0, 0, 6, 0, 0, 0, 99, b'{', b'}'],
        // JSON header that is not JSON.
        vec![0, 0, 0, 7, 0, 0, 0, 3, b'x', b'y', b'z'],
    ] {
        let mut raw = tokio::net::TcpStream::connect(srv.local_addr())
            .await
            .unwrap();
        raw.write_all(&garbage).await.unwrap();
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(T, raw.read(&mut buf))
            .await
            .expect("server closes the connection")
            .unwrap_or(0);
        assert_eq!(n, 0, "connection closed without a reply for {garbage:?}");
    }
    // A truncated frame followed by a close: nothing happens to others either.
    let mut raw = tokio::net::TcpStream::connect(srv.local_addr())
        .await
        .unwrap();
    raw.write_all(&[0, 0, 0, 100, 0]).await.unwrap();
    drop(raw);
    let r = good
        .request(
            RemotingCommand::new_request(ECHO, ExtFields::default())
                .with_body(b"still here".to_vec()),
            T,
        )
        .await
        .unwrap();
    assert_eq!(r.body.as_deref(), Some(&b"still here"[..]));
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_fail_cleanly_when_the_peer_goes_away() {
    let (srv, _) = server(false).await;
    let addr = srv.local_addr();
    let c = connect(addr, None, T).await.unwrap();
    srv.shutdown().await;
    let err = c
        .request(
            RemotingCommand::new_request(ECHO, ExtFields::default()),
            Duration::from_secs(2),
        )
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("closed") || msg.contains("no response"),
        "{msg}"
    );
    // A port bound but not listening refuses connections, and no parallel test can take it
    // (the closed server's port could be handed to another test's listener).
    let reserved = tokio::net::TcpSocket::new_v4().unwrap();
    reserved.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let refused = reserved.local_addr().unwrap();
    let err = connect(refused, None, Duration::from_secs(2))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("connecting to"), "{err}");
}

/// Runs every request's first poll in the reader (`run_inline`): echoes answer at once,
/// `SLOW` has to wait, oneway notes are counted.
struct InlineHandler {
    notes: AtomicUsize,
}

const SLOW: i32 = 9006;

impl RequestHandler for InlineHandler {
    fn handle(&self, _conn: Connection, req: RemotingCommand) -> BoxFuture<Option<Reply>> {
        let mut resp = RemotingCommand::response_to(&req, 0, None);
        resp.body.clone_from(&req.body);
        match req.code {
            SLOW => Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Some(Reply::Command(resp))
            }),
            NOTE => {
                self.notes.fetch_add(1, Ordering::SeqCst);
                Box::pin(async { None })
            }
            _ => Box::pin(async move { Some(Reply::Command(resp)) }),
        }
    }
    fn run_inline(&self, _request: &RemotingCommand) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_requests_answer_at_once_and_waiting_ones_do_not_block_the_reader() {
    let h = Arc::new(InlineHandler {
        notes: AtomicUsize::new(0),
    });
    let srv = serve(
        "127.0.0.1:0".parse().unwrap(),
        h.clone(),
        ServerConfig::default(),
    )
    .await
    .unwrap();
    let c = connect(srv.local_addr(), None, T).await.unwrap();
    let started = std::time::Instant::now();
    let slow = {
        let c = c.clone();
        tokio::spawn(async move {
            let req = RemotingCommand::new_request(SLOW, ExtFields::default())
                .with_body(b"slow".to_vec());
            let r = c.request(req, T).await.unwrap();
            (r, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    // While SLOW waits, 100 echoes on the same connection are each answered with their own
    // body, well before SLOW's reply.
    let echoes: Vec<_> = (0..100)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move {
                let req = RemotingCommand::new_request(ECHO, ExtFields::default())
                    .with_body(format!("e{i}").into_bytes());
                let r = c.request(req, T).await.unwrap();
                assert_eq!(r.body.as_deref(), Some(format!("e{i}").as_bytes()));
            })
        })
        .collect();
    for e in echoes {
        e.await.unwrap();
    }
    let echoes_done = started.elapsed();
    c.oneway(RemotingCommand::new_request(NOTE, ExtFields::default()))
        .await
        .unwrap();
    let (r, slow_done) = slow.await.unwrap();
    assert_eq!(r.body.as_deref(), Some(&b"slow"[..]));
    assert!(
        echoes_done < Duration::from_millis(250) && slow_done >= Duration::from_millis(300),
        "echoes took {echoes_done:?}, the slow request {slow_done:?}"
    );
    // The oneway note was handled and answered nothing: the next request still matches.
    let r = c
        .request(
            RemotingCommand::new_request(ECHO, ExtFields::default()).with_body(b"last".to_vec()),
            T,
        )
        .await
        .unwrap();
    assert_eq!(r.body.as_deref(), Some(&b"last"[..]));
    assert_eq!(h.notes.load(Ordering::SeqCst), 1);
    srv.shutdown().await;
}
