//! TLS for the remoting transport, configured with RocketMQ's settings (rustls, ring provider;
//! no crypto of our own).
//!
//! [`ServerTls`] is built from a server's `tls.server.*` keys: `tls.server.mode` (`disabled`,
//! `permissive`: TLS and plain on the same port, told apart by the first byte, `enforcing`:
//! TLS only), `tls.server.certPath` / `tls.server.keyPath` (PEM), `tls.server.keyPassword`
//! (for an encrypted PKCS#8 key, `-----BEGIN ENCRYPTED PRIVATE KEY-----`, decrypted with the
//! RustCrypto `pkcs8` crate; the legacy OpenSSL encryption is refused), and for mutual TLS
//! `tls.server.need.client.auth` (`none` | `optional` | `require`, Apache's key) or
//! `tls.server.authClient=true` (= `require`), with the client CAs in
//! `tls.server.trustCertPath`.
//!
//! [`ClientTls`] is built from `tls.enable`, `tls.client.trustCertPath`,
//! `tls.client.certPath`, `tls.client.keyPath`, `tls.client.authServer` and
//! `tls.test.mode.enable`, as RocketMQ's Java client names them, or from
//! [`ClientTlsOptions`]. As in RocketMQ, a server certificate is checked against the trusted
//! CAs but not against the host name dialled (RocketMQ's clients connect by IP taken from the
//! nameserver's routes).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// A TLS setting that cannot be used; names the key (and the file) to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file named by a key cannot be read or does not hold what the key needs.
    #[error("{key} = {}: {detail}", .path.display())]
    File {
        /// The setting naming the file.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        detail: String,
    },
    /// A setting's value (or a missing setting).
    #[error("{key}: {detail}")]
    Setting {
        /// The setting.
        key: &'static str,
        /// What is wrong and what to do.
        detail: String,
    },
}

/// `tls.server.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain connections only (the default).
    Disabled,
    /// TLS and plain connections on the same port.
    Permissive,
    /// TLS connections only; plain ones are closed.
    Enforcing,
}

/// Whether the server asks clients for a certificate (`tls.server.need.client.auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    None,
    /// A client may present a certificate; one it presents must be trusted.
    Optional,
    /// A client must present a trusted certificate.
    Require,
}

const MODE: &str = "tls.server.mode";
const SERVER_CERT: &str = "tls.server.certPath";
const SERVER_KEY: &str = "tls.server.keyPath";
const SERVER_KEY_PASSWORD: &str = "tls.server.keyPassword";
const NEED_CLIENT_AUTH: &str = "tls.server.need.client.auth";
const AUTH_CLIENT: &str = "tls.server.authClient";
const SERVER_TRUST: &str = "tls.server.trustCertPath";
const ENABLE: &str = "tls.enable";
const CLIENT_TRUST: &str = "tls.client.trustCertPath";
const CLIENT_CERT: &str = "tls.client.certPath";
const CLIENT_KEY: &str = "tls.client.keyPath";
const CLIENT_KEY_PASSWORD: &str = "tls.client.keyPassword";
const AUTH_SERVER: &str = "tls.client.authServer";
const TEST_MODE: &str = "tls.test.mode.enable";

/// The `tls.*` keys a server reads (for config tables and "unknown key" checks).
pub const SERVER_KEYS: &[&str] = &[
    MODE,
    SERVER_CERT,
    SERVER_KEY,
    SERVER_KEY_PASSWORD,
    NEED_CLIENT_AUTH,
    AUTH_CLIENT,
    SERVER_TRUST,
];

/// The `tls.*` keys a client reads.
pub const CLIENT_KEYS: &[&str] = &[
    ENABLE,
    CLIENT_TRUST,
    CLIENT_CERT,
    CLIENT_KEY,
    CLIENT_KEY_PASSWORD,
    AUTH_SERVER,
    TEST_MODE,
];

/// How often a refused plain peer is logged at most.
const REFUSAL_LOG_PERIOD: Duration = Duration::from_secs(60);

