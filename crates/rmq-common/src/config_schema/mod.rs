//! The one table of configuration keys: for every `broker.conf` key (and every `namesrv.conf`
//! key) its value type, default, allowed range or values, owner and whether
//! UPDATE_BROKER_CONFIG may change it while the broker runs.
//!
//! It lives in rmq-common because three parties read it: rmq-store (`StoreConfig::set`),
//! rmq-broker (`BrokerConfig::set`) and, through rmq-py, the Python control plane
//! (`rmq.config`, `rmq.namesrv.config`), which keeps the properties-file reading, the
//! `file:line` messages and the "did you mean" but takes every bound and default from here.
//! [`check`] is the only place a value is bounded, so a value refused on one path is refused,
//! with the same words, on the other.
//!
//! Bounds follow Apache RocketMQ 4.9.7 where it has them (it clamps `diskMaxUsedSpaceRatio` to
//! 10..=95 and `registerNameServerPeriod` to 10 000..=60 000, and so do we, see
//! [`ConfigKey::clamp`]); where RocketMQ takes any `int` the range here is the one in which
//! the value means something to rmq, and is wide enough for every value a RocketMQ config file
//! plausibly holds (e.g. `fileReservedTime` = 0 is accepted, as RocketMQ does).

mod keys;
mod values;

pub use keys::{BROKER_KEYS, NAMESRV_KEYS};
pub use values::{parse_delay_levels, parse_delete_when, quote, DEFAULT_DELAY_LEVELS};

/// Which part of rmq acts on a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The native store (`rmq_store::StoreConfig`).
    Store,
    /// The Rust broker server (`rmq_broker::BrokerConfig`).
    Broker,
    /// The Python control plane (`rmq.config.BrokerConfig`: registration, schedules).
    ControlPlane,
    /// The nameserver (`namesrv.conf`).
    Namesrv,
    /// A RocketMQ key accepted without effect in this build (Java thread pools, HA).
    Unused,
}

impl Owner {
    /// The name Python sees.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Store => "store",
            Self::Broker => "broker",
            Self::ControlPlane => "control-plane",
            Self::Namesrv => "namesrv",
            Self::Unused => "unused",
        }
    }
}

/// What a value looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A decimal integer within `min..=max`.
    Int {
        /// Smallest value accepted.
        min: i64,
        /// Largest value accepted.
        max: i64,
    },
    /// A decimal integer within `min..=max` that is a multiple of `of`.
    IntMultipleOf {
        /// Smallest value accepted.
        min: i64,
        /// Largest value accepted.
        max: i64,
        /// The value must divide by this.
        of: i64,
    },
    /// One of these integers.
    IntOneOf(&'static [i64]),
    /// `true` or `false`, any case.
    Bool,
    /// One of these names, exactly.
    OneOf(&'static [&'static str]),
    /// Any text, empty included.
    Text,
    /// A non-empty name.
    Name,
    /// A non-empty file system path.
    Path,
    /// An IPv4 or IPv6 address.
    Ip,
    /// `host:port` items separated by `;` (empty: none).
    HostPortList,
    /// `ip:port`.
    SocketAddr,
    /// Hours of the day separated by `;`.
    DeleteWhen,
    /// `messageDelayLevel`: levels separated by blanks.
    DelayLevels,
}

impl ValueKind {
    /// The name Python sees.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Int { .. } | Self::IntMultipleOf { .. } | Self::IntOneOf(_) => "int",
            Self::Bool => "bool",
            Self::OneOf(_) => "enum",
            Self::Text => "text",
            Self::Name => "name",
            Self::Path => "path",
            Self::Ip => "ip",
            Self::HostPortList => "host-port-list",
            Self::SocketAddr => "socket-addr",
            Self::DeleteWhen => "delete-when",
            Self::DelayLevels => "delay-levels",
        }
    }
}

/// One configuration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigKey {
    /// The key as a config file spells it (RocketMQ's name).
    pub name: &'static str,
    /// Its value type and range.
    pub kind: ValueKind,
    /// The default as text; `None` when it is worked out at start-up (see `doc`).
    pub default: Option<&'static str>,
    /// Who acts on it.
    pub owner: Owner,
    /// Whether UPDATE_BROKER_CONFIG (or UPDATE_NAMESRV_CONFIG) may change it while running.
    pub runtime: bool,
    /// RocketMQ clamps a value outside `lo..=hi` into it instead of refusing it.
    pub clamp: Option<(i64, i64)>,
    /// Replaces the generated "what is allowed" text.
    pub allowed_text: Option<&'static str>,
    /// Appended to the generated "what is allowed" text (a unit, a hint).
    pub hint: &'static str,
    /// What the key does.
    pub doc: &'static str,
}

impl ConfigKey {
    /// A key with no clamp, hint or runtime change.
    pub(crate) const fn new(
        name: &'static str,
        kind: ValueKind,
        default: Option<&'static str>,
        owner: Owner,
        doc: &'static str,
    ) -> Self {
        Self {
            name,
            kind,
            default,
            owner,
            runtime: false,
            clamp: None,
            allowed_text: None,
            hint: "",
            doc,
        }
    }

    /// UPDATE_BROKER_CONFIG may change it while running.
    pub(crate) const fn runtime(mut self) -> Self {
        self.runtime = true;
        self
    }

    /// Clamped into `lo..=hi` as RocketMQ does.
    pub(crate) const fn clamp(mut self, lo: i64, hi: i64) -> Self {
        self.clamp = Some((lo, hi));
        self
    }

    /// Appended to the "what is allowed" text.
    pub(crate) const fn hint(mut self, hint: &'static str) -> Self {
        self.hint = hint;
        self
    }

    /// Replaces the "what is allowed" text.
    pub(crate) const fn allowed(mut self, text: &'static str) -> Self {
        self.allowed_text = Some(text);
        self
    }

