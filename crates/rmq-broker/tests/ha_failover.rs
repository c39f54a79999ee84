//! `suggestWhichBrokerId` on the pull path and a slave serving pulls, on a real broker over a
//! real store: `slaveReadEnable` with cold data (`accessMessageInMemoryMaxRatio` 0 makes every
//! read cold) suggests the group's `whichBrokerWhenConsumeSlowly`, hot data its `brokerId`,
//! and without `slaveReadEnable` the master; a slave (a byte copy of a stopped master's store,
//! reopened as SLAVE with brokerId 1) serves the messages, never moves a consumer's offset and
//! does not store the offset a pull carries.

use std::path::Path;

use rmq_protocol::body::SubscriptionGroupConfig;
use rmq_protocol::header::{pull_sys_flag, PullMessageResponseHeader};
use rmq_protocol::message_decoder::decode_messages;
use rmq_protocol::{CommandHeader, RemotingCommand, ResponseCode};
use rmq_remoting::Connection;

mod common;
use common::{pull, send_ok, send_v2, Env, T};

const COLD: &[(&str, &str)] = &[("accessMessageInMemoryMaxRatio", "0")];

/// A broker under `dir` with the store keys `extra`, `slaveReadEnable` as given, and six
/// messages in `Auto1` queue 1 (sent first when `send`).
async fn broker(dir: &Path, extra: &[(&str, &str)], slave_read: bool, send: bool) -> Env {
    let env = common::start(dir, extra, |c| c.slave_read_enable = slave_read).await;
    if send {
        let c = env.client().await;
        for i in 0..6 {
            send_ok(&c, send_v2("Auto1", 1, "TagA", format!("m{i}").as_bytes())).await;
        }
    }
    env.wait_dispatched("Auto1", 1, 6).await;
    env
}

/// PULL_MESSAGE of group CG from `offset`; the answer and its header.
async fn pull_at(c: &Connection, offset: i64) -> (RemotingCommand, PullMessageResponseHeader) {
    let r = c
        .request(pull("Auto1", 1, offset, "*", 0), T)
        .await
        .unwrap();
    let h = PullMessageResponseHeader::from_ext_fields(&r.ext_fields).unwrap();
    (r, h)
}

fn set_group(env: &Env, f: impl FnOnce(&mut SubscriptionGroupConfig)) {
    let groups = &env.ctl.broker().groups;
    let mut g = groups.find_or_create("CG").unwrap();
    f(&mut g);
    groups.update(g);
}

#[tokio::test]
async fn the_master_suggests_a_slave_only_for_cold_data_with_slave_read_enable() {
    let dir = tempfile::tempdir().unwrap();
    // Cold data, slaveReadEnable on: the group's whichBrokerWhenConsumeSlowly (1, then 2).
    let env = broker(dir.path(), COLD, true, true).await;
    let c = env.client().await;
    let (r, h) = pull_at(&c, 0).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    assert_eq!(h.suggest_which_broker_id, 1);
    set_group(&env, |g| g.which_broker_when_consume_slowly = 2);
    assert_eq!(pull_at(&c, 0).await.1.suggest_which_broker_id, 2);
    env.stop().await;

    // The same cold data without slaveReadEnable: the master.
    let env = broker(dir.path(), COLD, false, false).await;
    let c = env.client().await;
    let (r, h) = pull_at(&c, 0).await;
    assert_eq!((r.code, h.suggest_which_broker_id), (0, 0));
    env.stop().await;

    // Hot data (the default 40 % of RAM), slaveReadEnable on: the group's brokerId.
    let env = broker(dir.path(), &[], true, false).await;
    let c = env.client().await;
    assert_eq!(pull_at(&c, 0).await.1.suggest_which_broker_id, 0);
    set_group(&env, |g| g.broker_id = 1);
    assert_eq!(pull_at(&c, 0).await.1.suggest_which_broker_id, 1);
    env.stop().await;
}

#[tokio::test]
async fn a_slave_serves_pulls_keeps_offsets_and_suggests_its_master() {
    let dir = tempfile::tempdir().unwrap();
    let master = broker(dir.path(), &[], false, true).await;
    master.stop().await;
    let slave_keys: &[(&str, &str)] = &[("brokerRole", "SLAVE")];
    let slave = common::start(dir.path(), slave_keys, |c| c.broker_id = 1).await;
    slave.wait_dispatched("Auto1", 1, 6).await;
    let c = slave.client().await;

    // Served (RocketMQ answers PULL_RETRY_IMMEDIATELY here), and the master suggested.
    let (r, h) = pull_at(&c, 2).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let bodies: Vec<Vec<u8>> = decode_messages(r.body.as_ref().unwrap())
        .unwrap()
        .into_iter()
        .map(|m| m.body.to_vec())
        .collect();
    assert_eq!(bodies, [b"m2", b"m3", b"m4", b"m5"]);
    assert_eq!((h.next_begin_offset, h.suggest_which_broker_id), (6, 0));

    // Past the slave's queue (it may lag its master): ask again, the offset stays.
    let (r, h) = pull_at(&c, 60).await;
    assert_eq!(r.code, ResponseCode::PULL_RETRY_IMMEDIATELY.0);
    assert_eq!(h.next_begin_offset, 60);

    // The offset a pull carries is not stored on a slave.
    let mut req = pull("Auto1", 1, 0, "*", 0);
    req.ext_fields.insert(
        "sysFlag",
        pull_sys_flag::build(true, false, true, false).to_string(),
    );
    req.ext_fields.insert("commitOffset", "4");
    assert_eq!(c.request(req, T).await.unwrap().code, 0);
    assert_eq!(slave.ctl.broker().offsets.query("CG", "Auto1", 1), -1);
    slave.stop().await;

    // With slaveReadEnable and cold data, the slave suggests the slow-consumer broker.
    let cold_slave: Vec<(&str, &str)> = slave_keys.iter().chain(COLD).copied().collect();
    let slave = common::start(dir.path(), &cold_slave, |c| {
        c.broker_id = 1;
        c.slave_read_enable = true;
    })
    .await;
    slave.wait_dispatched("Auto1", 1, 6).await;
    let (r, h) = pull_at(&slave.client().await, 0).await;
    assert_eq!((r.code, h.suggest_which_broker_id), (0, 1));
    slave.stop().await;
}
