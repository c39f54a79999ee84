//! plain_acl.yml parsing (errors with file:line:key), the check of signed requests in
//! RocketMQ's order, reload and the ACL admin edits, on real files in temp dirs.

use std::net::IpAddr;
use std::path::Path;

use bytes::Bytes;
use rmq_acl::{AccountUpdate, AclError, AclFile, AclRules, Policy};
use rmq_protocol::acl::{sign_request, SessionCredentials};
use rmq_protocol::{ExtFields, RemotingCommand, RequestCode};

const FILE: &str = "\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn rules() -> AclRules {
    rmq_acl::config::parse(Path::new("plain_acl.yml"), FILE).unwrap()
}

fn request(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
    let mut ext = ExtFields::new();
    for (k, v) in fields {
        ext.insert(*k, *v);
    }
    let mut cmd = RemotingCommand::new_request(code.0, ext);
    cmd.body = Some(Bytes::from_static(b"body"));
    cmd
}

fn signed(mut cmd: RemotingCommand, ak: &str, sk: &str) -> RemotingCommand {
    sign_request(&mut cmd, &SessionCredentials::new(ak, sk));
    cmd
}

fn send(topic: &str) -> RemotingCommand {
    request(RequestCode::SEND_MESSAGE_V2, &[("a", "PG"), ("b", topic)])
}

fn refusal(r: &AclRules, peer: &str, cmd: &RemotingCommand) -> String {
    r.check(ip(peer), cmd, Policy::Broker).unwrap_err().0
}

#[test]
fn the_sample_file_parses() {
    let r = rules();
    assert_eq!(r.accounts.len(), 2);
    assert!(r.accounts["rocketmq2"].admin);
    assert_eq!(
        r.accounts["RocketMQ"].secret_key, "12345678",
        "numbers are read as text"
    );
}

#[test]
fn signature_address_and_permissions_in_rocketmqs_order() {
    let r = rules();
    let peer = "127.0.0.1";
    // global white list: no signature needed at all
    assert!(r
        .check(ip("10.10.103.9"), &send("topicA"), Policy::Broker)
        .is_ok());
    // no AccessKey
    assert!(refusal(&r, peer, &send("topicB")).contains("no AccessKey"));
    // unknown account
    let e = refusal(&r, peer, &signed(send("topicB"), "nobody12", "12345678"));
    assert!(e.contains("account 'nobody12' is not known"), "{e}");
    // wrong secret
    let e = refusal(
        &r,
        peer,
        &signed(send("topicB"), "RocketMQ", "wrong-secret"),
    );
    assert!(
        e.contains("signature check failed for account 'RocketMQ'"),
        "{e}"
    );
    assert!(
        !e.contains("12345678"),
        "a remark never shows the secret: {e}"
    );
    // tampered header and body
    let mut cmd = signed(send("topicB"), "RocketMQ", "12345678");
    assert!(r.check(ip(peer), &cmd, Policy::Broker).is_ok());
    cmd.ext_fields.insert("b", "topicC");
    assert!(refusal(&r, peer, &cmd).contains("signature check failed"));
    let mut cmd = signed(send("topicB"), "RocketMQ", "12345678");
    cmd.body = Some(Bytes::from_static(b"other"));
    assert!(refusal(&r, peer, &cmd).contains("signature check failed"));
    // permissions
    let e = refusal(&r, peer, &signed(send("topicA"), "RocketMQ", "12345678"));
    assert_eq!(
        e,
        "account 'RocketMQ' has no PUB permission on topic 'topicA'"
    );
    let e = refusal(&r, peer, &signed(send("topicC"), "RocketMQ", "12345678"));
    assert_eq!(
        e,
        "account 'RocketMQ' has no PUB permission on topic 'topicC'"
    );
    let e = refusal(&r, peer, &signed(send("other"), "RocketMQ", "12345678"));
    assert!(
        e.contains("no PUB permission on topic 'other'"),
        "defaultTopicPerm DENY: {e}"
    );
    // pulls need SUB on the topic and on the group
    let pull = |t: &str, g: &str| {
        request(
            RequestCode::PULL_MESSAGE,
            &[("topic", t), ("consumerGroup", g)],
        )
    };
    assert!(r
        .check(
            ip(peer),
            &signed(pull("topicC", "groupB"), "RocketMQ", "12345678"),
            Policy::Broker
        )
        .is_ok());
    let e = refusal(
        &r,
        peer,
        &signed(pull("topicC", "groupA"), "RocketMQ", "12345678"),
    );
    assert_eq!(
        e,
        "account 'RocketMQ' has no SUB permission on group 'groupA'"
    );
    // retry and DLQ topics are their group's
    let e = refusal(
        &r,
        peer,
        &signed(send("%RETRY%groupA"), "RocketMQ", "12345678"),
    );
    assert!(e.contains("group 'groupA'"), "{e}");
    assert!(r
        .check(
            ip(peer),
            &signed(send("%DLQ%groupB"), "RocketMQ", "12345678"),
            Policy::Broker
        )
        .is_ok());
    // admin codes
    let create = request(RequestCode::UPDATE_AND_CREATE_TOPIC, &[("topic", "X")]);
    let e = refusal(&r, peer, &signed(create.clone(), "RocketMQ", "12345678"));
    assert!(e.contains("account 'RocketMQ' is not an admin"), "{e}");
    assert!(e.contains("UPDATE_AND_CREATE_TOPIC"), "{e}");
    assert!(r
        .check(
            ip(peer),
            &signed(create, "rocketmq2", "12345678"),
            Policy::Broker
        )
        .is_ok());
}