    /// Smallest and largest integer accepted, for integer keys.
    #[must_use]
    pub fn int_range(&self) -> Option<(i64, i64)> {
        match self.kind {
            ValueKind::Int { min, max } | ValueKind::IntMultipleOf { min, max, .. } => {
                Some((min, max))
            }
            ValueKind::IntOneOf(vals) => Some((
                vals.iter().copied().min().unwrap_or(0),
                vals.iter().copied().max().unwrap_or(0),
            )),
            _ => None,
        }
    }

    /// The values an enumerated key takes, as text (empty for other keys).
    #[must_use]
    pub fn choices(&self) -> Vec<String> {
        match self.kind {
            ValueKind::OneOf(names) => names.iter().map(|n| (*n).to_owned()).collect(),
            ValueKind::IntOneOf(vals) => vals.iter().map(i64::to_string).collect(),
            _ => Vec::new(),
        }
    }

    /// What is allowed, as the second half of an error message ("use an integer from 1 to
    /// 1024").
    #[must_use]
    pub fn allowed_text(&self) -> String {
        if let Some(text) = self.allowed_text {
            return text.to_owned();
        }
        let base = match self.kind {
            ValueKind::Int { min, max } if max == i64::MAX => format!("use an integer >= {min}"),
            ValueKind::Int { min, max } => format!("use an integer from {min} to {max}"),
            ValueKind::IntMultipleOf { min, max, of } => {
                format!("use a multiple of {of} from {min} to {max}")
            }
            ValueKind::IntOneOf(_) | ValueKind::OneOf(_) => {
                let names = self.choices();
                match names.split_last() {
                    Some((last, [])) => format!("use {last}"),
                    Some((last, rest)) => format!("use {} or {last}", rest.join(", ")),
                    None => String::new(),
                }
            }
            ValueKind::Bool => "use true or false".to_owned(),
            ValueKind::Text => "use any text".to_owned(),
            ValueKind::Name => "use a non-empty name".to_owned(),
            ValueKind::Path => "use a directory path".to_owned(),
            ValueKind::Ip => "use an IPv4 or IPv6 address".to_owned(),
            ValueKind::HostPortList => {
                "use host:port items separated by ';', e.g. 127.0.0.1:9876;192.168.0.2:9876"
                    .to_owned()
            }
            ValueKind::SocketAddr => "use ip:port, e.g. 192.168.0.2:10911".to_owned(),
            ValueKind::DeleteWhen => {
                "use one or more hours 00-23 separated by ';', e.g. 04;16".to_owned()
            }
            ValueKind::DelayLevels => "use levels separated by blanks, level 1 first, each a \
                                       whole number >= 1 followed by s, m, h or d"
                .to_owned(),
        };
        format!("{base}{}", self.hint)
    }

    /// Check one value's text (blanks around it ignored).
    ///
    /// # Errors
    /// [`ConfigValueError::NotAllowed`] naming the key, the value, what is wrong with it
    /// when that says more than the allowed values, and what is allowed.
    pub fn check(&self, raw: &str) -> Result<Checked, ConfigValueError> {
        let value = raw.trim();
        let refuse = |reason: Option<String>| ConfigValueError::NotAllowed {
            key: self.name.to_owned(),
            value: value.to_owned(),
            reason,
            allowed: self.allowed_text(),
        };
        let text = values::normalize(self.kind, value).map_err(refuse)?;
        if let (Some((lo, hi)), Ok(n)) = (self.clamp, text.parse::<i64>()) {
            if !(lo..=hi).contains(&n) {
                let used = n.clamp(lo, hi);
                return Ok(Checked {
                    text: used.to_string(),
                    note: Some(format!(
                        "{} = {n} is outside {lo}-{hi}; using {used} (as RocketMQ does)",
                        self.name
                    )),
                });
            }
        }
        Ok(Checked { text, note: None })
    }
}

/// A value that passed [`ConfigKey::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The value to use, in its canonical text (an integer without sign or leading zeros,
    /// `true`/`false`, blanks collapsed), clamped where RocketMQ clamps.
    pub text: String,
    /// Set when the value was clamped: says from what to what.
    pub note: Option<String>,
}

/// A value or key that the schema refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigValueError {
    /// The value is outside what the key allows.
    #[error(
        "{key} = {} is not allowed{}; {allowed}",
        quote(value),
        reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
    )]
    NotAllowed {
        /// The key.
        key: String,
        /// The value, blanks around it removed.
        value: String,
        /// What exactly is wrong, when the allowed values do not say it.
        reason: Option<String>,
        /// What is allowed.
        allowed: String,
    },
    /// The key is not in the table checked.
    #[error("{key} is not a {table} key")]
    UnknownKey {
        /// The key.
        key: String,
        /// Which table: "broker.conf", "store" ...
        table: &'static str,
    },
}

/// The `broker.conf` key named `name`.
#[must_use]
pub fn broker_key(name: &str) -> Option<&'static ConfigKey> {
    BROKER_KEYS.iter().find(|k| k.name == name)
}

/// The `namesrv.conf` key named `name`.
#[must_use]
pub fn namesrv_key(name: &str) -> Option<&'static ConfigKey> {
    NAMESRV_KEYS.iter().find(|k| k.name == name)
}

/// Check `broker.conf` key `name`'s value.
///
/// # Errors
/// An unknown key, or a value [`ConfigKey::check`] refuses.
pub fn check_broker_value(name: &str, raw: &str) -> Result<Checked, ConfigValueError> {
    broker_key(name)
        .ok_or_else(|| ConfigValueError::UnknownKey {
            key: name.to_owned(),
            table: "broker.conf",
        })?
        .check(raw)
}

#[cfg(test)]
mod tests;
