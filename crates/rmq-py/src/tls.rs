//! TLS options as Python gives them: the SDK's keywords (`tls`, `tls_ca`, `tls_cert`,
//! `tls_key`, `tls_verify`, the same on every client class) become an
//! `rmq_remoting::tls::ClientTls`, a server's `tls.server.*` settings a `ServerTls`, a
//! broker's `tls.*` settings the store's HA TLS (`rmq_store::ha::HaTls`). A setting
//! that cannot be used raises `rmq.errors.ConfigError` naming the option (or key) and file.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use rmq_remoting::tls::{ClientTls, ClientTlsOptions, ServerTls, TlsMode};
use rmq_store::ha::{HaServerTls, HaTls};

use crate::errors::raise;

/// The SDK's TLS keywords, as pyo3 extracts them.
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsArgs {
    pub(crate) tls: bool,
    pub(crate) ca: Option<PathBuf>,
    pub(crate) cert: Option<PathBuf>,
    pub(crate) key: Option<PathBuf>,
    pub(crate) verify: bool,
}

impl TlsArgs {
    /// `None` for plain TCP (`tls=False`).
    pub(crate) fn build(self, py: Python<'_>) -> PyResult<Option<Arc<ClientTls>>> {
        if !self.tls {
            if self.ca.is_some() || self.cert.is_some() || self.key.is_some() {
                return Err(raise(
                    py,
                    "ConfigError",
                    "tls_ca / tls_cert / tls_key given without tls=True; add tls=True to \
                     connect over TLS"
                        .to_owned(),
                ));
            }
            return Ok(None);
        }
        let options = ClientTlsOptions {
            trust_cert_path: self.ca,
            cert_path: self.cert,
            key_path: self.key,
            verify_server: self.verify,
            key_password: None,
        };
        ClientTls::new(&options)
            .map(|t| Some(Arc::new(t)))
            .map_err(|e| {
                // The SDK's words for RocketMQ's keys.
                let text = e
                    .to_string()
                    .replace("tls.client.trustCertPath", "tls_ca")
                    .replace("tls.client.certPath", "tls_cert")
                    .replace("tls.client.keyPath", "tls_key");
                raise(py, "ConfigError", text)
            })
    }
}

/// A server's TLS from its `tls.server.*` settings (`None`: disabled).
pub(crate) fn server_tls(
    py: Python<'_>,
    settings: Option<&HashMap<String, String>>,
) -> PyResult<Option<Arc<ServerTls>>> {
    let Some(settings) = settings else {
        return Ok(None);
    };
    ServerTls::from_settings(settings)
        .map(|t| t.map(Arc::new))
        .map_err(|e| raise(py, "ConfigError", e.to_string()))
}

/// The HA port's TLS from the broker's `tls.*` settings: its `tls.server.*` on the master's
/// acceptor, its `tls.enable` / `tls.client.*` on the slave's connection.
pub(crate) fn ha_tls(
    py: Python<'_>,
    settings: Option<&HashMap<String, String>>,
) -> PyResult<HaTls> {
    let Some(settings) = settings else {
        return Ok(HaTls::default());
    };
    let config_error = |e: rmq_remoting::tls::TlsError| raise(py, "ConfigError", e.to_string());
    let server = ServerTls::from_settings(settings)
        .map_err(config_error)?
        .map(|s| HaServerTls {
            enforcing: s.mode() == TlsMode::Enforcing,
            config: s.rustls_config(),
        });
    let client = ClientTls::from_settings(settings)
        .map_err(config_error)?
        .map(|c| c.rustls_config());
    Ok(HaTls { server, client })
}
