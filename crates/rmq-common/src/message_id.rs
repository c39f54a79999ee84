//! The offset message id: store host and CommitLog offset, hex-encoded. A client can hand it
//! back (`viewMessage`, VIEW_MESSAGE_BY_ID) and the broker reads the record at that offset.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A message id that is not 32 (IPv4) or 56 (IPv6) hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageIdError(pub String);

impl std::error::Error for MessageIdError {}

impl std::fmt::Display for MessageIdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid offset message id {:?}: expected 32 (IPv4) or 56 (IPv6) hex digits",
            self.0
        )
    }
}

/// Encode `(store host, physical offset)` as RocketMQ's upper-case hex offset message id:
/// IPv4 4 bytes + port 4 bytes + offset 8 bytes (32 digits), or 16 + 4 + 8 for IPv6.
#[must_use]
pub fn create_offset_msg_id(store_host: SocketAddr, phy_offset: i64) -> String {
    let mut s = String::with_capacity(56);
    push_offset_msg_id(&mut s, store_host, phy_offset);
    s
}

/// [`create_offset_msg_id`] appended to `out`.
pub fn push_offset_msg_id(out: &mut String, store_host: SocketAddr, phy_offset: i64) {
    let (host, n) = host_digits(store_host);
    let mut id = [0u8; 56];
    id[..n].copy_from_slice(&host[..n]);
    id[n..n + 16].copy_from_slice(&offset_digits(phy_offset));
    out.push_str(std::str::from_utf8(&id[..n + 16]).unwrap_or_default());
}

/// The offset message ids of the records stored by `store_host` at `offsets`, comma
/// separated: a batch's response holds one per message. The host's digits are made once,
/// and the whole string is checked as UTF-8 once, not per id.
#[must_use]
pub fn join_offset_msg_ids(
    store_host: SocketAddr,
    offsets: impl ExactSizeIterator<Item = i64>,
) -> String {
    let (host, n) = host_digits(store_host);
    let mut out = Vec::with_capacity(offsets.len() * (n + 17));
    for (i, off) in offsets.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&host[..n]);
        out.extend_from_slice(&offset_digits(off));
    }
    String::from_utf8(out).unwrap_or_default()
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Upper-case hex digits of `bytes` into `out` (which holds twice as many).
fn hex_into(out: &mut [u8], bytes: &[u8]) {
    for (pair, &b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = HEX[usize::from(b >> 4)];
        pair[1] = HEX[usize::from(b & 0xF)];
    }
}

/// The digits of an id's host part (address, then port as 4 bytes) and how many there are.
fn host_digits(store_host: SocketAddr) -> ([u8; 40], usize) {
    let mut d = [0u8; 40];
    let n = match store_host.ip() {
        IpAddr::V4(ip) => {
            hex_into(&mut d, &ip.octets());
            8
        }
        IpAddr::V6(ip) => {
            hex_into(&mut d, &ip.octets());
            32
        }
    };
    hex_into(&mut d[n..], &i32::from(store_host.port()).to_be_bytes());
    (d, n + 8)
}

/// The 16 digits of an id's offset part.
fn offset_digits(phy_offset: i64) -> [u8; 16] {
    let mut d = [0u8; 16];
    hex_into(&mut d, &phy_offset.to_be_bytes());
    d
}

/// Decode an offset message id into its store host and physical offset.
///
/// # Errors
/// When the id is not 32 or 56 hex digits.
pub fn decode_offset_msg_id(id: &str) -> Result<(SocketAddr, i64), MessageIdError> {
    let err = || MessageIdError(id.to_owned());
    if !(id.len() == 32 || id.len() == 56) || !id.is_ascii() {
        return Err(err());
    }
    let mut bytes = Vec::with_capacity(id.len() / 2);
    for i in (0..id.len()).step_by(2) {
        bytes.push(u8::from_str_radix(&id[i..i + 2], 16).map_err(|_| err())?);
    }
    let ip_len = if id.len() == 32 { 4 } else { 16 };
    let ip = if ip_len == 4 {
        let o: [u8; 4] = bytes[..4].try_into().map_err(|_| err())?;
        IpAddr::V4(Ipv4Addr::from(o))
    } else {
        let o: [u8; 16] = bytes[..16].try_into().map_err(|_| err())?;
        IpAddr::V6(Ipv6Addr::from(o))
    };
    let port = i32::from_be_bytes(bytes[ip_len..ip_len + 4].try_into().map_err(|_| err())?);
    let offset = i64::from_be_bytes(bytes[ip_len + 4..].try_into().map_err(|_| err())?);
    let port = u16::try_from(port).map_err(|_| err())?;
    Ok((SocketAddr::new(ip, port), offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_id_layout() {
        let addr: SocketAddr = "10.1.2.3:10911".parse().unwrap();
        let id = create_offset_msg_id(addr, 0x1234);
        assert_eq!(id, "0A01020300002A9F0000000000001234");
        assert_eq!(decode_offset_msg_id(&id).unwrap(), (addr, 0x1234));
    }

    #[test]
    fn ipv6_id_round_trip() {
        let addr: SocketAddr = "[::1]:10911".parse().unwrap();
        let id = create_offset_msg_id(addr, 1 << 40);
        assert_eq!(id.len(), 56);
        assert_eq!(decode_offset_msg_id(&id).unwrap(), (addr, 1 << 40));
    }

    #[test]
    fn a_batch_of_ids_is_each_id_comma_separated() {
        for host in ["10.1.2.3:10911", "[fe80::1:2]:65535"] {
            let addr: SocketAddr = host.parse().unwrap();
            let offsets = [0, 0x1234, i64::MAX, 1 << 40];
            let each: Vec<String> = offsets
                .iter()
                .map(|&o| create_offset_msg_id(addr, o))
                .collect();
            assert_eq!(
                join_offset_msg_ids(addr, offsets.into_iter()),
                each.join(",")
            );
            assert_eq!(join_offset_msg_ids(addr, std::iter::empty()), "");
        }
    }

    #[test]
    fn rejects_bad_ids() {
        assert!(decode_offset_msg_id("").is_err());
        assert!(decode_offset_msg_id("ZZ01020300002A9F0000000000001234").is_err());
        assert!(decode_offset_msg_id("0A0102030000").is_err());
    }
}
