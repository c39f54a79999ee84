//! The broker the integration tests run: a real `BrokerController` on 127.0.0.1:0 over a
//! store in a temp dir, with small files.
#![allow(dead_code)] // each test file uses its own part

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmq_broker::{BrokerConfig, BrokerController};
use rmq_remoting::{connect, Connection, ServerHandle};
use rmq_store::{MessageStore, StoreConfig};

/// Timeout of the tests' requests and waits.
pub(crate) const T: Duration = Duration::from_secs(5);

/// Store keys every test broker starts from.
const SMALL_STORE: &[(&str, &str)] = &[
    ("mappedFileSizeCommitLog", "1048576"),
    ("mappedFileSizeConsumeQueue", "4000"),
    ("maxHashSlotNum", "64"),
    ("maxIndexNum", "256"),
    ("flushIntervalCommitLog", "10"),
    ("flushIntervalConsumeQueue", "10"),
    // A busy shared /tmp must not make the store refuse the test's writes.
    ("diskSpaceWarningLevelRatio", "99"),
];

pub(crate) struct Env {
    pub ctl: BrokerController,
    pub server: ServerHandle,
    pub store: Arc<MessageStore>,
    pub addr: SocketAddr,
}

/// A broker under `dir`: [`SMALL_STORE`] then the store keys `extra`, and the broker config
/// `configure` adjusts.
pub(crate) async fn start(
    dir: &Path,
    extra: &[(&str, &str)],
    configure: impl FnOnce(&mut BrokerConfig),
) -> Env {
    let sc = StoreConfig::from_pairs(SMALL_STORE.iter().chain(extra).copied()).unwrap();
    let mut cfg = BrokerConfig {
        config_dir: dir.join("config"),
        ..BrokerConfig::default()
    };
    configure(&mut cfg);
    let store = MessageStore::open(dir.join("store"), sc, cfg.broker_addr).unwrap();
    let ctl = BrokerController::new(cfg, Arc::clone(&store), None).unwrap();
    let server = ctl.start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = server.local_addr();
    Env {
        ctl,
        server,
        store,
        addr,
    }
}

impl Env {
    pub(crate) async fn client(&self) -> Connection {
        connect(self.addr, None, T).await.unwrap()
    }

    pub(crate) async fn stop(self) {
        self.ctl.shutdown().unwrap();
        self.server.shutdown().await;
        drop(self.ctl);
        self.store.shutdown().unwrap();
    }
}