/// A server's TLS: the mode, the acceptor, and the log of refused plain peers.
pub struct ServerTls {
    mode: TlsMode,
    config: Arc<rustls::ServerConfig>,
    acceptor: TlsAcceptor,
    refused: Mutex<HashMap<IpAddr, Instant>>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

fn get<'a>(settings: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    settings
        .get(key)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
}

fn flag(settings: &HashMap<String, String>, key: &'static str) -> Result<Option<bool>, TlsError> {
    match get(settings, key) {
        None => Ok(None),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(v) => Err(TlsError::Setting {
            key,
            detail: format!("{v:?} is not a boolean; use true or false"),
        }),
    }
}

impl ServerTls {
    /// Build from a server's settings; `None` when `tls.server.mode` is `disabled` (or unset).
    ///
    /// # Errors
    /// An unknown mode, a missing or unreadable certificate/key/CA file, an encrypted key.
    pub fn from_settings(settings: &HashMap<String, String>) -> Result<Option<Self>, TlsError> {
        let mode = match get(settings, MODE).map(str::to_ascii_lowercase).as_deref() {
            None | Some("disabled") => return Ok(None),
            Some("permissive") => TlsMode::Permissive,
            Some("enforcing") => TlsMode::Enforcing,
            Some(other) => {
                return Err(TlsError::Setting {
                    key: MODE,
                    detail: format!(
                        "{other:?} is not a mode; use disabled, permissive or enforcing"
                    ),
                })
            }
        };
        let mut auth = match get(settings, NEED_CLIENT_AUTH)
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("none") => ClientAuth::None,
            Some("optional") => ClientAuth::Optional,
            Some("require") => ClientAuth::Require,
            Some(other) => {
                return Err(TlsError::Setting {
                    key: NEED_CLIENT_AUTH,
                    detail: format!("{other:?} is not allowed; use none, optional or require"),
                })
            }
        };
        if flag(settings, AUTH_CLIENT)? == Some(true) && auth == ClientAuth::None {
            auth = ClientAuth::Require;
        }
        let required =
            |key: &'static str| {
                get(settings, key)
                    .map(PathBuf::from)
                    .ok_or_else(|| TlsError::Setting {
                        key,
                        detail: format!(
                    "not set, but {MODE} is {}; set it to a PEM file (or set {MODE}=disabled)",
                    if mode == TlsMode::Permissive { "permissive" } else { "enforcing" }
                ),
                    })
            };
        let cert = required(SERVER_CERT)?;
        let key = required(SERVER_KEY)?;
        let trust = if auth == ClientAuth::None {
            None
        } else {
            Some(
                get(settings, SERVER_TRUST)
                    .map(PathBuf::from)
                    .ok_or_else(|| TlsError::Setting {
                        key: SERVER_TRUST,
                        detail: "not set, but client certificates are asked for \
                             (tls.server.need.client.auth / tls.server.authClient); set it to \
                             the PEM file of the CAs that sign client certificates"
                            .to_owned(),
                    })?,
            )
        };
        let password = get(settings, SERVER_KEY_PASSWORD);
        Self::new(mode, &cert, &key, password, auth, trust.as_deref()).map(Some)
    }

    /// Build from explicit parts; `key_password` decrypts an encrypted PKCS#8 key.
    ///
    /// # Errors
    /// As [`from_settings`](Self::from_settings).
    pub fn new(
        mode: TlsMode,
        cert_path: &Path,
        key_path: &Path,
        key_password: Option<&str>,
        client_auth: ClientAuth,
        trust_cert_path: Option<&Path>,
    ) -> Result<Self, TlsError> {
        let certs = pem::certificates(SERVER_CERT, cert_path)?;
        let key = pem::private_key(SERVER_KEY, key_path, key_password, SERVER_KEY_PASSWORD)?;
        let provider = provider();
        let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(rustls::DEFAULT_VERSIONS)
            .map_err(|e| setting(MODE, &e))?;
        let builder = match (client_auth, trust_cert_path) {
            (ClientAuth::None, _) | (_, None) => builder.with_no_client_auth(),
            (auth, Some(trust)) => {
                let roots = pem::roots(SERVER_TRUST, trust)?;
                let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                let v = if auth == ClientAuth::Optional {
                    v.allow_unauthenticated()
                } else {
                    v
                };
                let v = v.build().map_err(|e| file(SERVER_TRUST, trust, &e))?;
                builder.with_client_cert_verifier(v)
            }
        };
        let config = builder.with_single_cert(certs, key).map_err(|e| {
            file(
                SERVER_KEY,
                key_path,
                &format!("does not fit {SERVER_CERT}: {e}"),
            )
        })?;
        let config = Arc::new(config);
        Ok(Self {
            mode,
            acceptor: TlsAcceptor::from(Arc::clone(&config)),
            config,
            refused: Mutex::new(HashMap::new()),
        })
    }

    /// The mode (never `Disabled`: a disabled server has no `ServerTls`).
    #[must_use]
    pub fn mode(&self) -> TlsMode {
        self.mode
    }

    /// The rustls configuration (for blocking servers such as the HA port).
    #[must_use]
    pub fn rustls_config(&self) -> Arc<rustls::ServerConfig> {
        Arc::clone(&self.config)
    }

    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// Whether a refusal of `peer` should be logged now (once per peer per minute).
    pub(crate) fn should_log_refusal(&self, peer: IpAddr) -> bool {
        let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if refused.len() > 4096 {
            refused.retain(|_, at| now.duration_since(*at) < REFUSAL_LOG_PERIOD);
        }
        match refused.get(&peer) {
            Some(at) if now.duration_since(*at) < REFUSAL_LOG_PERIOD => false,
            _ => {
                refused.insert(peer, now);
                true
            }
        }
    }
}

