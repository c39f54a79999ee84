//! Helpers the store's integration tests share: a store config with small files, the broker
//! address, messages and property bytes to put, waiting for dispatch to reach a queue, and
//! reading a queue's bodies back.
//!
//! Each test file is its own crate and uses only some of these, hence `dead_code` allowed.
#![allow(dead_code, reason = "each test file uses its own part")]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_common::properties::Properties;
use rmq_store::format::{scan_record, Scan};
use rmq_store::{MessageStore, MessageToStore, StoreConfig};

/// The address the test stores are opened with (and message ids are made of).
pub(crate) fn host() -> SocketAddr {
    "127.0.0.1:10911".parse().unwrap()
}

/// A config with a 1 MiB CommitLog file, a small index and the disk guard at 99 % (a busy
/// shared /tmp must not make the store refuse the test's writes) and an ephemeral HA port; `extra` is set after these,
/// so it may override them.
pub(crate) fn config(extra: &[(&str, &str)]) -> StoreConfig {
    let mut pairs = vec![
        ("mappedFileSizeCommitLog", "1048576"),
        ("maxHashSlotNum", "64"),
        ("maxIndexNum", "256"),
        ("diskSpaceWarningLevelRatio", "99"),
        // Masters bind their HA port: any free one, so tests never collide.
        ("haListenPort", "0"),
    ];
    pairs.extend_from_slice(extra);
    StoreConfig::from_pairs(pairs).unwrap()
}

/// A store in `dir` opened with [`config`]`(extra)`.
pub(crate) fn open(dir: &Path, extra: &[(&str, &str)]) -> Arc<MessageStore> {
    MessageStore::open(dir, config(extra), host()).unwrap()
}

/// A message to put: flag 5, born at 42 from 127.0.0.1:5000, never reconsumed.
pub(crate) fn msg<'a>(
    topic: &'a str,
    qid: i32,
    body: &'a [u8],
    props: &'a [u8],
) -> MessageToStore<'a> {
    MessageToStore {
        topic,
        queue_id: qid,
        flag: 5,
        body,
        properties: props,
        sys_flag: 0,
        born_timestamp: 42,
        born_host: "127.0.0.1:5000".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// The encoded properties of `pairs`.
pub(crate) fn props(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut p = Properties::new();
    for (k, v) in pairs {
        p.put(*k, *v);
    }
    p.encode().into_bytes()
}

/// Wait until `topic`/`q` holds `n` messages; fail after `secs` seconds.
pub(crate) fn wait_dispatched(store: &MessageStore, topic: &str, q: i32, n: i64, secs: u64) {
    let t0 = Instant::now();
    while store.get_max_offset_in_queue(topic, q) < n {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "{topic}/{q}: {} of {n} within {secs} s",
            store.get_max_offset_in_queue(topic, q)
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A tmpfs of `size_mib` MiB mounted on `dir` (created) until dropped: a disk that really fills,
/// for the ENOSPC and disk-usage tests, without filling the machine's. Mounting needs root,
/// which this project's machines and CI run as; otherwise this panics with the reason.
pub(crate) struct SmallFilesystem(std::path::PathBuf);

impl SmallFilesystem {
    pub(crate) fn mount(dir: &Path, size_mib: u32) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size_mib}m,mode=0755"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "could not mount a {size_mib} MiB tmpfs on {}: {}; the fault tests need root",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Self(dir.to_owned())
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for SmallFilesystem {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// The bodies of up to `max` messages of `topic`/`qid` from queue offset `from` (each record
/// decoded with its CRC checked).
pub(crate) fn bodies(
    store: &MessageStore,
    topic: &str,
    qid: i32,
    from: i64,
    max: usize,
) -> Vec<Vec<u8>> {
    let r = store.get_message(topic, qid, from, max, None);
    r.messages
        .iter()
        .map(|m| match scan_record(m.bytes(), true) {
            Scan::Message(rec) => rec.body.to_vec(),
            other => panic!("bad record {other:?}"),
        })
        .collect()
}
