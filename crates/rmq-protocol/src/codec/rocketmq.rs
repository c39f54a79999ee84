//! ROCKETMQ binary headers (serialize type 1, `RocketMQSerializable`), big-endian:
//!
//! ```text
//! code i16 | language u8 | version i16 | opaque i32 | flag i32
//! | remark: len i32 + UTF-8 (0 = none)
//! | extFields: total len i32, then repeated (key len i16 + key, value len i32 + value)
//! ```
//!
//! Java reads a zero-length string as null; an empty remark therefore reads as `None`, and an
//! empty ext value as the empty string. Invalid UTF-8 is replaced, as Java's decoder does.

use bytes::{BufMut, BytesMut};

use crate::command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
use crate::error::{ProtocolError, Result};

pub(super) fn encode_header(cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<()> {
    let code = i16::try_from(cmd.code).map_err(|_| ProtocolError::Unencodable {
        what: "code",
        reason: format!("{} does not fit the binary header's 16 bits", cmd.code),
    })?;
    let version = i16::try_from(cmd.version).map_err(|_| ProtocolError::Unencodable {
        what: "version",
        reason: format!("{} does not fit the binary header's 16 bits", cmd.version),
    })?;
    dst.put_i16(code);
    dst.put_u8(cmd.language.code());
    dst.put_i16(version);
    dst.put_i32(cmd.opaque);
    dst.put_i32(cmd.flag);
    match cmd.remark.as_deref() {
        Some(r) if !r.is_empty() => {
            dst.put_i32(len_i32("remark", r.len())?);
            dst.put_slice(r.as_bytes());
        }
        _ => dst.put_i32(0),
    }
    let len_pos = dst.len();
    dst.put_i32(0);
    for (k, v) in cmd.ext_fields.iter() {
        let klen = i16::try_from(k.len()).map_err(|_| ProtocolError::Unencodable {
            what: "ext field key",
            reason: format!("{} bytes exceed 32767", k.len()),
        })?;
        dst.put_i16(klen);
        dst.put_slice(k.as_bytes());
        dst.put_i32(len_i32("ext field value", v.len())?);
        dst.put_slice(v.as_bytes());
    }
    let ext_len = len_i32("extFields", dst.len() - len_pos - 4)?;
    dst[len_pos..len_pos + 4].copy_from_slice(&ext_len.to_be_bytes());
    Ok(())
}

fn len_i32(what: &'static str, len: usize) -> Result<i32> {
    i32::try_from(len).map_err(|_| ProtocolError::Unencodable {
        what,
        reason: format!("{len} bytes exceed i32"),
    })
}

/// A bounds-checked reader over the header bytes; every failure names its position.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn err(&self, reason: impl Into<String>) -> ProtocolError {
        ProtocolError::BadBinaryHeader {
            position: self.pos,
            reason: reason.into(),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| {
                self.err(format!(
                    "{what}: need {n} bytes, {} left",
                    self.b.len() - self.pos
                ))
            })?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn i16(&mut self, what: &str) -> Result<i16> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A string whose length was just read; negative lengths are errors.
    fn string(&mut self, len: i64, what: &str) -> Result<String> {
        let n =
            usize::try_from(len).map_err(|_| self.err(format!("{what}: negative length {len}")))?;
        Ok(String::from_utf8_lossy(self.take(n, what)?).into_owned())
    }
}

pub(super) fn decode_header(b: &[u8]) -> Result<RemotingCommand> {
    let mut r = Reader { b, pos: 0 };
    let code = i32::from(r.i16("code")?);
    let language = LanguageCode::from_code(r.u8("language")?);
    let version = i32::from(r.i16("version")?);
    let opaque = r.i32("opaque")?;
    let flag = r.i32("flag")?;
    let remark_len = r.i32("remark length")?;
    let remark = if remark_len == 0 {
        None
    } else {
        Some(r.string(i64::from(remark_len), "remark")?)
    };
    let ext_len = r.i32("extFields length")?;
    let mut ext_fields = ExtFields::new();
    // A negative length, like 0, means no extFields.
    if let Ok(ext_len @ 1..) = usize::try_from(ext_len) {
        let region = r.take(ext_len, "extFields")?;
        let base = r.pos - region.len();
        let mut ext = Reader { b: region, pos: 0 };
        while ext.pos < region.len() {
            let decode = |ext: &mut Reader<'_>| -> Result<(String, String)> {
                let klen = ext.i16("key length")?;
                let k = ext.string(i64::from(klen), "key")?;
                let vlen = ext.i32("value length")?;
                let v = ext.string(i64::from(vlen), "value")?;
                Ok((k, v))
            };
            let (k, v) = decode(&mut ext).map_err(|err| match err {
                ProtocolError::BadBinaryHeader { position, reason } => {
                    ProtocolError::BadBinaryHeader {
                        position: base + position,
                        reason: format!("extFields {reason}"),
                    }
                }
                other => other,
            })?;
            ext_fields.insert(k, v);
        }
    }
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        body: None,
        serialize_type: SerializeType::RocketMq,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_field_by_field() {
        let mut cmd = RemotingCommand::new_request(11, ExtFields::new())
            .with_opaque(0x0102_0304)
            .with_version(409)
            .with_language(LanguageCode::Rust)
            .with_serialize_type(SerializeType::RocketMq);
        cmd.flag = 2;
        cmd.remark = Some("hi".into());
        cmd.ext_fields.insert("ab", "xyz");
        let mut b = BytesMut::new();
        encode_header(&cmd, &mut b).unwrap();
        let expected: Vec<u8> = [
            &[0, 11][..],              // code
            &[12],                     // language RUST
            &[0x01, 0x99],             // version 409
            &[1, 2, 3, 4],             // opaque
            &[0, 0, 0, 2],             // flag
            &[0, 0, 0, 2, b'h', b'i'], // remark
            &[0, 0, 0, 11],            // extFields length: 2+2+4+3
            &[0, 2, b'a', b'b'],
            &[0, 0, 0, 3, b'x', b'y', b'z'],
        ]
        .concat();
        assert_eq!(&b[..], &expected[..]);
        assert_eq!(decode_header(&b).unwrap(), cmd);
    }

    #[test]
    fn wide_values_are_refused() {
        let cmd = RemotingCommand::new_request(200_050, ExtFields::new());
        assert!(matches!(
            encode_header(&cmd, &mut BytesMut::new()),
            Err(ProtocolError::Unencodable { what: "code", .. })
        ));
    }

    #[test]
    fn bad_lengths_are_errors() {
        let mut base = vec![0, 10, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
        // remark length larger than the header
        let mut b = base.clone();
        b.extend_from_slice(&100i32.to_be_bytes());
        assert!(matches!(
            decode_header(&b),
            Err(ProtocolError::BadBinaryHeader { position: 17, .. })
        ));
        // negative remark length
        let mut b = base.clone();
        b.extend_from_slice(&(-5i32).to_be_bytes());
        assert!(decode_header(&b).is_err());
        // ext region with a key running past it
        base.extend_from_slice(&0i32.to_be_bytes());
        let mut b = base.clone();
        b.extend_from_slice(&3i32.to_be_bytes());
        b.extend_from_slice(&[0, 5, b'a']);
        assert!(decode_header(&b).is_err());
        // truncated before flag
        assert!(decode_header(&base[..7]).is_err());
    }
}
