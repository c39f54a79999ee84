//! Remote-address patterns of plain_acl.yml (`globalWhiteRemoteAddresses`,
//! `whiteRemoteAddress`), as RocketMQ 4.9.7's `RemoteAddressStrategyFactory` reads them:
//! blank matches nothing; `*`, `*.*.*.*` or `*:*:*:*:*:*:*:*` match everything;
//! `a.b.c.{1,2,3}` and `a,b,c` are lists; `a.b.*.*` and `a.b.c.1-100` are ranges (the first
//! segment with `*` or `-` is the range, the segments after it must be `*`); anything else is
//! one IPv4 or IPv6 address. IPv6 ranges are compared on the expanded address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A parsed address pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressPattern {
    /// Blank: matches no address.
    Nothing,
    /// `*`: matches every address.
    Everything,
    /// One or more exact addresses.
    List(Vec<IpAddr>),
    /// Segments before `index` equal `head`, segment `index` lies in `start..=end`.
    Range {
        /// The fixed leading segments.
        head: Vec<u16>,
        /// Segment range, inclusive.
        start: u16,
        /// Segment range, inclusive.
        end: u16,
        /// IPv6 (8 segments of 16 bits) rather than IPv4 (4 of 8).
        v6: bool,
    },
}

impl AddressPattern {
    /// Parse `text`; `Err` says what is wrong with it.
    ///
    /// # Errors
    /// Not one of the forms above.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.is_empty() {
            return Ok(Self::Nothing);
        }
        if matches!(t, "*" | "*.*.*.*" | "*:*:*:*:*:*:*:*") {
            return Ok(Self::Everything);
        }
        if t.ends_with('}') {
            return parse_braces(t).map(Self::List);
        }
        if t.contains(',') {
            return t
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(parse_ip)
                .collect::<Result<Vec<_>, _>>()
                .map(Self::List);
        }
        if t.contains('*') || t.contains('-') {
            return parse_range(t);
        }
        parse_ip(t).map(|ip| Self::List(vec![ip]))
    }

    /// Whether `ip` is covered (an IPv4-mapped IPv6 peer counts as its IPv4 address).
    #[must_use]
    pub fn matches(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match self {
            Self::Nothing => false,
            Self::Everything => true,
            Self::List(ips) => ips.contains(&ip),
            Self::Range {
                head,
                start,
                end,
                v6,
            } => {
                let segs: Vec<u16> = match (ip, v6) {
                    (IpAddr::V4(a), false) => a.octets().iter().map(|&o| u16::from(o)).collect(),
                    (IpAddr::V6(a), true) => a.segments().to_vec(),
                    _ => return false,
                };
                segs.starts_with(head)
                    && segs
                        .get(head.len())
                        .is_some_and(|s| (*start..=*end).contains(s))
            }
        }
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 @ IpAddr::V4(_) => v4,
    }
}

fn parse_ip(text: &str) -> Result<IpAddr, String> {
    text.trim()
        .parse::<IpAddr>()
        .map(canonical)
        .map_err(|_| format!("'{}' is not an IPv4 or IPv6 address", text.trim()))
}

/// `192.168.1.{1,2}` or `fe80::{1,2}`: the last segment lists alternatives.
fn parse_braces(t: &str) -> Result<Vec<IpAddr>, String> {
    let open = t
        .rfind('{')
        .ok_or_else(|| format!("'{t}' ends with '}}' but has no '{{'"))?;
    let (prefix, list) = (&t[..open], &t[open + 1..t.len() - 1]);
    let sep = if prefix.contains(':') { ':' } else { '.' };
    if !prefix.is_empty() && !prefix.ends_with(sep) {
        return Err(format!(
            "'{t}': only the last segment may be a {{a,b,...}} list"
        ));
    }
    if sep == '.' && prefix.split('.').filter(|s| !s.is_empty()).count() != 3 {
        return Err(format!(
            "'{t}': an IPv4 list needs three fixed segments, as in 192.168.1.{{1,2}}"
        ));
    }
    list.split(',')
        .map(|last| parse_ip(&format!("{prefix}{}", last.trim())))
        .collect()
}

