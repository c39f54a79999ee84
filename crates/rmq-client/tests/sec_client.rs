//! ACL 1.0 signing by the client core: a `ClientInstance` with credentials signs every request
//! it sends (nameserver route lookups, heartbeats, oneway requests), checked by a recording
//! server that verifies each signature with `rmq_protocol::acl`; without credentials nothing
//! is added.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmq_client::{ClientConfig, ClientInstance};
use rmq_protocol::acl::{self, SessionCredentials};
use rmq_protocol::body::{BrokerData, QueueData, TopicRouteData};
use rmq_protocol::{ExtFields, RemotingCommand, RemotingJson, RequestCode, ResponseCode};
use rmq_remoting::{BoxFuture, Connection, Reply, RequestHandler, ServerConfig};

/// Answers as a nameserver and a broker at once: the route of any topic points back here.
struct Recorder {
    addr: Mutex<String>,
    seen: Mutex<Vec<RemotingCommand>>,
}

impl RequestHandler for Recorder {
    fn handle(&self, _conn: Connection, request: RemotingCommand) -> BoxFuture<Option<Reply>> {
        let mut resp = RemotingCommand::response_to(&request, ResponseCode::SUCCESS.0, None);
        if request.code == RequestCode::GET_ROUTEINFO_BY_TOPIC.0 {
            let addr = self
                .addr
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let route = TopicRouteData {
                broker_datas: vec![BrokerData {
                    broker_addrs: BTreeMap::from([(0, addr)]),
                    broker_name: "b".into(),
                    cluster: "c".into(),
                }],
                queue_datas: vec![QueueData {
                    broker_name: "b".into(),
                    perm: 6,
                    read_queue_nums: 1,
                    write_queue_nums: 1,
                    topic_sys_flag: 0,
                }],
                ..TopicRouteData::default()
            };
            resp.body = Some(route.to_json_bytes().expect("route encodes"));
        }
        let oneway = request.flag & rmq_protocol::command::FLAG_ONEWAY != 0;
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        Box::pin(async move { (!oneway).then_some(Reply::Command(resp)) })
    }
}

async fn exercise(credentials: Option<SessionCredentials>) -> Vec<RemotingCommand> {
    let recorder = Arc::new(Recorder {
        addr: Mutex::new(String::new()),
        seen: Mutex::new(Vec::new()),
    });
    let server = rmq_remoting::serve(
        "127.0.0.1:0".parse().unwrap(),
        recorder.clone(),
        ServerConfig::default(),
    )
    .await
    .expect("bind");
    let addr = server.local_addr().to_string();
    recorder.addr.lock().unwrap().clone_from(&addr);

    let mut config = ClientConfig::new(vec![addr.clone()]);
    config.instance_name = "sec".into();
    config.credentials = credentials;
    let instance = ClientInstance::start(config, tokio::runtime::Handle::current()).unwrap();
    instance.update_route("T").await.expect("route");
    instance.register_producer("PG");
    assert_eq!(instance.send_heartbeat().await, 1);
    let mut fields = ExtFields::new();
    fields.insert("topic", "T");
    let oneway = RemotingCommand::new_request(RequestCode::UNREGISTER_CLIENT.0, fields)
        .with_body(bytes::Bytes::from_static(b"payload"));
    instance.invoke_oneway(&addr, oneway).await.unwrap();
    // the oneway request has no answer to wait for: a request after it on the same
    // connection is answered only once it has been read
    let ping =
        RemotingCommand::new_request(RequestCode::GET_BROKER_RUNTIME_INFO.0, ExtFields::new());
    instance
        .invoke(&addr, ping, Duration::from_secs(3))
        .await
        .unwrap();
    instance.shutdown();
    server.shutdown().await;
    let seen = recorder.seen.lock().unwrap().clone();
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_an_instance_with_credentials_is_signed() {
    let creds = SessionCredentials {
        access_key: "rocketmq2".into(),
        secret_key: "12345678".into(),
        security_token: Some("tok".into()),
    };
    let seen = exercise(Some(creds)).await;
    let codes: Vec<i32> = seen.iter().map(|c| c.code).collect();
    for code in [
        RequestCode::GET_ROUTEINFO_BY_TOPIC.0,
        RequestCode::HEART_BEAT.0,
        RequestCode::UNREGISTER_CLIENT.0,
        RequestCode::GET_BROKER_RUNTIME_INFO.0,
    ] {
        assert!(codes.contains(&code), "{code} not among {codes:?}");
    }
    for cmd in &seen {
        assert_eq!(cmd.ext_fields.get(acl::ACCESS_KEY), Some("rocketmq2"));
        assert_eq!(cmd.ext_fields.get(acl::SECURITY_TOKEN), Some("tok"));
        assert!(
            acl::signature_matches(cmd, "12345678"),
            "request {} carries no valid signature",
            cmd.code
        );
        assert!(!acl::signature_matches(cmd, "wrong"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_credentials_nothing_is_added() {
    let seen = exercise(None).await;
    assert!(seen.len() >= 4, "{} requests", seen.len());
    for cmd in &seen {
        assert_eq!(cmd.ext_fields.get(acl::ACCESS_KEY), None);
        assert_eq!(cmd.ext_fields.get(acl::SIGNATURE), None);
    }
}
