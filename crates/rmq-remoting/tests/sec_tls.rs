//! TLS on real sockets, with certificates made by the test (rcgen): enforcing refuses plain
//! clients, permissive serves both on one port, mutual TLS refuses a client without a trusted
//! certificate, a client that verifies refuses a server signed by another CA, file-region
//! replies arrive intact over TLS, and bad settings name the key and the file.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, SanType};
use rmq_protocol::{ExtFields, RemotingCommand};
use rmq_remoting::tls::{ClientTls, ClientTlsOptions, ServerTls, TlsError};
use rmq_remoting::{
    connect, connect_tls, serve, BoxFuture, Connection, FileRegion, RemotingError, Reply,
    RequestHandler, ServerConfig, ServerHandle,
};

const ECHO: i32 = 9001;
const FILE_BIG: i32 = 9005;
const T: Duration = Duration::from_secs(5);

/// A CA and the PEM files it signed, in a temp dir.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `ca.pem`, `server.pem`/`server.key`, `client.pem`/`client.key`, all signed by one CA,
    /// plus `other-ca.pem` and `stranger.pem`/`stranger.key` signed by another.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let pki = Self { dir };
        let ca = pki.ca("ca.pem");
        pki.leaf(&ca, "server", true);
        pki.leaf(&ca, "client", false);
        let other = pki.ca("other-ca.pem");
        pki.leaf(&other, "stranger", false);
        pki
    }

    fn ca(&self, file: &str) -> CertifiedIssuer<'static, KeyPair> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("rmq test {file}"));
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(self.path(file), ca.pem()).unwrap();
        ca
    }

    fn leaf(&self, ca: &CertifiedIssuer<'static, KeyPair>, name: &str, server: bool) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        if server {
            params
                .subject_alt_names
                .push(SanType::IpAddress([127, 0, 0, 1].into()));
        }
        let cert = params.signed_by(&key, ca).unwrap();
        std::fs::write(self.path(&format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(self.path(&format!("{name}.key")), key.serialize_pem()).unwrap();
    }

    fn server_settings(&self, mode: &str) -> HashMap<String, String> {
        let mut s = HashMap::new();
        s.insert("tls.server.mode".into(), mode.into());
        s.insert(
            "tls.server.certPath".into(),
            path_text(&self.path("server.pem")),
        );
        s.insert(
            "tls.server.keyPath".into(),
            path_text(&self.path("server.key")),
        );
        s
    }

    fn client(&self, trust: Option<&str>, identity: Option<&str>) -> Arc<ClientTls> {
        let options = ClientTlsOptions {
            trust_cert_path: trust.map(|t| self.path(t)),
            cert_path: identity.map(|n| self.path(&format!("{n}.pem"))),
            key_path: identity.map(|n| self.path(&format!("{n}.key"))),
            verify_server: trust.is_some(),
            key_password: None,
        };
        Arc::new(ClientTls::new(&options).unwrap())
    }
}

