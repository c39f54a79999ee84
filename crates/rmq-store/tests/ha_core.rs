//! Replication between two stores in temp dirs over 127.0.0.1: byte-identical CommitLogs,
//! the slave's own ConsumeQueues, resuming from the slave's own max offset, SYNC_MASTER's
//! statuses, and truncating a CommitLog.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{msg, open, props};
use rmq_store::{BrokerRole, GetMessageStatus, MessageStore, PutMessageStatus};

fn wait_until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(secs), "{what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn master(dir: &Path, role: &str) -> Arc<MessageStore> {
    open(dir, &[("brokerRole", role), ("syncFlushTimeout", "1000")])
}

fn slave(dir: &Path, port: u16) -> Arc<MessageStore> {
    let addr = format!("127.0.0.1:{port}");
    open(dir, &[("brokerRole", "SLAVE"), ("haMasterAddress", &addr)])
}

/// Every CommitLog file of `dir`, by name, with its bytes.
fn commit_log_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("commitlog"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn put_burst(m: &MessageStore, n: usize, tag: &str) {
    let p = props(&[("KEYS", tag)]);
    for i in 0..n {
        let body = format!("{tag}-{i}-{}", "x".repeat(700 + i % 300));
        let r = m.put_message(&msg("HaTopic", (i % 4) as i32, body.as_bytes(), &p));
        assert!(r.is_ok(), "{r:?}");
    }
}

fn caught_up(m: &MessageStore, s: &MessageStore) -> bool {
    s.get_max_phy_offset() == m.get_max_phy_offset() && s.dispatch_behind_bytes() == 0
}

#[test]
fn async_slave_copies_the_commit_log_byte_for_byte_and_resumes_from_its_own_max() {
    let (md, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(md.path(), "ASYNC_MASTER");
    let port = m.ha_listen_port().expect("a master listens");
    let s = slave(sd.path(), port);
    assert_eq!(s.ha_listen_port(), None);
    // 3000 records of ~1 KiB: about three 1 MiB files, so BLANK fillers are copied too.
    put_burst(&m, 3000, "first");
    wait_until("the slave catches up", 60, || caught_up(&m, &s));
    let info = m.ha_runtime_info();
    assert!(info.master);
    assert_eq!(info.ha_connection_info.len(), 1);
    wait_until("the lag returns to zero", 30, || {
        m.ha_runtime_info().ha_connection_info[0].diff == 0
    });
    // The slave's own dispatch built its ConsumeQueues: the same messages are readable.
    for q in 0..4 {
        assert_eq!(
            s.get_max_offset_in_queue("HaTopic", q),
            m.get_max_offset_in_queue("HaTopic", q)
        );
    }
    let got = s.get_message("HaTopic", 1, 10, 1, None);
    assert_eq!(got.status, GetMessageStatus::Found);
    let want = m.get_message("HaTopic", 1, 10, 1, None);
    assert_eq!(got.messages[0].bytes(), want.messages[0].bytes());
    let first_size = m.get_max_phy_offset();
    m.flush().unwrap();
    s.flush().unwrap();
    assert_eq!(commit_log_files(md.path()), commit_log_files(sd.path()));

    // Restart the slave while the master goes on: it resumes from its own max offset.
    s.shutdown().unwrap();
    drop(s);
    put_burst(&m, 500, "second");
    let s = slave(sd.path(), port);
    wait_until("the restarted slave catches up", 60, || caught_up(&m, &s));
    let client = s.ha_runtime_info().ha_client_runtime_info.unwrap();
    let second_size = m.get_max_phy_offset() - first_size;
    let received = i64::try_from(client.received_total).unwrap();
    assert!(
        received >= second_size && received < second_size + first_size / 2,
        "received {received} bytes for a {second_size}-byte gap (the log is {first_size} + \
         {second_size}): not resumed from the slave's own max"
    );
    assert!(client.is_activated);
    m.flush().unwrap();
    s.flush().unwrap();
    assert_eq!(commit_log_files(md.path()), commit_log_files(sd.path()));
    s.shutdown().unwrap();
    m.shutdown().unwrap();
}

#[test]
fn a_slave_refuses_client_puts() {
    let sd = tempfile::tempdir().unwrap();
    let s = open(sd.path(), &[("brokerRole", "SLAVE")]);
    let err = s
        .put_message(&msg("HaTopic", 0, b"x", b""))
        .unwrap_err()
        .to_string();
    assert!(err.contains("slave"), "{err}");
    s.shutdown().unwrap();
}

#[test]
fn sync_master_acks_only_what_a_slave_has() {
    let (md, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(md.path(), "SYNC_MASTER");
    // No slave: stored, but SLAVE_NOT_AVAILABLE.
    let r = m.put_message(&msg("HaTopic", 0, b"alone", b"")).unwrap();
    assert_eq!(r.status, PutMessageStatus::SlaveNotAvailable);
    let s = slave(sd.path(), m.ha_listen_port().unwrap());
    wait_until("the slave connects and catches up", 30, || {
        m.ha().connection_count() == 1 && caught_up(&m, &s)
    });
    // From several threads at once: each ack comes only once the slave holds the message.
    std::thread::scope(|sc| {
        for t in 0..4 {
            let (m, s) = (&m, &s);
            sc.spawn(move || {
                for i in 0..200 {
                    let body = format!("sync-{t}-{i}");
                    let r = m
                        .put_message(&msg("HaTopic", t, body.as_bytes(), b""))
                        .unwrap();
                    assert_eq!(r.status, PutMessageStatus::PutOk);
                    assert!(s.get_max_phy_offset() >= r.append.end_offset());
                }
            });
        }
    });
    // The async form resolves the same way.
    let a = m.append_one(&msg("HaTopic", 0, b"future", b"")).unwrap();
    match m.replica_future(a.end_offset()) {
        rmq_store::ReplicaWait::Wait(f) => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            assert!(rt.block_on(f));
            assert!(s.get_max_phy_offset() >= a.end_offset());
        }
        _ => panic!("a SYNC_MASTER with a slave waits for it"),
    }
    s.shutdown().unwrap();
    drop(s);
    wait_until("the master notices the slave left", 30, || {
        m.ha().connection_count() == 0
    });
    let r = m.put_message(&msg("HaTopic", 0, b"gone", b"")).unwrap();
    assert_eq!(r.status, PutMessageStatus::SlaveNotAvailable);
    m.shutdown().unwrap();
}

#[test]
fn sync_master_times_out_on_a_stalled_slave() {
    use std::io::Write;
    let md = tempfile::tempdir().unwrap();
    let m = master(md.path(), "SYNC_MASTER");
    m.put_message(&msg("HaTopic", 0, b"before", b"")).unwrap();
    // A "slave" that reports the master's max once and then never acknowledges anything.
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", m.ha_listen_port().unwrap())).unwrap();
    raw.write_all(&m.get_max_phy_offset().to_be_bytes())
        .unwrap();
    wait_until("the master sees the slave", 30, || {
        m.ha_runtime_info()
            .ha_connection_info
            .first()
            .is_some_and(|c| c.slave_ack_offset == m.get_max_phy_offset())
    });
    let r = m.put_message(&msg("HaTopic", 0, b"stalled", b"")).unwrap();
    assert_eq!(r.status, PutMessageStatus::FlushSlaveTimeout);
    // The message is stored all the same.
    assert_eq!(m.get_max_offset_in_queue("HaTopic", 0), 2);
    drop(raw);
    m.shutdown().unwrap();
}

#[test]
fn truncate_commit_log_drops_records_and_their_queue_units() {
    let d = tempfile::tempdir().unwrap();
    let m = master(d.path(), "ASYNC_MASTER");
    let mut ends = Vec::new();
    for i in 0..10 {
        let body = format!("t-{i}");
        ends.push(
            m.put_message(&msg("Tr", 0, body.as_bytes(), b""))
                .unwrap()
                .append,
        );
    }
    common::wait_dispatched(&m, "Tr", 0, 10, 30);
    let max = m.get_max_phy_offset();
    assert_eq!(
        m.truncate_commit_log(max).unwrap(),
        max,
        "the max is a no-op"
    );
    let cut = ends[6].wrote_offset;
    let err = m.truncate_commit_log(cut + 3).unwrap_err().to_string();
    assert!(err.contains("no record starts there"), "{err}");
    assert!(m.truncate_commit_log(max + 100).is_err());
    assert_eq!(m.truncate_commit_log(cut).unwrap(), cut);
    assert_eq!(m.get_max_phy_offset(), cut);
    assert_eq!(m.get_max_offset_in_queue("Tr", 0), 6);
    // New puts continue at queue offset 6, at the cut.
    let r = m.put_message(&msg("Tr", 0, b"after", b"")).unwrap();
    assert_eq!((r.append.wrote_offset, r.append.queue_offset), (cut, 6));
    common::wait_dispatched(&m, "Tr", 0, 7, 30);
    let got = m.get_message("Tr", 0, 6, 1, None);
    assert!(got.messages[0].bytes().windows(5).any(|w| w == b"after"));
    m.shutdown().unwrap();
    // It holds across a restart.
    let m = master(d.path(), "ASYNC_MASTER");
    assert_eq!(m.get_max_offset_in_queue("Tr", 0), 7);
    m.shutdown().unwrap();
}

#[test]
fn roles_switch_at_run_time() {
    let (md, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(md.path(), "ASYNC_MASTER");
    let s = slave(sd.path(), m.ha_listen_port().unwrap());
    put_burst(&m, 50, "pre");
    wait_until("the slave catches up", 30, || caught_up(&m, &s));
    m.shutdown().unwrap();
    // Promote the slave: it stops following, accepts writes, continues the queue offsets.
    s.set_broker_role(BrokerRole::AsyncMaster).unwrap();
    assert!(s.ha_listen_port().is_some());
    let before = s.get_max_offset_in_queue("HaTopic", 0);
    let r = s.put_message(&msg("HaTopic", 0, b"promoted", b"")).unwrap();
    assert_eq!(r.append.queue_offset, before);
    // And back to a slave: writes refused again.
    s.set_broker_role(BrokerRole::Slave).unwrap();
    assert!(s.ha_listen_port().is_none());
    assert!(s.put_message(&msg("HaTopic", 0, b"x", b"")).is_err());
    s.shutdown().unwrap();
}
