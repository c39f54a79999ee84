//! [`AclHandler`]: a `rmq_remoting::RequestHandler` that checks every request against the
//! current [`AclRules`] before handing it to the server's own handler, and answers a refusal
//! with NO_PERMISSION (16) and a remark naming the account, the resource and the missing
//! permission (the connection stays open). [`AclFile`] holds the rules behind an `Arc`,
//! swapped when a poll (once a second) finds the file changed; a bad new file keeps the old
//! rules and logs an error.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_remoting::{BoxFuture, Connection, Reply, RequestHandler};

use crate::error::AclError;
use crate::resource::Policy;
use crate::rules::AclRules;

/// How often the file is looked at.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(1);

/// The ACL file a server uses: `explicit` (its `aclFilePath`), else
/// `$ROCKETMQ_HOME/conf/plain_acl.yml` (RocketMQ's default). `conf` names the server's config
/// file in the error.
///
/// # Errors
/// Neither is set.
pub fn acl_file_path(explicit: Option<&Path>, conf: &str) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return Ok(p.to_owned());
    }
    match std::env::var_os("ROCKETMQ_HOME") {
        Some(home) if !home.is_empty() => Ok(PathBuf::from(home).join("conf/plain_acl.yml")),
        _ => Err(format!(
            "aclEnable=true but neither aclFilePath nor ROCKETMQ_HOME is set (the default is \
             $ROCKETMQ_HOME/conf/plain_acl.yml): set aclFilePath in {conf}"
        )),
    }
}

/// The ACL file of a server with `aclEnable=true`: `explicit` (`aclFilePath`) or the
/// default of [`acl_file_path`], opened with [`AclFile::open`]. The error is the sentence
/// the operator reads at start-up, naming the file and the `conf` file's key to set.
///
/// # Errors
/// No path can be chosen, the file is missing, unreadable or invalid.
pub fn open_enabled(explicit: Option<&Path>, conf: &str) -> Result<Arc<AclFile>, String> {
    let path = acl_file_path(explicit, conf)?;
    AclFile::open(&path).map_err(|e| match e {
        AclError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            format!(
                "aclEnable=true but the ACL file {} does not exist: create it (RocketMQ's \
                 plain_acl.yml format) or set aclFilePath in {conf}",
                path.display()
            )
        }
        other => other.to_string(),
    })
}

/// The ACL file and the rules last read from it.
pub struct AclFile {
    path: PathBuf,
    rules: RwLock<Arc<AclRules>>,
    /// The content the current rules came from (or the last bad content, reported once).
    seen: Mutex<Option<Vec<u8>>>,
    /// Serialises the ACL admin edits (read, change, write, apply).
    pub(crate) edit_lock: Mutex<()>,
}

impl AclFile {
    /// Read `path` and start polling it for changes (a thread that ends when the last `Arc`
    /// is dropped).
    ///
    /// # Errors
    /// The file is missing or bad ([`AclError`] names the file, the line and the key).
    pub fn open(path: &Path) -> Result<Arc<Self>, AclError> {
        let bytes = std::fs::read(path).map_err(|source| AclError::Read {
            path: path.to_owned(),
            source,
        })?;
        let rules = crate::config::parse(path, &String::from_utf8_lossy(&bytes))?;
        let file = Arc::new(Self {
            path: path.to_owned(),
            rules: RwLock::new(Arc::new(rules)),
            seen: Mutex::new(Some(bytes)),
            edit_lock: Mutex::new(()),
        });
        let weak = Arc::downgrade(&file);
        let spawned = std::thread::Builder::new()
            .name("rmq-acl-reload".into())
            .spawn(move || poll(&weak));
        if let Err(e) = spawned {
            log::error!(
                "ACL: cannot start the reload thread of {}: {e}",
                path.display()
            );
        }
        Ok(file)
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rules in force.
    #[must_use]
    pub fn rules(&self) -> Arc<AclRules> {
        Arc::clone(&self.rules.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Read the file again if it changed since the last look; `Ok(true)` when new rules were
    /// applied. A bad file keeps the rules in force; its error is returned (and logged)
    /// once per distinct content.
    ///
    /// # Errors
    /// The changed file cannot be read or is bad.
    pub fn reload(&self) -> Result<bool, AclError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(source) => {
                let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
                if seen.take().is_some() {
                    let e = AclError::Read {
                        path: self.path.clone(),
                        source,
                    };
                    log::error!("ACL: {e}; the rules in force stay");
                    return Err(e);
                }
                return Ok(false);
            }
        };
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.as_deref() == Some(&bytes[..]) {
            return Ok(false);
        }
        let parsed = crate::config::parse(&self.path, &String::from_utf8_lossy(&bytes));
        *seen = Some(bytes);
        match parsed {
            Ok(rules) => {
                let n = rules.accounts.len();
                *self.rules.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(rules);
                log::info!("ACL: reloaded {} ({n} accounts)", self.path.display());
                Ok(true)
            }
            Err(e) => {
                log::error!("ACL: {e}; the rules in force stay until the file is fixed");
                Err(e)
            }
        }
    }
}

fn poll(weak: &Weak<AclFile>) {
    loop {
        std::thread::sleep(RELOAD_INTERVAL);
        let Some(file) = weak.upgrade() else { return };
        let _ = file.reload();
    }
}

/// Checks each request, then hands it to `inner`.
pub struct AclHandler {
    inner: Arc<dyn RequestHandler>,
    file: Arc<AclFile>,
    policy: Policy,
    last_log_second: AtomicU64,
}

impl AclHandler {
    /// Wrap `inner` with the rules of `file` under `policy`.
    #[must_use]
    pub fn new(inner: Arc<dyn RequestHandler>, file: Arc<AclFile>, policy: Policy) -> Self {
        Self {
            inner,
            file,
            policy,
            last_log_second: AtomicU64::new(0),
        }
    }

    /// The ACL file behind this handler.
    #[must_use]
    pub fn file(&self) -> &Arc<AclFile> {
        &self.file
    }

    /// One warning a second at most: a client retrying a refused request must not flood
    /// the log.
    fn log_refusal(&self, peer: IpAddr, remark: &str) {
        let now = u64::try_from(rmq_common::time::now_millis() / 1000).unwrap_or(0);
        let last = self.last_log_second.load(Ordering::Relaxed);
        if now > last
            && self
                .last_log_second
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            log::warn!("ACL: refused a request from {peer}: {remark}");
        }
    }
}

impl RequestHandler for AclHandler {
    fn handle(&self, conn: Connection, request: RemotingCommand) -> BoxFuture<Option<Reply>> {
        let peer = conn.peer().ip();
        match self.file.rules().check(peer, &request, self.policy) {
            Ok(()) => self.inner.handle(conn, request),
            Err(refusal) => {
                self.log_refusal(peer, &refusal.0);
                let reply = (!request.is_oneway()).then(|| {
                    Reply::Command(RemotingCommand::response_to(
                        &request,
                        ResponseCode::NO_PERMISSION.0,
                        Some(refusal.0),
                    ))
                });
                Box::pin(async move { reply })
            }
        }
    }
    fn run_inline(&self, request: &RemotingCommand) -> bool {
        self.inner.run_inline(request)
    }
    fn on_connect(&self, conn: &Connection) {
        self.inner.on_connect(conn);
    }
    fn on_close(&self, conn: &Connection) {
        self.inner.on_close(conn);
    }
}