/// A client's TLS options in the SDK's words.
#[derive(Debug, Clone, Default)]
pub struct ClientTlsOptions {
    /// PEM file of the CAs the server's certificate must chain to.
    pub trust_cert_path: Option<PathBuf>,
    /// PEM certificate chain presented to servers that ask (mutual TLS).
    pub cert_path: Option<PathBuf>,
    /// PEM private key of `cert_path`.
    pub key_path: Option<PathBuf>,
    /// Password of `key_path` when it is an encrypted PKCS#8 key.
    pub key_password: Option<String>,
    /// Check the server's certificate against `trust_cert_path`; false trusts any server
    /// (RocketMQ's `tls.test.mode.enable`).
    pub verify_server: bool,
}

/// A client's TLS: the connector used by `connect_tls`.
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<rustls::ClientConfig>,
    connector: TlsConnector,
    verified: bool,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("verifies_server", &self.verified)
            .finish_non_exhaustive()
    }
}

impl ClientTls {
    /// Build from RocketMQ's client keys; `None` unless `tls.enable=true`. The server is
    /// verified when `tls.client.trustCertPath` is set (against it) or
    /// `tls.client.authServer=true` (against the system's CAs when no trust file is set),
    /// unless `tls.test.mode.enable=true` says to trust any server.
    ///
    /// # Errors
    /// A bad boolean, an unreadable or malformed PEM file, a key without a cert.
    pub fn from_settings(settings: &HashMap<String, String>) -> Result<Option<Self>, TlsError> {
        if flag(settings, ENABLE)? != Some(true) {
            return Ok(None);
        }
        let trust = get(settings, CLIENT_TRUST).map(PathBuf::from);
        let auth_server = flag(settings, AUTH_SERVER)?.unwrap_or(false);
        let test_mode = flag(settings, TEST_MODE)?.unwrap_or(false);
        let options = ClientTlsOptions {
            verify_server: !test_mode && (auth_server || trust.is_some()),
            trust_cert_path: trust,
            cert_path: get(settings, CLIENT_CERT).map(PathBuf::from),
            key_path: get(settings, CLIENT_KEY).map(PathBuf::from),
            key_password: get(settings, CLIENT_KEY_PASSWORD).map(str::to_owned),
        };
        Self::new(&options).map(Some)
    }