fn path_text(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

struct Region {
    file: std::fs::File,
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

/// Echoes the body; its remark says whether the server side of the connection is TLS.
struct Handler {
    dir: tempfile::TempDir,
}

impl RequestHandler for Handler {
    fn handle(&self, conn: Connection, req: RemotingCommand) -> BoxFuture<Option<Reply>> {
        let remark = Some(if conn.is_tls() { "tls" } else { "plain" }.to_owned());
        if req.code == FILE_BIG {
            // Two 200 KiB regions: what a plain connection sends with sendfile.
            let path = self.dir.path().join("big");
            let content: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
            std::fs::File::create(&path)
                .unwrap()
                .write_all(&content)
                .unwrap();
            let regions: Vec<Box<dyn FileRegion>> = [(1000usize, 200_000usize), (300_000, 200_000)]
                .into_iter()
                .map(|(pos, len)| {
                    Box::new(Region {
                        file: std::fs::File::open(&path).unwrap(),
                        pos: pos as u64,
                        data: content[pos..pos + len].to_vec(),
                    }) as Box<dyn FileRegion>
                })
                .collect();
            let command = RemotingCommand::response_to(&req, 0, remark);
            return Box::pin(async move { Some(Reply::WithFileRegions { command, regions }) });
        }
        let mut resp = RemotingCommand::response_to(&req, 0, remark);
        resp.body.clone_from(&req.body);
        Box::pin(async move { Some(Reply::Command(resp)) })
    }
}

async fn tls_server(settings: &HashMap<String, String>) -> ServerHandle {
    let tls = ServerTls::from_settings(settings).unwrap().map(Arc::new);
    let handler = Arc::new(Handler {
        dir: tempfile::tempdir().unwrap(),
    });
    let config = ServerConfig {
        tls,
        ..ServerConfig::default()
    };
    serve("127.0.0.1:0".parse().unwrap(), handler, config)
        .await
        .unwrap()
}

async fn echo(c: &Connection) -> Result<RemotingCommand, RemotingError> {
    let req = RemotingCommand::new_request(ECHO, ExtFields::default()).with_body(b"hi".to_vec());
    c.request(req, T).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforcing_serves_tls_and_refuses_plain() {
    let pki = Pki::new();
    let srv = tls_server(&pki.server_settings("enforcing")).await;
    let addr = srv.local_addr();

    let c = connect_tls(addr, None, T, Some(pki.client(Some("ca.pem"), None)))
        .await
        .unwrap();
    assert!(c.is_tls());
    let resp = echo(&c).await.unwrap();
    assert_eq!(resp.remark.as_deref(), Some("tls"));
    assert_eq!(resp.body.as_deref(), Some(&b"hi"[..]));

    // A client that trusts any server (RocketMQ's test mode) gets in too.
    let any = connect_tls(addr, None, T, Some(pki.client(None, None)))
        .await
        .unwrap();
    assert_eq!(echo(&any).await.unwrap().remark.as_deref(), Some("tls"));

    let plain = connect(addr, None, T).await.unwrap();
    let refused = echo(&plain).await.unwrap_err();
    assert!(
        matches!(refused, RemotingError::Closed { .. }),
        "a plain client is closed by an enforcing server: {refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissive_serves_tls_and_plain_on_one_port() {
    let pki = Pki::new();
    let srv = tls_server(&pki.server_settings("permissive")).await;
    let addr = srv.local_addr();
    let tls = connect_tls(addr, None, T, Some(pki.client(Some("ca.pem"), None)))
        .await
        .unwrap();
    let plain = connect(addr, None, T).await.unwrap();
    assert_eq!(echo(&tls).await.unwrap().remark.as_deref(), Some("tls"));
    assert_eq!(echo(&plain).await.unwrap().remark.as_deref(), Some("plain"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_regions_arrive_intact_over_tls() {
    let pki = Pki::new();
    let srv = tls_server(&pki.server_settings("enforcing")).await;
    let c = connect_tls(
        srv.local_addr(),
        None,
        T,
        Some(pki.client(Some("ca.pem"), None)),
    )
    .await
    .unwrap();
    let content: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
    let mut want = content[1000..201_000].to_vec();
    want.extend_from_slice(&content[300_000..500_000]);
    for _ in 0..3 {
        let resp = c
            .request(
                RemotingCommand::new_request(FILE_BIG, ExtFields::default()),
                T,
            )
            .await
            .unwrap();
        assert_eq!(resp.body.as_deref(), Some(&want[..]));
        assert_eq!(echo(&c).await.unwrap().body.as_deref(), Some(&b"hi"[..]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_refuses_a_client_without_a_trusted_certificate() {
    let pki = Pki::new();
    let mut settings = pki.server_settings("enforcing");
    settings.insert("tls.server.need.client.auth".into(), "require".into());
    settings.insert(
        "tls.server.trustCertPath".into(),
        path_text(&pki.path("ca.pem")),
    );
    let srv = tls_server(&settings).await;
    let addr = srv.local_addr();

    let with_cert = connect_tls(
        addr,
        None,
        T,
        Some(pki.client(Some("ca.pem"), Some("client"))),
    )
    .await
    .unwrap();
    assert_eq!(
        echo(&with_cert).await.unwrap().remark.as_deref(),
        Some("tls")
    );

    // TLS 1.3: the client may finish its handshake before the server has refused it, so the
    // refusal shows either at connect or on the first request.
    for identity in [None, Some("stranger")] {
        let refused =
            match connect_tls(addr, None, T, Some(pki.client(Some("ca.pem"), identity))).await {
                Err(e) => e,
                Ok(c) => echo(&c).await.unwrap_err(),
            };
        assert!(
            matches!(
                refused,
                RemotingError::Handshake { .. } | RemotingError::Closed { .. }
            ),
            "{identity:?}: {refused}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verifying_client_refuses_a_server_of_another_ca() {
    let pki = Pki::new();
    let srv = tls_server(&pki.server_settings("enforcing")).await;
    let err = connect_tls(
        srv.local_addr(),
        None,
        T,
        Some(pki.client(Some("other-ca.pem"), None)),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RemotingError::Handshake { .. }), "{text}");
    assert!(text.contains("TLS handshake with 127.0.0.1"), "{text}");
}

#[test]
fn bad_settings_name_the_key_and_the_file() {
    let pki = Pki::new();
    let err = |s: &HashMap<String, String>| match ServerTls::from_settings(s) {
        Err(e) => e,
        Ok(_) => panic!("accepted"),
    };

    let mut s = pki.server_settings("enforcing");
    s.insert(
        "tls.server.certPath".into(),
        "/nonexistent/server.pem".into(),
    );
    let e = err(&s);
    assert!(matches!(
        e,
        TlsError::File {
            key: "tls.server.certPath",
            ..
        }
    ));
    assert!(e.to_string().contains("/nonexistent/server.pem"), "{e}");

    let mut s = pki.server_settings("enforcing");
    s.insert("tls.server.keyPath".into(), path_text(&pki.path("ca.pem")));
    let e = err(&s).to_string();
    assert!(
        e.starts_with("tls.server.keyPath = ") && e.contains("no PEM private key"),
        "{e}"
    );

    let mut s = pki.server_settings("enforcing");
    s.insert(
        "tls.server.certPath".into(),
        path_text(&pki.path("server.key")),
    );
    let e = err(&s).to_string();
    assert!(
        e.contains("tls.server.certPath") && e.contains("no PEM certificate"),
        "{e}"
    );

    // A key that belongs to another certificate.
    let mut s = pki.server_settings("enforcing");
    s.insert(
        "tls.server.keyPath".into(),
        path_text(&pki.path("client.key")),
    );
    let e = err(&s).to_string();
    assert!(
        e.contains("tls.server.keyPath") && e.contains("does not fit"),
        "{e}"
    );

    let encrypted = pki.path("encrypted.key");
    std::fs::write(
        &encrypted,
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n",
    )
    .unwrap();
    let mut s = pki.server_settings("enforcing");
    s.insert("tls.server.keyPath".into(), path_text(&encrypted));
    let e = err(&s).to_string();
    assert!(
        e.contains("encrypted private key: set tls.server.keyPassword"),
        "{e}"
    );
    s.insert("tls.server.keyPassword".into(), "secret".into());
    let e = err(&s).to_string();
    assert!(
        e.starts_with("tls.server.keyPath = ") && e.contains("encrypted"),
        "{e}"
    );
    std::fs::write(
        &encrypted,
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nMIIB\n-----END RSA PRIVATE KEY-----\n",
    )
    .unwrap();
    let e = err(&s).to_string();
    assert!(e.contains("legacy encrypted format"), "{e}");

    let mut s = pki.server_settings("sometimes");
    let e = err(&s).to_string();
    assert!(
        e.contains("tls.server.mode") && e.contains("permissive"),
        "{e}"
    );

    s = pki.server_settings("enforcing");
    s.remove("tls.server.keyPath");
    let e = err(&s).to_string();
    assert!(e.starts_with("tls.server.keyPath: not set"), "{e}");

    s = pki.server_settings("enforcing");
    s.insert("tls.server.authClient".into(), "true".into());
    let e = err(&s).to_string();
    assert!(e.starts_with("tls.server.trustCertPath: not set"), "{e}");

    // Disabled (or unset) builds nothing and reads no file.
    let mut s = pki.server_settings("disabled");
    s.insert("tls.server.certPath".into(), "/nonexistent".into());
    assert!(ServerTls::from_settings(&s).unwrap().is_none());
}

#[test]
fn bad_client_settings_name_the_key_and_the_file() {
    let pki = Pki::new();
    let mut c = HashMap::new();
    assert!(ClientTls::from_settings(&c).unwrap().is_none());
    c.insert("tls.enable".to_owned(), "true".to_owned());
    c.insert("tls.client.authServer".to_owned(), "true".to_owned());
    c.insert(
        "tls.client.trustCertPath".into(),
        "/nonexistent/ca.pem".into(),
    );
    let e = ClientTls::from_settings(&c).unwrap_err().to_string();
    assert!(
        e.starts_with("tls.client.trustCertPath = /nonexistent/ca.pem"),
        "{e}"
    );
    c.insert(
        "tls.client.trustCertPath".into(),
        path_text(&pki.path("ca.pem")),
    );
    assert!(ClientTls::from_settings(&c)
        .unwrap()
        .unwrap()
        .verifies_server());
}