fn parse_range(t: &str) -> Result<AddressPattern, String> {
    let v6 = t.contains(':');
    let (sep, count, radix, max) = if v6 {
        (':', 8, 16, 0xffff_u32)
    } else {
        ('.', 4, 10, 255_u32)
    };
    let segs: Vec<&str> = t.split(sep).map(str::trim).collect();
    if segs.len() != count {
        return Err(format!(
            "'{t}': a range pattern has {count} segments separated by '{sep}'"
        ));
    }
    let Some(index) = segs.iter().position(|s| s.contains('*') || s.contains('-')) else {
        return Err(format!("'{t}' is not a range pattern"));
    };
    if index == 0 {
        return Err(format!("'{t}': the first segment cannot be a range"));
    }
    let seg = |s: &str| {
        u32::from_str_radix(s, radix)
            .ok()
            .filter(|v| *v <= max)
            .and_then(|v| u16::try_from(v).ok())
            .ok_or_else(|| format!("'{t}': segment '{s}' is not a number from 0 to {max}"))
    };
    let head = segs[..index]
        .iter()
        .map(|s| seg(s))
        .collect::<Result<Vec<_>, _>>()?;
    let (start, end) = if segs[index] == "*" {
        (0, u16::try_from(max).unwrap_or(u16::MAX))
    } else {
        let (a, b) = segs[index]
            .split_once('-')
            .ok_or_else(|| format!("'{t}': segment '{}' is neither '*' nor a-b", segs[index]))?;
        let (a, b) = (seg(a.trim())?, seg(b.trim())?);
        if a > b {
            return Err(format!("'{t}': the range {a}-{b} is empty"));
        }
        (a, b)
    };
    if segs[index + 1..].iter().any(|s| *s != "*") {
        return Err(format!("'{t}': every segment after the range must be '*'"));
    }
    Ok(AddressPattern::Range {
        head,
        start,
        end,
        v6,
    })
}

/// The address of `ip` as RocketMQ writes it in messages (for remarks).
#[must_use]
pub fn display_ip(ip: IpAddr) -> String {
    match canonical(ip) {
        IpAddr::V4(a) => Ipv4Addr::to_string(&a),
        IpAddr::V6(a) => Ipv6Addr::to_string(&a),
    }
}

#[cfg(test)]
mod tests {
    use super::AddressPattern as P;
    use std::net::IpAddr;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn blank_and_star() {
        assert!(!P::parse("").unwrap().matches(ip("10.0.0.1")));
        assert!(P::parse("*").unwrap().matches(ip("10.0.0.1")));
        assert!(P::parse("*.*.*.*").unwrap().matches(ip("::1")));
    }

    #[test]
    fn lists_and_single_addresses() {
        let p = P::parse("192.168.1.{1,2, 3}").unwrap();
        assert!(p.matches(ip("192.168.1.3")));
        assert!(!p.matches(ip("192.168.1.4")));
        let p = P::parse("10.0.0.1,10.0.0.2").unwrap();
        assert!(p.matches(ip("10.0.0.2")) && !p.matches(ip("10.0.0.3")));
        let p = P::parse("127.0.0.1").unwrap();
        assert!(p.matches(ip("127.0.0.1")));
        assert!(
            p.matches(ip("::ffff:127.0.0.1")),
            "IPv4-mapped peers count as IPv4"
        );
        assert!(!p.matches(ip("127.0.0.2")));
        assert!(P::parse("fe80::1")
            .unwrap()
            .matches(ip("fe80:0:0:0:0:0:0:1")));
    }

    #[test]
    fn ranges() {
        let p = P::parse("192.168.*.*").unwrap();
        assert!(p.matches(ip("192.168.200.7")) && !p.matches(ip("192.169.0.1")));
        let p = P::parse("192.168.1.10-20").unwrap();
        assert!(p.matches(ip("192.168.1.10")) && p.matches(ip("192.168.1.20")));
        assert!(!p.matches(ip("192.168.1.21")) && !p.matches(ip("192.168.2.15")));
        let p = P::parse("10.1-2.*.*").unwrap();
        assert!(p.matches(ip("10.2.9.9")) && !p.matches(ip("10.3.0.0")));
        let p = P::parse("fe80:0:0:0:0:0:0:1-ff").unwrap();
        assert!(p.matches(ip("fe80::a")) && !p.matches(ip("fe80::100")));
    }

    #[test]
    fn bad_patterns_say_why() {
        for bad in [
            "192.168.1",
            "192.168.*.1",
            "192.168.1.20-10",
            "192.168.1.300",
            "*.168.1.1",
            "1.2.3.{1,x}",
            "localhost",
            "1.2.{3,4}",
        ] {
            let e = P::parse(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
    }
}
