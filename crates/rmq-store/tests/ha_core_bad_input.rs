//! Bad input on the HA channel, from raw sockets: the master closes a connection that sends
//! garbage, a negative offset or one past its CommitLog, and keeps serving; a slave closes a
//! connection whose frame does not continue its CommitLog, writes nothing of it, and
//! reconnects.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::{msg, open};
use rmq_store::ha::connection::frame_header;

/// Whether the peer closes `s` (EOF or reset) within 30 s, reading and discarding what it sends.
fn closed_by_peer(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let t0 = Instant::now();
    let mut buf = [0u8; 4096];
    while t0.elapsed() < Duration::from_secs(30) {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn the_master_closes_connections_that_send_bad_offsets_and_keeps_serving() {
    let d = tempfile::tempdir().unwrap();
    let m = open(d.path(), &[("brokerRole", "ASYNC_MASTER")]);
    m.put_message(&msg("Bad", 0, b"hello", b"")).unwrap();
    let port = m.ha_listen_port().unwrap();
    let max = m.get_max_phy_offset();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "http garbage",
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        ("negative offset", (-5i64).to_be_bytes().to_vec()),
        ("a slave ahead", (max + 4096).to_be_bytes().to_vec()),
    ];
    for (what, bytes) in cases {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(&bytes).unwrap();
        assert!(
            closed_by_peer(&mut s),
            "{what}: the master kept the connection"
        );
    }
    // A good slave report still gets data from its offset.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(&0i64.to_be_bytes()).unwrap();
    let mut header = [0u8; 12];
    s.read_exact(&mut header).unwrap();
    assert_eq!(header, frame_header(0, usize::try_from(max).unwrap()));
    assert!(m.put_message(&msg("Bad", 0, b"still fine", b"")).is_ok());
    m.shutdown().unwrap();
}

#[test]
fn a_slave_refuses_frames_that_do_not_continue_its_commit_log() {
    // A fake master: the slave connects, reports its max, and gets a bad frame.
    let fake = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = fake.local_addr().unwrap().port();
    let sd = tempfile::tempdir().unwrap();
    let s = open(
        sd.path(),
        &[
            ("brokerRole", "SLAVE"),
            ("haMasterAddress", &format!("127.0.0.1:{port}")),
        ],
    );
    let accept = || {
        let (mut c, _) = fake.accept().unwrap();
        let mut off = [0u8; 8];
        c.read_exact(&mut off).unwrap();
        (c, i64::from_be_bytes(off))
    };
    // 1. Garbage: a negative body size.
    let (mut c, reported) = accept();
    assert_eq!(reported, 0);
    let mut bad = frame_header(0, 0);
    bad[8..].copy_from_slice(&(-7i32).to_be_bytes());
    c.write_all(&bad).unwrap();
    assert!(closed_by_peer(&mut c), "the slave kept a garbage stream");
    // 2. A frame starting mid-file on an empty slave: refused, nothing written.
    let (mut c, reported) = accept();
    assert_eq!(
        reported, 0,
        "the slave reconnects and reports its max again"
    );
    let mut frame = frame_header(100, 4).to_vec();
    frame.extend_from_slice(b"abcd");
    c.write_all(&frame).unwrap();
    assert!(closed_by_peer(&mut c));
    assert_eq!(s.get_max_phy_offset(), 0);
    // 3. Good data, then a frame that skips ahead: the first is kept, the second refused.
    let (mut c, _) = accept();
    let mut frame = frame_header(0, 8).to_vec();
    frame.extend_from_slice(&[0u8; 8]);
    c.write_all(&frame).unwrap();
    let mut off = [0u8; 8];
    c.read_exact(&mut off).unwrap();
    assert_eq!(
        i64::from_be_bytes(off),
        8,
        "the slave reports what it appended"
    );
    let mut skip = frame_header(64, 4).to_vec();
    skip.extend_from_slice(b"wxyz");
    c.write_all(&skip).unwrap();
    assert!(closed_by_peer(&mut c));
    assert_eq!(s.get_max_phy_offset(), 8);
    let (_c, reported) = accept();
    assert_eq!(reported, 8, "the slave resumes from its own max");
    s.ha_update_master_address("").unwrap();
    s.shutdown().unwrap();
}