#[test]
fn the_account_white_address_skips_the_signature() {
    let r = rules();
    let unsigned = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[("AccessKey", "rocketmq2")],
    );
    assert!(r
        .check(ip("192.168.1.7"), &unsigned, Policy::Broker)
        .is_ok());
    assert!(r
        .check(ip("192.168.2.7"), &unsigned, Policy::Broker)
        .is_err());
}

#[test]
fn heartbeats_need_sub_on_groups_and_topics() {
    let r = rules();
    let mut hb = request(RequestCode::HEART_BEAT, &[]);
    hb.body = Some(Bytes::from_static(
        br#"{"clientID":"c","consumerDataSet":[{"groupName":"groupA","subscriptionDataSet":[{"topic":"topicC"}]}],"producerDataSet":[]}"#,
    ));
    let e = refusal(&r, "127.0.0.1", &signed(hb, "RocketMQ", "12345678"));
    assert_eq!(
        e,
        "account 'RocketMQ' has no SUB permission on group 'groupA'"
    );
}

#[test]
fn the_nameserver_policy() {
    let r = rules();
    let reg = request(RequestCode::REGISTER_BROKER, &[("brokerName", "b")]);
    assert!(refusal_ns(&r, &reg).contains("no AccessKey"));
    let e = refusal_ns(&r, &signed(reg.clone(), "RocketMQ", "12345678"));
    assert!(
        e.contains("is not an admin") && e.contains("REGISTER_BROKER"),
        "{e}"
    );
    assert!(r
        .check(
            ip("127.0.0.1"),
            &signed(reg, "rocketmq2", "12345678"),
            Policy::Namesrv
        )
        .is_ok());
    let route = request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", "topicA")]);
    assert!(refusal_ns(&r, &route).contains("no AccessKey"));
    assert!(r
        .check(
            ip("127.0.0.1"),
            &signed(route, "RocketMQ", "12345678"),
            Policy::Namesrv
        )
        .is_ok());
}

fn refusal_ns(r: &AclRules, cmd: &RemotingCommand) -> String {
    r.check(ip("127.0.0.1"), cmd, Policy::Namesrv)
        .unwrap_err()
        .0
}

fn file_error(text: &str) -> String {
    let e = rmq_acl::config::parse(Path::new("/etc/plain_acl.yml"), text).unwrap_err();
    assert!(matches!(e, AclError::File { .. }), "{e:?}");
    e.to_string()
}

