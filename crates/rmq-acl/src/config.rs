//! plain_acl.yml, RocketMQ 4.9.7's format, read into [`AclRules`]: `globalWhiteRemoteAddresses`,
//! `accounts` (`accessKey`, `secretKey`, `whiteRemoteAddress`, `admin`, `defaultTopicPerm`,
//! `defaultGroupPerm`, `topicPerms`, `groupPerms` as `name=PERM`) and `dataVersion`. Every
//! mistake is refused with the file, the line and the key (`accounts[1].defaultTopicPerm`),
//! where RocketMQ would read an unknown permission as DENY or fail later.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use crate::address::AddressPattern;
use crate::error::AclError;
use crate::perm::Perm;
use crate::rules::{Account, AclRules, DataVersion};

/// RocketMQ refuses keys of 6 characters or fewer (`AclConstants.ACCESS_KEY_MIN_LENGTH`).
pub const KEY_MIN_LENGTH: usize = 6;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileModel {
    #[serde(default, deserialize_with = "null_default")]
    global_white_remote_addresses: Vec<Pattern>,
    #[serde(default, deserialize_with = "null_default")]
    accounts: Vec<AccountModel>,
    #[serde(default, deserialize_with = "null_default")]
    data_version: Vec<DataVersionModel>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AccountModel {
    access_key: Key,
    secret_key: Key,
    #[serde(default)]
    white_remote_address: Option<Pattern>,
    #[serde(default, deserialize_with = "null_default")]
    admin: bool,
    #[serde(default)]
    default_topic_perm: Option<PermModel>,
    #[serde(default)]
    default_group_perm: Option<PermModel>,
    #[serde(default, deserialize_with = "null_default")]
    topic_perms: Vec<ResourcePerm>,
    #[serde(default, deserialize_with = "null_default")]
    group_perms: Vec<ResourcePerm>,
}

#[derive(Deserialize)]
struct DataVersionModel {
    #[serde(default)]
    counter: i64,
    #[serde(default)]
    timestamp: i64,
    #[serde(default, rename = "stateVersion")]
    _state_version: Option<i64>,
}

fn null_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(
    d: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A YAML scalar read as text (an all-digit key is a number to YAML) and checked by `check`
/// inside the visitor, so that an error carries the scalar's own line.
fn scalar<'de, D, T>(d: D, check: fn(String) -> Result<T, String>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    struct V<T>(fn(String) -> Result<T, String>);
    impl<T> V<T> {
        fn done<E: de::Error>(&self, s: String) -> Result<T, E> {
            (self.0)(s).map_err(E::custom)
        }
    }
    impl<T> de::Visitor<'_> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            self.done(v.to_owned())
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
            self.done(v.to_string())
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
            self.done(v.to_string())
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
            self.done(v.to_string())
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
            self.done(v.to_string())
        }
        fn visit_unit<E: de::Error>(self) -> Result<T, E> {
            self.done(String::new())
        }
    }
    d.deserialize_any(V(check))
}

struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        scalar(d, |s| {
            if s.trim().len() <= KEY_MIN_LENGTH {
                return Err(format!(
                    "must be longer than {KEY_MIN_LENGTH} characters (RocketMQ's minimum)"
                ));
            }
            Ok(Self(s.trim().to_owned()))
        })
    }
}

struct Pattern(AddressPattern);

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        scalar(d, |s| {
            AddressPattern::parse(&s)
                .map(Self)
                .map_err(|e| format!("bad address pattern: {e}"))
        })
    }
}

struct PermModel(Perm);

impl<'de> Deserialize<'de> for PermModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        scalar(d, |s| {
            Perm::parse(&s)
                .map(Self)
                .ok_or_else(|| format!("'{s}' is not a permission: use DENY, PUB, SUB or PUB|SUB"))
        })
    }
}

struct ResourcePerm(String, Perm);

impl<'de> Deserialize<'de> for ResourcePerm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        scalar(d, |s| parse_resource_perm(&s).map(|(n, p)| Self(n, p)))
    }
}

/// `name=PERM` as `topicPerms`/`groupPerms` items and the ACL admin requests write them.
///
/// # Errors
/// Not `name=PERM`, or an unknown permission.
pub fn parse_resource_perm(s: &str) -> Result<(String, Perm), String> {
    let parts: Vec<&str> = s
        .split('=')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let [name, perm] = parts[..] else {
        return Err(format!(
            "'{s}' is not 'resource=PERM' (for example topicA=SUB)"
        ));
    };
    let perm = Perm::parse(perm).ok_or_else(|| {
        format!("'{s}': '{perm}' is not a permission: use DENY, PUB, SUB or PUB|SUB")
    })?;
    Ok((name.to_owned(), perm))
}

/// Read and check the ACL file at `path`.
///
/// # Errors
/// The file cannot be read, is not YAML, or a key has a bad value: [`AclError::File`] names
/// the file, the line and the key.
pub fn load(path: &Path) -> Result<AclRules, AclError> {
    let text = std::fs::read_to_string(path).map_err(|source| AclError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(path, &text)
}

/// Parse `text` as the content of `path` (named in errors).
///
/// # Errors
/// As [`load`].
pub fn parse(path: &Path, text: &str) -> Result<AclRules, AclError> {
    if text.trim().is_empty() {
        // RocketMQ logs "No data in <file>, skip it": no accounts, no white list.
        return Ok(AclRules::default());
    }
    let de = serde_norway::Deserializer::from_str(text);
    let model: FileModel = serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner();
        let line = inner.location().map(|l| l.line());
        let message = strip_location(&inner.to_string(), &key);
        AclError::File {
            path: path.to_owned(),
            line,
            key: if key == "." { String::new() } else { key },
            message,
        }
    })?;
    Ok(build(model))
}

/// serde_norway puts the key path before the message and " at line L column C" after it;
/// the error names both itself.
fn strip_location(msg: &str, key: &str) -> String {
    let msg = msg.find(" at line ").map_or(msg, |i| &msg[..i]);
    let msg = match msg.split_once(": ") {
        Some((path, rest)) if !path.contains(' ') && key.starts_with(path) => rest,
        _ => msg,
    };
    msg.to_owned()
}

fn build(model: FileModel) -> AclRules {
    let mut accounts = HashMap::new();
    for a in model.accounts {
        let mut topic_perms = HashMap::new();
        for ResourcePerm(name, perm) in a.topic_perms {
            topic_perms.insert(name, perm);
        }
        let mut group_perms = HashMap::new();
        for ResourcePerm(name, perm) in a.group_perms {
            group_perms.insert(name, perm);
        }
        let account = Account {
            access_key: a.access_key.0,
            secret_key: a.secret_key.0,
            white_remote_address: a
                .white_remote_address
                .map_or(AddressPattern::Nothing, |p| p.0),
            admin: a.admin,
            default_topic_perm: a.default_topic_perm.map_or(Perm::DENY, |p| p.0),
            default_group_perm: a.default_group_perm.map_or(Perm::DENY, |p| p.0),
            topic_perms,
            group_perms,
        };
        // A repeated accessKey: the later entry wins, as in RocketMQ.
        accounts.insert(account.access_key.clone(), account);
    }
    let data_version = model
        .data_version
        .first()
        .map(|v| DataVersion {
            counter: v.counter,
            timestamp: v.timestamp,
        })
        .unwrap_or_default();
    AclRules {
        global_white: model
            .global_white_remote_addresses
            .into_iter()
            .map(|p| p.0)
            .collect(),
        accounts,
        data_version,
    }
}