    /// Build from SDK options; `verify_server` without a trust file verifies against the
    /// system's CAs.
    ///
    /// # Errors
    /// An unreadable or malformed PEM file; `verify_server` with neither a trust file nor
    /// system CAs; a client certificate without its key (or the other way round).
    pub fn new(options: &ClientTlsOptions) -> Result<Self, TlsError> {
        let provider = provider();
        let verifier = ChainOnly {
            inner: if options.verify_server {
                let roots = match &options.trust_cert_path {
                    Some(trust) => pem::roots(CLIENT_TRUST, trust)?,
                    None => system_roots()?,
                };
                let at = options
                    .trust_cert_path
                    .as_deref()
                    .unwrap_or(Path::new("(system)"));
                Some(
                    WebPkiServerVerifier::builder_with_provider(
                        Arc::new(roots),
                        Arc::clone(&provider),
                    )
                    .build()
                    .map_err(|e| file(CLIENT_TRUST, at, &e))?,
                )
            } else {
                None
            },
            provider: Arc::clone(&provider),
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(rustls::DEFAULT_VERSIONS)
            .map_err(|e| setting(ENABLE, &e))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier));
        let config = match (&options.cert_path, &options.key_path) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let certs = pem::certificates(CLIENT_CERT, cert)?;
                let k = pem::private_key(
                    CLIENT_KEY,
                    key,
                    options.key_password.as_deref(),
                    CLIENT_KEY_PASSWORD,
                )?;
                builder.with_client_auth_cert(certs, k).map_err(|e| {
                    file(CLIENT_KEY, key, &format!("does not fit {CLIENT_CERT}: {e}"))
                })?
            }
            (Some(_), None) => {
                return Err(TlsError::Setting {
                    key: CLIENT_KEY,
                    detail: format!("not set, but {CLIENT_CERT} is; give both or neither"),
                })
            }
            (None, Some(_)) => {
                return Err(TlsError::Setting {
                    key: CLIENT_CERT,
                    detail: format!("not set, but {CLIENT_KEY} is; give both or neither"),
                })
            }
        };
        let config = Arc::new(config);
        Ok(Self {
            connector: TlsConnector::from(Arc::clone(&config)),
            config,
            verified: options.verify_server,
        })
    }

    /// Whether the server's certificate is checked.
    #[must_use]
    pub fn verifies_server(&self) -> bool {
        self.verified
    }

    /// The rustls configuration (for blocking clients such as a slave's HA connection).
    #[must_use]
    pub fn rustls_config(&self) -> Arc<rustls::ClientConfig> {
        Arc::clone(&self.config)
    }

    pub(crate) fn connector(&self) -> &TlsConnector {
        &self.connector
    }

    /// The name the server is dialled by (its IP: RocketMQ routes carry addresses).
    pub(crate) fn server_name(addr: SocketAddr) -> ServerName<'static> {
        ServerName::IpAddress(addr.ip().into())
    }
}

/// Checks the server's chain against the trusted CAs (when given) but not the host name, as
/// RocketMQ's Netty clients do; without CAs any certificate is accepted (test mode). The
/// handshake signatures are always checked.
#[derive(Debug)]
struct ChainOnly {
    inner: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(inner) = &self.inner else {
            return Ok(ServerCertVerified::assertion());
        };
        match inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The platform's trusted CAs (`/etc/ssl/certs` and the like).
fn system_roots() -> Result<RootCertStore, TlsError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(TlsError::Setting {
            key: CLIENT_TRUST,
            detail: "not set, and this system has no trusted CA certificates to verify the \
                     server with: give the CA file (tls_ca), or trust any server \
                     (tls_verify=False; RocketMQ's tls.test.mode.enable=true)"
                .to_owned(),
        });
    }
    Ok(roots)
}

