//! Parsing of the value types of the config schema: each kind's text to its canonical text,
//! and the two structured values, `messageDelayLevel` and `deleteWhen`, whose parsers the
//! store and the Python schedules use (the only copies).

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use super::ValueKind;

/// RocketMQ's `messageDelayLevel`.
pub const DEFAULT_DELAY_LEVELS: &str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

/// `text` quoted as Python's `repr` quotes a string, so Rust and Python messages read alike:
/// `'FAST'`, or `"it's"` when the text holds a `'` and no `"`.
#[must_use]
pub fn quote(text: &str) -> String {
    let q = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(q);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// `value` (already trimmed) in canonical text, or why it is refused (`None`: the allowed
/// values say it all).
pub(super) fn normalize(kind: ValueKind, value: &str) -> Result<String, Option<String>> {
    let int = || value.parse::<i64>().map_err(|_| None);
    match kind {
        ValueKind::Int { min, max } => {
            let n = int()?;
            in_range(n, min, max)
        }
        ValueKind::IntMultipleOf { min, max, of } => {
            let n = int()?;
            if n % of == 0 {
                in_range(n, min, max)
            } else {
                Err(None)
            }
        }
        ValueKind::IntOneOf(allowed) => {
            let n = int()?;
            if allowed.contains(&n) {
                Ok(n.to_string())
            } else {
                Err(None)
            }
        }
        ValueKind::Bool => match value.to_ascii_lowercase().as_str() {
            "true" => Ok("true".to_owned()),
            "false" => Ok("false".to_owned()),
            _ => Err(None),
        },
        ValueKind::OneOf(names) => names
            .iter()
            .find(|n| **n == value)
            .map(|n| (*n).to_owned())
            .ok_or(None),
        ValueKind::Text => Ok(value.to_owned()),
        ValueKind::Name | ValueKind::Path => {
            if value.is_empty() {
                Err(None)
            } else {
                Ok(value.to_owned())
            }
        }
        ValueKind::Ip => value
            .parse::<IpAddr>()
            .map(|ip| ip.to_string())
            .map_err(|_| None),
        ValueKind::SocketAddr => value
            .parse::<SocketAddr>()
            .map(|a| a.to_string())
            .map_err(|_| None),
        ValueKind::HostPortList => host_port_list(value).ok_or(None),
        ValueKind::DeleteWhen => parse_delete_when(value)
            .map(|_| value.to_owned())
            .map_err(|_| None),
        ValueKind::DelayLevels => parse_delay_levels(value)
            .map(|_| value.split_whitespace().collect::<Vec<_>>().join(" "))
            .map_err(Some),
    }
}

fn in_range(n: i64, min: i64, max: i64) -> Result<String, Option<String>> {
    if (min..=max).contains(&n) {
        Ok(n.to_string())
    } else {
        Err(None)
    }
}

/// `host:port;host:port` with blanks and empty items dropped; `None` when an item is not
/// `host:port` (host a name, an IPv4 address or a bracketed IPv6 address; port 1-65535).
fn host_port_list(value: &str) -> Option<String> {
    let items: Vec<&str> = value
        .split(';')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .collect();
    for item in &items {
        let (host, port) = item.rsplit_once(':')?;
        let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(v6) => {
                !v6.is_empty()
                    && v6
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
            }
            None => {
                !host.is_empty()
                    && host
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
            }
        };
        let port_ok = (1..=5).contains(&port.len())
            && port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u32>().is_ok_and(|p| (1..=65_535).contains(&p));
        if !host_ok || !port_ok {
            return None;
        }
    }
    Some(items.join(";"))
}

/// The hours of the day (0-23) that a `deleteWhen` value names: `"04"`, `"04;16"`; blanks
/// around hours and empty items (a trailing `;`) are tolerated, as RocketMQ's split does.
///
/// # Errors
/// A message naming the item that is not an hour 00-23, or saying that no hour is given.
pub fn parse_delete_when(value: &str) -> Result<Vec<u8>, String> {
    let mut hours = Vec::new();
    for part in value.split(';') {
        let item = part.trim();
        if item.is_empty() {
            continue;
        }
        match item.parse::<u8>() {
            Ok(h) if h < 24 && item.len() <= 2 && item.bytes().all(|b| b.is_ascii_digit()) => {
                if !hours.contains(&h) {
                    hours.push(h);
                }
            }
            _ => return Err(format!("{} is not an hour 00-23", quote(item))),
        }
    }
    if hours.is_empty() {
        return Err("no hour given".to_owned());
    }
    hours.sort_unstable();
    Ok(hours)
}

/// Parse `messageDelayLevel` ("1s 5s 10s 30s 1m … 2h", levels separated by blanks) into
/// milliseconds per level, as RocketMQ's `parseDelayLevel` (units `s`, `m`, `h`, `d`), but
/// refusing what RocketMQ would silently mis-parse: a level must be a whole number above zero
/// with one of those units.
///
/// # Errors
/// A message naming the bad level and its position when a level is not
/// `<number><s|m|h|d>` with a number of at least 1, or when no level is given.
pub fn parse_delay_levels(s: &str) -> Result<Vec<i64>, String> {
    const EXAMPLE: &str = "e.g. \"1s 5s 10s 30s 1m 2m\"";
    let mut out = Vec::new();
    for (i, tok) in s.split_whitespace().enumerate() {
        let level = i + 1;
        let shown = quote(tok);
        let (num, unit) = tok.split_at(tok.len() - tok.chars().last().map_or(0, char::len_utf8));
        let mult: i64 = match unit {
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => {
                return Err(format!(
                    "level {level} ({shown}) needs a unit s, m, h or d after the number, {EXAMPLE}"
                ))
            }
        };
        let n = Some(num)
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .map(|n| n.parse::<i64>().unwrap_or(i64::MAX))
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                format!(
                    "level {level} ({shown}) needs a whole number of at least 1 before its \
                     unit, {EXAMPLE}"
                )
            })?;
        let ms = n
            .checked_mul(mult)
            .ok_or_else(|| format!("level {level} ({shown}) is too long, {EXAMPLE}"))?;
        out.push(ms);
    }
    if out.is_empty() {
        return Err(format!("at least one delay level is needed, {EXAMPLE}"));
    }
    Ok(out)
}