#[test]
fn bad_files_name_the_file_line_and_key() {
    let e = file_error("accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    defaultTopicPerm: PUBLISH\n");
    assert!(
        e.starts_with("bad ACL file /etc/plain_acl.yml:4: key accounts[0].defaultTopicPerm:"),
        "{e}"
    );
    assert!(e.contains("'PUBLISH' is not a permission"), "{e}");
    let e = file_error("accounts:\n  - accessKey: RocketMQ\n    secretKey: 1234\n");
    assert!(e.contains(":3: key accounts[0].secretKey"), "{e}");
    let e = file_error("globalWhiteRemoteAddresses:\n  - 10.10.*.1\n");
    assert!(e.contains(":2: key globalWhiteRemoteAddresses[0]"), "{e}");
    assert!(e.contains("after the range must be '*'"), "{e}");
    let e = file_error("accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    topicPerm:\n      - a=PUB\n");
    assert!(e.contains(":4: key accounts[0]"), "{e}");
    assert!(e.contains("unknown field `topicPerm`"), "{e}");
    let e = file_error("accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    topicPerms:\n      - topicA\n");
    assert!(e.contains(":5: key accounts[0].topicPerms[0]"), "{e}");
    let e = file_error("accounts: [\n  - x\n");
    assert!(e.contains("/etc/plain_acl.yml:"), "{e}");
    let e = file_error("accounts:\n  - secretKey: 12345678\n");
    assert!(
        e.contains(":2: key accounts[0]") && e.contains("accessKey"),
        "{e}"
    );
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn reload_applies_good_changes_and_keeps_the_rules_on_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain_acl.yml");
    write(&path, FILE);
    let file = AclFile::open(&path).unwrap();
    assert_eq!(file.rules().accounts.len(), 2);
    assert!(!file.reload().unwrap(), "unchanged");
    write(
        &path,
        "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    admin: maybe\n",
    );
    let e = file.reload().unwrap_err().to_string();
    assert!(e.contains(":4: key accounts[0].admin"), "{e}");
    assert_eq!(file.rules().accounts.len(), 2, "the old rules stay");
    assert!(
        !file.reload().unwrap(),
        "the same bad content is reported once"
    );
    write(
        &path,
        "accounts:\n  - accessKey: newaccount\n    secretKey: 12345678\n",
    );
    assert!(file.reload().unwrap());
    let rules = file.rules();
    assert_eq!(rules.accounts.len(), 1);
    assert!(rules.accounts.contains_key("newaccount"));
}

#[test]
fn the_poller_picks_up_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain_acl.yml");
    write(&path, FILE);
    let file = AclFile::open(&path).unwrap();
    write(
        &path,
        "accounts:\n  - accessKey: polledaccount\n    secretKey: 12345678\n",
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !file.rules().accounts.contains_key("polledaccount") {
        assert!(std::time::Instant::now() < deadline, "not reloaded");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn admin_edits_rewrite_a_valid_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain_acl.yml");
    write(&path, FILE);
    let file = AclFile::open(&path).unwrap();
    file.update_account(&AccountUpdate {
        access_key: "newuser1".into(),
        secret_key: Some("newsecret1".into()),
        default_topic_perm: Some("PUB".into()),
        topic_perms: Some(vec!["topicZ=SUB".into()]),
        ..AccountUpdate::default()
    })
    .unwrap();
    let r = file.rules();
    assert_eq!(r.accounts.len(), 3);
    assert_eq!(r.data_version.counter, 1);
    let reread = rmq_acl::config::load(&path).unwrap();
    assert_eq!(reread.accounts["newuser1"].secret_key, "newsecret1");
    // update keeps the secret when none is given, changes admin
    file.update_account(&AccountUpdate {
        access_key: "newuser1".into(),
        admin: true,
        ..AccountUpdate::default()
    })
    .unwrap();
    let r = file.rules();
    assert!(r.accounts["newuser1"].admin);
    assert_eq!(r.accounts["newuser1"].secret_key, "newsecret1");
    assert_eq!(r.data_version.counter, 2);
    // bad input is refused and the file is unchanged
    let before = std::fs::read_to_string(&path).unwrap();
    for bad in [
        AccountUpdate {
            access_key: "short".into(),
            secret_key: Some("12345678".into()),
            ..AccountUpdate::default()
        },
        AccountUpdate {
            access_key: "newuser2".into(),
            secret_key: Some("12345678".into()),
            topic_perms: Some(vec!["t=WRITE".into()]),
            ..AccountUpdate::default()
        },
        AccountUpdate {
            access_key: "newuser3".into(),
            secret_key: Some("12345678".into()),
            white_remote_address: Some("1.2.3".into()),
            ..AccountUpdate::default()
        },
    ] {
        assert!(file.update_account(&bad).is_err());
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    assert!(file.delete_account("newuser1").unwrap());
    assert!(!file.delete_account("newuser1").unwrap());
    file.update_global_white(&["127.0.0.1".into(), "10.0.0.*".into()])
        .unwrap();
    let r = file.rules();
    assert_eq!(r.global_white.len(), 2);
    assert!(!r.accounts.contains_key("newuser1"));
    assert!(file.update_global_white(&["10.0.*.1".into()]).is_err());
}
