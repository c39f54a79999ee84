//! The ACL admin requests' changes to plain_acl.yml (RocketMQ 4.9.7's
//! `PlainPermissionManager.updateAccessConfig`, `deleteAccessConfig`,
//! `updateGlobalWhiteAddrsConfig`): the YAML document is edited as a tree (other keys and the
//! order of accounts kept), its `dataVersion` moved on, the result checked by the same parser
//! as at start-up, written atomically (`rmq_store::atomic_file`) and applied at once.

use serde_norway::{Mapping, Value};

use crate::config::{parse_resource_perm, KEY_MIN_LENGTH};
use crate::error::AclError;
use crate::handler::AclFile;
use crate::rules::DataVersion;

/// An account as UPDATE_AND_CREATE_ACL_CONFIG carries it (`PlainAccessConfig`).
#[derive(Debug, Clone, Default)]
pub struct AccountUpdate {
    /// `accessKey`.
    pub access_key: String,
    /// `secretKey`: kept as it is when `None` or empty.
    pub secret_key: Option<String>,
    /// `whiteRemoteAddress`: kept when `None`.
    pub white_remote_address: Option<String>,
    /// `admin`.
    pub admin: bool,
    /// `defaultTopicPerm`: kept when `None` or empty.
    pub default_topic_perm: Option<String>,
    /// `defaultGroupPerm`: kept when `None` or empty.
    pub default_group_perm: Option<String>,
    /// `topicPerms` (`name=PERM` items): kept when `None`.
    pub topic_perms: Option<Vec<String>>,
    /// `groupPerms`: kept when `None`.
    pub group_perms: Option<Vec<String>>,
}

fn refused(msg: impl Into<String>) -> AclError {
    AclError::Refused(msg.into())
}

impl AclFile {
    /// Create or update an account.
    ///
    /// # Errors
    /// A key too short, a bad permission or address, or the file cannot be written.
    pub fn update_account(&self, u: &AccountUpdate) -> Result<(), AclError> {
        if u.access_key.trim().len() <= KEY_MIN_LENGTH {
            return Err(refused(format!(
                "The accessKey={} cannot be null and length should longer than {KEY_MIN_LENGTH}",
                u.access_key
            )));
        }
        for perms in [&u.topic_perms, &u.group_perms].into_iter().flatten() {
            for p in perms {
                parse_resource_perm(p).map_err(refused)?;
            }
        }
        self.edit(|doc| {
            let accounts = accounts_of(doc)?;
            let pos = accounts.iter().position(|a| is_account(a, &u.access_key));
            let mut entry = match pos {
                Some(i) => accounts.remove(i),
                None => Value::Mapping(Mapping::new()),
            };
            let Value::Mapping(m) = &mut entry else {
                return Err(refused("an entry of accounts is not a mapping"));
            };
            let set = |m: &mut Mapping, k: &str, v: Value| {
                m.insert(Value::String(k.into()), v);
            };
            set(m, "accessKey", Value::String(u.access_key.clone()));
            match u.secret_key.as_deref().filter(|s| !s.is_empty()) {
                Some(s) if s.len() <= KEY_MIN_LENGTH => {
                    return Err(refused(format!(
                        "The secretKey of {} should be longer than {KEY_MIN_LENGTH} characters",
                        u.access_key
                    )));
                }
                Some(s) => set(m, "secretKey", Value::String(s.into())),
                None if pos.is_none() => {
                    return Err(refused(format!(
                        "The accessKey={} is new: it needs a secretKey longer than \
                         {KEY_MIN_LENGTH} characters",
                        u.access_key
                    )));
                }
                None => {}
            }
            if let Some(w) = &u.white_remote_address {
                set(m, "whiteRemoteAddress", Value::String(w.clone()));
            }
            set(m, "admin", Value::Bool(u.admin));
            if let Some(p) = u.default_topic_perm.as_deref().filter(|p| !p.is_empty()) {
                set(m, "defaultTopicPerm", Value::String(p.into()));
            }
            if let Some(p) = u.default_group_perm.as_deref().filter(|p| !p.is_empty()) {
                set(m, "defaultGroupPerm", Value::String(p.into()));
            }
            for (key, perms) in [
                ("topicPerms", &u.topic_perms),
                ("groupPerms", &u.group_perms),
            ] {
                if let Some(perms) = perms {
                    let items = perms.iter().map(|p| Value::String(p.clone())).collect();
                    set(m, key, Value::Sequence(items));
                }
            }
            match pos {
                Some(i) => accounts.insert(i, entry),
                None => accounts.push(entry),
            }
            Ok(())
        })
    }

