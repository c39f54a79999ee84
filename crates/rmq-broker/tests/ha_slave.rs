//! A broker group's requests over a real broker: a slave (`set_slave_of`) refuses sends and
//! send-backs naming its master and still serves pulls; a master serves its consumer offsets
//! (GET_ALL_CONSUMER_OFFSET, 43); a slave takes its master's tables whole only when the data
//! version moved, and its offsets as RocketMQ's `putAll` does.

use rmq_protocol::body::{
    ConsumerOffsetSerializeWrapper, DataVersion, TopicConfig, TopicConfigSerializeWrapper,
};
use rmq_protocol::{ExtFields, RemotingCommand, RemotingJson, RequestCode, ResponseCode};

mod common;
use common::{assert_refused, call, pull, send_ok, send_v2};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_refuses_writes_naming_its_master_and_serves_pulls() {
    let dir = tempfile::tempdir().unwrap();
    let env = common::start(dir.path(), &[], |_| {}).await;
    let c = env.client().await;
    send_ok(&c, send_v2("HT", 0, "a", b"one")).await;
    env.wait_dispatched("HT", 0, 1).await;

    env.ctl.broker().set_slave_of(Some("10.0.0.1:10911".into()));
    let r = call(&c, send_v2("HT", 0, "a", b"two")).await;
    assert_refused(
        &r,
        ResponseCode::SERVICE_NOT_AVAILABLE,
        "its master is 10.0.0.1:10911",
    );
    let back =
        RemotingCommand::new_request(RequestCode::CONSUMER_SEND_MSG_BACK.0, ExtFields::default());
    let r = call(&c, back).await;
    assert_refused(&r, ResponseCode::SERVICE_NOT_AVAILABLE, "is a slave");
    let r = call(&c, pull("HT", 0, 0, "*", 0)).await;
    assert_eq!(r.code, ResponseCode::SUCCESS.0, "{:?}", r.remark);

    env.ctl.broker().set_slave_of(None); // promoted
    send_ok(&c, send_v2("HT", 0, "a", b"three")).await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_serves_its_offsets_and_a_slave_takes_tables() {
    let dir = tempfile::tempdir().unwrap();
    let env = common::start(dir.path(), &[], |_| {}).await;
    let b = env.ctl.broker();
    b.offsets.commit("G", "T", 0, 12);
    let c = env.client().await;
    let r = call(
        &c,
        RemotingCommand::new_request(RequestCode::GET_ALL_CONSUMER_OFFSET.0, ExtFields::default()),
    )
    .await;
    let body = ConsumerOffsetSerializeWrapper::from_json_bytes(r.body.as_deref().unwrap()).unwrap();
    assert_eq!(body.offset_table["T@G"][&0], 12);

    // putAll: the master's entries win, others stay.
    b.offsets.commit("G", "T", 1, 5);
    let master =
        ConsumerOffsetSerializeWrapper::from_json_bytes(b"{\"offsetTable\":{\"T@G\":{0:3}}}")
            .unwrap();
    b.offsets.put_all(master);
    assert_eq!(
        (b.offsets.query("G", "T", 0), b.offsets.query("G", "T", 1)),
        (3, 5)
    );

    // Topics: taken whole when the version differs, untouched when it is the same.
    let mut table = std::collections::BTreeMap::new();
    table.insert("OnlyOnMaster".to_owned(), TopicConfig::new("OnlyOnMaster"));
    let version = DataVersion {
        counter: 77,
        timestamp: 1,
    };
    let w = TopicConfigSerializeWrapper {
        topic_config_table: table,
        data_version: version,
    };
    assert!(b.topics.replace_from_master(w.clone()).unwrap());
    assert!(b.topics.select("OnlyOnMaster").is_some());
    assert!(!b.topics.replace_from_master(w).unwrap());
    env.stop().await;
}