fn file(key: &'static str, path: &Path, detail: &dyn std::fmt::Display) -> TlsError {
    TlsError::File {
        key,
        path: path.to_owned(),
        detail: detail.to_string(),
    }
}

fn setting(key: &'static str, detail: &dyn std::fmt::Display) -> TlsError {
    TlsError::Setting {
        key,
        detail: detail.to_string(),
    }
}

/// PEM files: certificates, CA bundles and private keys, each error naming key and file.
mod pem {
    use super::{file, CertificateDer, Path, PemObject, PrivateKeyDer, RootCertStore, TlsError};

    fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
        std::fs::read(path).map_err(|e| file(key, path, &format!("cannot be read: {e}")))
    }

    pub(super) fn certificates(
        key: &'static str,
        path: &Path,
    ) -> Result<Vec<CertificateDer<'static>>, TlsError> {
        let bytes = read(key, path)?;
        let certs = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| file(key, path, &format!("is not a PEM certificate file: {e}")))?;
        if certs.is_empty() {
            return Err(file(
                key,
                path,
                &"holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            ));
        }
        Ok(certs)
    }

    pub(super) fn roots(key: &'static str, path: &Path) -> Result<RootCertStore, TlsError> {
        let mut roots = RootCertStore::empty();
        for cert in certificates(key, path)? {
            roots.add(cert).map_err(|e| {
                file(
                    key,
                    path,
                    &format!("holds a certificate that is not a usable CA: {e}"),
                )
            })?;
        }
        Ok(roots)
    }

    pub(super) fn private_key(
        key: &'static str,
        path: &Path,
        password: Option<&str>,
        password_key: &str,
    ) -> Result<PrivateKeyDer<'static>, TlsError> {
        let bytes = read(key, path)?;
        if bytes.windows(21).any(|w| w == b"ENCRYPTED PRIVATE KEY") {
            return decrypt(key, path, &bytes, password, password_key);
        }
        if bytes.windows(9).any(|w| w == b"ENCRYPTED") {
            return Err(file(
                key,
                path,
                &format!(
                    "holds a key in OpenSSL's legacy encrypted format; convert it to encrypted \
                     PKCS#8 (openssl pkcs8 -topk8 -in KEY -out KEY.p8, then {password_key}) or \
                     to an unencrypted key"
                ),
            ));
        }
        PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
            file(
                key,
                path,
                &format!("holds no PEM private key (PKCS#8, PKCS#1 or SEC1): {e}"),
            )
        })
    }

    /// An `ENCRYPTED PRIVATE KEY` (PKCS#8, PBES2) decrypted with `password`.
    fn decrypt(
        key: &'static str,
        path: &Path,
        bytes: &[u8],
        password: Option<&str>,
        password_key: &str,
    ) -> Result<PrivateKeyDer<'static>, TlsError> {
        let Some(password) = password else {
            return Err(file(
                key,
                path,
                &format!("holds an encrypted private key: set {password_key} to its password"),
            ));
        };
        let text =
            std::str::from_utf8(bytes).map_err(|_| file(key, path, &"is not a PEM text file"))?;
        let (_, der) = pkcs8::der::pem::decode_vec(text.trim().as_bytes()).map_err(|e| {
            file(
                key,
                path,
                &format!("is not a PEM encrypted private key: {e}"),
            )
        })?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
            .map_err(|e| file(key, path, &format!("is not an encrypted PKCS#8 key: {e}")))?;
        let plain = info.decrypt(password).map_err(|e| {
            file(
                key,
                path,
                &format!(
                    "cannot be decrypted with {password_key} ({e}): a wrong password, or an \
                     encryption scheme other than PBES2 (PBKDF2 or scrypt, AES-CBC)"
                ),
            )
        })?;
        Ok(PrivateKeyDer::Pkcs8(plain.as_bytes().to_vec().into()))
    }
}