    /// Delete an account; `Ok(false)` when there is none of that name.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn delete_account(&self, access_key: &str) -> Result<bool, AclError> {
        let mut found = false;
        self.edit(|doc| {
            let accounts = accounts_of(doc)?;
            let before = accounts.len();
            accounts.retain(|a| !is_account(a, access_key));
            found = accounts.len() != before;
            if found {
                Ok(())
            } else {
                Err(refused(format!(
                    "no account '{access_key}' in the ACL file"
                )))
            }
        })
        .or_else(|e| if found { Err(e) } else { Ok(()) })?;
        Ok(found)
    }

    /// Replace `globalWhiteRemoteAddresses`.
    ///
    /// # Errors
    /// A bad address pattern, or the file cannot be written.
    pub fn update_global_white(&self, addrs: &[String]) -> Result<(), AclError> {
        self.edit(|doc| {
            let list = addrs.iter().map(|a| Value::String(a.clone())).collect();
            doc.insert(
                Value::String("globalWhiteRemoteAddresses".into()),
                Value::Sequence(list),
            );
            Ok(())
        })
    }

    /// The `dataVersion` of the rules in force.
    #[must_use]
    pub fn data_version(&self) -> DataVersion {
        self.rules().data_version
    }

    fn edit(
        &self,
        change: impl FnOnce(&mut Mapping) -> Result<(), AclError>,
    ) -> Result<(), AclError> {
        let _turn = self
            .edit_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let path = self.path();
        let text = std::fs::read_to_string(path).map_err(|source| AclError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut doc = match serde_norway::from_str::<Value>(&text) {
            Ok(Value::Mapping(m)) => m,
            Ok(Value::Null) => Mapping::new(),
            Ok(_) => return Err(refused(format!("{} is not a YAML mapping", path.display()))),
            Err(e) => {
                return Err(refused(format!(
                    "{} is not valid YAML: {e}",
                    path.display()
                )))
            }
        };
        change(&mut doc)?;
        let old = self.rules().data_version;
        let mut version = Mapping::new();
        version.insert("counter".into(), Value::Number((old.counter + 1).into()));
        version.insert(
            "timestamp".into(),
            Value::Number(rmq_common::time::now_millis().into()),
        );
        doc.insert(
            Value::String("dataVersion".into()),
            Value::Sequence(vec![Value::Mapping(version)]),
        );
        let out = serde_norway::to_string(&doc).map_err(|e| AclError::Write {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        // Never write a file the next start-up would refuse.
        crate::config::parse(path, &out).map_err(|e| refused(e.to_string()))?;
        rmq_store::atomic_file::write_file_atomic(
            path,
            out.as_bytes(),
            rmq_store::atomic_file::AtomicWrite {
                backup: true,
                sync: true,
            },
        )
        .map_err(|e| AclError::Write {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        self.reload()?;
        Ok(())
    }
}

fn accounts_of(doc: &mut Mapping) -> Result<&mut Vec<Value>, AclError> {
    let slot = doc
        .entry(Value::String("accounts".into()))
        .or_insert_with(|| Value::Sequence(Vec::new()));
    if slot.is_null() {
        *slot = Value::Sequence(Vec::new());
    }
    match slot {
        Value::Sequence(s) => Ok(s),
        _ => Err(refused("accounts in the ACL file is not a list")),
    }
}

fn is_account(v: &Value, access_key: &str) -> bool {
    match v.get("accessKey") {
        Some(Value::String(s)) => s.trim() == access_key,
        Some(Value::Number(n)) => n.to_string() == access_key,
        _ => false,
    }
}
